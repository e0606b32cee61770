"""`convgraph stats`: the conversations table of `convgraph.analysis.stats`, printed.

One row per conversation tree with its size, shape, times, models and usage,
as an aligned table for a person or, through the output options, as JSON,
newline-delimited JSON, CSV or TSV for a program.
With ids, only those conversations are read (any thread id of a message-store
tree names the whole tree); without, the whole forest is read once, without
its texts. Work that lasts on a terminal shows its progress on stderr
(`convgraph.cli.progress.ProgressBar`). A file under `SMALL_INPUT_BYTES`
(an llm database, an agent's session, a chat export) is measured without
pandas: each tree read on its own (`convgraph.model.loading.read_tree`; an
export's trees in one pass of the file) and measured by
`convgraph.analysis.stats.summary`, the per-tree form of the table's rule,
printed as the table's rows would be (`small_records`); filters, `--by`
and `--nodes-in-range` take the table path whatever the size.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import click

from convgraph.cli.filters import FILTER_HELP, filter_options
from convgraph.cli.options import (
    CONVERSATION_ID,
    UserError,
    all_option,
    command,
    db_option,
    hidden_wanted,
    output_options,
)
from convgraph.cli.output import say
from convgraph.cli.progress import ProgressBar
from convgraph.cli.tables import print_conversations
from convgraph.model.filters import TreeFilter
from convgraph.text import counted

if TYPE_CHECKING:
    from convgraph.model.forest import Forest
    from convgraph.sources.chat.exports import ChatExport

#: The size (bytes, with an llm database's write-ahead log) under which a
#: file is measured tree by tree without pandas (`small_records`): below it,
#: importing pandas (about 0.3 s) is most of the command's time; above it,
#: the table's vectorized work soon costs less than a graph per tree.
SMALL_INPUT_BYTES = 1_000_000


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
    " model or project (an agent's working directory), or several"
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
    db_path: str | None,
    where: TreeFilter,
    nodes_in_range: bool,
    by: str | None,
    plot: str | None,
    measure: str,
    with_cost: bool,
) -> None:
    """Statistics of every conversation tree, or of the ones named.

    One row per tree: nodes, roots, leaves, max_depth, branch_points,
    branching_factor_avg and _max (over the nodes that have children; the
    start counts too, with its roots as its children, where a tree has
    several roots), first_datetime, last_datetime, models, the sums of
    input_tokens, output_tokens and duration_ms, tool_calls (how many tool
    calls the tree's runs made) and tools (the tools called, each once),
    active_path_length and abandoned_branches, and what the branches left
    spent (every node off the active path): abandoned_input_tokens,
    abandoned_output_tokens and abandoned_share, their share of the tree's
    tokens. --cost adds cost_usd and abandoned_cost_usd (the usage extra). A
    CONVERSATION_ID may be a legacy conversation id or any thread id of a
    message-store tree.

    On a terminal the table shows the columns that fit, in this order of
    choice: tree_id, name (cut to fit), nodes, leaves, max_depth,
    branch_points, last_datetime, models, roots, first_datetime, tool_calls,
    the usage sums, active_path_length, abandoned_branches, abandoned_share,
    the abandoned tokens, the branching factors, tools, the costs; piped,
    and in --json, --nl, --csv and --tsv, every one.
    --columns chooses (`--columns tree_id,nodes,tools`).

    --nodes-in-range counts a tree's nodes, times, models and usage over
    the nodes the filters match; its shape stays the whole tree's.

    --by day|week|month|model|project (or several: --by week,model): usage over
    time instead, one row per group: conversations, nodes, branch_points,
    abandoned_branches, input_tokens, output_tokens and cost_usd (each
    model's price on the day, from genai-prices; null for a model it does
    not know, named on stderr; none for a token count no request has, which
    `convgraph check` reports), then the abandoned branches' tokens, cost
    and share of the tokens. --plot draws it.

    --db DIR may name a Parquet dataset (convgraph export --format parquet),
    measured with pandas, or on Dask with --dask.
    """
    from convgraph.cli.tables import PRIORITY, chosen_columns
    from convgraph.sources.parquet import is_parquet_dataset

    columns = chosen_columns(column_names, PRIORITY)
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
    if plain and db_path is not None and is_parquet_dataset(db_path):
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
        if not plain:
            raise UserError("--dask computes the plain table: no --by and no filters")
        raise UserError(
            "--dask computes on a Parquet dataset: give --db DIR, a directory"
            " written by convgraph export --format parquet"
        )
    if plain and not nodes_in_range and is_small(db_path):
        records = small_records(db_path, conversation_ids)
        if records is not None:
            print_conversations(records, output_format, columns)
            return
    from convgraph.analysis.stats import conversation_table
    from convgraph.cli.memory import fixed_mmap_threshold, give_back_memory
    from convgraph.model.filters import select_trees
    from convgraph.model.forest import Forest

    fixed_mmap_threshold()  # a read without texts, measured: less memory
    with ProgressBar(enabled=False if quiet else None) as bar:
        forest = Forest.read(
            db_path,
            text=False,
            conversation_ids=conversation_ids,
            progress=bar,
            hidden=hidden_wanted(),
        )
        give_back_memory()
        bar("computing statistics", 0, None)
        forest = select_trees(forest, where)
        hidden = forest.hidden
        if keys is not None:
            _usage(
                forest,
                keys,
                where if nodes_in_range else None,
                plot,
                measure,
                output_format,
            )
            return
        if nodes_in_range:
            from convgraph.analysis.usage import in_range_table

            table = in_range_table(forest, where)
            if with_cost:
                table = _priced(table, forest, where)
        elif with_cost:
            from convgraph.analysis.usage import node_costs, with_costs

            costs = node_costs(forest.nodes)
            _say_unknown(costs.unknown)
            table = with_costs(conversation_table(forest), forest, costs)
        else:
            # The table needs neither the ids nor the parents' ids (the
            # forest's parent rows hold the links): at a million nodes,
            # letting them go first lowers the command's peak by 60 MB.
            del forest.nodes["id"], forest.nodes["parent_id"]
            table = conversation_table(forest)
        # Its columns go before the rows are printed: the collector no longer
        # walks its object columns, and the memory is free for the output.
        del forest
    print_conversations(table, output_format, columns)
    if hidden and not hidden_wanted():
        nodes = sum(hidden.values())
        say(
            f"{counted(nodes, 'node')} of {counted(len(hidden), 'conversation')}"
            " in hidden branches left out (--all counts them in)"
        )


def _priced(table: Any, forest: Forest, where: TreeFilter) -> Any:
    """`--nodes-in-range --cost`: the costs of the nodes the filter matches."""
    import numpy as np

    from convgraph.analysis.usage import node_costs, with_costs
    from convgraph.model.filters import node_matches_table

    costs = node_costs(forest.nodes)
    costs.per_node[~node_matches_table(forest.nodes, where)] = np.nan
    _say_unknown(costs.unknown)
    return with_costs(table, forest, costs)


def _say_unknown(models: list[str]) -> None:
    """The models without a price, on stderr, each name as a terminal shows
    data (`terminal_text`): a model's name is the file's."""
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


def is_small(db_path: str | None) -> bool:
    """Whether `db_path` (None: llm's own database) is one file under
    `SMALL_INPUT_BYTES`, its write-ahead log counted."""
    from convgraph.sources.llm.files import default_database_path

    path = os.fspath(default_database_path() if db_path is None else db_path)
    try:
        if not os.path.isfile(path):
            return False
        size = os.path.getsize(path)
        if os.path.isfile(path + "-wal"):
            size += os.path.getsize(path + "-wal")
    except OSError:
        return False
    return size < SMALL_INPUT_BYTES


def small_records(
    db_path: str | None, conversation_ids: Iterable[str] = ()
) -> list[dict[str, Any]] | None:
    """The rows of `conversation_table` as `print_conversations` prints
    them, from `summary` of each tree read on its own: every tree of the
    file in the order of its first node, or the trees `conversation_ids`
    name, each once, in the order first named (as `Forest.read` reads them).

    A chat export is read once, in its order (it finds a conversation by
    reading the file from its start), its conversations without a node
    after the others with 0 nodes, as the table has them.

    None where the table path must answer: a chat export's named
    conversations, a source of another kind, or a tree that the file lists
    but does not give alone.

    Raises
    ------
    UnknownConversation, DatabaseError
    """
    from convgraph.analysis.stats import summary
    from convgraph.errors import UnknownConversation
    from convgraph.model.loading import read_tree
    from convgraph.sources import LogDatabase, opened
    from convgraph.sources.agents.sessions import AgentSessions
    from convgraph.sources.chat.exports import ChatExport
    from convgraph.sources.notes import read_notes

    records = []
    with opened(db_path) as logs:
        if any(note.hidden for note in read_notes(logs).values()):
            return None  # the table counts what hidden branches leave out
        if isinstance(logs, ChatExport) and not conversation_ids:
            return _export_records(logs)
        if not isinstance(logs, LogDatabase | AgentSessions):
            return None
        named: dict[str, str] = {}  # each tree once, with the id that named it
        for conversation_id in conversation_ids:
            tree_id = logs.tree_id_of_conversation(conversation_id)
            named.setdefault(tree_id, conversation_id)
        for tree_id in named or logs.tree_ids():
            try:
                graph = read_tree(logs, tree_id, log_order_nodes=True)[0]
            except UnknownConversation:
                if not named:
                    # A tree the file lists but cannot read alone (a
                    # thread's row without its id): the table reads it.
                    return None
                raise UnknownConversation(named[tree_id]) from None
            record = summary(graph)
            _with_table_times(record)
            records.append(record)
    return records


def _export_records(export: ChatExport) -> list[dict[str, Any]] | None:
    """`small_records` of every conversation of a chat export, read once."""
    from convgraph.analysis.stats import summary
    from convgraph.contract import (
        CONVERSATION_COLUMNS,
        INTEGER_ATTRIBUTES,
        RETRY_COLUMNS,
        TOOL_CALLS,
        TOOLS,
    )
    from convgraph.model.loading import tree_graph
    from convgraph.sources import log_order

    found, empty = [], []
    for tree in export.trees():
        if not tree.records:
            empty.append(tree)
            continue
        record = summary(tree_graph(export, tree, log_order_nodes=True)[0])
        _with_table_times(record)
        found.append((min(map(log_order, tree.records)), record))
    # The table's order: each tree where its first node is in log order.
    records = [record for _, record in sorted(found, key=lambda pair: pair[0])]
    # What the table gives a tree of no node: zeros, no times, no models
    # or tools, no usage figures but 0 tool calls.
    nothing: dict[str, Any] = dict.fromkeys(CONVERSATION_COLUMNS, 0)
    nothing |= dict.fromkeys(("first_datetime", "last_datetime"), None)
    nothing |= dict.fromkeys(INTEGER_ATTRIBUTES, None)
    nothing |= dict.fromkeys(RETRY_COLUMNS, None)
    nothing |= {"branching_factor_avg": 0.0, "models": [], TOOLS: [], TOOL_CALLS: 0}
    for tree in empty:
        records.append(nothing | {"tree_id": tree.tree_id, "name": tree.name})
    return records


def _with_table_times(record: dict[str, Any]) -> None:
    """Give `record` its first and last times as the table prints them:
    ISO 8601 in UTC with its offset (both forms read every moment
    `convgraph.times.parse_time` reads, to the microsecond)."""
    from convgraph.times import utc_iso

    for key in ("first_datetime", "last_datetime"):
        record[key] = utc_iso(record[key])


def _usage_keys(by: str, plot: str | None, measure: str) -> list[str]:
    """The keys of `--by`, checked with `--plot` and `--measure` before
    anything is read; the extra they need, there.

    Raises
    ------
    UserError
    """
    from convgraph.cli.options import needs_extra

    needs_extra("genai_prices", "usage", "convgraph stats --by")
    if plot is not None:
        drawer = "plotext" if plot == "" else "matplotlib"
        needs_extra(drawer, "usage", "convgraph stats --plot")
    from convgraph.analysis.usage import CHART_FORMATS, GROUPINGS, USAGE_COLUMNS

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

    from convgraph.analysis.usage import (
        node_costs,
        terminal_chart,
        usage_table,
        write_chart,
    )
    from convgraph.cli.output import TableFit, echo_records, is_terminal, table_width
    from convgraph.cli.tables import CELLS, plain_records
    from convgraph.model.filters import node_matches_table

    costs = node_costs(forest.nodes)
    _say_unknown(costs.unknown)
    rows = None if in_range is None else node_matches_table(forest.nodes, in_range)
    table = usage_table(forest, keys, costs, rows)
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
    fit = None
    width = table_width()
    if width is not None and output_format in (None, "table"):
        # What a person asks of usage first: how much, what it cost and how
        # much of it went into branches left, then the tokens; the rest
        # where it fits.
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


#: The columns of `stats --by` a terminal keeps first, after the keys.
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
)
