"""`convgraph browse`: the Textual app of `convgraph.browse`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from convgraph.cli.filters import FILTER_HELP, filter_options
from convgraph.cli.options import CONVERSATION_ID, command, db_option, opened_logs

if TYPE_CHECKING:
    from convgraph.model.filters import TreeFilter


@command(epilog=FILTER_HELP)
@click.argument("conversation_id", required=False, type=CONVERSATION_ID)
@db_option
@click.option(
    "-m",
    "--branch-model",
    "branch_model",
    metavar="MODEL",
    default=None,
    help="The model that `b` (branch) and `r` (regenerate) ask [default: the node's own model]",
)
@filter_options
def browse(
    conversation_id: str | None,
    branch_model: str | None,
    where: TreeFilter,
) -> None:
    """Browse the conversations in the terminal; open CONVERSATION_ID at once
    when given. With --since, --until, --model or --source the list shows
    only the conversations they keep, and / searches only those.

    Keys: arrows or h/j/k/l to move, [ and ] for siblings, / and n to search,
    m then d to diff two branches, c to compare alternatives, t for the
    transcript to the cursor, b to branch, r to regenerate, N for a note,
    p to mark the preferred answer, ? for every key, q to quit.
    """
    logs = opened_logs()
    path = logs.given if len(logs.paths) > 1 else logs.source.path
    logs.close()  # the browser opens the file itself, to write it too
    from convgraph.cli.options import needs_extra

    needs_extra("textual", "browse", "convgraph browse")
    from convgraph.browse import run

    run(path, conversation_id, branch_model, where or None)
