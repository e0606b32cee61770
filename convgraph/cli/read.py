"""Commands that read and show trees: conversations, tree, path, children,
siblings, descendants, roots, leaves, check.

A command about one node or one conversation reads only that conversation
(`load_tree*`); a command about every conversation reads the forest once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from convgraph.cli import cli
from convgraph.cli.options import db_option, echo_ids, echo_json, json_option

if TYPE_CHECKING:
    import networkx as nx


def _tree_of_node(node_id: str, db_path: str | None) -> nx.DiGraph:
    from convgraph.forest import load_tree_of_node

    return load_tree_of_node(node_id, db_path)


def _tree(conversation_id: str, db_path: str | None) -> nx.DiGraph:
    from convgraph.forest import load_tree

    return load_tree(conversation_id, db_path)


@cli.command()
@db_option
@json_option
def conversations(db_path: str | None, as_json: bool) -> None:
    """List every conversation: id, name, nodes, roots, leaves and depth."""
    from convgraph.cli.tables import print_table
    from convgraph.forest import Forest
    from convgraph.stats import conversation_table

    table = conversation_table(Forest.read(db_path, text=False))
    columns = ["conversation_id", "name", "nodes", "roots", "leaves", "max_depth"]
    table = table[columns].rename(
        columns={"conversation_id": "id", "max_depth": "depth"}
    )
    print_table(table, "json" if as_json else "table")


def _short_name(name: str, width: int = 40) -> str:
    from convgraph.text import excerpt

    return excerpt(name, width)


@cli.command()
@click.argument("conversation_ids", nargs=-1)
@db_option
@json_option
@click.option(
    "--width", default=60, show_default=True, help="Characters of prompt per line"
)
@click.option(
    "--indent-chains",
    is_flag=True,
    help="Indent every child, also an only child (long chains draw wide)",
)
def tree(
    conversation_ids: tuple[str, ...],
    db_path: str | None,
    as_json: bool,
    width: int,
    indent_chains: bool,
) -> None:
    """Draw conversation trees; every conversation when no id is given.

    With --json, a JSON array of the drawn nodes in drawing order, each with
    its id, parent, depth and conversation.
    """
    from convgraph import tree as operations
    from convgraph.render import generate_tree_lines

    if conversation_ids:
        trees = [
            _tree(conversation_id, db_path) for conversation_id in conversation_ids
        ]
    else:
        from convgraph.forest import Forest

        trees = list(Forest.read(db_path).trees())
    if as_json:
        drawn = []
        for graph in trees:
            levels = operations.depths(graph)
            for root in operations.roots(graph):
                for node in [root, *_depth_first(graph, root)]:
                    drawn.append(
                        {
                            "id": node,
                            "parent_id": operations.parent(graph, node),
                            "depth": levels[node],
                            "conversation_id": graph.graph["conversation_id"],
                            "prompt": graph.nodes[node]["prompt"],
                        }
                    )
        echo_json(drawn)
        return
    for index, graph in enumerate(trees):
        if index:
            click.echo()
        title = graph.graph["conversation_id"]
        if graph.graph.get("name"):
            title += f"  {_short_name(graph.graph['name'], width)}"
        click.echo(click.style(title, bold=True))
        for line in generate_tree_lines(
            graph, width=width, indent_chains=indent_chains
        ):
            click.echo(line)


def _depth_first(graph: nx.DiGraph, root: str) -> list[str]:
    """The nodes below `root` in the order the drawing shows them."""
    order = []
    stack = list(reversed(list(graph.successors(root))))
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(reversed(list(graph.successors(node))))
    return order


@cli.command()
@click.argument("node_id")
@db_option
@json_option
def path(node_id: str, db_path: str | None, as_json: bool) -> None:
    """The ids from the root of NODE_ID's tree down to NODE_ID."""
    from convgraph.forest import load_path

    echo_ids(load_path(node_id, db_path), as_json)


@cli.command()
@click.argument("node_id")
@db_option
@json_option
def children(node_id: str, db_path: str | None, as_json: bool) -> None:
    """The direct children of NODE_ID, in log order."""
    from convgraph import tree as operations

    echo_ids(operations.children(_tree_of_node(node_id, db_path), node_id), as_json)


@cli.command()
@click.argument("node_id")
@db_option
@json_option
def siblings(node_id: str, db_path: str | None, as_json: bool) -> None:
    """The other children of NODE_ID's parent: its alternatives."""
    from convgraph import tree as operations

    echo_ids(operations.siblings(_tree_of_node(node_id, db_path), node_id), as_json)


@cli.command()
@click.argument("node_id")
@db_option
@json_option
def descendants(node_id: str, db_path: str | None, as_json: bool) -> None:
    """Every node below NODE_ID, breadth first."""
    from convgraph import tree as operations

    echo_ids(operations.descendants(_tree_of_node(node_id, db_path), node_id), as_json)


@cli.command()
@click.argument("conversation_id")
@db_option
@json_option
def roots(conversation_id: str, db_path: str | None, as_json: bool) -> None:
    """The roots of a conversation, in log order."""
    from convgraph import tree as operations

    echo_ids(operations.roots(_tree(conversation_id, db_path)), as_json)


@cli.command()
@click.argument("conversation_id")
@db_option
@json_option
def leaves(conversation_id: str, db_path: str | None, as_json: bool) -> None:
    """The leaves (branch tips) of a conversation, in log order."""
    from convgraph import tree as operations

    echo_ids(operations.leaves(_tree(conversation_id, db_path)), as_json)


@cli.command()
@db_option
@json_option
def check(db_path: str | None, as_json: bool) -> None:
    """Report broken parent links; exit status 1 when there are any.

    Cycles, self-parents, parents that do not exist and parents in another
    conversation. Each broken link is dropped when trees are built: the node
    is treated as a root.
    """
    from convgraph.forest import Forest

    problems = Forest.read(db_path, text=False).problems
    if as_json:
        echo_json([problem.to_dict() for problem in problems])
    else:
        for problem in problems:
            click.echo(f"{problem.kind}: {problem.message}")
        if not problems:
            click.echo("no problems found", err=True)
    if problems:
        raise SystemExit(1)
