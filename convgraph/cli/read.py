"""Commands that read and show trees; one about a node or a conversation
reads only that conversation, one about all reads the forest once."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from typing import TYPE_CHECKING

import click

from convgraph.cli.filters import FILTER_HELP, filter_options, kept
from convgraph.cli.options import (
    CONVERSATION_ID,
    NODE_ID,
    all_option,
    command,
    db_option,
    embedding_model_option,
    json_option,
    opened_logs,
    output_options,
)
from convgraph.cli.output import (
    echo_ids,
    echo_json,
    echo_line,
    echo_records,
    is_terminal,
    say,
    say_none_kept,
    table_width,
)
from convgraph.cli.user_input import Number
from convgraph.model.filters import TreeFilter
from convgraph.text import counted

if TYPE_CHECKING:
    import networkx as nx

    from convgraph.logs import Logs
    from convgraph.present.text_tree import Style


@command(epilog=FILTER_HELP)
@db_option
@all_option
@output_options
@filter_options
def conversations(output_format: str | None, where: TreeFilter) -> None:
    """List every conversation tree: tree_id, name, nodes, roots, leaves
    and max_depth (the columns of `convgraph stats` that say what a tree is).
    """
    from convgraph.cli.memory import measuring
    from convgraph.cli.tables import print_conversations

    columns = ["tree_id", "name", "nodes", "roots", "leaves", "max_depth"]
    logs = opened_logs()
    found = logs.summaries(where=where, progress=measuring())
    rows = found.rows
    if isinstance(rows, list):
        print_conversations(
            [{key: row[key] for key in columns} for row in rows], output_format
        )
    else:
        print_conversations(rows[columns], output_format)
    if not len(rows) and output_format in (None, "table"):
        say_none_kept(found.read, where, logs.name)


@command(epilog=FILTER_HELP)
@click.argument("conversation_ids", nargs=-1, type=CONVERSATION_ID)
@db_option
@all_option
@json_option
@filter_options
@click.option(
    "--width",
    type=Number(0, 10_000),
    default=None,
    help="Terminal cells of prompt per line (a wide character takes two; 0"
    " draws the ids alone)"
    " [default: each line fits the terminal, its ids cut to the prefix that"
    " tells them apart where they would take much of it; 60 when not a"
    " terminal]",
)
@click.option(
    "--indent-chains",
    is_flag=True,
    help="Indent every child, also an only child (long chains draw wide)",
)
@click.option(
    "--active",
    is_flag=True,
    help="Mark the active path (the branch last used) with ●",
)
def tree(
    conversation_ids: tuple[str, ...],
    as_json: bool,
    width: int | None,
    indent_chains: bool,
    active: bool,
    where: TreeFilter,
) -> None:
    """Draw conversation trees; every conversation when no id is given.

    A node is one step: a tool chain's calls are drawn beneath its line
    (↳ name(arguments) → result), ∴ marks reasoning; several roots hang from
    the conversation's line as the alternatives of its first turn.

    With --json, a JSON array of the drawn nodes in drawing order, each with
    its id, parent, depth and conversation.
    """
    problems = 0
    drawings: Iterable[tuple[str, str]] | None = None
    logs = opened_logs()
    with ExitStack() as stack:
        if conversation_ids:
            read = []
            for conversation_id in conversation_ids:
                graph, found = logs.checked_tree(conversation_id)
                read.append(graph)
                problems += len(found)
            trees: Iterable[nx.DiGraph[str]] = list(kept(read, where))
            if not trees:
                say_none_kept(len(read), where)
        else:
            from convgraph.cli.memory import give_back_memory
            from convgraph.cli.progress import ProgressBar
            from convgraph.model.filters import select_trees
            from convgraph.present.text_tree import forest_drawings

            bar = stack.enter_context(ProgressBar())
            # The drawing and --json show no other text.
            read_forest = logs.drawn_forest(progress=bar)
            give_back_memory()
            problems = len(read_forest.problems)
            forest = select_trees(read_forest, where)
            if forest.nodes.empty:
                bar.close()
                say_none_kept(
                    int(read_forest.nodes["tree_id"].nunique()), where, logs.name
                )
            del read_forest
            # Each tree is drawn as it is written, a batch of trees at a time
            # from the table's rows: a million nodes at once hold gigabytes.
            if as_json:
                trees = forest.trees(progress=bar)
            else:
                style = _style(width, indent_chains, active, lambda: forest.nodes["id"])
                drawings = forest_drawings(forest, style, bar)
            if is_terminal(sys.stdout):
                if drawings is not None:
                    drawings = list(drawings)
                else:
                    trees = list(trees)
                stack.close()
        if drawings is not None:
            _write_drawings(drawings)
        else:
            _draw_trees(trees, as_json, width, indent_chains, active)
    _hint_check(problems)


#: The share of a terminal's width an id shown whole may take.
ID_SHARE = 4


def _style(
    width: int | None,
    indent_chains: bool,
    active: bool,
    ids: Callable[[], Iterable[str]],
) -> Style:
    """How `tree` draws: `--width` cells of prompt, else fitted to the
    terminal (ids cut to a unique prefix if long), else `EXCERPT_WIDTH`."""
    from convgraph.present.text_tree import Style, unique_prefix_length
    from convgraph.text import EXCERPT_WIDTH

    if width is not None:
        return Style(width, indent_chains, True, active)
    if (fit := table_width()) is None:
        return Style(EXCERPT_WIDTH, indent_chains, True, active)
    shown = [str(one) for one in ids()]
    longest = max(map(len, shown), default=0)
    cut = unique_prefix_length(shown) if longest * ID_SHARE > fit else longest
    return Style(
        EXCERPT_WIDTH, indent_chains, True, active, fit, cut if cut < longest else None
    )


def _draw_trees(
    trees: Iterable[nx.DiGraph[str]],
    as_json: bool,
    width: int | None,
    indent_chains: bool,
    active: bool,
) -> None:
    """Print the trees of `tree`: drawn, or with --json the drawn nodes."""
    import networkx as nx

    from convgraph.model import tree as operations

    if as_json:
        drawn = []
        for graph in trees:
            levels = operations.depths(graph)
            for root in operations.roots(graph):
                # Depth first, children in log order: the drawing's order.
                for node in nx.dfs_preorder_nodes(graph, root):
                    drawn.append(
                        {
                            "id": node,
                            "parent_id": operations.parent(graph, node),
                            "depth": levels[node],
                            # The tree and the calling conversation: two keys.
                            "tree_id": graph.graph["tree_id"],
                            "conversation_id": graph.nodes[node]["conversation_id"],
                            "prompt": graph.nodes[node]["prompt"],
                        }
                    )
        echo_json(drawn)
        return
    from convgraph.present.text_tree import tree_drawing

    trees = list(trees)
    style = _style(width, indent_chains, active, lambda: [n for g in trees for n in g])
    _write_drawings(tree_drawing(graph, style) for graph in trees)


WRITE_CHARS = 1 << 20


def _write_drawings(drawings: Iterable[tuple[str, str]]) -> None:
    """Write each tree's drawing, heading in bold, about `WRITE_CHARS` a write."""
    pieces: list[str] = []
    size = 0
    for index, (heading, rest) in enumerate(drawings):
        if index:
            pieces.append("\n")
        pieces.append(click.style(heading, bold=True) + "\n")
        if rest:
            pieces.append(rest + "\n")
            size += len(rest)
        if size >= WRITE_CHARS:
            click.echo("".join(pieces), nl=False)
            pieces, size = [], 0
    if pieces:
        click.echo("".join(pieces), nl=False)


def _hint_check(problems: int) -> None:
    """Say on stderr that the file has problems: a broken link draws as a root."""
    if problems:
        say(
            f"Note: {counted(problems, 'problem')} in this file's links (a broken"
            " link is drawn as a root): convgraph check lists them"
        )


def _ids_command(
    name: str,
    doc: str,
    answer: Callable[[Logs, str], list[str]],
    empty: str = "",
    argument: str = "node_id",
) -> click.Command:
    """A command printing the ids `answer` gives for its one argument, and
    `empty` (`{}` the argument) on stderr where there are none."""

    def run(output_format: str | None, **given: str) -> None:
        value = given[argument]
        found = answer(opened_logs(), value)
        echo_ids(found, output_format)
        if empty and not found and output_format in (None, "table"):
            say(empty.format(value))

    run.__doc__ = doc
    kind = NODE_ID if argument == "node_id" else CONVERSATION_ID
    decorated = output_options(all_option(db_option(run)))
    return command(name)(click.argument(argument, type=kind)(decorated))


def _operation(name: str, of_node: bool = True) -> Callable[[Logs, str], list[str]]:
    """`model.tree`'s operation `name` on the tree of a node (or conversation)."""

    def answer(logs: Logs, value: str) -> list[str]:
        from convgraph.model import tree as operations

        operation = getattr(operations, name)
        if of_node:
            return list(operation(logs.tree_of_node(value), value))
        return list(operation(logs.tree_of_conversation(value)))

    return answer


path = _ids_command(
    "path",
    "The ids from the root of NODE_ID's tree down to NODE_ID.",
    lambda logs, node_id: logs.path(node_id),
)
children = _ids_command(
    "children",
    "The direct children of NODE_ID, in log order.",
    _operation("children"),
    "{} has no children: it is a leaf",
)
siblings = _ids_command(
    "siblings",
    """NODE_ID's alternatives: the other children of its parent, or for a
    root the other roots of its conversation (alternatives at its start).""",
    _operation("siblings"),
    "{} has no siblings: no other answer at its place",
)
descendants = _ids_command(
    "descendants",
    "Every node below NODE_ID, breadth first.",
    _operation("descendants"),
    "no node below {}: it is a leaf",
)
roots = _ids_command(
    "roots",
    "The roots of a conversation, in log order.",
    _operation("roots", of_node=False),
    argument="conversation_id",
)
leaves = _ids_command(
    "leaves",
    "The leaves (branch tips) of a conversation, in log order.",
    _operation("leaves", of_node=False),
    argument="conversation_id",
)


@command()
@db_option
@click.option("--secrets", is_flag=True, help="List where secrets are, not them")
@click.option("--duplicates", is_flag=True, help="List questions asked again")
@embedding_model_option
@output_options
def check(
    output_format: str | None, secrets: bool, duplicates: bool, model: str | None
) -> None:
    """Report broken parent links; exit status 1 when there are any.

    Cycles, self-parents, parents that do not exist and parents in another conversation.
    Each broken link is dropped when trees are built: the node is treated as a root.
    Also rows that are no node, responses an llm older than 0.32 logged into a migrated
    file whose parent cannot be told (unplaced), and a migrated file's lost rules.
    Without an output option, one line a problem; as records, with kind, node_id,
    parent_id, conversation_id, message and cycle (the ids around a cycle). --db DIR may
    name a Parquet dataset (convgraph export --format parquet): its repeated rows,
    broken links and trees split over files.

    --duplicates lists conversations whose first prompt means what an earlier one's does
    instead: a cosine of 0.8 or more (WordLlama, or --embedding-model), each beside the
    earlier conversation closest to it.
    """
    from dataclasses import fields

    from convgraph.cli.options import dataset_path
    from convgraph.links.integrity import Problem

    if secrets:
        from convgraph.cli.redacting import report_secrets

        return report_secrets(output_format)
    if duplicates:
        from convgraph.cli.meaning import report_duplicates

        return report_duplicates(output_format, model)
    if (dataset := dataset_path()) is not None:
        # A dataset convgraph export wrote: what its readers leave out.
        from convgraph.analysis.datasets import dataset_problems
        from convgraph.cli.options import READING_A_DATASET, needs_extra

        needs_extra("pyarrow", "parquet", READING_A_DATASET)
        problems = dataset_problems(dataset)
    else:
        problems = opened_logs().problems()
    if output_format is not None:
        columns = [field.name for field in fields(Problem)]
        records = [problem.to_dict() for problem in problems]
        echo_records(records, columns, output_format)
    else:
        for problem in problems:
            echo_line(f"{problem.kind}: {problem.message}")
    if not problems and output_format in (None, "table"):
        # The report itself, on stdout: `check > report.txt` keeps it.
        click.echo("no problems found")
    if problems:
        raise SystemExit(1)
