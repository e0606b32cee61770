"""The Datasette plugin in a real `datasette serve` process, driven by
Playwright in Chromium (`tests.browser`): from Datasette's own pages to a
tree, the tree page drawing every node, a click showing a node's text and
its link back to the row.

The server serves a copy of examples/logs.db (four legacy trees, one
continued and forked in llm's message store), with the user's cache (the
search index) in a temporary directory. The browser may ask that server
only: any other request is blocked and fails the test, as are console
errors, page errors and Content-Security-Policy violations.
"""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("datasette", reason="pip install 'convgraph[datasette]'")
httpx = pytest.importorskip("httpx")

from tests.helpers import ROOT, SAFETY_SECONDS, file_digest, wait_until  # noqa: E402
from tests.html_pages import WATCH_POLICY  # noqa: E402

EXAMPLE = ROOT / "examples" / "logs.db"
SOURDOUGH = "01jb0sourdough0000000000000"
HAIKU = "01jb1haiku000000000000000"
HASHMAP = "01jb2hashmap0000000000000"


@dataclass
class Server:
    """A `datasette serve` process and the copy of the example it serves."""

    url: str
    path: Path
    digest: str


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def responds(url: str) -> bool:
    try:
        return httpx.get(url, timeout=5).status_code == 200
    except httpx.TransportError:
        return False


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`datasette serve` on a copy of examples/logs.db, stopped after the
    module's tests."""
    folder = tmp_path_factory.mktemp("datasette")
    path = Path(shutil.copy(EXAMPLE, folder / "logs.db"))
    digest = file_digest(path)
    port = free_port()
    environment = {**os.environ, "XDG_CACHE_HOME": str(folder / "cache")}
    process = subprocess.Popen(
        [sys.executable, "-m", "datasette", "serve", str(path)]
        + ["--host", "127.0.0.1", "--port", str(port)],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(
            lambda: process.poll() is not None or responds(url + "/-/versions.json"),
            "datasette answers",
            poll=0.1,
        )
        assert process.poll() is None, "datasette serve stopped"
        yield Server(url, path, digest)
    finally:
        process.terminate()
        process.wait(timeout=SAFETY_SECONDS)


@dataclass
class Tab:
    """A page of the server in its own browser context, with everything
    that went wrong in it."""

    page: Any
    server: Server
    errors: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)

    def open(self, path: str) -> None:
        self.page.goto(self.server.url + path)

    def wait_for_tree(self) -> None:
        self.page.wait_for_selector("html[data-ready='true']")

    def path(self) -> str:
        return self.page.url.removeprefix(self.server.url)

    def drawn_ids(self) -> set[str]:
        return set(
            self.page.eval_on_selector_all(
                "g.node", "(found) => found.map(e => e.getAttribute('data-id'))"
            )
        )

    def panel(self, selector: str) -> str:
        return self.page.text_content(f"#panel {selector}")

    def assert_clean(self) -> None:
        assert self.errors == []
        assert self.blocked == []
        assert self.page.evaluate("window.__violations") == []


@pytest.fixture
def tab(browser: Any, server: Server) -> Iterator[Tab]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(SAFETY_SECONDS * 1000)
    page = context.new_page()
    opened = Tab(page, server)

    def route(route: Any) -> None:
        if route.request.url.startswith(server.url + "/"):
            route.continue_()
        else:
            opened.blocked.append(route.request.url)
            route.abort()

    context.route("**/*", route)
    page.on("console", lambda m: m.type == "error" and opened.errors.append(m.text))
    page.on("pageerror", lambda error: opened.errors.append(str(error)))
    page.add_init_script(WATCH_POLICY)
    yield opened
    context.close()
    # Nothing the browser did wrote to the file.
    assert file_digest(server.path) == server.digest


def prompts(path: Path) -> dict[str, str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return dict(conn.execute("select id, prompt from responses"))


def test_the_cell_link_from_responses_leads_to_the_right_tree(tab: Tab) -> None:
    tab.open("/logs/responses?_sort=id")
    first = tab.page.locator("td.col-id a", has_text="01jb1hk00root000000000000")
    row = tab.page.locator("tr", has=first)
    row.locator("td.col-conversation_id a.convgraph-tree").click()
    tab.wait_for_tree()
    assert tab.path() == f"/-/convgraph/logs/{HAIKU}"
    assert tab.page.evaluate("convgraph.conversations()") == [
        {"id": HAIKU, "name": "Autumn haiku", "nodes": 3}
    ]
    assert tab.drawn_ids() == {
        "01jb1hk00root000000000000",
        "01jb1hk01b000000000000000",
        "01jb1hk02c000000000000000",
    }
    tab.assert_clean()


def test_the_tree_page_draws_every_node_and_a_click_shows_its_text(
    tab: Tab, server: Server
) -> None:
    tab.open(f"/-/convgraph/logs/{SOURDOUGH}")
    tab.wait_for_tree()
    # Four legacy responses, a turn that went on from them, and a fork's two.
    assert tab.drawn_ids() == {
        "01jb0sd00root0000000000000",
        "01jb0sd01a000000000000000",
        "01jb0sd02b000000000000000",
        "01jb0sd03c000000000000000",
        "01jb4sd04d000000000000000",
        "01jb5sd05e000000000000000",
        "01jb5sd06f000000000000000",
    }
    node = "01jb0sd02b000000000000000"
    tab.page.click(f'g.node[data-id="{node}"]')
    assert tab.panel("section[data-field=prompt] pre") == prompts(server.path)[node]
    assert tab.panel(".node-id") == node
    row = tab.page.locator("#panel dd[data-field=record] a")
    assert row.get_attribute("href") == f"/logs/responses/{node}"
    tab.assert_clean()
    # The link leads to the row in Datasette.
    row.click()
    tab.page.wait_for_load_state()
    assert tab.path() == f"/logs/responses/{node}"
    assert tab.page.text_content("td.col-id").split()[0] == node


def test_a_row_page_opens_the_tree_at_its_node(tab: Tab) -> None:
    turn = "01jb5sd06f000000000000000"
    tab.open(f"/logs/turns/{turn}")
    tab.page.click("td.col-id a.convgraph-tree")
    tab.wait_for_tree()
    assert tab.path() == f"/-/convgraph/logs/{SOURDOUGH}#{turn}"
    assert tab.page.evaluate("convgraph.selected()") == turn
    assert tab.panel(".node-id") == turn
    assert tab.page.locator("#panel dd[data-field=record] a").get_attribute("href") == (
        f"/logs/turns/{turn}"
    )
    tab.assert_clean()


def test_the_forest_page_and_its_search_lead_to_trees(tab: Tab) -> None:
    tab.open("/logs")
    tab.page.click("details.actions-menu-links summary")
    tab.page.click("text=View as conversation trees")
    tab.page.wait_for_load_state()
    assert tab.path() == "/-/convgraph/logs"
    tab.page.click(f'tr[data-tree="{HASHMAP}"] a.tree-link')
    tab.wait_for_tree()
    assert tab.path() == f"/-/convgraph/logs/{HASHMAP}"
    assert len(tab.drawn_ids()) == 7
    tab.assert_clean()
    # The explorer's header leads back to the forest.
    tab.page.click("#home-link")
    tab.page.wait_for_load_state()
    assert tab.path() == "/-/convgraph/logs"
    tab.page.fill("#convgraph-q", "nail-polish")
    tab.page.press("#convgraph-q", "Enter")
    tab.page.wait_for_selector("#hits")
    tab.page.click("#hits a.node-link")
    tab.wait_for_tree()
    assert tab.path() == f"/-/convgraph/logs/{SOURDOUGH}#01jb0sd02b000000000000000"
    assert tab.page.evaluate("convgraph.selected()") == "01jb0sd02b000000000000000"
    tab.assert_clean()
