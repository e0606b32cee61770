"""`convgraph similar`: the prompts and answers nearest a node's or a text's
meaning, across every tree."""

from __future__ import annotations

import click

from convgraph.cli.options import (
    NODE_ID,
    UserError,
    command,
    db_option,
    embedding_model_option,
    opened_logs,
    output_options,
)
from convgraph.cli.output import aligned_lines, echo_records, table_width
from convgraph.cli.progress import ProgressBar
from convgraph.cli.user_input import Number

#: `convgraph.meaning.nearest.COLUMNS`, spelt here so --help imports no numpy.
COLUMNS = ("rank", "score", "tree_id", "id", "role", "active", "snippet")


@command()
@click.argument("node_id", type=NODE_ID, required=False)
@click.option("--text", help="Find what is nearest this text instead of a node")
@click.option(
    "-n",
    "--limit",
    default=10,
    show_default=True,
    type=Number(1, 100_000),
    help="How many to show",
)
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

    Texts are embedded once by the embedding model (WordLlama's, offline, by
    default) and kept in ~/.cache/convgraph/meaning/ ($XDG_CACHE_HOME); a file's
    vectors are made on first use and again from the kept ones when it changes.
    Each line: rank, score (cosine, higher is nearer), tree, node, prompt or
    response, whether on the active branch, a snippet.
    """
    if (node_id is None) == (text is None):
        raise UserError("give a NODE_ID or --text, one of them")
    logs = opened_logs()
    with ProgressBar() as bar:
        records = logs.similar(node_id, text, limit, model, bar)
    if output_format is not None:
        echo_records(records, COLUMNS, output_format)
    elif not records:
        click.echo("no text to compare", err=True)
    else:
        rows = [
            [
                f"{record['rank']}.",
                f"{record['score']:.3f}",
                record["tree_id"],
                record["id"],
                record["role"],
                "active" if record["active"] else "",
                record["snippet"],
            ]
            for record in records
        ]
        lines = aligned_lines(rows, left=range(2, 7))
        width = table_width()
        if width is not None:
            from convgraph.present.text_tree import cut_line

            lines = (cut_line(line, width) for line in lines)
        click.echo("\n".join(lines))
