"""`convgraph similar`: the prompts and answers nearest a node's or a text's
meaning, across every tree."""

from __future__ import annotations

import click

from convgraph.cli.options import (
    NODE_ID,
    UserError,
    command,
    db_option,
    opened_logs,
    output_options,
)
from convgraph.cli.output import TableFit, echo_records, table_width
from convgraph.cli.progress import ProgressBar
from convgraph.cli.user_input import Number

#: `convgraph.meaning.nearest.COLUMNS`, spelt here so --help imports no numpy.
COLUMNS = ("rank", "score", "tree_id", "id", "role", "active", "snippet")
#: `--embedding-model NAME`, for every command that asks for meaning.
embedding_model_option = click.option(
    "--embedding-model",
    "model",
    metavar="NAME",
    help="An llm embedding model (`llm embed-models`; default: wordllama, offline)",
)


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
