"""`convgraph similar`: the prompts and answers nearest a node's or a text's
meaning, across every tree; `topics` and `check --duplicates` (issue 49)."""

from __future__ import annotations

import click

from convgraph.cli.options import (
    NODE_ID,
    UserError,
    all_option,
    command,
    db_option,
    embedding_model_option,
    opened_logs,
    output_options,
)
from convgraph.cli.output import TableFit, echo_records, say, table_width
from convgraph.cli.progress import ProgressBar
from convgraph.cli.user_input import Number
from convgraph.text import counted, excerpt, terminal_text

#: `convgraph.meaning.nearest.COLUMNS`, spelt here so --help imports no numpy.
COLUMNS = ("rank", "score", "tree_id", "id", "role", "active", "snippet")


@command()
@click.argument("node_id", type=NODE_ID, required=False)
@click.option("--text", help="Find what is nearest this text instead of a node")
@click.option(
    "-n", "--limit", default=10, show_default=True, type=Number(1, 100_000),
    help="How many to show",
)  # fmt: skip
@embedding_model_option
@output_options
@db_option
def similar(
    node_id: str | None,
    text: str | None,
    limit: int,
    model: str | None,
    output_format: str | None,
) -> None:
    """The prompts and answers nearest NODE_ID's prompt (its answer where it has
    none), or --text, by meaning, in every tree and branch.

    Texts are embedded once (WordLlama's model, offline, by default) and kept
    in ~/.cache/convgraph/meaning/ ($XDG_CACHE_HOME), a file's on first use.
    Each row: rank, score (cosine, higher is nearer), tree_id, id, role (prompt
    or response), active (on the active branch) and a snippet.
    """
    if (node_id is None) == (text is None):
        raise UserError("give a NODE_ID or --text, one of them")
    logs = opened_logs()
    with ProgressBar() as bar:
        records = logs.similar(node_id, text, limit, model, bar)
    if not records:
        click.echo("no text to compare", err=True)
    width = table_width() if output_format in (None, "table") else None
    fit = TableFit(width, COLUMNS, "snippet") if width else None
    echo_records(records, COLUMNS, output_format or "table", fit=fit)


TOPIC_COLUMNS = ["topic", "words", "name", "conversations", "tree_ids", "titles"]


@command()
@click.option("-k", "count", type=Number(1, 10_000), help="How many topics")
@embedding_model_option
@db_option
@all_option
@output_options
def topics(count: int | None, model: str | None, output_format: str | None) -> None:
    """Group the conversations by meaning, each topic named by its words.

    Seeded k-means on each conversation's mean prompt embedding (WordLlama,
    or --embedding-model) into -k topics (default: the square root of half
    the conversations, at most 8), each named by the words its prompts hold
    more often than the others', largest first, with three titles. As
    records: topic, words, name, conversations, tree_ids, titles.
    """
    from convgraph.meaning.uses import conversation_topics

    with ProgressBar() as bar:
        found = conversation_topics(opened_logs(), count, model, bar)
    if output_format is not None:
        return echo_records(found, TOPIC_COLUMNS, output_format)
    if not found:
        say("no conversation has a prompt to group")
    for topic in found:
        name = terminal_text(f"{topic['topic']}. {topic['name']}")
        counts = counted(topic["conversations"], "conversation")
        click.echo(f"{click.style(name, bold=True)}  ({counts})")
        for tree, title in [*zip(topic["tree_ids"], topic["titles"], strict=True)][:3]:
            click.echo(terminal_text(f"   {tree}  {excerpt(title or '', 60)}"))


def report_duplicates(output_format: str | None, model: str | None) -> None:
    """`check --duplicates`: the pairs `near_duplicates` finds (each repeat
    beside its closest earlier conversation), as records;
    exit status 1 when there are any."""
    from convgraph.meaning import node_vectors
    from convgraph.meaning.uses import near_duplicates

    logs = opened_logs()
    with ProgressBar() as bar:
        pairs = near_duplicates(node_vectors(logs, model, bar))
        names = logs.forest(False, progress=bar).names if pairs else {}
    records = [
        {"tree_a": a, "tree_b": b, "cosine": cosine, "name": names.get(a)}
        for a, b, cosine in pairs
    ]
    columns = ["tree_a", "tree_b", "cosine", "name"]
    echo_records(records, columns, output_format or "table")
    if not records and output_format in (None, "table"):
        click.echo("no near-duplicate conversations found")
    if records:
        raise SystemExit(1)
