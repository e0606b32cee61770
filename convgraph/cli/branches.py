"""Commands that take a branch out of its tree, and the user's branch notes:
transcript, pairs, note, prefer.

`transcript` prints one path as Markdown or chat messages; `pairs` the
preference pairs of the alternatives (TRL's conversational format);
`note` and `prefer` write to convgraph's own notes table (in the llm
database, or in a file beside a chat export), one transaction each.
"""

from __future__ import annotations

from typing import Any

import click

from convgraph.cli.options import UserError, command, db_option, output_options
from convgraph.cli.output import echo_json, echo_records, json_text
from convgraph.text import excerpt, terminal_text


@command()
@click.argument("node_id")
@click.option(
    "--format",
    "format_name",
    type=click.Choice(["markdown", "json"], case_sensitive=False),
    default="markdown",
    show_default=True,
    help="Markdown, or a JSON array of chat messages (role, content)",
)
@db_option
def transcript(node_id: str, format_name: str, db_path: str | None) -> None:
    """The conversation from its root down to NODE_ID, as one transcript.

    Given a conversation id instead, follows the conversation's active path
    (the branch last used).

    \b
    convgraph transcript NODE_ID > branch.md
    convgraph transcript CONVERSATION_ID --format json
    """
    from convgraph.present.transcript import transcript as read_transcript

    found = read_transcript(node_id, db_path)
    if format_name.lower() == "json":
        echo_json(found.messages())
    else:
        click.echo(found.markdown(), nl=False)


@command()
@click.argument("conversation_ids", nargs=-1)
@click.option(
    "--prefer",
    type=click.Choice(["notes", "active"], case_sensitive=False),
    default="notes",
    show_default=True,
    help="The chosen answer: the one marked preferred, else the one on the"
    " active path (notes); or only the active path's (active)",
)
@db_option
@output_options
def pairs(
    conversation_ids: tuple[str, ...],
    prefer: str,
    db_path: str | None,
    output_format: str | None,
) -> None:
    """Preference pairs from alternative answers to one prompt; every
    conversation when no id is given.

    One record per chosen/rejected pair: prompt (the messages up to the
    prompt), chosen and rejected (one assistant message each),
    conversation_id, chosen_id, rejected_id. --nl writes the JSONL that
    TRL's DPO trainer reads; --csv and --tsv give the message lists as JSON.

    \b
    convgraph pairs --nl > preferences.jsonl
    """
    from convgraph.export.training import PAIR_COLUMNS
    from convgraph.export.training import pairs as find_pairs
    from convgraph.model.loading import load_trees

    records = list(find_pairs(load_trees(conversation_ids, db_path), prefer.lower()))
    columns = list(PAIR_COLUMNS)
    if output_format in ("json", "nl"):
        echo_records(records, columns, output_format)
    elif output_format in ("csv", "tsv"):
        flat = [
            {
                key: json_text(value, indent=None) if isinstance(value, list) else value
                for key, value in record.items()
            }
            for record in records
        ]
        echo_records(flat, columns, output_format)
    else:
        echo_records([_row(record) for record in records], columns, "table")


def _row(record: dict[str, Any]) -> dict[str, Any]:
    """A pair as a person reads it in a table: one line of each message."""
    return {
        **record,
        "prompt": excerpt(record["prompt"][-1]["content"], 30),
        "chosen": excerpt(record["chosen"][0]["content"], 30),
        "rejected": excerpt(record["rejected"][0]["content"], 30),
    }


@command()
@click.argument("node_id")
@click.argument("text", required=False)
@click.option("--clear", is_flag=True, help="Remove the node's note")
@db_option
def note(node_id: str, text: str | None, clear: bool, db_path: str | None) -> None:
    """Record TEXT as NODE_ID's note: why the branch was made, what it
    taught. Kept in convgraph's own table (beside a chat export, in
    EXPORT.convgraph.db); shown by tree, compare, the exports and stats.
    """
    from convgraph.store.notes import set_note

    if clear == (text is not None):
        raise UserError("give the note's TEXT, or --clear to remove it")
    if text is not None and not text.strip():
        raise UserError("the note is empty: give its TEXT, or --clear to remove it")
    written = set_note(node_id, None if clear else text, db_path)
    said = "cleared the note of" if clear else "noted"
    click.echo(f"{said} {terminal_text(node_id)} (in {terminal_text(str(written))})")


@command()
@click.argument("node_id")
@click.option("--clear", is_flag=True, help="Remove the node's preferred mark")
@db_option
def prefer(node_id: str, clear: bool, db_path: str | None) -> None:
    """Mark NODE_ID as the preferred answer among its alternatives (the
    answers to the same prompt at the same point); the mark of another
    alternative moves to it. `convgraph pairs` chooses it.
    """
    from convgraph.store.notes import set_preferred

    cleared = set_preferred(node_id, not clear, db_path)
    if clear:
        click.echo(f"{terminal_text(node_id)} is no longer preferred")
        return
    click.echo(f"{terminal_text(node_id)} is preferred")
    for other in cleared:
        click.echo(f"(instead of {terminal_text(other)})")
