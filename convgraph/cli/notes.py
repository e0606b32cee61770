"""The user's branch notes: `note`, `prefer`, `hide`, `unhide`."""

from __future__ import annotations

import click

from convgraph.cli.options import NODE_ID, UserError, command, db_path_option
from convgraph.text import terminal_text


@command()
@click.argument("node_id", type=NODE_ID)
@click.argument("text", required=False)
@click.option("--clear", is_flag=True, help="Remove the node's note")
@db_path_option
def note(node_id: str, text: str | None, clear: bool, db_path: str | None) -> None:
    """Record TEXT as NODE_ID's note: why the branch was made, what it
    taught. Kept in convgraph's own table (beside a chat export, in
    EXPORT.convgraph.db); shown by tree, compare, the exports and stats."""
    from convgraph.store.notes import set_note

    if clear == (text is not None):
        raise UserError("give the note's TEXT, or --clear to remove it")
    if text is not None and not text.strip():
        raise UserError("the note is empty: give its TEXT, or --clear to remove it")
    written = set_note(node_id, None if clear else text, db_path)
    said = "cleared the note of" if clear else "noted"
    click.echo(f"{said} {terminal_text(node_id)} (in {terminal_text(str(written))})")


@command()
@click.argument("node_id", type=NODE_ID)
@click.option("--clear", is_flag=True, help="Remove the node's preferred mark")
@db_path_option
def prefer(node_id: str, clear: bool, db_path: str | None) -> None:
    """Mark NODE_ID as the preferred answer among its alternatives (the
    answers to the same prompt at the same point); the mark of another
    alternative moves to it. `convgraph pairs` chooses it.
    """
    from convgraph.store.notes import set_preferred

    cleared = set_preferred(node_id, not clear, db_path)  # none where `clear`
    click.echo(f"{terminal_text(node_id)} is {'no longer ' if clear else ''}preferred")
    for other in cleared:
        click.echo(f"(instead of {terminal_text(other)})")


@command()
@click.argument("node_id", type=NODE_ID)
@db_path_option
def hide(node_id: str, db_path: str | None) -> None:
    """Hide NODE_ID's branch (the node and everything below it) from every output: tree,
    stats, search, transcripts, the exports and browse leave it out; `--all` shows it.
    Nothing is deleted: the mark is kept where notes are (beside a chat export, in
    EXPORT.convgraph.db), and `unhide` takes it back.
    """
    from convgraph.store.notes import set_hidden

    whole, written = set_hidden(node_id, True, db_path)
    click.echo(
        f"hid the branch of {terminal_text(whole)} (in {terminal_text(str(written))});"
        f" convgraph unhide {terminal_text(whole)} shows it again"
    )


@command()
@click.argument("node_id", type=NODE_ID)
@db_path_option
def unhide(node_id: str, db_path: str | None) -> None:
    """Show NODE_ID's branch again, after `hide`."""
    from convgraph.store.notes import set_hidden

    whole, written = set_hidden(node_id, False, db_path)
    click.echo(f"{terminal_text(whole)}'s branch is shown again")
