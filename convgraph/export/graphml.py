"""Conversation trees as GraphML, for Gephi, yEd and Cytoscape, and back."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from convgraph.contract import (
    BOOLEAN_ATTRIBUTES,
    INTEGER_COLUMNS,
    NODE_ATTRIBUTES,
    PARTS,
    TREE_NAME,
)
from convgraph.errors import ExportError
from convgraph.export.common import (
    CALLS,
    FORBIDDEN,
    TREE_ID,
    Graphs,
    PathOrFile,
    UniqueIds,
    add_read_node,
    look_ahead,
    new_graph,
    tree_calls,
    without_forbidden,
    write_lines,
)

if TYPE_CHECKING:
    from convgraph.model.tree import ConversationTree

HEADER = (
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<graphml xmlns="http://graphml.graphdrawing.org/xmlns"'
    ' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'
    ' xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns'
    ' http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">',
)

#: Graph-level keys, named apart from the node keys of the same attribute.
GRAPH_KEYS = {"tree_id": "g_tree_id", "name": "g_name"}


def xml_text(text: str) -> str:
    """Text as XML character data on one line: markup escaped, forbidden
    characters replaced, line ends as references (XML would turn CR into LF)."""
    return (
        without_forbidden(text)
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("\n", "&#10;")
        .replace("\r", "&#13;")
    )


def xml_attribute(text: str) -> str:
    """Text as a double-quoted XML attribute value, tabs as references too."""
    return xml_text(text).replace('"', "&quot;").replace("\t", "&#9;")


def _key_lines(several: bool) -> Iterator[str]:
    for attribute, key in GRAPH_KEYS.items():
        yield (
            f'<key id="{key}" for="graph" attr.name="{attribute}" attr.type="string"/>'
        )
    node_keys = [*NODE_ATTRIBUTES, CALLS, *([TREE_ID, TREE_NAME] if several else [])]
    for attribute in node_keys:
        kind = "long" if attribute in INTEGER_COLUMNS else "string"
        if attribute in BOOLEAN_ATTRIBUTES:
            kind = "boolean"
        yield (
            f'<key id="{attribute}" for="node" attr.name="{attribute}"'
            f' attr.type="{kind}"/>'
        )


def _data(key: str, value: Any) -> str:
    if key in (PARTS, CALLS):
        # JSON escapes controls, and the rest XML forbids too: parts read back exact.
        text = json.dumps(value, ensure_ascii=False, default=str)
        return f'<data key="{key}">{xml_text(FORBIDDEN.sub(_json_escape, text))}</data>'
    if key in INTEGER_COLUMNS:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ExportError(f"{key} must be an integer or None, not {value!r}")
        return f'<data key="{key}">{value}</data>'
    if key in BOOLEAN_ATTRIBUTES:
        return f'<data key="{key}">{"true" if value else "false"}</data>'
    return f'<data key="{key}">{xml_text(str(value))}</data>'


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def generate_graphml(graphs: Graphs) -> Iterator[str]:
    """Yield the GraphML of one conversation or several in one graph, line by line: the
    contract's attributes and each node's `calls`. Raises `ExportError` (one node id in
    two conversations, or a count that is not an integer)."""
    graphs, several = look_ahead(graphs)
    yield from HEADER
    yield from _key_lines(several)
    yield '<graph edgedefault="directed">'
    unique = UniqueIds()
    written: set[str] = set()
    for graph in graphs:
        unique.check(graph)
        tree_data = ""
        if several:
            tree_id, name = graph.graph.get("tree_id"), graph.graph.get("name")
            if tree_id is not None:
                tree_data += _data(TREE_ID, tree_id)
            if name is not None:
                tree_data += _data(TREE_NAME, name)
        else:
            for attribute, key in GRAPH_KEYS.items():
                if (value := graph.graph.get(attribute)) is not None:
                    yield _data(key, value)
        ids = {}
        folded = tree_calls(graph)
        for node, data in graph.nodes(data=True):
            ids[node] = node_id = xml_attribute(str(node))
            if node_id in written:
                raise ExportError(
                    f"node ids {node!r} and another are the same once the"
                    " characters XML forbids are replaced"
                )
            written.add(node_id)
            values = "".join(
                _data(key, data[key])
                for key in NODE_ATTRIBUTES
                if data.get(key) is not None
            )
            if calls := folded.get(node):
                values += _data(CALLS, calls)
            yield f'<node id="{node_id}">{values}{tree_data}</node>'
        for parent, child in graph.edges():
            yield f'<edge source="{ids[parent]}" target="{ids[child]}"/>'
    yield "</graph>"
    yield "</graphml>"


def write_graphml(graphs: Graphs, path_or_file: PathOrFile) -> None:
    """Write `generate_graphml(graphs)` to a path or an open file."""
    write_lines(generate_graphml(graphs), path_or_file)


def read_graphml(path_or_file: PathOrFile) -> list[ConversationTree]:
    """The conversations of a GraphML file `write_graphml` wrote, split by
    `tree_id` in the order of their first node, every contract attribute present
    (None where missing); raises ExportError where networkx cannot read it."""
    import networkx as nx

    try:
        # networkx's stubs say bytes; its parser (ElementTree) reads text too.
        whole = nx.read_graphml(
            path_or_file,  # type: ignore[arg-type]
            node_type=str,
            force_multigraph=False,
        )
    except (nx.NetworkXError, SyntaxError, ValueError) as error:
        raise ExportError(f"cannot read the GraphML: {error}") from None
    if not any(TREE_ID in data for _, data in whole.nodes(data=True)):
        # Files written before the key was named tree_id say conversation_id.
        tree_id = whole.graph.get("tree_id", whole.graph.get("conversation_id"))
        graph = new_graph(tree_id, whole.graph.get("name"))
        for node, data in whole.nodes(data=True):
            add_read_node(graph, node, _node(node, dict(data)))
        graph.add_edges_from(whole.edges())
        return [graph]
    trees: dict[Any, ConversationTree] = {}
    tree_of: dict[str, ConversationTree] = {}
    for node, data in whole.nodes(data=True):
        data = dict(data)
        tree_id, name = data.pop(TREE_ID, None), data.pop(TREE_NAME, None)
        if tree_id not in trees:
            trees[tree_id] = new_graph(tree_id, name)
        tree_of[node] = trees[tree_id]
        add_read_node(tree_of[node], node, _node(node, data))
    for parent, child in whole.edges():
        tree_of[parent].add_edge(parent, child)
    return list(trees.values())


def _node(node: str, data: dict[str, Any]) -> dict[str, Any]:
    """A node's attributes as read, `parts` and `calls` parsed from JSON;
    raises ExportError where they are not JSON."""
    for key in (PARTS, CALLS):
        if isinstance(data.get(key), str):
            try:
                data[key] = json.loads(data[key])
            except json.JSONDecodeError as error:
                raise ExportError(
                    f"cannot read the GraphML: the {key} of node {node!r} are not"
                    f" JSON ({error})"
                ) from None
    return data
