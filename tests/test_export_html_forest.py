"""The HTML explorer at real sizes, and its search over every conversation.

A page of 2,000 bushy conversations (`benchmarks.synthetic`, 20,000
responses) opened in Chromium at 1024 and 1400 px wide: the layout facts
the page exposes (element boxes: the toolbar inside the window, the width of
the canvas, a tree opened whole at a readable size, the conversation shown
marked and in view in the list, the legend's models those of the tree shown)
and the search's hits, listed by conversation against an independent
computation over the same forest in Python. A small hand-made forest holds
what only the run of a node says (reasoning, tool calls and results, code),
text in other scripts, a hit off the active path, and hostile text, which the
hits show as text and never run. Screenshots of each width are written
beside the test's files (the ones in `docs/` are copies of them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks import synthetic
from convgraph.export.html import write_html
from convgraph.model.forest import Forest
from convgraph.model.tree import ConversationTree
from convgraph.parts import ASSISTANT, USER, code, reasoning, tool_call, tool_result
from convgraph.parts import text as text_part
from tests.helpers import read_forest
from tests.html_pages import Visit

CONVERSATIONS = 2_000
RESPONSES = 20_000
#: The two widths of window, each with the height it is tried at.
WINDOWS = {1024: (1024, 768), 1400: (1400, 900)}
#: The least zoom the page draws a tree at on opening and on Fit.
READABLE = 0.75
#: How many hits the list shows before "Show more".
HIT_PAGE = 100


@pytest.fixture(scope="module")
def forest_db(tmp_path_factory) -> Path:
    """2,000 conversations of 10 responses, each a 4-ary tree (7 leaves)."""
    path = tmp_path_factory.mktemp("forest") / "logs.db"
    return synthetic.build_legacy(path, RESPONSES, CONVERSATIONS, "bushy")


@pytest.fixture(scope="module")
def forest(forest_db) -> Forest:
    return read_forest(forest_db)


@pytest.fixture(scope="module")
def forest_page(forest, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("page") / "forest.html"
    write_html(forest.trees(), path)
    return path


def box(visit: Visit, selector: str) -> dict[str, float]:
    """The element's box in the window, as getBoundingClientRect gives it."""
    return visit.page.eval_on_selector(
        selector,
        """found => { const r = found.getBoundingClientRect();
           return {left: r.left, right: r.right, top: r.top, bottom: r.bottom,
                   width: r.width, height: r.height}; }""",
    )


def zoom(visit: Visit) -> float:
    return int(visit.page.text_content("#zoom-reset").rstrip("%")) / 100


def legend(visit: Visit) -> list[str]:
    return visit.page.eval_on_selector_all(
        "#legend .legend-item[data-model]", "found => found.map(e => e.textContent)"
    )


def models_of(tree: Any, forest: Forest) -> list[str]:
    """The legend the tree should have: its models in the page's colour order
    (first use across the forest), each with its count of nodes in the tree."""
    order = dict.fromkeys(forest.nodes["model"])
    counts: dict[str, int] = {}
    for _, model in tree.nodes(data="model"):
        counts[model] = counts.get(model, 0) + 1
    return [f"{model} ({counts[model]})" for model in order if model in counts]


# ---- The layout at 1024 and 1400 px ----


@pytest.mark.parametrize("width", sorted(WINDOWS))
def test_the_page_fits_the_window(open_page, forest, forest_page, tmp_path, width):
    visit = open_page(forest_page, WINDOWS[width])
    page = visit.page
    assert page.evaluate("window.innerWidth") == width
    # Every button of the toolbar inside the window, none over another.
    buttons = [box(visit, f"#{name}") for name in visit.attributes(".bar button", "id")]
    assert len(buttons) == 7
    for found in buttons:
        assert found["left"] >= 0 and found["right"] <= width
        assert found["top"] >= 0 and found["bottom"] <= box(visit, ".bar")["bottom"]
    # (The zoom buttons share their borders: one pixel over the one before.)
    for before, after in zip(buttons, buttons[1:], strict=False):
        assert before["right"] <= after["left"] + 1 or before["bottom"] <= after["top"]
    search = box(visit, "#search")
    assert search["right"] <= width and search["width"] >= 200
    # The drawing keeps most of the width (it had 360 px of 1024 beside a
    # 380 px panel); below 1200 px the details go under it.
    assert box(visit, "#canvas")["width"] >= 700
    panel, canvas = box(visit, "#panel"), box(visit, "#canvas")
    if width < 1200:
        assert panel["top"] >= canvas["bottom"]
    else:
        assert panel["left"] >= canvas["right"]
    # The first conversation (7 leaves side by side when whole) opens whole
    # across the canvas at a readable size: not cut at both sides.
    assert zoom(visit) >= READABLE
    scroll = page.eval_on_selector(
        "#canvas",
        "c => ({width: c.scrollWidth, room: c.clientWidth, left: c.scrollLeft})",
    )
    assert scroll["width"] <= scroll["room"] and scroll["left"] == 0
    first = forest.tree(forest.tree_ids[0])
    drawn = visit.drawn_ids()
    assert first.graph["tree_id"] == page.get_attribute(
        "#conversation-list button[aria-current='true']", "data-conversation"
    )
    assert drawn <= set(first) and len(drawn) >= 5
    # The legend counts the models of the tree shown, not the forest's.
    assert legend(visit) == models_of(first, forest)
    page.screenshot(path=str(tmp_path / f"html-{width}.png"))
    visit.assert_clean()


@pytest.mark.parametrize("width", sorted(WINDOWS))
def test_fit_stops_where_labels_stay_readable(open_page, forest_page, width):
    visit = open_page(forest_page, WINDOWS[width])
    page = visit.page
    page.click("#expand-all")
    assert page.evaluate("convgraph.laidOutNodes()") == 10
    page.click("#zoom-fit")
    # Whole, the tree is about 1,630 units wide: it would fit only at 45%.
    assert zoom(visit) == READABLE
    heights = page.eval_on_selector_all(
        "g.node .label", "found => found.map(e => e.getBoundingClientRect().height)"
    )
    assert heights and min(heights) >= 9
    # The drawing scrolls from the tree's start; the rest is a scroll away.
    assert page.eval_on_selector("#canvas", "c => c.scrollWidth > c.clientWidth")
    page.click("#zoom-out")
    assert zoom(visit) == 0.6  # the − button still zooms out further
    visit.assert_clean()


@pytest.mark.parametrize("width", sorted(WINDOWS))
def test_a_search_that_opens_a_far_conversation_shows_it_in_the_list(
    open_page, forest, forest_page, tmp_path, width
):
    visit = open_page(forest_page, WINDOWS[width])
    page = visit.page
    before = box(visit, "#search")
    # Conversation 1,500 holds responses 14,990 to 14,999.
    tree_id = forest.tree_ids[1499]
    root = next(
        node
        for node, data in forest.tree(tree_id).nodes(data=True)
        if data["prompt"].startswith("Question 14990:")
    )
    page.fill("#search", "question 14990:")
    page.wait_for_function("() => document.getElementById('search-status').textContent")
    assert (
        page.text_content("#search-status") == "1 match in 1 conversation · Enter: next"
    )
    page.keyboard.press("Enter")
    assert page.evaluate("convgraph.selected()") == root
    # The search box keeps its size when its status appears.
    assert box(visit, "#search") == before
    # The conversation shown is the one marked in the list, and in view there.
    item = f'#conversation-list button[data-conversation="{tree_id}"]'
    assert visit.attributes(
        "#conversation-list button[aria-current='true']", "data-conversation"
    ) == [tree_id]
    shown, frame = box(visit, item), box(visit, "#conversation-list")
    # (Within a pixel: the list's box ends a fraction above the window's edge.)
    assert frame["top"] <= shown["top"] and shown["bottom"] <= frame["bottom"] + 1
    assert page.eval_on_selector(item, "b => getComputedStyle(b).backgroundColor") == (
        "rgb(221, 244, 255)"
    )
    assert legend(visit) == models_of(forest.tree(tree_id), forest)
    page.screenshot(path=str(tmp_path / f"html-search-{width}.png"))
    visit.assert_clean()


# ---- Search over every conversation ----


def expected_hits(forest: Forest, needle: str) -> list[tuple[str, str, str]]:
    """(conversation, node, field) of every node whose prompt or response
    holds `needle` (any case), in the order of the page's list and of the
    log, the field the first of the two that holds it."""
    found = []
    for tree in forest.trees():
        for node, data in tree.nodes(data=True):
            for field in ("prompt", "response"):
                if needle.lower() in (data[field] or "").lower():
                    found.append((tree.graph["tree_id"], node, field))
                    break
    return found


def listed_hits(visit: Visit) -> list[tuple[str, str, str]]:
    return visit.page.eval_on_selector_all(
        "#hit-list button.hit",
        """found => found.map(b => [b.dataset.conversation, b.dataset.node,
                                    b.dataset.field])""",
    )


def test_search_lists_the_hits_of_every_conversation(open_page, forest, forest_page):
    visit = open_page(forest_page, WINDOWS[1400])
    page = visit.page
    needle = "Tree Where"
    expected = expected_hits(forest, needle)
    trees_hit = list(dict.fromkeys(tree_id for tree_id, _, _ in expected))
    assert len(expected) > 2 * HIT_PAGE and len(trees_hit) > 100
    # Typed on from a shorter needle, the search looks only at its hits, and
    # finds what a search from nothing finds.
    shorter = expected_hits(forest, "tree w")
    for typed, found in [("Tree W", shorter), (needle, expected)]:
        page.fill("#search", typed)
        status = (
            f"{len(found)} matches in {len({t for t, _, _ in found})} conversations"
            " · Enter: next"
        )
        page.wait_for_function(
            "status => document.getElementById('search-status').textContent == status",
            arg=status,
        )
    assert [tuple(hit) for hit in listed_hits(visit)] == expected[:HIT_PAGE]
    assert page.text_content("#more-hits") == (
        f"Show {HIT_PAGE} more ({len(expected) - HIT_PAGE} not shown)"
    )
    page.click("#more-hits")
    assert [tuple(hit) for hit in listed_hits(visit)] == expected[: 2 * HIT_PAGE]
    # Grouped by conversation: one heading each, with its count of hits.
    groups = visit.attributes("#hit-list .hit-group", "data-conversation")
    assert groups == list(dict.fromkeys(t for t, _, _ in expected[: 2 * HIT_PAGE]))
    counts = page.eval_on_selector_all(
        "#hit-list .hit-conversation .match-count",
        "found => found.map(e => e.textContent)",
    )
    assert counts == [
        str(sum(1 for t, _, _ in expected if t == tree_id)) for tree_id in groups
    ]
    # Every snippet marks the words found, as they are written.
    marks = page.eval_on_selector_all(
        "#hit-list mark", "found => found.map(e => e.textContent.toLowerCase())"
    )
    assert marks == [needle.lower()] * 2 * HIT_PAGE
    # A hit far down the list opens its conversation at its node.
    tree_id, node, _ = expected[2 * HIT_PAGE - 1]
    page.click(f'#hit-list button.hit[data-node="{node}"]')
    assert page.evaluate("convgraph.selected()") == node
    assert visit.panel(".node-id") == node
    assert visit.ids_with_class("selected") == {node}
    assert (
        page.get_attribute(
            f'#conversation-list button[data-conversation="{tree_id}"]', "aria-current"
        )
        == "true"
    )
    assert visit.attributes(
        "#hit-list button.hit[aria-current='true']", "data-node"
    ) == [node]
    page.fill("#search", "")
    page.wait_for_selector("#search-hits", state="hidden")
    assert visit.count("#hit-list button.hit") == 0
    visit.assert_clean()


HOSTILE_PROMPT = "<img src=x onerror=\"window.__pwned = 'hit'; alert(1)\"> find me"


def run_forest() -> list[ConversationTree]:
    """Two conversations: one node's run says what neither its prompt nor its
    response does; the other is in Cyrillic and Japanese, with hostile text
    and a hit on a branch that is not the active one."""
    parts = [
        text_part(USER, "Shout the word"),
        reasoning("The user wants it loud.\n<script>window.__pwned = 'r'</script>"),
        tool_call("shout", {"word": "arborescence"}, "call-1"),
        tool_result("shout", "ARBORESCENCE", "call-1", error=None),
        tool_call("fetch", {"url": "x"}, "call-2"),
        tool_result("fetch", "", "call-2", error="unreachable host"),
        code("print('dendrology')", "python"),
        text_part(ASSISTANT, "Done."),
    ]
    run = ConversationTree.from_edges(
        [("run", "after")],
        {
            "run": {
                "prompt": "Shout the word",
                "response": "Done.",
                "parts": parts,
                "model": "echo",
                "tool_calls": 2,
                "tools": "shout, fetch",
            },
            "after": {
                "prompt": "Thanks",
                "response": "You are welcome",
                "model": "echo",
            },
        },
        tree_id="run",
        name="A run",
    )
    words = ConversationTree.from_edges(
        [("ru", "ja"), ("ru", "evil")],
        {
            "ru": {
                "prompt": "Что такое ДЕРЕВО?",
                "response": "Граф без циклов.",
                "active": True,
            },
            "ja": {"prompt": "木構造とは", "response": "根から葉へ。", "active": True},
            "evil": {
                "prompt": HOSTILE_PROMPT,
                "response": "</mark><b>bold</b>",
                "active": False,
            },
        },
        tree_id="words",
        name="Words",
    )
    return [run, words]


def search(visit: Visit, needle: str) -> list[list[str]]:
    """The hits listed for `needle`: node, field, where, the snippet's text and
    its marked words (after the box is emptied, so they are the new ones)."""
    visit.page.fill("#search", "")
    visit.page.wait_for_selector("#search-hits", state="hidden")
    visit.page.fill("#search", needle)
    visit.page.wait_for_function(
        "() => document.getElementById('search-status').textContent"
    )
    return visit.page.eval_on_selector_all(
        "#hit-list button.hit",
        """found => found.map(b => [b.dataset.node, b.dataset.field,
            b.querySelector('.hit-where').textContent,
            b.querySelector('.hit-snippet').textContent,
            [...b.querySelectorAll('mark')].map(m => m.textContent).join('|')])""",
    )


def test_search_reads_the_run_of_a_node(open_page, tmp_path):
    out = tmp_path / "runs.html"
    write_html(run_forest(), out)
    visit = open_page(out)
    assert search(visit, "wants it LOUD") == [
        [
            "run",
            "reasoning",
            "reasoning · depth 0",
            "The user wants it loud. <script>window.__pwned = 'r'</script>",
            "wants it loud",
        ]
    ]
    assert search(visit, "arborescence") == [
        [
            "run",
            "tool call",
            "tool call · depth 0",
            'shout {"word":"arborescence"}',
            "arborescence",
        ]
    ]
    assert search(visit, "unreachable") == [
        [
            "run",
            "tool result",
            "tool result · depth 0",
            "fetch unreachable host",
            "unreachable",
        ]
    ]
    assert search(visit, "dendrology") == [
        ["run", "code", "code · depth 0", "print('dendrology')", "dendrology"]
    ]
    # Other scripts, in any case; a hit off the active path says so.
    assert search(visit, "дерево") == [
        ["ru", "prompt", "prompt · depth 0", "Что такое ДЕРЕВО?", "ДЕРЕВО"]
    ]
    assert search(visit, "根から") == [
        ["ja", "response", "response · depth 1", "根から葉へ。", "根から"]
    ]
    # Hostile text is found and shown as the text it is, never run.
    assert search(visit, "onerror") == [
        [
            "evil",
            "prompt",
            "prompt · depth 1 · off the active path",
            HOSTILE_PROMPT,
            "onerror",
        ]
    ]
    assert search(visit, "</mark><b>") == [
        [
            "evil",
            "response",
            "response · depth 1 · off the active path",
            "</mark><b>bold</b>",
            "</mark><b>",
        ]
    ]
    assert visit.count("#hit-list img, #hit-list b, #hit-list script") == 0
    visit.page.click("#hit-list button.hit")
    assert visit.page.evaluate("convgraph.selected()") == "evil"
    assert visit.page.text_content("#conversation-title") == "Words"
    assert visit.page.evaluate("typeof window.__pwned") == "undefined"
    visit.assert_clean()
