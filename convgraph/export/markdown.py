"""Whole conversations, every branch, as one Markdown document."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from convgraph.export.common import Graphs, PathOrFile, as_graphs, write_lines
from convgraph.present.markdown_text import inline_code, inline_text
from convgraph.present.transcript import (
    OUTPUT_LIMIT,
    path_system,
    step_lines,
    system_lines,
    title,
)
from convgraph.text import counted

if TYPE_CHECKING:
    import networkx as nx


def generate_markdown(graphs: Graphs, full: bool = False) -> Iterator[str]:
    """Yield the Markdown of one conversation or several, line by line
    (several are separated by a horizontal rule); `full` keeps long tool
    outputs whole instead of cutting them at `OUTPUT_LIMIT`."""
    limit = None if full else OUTPUT_LIMIT
    for number, tree in enumerate(as_graphs(graphs)):
        if number:
            yield ""
            yield "---"
            yield ""
        yield from conversation_lines(tree, limit)


def write_markdown(
    graphs: Graphs, path_or_file: PathOrFile, full: bool = False
) -> None:
    """Write `generate_markdown(graphs, full)` to a path or an open file."""
    write_lines(generate_markdown(graphs, full), path_or_file)


def conversation_lines(
    tree: nx.DiGraph[Any], limit: int | None = OUTPUT_LIMIT
) -> Iterator[str]:
    """One conversation: title, system prompt, then the active path with the
    other branches quoted where they split; outputs cut at `limit` (None: whole)."""
    leaves = sum(1 for node in tree if tree.out_degree(node) == 0)
    yield f"# {title(tree)}"
    yield ""
    yield (
        f"Conversation {inline_code(tree.graph.get('tree_id'))}:"
        f" {counted(len(tree), 'step')}, {counted(leaves, 'branch', 'branches')}."
    )
    if not len(tree):
        return
    if system := path_system(tree, list(tree)):
        yield ""
        yield from system_lines(system)
    roots = [node for node in tree if tree.in_degree(node) == 0]
    # The stack holds what is still to write, the next thing on top:
    # ("step", node, quote depth, step number, alternative?) writes one step,
    # ("below", ...) what hangs under a node written.
    stack: list[tuple[str, str, int, int, bool]] = []
    _push_choice(tree, roots, 0, 1, stack)
    while stack:
        kind, node, depth, number, alternative = stack.pop()
        prefix = "> " * depth
        if kind == "below":
            _push_choice(tree, list(tree.successors(node)), depth, number + 1, stack)
            continue
        # The blank before an alternative stays outside the quote it opens.
        yield ("> " * (depth - 1 if alternative else depth)).rstrip()
        if alternative:
            yield prefix + _alternative_label(tree, node, number)
            yield prefix.rstrip()
        heading = "#" * min(2 + depth, 6)
        # Only a blank line loses the quote's trailing space: a stored line
        # is written as it is.
        for line in step_lines(tree, node, number, heading, limit):
            yield prefix + line if line else prefix.rstrip()


def _push_choice(
    tree: nx.DiGraph[Any],
    nodes: list[str],
    depth: int,
    number: int,
    stack: list[tuple[str, str, int, int, bool]],
) -> None:
    """Push one point's alternatives: the main step, each other as a quoted
    branch, then what goes on under the main one."""
    if not nodes:
        return
    # The branch the text follows: the active one, else the last logged.
    main = next((node for node in nodes if tree.nodes[node].get("active")), nodes[-1])
    stack.append(("below", main, depth, number, False))
    for other in reversed([node for node in nodes if node != main]):
        stack.append(("below", other, depth + 1, number, False))
        stack.append(("step", other, depth + 1, number, True))
    stack.append(("step", main, depth, number, False))


def _alternative_label(tree: nx.DiGraph[Any], node: str, number: int) -> str:
    model = tree.nodes[node].get("model")
    label = [f"**Alternative to step {number}**"]
    if model:
        label.append(inline_text(model))
    label.append(inline_code(node))
    return " · ".join(label)
