"""`convgraph browse`: the terminal browser of conversation trees.

The command checks what a user can get wrong before the screen takes over
(a missing file, an unknown conversation), so that those end as one line and
exit status 2 like every other command; then it runs the Textual app of
`convgraph.browse`. Textual is imported only here, inside the command.
"""

from __future__ import annotations

import click

from convgraph.cli.options import CONVERSATION_ID, command, db_option


@command()
@click.argument("conversation_id", required=False, type=CONVERSATION_ID)
@db_option
@click.option(
    "-m",
    "--model",
    default=None,
    help="The model that `b` (branch) and `r` (regenerate) ask [default: the node's own model]",
)
def browse(conversation_id: str | None, db_path: str | None, model: str | None) -> None:
    """Browse the conversations in the terminal; open CONVERSATION_ID at once
    when given.

    Keys: arrows or h/j/k/l to move, [ and ] for siblings, / and n to search,
    m then d to diff two branches, c to compare alternatives, t for the
    transcript to the cursor, b to branch, r to regenerate, N for a note,
    p to mark the preferred answer, ? for every key, q to quit.
    """
    from convgraph.sources import open_logs

    with open_logs(db_path) as logs:
        if conversation_id is not None:
            logs.tree_id_of_conversation(conversation_id)
        path = logs.path
    from convgraph.cli.options import needs_extra

    needs_extra("textual", "browse", "convgraph browse")
    from convgraph.browse import run

    run(path, conversation_id, model)
