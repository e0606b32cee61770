"""Commands that change a database: migrate, delete, branch.

Each parses its options and calls one function of `convgraph.store`, where
the transactions and the rules live; errors come back as one line on stderr
and exit status 2, through the shared command class. What they print passes
`terminal_text`: ids and notes come from the database.
"""

from __future__ import annotations

import click

from convgraph.cli.options import UserError, command, db_option, json_option
from convgraph.cli.output import echo_json
from convgraph.text import terminal_text


def _say(text: str) -> None:
    """Print a line for a person, its stored text shown safely."""
    click.echo(terminal_text(text))


@command()
@db_option
@click.option(
    "--backup",
    type=click.Path(dir_okay=False, path_type=str),
    default=None,
    help="First copy the database to this new file (SQLite's backup API)",
)
@click.option("--dry-run", is_flag=True, help="Say what would change; change nothing")
@click.option(
    "--link-linear",
    is_flag=True,
    help="Give each existing response the one before it in its conversation as parent",
)
def migrate(
    db_path: str | None, backup: str | None, dry_run: bool, link_linear: bool
) -> None:
    """Add parent_response_id, the tree's rules and two indexes (on the
    parent and on conversation_id) to a legacy database.

    Safe to run again: only what is missing is added, and an up-to-date file
    is not written at all. Safe beside llm: short transactions that llm's
    writes wait for; if it is stopped, run it again to finish.
    """
    from convgraph.store.migrate import migrate as run_migration

    result = run_migration(
        db_path, backup=backup, dry_run=dry_run, link_linear=link_linear
    )
    plan = result.plan
    if dry_run and backup:
        _say(f"Would back up {plan.path} to {backup}")
    elif result.backup is not None:
        _say(f"Backed up {plan.path} to {result.backup}")
    if not plan.needed:
        _say(f"{plan.path} is already migrated: nothing to do")
    else:
        _say(f"{'Would migrate' if dry_run else 'Migrated'} {plan.path}:")
        for step in plan.steps():
            _say(f"  - {step}")
    for note in plan.notes:
        _say(f"Note: {note}")


@command()
@click.argument("node_id")
@click.option(
    "--reparent", is_flag=True, help="Move the node's children to its own parent"
)
@click.option("--cascade", is_flag=True, help="Delete the node's whole subtree")
@db_option
def delete(node_id: str, reparent: bool, cascade: bool, db_path: str | None) -> None:
    """Delete NODE_ID, a legacy response.

    A node with children is refused unless --reparent or --cascade says what
    becomes of them. Turns of llm's message store are never deleted.
    """
    from convgraph.store.delete import delete_node

    if reparent and cascade:
        raise UserError("--reparent and --cascade exclude each other: choose one")
    mode = "reparent" if reparent else "cascade" if cascade else "refuse"
    result = delete_node(node_id, db_path, mode=mode)
    below = len(result.deleted) - 1
    if below:
        _say(
            f"Deleted {node_id} and its {below}"
            f" {'descendant' if below == 1 else 'descendants'}"
        )
    else:
        _say(f"Deleted {node_id}")
    if result.moved:
        count = len(result.moved)
        noun = "child" if count == 1 else "children"
        if result.new_parent is None:
            _say(f"{count} {noun} became {'a root' if count == 1 else 'roots'}")
        else:
            _say(f"Moved {count} {noun} to {result.new_parent}")


@command()
@click.argument("node_id")
@click.argument("prompt")
@click.option("-m", "--model", "model_id", help="Model to use [default: the node's]")
@click.option("-s", "--system", help="System prompt for the new call")
@json_option
@db_option
def branch(
    node_id: str,
    prompt: str,
    model_id: str | None,
    system: str | None,
    as_json: bool,
    db_path: str | None,
) -> None:
    """Continue the conversation from NODE_ID with PROMPT.

    The model gets the history from the root down to NODE_ID, then PROMPT;
    its answer is logged as a new child of NODE_ID. Prints the new node's id
    and its conversation's id (in the message store, a new thread that
    `llm -c --cid` continues).
    """
    from convgraph.store.branch import branch as make_branch

    logged = make_branch(node_id, prompt, db_path, model=model_id, system=system)
    if as_json:
        echo_json(
            {"node_id": logged.node_id, "conversation_id": logged.conversation_id}
        )
    else:
        _say(f"node {logged.node_id}")
        _say(f"conversation {logged.conversation_id}")
