"""`convgraph stats`: the conversations table of `convgraph.analysis.stats`, printed.

One row per conversation tree with its size, shape, times, models and usage,
as an aligned table for a person or, through the output options, as JSON,
newline-delimited JSON, CSV or TSV for a program.
With ids, only those conversations are read (any thread id of a message-store
tree names the whole tree); without, the whole forest is read once, without
its texts. Work that lasts on a terminal shows its progress on stderr
(`convgraph.cli.progress.ProgressBar`).
"""

from __future__ import annotations

import click

from convgraph.cli.options import (
    CONVERSATION_ID,
    UserError,
    command,
    db_option,
    output_options,
)
from convgraph.cli.progress import ProgressBar
from convgraph.cli.tables import print_conversations


@command()
@click.argument("conversation_ids", nargs=-1, type=CONVERSATION_ID)
@output_options
@click.option(
    "--columns",
    "column_names",
    metavar="A,B,C",
    default=None,
    help="The columns to print, in this order, in every format [default: all;"
    " the table keeps those that fit the terminal]",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar")
@click.option(
    "--dask",
    "scheduler",
    metavar="SCHEDULER",
    default=None,
    help="Compute a Parquet dataset (--db DIR) on Dask: `local` for a cluster"
    " on this machine, or a scheduler's address (tcp://HOST:8786)",
)
@db_option
def stats(
    conversation_ids: tuple[str, ...],
    output_format: str | None,
    column_names: str | None,
    quiet: bool,
    scheduler: str | None,
    db_path: str | None,
) -> None:
    """Statistics of every conversation tree, or of the ones named.

    One row per tree: nodes, roots, leaves, max_depth, branch_points,
    branching_factor_avg and _max (over the nodes that have children; the
    start counts too, with its roots as its children, where a tree has
    several roots), first_datetime, last_datetime, models, the sums of
    input_tokens, output_tokens and duration_ms, tool_calls (how many tool
    calls the tree's runs made) and tools (the tools called, each once),
    active_path_length and abandoned_branches. A CONVERSATION_ID may be a
    legacy conversation id or any thread id of a message-store tree.

    On a terminal the table shows the columns that fit, in this order of
    choice: tree_id, name (cut to fit), nodes, leaves, max_depth,
    branch_points, last_datetime, models, roots, first_datetime, tool_calls,
    the usage sums, active_path_length, abandoned_branches, the branching
    factors, tools; piped, and in --json, --nl, --csv and --tsv, every one.
    --columns chooses (`--columns tree_id,nodes,tools`).

    --db DIR may name a Parquet dataset (convgraph export --format parquet),
    measured with pandas, or on Dask with --dask.
    """
    from convgraph.cli.tables import PRIORITY, chosen_columns
    from convgraph.sources.parquet import is_parquet_dataset

    columns = chosen_columns(column_names, PRIORITY)
    if db_path is not None and is_parquet_dataset(db_path):
        from convgraph.cli.options import READING_A_DATASET, needs_extra

        needs_extra("pyarrow", "parquet", READING_A_DATASET)
        if scheduler is not None:
            needs_extra("dask.dataframe", "dask", "convgraph stats --dask")
            needs_extra("distributed", "dask", "convgraph stats --dask")
        from convgraph.analysis.datasets import dataset_conversation_table

        table = dataset_conversation_table(db_path, conversation_ids, scheduler)
        print_conversations(table, output_format, columns)
        return
    if scheduler is not None:
        raise UserError(
            "--dask computes on a Parquet dataset: give --db DIR, a directory"
            " written by convgraph export --format parquet"
        )
    from convgraph.analysis.stats import conversation_table
    from convgraph.model.forest import Forest

    with ProgressBar(enabled=False if quiet else None) as bar:
        forest = Forest.read(
            db_path, text=False, conversation_ids=conversation_ids, progress=bar
        )
        bar("computing statistics", 0, None)
        table = conversation_table(forest)
    print_conversations(table, output_format, columns)
