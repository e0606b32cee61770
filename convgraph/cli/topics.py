"""`convgraph topics` and `check --duplicates`: conversations grouped by what
they ask (`convgraph.meaning.uses`)."""

from __future__ import annotations

import click

from convgraph.cli.options import (
    all_option,
    command,
    db_option,
    embedding_model_option,
    opened_logs,
    output_options,
)
from convgraph.cli.output import echo_records, say
from convgraph.cli.progress import ProgressBar
from convgraph.cli.user_input import Number
from convgraph.text import counted, excerpt, terminal_text

TOPIC_COLUMNS = ["topic", "words", "conversations", "tree_ids", "titles"]
DUPLICATE_COLUMNS = ["tree_a", "tree_b", "cosine", "name_a", "name_b"]


@command()
@click.option(
    "-k",
    "count",
    type=Number(1, 10_000),
    help="How many topics [default: the square root of half the"
    " conversations, at most 8]",
)
@embedding_model_option
@db_option
@all_option
@output_options
def topics(count: int | None, model: str | None, output_format: str | None) -> None:
    """Group the conversations by meaning, each topic named by its words.

    Each conversation is the mean of its prompts' embeddings (WordLlama,
    offline, unless --embedding-model names another); k-means, seeded so the
    same file gives the same topics, makes -k groups of them (fewer with
    fewer conversations), each named by the words its prompts hold more
    than the others' (TF-IDF). Largest first, with their count of
    conversations and three titles; as records: topic, words,
    conversations, tree_ids, titles.
    """
    from convgraph.meaning.uses import conversation_topics

    with ProgressBar() as bar:
        found = conversation_topics(opened_logs(), count, model, bar)
    if output_format is not None:
        return echo_records(found, TOPIC_COLUMNS, output_format)
    if not found:
        say("no conversation has a prompt to group")
    for topic in found:
        name = terminal_text(f"{topic['topic']}. {', '.join(topic['words'])}")
        counts = counted(topic["conversations"], "conversation")
        click.echo(f"{click.style(name, bold=True)}  ({counts})")
        for tree, title in [*zip(topic["tree_ids"], topic["titles"], strict=True)][:3]:
            click.echo(terminal_text(f"   {tree}  {excerpt(title or '', 60)}"))


def report_duplicates(output_format: str | None, model: str | None) -> None:
    """`check --duplicates`: the pairs `near_duplicates` finds, a line each or
    as records; exit status 1 when there are any."""
    from convgraph.meaning import node_vectors
    from convgraph.meaning.uses import near_duplicates

    logs = opened_logs()
    with ProgressBar() as bar:
        pairs = near_duplicates(node_vectors(logs, model, bar))
        names = logs.forest(False, progress=bar).names if pairs else {}
    records = [
        {"tree_a": a, "tree_b": b, "cosine": cosine}
        | {"name_a": names.get(a), "name_b": names.get(b)}
        for a, b, cosine in pairs
    ]
    if output_format is not None:
        echo_records(records, DUPLICATE_COLUMNS, output_format)
    for a, b, cosine in pairs if output_format is None else []:
        asked = excerpt(names.get(a) or "", 60)
        line = f"near-duplicate: {a} and {b} (cosine {cosine:.2f}): {asked}"
        click.echo(terminal_text(line))
    if not records and output_format in (None, "table"):
        click.echo("no near-duplicate conversations found")
    if records:
        raise SystemExit(1)
