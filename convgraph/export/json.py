"""Conversation trees as node-link JSON, networkx's convention, and back.

The document is networkx's node-link data (`directed`, `multigraph`,
`graph`, `nodes` with an `id` each, `edges` with `source` and `target`) with
a `format` and a `version` field in front, so that `networkx.node_link_graph`
reads it as it is and a reader can tell which convgraph wrote it. Every string
is kept verbatim (JSON can carry any text); missing values are `null`. The
schema is documented in docs/json-schema.md.

One conversation: `graph` holds its `tree_id` and `name`, and
`node_link_graph` gives back the very DiGraph. Several: `graph` holds
`conversations`, a list of `{tree_id, name}`, and every node a
`tree_id` naming its conversation, which `read_json` uses to split them again.

The text streams: one node or edge per line, nodes first (the edges of a
forest are held until every node is written, as the two lists require).

Examples
--------
>>> import io, networkx as nx
>>> tree = nx.DiGraph(tree_id="c1", name="Trees")
>>> tree.add_node("r", prompt="What is a tree?", model="echo")
>>> tree.add_node("a", prompt='Say "hi"', model=None)
>>> tree.add_edge("r", "a")
>>> for line in generate_json(tree):
...     print(line[:72])
{"format":"convgraph.node-link","version":1,"directed":true,"multigraph"
"nodes":[
{"id":"r","conversation_id":null,"prompt":"What is a tree?","system":nul
{"id":"a","conversation_id":null,"prompt":"Say \\"hi\\"","system":null,"re
],
"edges":[
{"source":"r","target":"a"}
],
"graph":{"tree_id":"c1","name":"Trees"}}
>>> file = io.StringIO()
>>> write_json(tree, file)
>>> _ = file.seek(0)
>>> [back] = read_json(file)
>>> back.nodes["a"]["prompt"], list(back.edges), back.graph["name"]
('Say "hi"', [('r', 'a')], 'Trees')
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from convgraph.contract import NODE_ATTRIBUTES
from convgraph.encoding import dumps
from convgraph.export.common import (
    TREE_ID,
    ExportError,
    PathOrFile,
    UniqueIds,
    contract_node,
    look_ahead,
    new_graph,
    read_text,
    write_lines,
)

if TYPE_CHECKING:
    import networkx as nx

    from convgraph.model.tree import ConversationTree

#: The `format` field, and the newest `version` this code writes and reads.
FORMAT = "convgraph.node-link"
VERSION = 1

#: Node keys the document itself uses, which node attributes cannot take.
RESERVED = frozenset({"id", TREE_ID})


def json_value(value: Any) -> str:
    """One value as compact JSON text (`convgraph.encoding.dumps`): strings
    verbatim (no ASCII escapes), None as null.

    Examples
    --------
    >>> json_value("é"), json_value(None), json_value({"n": [3]})
    ('"é"', 'null', '{"n":[3]}')
    """
    return dumps(value)


_KEYS: dict[str, str] = {}


def json_key(key: str) -> str:
    """`"key":` for an object member, cached: the same few keys repeat.

    Examples
    --------
    >>> json_key("id")
    '"id":'
    """
    text = _KEYS.get(key)
    if text is None:
        text = _KEYS[key] = f"{dumps(str(key))}:"
    return text


def json_object(members: Iterable[tuple[str, Any]]) -> str:
    """An object of `(key, value)` members, on one line.

    Examples
    --------
    >>> json_object([("id", "r"), ("model", None)])
    '{"id":"r","model":null}'
    """
    return (
        "{"
        + ",".join(json_key(key) + json_value(value) for key, value in members)
        + "}"
    )


def node_object(
    node: Any, data: dict[str, Any], reserved: frozenset[str], extra: dict[str, Any]
) -> str:
    """A node as one JSON object: `id`, the contract's attributes in order
    (null where missing), the node's other attributes but those `reserved`
    names, then `extra`. The hot loop of both JSON exports."""
    if tuple(data) == NODE_ATTRIBUTES:
        members = {"id": node, **data, **extra}
    else:
        members = {"id": node}
        for key in NODE_ATTRIBUTES:
            members[key] = data.get(key)
        for key, value in data.items():
            if key not in members and key not in reserved:
                members[key] = value
        members.update(extra)
    return dumps(members)


def with_commas(lines: Iterable[str]) -> Iterator[str]:
    """The lines of a JSON array's items, each but the last ended by a comma.

    Examples
    --------
    >>> list(with_commas(["1", "2", "3"]))
    ['1,', '2,', '3']
    """
    pending = None
    for line in lines:
        if pending is not None:
            yield pending + ","
        pending = line
    if pending is not None:
        yield pending


def generate_json(graphs: nx.DiGraph | Iterable[nx.DiGraph]) -> Iterator[str]:
    """Yield the node-link JSON of one conversation, or of several, line by
    line.

    Parameters
    ----------
    graphs
        A conversation DiGraph, or an iterable of them (consumed once). Every
        node attribute is written, the contract's first; graph attributes
        too, for one conversation.

    Raises
    ------
    ExportError
        One node id in two of the conversations.

    Examples
    --------
    >>> from convgraph.model.tree import ConversationTree
    >>> tree = ConversationTree.from_edges([("r", "a"), ("r", "b")],
    ...     {"r": {"prompt": "Hi", "model": "echo"}}, tree_id="c1")
    >>> lines = list(generate_json(tree))
    >>> lines[-4:]
    ['{"source":"r","target":"a"},', '{"source":"r","target":"b"}', '],', '"graph":{"tree_id":"c1","name":null}}']
    """
    graphs, several = look_ahead(graphs)
    edges: list[tuple[Any, Any]] = []
    conversations: list[dict[str, Any]] = []
    single: dict[str, Any] = {}

    def node_lines() -> Iterator[str]:
        unique = UniqueIds()
        for graph in graphs:
            unique.check(graph)
            tree = graph.graph.get("tree_id")
            if several:
                conversations.append({"tree_id": tree, "name": graph.graph.get("name")})
            else:
                single.update(tree_id=tree, name=graph.graph.get("name"))
                single.update(
                    (key, value)
                    for key, value in graph.graph.items()
                    if key != "tree_id"
                )
            extra = {TREE_ID: tree} if several else {}
            for node, data in graph.nodes(data=True):
                yield node_object(node, data, RESERVED, extra)
            edges.extend(graph.edges())

    yield (
        f'{{"format":"{FORMAT}","version":{VERSION},"directed":true,"multigraph":false,'
    )
    yield '"nodes":['
    yield from with_commas(node_lines())
    yield "],"
    yield '"edges":['
    yield from with_commas(
        f'{{"source":{json_value(parent)},"target":{json_value(child)}}}'
        for parent, child in edges
    )
    yield "],"
    graph_data = {"conversations": conversations} if several else single
    yield f'"graph":{dumps(graph_data)}}}'


def write_json(
    graphs: nx.DiGraph | Iterable[nx.DiGraph], path_or_file: PathOrFile
) -> None:
    """Write `generate_json(graphs)` to a path or an open file.

    Examples
    --------
    >>> from convgraph.model.tree import ConversationTree
    >>> tree = ConversationTree.from_edges([("r", "a"), ("r", "b")],
    ...     {"r": {"prompt": "Hi", "model": "echo"}}, tree_id="c1")
    >>> import io
    >>> out = io.StringIO()
    >>> write_json(tree, out)
    >>> list(read_json(io.StringIO(out.getvalue()))[0].edges)
    [('r', 'a'), ('r', 'b')]
    """
    write_lines(generate_json(graphs), path_or_file)


def check_format(document: Any, expected: str) -> None:
    """Raise ExportError unless `document` is a convgraph JSON export of the
    `expected` format in a version this code reads.

    Examples
    --------
    >>> check_format({"format": "convgraph.node-link", "version": 1}, "convgraph.node-link")
    >>> try:
    ...     check_format({"format": "other"}, "convgraph.node-link")
    ... except ExportError as error:
    ...     print(error)
    not a convgraph.node-link document (its format is 'other')
    """
    if not isinstance(document, dict) or document.get("format") != expected:
        found = document.get("format") if isinstance(document, dict) else None
        raise ExportError(
            f"not a {expected} document (its format is {found!r})"
            if found
            else f"not a {expected} document (no format field)"
        )
    version = document.get("version")
    if not isinstance(version, int) or not 1 <= version <= VERSION:
        raise ExportError(
            f"{expected} version {version!r} is not one this convgraph reads"
            f" (1 to {VERSION})"
        )


def read_document(
    path_or_file: PathOrFile, expected: str, loads: Callable[[str], Any] = json.loads
) -> dict[str, Any]:
    """The JSON document of a path or open file, checked to be a convgraph
    export of the `expected` format (`check_format`); `loads` parses the
    text (the tree JSON's falls back to a parser without recursion).

    Raises
    ------
    ExportError
        The file is not UTF-8 JSON, or not that format in a version this
        code reads.

    Examples
    --------
    >>> import io
    >>> read_document(io.StringIO('{"format": "x", "version": 1}'), "x")
    {'format': 'x', 'version': 1}
    """
    try:
        document = loads(read_text(path_or_file))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ExportError(f"not JSON: {error}") from None
    check_format(document, expected)
    return document


def read_json(path_or_file: PathOrFile) -> list[ConversationTree]:
    """The conversations of a node-link JSON file that `write_json` wrote.

    Returns
    -------
    list of ConversationTree
        One per conversation, nodes in the file's order, every contract
        attribute present (None where the file has null or nothing).

    Raises
    ------
    ExportError
        The file is not JSON, or not convgraph's node-link format.

    Examples
    --------
    >>> from convgraph.model.tree import ConversationTree
    >>> tree = ConversationTree.from_edges([("r", "a"), ("r", "b")],
    ...     {"r": {"prompt": "Hi", "model": "echo"}}, tree_id="c1")
    >>> import io
    >>> out = io.StringIO()
    >>> write_json(tree, out)
    >>> (back,) = read_json(io.StringIO(out.getvalue()))
    >>> back.graph, back.nodes["r"]["model"], list(back)
    ({'tree_id': 'c1', 'name': None}, 'echo', ['r', 'a', 'b'])
    """
    document = read_document(path_or_file, FORMAT)
    try:
        graph_data = dict(document["graph"])
        if "conversations" not in graph_data:
            # Files written before the key was named tree_id.
            tree_id = graph_data.pop("tree_id", graph_data.pop("conversation_id", None))
            graph = new_graph(tree_id, graph_data.pop("name", None))
            graph.graph.update(graph_data)
            for node in document["nodes"]:
                node = dict(node)
                graph.add_node(node.pop("id"), **contract_node(node))
            graph.add_edges_from(
                (edge["source"], edge["target"]) for edge in document["edges"]
            )
            return [graph]
        trees = {
            tree_id: new_graph(tree_id, entry["name"])
            for entry in graph_data["conversations"]
            for tree_id in [entry.get("tree_id", entry.get("conversation_id"))]
        }
        tree_of = {}
        for node in document["nodes"]:
            node = dict(node)
            node_id, tree = node.pop("id"), node.pop(TREE_ID)
            tree_of[node_id] = trees[tree]
            trees[tree].add_node(node_id, **contract_node(node))
        for edge in document["edges"]:
            tree_of[edge["source"]].add_edge(edge["source"], edge["target"])
    except (KeyError, TypeError) as error:
        raise ExportError(f"malformed {FORMAT} document: missing {error}") from None
    return list(trees.values())
