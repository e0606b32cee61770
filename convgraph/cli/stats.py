"""`convgraph stats`: the statistics of every conversation tree, printed, or
usage over time with `--by`; the rows come from `Logs.summaries`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from convgraph.cli.filters import FILTER_HELP, filter_options
from convgraph.cli.options import (
    CONVERSATION_ID,
    UserError,
    all_option,
    command,
    db_option,
    embedding_model_option,
    opened_logs,
    output_options,
)
from convgraph.cli.output import say
from convgraph.cli.progress import ProgressBar
from convgraph.cli.tables import print_conversations
from convgraph.model.filters import TreeFilter, select_trees
from convgraph.text import counted

if TYPE_CHECKING:
    from convgraph.model.forest import Forest


@command(epilog=FILTER_HELP)
@click.argument("conversation_ids", nargs=-1, type=CONVERSATION_ID)
@output_options
@filter_options
@click.option(
    "--nodes-in-range",
    is_flag=True,
    help="Count only the nodes the filters match (nodes, times, models, usage)",
)
@click.option(
    "--by",
    metavar="KEYS",
    default=None,
    help="Usage over time instead: group by day, week (ISO, UTC), month,"
    " model, project (an agent's working directory) or source, or several"
    " (week,model)",
)
@click.option(
    "--plot",
    metavar="[FILE]",
    is_flag=False,
    flag_value="",
    default=None,
    help="With --by: draw the usage in the terminal, or write FILE (.png, .svg)",
)
@click.option(
    "--measure",
    metavar="NAME",
    default="nodes",
    show_default=True,
    help="The figure --plot draws: conversations, nodes, branch_points,"
    " abandoned_branches, input_tokens, output_tokens or cost_usd",
)
@click.option(
    "--columns",
    "column_names",
    metavar="A,B,C",
    default=None,
    help="The columns to print, in this order, in every format [default: all;"
    " the table keeps those that fit the terminal]",
)
@click.option(
    "--cost",
    "with_cost",
    is_flag=True,
    help="Add each tree's cost_usd and abandoned_cost_usd (genai-prices, as"
    " --by prices)",
)
@click.option("--meaning", "by_meaning", is_flag=True, help="Add alternatives_spread")
@embedding_model_option
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
@all_option
def stats(
    conversation_ids: tuple[str, ...],
    output_format: str | None,
    column_names: str | None,
    quiet: bool,
    scheduler: str | None,
    where: TreeFilter,
    nodes_in_range: bool,
    by: str | None,
    plot: str | None,
    measure: str,
    with_cost: bool,
    by_meaning: bool,
    model: str | None,
) -> None:
    """Statistics of every conversation tree, or of the ones named.

    One row per tree: nodes, roots, leaves, max_depth, branch_points,
    branching_factor_avg and _max (over nodes with children; several roots
    count as the start's children), first_datetime, last_datetime, models,
    input_tokens, output_tokens, duration_ms, tool_calls, tools (each once),
    active_path_length, abandoned_branches, and what the branches off the
    active path spent: abandoned_input_tokens, abandoned_output_tokens and
    abandoned_share of the tree's tokens. --cost adds cost_usd and
    abandoned_cost_usd (the usage extra). A CONVERSATION_ID may be a legacy
    conversation id or any thread id of a message-store tree.

    On a terminal the table shows the columns that fit, chosen in this
    order: tree_id, name (cut to fit), nodes, leaves, max_depth,
    branch_points, last_datetime, models, roots, first_datetime, tool_calls,
    the usage sums, active_path_length, abandoned_branches, abandoned_share,
    the abandoned tokens, the branching factors, tools, the costs; piped or
    in another format, every one. --columns chooses (`--columns
    tree_id,nodes,tools`).

    --nodes-in-range measures nodes, times, models and usage over the nodes
    the filters match; the shape stays the tree's.

    --meaning adds alternatives_spread: the mean cosine distance between
    sibling answers' embeddings (WordLlama offline, or --embedding-model)
    over the tree's branch points; null without alternatives.

    --by day|week|month|model|project|source|topic (or several: --by week,model):
    usage over time, one row per group: conversations, nodes, branch_points,
    abandoned_branches, input_tokens, output_tokens, cost_usd (each model's
    price on the day, from genai-prices; null for a model it does not know,
    named on stderr; none for a token count no request has, which `convgraph
    check` reports), then the abandoned branches' tokens, cost and share. --plot draws it. --db DIR may name a Parquet
    dataset (convgraph export --format parquet), measured with pandas, or
    on Dask with --dask.
    """
    from convgraph.cli.options import dataset_path
    from convgraph.cli.tables import PRIORITY, chosen_columns
    from convgraph.contract import COST_COLUMNS

    spread = by_meaning or model is not None
    # The columns an option adds are known with it only.
    added = {"alternatives_spread": spread} | dict.fromkeys(COST_COLUMNS, with_cost)
    known = [name for name in PRIORITY if added.get(name, True)]
    columns = chosen_columns(column_names, known)
    if nodes_in_range and not where:
        raise UserError("--nodes-in-range counts the nodes the filters match: give one")
    if by is None and (plot is not None or measure != "nodes"):
        raise UserError("--plot and --measure draw usage over time: give --by")
    keys = None if by is None else _usage_keys(by, plot, measure)
    if with_cost:
        if keys is not None:
            raise UserError("--by has cost_usd already: --cost is for the trees' table")
        from convgraph.cli.options import needs_extra

        needs_extra("genai_prices", "usage", "convgraph stats --cost")
    plain = not (where or by or with_cost)
    dataset = dataset_path()
    if plain and dataset is not None:
        from convgraph.cli.options import READING_A_DATASET, needs_extra

        needs_extra("pyarrow", "parquet", READING_A_DATASET)
        if scheduler is not None:
            needs_extra("dask.dataframe", "dask", "convgraph stats --dask")
            needs_extra("distributed", "dask", "convgraph stats --dask")
        from convgraph.analysis.datasets import dataset_conversation_table

        table: Any = dataset_conversation_table(dataset, conversation_ids, scheduler)
        print_conversations(table, output_format, columns)
        return
    if scheduler is not None:
        if not plain:
            raise UserError("--dask computes the plain table: no --by and no filters")
        raise UserError(
            "--dask computes on a Parquet dataset: give --db DIR, a directory"
            " written by convgraph export --format parquet"
        )
    from convgraph.cli.memory import measuring
    from convgraph.logs import COMPUTING

    logs = opened_logs()
    with ProgressBar(enabled=False if quiet else None) as bar:
        progress = measuring(bar)
        if plain and not nodes_in_range:
            found = logs.summaries(conversation_ids, progress=progress)
            table = found.rows
            hidden = found.hidden
        else:
            forest = logs.forest(False, conversation_ids or None, progress=progress)
            progress(COMPUTING, 0, None)
            forest = select_trees(forest, where)
            hidden = forest.hidden
            in_range = where if nodes_in_range else None
            if keys is not None:
                if "topic" in keys:
                    from convgraph.meaning.uses import conversation_topics

                    topics = conversation_topics(logs, None, model, progress)
                    named = {t: x["name"] for x in topics for t in x["tree_ids"]}
                    forest.nodes["topic"] = forest.nodes["tree_id"].map(named)
                _usage(forest, keys, in_range, plot, measure, output_format)
                return
            from convgraph.analysis.reports import trees_table

            table, unpriced = trees_table(forest, in_range, with_cost)
            _say_unknown(unpriced)
            del forest
        if spread:
            from convgraph.meaning.uses import with_spread

            table = with_spread(table, logs, model, progress)
    print_conversations(table, output_format, columns)
    if hidden and not logs.hidden:
        nodes = sum(hidden.values())
        say(
            f"{counted(nodes, 'node')} of {counted(len(hidden), 'conversation')}"
            " in hidden branches left out (--all counts them in)"
        )


def _say_unknown(models: list[str]) -> None:
    """Name the models without a price on stderr, shown safely."""
    from convgraph.text import terminal_text

    if models:
        click.echo(
            terminal_text(
                "no price known for "
                + ", ".join(models)
                + ": their cost_usd is null, not guessed"
            ),
            err=True,
        )


def _usage_keys(by: str, plot: str | None, measure: str) -> list[str]:
    """The keys of `--by`, checked with `--plot` and `--measure` before any
    read. Raises UserError."""
    from convgraph.cli.options import needs_extra

    needs_extra("genai_prices", "usage", "convgraph stats --by")
    if plot is not None:
        drawer = "plotext" if plot == "" else "matplotlib"
        needs_extra(drawer, "usage", "convgraph stats --plot")
    from convgraph.analysis.charts import CHART_FORMATS
    from convgraph.analysis.usage import GROUPINGS, USAGE_COLUMNS

    keys = [key.strip() for key in by.split(",") if key.strip()]
    unknown = [key for key in keys if key not in GROUPINGS]
    if unknown or not keys or len(set(keys)) < len(keys):
        raise UserError(
            f"--by {by}: give one or more of {', '.join(GROUPINGS)}, each once"
        )
    if measure not in USAGE_COLUMNS:
        raise UserError(f"--measure {measure}: one of {', '.join(USAGE_COLUMNS)}")
    if plot and plot.rpartition(".")[2].lower() not in CHART_FORMATS:
        raise UserError(f"--plot {plot}: a chart is written as .png or .svg")
    return keys


def _usage(
    forest: Forest,
    keys: list[str],
    in_range: TreeFilter | None,
    plot: str | None,
    measure: str,
    output_format: str | None,
) -> None:
    """`stats --by`: the usage table printed, or drawn (`--plot`)."""
    import shutil

    from convgraph.analysis.charts import terminal_chart, write_chart
    from convgraph.analysis.reports import usage_report
    from convgraph.cli.output import TableFit, echo_records, is_terminal, table_width
    from convgraph.cli.tables import CELLS, plain_records
    from convgraph.cli.user_input import say_written

    table, unpriced = usage_report(forest, keys, in_range)
    _say_unknown(unpriced)
    if plot == "":
        size = shutil.get_terminal_size()
        color = is_terminal(sys.stdout)
        height = max(10, size.lines - 4)
        chart = terminal_chart(table, measure, size.columns, height, color)
        click.echo(chart.rstrip("\n"))
        return
    if plot is not None:
        try:
            write_chart(table, measure, plot)
        except OSError as error:
            raise UserError(f"--plot {plot}: {error.strerror or error}") from None
        say_written(plot)
    fit = None
    width = table_width()
    if width is not None and output_format in (None, "table"):
        # Usage and cost first, then the branches left, then the tokens.
        priority = (*keys, *USAGE_PRIORITY)
        squeeze = next((key for key in keys if key in ("model", "project")), None)
        fit = TableFit(width, priority, squeeze, 12)
    echo_records(
        plain_records(table),
        list(table.columns),
        output_format or "table",
        cells=CELLS,
        fit=fit,
    )


USAGE_PRIORITY = (
    "nodes",
    "cost_usd",
    "abandoned_share",
    "input_tokens",
    "output_tokens",
    "abandoned_cost_usd",
    "conversations",
    "branch_points",
    "abandoned_branches",
    "abandoned_input_tokens",
    "abandoned_output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
)
