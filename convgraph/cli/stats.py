"""`convgraph stats`: the conversations table of `convgraph.stats`, printed.

One row per conversation tree with its size, shape, times, models and usage,
as an aligned table for a person or as CSV, JSON or JSON lines for a program.
With ids, only those conversations are read (any thread id of a message-store
tree names the whole tree); without, the whole forest is read once, without
its texts. A load on a terminal shows a progress bar on stderr.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import click

from convgraph.cli import cli
from convgraph.cli.options import db_option
from convgraph.cli.tables import FORMATS, print_table

if TYPE_CHECKING:
    from convgraph.forest import Forest
    from convgraph.sources import LogDatabase


@cli.command()
@click.argument("conversation_ids", nargs=-1)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(FORMATS),
    default="table",
    show_default=True,
    help="table: aligned for reading; csv with a header; json: an array of"
    " objects; jsonl: one object a line",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar")
@db_option
def stats(
    conversation_ids: tuple[str, ...],
    output_format: str,
    quiet: bool,
    db_path: str | None,
) -> None:
    """Statistics of every conversation tree, or of the ones named.

    One row per tree: nodes, roots, leaves, max_depth, branch_points,
    branching_factor_avg and _max (over the nodes that have children),
    first_datetime, last_datetime, models, and the sums of input_tokens,
    output_tokens and duration_ms. A CONVERSATION_ID may be a legacy
    conversation id or any thread id of a message-store tree.
    """
    from convgraph.stats import conversation_table

    show_bar = not quiet and _is_terminal(sys.stderr)
    # The steps: open, read (once, or once per tree), check, compute, done.
    with _steps(show_bar, 3 + max(1, len(conversation_ids))) as step:
        forest = load_forest(db_path, conversation_ids, step)
        step("Computing statistics")
        table = conversation_table(forest)
        step("Done")
    print_table(table, output_format)


def load_forest(
    db_path: str | None,
    conversation_ids: tuple[str, ...] = (),
    step: Any = None,
) -> Forest:
    """The forest of the whole database, or of the named conversations only.

    `step(label)` is called as each stage begins (for a progress bar).

    Raises
    ------
    UnknownConversation
        An id names no conversation, or one without responses.
    DatabaseError
    """
    import pandas as pd

    from convgraph.contract import NODE_ATTRIBUTES
    from convgraph.errors import UnknownConversation
    from convgraph.forest import Forest
    from convgraph.sources import open_logs

    step = step or (lambda label: None)
    step("Opening the database")
    with open_logs(db_path) as logs:
        if not conversation_ids:
            step("Reading every conversation")
            nodes, names = logs.read_forest(text=False)
        else:
            records: list[dict[str, Any]] = []
            names = {}
            for tree_id, named_as in _tree_ids(logs, conversation_ids).items():
                step(f"Reading {tree_id}")
                tree = logs.read_tree(tree_id)
                if not tree.records:
                    raise UnknownConversation(named_as)
                records.extend(tree.records)
                names[tree_id] = tree.name
            columns = ["id", "tree_id", "parent_id", *NODE_ATTRIBUTES]
            nodes = pd.DataFrame.from_records(records, columns=columns)
    step("Checking parent links")
    return Forest(nodes, names)


def _tree_ids(logs: LogDatabase, conversation_ids: tuple[str, ...]) -> dict[str, str]:
    """The trees these ids name, each once in the order first named, with
    the id that first named it.

    Raises
    ------
    UnknownConversation
        An id names no conversation.
    """
    found: dict[str, str] = {}
    for conversation_id in conversation_ids:
        found.setdefault(logs.tree_id_of_conversation(conversation_id), conversation_id)
    return found


def _is_terminal(stream: Any) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def _steps(show: bool, count: int) -> Iterator[Any]:
    """A `step(label)` callable that moves a progress bar on stderr one step,
    or does nothing when the bar is not shown."""
    if not show:
        yield lambda label: None
        return
    with click.progressbar(
        length=count, label="Opening the database", file=sys.stderr, show_eta=False
    ) as bar:
        started = False

        def step(label: str) -> None:
            nonlocal started
            bar.label = label
            if started:
                bar.update(1)
            else:
                bar.render_progress()
                started = True

        yield step
