"""Every exporter, on random forests of hostile text, read back by real parsers.

Hypothesis builds forests whose ids, names and texts are made of the pieces
that break exports: quotes, backslashes, line ends, braces and brackets, DOT
and Mermaid keywords, entity look-alikes, control characters, non-Latin
scripts, emoji, and very long runs of them. Each export goes back through the
parser the format's users have: pydot and Graphviz for DOT, networkx's
`read_graphml` and lxml's strict XML parser for GraphML, `json` (and networkx's
`node_link_graph`) for JSON, and a strict reading of the Mermaid grammar that
the exporter promises (every label a quoted string of safe characters).
"""

from __future__ import annotations

import html.entities
import io
import json
import re
import shutil
import subprocess

import lxml.etree
import networkx as nx
import pydot
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convgraph import parts
from convgraph.export import (
    generate_dot,
    generate_graphml,
    generate_json,
    generate_mermaid,
    generate_tree_json,
    read_graphml,
    read_json,
    read_tree_json,
    to_pydot,
)
from convgraph.export.common import tree_calls, without_controls, without_forbidden
from convgraph.export.dot import svg_references_fixed, unquote_id
from convgraph.export.labels import branches, node_label, node_tooltip
from convgraph.export.tree_json import loads_deep
from tests.helpers import SAFETY_SECONDS, examples

HOSTILE = [
    '"',
    "'",
    "\\",
    '\\"',
    "\\n",
    "\\N",
    "\n",
    "\r\n",
    "\r",
    "\t",
    "{",
    "}",
    "<",
    ">",
    "|",
    "[",
    "]",
    "(",
    ")",
    ";",
    ",",
    "=",
    "#",
    "&",
    "%",
    "`",
    ":",
    "-->",
    "->",
    "node",
    "graph",
    "strict",
    "digraph",
    "subgraph",
    "edge",
    "end",
    "flowchart",
    "style",
    "classDef",
    "click",
    "%%{init: {'theme': 'dark'}}%%",
    "#quot;",
    "#35;",
    "&amp;",
    "&lt;",
    "<br>",
    "<script>alert(1)</script>",
    "]]>",
    "<!--",
    "\x00",
    "\x01",
    "\x08",
    "\x0b",
    "\x1b[31m",
    "\x7f",
    "\u0085",
    "\ufffe",
    "\uffff",
    "\u2028",
    "\u202e",
    "\ufb02\u00b0",
    "\u00b6\u00df",
    "0",
    "1abc",
    " ",
    "Ω",
    "дерево",
    "樹木",
    "شجرة",
    "🌳",
    "👩‍👩‍👧",
]

pieces = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=4))
short_text = st.lists(pieces, max_size=6).map("".join)
long_text = st.sampled_from(HOSTILE).map(lambda piece: piece * (6000 // len(piece)))
hostile_text = st.one_of(short_text, short_text, short_text, long_text)
# Ids: hostile but distinct once XML's forbidden characters are replaced by
# their pictures, so the U+2400 block and U+FFFD stay out of them.
hostile_id = short_text.filter(
    lambda text: not re.search("[\u2400-\u2426\ufffd]", text) and len(text) < 200
)


#: Any JSON value a tool's arguments may hold (no floats: NaN is no JSON).
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | short_text,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(short_text, inner, max_size=3)
    ),
    max_leaves=8,
)
maybe_text = st.none() | short_text
sizes = st.none() | st.integers(0, 2**40)
roles = st.sampled_from([parts.USER, parts.ASSISTANT])
#: A node's parts: one of each type, every text hostile.
part_values = st.one_of(
    st.builds(parts.text, roles, hostile_text),
    st.builds(parts.reasoning, hostile_text, st.booleans()),
    st.builds(parts.tool_call, maybe_text, json_values, maybe_text),
    st.builds(parts.tool_result, maybe_text, hostile_text, maybe_text, maybe_text),
    st.builds(parts.code, hostile_text, maybe_text),
    st.builds(parts.code_output, hostile_text),
    st.builds(parts.attachment, roles, maybe_text, maybe_text, maybe_text, sizes),
    st.builds(parts.fragment, maybe_text, sizes),
)


@st.composite
def conversations(draw: st.DrawFn) -> list[nx.DiGraph]:
    """One to three conversation DiGraphs with the node contract's attributes,
    some nodes folding the calls of a run (the graph's `calls`, hostile ids
    too, in node order as a reader gives them back)."""
    count = draw(st.integers(1, 3))
    sizes = [draw(st.integers(1, 6)) for _ in range(count)]
    folds = [[draw(st.integers(0, 2)) for _ in range(size)] for size in sizes]
    total = sum(sizes) + count + sum(map(sum, folds))
    ids = draw(
        st.lists(
            hostile_id, min_size=total, max_size=total, unique_by=without_forbidden
        )
    )
    optional_text = st.none() | hostile_text
    count_value = st.none() | st.integers(0, 2**40)
    graphs = []
    for size, fold in zip(sizes, folds, strict=True):
        tree_id = ids.pop()
        graph = nx.DiGraph(tree_id=tree_id, name=draw(st.none() | short_text))
        nodes = [ids.pop() for _ in range(size)]
        calls = {
            ids.pop(): node
            for node, n in zip(nodes, fold, strict=True)
            for _ in range(n)
        }
        if calls:
            graph.graph["calls"] = calls
        for index, node in enumerate(nodes):
            graph.add_node(
                node,
                conversation_id=tree_id,
                prompt=draw(optional_text),
                system=draw(optional_text),
                response=draw(optional_text),
                parts=draw(st.none() | st.lists(part_values, max_size=4)),
                tool_calls=draw(st.none() | st.integers(0, 50)),
                tools=draw(maybe_text),
                model=draw(st.none() | st.sampled_from(["echo", "gpt-4o", 'm"<1>'])),
                datetime_utc=draw(st.none() | short_text),
                input_tokens=draw(count_value),
                output_tokens=draw(count_value),
                duration_ms=draw(count_value),
                source=draw(st.sampled_from(["responses", "turns"])),
                # The branch attributes, as the forest attaches them.
                active=draw(st.booleans()),
                note=draw(optional_text),
                preferred=draw(st.booleans()),
            )
            parent = draw(st.none() | st.integers(0, index - 1)) if index else None
            if parent is not None:
                graph.add_edge(nodes[parent], node)
        graphs.append(graph)
    return graphs


SETTINGS = settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def assert_same(actual: list[nx.DiGraph], expected: list[nx.DiGraph]) -> None:
    """Same conversations: graph attributes, nodes in order with their
    attributes, and each node's children in order."""
    assert len(actual) == len(expected)
    for back, graph in zip(actual, expected, strict=True):
        assert back.graph == graph.graph
        assert list(back.nodes(data=True)) == list(graph.nodes(data=True))
        for node in graph:
            assert list(back.successors(node)) == list(graph.successors(node))


def sanitized(graphs: list[nx.DiGraph]) -> list[nx.DiGraph]:
    """The graphs as GraphML carries them: XML's forbidden characters
    replaced in every string (the parts, JSON, keep every one)."""

    def clean(value):
        return without_forbidden(value) if isinstance(value, str) else value

    result = []
    for graph in graphs:
        copy = nx.DiGraph(**{key: clean(value) for key, value in graph.graph.items()})
        if "calls" in graph.graph:
            # The calls' ids are JSON in the file, kept exact; their nodes'
            # ids are XML.
            copy.graph["calls"] = {
                call: clean(node) for call, node in graph.graph["calls"].items()
            }
        for node, data in graph.nodes(data=True):
            copy.add_node(
                clean(node), **{key: clean(value) for key, value in data.items()}
            )
        copy.add_edges_from((clean(a), clean(b)) for a, b in graph.edges())
        result.append(copy)
    return result


def text(lines) -> str:
    return "".join(line + "\n" for line in lines)


def assert_one_line_each(lines: list[str]) -> None:
    for line in lines:
        assert "\n" not in line and "\r" not in line


# GraphML


@SETTINGS
@given(conversations())
def test_graphml_round_trip(graphs):
    lines = list(generate_graphml(graphs))
    assert_one_line_each(lines)
    data = text(lines).encode("utf-8")
    lxml.etree.fromstring(data, lxml.etree.XMLParser(recover=False))
    expected = sanitized(graphs)
    assert_same(read_graphml(io.BytesIO(data)), expected)

    # networkx alone reads the same graph: the conversations' union, with
    # the values that are not None, and the tree each node is in.
    whole = nx.read_graphml(io.BytesIO(data))
    for _, values in whole.nodes(data=True):
        for key in ("parts", "calls"):
            if key in values:
                # A string attribute holding their JSON.
                values[key] = json.loads(values[key])
    union = nx.DiGraph()
    for graph in expected:
        folded = tree_calls(graph)
        for node, values in graph.nodes(data=True):
            kept = {key: value for key, value in values.items() if value is not None}
            if node in folded:
                kept["calls"] = folded[node]
            if len(graphs) > 1:
                kept["tree_id"] = graph.graph["tree_id"]
                if graph.graph["name"] is not None:
                    kept["tree_name"] = graph.graph["name"]
            union.add_node(node, **kept)
        union.add_edges_from(graph.edges())
    assert dict(whole.nodes(data=True)) == dict(union.nodes(data=True))
    assert set(whole.edges()) == set(union.edges())
    assert nx.is_isomorphic(whole, union, node_match=dict.__eq__)
    if len(graphs) == 1:
        only = expected[0].graph
        # (networkx adds the empty defaults of the file's keys)
        read = {k: v for k, v in whole.graph.items() if not k.endswith("_default")}
        assert read == {k: v for k, v in only.items() if v is not None and k != "calls"}


# JSON


@SETTINGS
@given(conversations())
def test_node_link_round_trip(graphs):
    lines = list(generate_json(graphs))
    assert_one_line_each(lines)
    document = json.loads(text(lines))
    assert document["format"] == "convgraph.node-link"
    assert document["version"] == 1
    assert_same(read_json(io.StringIO(text(lines))), graphs)
    # Every string verbatim, and networkx reads the document as it is: each
    # node with the calls it folds as an attribute.
    whole = nx.node_link_graph(document, edges="edges")
    if len(graphs) == 1:
        [graph] = graphs
        folded = tree_calls(graph)
        assert whole.graph == {k: v for k, v in graph.graph.items() if k != "calls"}
        assert list(whole.nodes(data=True)) == [
            (node, {**data, "calls": folded.get(node, [])})
            for node, data in graph.nodes(data=True)
        ]
        assert list(whole.edges) == list(graph.edges)
    else:
        assert [entry["tree_id"] for entry in document["graph"]["conversations"]] == [
            graph.graph["tree_id"] for graph in graphs
        ]
        assert whole.number_of_nodes() == sum(len(graph) for graph in graphs)


@SETTINGS
@given(conversations())
def test_tree_json_round_trip(graphs):
    lines = list(generate_tree_json(graphs))
    assert_one_line_each(lines)
    whole = text(lines)
    document = json.loads(whole)
    assert loads_deep(whole) == document
    assert [c["tree_id"] for c in document["children"]] == [
        graph.graph["tree_id"] for graph in graphs
    ]
    back = read_tree_json(io.StringIO(whole))
    assert len(back) == len(graphs)
    for tree, graph in zip(back, graphs, strict=True):
        assert tree.graph == graph.graph
        assert dict(tree.nodes(data=True)) == dict(graph.nodes(data=True))
        for node in graph:
            assert list(tree.successors(node)) == list(graph.successors(node))


@settings(max_examples=60, deadline=None)
@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False)
        | st.text(),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4)
        ),
        max_leaves=20,
    )
)
def test_deep_json_reader_agrees_with_json(value):
    for indent in (None, 2):
        encoded = json.dumps(value, indent=indent)
        assert loads_deep(encoded) == json.loads(encoded)


# DOT


def graphviz_escaped(quoted: str) -> str:
    """An escString as Graphviz draws it: backslash escapes (\\n a line
    break, \\x the character x), then the entity for `&`."""
    body = quoted[1:-1]
    unescaped = re.sub(
        r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), body, flags=re.S
    )
    return unescaped.replace("&amp;", "&")


def expected_drawn(text: str) -> str:
    return without_controls(text.replace("\r\n", "\n").replace("\r", "\n"))


def graphviz_tooltip(quoted: str) -> str:
    """A tooltip as Graphviz shows it: read as an escString (\\n and \\r line
    ends, \\x the character x), then its backslash pairs halved once more
    (where \\N and the like would name the node), then the entity for `&`."""
    first = re.sub(
        r"\\(.)",
        lambda m: {"n": "\n", "r": "\r"}.get(m.group(1), m.group(1)),
        quoted[1:-1],
        flags=re.S,
    )
    return re.sub(r"\\(.)", r"\1", first, flags=re.S).replace("&amp;", "&")


def expected_tooltip(text: str) -> str:
    return "\r".join(without_controls(piece) for piece in text.split("\r"))


def dot_nodes(dot: pydot.Dot) -> dict[str, dict]:
    """Every node statement of a parsed DOT file and its clusters, by id."""
    found = {}
    graphs = [dot]
    while graphs:
        graph = graphs.pop()
        for node in graph.get_nodes():
            if node.get_name() in ("node", "edge", "graph"):
                continue  # default-attribute statements
            found[unquote_id(node.get_name())] = node.get_attributes()
        graphs.extend(graph.get_subgraphs())
    return found


def dot_edges(dot: pydot.Dot) -> set[tuple[str, str]]:
    found = set()
    graphs = [dot]
    while graphs:
        graph = graphs.pop()
        for edge in graph.get_edges():
            found.add(
                (unquote_id(edge.get_source()), unquote_id(edge.get_destination()))
            )
        graphs.extend(graph.get_subgraphs())
    return found


def assert_dot_matches(source: str, graphs: list[nx.DiGraph]) -> None:
    [dot] = pydot.graph_from_dot_data(source)
    nodes = dot_nodes(dot)
    assert list(nodes) == [node for graph in graphs for node in graph] or set(
        nodes
    ) == {node for graph in graphs for node in graph}
    assert dot_edges(dot) == {edge for graph in graphs for edge in graph.edges()}
    assert len(dot.get_subgraphs()) == (len(graphs) if len(graphs) > 1 else 0)
    for graph in graphs:
        for node, data in graph.nodes(data=True):
            attributes = nodes[node]
            label = graphviz_escaped(attributes["label"])
            # The active path is marked where the conversation branches.
            marked = branches(graph)
            assert label == expected_drawn(node_label(node, data, marked))
            tooltip = graphviz_tooltip(attributes["tooltip"])
            calls = tree_calls(graph).get(node, [])
            assert tooltip == expected_tooltip(node_tooltip(data, calls))
            for key in ("prompt", "response"):
                if data[key] is not None:
                    assert expected_tooltip(data[key]) in tooltip


@pytest.mark.slow
@SETTINGS
@given(conversations())
def test_dot_parses_with_pydot(graphs):
    lines = list(generate_dot(graphs))
    assert_one_line_each(lines)
    assert_dot_matches(text(lines), graphs)
    # The object form writes the same drawing.
    assert_dot_matches(to_pydot(graphs).to_string(), graphs)


needs_graphviz = pytest.mark.skipif(
    shutil.which("dot") is None,
    reason="Graphviz's dot is not installed (apt-get install graphviz)",
)


def graphviz_name(node) -> str:
    """The node name Graphviz reads from `quote_id`'s string: `\\"` is a
    quote, every other backslash pair stays as it is."""
    from convgraph.export.dot import quote_id

    return re.sub(
        r"\\(.)",
        lambda m: '"' if m.group(1) == '"' else m.group(0),
        quote_id(node)[1:-1],
        flags=re.S,
    )


def decoded_reference(match: re.Match[str]) -> str:
    """What an XML parser shows for a reference in a drawn name: its
    character where XML allows it or HTML names it, else the text itself."""
    body = match[1]
    if body.startswith("#"):
        hexadecimal = body[1:2] == "x"  # XML's only form: &#X41; is no reference
        digits = body[2:] if hexadecimal else body[1:]
        readable = digits and (hexadecimal or digits.isdigit())
        code = int(digits, 16 if hexadecimal else 10) if readable else -1
        allowed = code in (9, 10, 13) or 0x20 <= code <= 0xD7FF
        allowed = allowed or 0xE000 <= code <= 0xFFFD or 0x10000 <= code <= 0x10FFFF
        return chr(code) if allowed else match[0]
    return html.entities.html5.get(body + ";", match[0])


@needs_graphviz
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(conversations())
def test_dot_draws_with_graphviz_into_valid_svg(graphs):
    source = text(generate_dot(graphs)).encode("utf-8")
    done = subprocess.run(
        ["dot", "-Tsvg"], input=source, capture_output=True, timeout=SAFETY_SECONDS
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    # Graphviz writes a name's `&...;` as it stands: what convgraph draws goes
    # through svg_references_fixed, which makes the SVG valid XML.
    svg = lxml.etree.fromstring(
        svg_references_fixed(done.stdout.decode("utf-8")).encode("utf-8"),
        lxml.etree.XMLParser(recover=False, huge_tree=True),
    )
    space = {"svg": "http://www.w3.org/2000/svg"}
    titles = svg.xpath(
        "//svg:g[contains(concat(' ', @class, ' '), ' node ')]/svg:title",
        namespaces=space,
    )
    drawn = [title.text or "" for title in titles]
    # A reference in a name that XML or HTML knows shows decoded, any other
    # `&` as it is; Graphviz writes each space that follows a space as a
    # no-break space, so that SVG keeps the run.
    expected = [
        re.sub(
            r"&(#[xX][0-9a-fA-F]*|#[0-9]*|[A-Za-z]*);",
            decoded_reference,
            re.sub(r"(?<= ) ", "\xa0", name),
        )
        for name in (graphviz_name(node) for graph in graphs for node in graph)
    ]
    assert sorted(drawn) == sorted(expected)
    edges = svg.xpath("//svg:g[@class='edge']", namespaces=space)
    assert len(edges) == sum(graph.number_of_edges() for graph in graphs)


# Mermaid

MERMAID_LINE = re.compile(
    r"flowchart (?:TB|LR|BT|RL)"
    r'|  subgraph c\d+\["(?P<title>[^"]*)"\]'
    r'|    n(?P<node>\d+)(?:\(|\{\{|\(\[)"(?P<label>[^"]*)"(?:\)|\}\}|\]\))(?::::model\d+)?'
    r"|    n\d+ --> n\d+"
    r"|  end"
    r"|  classDef model\d+ fill:#[0-9a-f]{6},stroke:#555,color:#000"
)
# What a label may hold besides its text: entity codes and line breaks; no
# quote, no raw #, &, <, >, %, backtick or colon, no control character.
SAFE_LABEL = re.compile(
    r'(?:#quot;|#\d+;|<br>|[^"#&<>%`:\\\x00-\x1f\x7f\u00b6\ufb02])+'
)


def mermaid_text(label: str) -> str:
    """A label as Mermaid shows it: entity codes decoded, <br> a line break."""
    decoded = label.replace("#quot;", '"')
    decoded = re.sub(
        r"#(\d+);", lambda m: chr(int(m.group(1))), decoded.replace("<br>", "\n")
    )
    return decoded


@SETTINGS
@given(conversations(), st.sampled_from(["TB", "LR"]))
def test_mermaid_labels_cannot_break_the_diagram(graphs, rankdir):
    lines = list(generate_mermaid(graphs, rankdir=rankdir))
    assert_one_line_each(lines)
    assert lines[0] == f"flowchart {rankdir}"
    labels = []
    titles = []
    for line in lines:
        match = MERMAID_LINE.fullmatch(line)
        assert match is not None, line
        for part in ("title", "label"):
            if match.group(part) is not None:
                assert SAFE_LABEL.fullmatch(match.group(part)), match.group(part)
        if match.group("label") is not None:
            labels.append(mermaid_text(match.group("label")))
        if match.group("title") is not None:
            titles.append(mermaid_text(match.group("title")))
    expected = [
        expected_drawn(node_label(n, d, branches(g))).replace("\t", " ") or " "
        for g in graphs
        for n, d in g.nodes(data=True)
    ]
    assert labels == expected
    assert len(titles) == len(graphs)
    assert sum(
        line.endswith(" end") and line.strip() == "end" for line in lines
    ) == len(graphs)
    edges = [line for line in lines if "-->" in line]
    assert len(edges) == sum(graph.number_of_edges() for graph in graphs)
