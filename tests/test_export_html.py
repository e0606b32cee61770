"""The interactive HTML export, read back in Python and driven in a real browser.

The Python half reads pages back with real parsers (the standard library's
and lxml's HTML parsers, json). The browser half opens exported files in
Debian's Chromium through Playwright, with every request other than the page
itself blocked and recorded, and every console error, page error and dialog
collected: each test ends by asserting there were none. Where Chromium or
Playwright is missing, the browser tests skip and say why.
"""

from __future__ import annotations

import io
import json
import re
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import lxml.html
import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convgraph.analysis.branch_diff import diff
from convgraph.analysis.stats import summary
from convgraph.contract import NODE_ATTRIBUTES
from convgraph.errors import ConvgraphError
from convgraph.export import FORMATS, ExportError, read_json
from convgraph.export.html import (
    generate_html,
    page_data,
    page_title,
    parse_html,
    read_html,
    script_json,
    write_html,
)
from convgraph.model.tree import ConversationTree, roots, siblings
from convgraph.model.tree import path as tree_path
from convgraph.parts import (
    ASSISTANT,
    USER,
    attachment,
    code,
    code_output,
    reasoning,
    tool_call,
    tool_result,
)
from convgraph.parts import text as text_part
from tests.databases import add_response, add_tree, legacy_database
from tests.helpers import read_forest, run
from tests.html_pages import Visit

EXAMPLE_DB = Path(__file__).resolve().parent.parent / "examples" / "logs.db"

# Each payload would set window.__pwned (or open a dialog) if it ever ran.
HOSTILE = [
    "<script>window.__pwned = 'script'; alert(1)</script>",
    "</script><script>window.__pwned = 'closed the data block'</script>",
    '"}]}</script><script>window.__pwned = "left the JSON"</script>',
    "<img src=x onerror=\"window.__pwned = 'img'; alert(2)\">",
    "<svg onload=\"window.__pwned = 'svg'\"><a href=\"javascript:window.__pwned='a'\">x</a>",
    "[click me](javascript:window.__pwned='markdown') javascript:alert(3)",
    "line\u2028separator\u2029paragraph <!-- comment <![CDATA[ x ]]> &amp; &lt;",
    "<style>body { background: url(http://example.invalid/track.png) }</style>",
    "{{script}} {{data}} ${window.__pwned = 'template'}",
]


def example_db() -> Path:
    if not EXAMPLE_DB.exists():  # pragma: no cover - until the lead's file lands
        pytest.skip("examples/logs.db is missing")
    return EXAMPLE_DB


def export(db: Path, out: Path, *args: str) -> Path:
    """Export `db` as the user does: `convgraph export --format html -o out`."""
    run("export", "--db", db, "--format", "html", "-o", out, *args)
    return out


def hostile_db(path: Path) -> Path:
    """A conversation whose every text, name and model is an attack."""
    conn = legacy_database(path)
    parent = None
    for index, payload in enumerate(HOSTILE):
        add_response(
            conn,
            f"evil-{index}",
            "evil",
            payload,
            parent=parent,
            response=payload + "\nresponse",
            system=payload,
            model=HOSTILE[index % 4],
            name=HOSTILE[1],
            datetime_utc=f"2025-09-27T10:00:{index:02d}",
        )
        parent = f"evil-{index}"
    conn.commit()
    conn.close()
    return path


def example_rows() -> dict[str, dict[str, Any]]:
    """The example database's responses as sqlite3 gives them."""
    conn = sqlite3.connect(f"file:{example_db()}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return {row["id"]: dict(row) for row in conn.execute("select * from responses")}
    finally:
        conn.close()


# ---- Python: the page as text ----


def test_script_json_escapes_what_could_end_the_block():
    text = script_json({"p": "</script><!--&\u2028\u2029"})
    assert text == '{"p":"\\u003c/script\\u003e\\u003c!--\\u0026\\u2028\\u2029"}'
    assert json.loads(text) == {"p": "</script><!--&\u2028\u2029"}


def test_script_json_escapes_lone_surrogates_so_the_page_is_utf8():
    text = script_json(["\ud800x"])
    assert text == '["\\ud800x"]'
    text.encode("utf-8")


def test_page_reads_back_to_the_same_trees(seed_db, tmp_path):
    forest = read_forest(seed_db)
    out = tmp_path / "forest.html"
    write_html(forest.trees(), out)
    trees = read_html(out)
    assert [tree.graph["tree_id"] for tree in trees] == forest.tree_ids
    for tree, expected in zip(trees, forest.trees(), strict=True):
        assert list(tree.nodes(data=True)) == list(expected.nodes(data=True))
        assert sorted(tree.edges) == sorted(expected.edges)
        assert tree.graph == expected.graph


def test_page_is_one_self_contained_document(seed_db, tmp_path):
    out = write_page(seed_db, tmp_path)
    document = lxml.html.parse(str(out)).getroot()
    scripts = document.findall(".//script")
    assert [script.get("type") for script in scripts] == ["application/json", None]
    assert [script.get("src") for script in scripts] == [None, None]
    assert document.findall(".//link[@rel='stylesheet']") == []
    assert [link.get("href") for link in document.findall(".//link")] == ["data:,"]
    # Nothing in the page points outside it.
    text = out.read_text("utf-8")
    assert re.findall(r"(?:src|href)\s*=\s*[\"']?(?:https?:)?//", text) == []
    assert "@import" not in text
    assert re.findall(r"url\((?!#)", text) == []  # only references inside the page


def test_page_policy_admits_only_its_own_script_and_style(seed_db, tmp_path):
    import base64
    import hashlib

    document = lxml.html.parse(str(write_page(seed_db, tmp_path))).getroot()
    policy = document.find(".//meta[@http-equiv='Content-Security-Policy']").get(
        "content"
    )
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
    assert directives["default-src"] == "'none'"

    def digest(text: str) -> str:
        value = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
        return f"'sha256-{value}'"

    assert directives["script-src"] == digest(document.findall(".//script")[1].text)
    assert directives["style-src"] == digest(document.find(".//style").text)


def test_hostile_text_stays_inside_the_data_block(tmp_path):
    trees = list(read_forest(hostile_db(tmp_path / "evil.db")).trees())
    title = "</title><script>window.__pwned = 'title'</script>"
    text = "".join(generate_html(trees, title=title))
    document = lxml.html.document_fromstring(text)
    assert len(document.findall(".//script")) == 2
    assert document.findall(".//img") == []
    assert [svg.get("id") for svg in document.findall(".//svg")] == ["tree"]
    assert document.find(".//title").text == title
    assert document.get_element_by_id("title").text == title
    assert text.count("</script>") == 2
    # Every payload comes back out of the page exactly as it went in.
    (tree,) = parse_html(text)
    prompts = [prompt for _, prompt in tree.nodes(data="prompt")]
    assert prompts == HOSTILE
    assert page_data(text)["title"] == title


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.text(), min_size=1, max_size=4), title=st.text())
def test_any_text_reads_back_exactly_and_stays_text(texts, title):
    tree = nx.DiGraph(tree_id="c", name=title)
    for index, text in enumerate(texts):
        attributes = dict.fromkeys(NODE_ATTRIBUTES)
        attributes.update(prompt=text, system=title, response=text[::-1])
        tree.add_node(f"n{index}", **attributes)
        if index:
            tree.add_edge(f"n{index - 1}", f"n{index}")
    page = "\n".join(generate_html(tree, title=title))
    # Whatever the text, the page has its own two scripts and nothing more.
    assert page.lower().count("</script") == 2
    assert page.lower().count("<script") == 2
    assert "<!--" not in page
    document = lxml.html.document_fromstring(page)
    assert (document.find(".//title").text or "") == page_title(title)
    (back,) = parse_html(page)
    assert [back.nodes[node]["prompt"] for node in back] == texts
    assert [back.nodes[node]["response"] for node in back] == [t[::-1] for t in texts]
    assert back.graph["name"] == title


def test_an_empty_forest_is_a_page_without_conversations(tmp_path):
    out = tmp_path / "empty.html"
    write_html([], out)
    assert read_html(out) == []


def test_one_tree_alone_is_exported(seed_db):
    tree = read_forest(seed_db).tree("complex")
    (back,) = parse_html("".join(generate_html(tree)))
    assert sorted(back.edges) == sorted(tree.edges)


def test_a_file_that_is_not_a_page_is_refused(tmp_path):
    other = tmp_path / "other.html"
    other.write_text("<html><body><script>1</script></body></html>")
    with pytest.raises(ExportError, match="not a convgraph HTML page"):
        read_html(other)
    assert issubclass(ExportError, ConvgraphError)
    broken = tmp_path / "broken.html"
    broken.write_text('<script type="application/json" id="convgraph-data">{</script>')
    with pytest.raises(ExportError, match="not JSON"):
        read_html(broken)
    newer = tmp_path / "newer.html"
    newer.write_text(
        '<script type="application/json" id="convgraph-data">'
        '{"format": "convgraph.html", "version": 99, "conversations": []}</script>'
    )
    with pytest.raises(ExportError, match="version 99"):
        read_html(newer)


def test_convgraph_export_format_html(tmp_path):
    out = export(example_db(), tmp_path / "forest.html")
    forest = read_forest(example_db())
    trees = FORMATS["html"].read(out)
    assert [tree.graph["tree_id"] for tree in trees] == forest.tree_ids
    data = page_data(out.read_text("utf-8"))
    assert data["orientation"] == "top-down"
    # Each conversation is the node-link JSON of the json exporter.
    first = data["conversations"][0]
    assert first["graph"]["format"] == "convgraph.node-link"
    (tree,) = read_json(io.StringIO(json.dumps(first["graph"])))
    assert list(tree.nodes(data=True)) == list(trees[0].nodes(data=True))
    assert first["stats"]["nodes"] == trees[0].number_of_nodes()


def test_convgraph_export_of_one_conversation_left_to_right(tmp_path):
    out = export(example_db(), tmp_path / "one.html", HASH_MAPS, "--rankdir", "LR")
    data = page_data(out.read_text("utf-8"))
    assert data["orientation"] == "left-right"
    assert [record["id"] for record in data["conversations"]] == [HASH_MAPS]


def test_convgraph_export_refuses_a_direction_the_page_cannot_draw(tmp_path):
    out = tmp_path / "bt.html"
    args = ["--db", example_db(), "--format", "html", "--rankdir", "BT", "-o", out]
    result = run("export", *args, expect=2)
    assert result.exit_code == 2
    assert result.output == "Error: the html page draws trees TB or LR, not 'BT'\n"
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def write_page(db: Path, tmp_path: Path, name: str = "forest.html") -> Path:
    out = tmp_path / name
    write_html(read_forest(db).trees(), out)
    return out


# ---- The browser ----


@pytest.fixture
def example_page(open_page, tmp_path) -> Visit:
    return open_page(export(example_db(), tmp_path / "forest.html"))


HASH_MAPS = "01jb2hashmap0000000000000"


def test_lists_every_conversation_with_its_statistics(example_page):
    forest = read_forest(example_db())
    ids = example_page.attributes("#conversation-list button", "data-conversation")
    assert ids == forest.tree_ids
    hash_maps = forest.tree(HASH_MAPS)
    item = example_page.page.locator(f'button[data-conversation="{HASH_MAPS}"]')
    assert item.locator(".conversation-name").text_content() == hash_maps.graph["name"]
    assert item.locator(".conversation-figures").first.text_content() == (
        "7 nodes · 1 root · 4 leaves · depth 2 · 3 branch points"
    )
    # What its abandoned branches spent, as `stats` counts it (issue 38).
    share = summary(hash_maps)["abandoned_share"]
    assert 0 < share < 1
    spent = f"{round(share * 100)}% of tokens on abandoned branches"
    assert item.locator(".conversation-figures").last.text_content() == spent
    # The first conversation is drawn, whole (it is small).
    first = forest.tree(forest.tree_ids[0])
    assert example_page.drawn_ids() == set(first)
    example_page.open_conversation(HASH_MAPS)
    assert example_page.drawn_ids() == set(hash_maps)
    title = example_page.page.text_content("#conversation-title")
    assert title == hash_maps.graph["name"]
    header = example_page.page.text_content("#conversation-stats")
    assert header.endswith(" · " + spent)
    example_page.assert_clean()


def test_branch_points_leaves_and_models_are_marked(example_page):
    example_page.open_conversation(HASH_MAPS)
    tree = read_forest(example_db()).tree(HASH_MAPS)
    branch_points = [n for n in tree if tree.out_degree(n) > 1]
    leaves = [n for n in tree if tree.out_degree(n) == 0]
    assert example_page.ids_with_class("branch") == set(branch_points)
    assert example_page.ids_with_class("leaf") == set(leaves)
    badge = example_page.node(branch_points[0]).locator(".badge-count")
    assert badge.text_content() == str(tree.out_degree(branch_points[0]))
    # One colour per model; the legend names each model of the tree shown
    # with its count of nodes in that tree (issue 25.8: not the forest's).
    legend = example_page.page.locator("#legend .legend-item[data-model]")
    models = [legend.nth(i).get_attribute("data-model") for i in range(legend.count())]
    forest = read_forest(example_db())
    first_used = dict.fromkeys(
        m for t in forest.trees() for _, m in t.nodes(data="model")
    )
    in_tree = Counter(model for _, model in tree.nodes(data="model"))
    assert models == [m for m in first_used if m in in_tree]
    assert [legend.nth(i).text_content() for i in range(legend.count())] == [
        f"{model} ({in_tree[model]})" for model in models
    ]
    stripes = {
        node: example_page.node(node).locator(".model-stripe").get_attribute("fill")
        for node in tree
    }
    colour_of_model: dict[str, str] = {}
    for node, colour in stripes.items():
        assert colour_of_model.setdefault(tree.nodes[node]["model"], colour) == colour
    assert len(set(colour_of_model.values())) == len(colour_of_model)
    example_page.assert_clean()


def test_clicking_a_node_shows_it_and_its_path(example_page):
    rows = example_rows()
    tree = read_forest(example_db()).tree(HASH_MAPS)
    leaf = "01jb2hm03d000000000000000"
    row = rows[leaf]
    example_page.open_conversation(HASH_MAPS)
    example_page.node(leaf).click()
    assert example_page.panel("h2") == "Leaf"
    assert example_page.panel(".node-id") == leaf
    assert example_page.panel("[data-field=prompt] pre") == row["prompt"]
    assert example_page.panel("[data-field=response] pre") == row["response"]
    assert example_page.panel("[data-field=system] pre") == (row["system"] or "(none)")
    assert example_page.panel("dd[data-field=model]") == row["model"]
    assert example_page.panel("dd[data-field=datetime_utc]") == row["datetime_utc"]
    assert example_page.panel("dd[data-field=tokens]") == (
        f"{row['input_tokens']:,} in, {row['output_tokens']:,} out"
    )
    duration = example_page.panel("dd[data-field=duration_ms]")
    assert duration == f"{row['duration_ms']:,} ms"
    # The path from the root is highlighted in the drawing and listed.
    expected_path = tree_path(tree, leaf)
    assert example_page.ids_with_class("on-path") == set(expected_path)
    assert example_page.ids_with_class("selected") == {leaf}
    listed = "#panel [data-field=path] button"
    assert example_page.attributes(listed, "data-goto") == expected_path
    assert example_page.count(".edge.on-path") == len(expected_path) - 1
    # Clicking a node of the listed path goes there.
    example_page.page.locator(listed).first.click()
    assert example_page.panel(".node-id") == expected_path[0]
    assert example_page.panel("h2") == "Branch point"
    example_page.assert_clean()


def test_collapse_and_expand_a_subtree(example_page):
    example_page.open_conversation(HASH_MAPS)
    tree = read_forest(example_db()).tree(HASH_MAPS)
    branch = "01jb2hm01b000000000000000"
    below = list(nx.descendants(tree, branch))
    toggle = example_page.node(branch).locator(".toggle")
    assert toggle.get_attribute("aria-expanded") == "true"
    toggle.click()
    # Collapsed: the subtree is gone from the page, and counted.
    assert set(example_page.drawn_ids()) == set(tree) - set(below)
    assert example_page.node(branch).locator(".hidden-count").text_content() == (
        f"{len(below)} hidden"
    )
    toggle = example_page.node(branch).locator(".toggle")
    assert toggle.get_attribute("aria-expanded") == "false"
    toggle.click()
    assert example_page.drawn_ids() == set(tree)
    # Collapse all keeps the root; selecting a hidden node opens its path.
    example_page.page.click("#collapse-all")
    assert example_page.drawn_ids() == {n for n in tree if tree.in_degree(n) == 0}
    deep = "01jb2hm06g000000000000000"
    example_page.page.evaluate("(node) => convgraph.select(node)", deep)
    assert set(tree_path(tree, deep)) <= set(example_page.drawn_ids())
    assert example_page.panel(".node-id") == deep
    example_page.assert_clean()


def test_draws_top_down_or_left_to_right(example_page):
    example_page.open_conversation(HASH_MAPS)
    root, child = "01jb2hm00root000000000000", "01jb2hm01b000000000000000"

    def position(node: str) -> tuple[float, float]:
        transform = example_page.node(node).get_attribute("transform")
        x, y = re.fullmatch(r"translate\(([-\d.]+),([-\d.]+)\)", transform).groups()
        return float(x), float(y)

    assert position(child)[1] > position(root)[1]  # children below
    example_page.page.click("#orientation")
    assert example_page.page.get_attribute("#tree", "data-orientation") == "left-right"
    assert position(child)[0] > position(root)[0]  # children to the right
    assert example_page.page.text_content("#orientation") == "Top down"
    example_page.assert_clean()


def test_an_lr_export_opens_left_to_right(open_page, tmp_path):
    visit = open_page(export(example_db(), tmp_path / "lr.html", "--rankdir", "LR"))
    assert visit.page.get_attribute("#tree", "data-orientation") == "left-right"
    assert visit.page.text_content("#orientation") == "Top down"
    visit.assert_clean()


def test_search_highlights_the_matching_nodes(example_page):
    needle = "Hash Map"
    rows = example_rows()
    forest = read_forest(example_db())
    matching = {
        node
        for node, row in rows.items()
        if needle.lower() in (row["prompt"] or "").lower()
        or needle.lower() in (row["response"] or "").lower()
    }
    assert matching, "the example should have something to find"
    page = example_page.page
    page.fill("#search", needle)
    page.wait_for_function("() => document.getElementById('search-status').textContent")
    for tree_id in forest.tree_ids:
        example_page.open_conversation(tree_id)
        tree = forest.tree(tree_id)
        assert example_page.ids_with_class("match") == set(tree) & matching
    tree_of = dict(zip(forest.nodes["id"], forest.nodes["tree_id"], strict=True))
    conversations_hit = {tree_of[node] for node in matching}
    assert page.text_content("#search-status") == (
        f"{len(matching)} {'match' if len(matching) == 1 else 'matches'} in "
        f"{len(conversations_hit)} conversation{'s' if len(conversations_hit) > 1 else ''}"
        " · Enter: next"
    )
    assert example_page.count("#conversation-list .match-count") == len(
        conversations_hit
    )
    # Enter selects the matches one after another, conversation by conversation.
    example_page.open_conversation(forest.tree_ids[0])
    in_order = [n for tree in forest.trees() for n in tree if n in matching]
    page.focus("#search")
    for expected in in_order[:3]:
        page.keyboard.press("Enter")
        assert example_page.panel(".node-id") == expected
    page.fill("#search", "no such text anywhere")
    page.wait_for_function("() => !document.querySelector('g.node.match')")
    assert page.text_content("#search-status") == "no match"
    example_page.assert_clean()


def changed_lines(unified: list[str]) -> list[str]:
    """The removed and added lines of a unified diff, without its headers."""
    body = [line for line in unified[2:] if not line.startswith("@@")]
    return [line for line in body if line[:1] in ("-", "+")]


def test_two_selected_nodes_show_their_branch_diff(example_page):
    tree = read_forest(example_db()).tree(HASH_MAPS)
    a, b = "01jb2hm02c000000000000000", "01jb2hm06g000000000000000"
    expected = diff(tree, a, b).to_dict()
    example_page.open_conversation(HASH_MAPS)
    example_page.node(a).click()
    example_page.node(b).click(modifiers=["Shift"])
    assert example_page.panel("h2") == "Branch diff"
    assert example_page.panel("dd[data-field=fork_point]") == expected["fork_point"]
    assert example_page.ids_with_class("fork-point") == {expected["fork_point"]}
    assert example_page.ids_with_class("selected") == {a}
    assert example_page.ids_with_class("selected-b") == {b}

    def listed(part: str) -> list[str]:
        selector = f"#panel [data-field=branch-{part}] button"
        return example_page.attributes(selector, "data-goto")

    assert listed("shared") == expected["shared"]
    assert listed("a") == expected["a"]
    assert listed("b") == expected["b"]
    # The page computes the diff itself, in the shape of convgraph.analysis.branch_diff's.
    result = example_page.page.evaluate("([a, b]) => convgraph.diff(a, b)", [a, b])
    same_keys = [
        "node_a",
        "node_b",
        "tree_id",
        "fork_point",
        "shared",
        "a",
        "b",
    ]
    assert {key: result[key] for key in same_keys + ["totals"]} == {
        key: expected[key] for key in same_keys + ["totals"]
    }
    assert len(result["steps"]) == len(expected["steps"]) == 2
    for mine, theirs in zip(result["steps"], expected["steps"], strict=True):
        for key in ("step", "a", "b", "same_prompt", "same_response"):
            assert mine[key] == theirs[key]
        for key in ("prompt_diff", "response_diff"):
            assert [line for line in mine[key] if line[0] != " "] == changed_lines(
                theirs[key]
            )
    # The panel shows each step's removed and added lines.
    for step in expected["steps"]:
        box = f"#panel [data-step='{step['step']}'] [data-diff=response]"
        shown = example_page.page.eval_on_selector_all(
            f"{box} div.delete, {box} div.insert",
            "lines => lines.map(l => (l.className === 'delete' ? '-' : '+') + l.textContent)",
        )
        assert shown == changed_lines(step["response_diff"])
    # Compare-with, from the panel, picks the second node with a plain click:
    # here an ancestor, which is its own fork point.
    example_page.page.click("#diff-close")
    example_page.page.click("#panel-compare")
    ancestor = expected["a"][0]
    example_page.node(ancestor).click()
    assert example_page.panel("dd[data-field=fork_point]") == ancestor
    assert listed("a") == diff(tree, a, ancestor).to_dict()["a"] == [a]
    assert listed("b") == []
    example_page.assert_clean()


def test_nodes_with_different_roots_have_no_fork_point(example_page):
    tree_id = "01jb3translate00000000000"
    example_page.open_conversation(tree_id)
    tree = read_forest(example_db()).tree(tree_id)
    first, second = [n for n in tree if tree.out_degree(n) == 0]
    result = example_page.page.evaluate(
        "([a, b]) => convgraph.diff(a, b)", [first, second]
    )
    # The start, nothing shared: the shape of convgraph.analysis.branch_diff's.
    assert result["fork_point"] is None
    expected = diff(tree, first, second).to_dict()
    same_keys = ["node_a", "node_b", "tree_id", "fork_point", "shared", "a", "b"]
    assert {key: result[key] for key in same_keys + ["totals"]} == {
        key: expected[key] for key in same_keys + ["totals"]
    }
    assert result["shared"] == []
    assert result["a"] == tree_path(tree, first)
    assert result["b"] == tree_path(tree, second)
    example_page.node(first).click()
    example_page.node(second).click(modifiers=["Shift"])
    assert example_page.panel("dd[data-field=fork_point]").startswith("none")
    # The two branches part at the drawn start.
    assert example_page.count("g.start.fork-point") == 1
    example_page.assert_clean()


TRANSLATE = "01jb3translate00000000000"


def test_roots_are_alternatives_at_one_start(example_page):
    """The translated greeting was asked twice at its first turn: its two
    roots hang from one start, [ and ] move between them, and the page's
    siblings are convgraph.model.tree.siblings for every node."""
    forest = read_forest(example_db())
    for tree in forest.trees():
        for node in tree:
            mine = example_page.page.evaluate("(id) => convgraph.siblings(id)", node)
            assert mine == siblings(tree, node)
    tree = forest.tree(TRANSLATE)
    first, second = roots(tree)
    example_page.open_conversation(TRANSLATE)
    start = example_page.page.locator("g.start")
    assert start.get_attribute("data-alternatives") == "2"
    assert start.locator(".sublabel").text_content() == "2 alternatives"
    assert example_page.count("path.edge.start-edge") == 2
    assert example_page.drawn_ids() == set(tree)  # the start is no node
    # The start stands a level above the roots it hangs them from.
    assert (
        position(example_page.page, "g.start")[1]
        < position(example_page.page, f'g.node[data-id="{first}"]')[1]
    )
    example_page.node(first).click()
    assert example_page.panel("dd[data-field=alternatives]") == (
        "1 of 2 at the start (the roots) · [ and ] move"
    )
    example_page.page.keyboard.press("]")
    assert example_page.panel(".node-id") == second
    assert selected(example_page) == second
    assert example_page.ids_with_class("selected") == {second}
    example_page.page.keyboard.press("]")  # wraps round
    assert selected(example_page) == first
    example_page.page.keyboard.press("[")
    assert selected(example_page) == second
    example_page.page.click("#sibling-prev")
    assert selected(example_page) == first
    assert example_page.page.locator("path.start-edge.on-path").count() == 1
    # Below the start, [ and ] move among a node's children as well.
    example_page.open_conversation(HASH_MAPS)
    example_page.node("01jb2hm02c000000000000000").click()
    example_page.page.keyboard.press("]")
    assert selected(example_page) == "01jb2hm03d000000000000000"
    assert example_page.count("g.start") == 0  # one root: no start drawn
    example_page.assert_clean()


def test_code_in_an_answer_keeps_its_lines(example_page):
    """The example's Python answer has no fence: the page shows it as the
    text it is, every line and its indentation as rendered, nothing bold."""
    code_answer = "01jb2hm01b000000000000000"
    code = example_rows()[code_answer]["response"]
    example_page.open_conversation(HASH_MAPS)
    example_page.node(code_answer).click()
    shown = example_page.page.inner_text("#panel [data-field=response] pre")
    assert shown == code
    assert shown.splitlines()[1] == "    def __init__(self, size=8):"
    assert example_page.count("#panel [data-field=response] pre *") == 0
    example_page.assert_clean()


def position(page, selector: str) -> tuple[float, float]:
    transform = page.get_attribute(selector, "transform")
    x, y = re.fullmatch(r"translate\(([-\d.]+),([-\d.]+)\)", transform).groups()
    return float(x), float(y)


def selected(visit: Visit) -> str | None:
    return visit.page.evaluate("() => convgraph.selected()")


def run_tree() -> ConversationTree:
    """A tool chain, code and reasoning, made with the parts' constructors;
    every name and text of the run is one of the HOSTILE payloads."""
    parts = [
        text_part(USER, "Shout the word tree"),
        reasoning("The user wants it loud.\n" + HOSTILE[0]),
        text_part(ASSISTANT, "Calling " + HOSTILE[3]),
        tool_call("shout", {"word": "tree", "note": HOSTILE[1]}, "call-1"),
        tool_result("shout", "TREE " + HOSTILE[2], "call-1"),
        tool_call(HOSTILE[4], "{not json", "call-2"),
        tool_result(HOSTILE[4], "", "call-2", error="no network " + HOSTILE[5]),
        code("print(len('tree'))", "python"),
        code_output("4"),
        attachment(USER, name=HOSTILE[6], mime="image/png", size=2048),
        text_part(ASSISTANT, "TREE!"),
    ]
    return ConversationTree.from_edges(
        [("run", "next")],
        {
            "run": {
                "prompt": "Shout the word tree",
                "response": "Calling " + HOSTILE[3] + "\n\nTREE!",
                "model": "echo",
                "parts": parts,
                "tool_calls": 2,
                "tools": "shout, " + HOSTILE[4],
            },
            "next": {"prompt": "Thanks", "response": "You are welcome"},
        },
        tree_id="run",
        name="A tool chain",
    )


def test_the_details_show_the_run_of_a_tool_chain(open_page, tmp_path):
    out = tmp_path / "run.html"
    write_html(run_tree(), out)
    (back,) = read_html(out)
    assert back.nodes["run"]["parts"] == run_tree().nodes["run"]["parts"]
    visit = open_page(out)
    page = visit.page
    visit.node("run").click()
    assert visit.panel("dd[data-field=tool_calls]") == f"2 (shout, {HOSTILE[4]})"
    run = "#panel [data-field=run] [data-part]"
    assert visit.attributes(run, "data-part") == [
        "reasoning",
        "said",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "code",
        "code_output",
        "attachment",
    ]
    titles = page.eval_on_selector_all(
        "#panel [data-field=run] .part-title", "found => found.map(e => e.textContent)"
    )
    assert titles == [
        "said: Calling " + HOSTILE[3],
        "↳ shout called with",
        "← shout gave back",
        f"↳ {HOSTILE[4]} called with",
        f"← {HOSTILE[4]} failed: no network {HOSTILE[5]}",
        "↳ code ran (python)",
        "← output",
        f"attachment: {HOSTILE[6]} (image/png, 2048 bytes)",
    ]
    blocks = page.eval_on_selector_all(
        "#panel [data-field=run] .part pre", "found => found.map(e => e.textContent)"
    )
    assert blocks == [
        "The user wants it loud.\n" + HOSTILE[0],
        json.dumps({"word": "tree", "note": HOSTILE[1]}, indent=2, ensure_ascii=False),
        "TREE " + HOSTILE[2],
        "{not json",
        "print(len('tree'))",
        "4",
    ]
    # The reasoning is folded until its summary is clicked.
    reasoning_part = page.locator("#panel details.reasoning")
    assert reasoning_part.get_attribute("open") is None
    assert (
        reasoning_part.locator("summary").text_content() == "Reasoning (76 characters)"
    )
    assert not reasoning_part.locator("pre").is_visible()
    reasoning_part.locator("summary").click()
    assert reasoning_part.locator("pre").is_visible()
    # The box of a tool chain names its calls before its answer.
    sublabel = visit.node("run").locator(".sublabel").text_content()
    assert sublabel.startswith("↳ shout, ")
    # A node without parts has no run.
    visit.node("next").click()
    assert visit.count("#panel [data-field=run]") == 0
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert visit.count("body img, body iframe, [onerror], [onload]") == 0
    visit.assert_clean()


def test_a_tool_chain_llm_logged_shows_its_call_and_result(open_page, tmp_path):
    """A file llm 0.36 wrote (llm-echo 0.5 calls `shout`, thinking on),
    exported as the user does: one node, its run in the panel."""
    from tests.databases import LlmLog

    (tmp_path / "llm").mkdir()
    with LlmLog(tmp_path / "llm") as log:
        first, last = log.tool_chain(
            "shout tree",
            [{"name": "shout", "arguments": {"word": "tree"}}],
            "-o",
            "thinking",
            "1",
        )
    page = export(log.path, tmp_path / "chain.html")
    # The first call's id is in the page, and reads back as the tree's calls.
    (back,) = read_html(page)
    assert back.graph["calls"] == {first: last}
    visit = open_page(page)
    assert visit.drawn_ids() == {last}
    visit.node(last).click()
    assert visit.panel("dd[data-field=tool_calls]") == "1 (shout)"
    assert visit.panel("dd[data-field=calls]") == first
    # The first call's id finds the run's node, as a link to the page would.
    visit.page.keyboard.press("Escape")
    assert selected(visit) is None
    assert visit.page.evaluate(f"() => convgraph.select({first!r}, false)")
    assert selected(visit) == last
    run = "#panel [data-field=run] [data-part]"
    assert visit.attributes(run, "data-part") == [
        "reasoning",
        "said",
        "tool_call",
        "tool_result",
        "reasoning",
    ]
    call = visit.page.locator("#panel [data-part=tool_call]")
    assert call.locator(".part-title").text_content() == "↳ shout called with"
    assert call.locator("pre").text_content() == '{\n  "word": "tree"\n}'
    result = visit.page.locator("#panel [data-part=tool_result]")
    assert result.locator(".part-title").text_content() == "← shout gave back"
    assert result.locator("pre").text_content() == "TREE!"
    assert visit.page.locator("#panel details.reasoning[open]").count() == 0
    visit.assert_clean()


def test_a_fork_made_with_llm_itself_is_a_branch(open_page, llm_fork_db, tmp_path):
    db = Path(llm_fork_db["path"])
    first, second, third = llm_fork_db["turns"]
    fork_first, fork_second = llm_fork_db["fork_turns"]
    visit = open_page(export(db, tmp_path / "llm.html"))
    assert visit.attributes("#conversation-list button", "data-conversation") == [
        llm_fork_db["thread"]
    ]
    assert visit.drawn_ids() == {first, second, third, fork_first, fork_second}
    assert visit.ids_with_class("branch") == {first}
    assert visit.ids_with_class("leaf") == {third, fork_second}
    visit.node(fork_second).click()
    assert visit.panel("[data-field=prompt] pre") == "Is every tree a graph?"
    assert visit.panel("dd[data-field=model]") == "echo"
    path = visit.attributes("#panel [data-field=path] button", "data-goto")
    assert path == [first, fork_first, fork_second]
    visit.node(third).click(modifiers=["Shift"])
    assert visit.panel("dd[data-field=fork_point]") == first
    visit.assert_clean()


def test_a_hand_made_graph_with_a_cycle_still_opens(open_page, tmp_path):
    """convgraph's trees have no cycles; a DiGraph made by hand might, and
    the page must not hang on it: a node no root reaches becomes a root."""
    graph = nx.DiGraph([("r", "s"), ("a", "b"), ("b", "c"), ("c", "a")])
    graph.graph.update(tree_id="loop", name="A loop")
    out = tmp_path / "loop.html"
    write_html(graph, out)
    visit = open_page(out)
    assert visit.drawn_ids() == {"r", "s", "a", "b", "c"}
    visit.node("c").click()
    assert visit.attributes("#panel [data-field=path] button", "data-goto") == [
        "a",
        "b",
        "c",
    ]
    visit.assert_clean()


def test_hostile_text_runs_no_script(open_page, tmp_path):
    trees = list(read_forest(hostile_db(tmp_path / "evil.db")).trees())
    out = tmp_path / "evil.html"
    write_html(trees, out, title="</title><script>window.__pwned = 'title'</script>")
    visit = open_page(out)
    page = visit.page
    (tree,) = trees
    page.click("#expand-all")
    for index, node in enumerate(tree):
        visit.node(node).click()
        assert visit.panel("[data-field=prompt] pre") == HOSTILE[index]
        assert visit.panel("[data-field=system] pre") == HOSTILE[index]
        assert visit.panel("[data-field=response] pre") == HOSTILE[index] + "\nresponse"
    visit.node("evil-0").click()
    visit.node(list(tree)[-1]).click(modifiers=["Shift"])
    assert visit.panel("h2") == "Branch diff"
    page.fill("#search", "<script>")
    page.wait_for_selector("g.node.match")
    page.click("#orientation")
    # What the text says is on the page as text, and nothing it says ran.
    assert page.text_content("#conversation-title") == HOSTILE[1]
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert visit.count("body img, body iframe, body object, body embed") == 0
    assert visit.count("a[href], [onerror], [onload], [src]") == 0
    assert visit.count("script") == 2
    assert page.title() == "</title><script>window.__pwned = 'title'</script>"
    visit.assert_clean()


def test_the_payloads_are_live_where_text_is_not_escaped(browser, tmp_path):
    """The control for the test above: pasted into a page as markup, the
    payloads do run, so their silence in the export means something."""
    page = browser.new_page()
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    naive = tmp_path / "naive.html"
    naive.write_text("<!DOCTYPE html><body>" + "".join(HOSTILE[:4]) + "</body>")
    page.goto(naive.resolve().as_uri())
    page.wait_for_function("() => window.__pwned !== undefined")
    assert dialogs
    page.close()


def test_nothing_leaves_the_page(open_page, tmp_path):
    """Fonts, images and styles named in the data are never fetched."""
    conn = legacy_database(tmp_path / "net.db")
    add_response(
        conn,
        "net-1",
        "net",
        '<img src="http://example.invalid/a.png"><link rel=stylesheet href=//x.invalid/b.css>',
        response='@import url("https://fonts.example.invalid/css"); url(http://x.invalid/c)',
        datetime_utc="2025-09-27T10:00:00",
    )
    conn.commit()
    conn.close()
    visit = open_page(write_page(tmp_path / "net.db", tmp_path))
    visit.node("net-1").click()
    visit.page.fill("#search", "invalid")
    visit.page.wait_for_selector("g.node.match")
    visit.page.click("#zoom-in")
    assert visit.blocked == []
    visit.assert_clean()


def test_a_5000_node_export_opens_and_responds(open_page, tmp_path):
    # One conversation of 5,000 nodes: a 4-ary tree, widest at the bottom.
    conn = legacy_database(tmp_path / "big.db")
    links = [(f"n{i}", f"n{(i - 1) // 4}" if i else None) for i in range(5000)]
    add_tree(conn, "big", links)
    conn.close()
    out = tmp_path / "big.html"
    write_html(read_forest(tmp_path / "big.db").trees(), out)
    visit = open_page(out)
    page = visit.page
    drawn = page.evaluate("convgraph.drawnNodes()")
    assert 1 <= drawn <= 120  # lazily drawn: collapsed subtrees are not in the DOM
    assert page.text_content("#forest-stats") == "1 conversation, 5000 nodes"
    # Search finds a deep node; Enter opens its path and shows it.
    page.fill("#search", "prompt n4999")
    page.keyboard.press("Enter")
    assert visit.panel(".node-id") == "n4999"
    assert visit.node("n4999").count() == 1
    big = read_forest(tmp_path / "big.db").tree("big")
    assert visit.ids_with_class("on-path") == set(tree_path(big, "n4999"))
    page.screenshot(path=str(tmp_path / "big.png"))
    # Expanded whole, it is laid out whole, but only what is near the
    # visible part of the canvas is in the DOM; scrolling paints the rest.
    page.click("#expand-all")
    assert page.evaluate("convgraph.laidOutNodes()") == 5000
    assert 1 <= page.evaluate("convgraph.drawnNodes()") <= 400
    assert visit.node("n4999").count() == 1  # the selected node stays in view
    page.evaluate("(node) => convgraph.select(node)", "n3000")
    assert visit.panel(".node-id") == "n3000"
    visit.node("n3000").click()
    assert visit.panel("h2") == "Leaf"
    page.eval_on_selector("#canvas", "canvas => { canvas.scrollLeft = 0; }")
    page.wait_for_selector('g.node[data-id="n3000"]', state="detached")
    left = visit.drawn_ids()
    page.eval_on_selector("#canvas", "canvas => { canvas.scrollLeft = 1e9; }")
    page.wait_for_selector(f'g.node[data-id="{min(left)}"]', state="detached")
    right = visit.drawn_ids()
    assert left and right and left.isdisjoint(right)
    assert len(left) <= 400 and len(right) <= 400
    page.click("#collapse-all")
    assert page.evaluate("convgraph.drawnNodes()") == 1
    visit.assert_clean()


def test_screenshot_of_the_example(example_page, tmp_path):
    example_page.open_conversation(HASH_MAPS)
    example_page.node("01jb2hm02c000000000000000").click()
    example_page.node("01jb2hm06g000000000000000").click(modifiers=["Shift"])
    shot = tmp_path / "example.png"
    example_page.page.screenshot(path=str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    example_page.node("01jb2hm03d000000000000000").click()
    example_page.page.screenshot(path=str(tmp_path / "example-node.png"))
    example_page.assert_clean()
