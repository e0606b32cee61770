"""Conversation trees as nested JSON, the shape D3's hierarchy takes, and back."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from json.decoder import scanstring  # type: ignore[attr-defined]
from json.scanner import NUMBER_RE
from typing import TYPE_CHECKING, Any

from convgraph.errors import ExportError
from convgraph.export.common import (
    CALLS,
    Graphs,
    PathOrFile,
    UniqueIds,
    add_read_node,
    adjacency,
    as_graphs,
    new_graph,
    tree_calls,
    write_lines,
)
from convgraph.export.json import json_key, json_value, node_object, read_document

if TYPE_CHECKING:
    import networkx as nx

    from convgraph.model.tree import ConversationTree

FORMAT = "convgraph.tree-json"
VERSION = 1

#: Node keys the document itself uses, which node attributes cannot take.
RESERVED = frozenset({"id", CALLS, "children"})


def _tree_lines(graph: nx.DiGraph[Any]) -> Iterator[str]:
    """One conversation's lines, depth first without recursion, one a node; a
    leaf's line also closes every object it ends."""
    info = graph.graph
    members = [json_key(key) + json_value(info.get(key)) for key in ("tree_id", "name")]
    opening = "{" + ",".join(members) + ',"children":['
    succ, pred = adjacency(graph)
    roots = [node for node in graph if not pred[node]]
    if not roots:
        yield opening + "]}"
        return
    yield opening
    nodes = graph.nodes
    folded = tree_calls(graph)
    no_calls: list[Any] = []
    # Each frame: an open object's children and how many are written.
    stack: list[list[Any]] = [[roots, 0]]
    while stack:
        frame = stack[-1]
        node = frame[0][frame[1]]
        frame[1] += 1
        children = succ[node]
        calls = folded.get(node, no_calls)
        if children:
            body = node_object(node, nodes[node], RESERVED, {CALLS: calls})
            yield body[:-1] + ',"children":['
            stack.append([list(children), 0])
            continue
        line = node_object(node, nodes[node], RESERVED, {CALLS: calls, "children": []})
        while stack and stack[-1][1] == len(stack[-1][0]):
            stack.pop()
            line += "]}"
        if stack:
            line += ","
        yield line


def generate_tree_json(graphs: Graphs) -> Iterator[str]:
    """Yield the nested tree JSON of one or several conversations, one node a
    line; raises ExportError where one node id is in two conversations."""
    yield f'{{"format":"{FORMAT}","version":{VERSION},"children":['
    unique = UniqueIds()
    # The last line of a conversation waits for the next one, which puts a
    # comma after it.
    last = None
    for graph in as_graphs(graphs):
        unique.check(graph)
        if last is not None:
            yield last + ","
        lines = _tree_lines(graph)
        last = next(lines)
        for line in lines:
            yield last
            last = line
    if last is not None:
        yield last
    yield "]}"


def write_tree_json(graphs: Graphs, path_or_file: PathOrFile) -> None:
    """Write `generate_tree_json(graphs)` to a path or an open file."""
    write_lines(generate_tree_json(graphs), path_or_file)


def read_tree_json(path_or_file: PathOrFile) -> list[ConversationTree]:
    """The conversations of a tree JSON file, nodes depth first in the file's
    order, every contract attribute present (None where missing), `calls` back in
    the graph; raises ExportError where it is not JSON or not this format."""
    document = read_document(path_or_file, FORMAT, _loads)
    graphs = []
    try:
        for conversation in document["children"]:
            # Files written before the key was named tree_id.
            tree_id = conversation.get("tree_id", conversation.get("conversation_id"))
            graph = new_graph(tree_id, conversation["name"])
            stack = [(None, node) for node in reversed(conversation["children"])]
            while stack:
                parent, node = stack.pop()
                node = dict(node)
                node_id, children = node.pop("id"), node.pop("children", [])
                add_read_node(graph, node_id, node)
                if parent is not None:
                    graph.add_edge(parent, node_id)
                stack.extend((node_id, child) for child in reversed(children))
            graphs.append(graph)
    except (KeyError, TypeError) as error:
        raise ExportError(f"malformed {FORMAT} document: missing {error}") from None
    return graphs


def _loads(text: str) -> Any:
    """`json.loads`, or `loads_deep` where the document nests too deep."""
    try:
        return json.loads(text)
    except RecursionError:
        return loads_deep(text)


_WHITESPACE = re.compile(r"[ \t\n\r]*")


def _after_whitespace(text: str, position: int) -> int:
    """Where the white space at `position` ends."""
    match = _WHITESPACE.match(text, position)
    assert match is not None  # the pattern matches the empty string too
    return match.end()


_LITERALS = {
    "true": True,
    "false": False,
    "null": None,
    # What `json` writes for floats JSON has no number for, and reads back.
    "NaN": float("nan"),
    "Infinity": float("inf"),
    "-Infinity": float("-inf"),
}


def loads_deep(text: str) -> Any:
    """Parse JSON however deep it nests, with a stack: strings and numbers go
    to the `json` module's own scanners, so values decode as `json.loads` does.
    Raises json.JSONDecodeError."""
    skip = _after_whitespace
    # Open containers, and for each open object the key being read.
    stack: list[Any] = []
    keys: list[Any] = []
    position = skip(text, 0)

    def error(message: str) -> json.JSONDecodeError:
        return json.JSONDecodeError(message, text, position)

    def key_at(position: int) -> tuple[str, int]:
        if text[position : position + 1] != '"':
            raise json.JSONDecodeError("Expecting property name", text, position)
        key, position = scanstring(text, position + 1)
        position = skip(text, position)
        if text[position : position + 1] != ":":
            raise json.JSONDecodeError("Expecting ':' delimiter", text, position)
        return key, skip(text, position + 1)

    while True:
        character = text[position : position + 1]
        if character == "{":
            position = skip(text, position + 1)
            if text[position : position + 1] == "}":
                value: Any = {}
                position += 1
            else:
                key, position = key_at(position)
                stack.append({})
                keys.append(key)
                continue
        elif character == "[":
            position = skip(text, position + 1)
            if text[position : position + 1] == "]":
                value = []
                position += 1
            else:
                stack.append([])
                keys.append(None)
                continue
        elif character == '"':
            value, position = scanstring(text, position + 1)
        elif (number := NUMBER_RE.match(text, position)) is not None:
            integer, fraction, exponent = number.groups()
            value = (
                float(integer + (fraction or "") + (exponent or ""))
                if fraction or exponent
                else int(integer)
            )
            position = number.end()
        else:
            for word, literal in _LITERALS.items():
                if text.startswith(word, position):
                    value = literal
                    position += len(word)
                    break
            else:
                raise error("Expecting value")
        # A whole value: put it in its container, closing every container
        # that it completes.
        while True:
            position = skip(text, position)
            if not stack:
                if position != len(text):
                    raise error("Extra data")
                return value
            container = stack[-1]
            if isinstance(container, dict):
                container[keys[-1]] = value
            else:
                container.append(value)
            character = text[position : position + 1]
            if character == ",":
                position = skip(text, position + 1)
                if isinstance(container, dict):
                    keys[-1], position = key_at(position)
                break
            if character == ("}" if isinstance(container, dict) else "]"):
                position += 1
                value = stack.pop()
                keys.pop()
                continue
            raise error("Expecting ',' delimiter")
