"""`convgraph search QUERY`: every node searched (`Logs.search`), each hit
shown for a person or as a record."""

from __future__ import annotations

import sys
from typing import Any

import click

from convgraph.cli.filters import FILTER_HELP, filter_options
from convgraph.cli.memory import measuring
from convgraph.cli.options import (
    UserError,
    command,
    db_option,
    embedding_model_option,
    opened_logs,
    output_options,
)
from convgraph.cli.output import echo_records, is_terminal, say, table_width
from convgraph.cli.progress import ProgressBar
from convgraph.cli.user_input import Number
from convgraph.model.filters import TreeFilter
from convgraph.text import cell_width, terminal_text, window
from convgraph.times import shown_time

#: The default and the most -n takes (`convgraph.search.query.MAX_LIMIT`,
#: spelt here so --help imports no library).
DEFAULT_HITS = 20
MOST_HITS = 100_000
#: The fields of `convgraph.search.Hit`, named here for the same reason.
COLUMNS = (
    "rank",
    "score",
    "tree_id",
    "id",
    "depth",
    "active",
    "sidechain",
    "model",
    "datetime_utc",
    "source",
    "fields",
    "snippet",
    "marks",
)


@command(epilog=FILTER_HELP)
@click.argument("query", nargs=-1)
@click.option(
    "-n",
    "--limit",
    default=DEFAULT_HITS,
    show_default=True,
    type=Number(1, MOST_HITS),
    help="How many hits to show",
)
@click.option(
    "--abandoned",
    is_flag=True,
    help="Only hits off the active path, on abandoned branches",
)
@click.option(
    "--query-syntax",
    "--fts",
    "query_syntax",
    is_flag=True,
    help="QUERY is in the search engine's query language"
    ' (AND, OR, -word, "a phrase", response:word), not text',
)
@click.option(
    "--index",
    "index_directory",
    metavar="DIR",
    help="Keep the search index in this directory (default: the user's cache)",
)
@click.option("--meaning", metavar="TEXT", help="Fuse with the nodes nearest TEXT")
@embedding_model_option
@output_options
@db_option
@filter_options
def search(
    query: tuple[str, ...],
    limit: int,
    abandoned: bool,
    query_syntax: bool,
    index_directory: str | None,
    meaning: str | None,
    model: str | None,
    output_format: str | None,
    where: TreeFilter,
) -> None:
    """Search the prompts, responses, system prompts and parts (tool calls
    and results, reasoning, code) of every node of every tree.

    Hits are ranked by BM25, best first, each with a snippet, its tree, node,
    depth, model and time, and whether it lies on the active path, an
    abandoned branch or a subagent (sidechain). Every word of QUERY must
    occur; quotes, *, -, :, ^, AND or NEAR( are words like any other
    (--query-syntax, or --fts, for the engine's language). The index, in
    ~/.cache/convgraph/search/ ($XDG_CACHE_HOME) or --index DIR, is built
    on the first search and updated on every later one.

    With --json, --nl, --csv or --tsv each hit is a record: rank, score
    (BM25, higher is better), tree_id, id, depth, active, model,
    datetime_utc, source, fields (the texts that match), snippet and marks
    (the words found, as [start, end) character offsets).

    --meaning TEXT adds the nodes of any branch whose prompt or answer is
    nearest TEXT in meaning (WordLlama offline, or --embedding-model), ranks
    fused by reciprocal rank fusion (score: the sum of 1 / (60 + rank));
    fields names the text found. Without QUERY, the nearest nodes alone.
    """
    if not query and meaning is None:
        raise UserError("give a QUERY, or --meaning TEXT, or both")
    if meaning is not None and not meaning.strip():
        raise UserError("--meaning: give a text to compare with")
    logs = opened_logs()
    options = {
        "abandoned": abandoned,
        "query_syntax": query_syntax,
        "where": where,
        "index_directory": index_directory,
        "notice": say,
    }
    with ProgressBar() as bar:
        progress = measuring(bar)  # a build's freed buffers go back to the system
        if meaning is not None:
            from convgraph.meaning.uses import meaning_search

            text = " ".join(query) or None
            options |= {"model": model, "progress": progress}
            records = meaning_search(logs, text, meaning, limit, **options)
        else:
            options |= {"limit": limit, "progress": progress}
            hits = logs.search(" ".join(query), **options)
            records = [hit.as_record() for hit in hits]
    if output_format is not None:
        columns = list(COLUMNS)
        if output_format == "table":
            columns.remove("marks")
        echo_records(records, columns, output_format)
        return
    if not records:
        click.echo("no node matches", err=True)
        return
    styled = is_terminal(sys.stdout)
    width = table_width()
    if width is not None:
        from convgraph.present.text_tree import cut_line, unique_prefix_length

        # Ids cut where a heading would not fit, to a prefix that names each
        # alone in the whole file (it is typed back as an id).
        if any(cell_width(_heading(record)) > width for record in records):
            ids = [record[key] for record in records for key in ("tree_id", "id")]
            room = logs.source.unique_length(ids, unique_prefix_length(ids))
            for record in records:
                record["tree_id"] = record["tree_id"][:room]
                record["id"] = record["id"][:room]
    lines = []
    for record in records:
        heading, snippet, marks = _heading(record), record["snippet"], record["marks"]
        if width is not None:
            heading = cut_line(heading, width)
            snippet, marks = window(terminal_text(snippet), marks, width - 3)
        lines.append(heading)
        lines.append("   " + _snippet(snippet, marks, styled))
    click.echo("\n".join(lines))


def _heading(record: dict[str, Any]) -> str:
    """Where a hit lies: active path, abandoned branch or `sidechain`."""
    branch = "active" if record["active"] else "abandoned"
    if record["active"] is None:
        branch = ""
    if record["sidechain"]:
        branch = "sidechain"
    words = [
        f"{record['rank']}.",
        record["tree_id"],
        record["id"],
        f"depth {record['depth']}" if record["depth"] is not None else "",
        branch,
        record["model"] or "",
        shown_time(record["datetime_utc"], seconds=False),
    ]
    return terminal_text("  ".join(word for word in words if word))


def _snippet(snippet: str, marks: list[list[int]], styled: bool) -> str:
    """The snippet, shown safely, the words found bold where `styled`."""
    pieces = []
    at = 0
    for start, end in marks:
        pieces.append(terminal_text(snippet[at:start]))
        word = terminal_text(snippet[start:end])
        pieces.append(click.style(word, bold=True, fg="yellow") if styled else word)
        at = end
    pieces.append(terminal_text(snippet[at:]))
    return "".join(pieces)
