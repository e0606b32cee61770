"""Conversation trees as Graphviz DOT: a streamed file, or a pydot object. Every id and
value is a DOT quoted string, so keywords, Unicode and punctuation are plain text, and
two different ids never quote alike."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from html.entities import html5
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape as xml_escape

from convgraph.errors import ExportError
from convgraph.export.common import (
    Graphs,
    PathOrFile,
    UniqueIds,
    adjacency,
    check_rankdir,
    look_ahead,
    tree_calls,
    without_controls,
    write_lines,
)
from convgraph.export.labels import (
    NO_MODEL_COLOUR,
    ModelColours,
    branches,
    conversation_title,
    node_label,
    node_tooltip,
)

if TYPE_CHECKING:
    import networkx as nx
    import pydot

#: `ordering="out"` keeps each node's children in log order, left to right.
GRAPH_DEFAULTS = {"fontname": "Helvetica", "fontsize": "11", "ordering": "out"}
NODE_DEFAULTS = {
    "shape": "box",
    "style": "rounded,filled",
    "fontname": "Helvetica",
    "fontsize": "10",
    "fillcolor": NO_MODEL_COLOUR,
}
EDGE_DEFAULTS = {"arrowsize": "0.7"}
LEAF_STYLE = "rounded,filled,bold"

#: Graphviz's lexer refuses long quoted strings: longer text is pieces of at
#: most this many characters joined by DOT's `+`.
PIECE = 2048

_ID_CONTROLS = re.compile("[\x00-\x1f\x7f\ud800-\udfff\ufffe\uffff]")
_ID_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_id_control(match: re.Match[str]) -> str:
    character = match.group()
    if character in _ID_ESCAPES:
        return _ID_ESCAPES[character]
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def quote_id(node_id: Any) -> str:
    """A node or graph id as a DOT quoted string: backslashes doubled, quotes,
    controls and a leading `%` escaped, so two ids never give the same one."""
    text = str(node_id).replace("\\", "\\\\").replace('"', '\\"')
    if _ID_CONTROLS.search(text) is not None:
        text = _ID_CONTROLS.sub(_escape_id_control, text)
    if text.startswith("%"):
        # Graphviz keeps names that start with % for its anonymous objects,
        # and writes such a node under a made-up name ("%3") in SVG.
        text = "\\" + text
    return quoted_pieces(text)


def quoted_pieces(escaped: str) -> str:
    """Escaped text in DOT quotes, long text as pieces joined by `+`, never cut
    inside an escape."""
    if len(escaped) <= PIECE:
        return f'"{escaped}"'
    pieces = []
    start = 0
    while start < len(escaped):
        end = min(start + PIECE, len(escaped))
        # A piece must not end in the middle of a backslash escape: count the
        # backslashes before the cut, and cut before an odd last one.
        backslashes = 0
        while end - backslashes - 1 >= start and escaped[end - backslashes - 1] == "\\":
            backslashes += 1
        if backslashes % 2 and end < len(escaped):
            end -= 1
        pieces.append(f'"{escaped[start:end]}"')
        start = end
    return " + ".join(pieces)


def unquote_id(quoted: str) -> str:
    """The id that `quote_id` wrote (the inverse, for reading a file back)."""
    if len(quoted) < 2 or quoted[0] != '"' or quoted[-1] != '"':
        raise ExportError(f"not a quoted DOT id: {quoted!r}")
    return re.sub(
        r"\\(?:x([0-9a-f]{2})|u([0-9a-f]{4})|(.))",
        _unescape_id,
        quoted[1:-1],
        flags=re.DOTALL,
    )


#: What Graphviz takes for a character reference after an `&` in a name
#: (it checks only the characters, so `&;` and `&#;` are among them).
_REFERENCE = re.compile(r"&(#[xX][0-9a-fA-F]*|#[0-9]*|[A-Za-z]*);")
_XML_ENTITIES = {"amp", "lt", "gt", "quot", "apos"}


def svg_references_fixed(svg: str) -> str:
    """Graphviz's SVG text with every `&...;` valid XML: XML entities and allowed
    character references stay, HTML entities become their character, any other
    `&` is escaped."""
    return svg if "&" not in svg else _REFERENCE.sub(_fixed_reference, svg)


def _fixed_reference(match: re.Match[str]) -> str:
    body = match.group(1)
    if body in _XML_ENTITIES:
        return match.group(0)
    if body.startswith("#"):
        # XML writes a hexadecimal reference with a small x only.
        digits = body[2:] if body[1:2] == "x" else body[1:]
        base = 16 if body[1:2] == "x" else 10
        readable = digits.isdigit() or (base == 16 and digits != "")
        if readable and _xml_character(int(digits, base)):
            return match.group(0)
        return "&amp;" + match.group(0)[1:]
    if (character := html5.get(body + ";")) is not None:
        return xml_escape(character)
    return "&amp;" + match.group(0)[1:]


def _xml_character(code: int) -> bool:
    """Whether XML 1.0 allows the character `code` in a document."""
    return (
        code in (0x9, 0xA, 0xD)
        or 0x20 <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFFFD
        or 0x10000 <= code <= 0x10FFFF
    )


def fix_svg_file(path: str) -> None:
    """Rewrite the SVG file at `path` through `svg_references_fixed`, a line at
    a time, replacing it when done."""
    fixed = path + ".fixed"
    try:
        with (
            open(path, encoding="utf-8", errors="surrogateescape") as source,
            open(fixed, "w", encoding="utf-8", errors="surrogateescape") as target,
        ):
            for line in source:
                target.write(svg_references_fixed(line))
        os.replace(fixed, path)
    finally:
        if os.path.exists(fixed):
            os.unlink(fixed)


def _unescape_id(match: re.Match[str]) -> str:
    if code := match.group(1) or match.group(2):
        return chr(int(code, 16))
    character = match.group(3)
    return {"n": "\n", "r": "\r", "t": "\t"}.get(character, character)


def quote_text(text: str) -> str:
    """Text as a DOT quoted escape string that Graphviz draws as it is."""
    text = (
        without_controls(text.replace("\r\n", "\n").replace("\r", "\n"))
        .replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("&", "&amp;")
        .replace("{", "\\{")
        .replace("}", "\\}")
        .replace("|", "\\|")
        .replace("<", "\\<")
        .replace(">", "\\>")
        .replace("\n", "\\n")
    )
    return quoted_pieces(text)


def quote_tooltip(text: str) -> str:
    """Text as a DOT quoted tooltip Graphviz shows as it is: Graphviz reads a tooltip as
    an escape string and then expands `\\N`-style names, halving backslashes twice, so a
    stored backslash is written as four; `&` as `&amp;`; controls as symbols."""
    # without_controls shows a carriage return as a symbol: keep it apart.
    text = "\r".join(without_controls(piece) for piece in text.split("\r"))
    text = (
        text.replace("\\", "\\\\\\\\")
        .replace('"', '\\"')
        .replace("&", "&amp;")
        .replace("\n", "\\n")
        .replace("\r", "\\r")
    )
    return quoted_pieces(text)


def _quoted(attributes: dict[str, str]) -> dict[str, str]:
    return {key: f'"{value}"' for key, value in attributes.items()}


class _Statements:
    """An export's DOT as statements with every string quoted, feeding both the text and
    the pydot object so they cannot disagree: ("graph", name, attrs), ("node", id,
    attrs), ("edge", source, target), ("cluster", name, attrs), ("end",)."""

    def __init__(self, rankdir: str) -> None:
        check_rankdir(rankdir)
        self.rankdir = rankdir
        self.colour = ModelColours()

    def __call__(self, graphs: Graphs) -> Iterator[tuple[Any, ...]]:
        graphs, several = look_ahead(graphs)
        graph_attributes = {"rankdir": self.rankdir, **GRAPH_DEFAULTS}
        unique = UniqueIds()
        first = None if several else next(graphs, None)
        if first is None:
            yield ("graph", quote_id("conversations"), _quoted(graph_attributes))
        else:
            yield (
                "graph",
                quote_id(first.graph.get("tree_id", "conversation")),
                _quoted(graph_attributes)
                | {"label": quote_text(conversation_title(first)), "labelloc": '"t"'},
            )
        yield ("defaults", "node", _quoted(NODE_DEFAULTS))
        yield ("defaults", "edge", _quoted(EDGE_DEFAULTS))
        if first is not None:
            unique.check(first)
            yield from self.conversation(first)
        for index, graph in enumerate(graphs):
            unique.check(graph)
            title = quote_text(conversation_title(graph))
            yield ("cluster", quote_id(f"cluster_{index}"), {"label": title})
            yield from self.conversation(graph)
            yield ("end",)
        yield ("end",)

    def conversation(self, graph: nx.DiGraph[Any]) -> Iterator[tuple[Any, ...]]:
        ids = {}
        succ, pred = adjacency(graph)
        marked = branches(graph)
        folded = tree_calls(graph)
        for node, data in graph.nodes(data=True):
            ids[node] = quoted = quote_id(node)
            active = marked and bool(data.get("active"))
            attributes = {
                "label": quote_text(node_label(node, data, marked)),
                "tooltip": quote_tooltip(node_tooltip(data, folded.get(node, ()))),
                "fillcolor": f'"{self.colour(data.get("model"))}"',
            }
            children = len(succ[node])
            if children == 0:
                attributes["style"] = f'"{LEAF_STYLE}"'
            elif children > 1:
                attributes["peripheries"] = '"2"'
            kinds = [
                kind
                for kind, present in (
                    ("root", not pred[node]),
                    ("branch-point", children > 1),
                    ("leaf", children == 0),
                    ("active", active),
                )
                if present
            ]
            attributes["class"] = f'"{" ".join(kinds)}"'
            yield ("node", quoted, attributes)
        for parent, child in graph.edges():
            yield ("edge", ids[parent], ids[child])


def _assignments(attributes: dict[str, str], indent: str) -> Iterator[str]:
    # `key=value;` statements rather than `graph [...]`: the same to Graphviz,
    # and what pydot reads as the graph's own attributes.
    for key, value in attributes.items():
        yield f"{indent}{key}={value};"


def generate_dot(graphs: Graphs, rankdir: str = "TB") -> Iterator[str]:
    """Yield the DOT text of one conversation, or of several as clusters, line by line;
    `rankdir` is "TB", "LR", "BT" or "RL". Raises `ExportError` (an unknown `rankdir`,
    or one node id in two of the conversations)."""
    depth = 0
    for statement in _Statements(rankdir)(graphs):
        kind = statement[0]
        indent = "  " * depth
        if kind in ("node", "defaults"):
            listed = ", ".join(f"{key}={value}" for key, value in statement[2].items())
            yield f"{indent}{statement[1]} [{listed}];"
        elif kind == "edge":
            yield f"{indent}{statement[1]} -> {statement[2]};"
        elif kind == "cluster":
            yield f"{indent}subgraph {statement[1]} {{"
            yield from _assignments(statement[2], indent + "  ")
            depth += 1
        elif kind == "graph":
            yield f"digraph {statement[1]} {{"
            yield from _assignments(statement[2], "  ")
            depth = 1
        else:
            depth -= 1
            yield f"{'  ' * depth}}}"


def write_dot(graphs: Graphs, path_or_file: PathOrFile, rankdir: str = "TB") -> None:
    """Write `generate_dot(graphs, rankdir)` to a path or an open file."""
    write_lines(generate_dot(graphs, rankdir), path_or_file)


def to_pydot(graphs: Graphs, rankdir: str = "TB") -> pydot.Dot:
    """The same drawing as `generate_dot`, as a pydot object."""
    import pydot

    stack: list[Any] = []
    dot = None
    for statement in _Statements(rankdir)(graphs):
        kind = statement[0]
        if kind == "node":
            stack[-1].add_node(pydot.Node(statement[1], **statement[2]))
        elif kind == "edge":
            stack[-1].add_edge(pydot.Edge(statement[1], statement[2]))
        elif kind == "defaults":
            defaults = (
                stack[-1].set_node_defaults
                if statement[1] == "node"
                else stack[-1].set_edge_defaults
            )
            defaults(**statement[2])
        elif kind == "cluster":
            cluster = pydot.Subgraph(statement[1])
            for key, value in statement[2].items():
                cluster.set(key, value)
            stack[-1].add_subgraph(cluster)
            stack.append(cluster)
        elif kind == "graph":
            dot = pydot.Dot(statement[1], graph_type="digraph")
            for key, value in statement[2].items():
                dot.set(key, value)
            stack.append(dot)
        else:
            stack.pop()
    assert dot is not None
    return dot
