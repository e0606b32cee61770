"""The Datasette plugin (`convgraph.datasette`) through Datasette's own test
client: the forest and tree pages, the links into them from Datasette's
pages, permissions, and the databases it stays out of.

Databases: examples/logs.db (both of llm's generations: four legacy trees,
one continued in the message store and forked), one llm 0.36 wrote itself
(`llm_fork_db`: a thread and its fork), and SQLite files that are not llm's.
Each test copies the example, so that a search index or anything else the
plugin might leave is found beside the copy; the search index goes to a
temporary cache directory.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("datasette", reason="pip install 'convgraph[datasette]'")

import lxml.html  # noqa: E402
from datasette.app import Datasette  # noqa: E402
from datasette.plugins import pm  # noqa: E402

from convgraph.datasette import files  # noqa: E402
from convgraph.export.html import PageLinks, generate_html, page_data  # noqa: E402
from tests.helpers import ROOT, file_digest  # noqa: E402

EXAMPLE = ROOT / "examples" / "logs.db"
SOURDOUGH = "01jb0sourdough0000000000000"
HAIKU = "01jb1haiku000000000000000"
HASHMAP = "01jb2hashmap0000000000000"
TRANSLATE = "01jb3translate00000000000"
FORK_THREAD = "01jb5sdfork0thread00000000"
#: The trees of the example, the last used first (the forest's first order).
BY_LAST_USE = [SOURDOUGH, TRANSLATE, HASHMAP, HAIKU]
#: The nodes of the sourdough tree: legacy responses, then turns that went
#: on from them in the message store, one of them in a fork.
SOURDOUGH_NODES = {
    "01jb0sd00root0000000000000": "responses",
    "01jb0sd01a000000000000000": "responses",
    "01jb0sd02b000000000000000": "responses",
    "01jb0sd03c000000000000000": "responses",
    "01jb4sd04d000000000000000": "turns",
    "01jb5sd05e000000000000000": "turns",
    "01jb5sd06f000000000000000": "turns",
}


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's cache (where the search index lies) in the test's
    directory, and nothing the plugin kept from another test."""
    directory = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(directory))
    files.forget()
    return directory


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """A copy of examples/logs.db, alone in its directory."""
    folder = tmp_path / "served"
    folder.mkdir()
    return Path(shutil.copy(EXAMPLE, folder / "logs.db"))


def served(*paths: Path, **options: Any) -> Datasette:
    """Datasette serving `paths`, with the plugin installed as pip installs
    it (its entry point in the `datasette` group)."""
    names = [plugin.__name__ for plugin in pm.get_plugins()]
    assert "convgraph.datasette" in names, "pip install -e '.[datasette]' registers it"
    return Datasette([str(path) for path in paths], **options)


def get(datasette: Datasette, path: str, **options: Any) -> Any:
    """One request through Datasette's client (no redirect followed)."""
    return asyncio.run(datasette.client.get(path, **options))


def as_actor(datasette: Datasette, actor: dict[str, str]) -> dict[str, str]:
    """The cookies of a signed-in `actor`, as Datasette signs them."""
    return {"ds_actor": datasette.sign({"a": actor}, "actor")}


def document(response: Any) -> Any:
    assert response.status_code == 200, response.text
    return lxml.html.fromstring(response.text)


def error_message(response: Any) -> str:
    """The message of Datasette's own error page."""
    page = lxml.html.fromstring(response.text)
    (box,) = page.xpath("//section[@class='content']/div")
    return box.text_content().strip()


def forest_order(page: Any) -> list[str]:
    return page.xpath("//table[contains(@class,'convgraph-forest')]//tr/@data-tree")


# -- the forest page ---------------------------------------------------------


def test_the_forest_page_lists_every_tree_last_used_first(example: Path) -> None:
    page = document(get(served(example), "/-/convgraph/logs"))
    assert forest_order(page) == BY_LAST_USE
    (row,) = page.xpath(f"//tr[@data-tree='{HAIKU}']")
    cells = {
        cell.get("class").removeprefix("col-"): cell.text_content().strip()
        for cell in row.xpath("td")
    }
    assert cells == {
        "name": f"Autumn haiku{HAIKU}",
        "nodes": "3",
        "roots": "1",
        "leaves": "2",
        "max_depth": "1",
        "branch_points": "1",
        "abandoned_branches": "1",
        "active_path_length": "2",
        "models": "claude-3.5-sonnet, gpt-4o-mini",
        "tool_calls": "0",
        "input_tokens": "47",
        "output_tokens": "52",
        "first_datetime": "2025-09-27 09:05:00",
        "last_datetime": "2025-09-27 09:07:00",
    }
    assert row.xpath(".//a[@class='tree-link']/@href") == [f"/-/convgraph/logs/{HAIKU}"]


def test_the_forest_sorts_by_a_column_and_says_how(example: Path) -> None:
    datasette = served(example)
    page = document(get(datasette, "/-/convgraph/logs?_sort=nodes"))
    # 3, 6, 7 and 7 nodes; a tie in tree id order.
    assert forest_order(page) == [HAIKU, TRANSLATE, SOURDOUGH, HASHMAP]
    assert page.xpath("//th[@aria-sort]/@data-column") == ["nodes"]
    # Its heading now sorts the other way; another's sorts largest first.
    assert page.xpath("//th[@data-column='nodes']//a/@href") == [
        "/-/convgraph/logs?_sort_desc=nodes"
    ]
    assert page.xpath("//th[@data-column='leaves']//a/@href") == [
        "/-/convgraph/logs?_sort_desc=leaves"
    ]
    page = document(get(datasette, "/-/convgraph/logs?_sort_desc=nodes"))
    assert forest_order(page) == [SOURDOUGH, HASHMAP, TRANSLATE, HAIKU]
    page = document(get(datasette, "/-/convgraph/logs?_sort=name"))
    assert forest_order(page) == [HAIKU, TRANSLATE, HASHMAP, SOURDOUGH]


def test_the_forest_is_paged_by_datasettes_page_size(example: Path) -> None:
    datasette = served(example, settings={"default_page_size": 3})
    first = document(get(datasette, "/-/convgraph/logs"))
    assert forest_order(first) == BY_LAST_USE[:3]
    assert first.xpath("//p[@class='convgraph-pages']/a[@rel='next']/@href")[0] == (
        "/-/convgraph/logs?_sort_desc=last_datetime&_page=2"
    )
    second = document(
        get(datasette, "/-/convgraph/logs?_sort_desc=last_datetime&_page=2")
    )
    assert forest_order(second) == BY_LAST_USE[3:]
    assert second.xpath("//a[@rel='prev']/@href") == [
        "/-/convgraph/logs?_sort_desc=last_datetime"
    ]
    assert second.xpath("//a[@rel='next']") == []
    assert "Trees 4–4 of 4" in second.text_content()
    beyond = get(datasette, "/-/convgraph/logs?_page=3")
    assert beyond.status_code == 404
    assert error_message(beyond) == "Page 3 of 2: logs has 4 trees"


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("_sort=models", "Cannot sort the conversation trees by 'models'"),
        ("_sort=prompt", "Cannot sort the conversation trees by 'prompt'"),
        (
            "_sort=nodes&_sort_desc=nodes",
            "Cannot use _sort and _sort_desc at the same time",
        ),
        ("_page=0", f"_page is a whole number from 1 to {10**9}, not '0'"),
        ("_page=two", f"_page is a whole number from 1 to {10**9}, not 'two'"),
    ],
)
def test_a_bad_order_is_datasettes_400_page(
    example: Path, query: str, message: str
) -> None:
    response = get(served(example), f"/-/convgraph/logs?{query}")
    assert response.status_code == 400
    assert error_message(response) == message


def test_the_forest_search_finds_nodes_on_every_branch(example: Path) -> None:
    page = document(get(served(example), "/-/convgraph/logs?q=sourdough"))
    hits = page.xpath("//section[@id='hits']//tr[@class='hit']")
    assert [hit.xpath(".//a[@class='node-link']/text()") for hit in hits] == [
        ["01jb0sd00root0000000000000"]
    ]
    (hit,) = hits
    assert hit.xpath(".//a[@class='node-link']/@href") == [
        f"/-/convgraph/logs/{SOURDOUGH}#01jb0sd00root0000000000000"
    ]
    assert hit.xpath(".//mark/text()") == ["sourdough"]
    assert hit.xpath("td[1]")[0].text_content() == "Starting a sourdough starter"
    # The table is still there below the hits.
    assert forest_order(page) == BY_LAST_USE


def test_a_search_without_words_says_why(example: Path) -> None:
    page = document(get(served(example), "/-/convgraph/logs?q=%2A%2A"))
    assert page.xpath("//p[@id='search-error']/text()") == [
        "nothing to search for in '**': give a word with a letter or digit"
    ]
    assert page.xpath("//section[@id='hits']") == []


def test_the_statistics_are_read_again_only_when_the_file_changes(
    example: Path,
) -> None:
    datasette = served(example)
    get(datasette, "/-/convgraph/logs")
    table = files.statistics(example)
    get(datasette, "/-/convgraph/logs?_sort=nodes")
    assert files.statistics(example) is table
    # llm appends a response: the file's signature changes.
    conn = sqlite3.connect(example)
    conn.execute(
        "insert into responses (id, model, prompt, response, conversation_id,"
        " datetime_utc, parent_response_id) values ('01jb9new000000000000000000',"
        f" 'echo', 'One more', 'Yes', '{HAIKU}', '2025-12-01T00:00:00', "
        "'01jb1hk01b000000000000000')"
    )
    conn.commit()
    conn.close()
    page = document(get(datasette, "/-/convgraph/logs"))
    assert files.statistics(example) is not table
    assert forest_order(page) == [HAIKU, SOURDOUGH, TRANSLATE, HASHMAP]


# -- the tree page -------------------------------------------------------------


def test_the_tree_page_is_the_html_explorer_linking_every_node_to_its_row(
    example: Path,
) -> None:
    response = get(served(example), f"/-/convgraph/logs/{SOURDOUGH}")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    data = page_data(response.text)
    (conversation,) = data["conversations"]
    assert conversation["id"] == SOURDOUGH
    assert conversation["name"] == "Starting a sourdough starter"
    nodes = {node["id"]: node for node in conversation["graph"]["nodes"]}
    assert {node: record["source"] for node, record in nodes.items()} == SOURDOUGH_NODES
    assert nodes["01jb0sd00root0000000000000"]["prompt"] == (
        "How do I start a sourdough starter from scratch?"
    )
    assert data["links"] == {
        "nodes": {
            node: f"/logs/{table}/{node}" for node, table in SOURDOUGH_NODES.items()
        },
        "nodeLabel": "Row",
        "home": "/-/convgraph/logs",
        "homeLabel": "\u2190 logs: every tree",
    }


def test_each_node_link_leads_to_its_row(example: Path) -> None:
    datasette = served(example)
    data = page_data(get(datasette, f"/-/convgraph/logs/{SOURDOUGH}").text)
    for node, url in data["links"]["nodes"].items():
        page = document(get(datasette, url))
        assert page.xpath("//td[contains(@class,'col-id')]/text()")[0].strip() == node


@pytest.mark.parametrize(
    ("given", "location"),
    [
        # A node: its tree, the node chosen.
        (
            "01jb1hk02c000000000000000",
            f"/-/convgraph/logs/{HAIKU}#01jb1hk02c000000000000000",
        ),
        # A turn of the fork: the whole tree.
        (
            "01jb5sd06f000000000000000",
            f"/-/convgraph/logs/{SOURDOUGH}#01jb5sd06f000000000000000",
        ),
        # A fork's thread: the tree of the thread it came from.
        (FORK_THREAD, f"/-/convgraph/logs/{SOURDOUGH}"),
        # Unique prefixes, of a conversation and of a node.
        ("01jb1haiku", f"/-/convgraph/logs/{HAIKU}"),
        ("01jb2hm04", f"/-/convgraph/logs/{HASHMAP}#01jb2hm04e000000000000000"),
    ],
)
def test_any_id_of_a_tree_leads_to_its_page(
    example: Path, given: str, location: str
) -> None:
    response = get(served(example), f"/-/convgraph/logs/{given}")
    assert response.status_code == 302
    assert response.headers["location"] == location


def test_unknown_and_ambiguous_ids_are_datasettes_error_pages(example: Path) -> None:
    datasette = served(example)
    unknown = get(datasette, "/-/convgraph/logs/01jbnothing")
    assert unknown.status_code == 404
    assert (
        error_message(unknown) == "No conversation tree or node '01jbnothing' in logs"
    )
    ambiguous = get(datasette, "/-/convgraph/logs/01jb2")
    assert ambiguous.status_code == 400
    assert error_message(ambiguous).startswith("01jb2 is ambiguous: it begins 8 ids")
    missing = get(datasette, f"/-/convgraph/nothing/{HAIKU}")
    assert missing.status_code == 404
    assert error_message(missing) == "Database not found: 'nothing'"


def test_a_tree_llm_itself_wrote(llm_fork_db: dict, tmp_path: Path) -> None:
    path = Path(shutil.copy(llm_fork_db["path"], tmp_path / "logs.db"))
    datasette = served(path)
    thread, fork = llm_fork_db["thread"], llm_fork_db["fork"]
    first, second, third = llm_fork_db["turns"]
    fork_first, fork_second = llm_fork_db["fork_turns"]
    # The fork's thread and its last turn lead to the original thread's tree.
    assert get(datasette, f"/-/convgraph/logs/{fork}").headers["location"] == (
        f"/-/convgraph/logs/{thread}"
    )
    assert get(datasette, f"/-/convgraph/logs/{fork_second}").headers["location"] == (
        f"/-/convgraph/logs/{thread}#{fork_second}"
    )
    data = page_data(get(datasette, f"/-/convgraph/logs/{thread}").text)
    (conversation,) = data["conversations"]
    edges = {
        (edge["source"], edge["target"]) for edge in conversation["graph"]["edges"]
    }
    assert edges == {
        (first, second),
        (second, third),
        (first, fork_first),
        (fork_first, fork_second),
    }
    assert set(data["links"]["nodes"].values()) == {
        f"/logs/turns/{turn}"
        for turn in (first, second, third, fork_first, fork_second)
    }
    page = document(get(datasette, "/-/convgraph/logs"))
    assert forest_order(page) == [thread]


# -- links from Datasette's own pages -----------------------------------------


def tree_links(page: Any, column: str) -> list[str]:
    return page.xpath(
        f"//td[contains(@class,'col-{column}')]/a[@class='convgraph-tree']/@href"
    )


def test_conversation_cells_of_responses_link_to_their_tree(example: Path) -> None:
    page = document(get(served(example), "/logs/responses?_sort=id"))
    links = tree_links(page, "conversation_id")
    assert links == [
        f"/-/convgraph/logs/{tree}"
        for tree in [SOURDOUGH] * 4 + [HAIKU] * 3 + [HASHMAP] * 7 + [TRANSLATE] * 6
    ]
    # The foreign key keeps its link to the conversation's row and its label.
    (cell,) = page.xpath(
        "//tr[td[contains(@class,'col-id')]//a[text()='01jb1hk00root000000000000']]"
        "/td[contains(@class,'col-conversation_id')]"
    )
    assert cell.xpath("a/@href") == [
        f"/logs/conversations/{HAIKU}",
        f"/-/convgraph/logs/{HAIKU}",
    ]
    assert cell.text_content().split() == ["Autumn", "haiku", HAIKU, "tree"]


def test_turn_and_thread_cells_link_to_their_tree(example: Path) -> None:
    datasette = served(example)
    turns = document(get(datasette, "/logs/turns?_sort=id"))
    assert tree_links(turns, "thread_id") == [
        f"/-/convgraph/logs/{SOURDOUGH}",
        f"/-/convgraph/logs/{FORK_THREAD}",
        f"/-/convgraph/logs/{FORK_THREAD}",
    ]
    # A row's page draws its id through render_cell too.
    row = document(get(datasette, "/logs/turns/01jb5sd05e000000000000000"))
    assert tree_links(row, "id") == ["/-/convgraph/logs/01jb5sd05e000000000000000"]
    thread = document(get(datasette, f"/logs/threads/{FORK_THREAD}"))
    assert tree_links(thread, "id") == [f"/-/convgraph/logs/{FORK_THREAD}"]
    conversation = document(get(datasette, f"/logs/conversations/{HAIKU}"))
    assert tree_links(conversation, "id") == [f"/-/convgraph/logs/{HAIKU}"]


def action_links(page: Any) -> list[tuple[str, str]]:
    return [
        (link.get("href"), link.text_content())
        for link in page.xpath("//div[contains(@class,'dropdown-menu')]//a")
    ]


def test_tables_of_trees_and_the_database_offer_the_forest(example: Path) -> None:
    datasette = served(example)
    forest = ("/-/convgraph/logs", "View as conversation trees")
    for table in ("responses", "turns", "threads", "conversations"):
        assert forest in action_links(document(get(datasette, f"/logs/{table}")))
    assert forest not in action_links(document(get(datasette, "/logs/parts")))
    assert forest in action_links(document(get(datasette, "/logs")))


# -- permissions, and databases that are not llm's ----------------------------


def test_an_actor_datasette_refuses_gets_its_403_page(example: Path) -> None:
    datasette = served(
        example, metadata={"databases": {"logs": {"allow": {"id": "alice"}}}}
    )
    for path in (
        "/-/convgraph/logs",
        f"/-/convgraph/logs/{HAIKU}",
        "/-/convgraph/logs/01jb1hk01b",
    ):
        response = get(datasette, path)
        assert response.status_code == 403
        assert (
            error_message(response)
            == "You do not have permission to view this database"
        )
        refused = get(datasette, path, cookies=as_actor(datasette, {"id": "bob"}))
        assert refused.status_code == 403
    alice = as_actor(datasette, {"id": "alice"})
    assert (
        forest_order(document(get(datasette, "/-/convgraph/logs", cookies=alice)))
        == BY_LAST_USE
    )
    assert (
        get(datasette, f"/-/convgraph/logs/{HAIKU}", cookies=alice).status_code == 200
    )


def test_a_table_visible_in_a_refused_database_offers_no_forest(example: Path) -> None:
    metadata = {
        "databases": {
            "logs": {"allow": {"id": "alice"}, "tables": {"responses": {"allow": True}}}
        }
    }
    datasette = served(example, metadata=metadata)
    page = document(get(datasette, "/logs/responses"))
    assert ("/-/convgraph/logs", "View as conversation trees") not in action_links(page)
    assert get(datasette, "/-/convgraph/logs").status_code == 403


def test_a_database_that_is_not_llms_is_left_alone(tmp_path: Path) -> None:
    # Tables named as llm's, but not its database: no message store, no
    # responses.
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("create table threads (id text primary key, name text)")
    conn.execute("create table conversations (id text primary key, name text)")
    conn.execute("insert into threads values ('t1', 'a thread')")
    conn.execute("insert into conversations values ('c1', 'a conversation')")
    conn.commit()
    conn.close()
    datasette = served(other)
    for path in ("/-/convgraph/other", "/-/convgraph/other/t1"):
        response = get(datasette, path)
        assert response.status_code == 404
        assert (
            error_message(response)
            == "other is not an llm database: no conversation trees"
        )
    for page in (
        "/other",
        "/other/threads",
        "/other/threads/t1",
        "/other/conversations/c1",
    ):
        text = get(datasette, page).text
        assert "convgraph" not in text
        assert "View as conversation trees" not in text


def test_a_database_in_memory_is_left_alone() -> None:
    datasette = Datasette(memory=True)
    response = get(datasette, "/-/convgraph/_memory")
    assert response.status_code == 404


def test_nothing_is_written_to_the_file_or_beside_it(example: Path) -> None:
    before = file_digest(example)
    datasette = served(example)
    for path in (
        "/-/convgraph/logs",
        "/-/convgraph/logs?q=haiku",
        f"/-/convgraph/logs/{HAIKU}",
        "/-/convgraph/logs/01jb1hk01b",
        "/logs/responses",
        "/logs/turns",
    ):
        assert get(datasette, path).status_code in (200, 302)
    assert file_digest(example) == before
    assert sorted(path.name for path in example.parent.iterdir()) == ["logs.db"]


# -- the explorer's hook -------------------------------------------------------


def test_a_page_written_to_a_file_links_nowhere() -> None:
    from convgraph.model.tree import ConversationTree

    tree = ConversationTree.from_edges(
        [("r", "a")], {"r": {"prompt": "Hi"}}, tree_id="c1"
    )
    assert "links" not in page_data("\n".join(generate_html(tree)))
    links = PageLinks(nodes={"r": "/db/responses/r"}, home="/-/convgraph/db")
    data = page_data("\n".join(generate_html(tree, links=links)))
    assert data["links"] == {
        "nodes": {"r": "/db/responses/r"},
        "nodeLabel": "Record",
        "home": "/-/convgraph/db",
        "homeLabel": "Back",
    }


# -- the benchmark group ---------------------------------------------------------


def test_the_benchmark_group_plans_and_runs_the_pages(tmp_path: Path) -> None:
    from benchmarks import datasette_pages, suite, tasks

    # 200 trees: two pages of 100.
    options = suite.Options(groups=["datasette"], sizes=[2000], data_dir=tmp_path)
    rows = suite.plan(options)
    assert [
        (
            row.shape,
            row.operation,
            row.convgraph.name,
            row.baseline and row.baseline.name,
        )
        for row in rows
    ] == [
        (f"{kind} linear", operation, ours, theirs)
        for kind in ("legacy", "store")
        for operation, ours, theirs in [
            ("forest page, first request", "datasette.forest", "convgraph.stats"),
            ("forest page, sorted, page 2", "datasette.forest", None),
            ("tree page", "datasette.tree", "convgraph.load_tree"),
        ]
    ]
    assert {"datasette.forest", "datasette.tree"} <= set(tasks.load())
    assert "datasette.forest" in tasks.TIMERS
    # Each task answers its page (a timer gives the seconds it timed).
    for row in rows[:3]:
        params = dict(param.split("=", 1) for param in row.convgraph.params)
        operation = tasks.TASKS[row.convgraph.name](**params)
        if row.convgraph.name in tasks.TIMERS:
            assert operation(1) > 0
        else:
            assert operation() == 200
    assert datasette_pages.SHAPE == "linear"


# -- addresses -----------------------------------------------------------------


def test_links_follow_datasettes_base_url(example: Path) -> None:
    datasette = served(example, settings={"base_url": "/under/"})
    page = document(get(datasette, "/-/convgraph/logs"))
    assert page.xpath(f"//tr[@data-tree='{HAIKU}']//a[@class='tree-link']/@href") == [
        f"/under/-/convgraph/logs/{HAIKU}"
    ]
    moved = get(datasette, "/-/convgraph/logs/01jb1hk01b")
    assert moved.headers["location"] == (
        f"/under/-/convgraph/logs/{HAIKU}#01jb1hk01b000000000000000"
    )
    data = page_data(get(datasette, f"/-/convgraph/logs/{HAIKU}").text)
    assert data["links"]["home"] == "/under/-/convgraph/logs"
    assert data["links"]["nodes"]["01jb1hk00root000000000000"] == (
        "/under/logs/responses/01jb1hk00root000000000000"
    )


def test_ids_that_are_no_plain_words_travel_tilde_encoded(tmp_path: Path) -> None:
    from tests.databases import add_response, legacy_database

    path = tmp_path / "odd.db"
    conn = legacy_database(path)
    add_response(
        conn, "n/1", "talk/1.json", "First", datetime_utc="2025-01-01T00:00:00"
    )
    add_response(
        conn,
        "n 2",
        "talk/1.json",
        "Second",
        parent="n/1",
        datetime_utc="2025-01-01T00:01:00",
    )
    conn.commit()
    conn.close()
    datasette = served(path)
    table = document(get(datasette, "/odd/responses?_sort=id"))
    tree = "/-/convgraph/odd/talk~2F1~2Ejson"
    assert tree_links(table, "conversation_id") == [tree, tree]
    page = document(get(datasette, "/-/convgraph/odd"))
    assert page.xpath("//a[@class='tree-link']/@href") == [tree]
    data = page_data(get(datasette, tree).text)
    assert data["links"]["nodes"] == {
        "n/1": "/odd/responses/n~2F1",
        "n 2": "/odd/responses/n+2",
    }
    assert get(datasette, "/-/convgraph/odd/n+2").headers["location"] == (
        f"{tree}#n%202"
    )
    row = document(get(datasette, "/odd/responses/n~2F1"))
    assert tree_links(row, "id") == ["/-/convgraph/odd/n~2F1"]


def test_a_statistic_shows_as_the_page_writes_it() -> None:
    from convgraph.datasette.pages import shown

    assert [shown(v) for v in (12345, 1.25, ["echo", "gpt-4o"], None)] == [
        "12,345",
        "1.25",
        "echo, gpt-4o",
        "",
    ]
    assert shown("2025-09-27T09:01:00+00:00") == "2025-09-27 09:01:00"
