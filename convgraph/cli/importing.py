"""`convgraph import`: a chat export brought into llm's database."""

from __future__ import annotations

import click

from convgraph.cli.options import command, db_path_option
from convgraph.cli.output import echo_line
from convgraph.cli.progress import ProgressBar
from convgraph.text import counted

LISTED = 20


@command("import")
@click.argument("source", type=click.Path(exists=True, path_type=str))
@db_path_option
@click.option(
    "--dry-run", is_flag=True, help="Say what would be written; write nothing"
)
def import_command(source: str, db_path: str | None, dry_run: bool) -> None:
    """Import the conversations of a chat export (SOURCE) into llm's database.

    SOURCE is a ChatGPT or Claude.ai data export (the .zip, its conversations.json, or a
    folder of them) or an Open WebUI chat export. Each conversation becomes a
    conversation of llm's message store, its branches kept as forks: `llm logs` lists
    them, and `llm -c --cid ID` continues any branch (the thread ids are printed, or see
    `llm logs`).

    A conversation imported before is skipped, so importing again writes nothing; one
    that grew since (a later export) gets its new nodes only, as does one listed twice.
    Each turn's origin (the export, conversation and node) is kept in the table
    _convgraph_imports. One without a prompt or an answer is left out, and named. A --db
    that does not exist is made with llm's tables.
    """
    from convgraph.store.importer import import_export

    # The conversations are counted only at the end: the bar counts bytes.
    with ProgressBar(in_bytes=True) as bar:
        summary = import_export(source, db_path, dry_run=dry_run, progress=bar)

    would = "Would import" if dry_run else "Imported"
    if summary.created:
        echo_line(
            f"{'Would create' if dry_run else 'Created'} {summary.target}"
            " with llm's tables"
        )
    elif summary.upgraded:
        echo_line(
            f"{'Would bring' if dry_run else 'Brought'} {summary.target}"
            " up to llm's current tables first (llm's own migrations)"
        )
    echo_line(
        f"{would} {counted(summary.imported, 'conversation', grouping=',')}"
        f" ({counted(summary.nodes, 'node', grouping=',')} as turns,"
        f" {counted(summary.threads, 'thread', grouping=',')}) into {summary.target}"
    )
    if summary.skipped:
        echo_line(
            f"Skipped {counted(summary.skipped, 'conversation', grouping=',')} imported before"
        )
    if summary.grown:
        added = counted(sum(c.nodes for c in summary.grown), "new node", grouping=",")
        grown = counted(len(summary.grown), "conversation", grouping=",")
        echo_line(
            f"{'Would add' if dry_run else 'Added'} {added} to {grown} imported before"
        )
    written = summary.written()
    # By the id `llm -c --cid` takes: its current branch's thread.
    for result in written[:LISTED]:
        echo_line(
            f"  {result.thread_id}  {result.name or result.conversation_id}"
            f"  ({counted(result.nodes, 'node', grouping=',')})"
        )
    if len(written) > LISTED:
        more = len(written) - LISTED
        echo_line(f"  and {more:,} more: convgraph conversations lists every id")
    if summary.empty:
        # No turn to write, and llm lists no thread without one: named.
        empty = counted(len(summary.empty), "empty conversation", grouping=",")
        echo_line(f"Left out {empty} (no prompt and no answer):")
        for conversation_id, name in summary.empty[:20]:
            echo_line(f"  {conversation_id}  {name or 'no title'}")
        if len(summary.empty) > 20:
            echo_line(
                f"  and {len(summary.empty) - 20:,} more (convgraph check lists them)"
            )
    if dry_run:
        echo_line("Nothing was written (--dry-run)")
    elif written:
        echo_line(
            "Continue one where it was left (its current branch):"
            " llm -c --cid ID 'your prompt'"
        )
        echo_line(
            "Its other branches: convgraph tree ID draws them, and"
            " convgraph branch NODE_ID 'your prompt' goes on from any node"
        )
