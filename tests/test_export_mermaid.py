"""Mermaid export: exact flowcharts for the four scenarios, escaping one
case at a time, and, where Node.js has Mermaid itself, Mermaid's own parser.

Mermaid's parser runs when `CONVGRAPH_MERMAID_MODULES` names a directory
whose `node_modules` holds `mermaid` (11) and `jsdom`, as
`npm install --prefix DIR mermaid@11 jsdom` makes it; otherwise those tests
skip and say so.
"""

from __future__ import annotations

import doctest
import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import networkx as nx
import pytest

import convgraph.export.mermaid
from convgraph.export import ExportError, generate_mermaid, write_mermaid
from convgraph.export.mermaid import quote_label
from convgraph.model.loading import load_tree
from tests.helpers import read_forest

COMPLEX_MERMAID = [
    "flowchart TB",
    '  subgraph c0["prompt complex-root  (complex)"]',
    *(
        f'    n{index}{opening}"complex-{name}  ·  echo'
        # The active path, to complex-g (logged last), is marked ●.
        f"{'  ●' if name in ('root', 'e', 'g') else ''}<br>» prompt complex-{name}"
        f'<br>« answer to prompt complex-{name}"{closing}:::model0'
        for index, (name, opening, closing) in enumerate(
            [
                ("root", "{{", "}}"),
                ("b", "{{", "}}"),
                ("c", "([", "])"),
                ("d", "([", "])"),
                ("e", "{{", "}}"),
                ("f", "([", "])"),
                ("g", "([", "])"),
            ]
        )
    ),
    "    n0 --> n1",
    "    n0 --> n4",
    "    n1 --> n2",
    "    n1 --> n3",
    "    n4 --> n5",
    "    n4 --> n6",
    "  end",
    "  classDef model0 fill:#8dd3c7,stroke:#555,color:#000",
]


def test_doctests():
    assert doctest.testmod(convgraph.export.mermaid).failed == 0


def test_complex_scenario_exact(seed_db):
    assert list(generate_mermaid(load_tree("complex", seed_db))) == COMPLEX_MERMAID


def test_linear_chain_is_plain_boxes_then_a_leaf(seed_db, tmp_path):
    write_mermaid(load_tree("linear", seed_db), tmp_path / "linear.mmd", rankdir="LR")
    lines = (tmp_path / "linear.mmd").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "flowchart LR"
    assert [line.split('"')[0] for line in lines[2:6]] == [
        "    n0(",
        "    n1(",
        "    n2(",
        "    n3([",
    ]
    assert lines[6:9] == ["    n0 --> n1", "    n1 --> n2", "    n2 --> n3"]


def test_forest_is_one_subgraph_per_conversation_with_fresh_ids(seed_db):
    lines = list(generate_mermaid(read_forest(seed_db).trees()))
    assert [line for line in lines if line.startswith("  subgraph")] == [
        '  subgraph c0["prompt linear-root  (linear)"]',
        '  subgraph c1["prompt branch-root  (branch)"]',
        '  subgraph c2["prompt complex-root  (complex)"]',
        '  subgraph c3["prompt multiple-roots-root1  (multiple-roots)"]',
    ]
    ids = [re.match(r"    (n\d+)[(\[{]", line) for line in lines]
    assert [match.group(1) for match in ids if match] == [
        f"n{index}" for index in range(20)
    ]
    assert lines.count("  end") == 4


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ('say "end"', '"say #quot;end#quot;"'),
        ("<script>alert(1)</script>", '"#60;script#62;alert(1)#60;/script#62;"'),
        ("#quot; stays text", '"#35;quot; stays text"'),
        ("a & b", '"a #38; b"'),
        ("%%{init: {}}%%", '"#37;#37;{init#58; {}}#37;#37;"'),
        ("`markdown`", '"#96;markdown#96;"'),
        ("back\\slash", '"back#92;slash"'),
        ("one\ntwo", '"one<br>two"'),
        ("tab\tnul\x00", '"tab nul␀"'),
        ("", '" "'),
        ("дерево 🌳 [x] {y} (z) |w|", '"дерево 🌳 [x] {y} (z) |w|"'),
    ],
)
def test_labels_are_quoted_with_entity_codes(text, label):
    assert quote_label(text) == label


def test_node_ids_are_generated_whatever_the_real_ids(seed_db):
    tree = nx.DiGraph(tree_id="end", name=None)
    tree.add_edge("end", "subgraph")
    tree.add_edge("end", 'x"] --> evil["')
    assert list(generate_mermaid(tree)) == [
        "flowchart TB",
        '  subgraph c0["end"]',
        '    n0{{"end"}}',
        '    n1(["subgraph"])',
        '    n2(["x#quot;] --#62; evil[#quot;"])',
        "    n0 --> n1",
        "    n0 --> n2",
        "  end",
    ]
    with pytest.raises(ExportError, match="rankdir must be one of"):
        list(generate_mermaid(tree, rankdir="up"))
    with pytest.raises(ExportError, match="node 'end' is in two"):
        list(generate_mermaid([tree, tree]))


# Mermaid's own parser, through Node.js.

PARSE_SCRIPT = """
import { JSDOM } from "jsdom";
const dom = new JSDOM("<!doctype html><html><body></body></html>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import("mermaid");
mermaid.initialize({ startOnLoad: false });
import { readFileSync } from "fs";
const results = [];
for (const text of JSON.parse(readFileSync(0, "utf8"))) {
  try {
    const diagram = await mermaid.mermaidAPI.getDiagramFromText(text);
    results.push({
      vertices: [...diagram.db.getVertices()].map(([id, vertex]) => [id, vertex.text]),
      edges: diagram.db.getEdges().length,
      subgraphs: diagram.db.getSubGraphs().map((subgraph) => subgraph.title),
    });
  } catch (error) {
    results.push({ error: String(error.message || error) });
  }
}
console.log(JSON.stringify(results));
"""


def mermaid_modules() -> Path | None:
    directory = os.environ.get("CONVGRAPH_MERMAID_MODULES")
    if not directory or shutil.which("node") is None:
        return None
    modules = Path(directory) / "node_modules"
    if (modules / "mermaid").is_dir() and (modules / "jsdom").is_dir():
        return Path(directory)
    return None


needs_mermaid = pytest.mark.skipif(
    mermaid_modules() is None,
    reason="Mermaid's parser needs node and CONVGRAPH_MERMAID_MODULES naming a"
    " directory with mermaid and jsdom installed (npm install --prefix DIR mermaid@11 jsdom)",
)


def mermaid_parse(texts: list[str]) -> list[dict]:
    directory = mermaid_modules()
    assert directory is not None
    script = directory / "convgraph-parse.mjs"
    script.write_text(PARSE_SCRIPT)
    done = subprocess.run(
        ["node", str(script)],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        cwd=directory,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def shown(text: str) -> str:
    """A vertex's text as Mermaid draws it: Mermaid carries entity codes as
    its own placeholders, then the browser decodes the HTML entities."""
    lines = text.split("<br>")
    entities = [
        line.replace("ﬂ°°", "&#").replace("ﬂ°", "&").replace("¶ß", ";")
        for line in lines
    ]
    return "\n".join(html.unescape(line) for line in entities)


@needs_mermaid
def test_mermaid_parses_hostile_forests():
    from hypothesis import HealthCheck, given, settings

    from convgraph.export.labels import branches, node_label
    from tests.test_export_properties import conversations, expected_drawn

    cases = []

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(conversations())
    def collect(graphs):
        cases.append((graphs, "\n".join(generate_mermaid(graphs))))

    collect()
    for (graphs, text), result in zip(
        cases, mermaid_parse([text for _, text in cases]), strict=True
    ):
        assert "error" not in result, (result, text)
        # The active path is marked only in conversations that branch.
        expected = [
            expected_drawn(node_label(node, data, branches(graph))).replace("\t", " ")
            or " "
            for graph in graphs
            for node, data in graph.nodes(data=True)
        ]
        # (Mermaid trims the whitespace around a label)
        drawn = [shown(vertex_text).strip() for _, vertex_text in result["vertices"]]
        assert drawn == [label.strip() for label in expected]
        assert result["edges"] == sum(graph.number_of_edges() for graph in graphs)
        assert len(result["subgraphs"]) == len(graphs)


@needs_mermaid
def test_mermaid_parses_the_seed_forest(seed_db):
    [result] = mermaid_parse(
        ["\n".join(generate_mermaid(read_forest(seed_db).trees()))]
    )
    assert len(result["vertices"]) == 20
    assert result["edges"] == 15
    assert result["subgraphs"] == [
        "prompt linear-root  (linear)",
        "prompt branch-root  (branch)",
        "prompt complex-root  (complex)",
        "prompt multiple-roots-root1  (multiple-roots)",
    ]
