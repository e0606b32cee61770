"""Commands that change a database: migrate, delete, branch, regenerate. Each
calls one function of `convgraph.store`; what they print passes `terminal_text`."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any, cast

import click

from convgraph.cli.options import (
    NODE_ID,
    UserError,
    command,
    db_path_option,
    json_option,
)
from convgraph.cli.output import echo_json, echo_line, say
from convgraph.cli.user_input import Number
from convgraph.text import counted

DEFAULT_PARALLEL = 8
INTERRUPTED = 130
#: Said as the process ends at once on a Ctrl-C the fan-out does not take.
STOPPED_AT_ONCE = "interrupted: stopped at once; the answers logged before stay logged"


@command()
@db_path_option
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
    from convgraph.cli.progress import ProgressBar
    from convgraph.store.migrate import migrate as run_migration

    with ProgressBar() as bar:
        result = run_migration(
            db_path,
            backup=backup,
            dry_run=dry_run,
            link_linear=link_linear,
            progress=bar,
        )
    plan = result.plan
    if dry_run and backup:
        echo_line(f"Would back up {plan.path} to {backup}")
    elif result.backup is not None:
        echo_line(f"Backed up {plan.path} to {result.backup}")
    if not plan.needed:
        echo_line(f"{plan.path} is already migrated: nothing to do")
    else:
        if plan.store_only:
            echo_line(
                f"{plan.path} needs no migration: llm 0.32 and later keeps"
                " branches in its message store, and the legacy responses"
                " table is empty; migrating only prepares that table for an"
                " llm older than 0.32"
            )
        elif dry_run:
            echo_line(f"{plan.path} needs migrating: {_why_migrate(plan)}")
        echo_line(f"{'Would migrate' if dry_run else 'Migrated'} {plan.path}:")
        for step in plan.steps():
            echo_line(f"  - {step}")
    for note in plan.notes:
        echo_line(f"Note: {note}")


def _why_migrate(plan: Any) -> str:
    """The first thing a plan makes that the file lacks, in a person's words."""
    if plan.add_column:
        return "its legacy responses have no parent links"
    if plan.link:
        return "responses are still to be linked (--link-linear)"
    if plan.triggers:
        return "the rules that keep its parent links a tree are missing"
    if plan.add_index or plan.add_conversation_index:
        return "an index its trees are read by is missing"
    return "the migration is not recorded"


@command()
@click.argument("node_id", type=NODE_ID)
@click.option(
    "--children",
    "children_choice",
    type=click.Choice(["refuse", "reparent", "cascade"], case_sensitive=False),
    default=None,
    help="What becomes of the node's children: refuse to delete a node that"
    " has any, move them to its parent (reparent), or delete the whole subtree"
    " (cascade) [default: refuse]",
)
@click.option("--dry-run", is_flag=True, help="Say what would go; change nothing")
# Kept so that scripts do not break.
@click.option("--reparent", is_flag=True, hidden=True)
@click.option("--cascade", is_flag=True, hidden=True)
@db_path_option
def delete(
    node_id: str,
    children_choice: str | None,
    dry_run: bool,
    reparent: bool,
    cascade: bool,
    db_path: str | None,
) -> None:
    """Delete NODE_ID, a legacy response.

    A node with children is refused unless --children reparent or --children
    cascade says what becomes of them; --dry-run says what would be deleted
    or moved, and changes nothing. Turns of llm's message store are never
    deleted.

    \b
    convgraph delete NODE_ID --children cascade --dry-run
    """
    from convgraph.store.delete import Mode, delete_node

    given = [
        flag for flag, on in (("--reparent", reparent), ("--cascade", cascade)) if on
    ]
    if children_choice is not None:
        given.append(f"--children {children_choice.lower()}")
    if len(given) > 1:
        raise UserError(f"{' and '.join(given)} exclude each other: choose one")
    flag = "reparent" if reparent else "cascade" if cascade else "refuse"
    mode = cast(Mode, children_choice.lower() if children_choice is not None else flag)
    result = delete_node(node_id, db_path, mode=mode, dry_run=dry_run)
    deleted = "Would delete" if dry_run else "Deleted"
    below = len(result.deleted) - 1
    tail = f" and its {counted(below, 'descendant')}" if below else ""
    echo_line(f"{deleted} {node_id}{tail}")
    if result.moved:
        count = len(result.moved)
        children = counted(count, "child", "children")
        if result.new_parent is None:
            became = "would become" if dry_run else "became"
            echo_line(f"{children} {became} {'a root' if count == 1 else 'roots'}")
        else:
            moved = "Would move" if dry_run else "Moved"
            echo_line(f"{moved} {children} to {result.new_parent}")
    if dry_run:
        echo_line("Nothing was deleted (--dry-run)")


@contextlib.contextmanager
def _ctrl_c_exits_at_once() -> Iterator[None]:
    """Ctrl-C ends a fan-out command at once (status 130), except the first
    during the requests, which the fan-out takes; a write cut short rolls
    back. Python's `KeyboardInterrupt` would surface as a traceback anywhere."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    stopping = False

    def exit_at_once(number: int, frame: Any) -> None:
        nonlocal stopping
        if stopping:
            os._exit(INTERRUPTED)
        stopping = True
        # Cut maybe inside a write to stderr: the line goes past its buffer.
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os.write(2, f"{STOPPED_AT_ONCE}\n".encode())
        raise SystemExit(INTERRUPTED)

    signal.signal(signal.SIGINT, exit_at_once)
    try:
        yield
    finally:
        # A Ctrl-C while ending still ends on the spot, not in the exit.
        if not stopping:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def _fan_out_options(function: Any) -> Any:
    """The options `branch` and `regenerate` share."""
    for decorator in reversed(
        [
            click.option(
                "-m",
                "--model",
                "model_ids",
                multiple=True,
                help="Model to ask; repeat for several [default: the node's]",
            ),
            click.option(
                "-n",
                "--count",
                type=Number(1, 100),
                default=1,
                show_default=True,
                help="Answers to ask of each model",
            ),
            click.option(
                "-o",
                "--option",
                "options",
                type=(str, str),
                multiple=True,
                help="Model option KEY VALUE, given to every model",
            ),
            click.option(
                "--parallel",
                type=Number(1, 64),
                default=DEFAULT_PARALLEL,
                show_default=True,
                help="At most this many requests at a time",
            ),
            click.option(
                "--timeout",
                type=click.FloatRange(min=0, min_open=True, max=86_400),
                default=None,
                help="Seconds each request may take",
            ),
        ]
    ):
        function = decorator(function)
    return function


@command()
@click.argument("node_id", type=NODE_ID)
@click.argument("prompt")
@_fan_out_options
@click.option("-s", "--system", help="System prompt for the new call")
@json_option
@db_path_option
def branch(
    node_id: str,
    prompt: str,
    model_ids: tuple[str, ...],
    count: int,
    options: tuple[tuple[str, str], ...],
    parallel: int,
    timeout: float | None,
    system: str | None,
    as_json: bool,
    db_path: str | None,
) -> None:
    """Continue the conversation from NODE_ID with PROMPT.

    The model gets the history from the root down to NODE_ID, then PROMPT; its answer is
    logged as a new child of NODE_ID. Prints the new node's id and its conversation's id
    (in the message store, a new thread that `llm -c --cid` continues).

    With several -m, or -n N, every model is asked at once from the same history, each
    answer a child of NODE_ID, compared with its siblings as `compare` does (--json: the
    new nodes, the failures and that table). A failure costs no other answer: it is one
    line on stderr, and the exit status is 1. Ctrl-C keeps the answers that completed.
    """
    from convgraph.store.branch import fan_out, single_answer

    with _ctrl_c_exits_at_once():
        result = fan_out(
            node_id,
            prompt,
            db_path,
            system=system,
            **_asking(model_ids, count, options, parallel, timeout),
        )
        _say_how_llm_continues(result)
        if len(model_ids or [None]) * count > 1:
            _report_fan_out(result, as_json)
            return
        if result.interrupted:
            _report_fan_out(result, as_json)
        logged = single_answer(result)
        if as_json:
            echo_json(
                {"node_id": logged.node_id, "conversation_id": logged.conversation_id}
            )
        else:
            echo_line(f"node {logged.node_id}")
            echo_line(f"conversation {logged.conversation_id}")
            _say_how_to_continue(result)


def _in_message_store(path: Any) -> bool:
    """Whether `path` has llm's message store (a branch is its own thread)."""
    from convgraph.logs import Logs

    with Logs(path) as logs:
        return "message-store" in logs.generations


def _say_how_to_continue(result: Any) -> None:
    """Say the `llm` command that goes on from each new answer (message store)."""
    if not result.answers or not _in_message_store(result.path):
        return
    if len(result.answers) == 1:
        (answer,) = result.answers
        echo_line(f"Continue it: llm -c --cid {answer.conversation_id} 'your prompt'")
        return
    echo_line("Continue one: llm -c --cid THREAD 'your prompt', its THREAD here:")
    for answer in result.answers:
        echo_line(f"  {answer.conversation_id}  ({answer.node_id}, {answer.model})")


def _say_how_llm_continues(result: Any) -> None:
    """On stderr, what `llm -c` will send after a legacy branch: llm replays
    responses in logged order, so only convgraph can go on from it."""
    if not result.answers or _in_message_store(result.path):
        return
    for conversation in dict.fromkeys(a.conversation_id for a in result.answers):
        say(
            f"llm -c --cid {conversation} replays every response of this"
            " conversation in the order logged, both branches run together;"
            " to go on from this branch alone, use convgraph branch"
        )


@command()
@click.argument("node_id", type=NODE_ID)
@_fan_out_options
@json_option
@db_path_option
def regenerate(
    node_id: str,
    model_ids: tuple[str, ...],
    count: int,
    options: tuple[tuple[str, str], ...],
    parallel: int,
    timeout: float | None,
    as_json: bool,
    db_path: str | None,
) -> None:
    """Ask NODE_ID's prompt again, so that every answer is a sibling of it.

    Each model (NODE_ID's own unless -m says) gets the history down to NODE_ID's parent,
    then NODE_ID's prompt and system prompt; a root is asked with no history, and its
    answers are new roots of its tree. Prints the new nodes and the `compare` table of
    them and their siblings (--json: as a document). Failures are one line each on
    stderr, and the exit status is 1; Ctrl-C keeps the answers that completed.
    """
    from convgraph.store.branch import regenerate as ask_again

    with _ctrl_c_exits_at_once():
        result = ask_again(
            node_id, db_path, **_asking(model_ids, count, options, parallel, timeout)
        )
        _report_fan_out(result, as_json)


def _asking(
    model_ids: tuple[str, ...],
    count: int,
    options: tuple[tuple[str, str], ...],
    parallel: int,
    timeout: float | None,
) -> dict[str, Any]:
    """`_fan_out_options` as `fan_out` and `regenerate` take them."""
    from convgraph.cli.progress import LiveProgress

    return {
        "models": model_ids,
        "tries": count,
        "options": dict(options),
        "parallel": parallel,
        "request_timeout": timeout,
        "on_change": LiveProgress(),
    }


def _report_fan_out(result: Any, as_json: bool) -> None:
    """Print a fan-out's answers and failures; status 1 if any failed, 130 on Ctrl-C."""
    from convgraph.cli.progress import (
        echo_failures,
        fan_out_record,
        generate_fan_out_lines,
    )

    if as_json:
        echo_json(fan_out_record(result))
    else:
        for line in generate_fan_out_lines(result):
            click.echo(line)
        _say_how_to_continue(result)
    echo_failures(result)
    if result.interrupted:
        click.get_current_context().exit(INTERRUPTED)
    if result.failures:
        click.get_current_context().exit(1)
