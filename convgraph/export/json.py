"""Conversation trees as node-link JSON, networkx's convention, and back."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeGuard, cast

import orjson

from convgraph.contract import NODE_ATTRIBUTES, OPTIONAL_ATTRIBUTES
from convgraph.encoding import dumps, dumps_bytes
from convgraph.errors import ExportError
from convgraph.export.common import (
    CALLS,
    TREE_ID,
    Graphs,
    PathOrFile,
    UniqueIds,
    add_read_node,
    block_lines,
    calls_by_node,
    look_ahead,
    new_graph,
    read_text,
    tree_calls,
    write_blocks,
    write_lines,
)

if TYPE_CHECKING:
    from convgraph.model.forest import Forest
    from convgraph.model.tree import ConversationTree
    from convgraph.sources.source import ProgressCallback

#: The `format` field, and the newest `version` this code writes and reads.
FORMAT = "convgraph.node-link"
VERSION = 1

#: Node keys the document itself uses, which node attributes cannot take.
RESERVED = frozenset({"id", CALLS, TREE_ID})

#: Nodes a block of a forest's JSON holds: a batch of `Forest.tree_rows` slices
#: every column, so larger is faster but holds more memory.
NODES_PER_BLOCK = 20_000


def json_value(value: Any) -> str:
    """One value as compact JSON text, strings verbatim, None as null."""
    return dumps(value)


_KEYS: dict[str, str] = {}


def json_key(key: str) -> str:
    """`"key":` for an object member, cached: the same few keys repeat."""
    text = _KEYS.get(key)
    if text is None:
        text = _KEYS[key] = f"{dumps(str(key))}:"
    return text


def node_object(
    node: Any, data: dict[str, Any], reserved: frozenset[str], extra: dict[str, Any]
) -> str:
    """A node as one JSON object: `id`, the contract's attributes in order, its other
    attributes but `reserved`, then `extra`. The hot loop of both JSON exports."""
    if tuple(data) == NODE_ATTRIBUTES:
        members = {"id": node, **data, **extra}
    else:
        members = {"id": node} | {key: data.get(key) for key in NODE_ATTRIBUTES}
        for key, value in data.items():
            if key not in members and key not in reserved:
                members[key] = value
        members.update(extra)
    return dumps(members)


def with_commas(lines: Iterable[str]) -> Iterator[str]:
    """The lines of a JSON array's items, each but the last ended by a comma."""
    pending = None
    for line in lines:
        if pending is not None:
            yield pending + ","
        pending = line
    if pending is not None:
        yield pending


def generate_json(
    graphs: Graphs | Forest, progress: ProgressCallback | None = None
) -> Iterator[str]:
    """Yield the node-link JSON of one conversation or several, line by line. Raises
    `ExportError` (one node id in two of the conversations)."""
    if is_forest(graphs):
        yield from block_lines(forest_blocks(graphs, progress))
        return
    graphs, several = look_ahead(cast("Graphs", graphs))
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
                    if key not in ("tree_id", CALLS)
                )
            folded = tree_calls(graph)
            extra: dict[str, Any] = {CALLS: []}
            if several:
                extra[TREE_ID] = tree
            for node, data in graph.nodes(data=True):
                calls = folded.get(node)
                own = extra if calls is None else {**extra, CALLS: calls}
                yield node_object(node, data, RESERVED, own)
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
    graphs: Graphs | Forest,
    path_or_file: PathOrFile,
    progress: ProgressCallback | None = None,
) -> None:
    """Write `generate_json(graphs)` to a path or an open file."""
    if is_forest(graphs):
        write_blocks(forest_blocks(graphs, progress), path_or_file)
        return
    write_lines(generate_json(graphs), path_or_file)


def is_forest(graphs: Any) -> TypeGuard[Forest]:
    """Whether `graphs` is a `Forest`, told apart without importing pandas."""
    return hasattr(graphs, "parent_rows") and hasattr(graphs, "tree_rows")


def json_lines(items: list[Any]) -> bytes:
    """`items` as UTF-8 JSON, one a line, each line but the last ended by a
    comma, without the last line's end; orjson an item a call, joined once
    (`dumps` item by item where orjson refuses a value)."""
    try:
        return b",\n".join(map(dumps_bytes, items))
    except (orjson.JSONEncodeError, TypeError):
        return ",\n".join(dumps(item) for item in items).encode("utf-8")


#: The keys of an edge's object, in the DiGraph's node-link order.
EDGE_KEYS = ("source", "target")


def forest_blocks(
    forest: Forest, progress: ProgressCallback | None = None
) -> Iterator[bytes]:
    """The node-link JSON of every tree of `forest` as UTF-8 blocks: the text
    `generate_json(forest.trees())` writes, from the table's rows without a DiGraph a
    tree."""
    ids = forest.nodes["id"]
    if forest.nodes["tree_id"].nunique() < 2 or ids.hasnans or not ids.is_unique:
        lines = generate_json(forest.trees(progress))
        while chunk := list(itertools.islice(lines, NODES_PER_BLOCK)):
            chunk.append("")
            yield "\n".join(chunk).encode("utf-8")
        return
    import numpy as np

    places = [name for name in OPTIONAL_ATTRIBUTES if name in forest.nodes.columns]
    columns = ("id", *NODE_ATTRIBUTES, *places)
    keys = (*columns, CALLS, TREE_ID)
    folded = calls_by_node(forest.calls)
    # One empty list for every node that folds nothing (never changed).
    no_calls: list[str] = []
    conversations: list[dict[str, Any]] = []
    edge_blocks: list[bytes] = []
    yield (
        f'{{"format":"{FORMAT}","version":{VERSION},"directed":true,'
        '"multigraph":false,\n"nodes":[\n'
    ).encode()
    first = True
    for batch in forest.tree_rows(columns, progress, batch=NODES_PER_BLOCK):
        conversations.extend(
            {"tree_id": tree, "name": name}
            for tree, name in zip(batch.tree_ids, batch.names, strict=True)
        )
        # Each row's tree id, the last member of its node's object.
        trees = itertools.chain.from_iterable(
            itertools.repeat(tree, end - start)
            for tree, start, end in zip(
                batch.tree_ids, [0, *batch.ends[:-1]], batch.ends, strict=True
            )
        )
        values = [batch.columns[name] for name in columns]
        # Each node's calls: looked up only where the forest has runs.
        calls = (
            map(folded.get, batch.columns["id"], itertools.repeat(no_calls))
            if folded
            else itertools.repeat(no_calls, len(batch.columns["id"]))
        )
        # map, not a Python loop: the dicts are a large share of the time.
        rows = zip(*values, calls, trees, strict=True)
        nodes = list(map(dict, map(zip, itertools.repeat(keys), rows)))
        text = json_lines(nodes)
        # A DiGraph gives its edges by parent, in node order, each parent's
        # children in the order they were added (log order).
        parents = np.asarray(batch.parents, dtype=np.int64)
        children = np.flatnonzero(parents >= 0)
        children = children[np.argsort(parents[children], kind="stable")]
        node_ids = np.asarray(batch.columns["id"], dtype=object)
        ends = zip(node_ids[parents[children]], node_ids[children], strict=True)
        edges = list(map(dict, map(zip, itertools.repeat(EDGE_KEYS), ends)))
        if edges:
            edge_blocks.append(json_lines(edges))
        # Hold none of this batch's values while the next one is made.
        del batch, values, rows, nodes, node_ids, edges
        if not first:
            yield b",\n"
        yield text
        del text
        first = False
    yield b"],\n" if first else b"\n],\n"
    yield b'"edges":[\n'
    for number, block in enumerate(edge_blocks):
        yield block
        yield b",\n" if number < len(edge_blocks) - 1 else b"\n"
    yield b"],\n"
    yield f'"graph":{dumps({"conversations": conversations})}}}\n'.encode()


def check_format(document: Any, expected: str) -> None:
    """Raise ExportError unless `document` is a convgraph export of the
    `expected` format in a version this code reads."""
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
    """The JSON document of a path or open file, checked by `check_format`;
    raises ExportError where it is not UTF-8 JSON."""
    try:
        document = loads(read_text(path_or_file))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ExportError(f"not JSON: {error}") from None
    check_format(document, expected)
    return cast("dict[str, Any]", document)


def read_json(path_or_file: PathOrFile) -> list[ConversationTree]:
    """The conversations of a node-link JSON file, one ConversationTree each
    (contract attributes None where missing, `calls` back in the graph); raises
    ExportError where it is not JSON or not this format."""
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
                add_read_node(graph, node.pop("id"), node)
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
            add_read_node(trees[tree], node_id, node)
        for edge in document["edges"]:
            tree_of[edge["source"]].add_edge(edge["source"], edge["target"])
    except (KeyError, TypeError) as error:
        raise ExportError(f"malformed {FORMAT} document: missing {error}") from None
    return list(trees.values())
