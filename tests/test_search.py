"""`convgraph search` and `convgraph.search.search`: exact hits on known
forests (a word only on an abandoned branch, only in a response, in a tool
call's arguments, in Japanese and Russian, hostile query syntax as text), the
index following what llm logs and what `convgraph delete` removes, both
generations and a chat export, and the database never changed by a search.
Every test keeps its indexes in a cache directory of its own.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from convgraph.search import search
from convgraph.search.index import INDEX_SUFFIX, META_FILE, index_path
from convgraph.store import migrate
from tests.chat_exports import chatgpt_branches, write_json
from tests.databases import LlmLog, add_response, legacy_database, timestamp
from tests.helpers import file_digest, run

#: A legacy forest: (id, parent, prompt, response), in log order. In tree
#: "t" the branch under "b" was left for the one under "c" (logged last);
#: tree "u" holds the hostile text and the other scripts.
FOREST = [
    ("t", "root", None, "Plan a trip", "Where to?"),
    ("t", "b", "root", "What about the zebra park?", "It is closed."),
    ("t", "c", "root", "Then the museum", "The quokka exhibit opens at nine."),
    ("t", "d", "c", "Tickets for the museum?", "Ten euros for the museum."),
    ("u", "q", None, 'say "hi" * NEAR( AND - a:b ^x', "done"),
    ("u", "jp", "q", "東京の天気はどうですか", "晴れです"),
    ("u", "ru", "jp", "Привет, мир! Как дела?", "Хорошо, café"),
    ("u", "esc", "ru", "a pelican\x1b]0;owned\x07 sets the title", "no"),
]


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's cache directory, one per test: where the indexes go."""
    directory = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(directory))
    return directory


@pytest.fixture
def forest_db(tmp_path: Path) -> Path:
    path = tmp_path / "logs.db"
    conn = legacy_database(path, with_parent=True)
    for index, (tree, node, parent, prompt, response) in enumerate(FOREST):
        add_response(
            conn,
            node,
            tree,
            prompt,
            parent=parent,
            response=response,
            datetime_utc=timestamp(index),
            model="gpt-4o" if tree == "t" else "echo",
        )
    conn.commit()
    conn.close()
    migrate(path)
    return path


def hit_ids(db: Path | str, query: str, **options: object) -> list[str]:
    return [hit.id for hit in search(db, query, **options)]  # type: ignore[arg-type]


def test_a_word_only_on_an_abandoned_branch(forest_db):
    (hit,) = search(forest_db, "zebra")
    assert (hit.tree_id, hit.id, hit.depth, hit.active) == ("t", "b", 1, False)
    assert hit.fields == ["prompt"]
    assert hit.snippet == "What about the zebra park?"
    assert [hit.snippet[start:end] for start, end in hit.marks] == ["zebra"]


def test_abandoned_keeps_only_the_hits_off_the_active_path(forest_db):
    # "museum" lies in c and d, both on the active path: nothing abandoned.
    assert sorted(hit_ids(forest_db, "museum")) == ["c", "d"]
    assert [hit.active for hit in search(forest_db, "museum")] == [True, True]
    assert hit_ids(forest_db, "museum", abandoned=True) == []
    assert hit_ids(forest_db, "closed", abandoned=True) == ["b"]


def test_ranking_puts_the_node_with_more_of_the_word_first(forest_db):
    # d says "museum" twice, c once, in texts of about the same length.
    assert hit_ids(forest_db, "museum") == ["d", "c"]
    assert hit_ids(forest_db, "museum", limit=1) == ["d"]


def test_a_word_only_in_a_response(forest_db):
    (hit,) = search(forest_db, "QUOKKA")
    assert (hit.id, hit.depth, hit.active, hit.fields) == ("c", 1, True, ["response"])
    assert hit.model == "gpt-4o"
    assert hit.datetime_utc == timestamp(2)


def test_every_word_must_occur(forest_db):
    assert hit_ids(forest_db, "museum tickets") == ["d"]
    assert hit_ids(forest_db, "museum zebra") == []


def test_japanese_words_are_found_inside_a_sentence(forest_db):
    (hit,) = search(forest_db, "東京")
    assert (hit.id, hit.depth) == ("jp", 1)
    assert hit.snippet == "東京の天気はどうですか"
    assert hit.marks == [[0, 2]]
    assert hit_ids(forest_db, "天気") == ["jp"]
    assert hit_ids(forest_db, "晴れ") == ["jp"]
    assert hit_ids(forest_db, "大阪") == []


def test_russian_words_fold_case_and_diacritics(forest_db):
    assert hit_ids(forest_db, "привет") == ["ru"]
    assert hit_ids(forest_db, "МИР") == ["ru"]
    (hit,) = search(forest_db, "cafe")
    assert hit.fields == ["response"]
    assert [hit.snippet[start:end] for start, end in hit.marks] == ["café"]


@pytest.mark.parametrize(
    "query",
    ['"hi"', 'say "hi', "NEAR(", "AND", "a:b", "^x", "NEAR( AND", "hi*"],
)
def test_fts5_syntax_in_a_query_is_text(forest_db, query):
    assert hit_ids(forest_db, query) == ["q"]


@pytest.mark.parametrize("query", ['"', "*", "-", ":", "^", "( )"])
def test_a_query_without_a_word_is_one_line_and_status_2(forest_db, query):
    result = run("search", "--db", forest_db, "--", query, expect=2)
    assert result.stderr.startswith("Error: nothing to search for")
    assert result.stderr.count("\n") == 1


def test_query_syntax_takes_the_engines_language(forest_db):
    # tantivy's query language: OR, a field, a phrase, a word left out.
    assert sorted(hit_ids(forest_db, "zebra OR quokka", fts=True)) == ["b", "c"]
    assert hit_ids(forest_db, '"the museum"', query_syntax=True) == ["d", "c"]
    assert hit_ids(forest_db, "museum -tickets", query_syntax=True) == ["c"]
    assert hit_ids(forest_db, "response : museum", fts=True) == ["d"]
    for option in ("--fts", "--query-syntax"):
        result = run("search", "--db", forest_db, option, "NEAR(", expect=2)
        assert result.stderr == (
            "Error: not a query in the search engine's language: Syntax Error: NEAR(\n"
        )


def test_a_word_with_a_star_is_a_prefix_in_the_engines_language(forest_db):
    # Issue 45: tantivy's parser reads `museu*` as `museu`.
    assert sorted(hit_ids(forest_db, "museu*", query_syntax=True)) == ["c", "d"]
    (hit,) = search(forest_db, "tick*", query_syntax=True)
    assert (hit.id, hit.fields, hit.snippet) == (
        "d",
        ["prompt"],
        "Tickets for the museum?",
    )
    assert [hit.snippet[start:end] for start, end in hit.marks] == ["Tickets"]
    (hit,) = search(forest_db, "quokka exhib*", query_syntax=True)
    assert [hit.snippet[start:end] for start, end in hit.marks] == ["quokka", "exhibit"]
    assert hit_ids(forest_db, "museu* -ticket*", query_syntax=True) == ["c"]
    assert hit_ids(forest_db, "response:museu*", query_syntax=True) == ["d"]
    assert sorted(hit_ids(forest_db, "zeb* OR quok*", query_syntax=True)) == ["b", "c"]
    assert hit_ids(forest_db, "CAF*", query_syntax=True) == ["ru"]  # café, folded
    # A phrase's prefix and nearness stay the engine's; in text, * is a sign.
    assert hit_ids(forest_db, '"the muse"*', query_syntax=True) == ["d", "c"]
    assert hit_ids(forest_db, '"tickets museum"~2', query_syntax=True) == ["d"]
    assert hit_ids(forest_db, "museu*") == []
    result = run("search", "--db", forest_db, "--query-syntax", "museu*")
    assert "Tickets for the museum?" in result.stdout


def test_no_regular_expression_of_ones_own(forest_db):
    result = run(
        "search", "--db", forest_db, "--query-syntax", "prompt:/mus.*/", expect=2
    )
    assert result.stderr == (
        "Error: not a query in the search engine's language:"
        " Unsupported query: Regex queries are not allowed.\n"
    )


def test_the_command_prints_records_and_a_persons_form(forest_db):
    records = json.loads(run("search", "--db", forest_db, "zebra", "--json").stdout)
    assert records == [
        {
            "rank": 1,
            "score": records[0]["score"],
            "tree_id": "t",
            "id": "b",
            "depth": 1,
            "active": False,
            "sidechain": False,
            "model": "gpt-4o",
            "datetime_utc": timestamp(1),
            "source": "responses",
            "fields": ["prompt"],
            "snippet": "What about the zebra park?",
            "marks": [[15, 20]],
        }
    ]
    assert records[0]["score"] > 0
    lines = run("search", "--db", forest_db, "zebra").stdout.splitlines()
    assert lines == [
        "1.  t  b  depth 1  abandoned  gpt-4o  2025-09-27 10:00",
        "   What about the zebra park?",
    ]
    rows = run("search", "--db", forest_db, "museum", "-n", "1", "--csv").stdout
    assert rows.splitlines()[0] == (
        "rank,score,tree_id,id,depth,active,sidechain,model,datetime_utc,source,"
        "fields,snippet,marks"
    )
    assert rows.splitlines()[1].split(",")[2:6] == ["t", "d", "2", "True"]
    result = run("search", "--db", forest_db, "nothing-here")
    assert (result.stdout, result.stderr) == ("", "no node matches\n")


def test_stored_control_characters_show_as_symbols_and_words_are_styled(forest_db):
    from convgraph.cli.search import _snippet

    lines = run("search", "--db", forest_db, "pelican").stdout.splitlines()
    assert lines[1] == "   a pelican␛]0;owned␇ sets the title"
    (hit,) = search(forest_db, "pelican")
    assert hit.snippet == "a pelican\x1b]0;owned\x07 sets the title"  # JSON: exact
    styled = _snippet(hit.snippet, hit.marks, styled=True)
    assert styled == "a \x1b[33m\x1b[1mpelican\x1b[0m␛]0;owned␇ sets the title"
    table = run("search", "--db", forest_db, "pelican", "--table").stdout
    assert table.splitlines()[0].split() == [
        "rank", "score", "tree_id", "id", "depth", "active", "sidechain",
        "model", "datetime_utc", "source", "fields", "snippet",
    ]  # fmt: skip


def test_searching_never_changes_the_database(forest_db, cache):
    before = file_digest(forest_db)
    run("search", "--db", forest_db, "museum")
    built = index_path(forest_db).stat().st_mtime_ns
    run("search", "--db", forest_db, "zebra")
    assert file_digest(forest_db) == before
    # The file untouched: the index is current, and not written again.
    assert index_path(forest_db).stat().st_mtime_ns == built
    assert (index_path(forest_db) / META_FILE).exists()
    # Nothing beside the user's file: the index is in the cache.
    assert sorted(path.name for path in forest_db.parent.iterdir()) == [
        "logs.db",
        "xdg-cache",
    ]
    assert index_path(forest_db).parent == cache / "convgraph" / "search"
    assert index_path(forest_db).name.endswith(INDEX_SUFFIX)


def test_a_note_changes_the_file_but_not_the_hits(forest_db):
    assert hit_ids(forest_db, "tickets") == ["d"]
    run("note", "--db", forest_db, "d", "the tickets answer")
    (hit,) = search(forest_db, "tickets")
    assert (hit.id, hit.depth, hit.active) == ("d", 2, True)


def test_a_deleted_node_leaves_the_index(forest_db):
    assert hit_ids(forest_db, "tickets") == ["d"]
    run("delete", "--db", forest_db, "d")
    assert hit_ids(forest_db, "tickets") == []
    assert sorted(hit_ids(forest_db, "museum")) == ["c"]


def test_the_index_follows_llm_logging_and_a_fork(tmp_path):
    with LlmLog(tmp_path) as log:
        first = log.prompt("Tell me about walruses")
        thread = log.thread_of(first)
        before = file_digest(log.path)
        (hit,) = search(log.path, "walruses")
        assert (hit.id, hit.tree_id, hit.depth, hit.active) == (first, thread, 0, True)
        assert hit.source == "turns"
        assert file_digest(log.path) == before
        second = log.prompt("More walruses please", continue_conversation=thread)
        _, forked = log.fork(first, "Walruses or seals?")
        hits = search(log.path, "walruses")
        by_id = {hit.id: (hit.tree_id, hit.depth, hit.active) for hit in hits}
        # The fork, logged last, is the active branch; the second prompt
        # is left on an abandoned one. The echo model repeats each prompt.
        assert by_id == {
            first: (thread, 0, True),
            second: (thread, 1, False),
            forked: (thread, 1, True),
        }
        assert hit_ids(log.path, "seals", abandoned=True) == []
        assert hit_ids(log.path, "walruses", abandoned=True) == [second]


def test_a_tool_calls_arguments_are_searched(tmp_path):
    with LlmLog(tmp_path) as log:
        turns = log.tool_chain(
            "Shout the animal", [{"name": "shout", "arguments": {"word": "pangolin"}}]
        )
        (hit,) = search(log.path, "pangolin")
        # The chain is one node, named by its last call.
        assert hit.id == turns[-1]
        assert "parts" in hit.fields
        assert hit_ids(log.path, "shout") == [turns[-1]]


def test_a_chat_export_is_indexed_once_while_unchanged(tmp_path):
    export = write_json(tmp_path / "conversations.json", [chatgpt_branches()])
    (hit,) = search(export, "burrito")
    assert (hit.id, hit.depth, hit.active, hit.source) == ("a1b", 0, True, "chatgpt")
    (hit,) = search(export, "monoid")
    assert (hit.id, hit.depth, hit.active) == ("a1", 0, False)
    (hit,) = search(export, "box")
    assert (hit.id, hit.depth, hit.active, hit.fields) == (
        "a2",
        1,
        False,
        ["response"],
    )
    index = index_path(export)
    built = index.stat().st_mtime_ns
    assert hit_ids(export, "simpler") == ["a2"]
    assert index.stat().st_mtime_ns == built  # reused, not written again
    # The export changed: indexed again.
    changed = chatgpt_branches()
    changed["mapping"]["u2"]["message"]["content"]["parts"] = ["Simpler, ocelot?"]
    write_json(export, [changed])
    os.utime(export, ns=(built + 10**9, built + 10**9))
    assert hit_ids(export, "ocelot") == ["a2"]
    assert hit_ids(export, "simpler") == ["a2"]


def test_an_upgraded_file_is_searched_in_both_generations(tmp_path):
    conn = legacy_database(tmp_path / "logs.db", with_parent=False)
    add_response(
        conn, "old", "conv", "Name an otter", response="Otto", datetime_utc=timestamp(0)
    )
    conn.commit()
    conn.close()
    with LlmLog(tmp_path) as log:
        new = log.prompt("Another otter name?", continue_conversation="conv")
        hits = {hit.id: hit for hit in search(log.path, "otter")}
        assert set(hits) == {"old", new}
        assert (hits["old"].source, hits[new].source) == ("responses", "turns")
        assert hits["old"].tree_id == hits[new].tree_id
        assert (hits["old"].depth, hits[new].depth) == (0, 1)
        # A node's text is its own, not the history sent with it.
        assert hit_ids(log.path, "otto") == ["old"]


def test_a_read_only_directory_keeps_the_index_in_the_cache(
    forest_db, tmp_path, monkeypatch
):
    from tests.helpers import run_on_read_only_mount

    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    before = file_digest(forest_db)
    done = run_on_read_only_mount(
        forest_db.parent,
        mounted,
        "search",
        "--db",
        mounted / "logs.db",
        "zebra",
        "--nl",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["id"] == "b"
    (index,) = (cache / "convgraph" / "search").glob(f"*{INDEX_SUFFIX}")
    assert index.name.startswith("logs.db-")
    assert file_digest(forest_db) == before


@pytest.mark.slow
def test_the_search_group_plans_its_rows_on_known_tasks(tmp_path):
    from benchmarks import suite, tasks

    options = suite.Options(groups=["search"], sizes=[200], data_dir=tmp_path)
    rows = suite.plan(options)
    sides = [
        (
            row.shape,
            row.operation,
            row.convgraph.name,
            row.baseline and row.baseline.name,
        )
        for row in rows
    ]
    each = (
        ("first search (read + index built)", "search.build", "fts5.build"),
        ("query, rare word", "search.query", "llm logs -q"),
        ("query, common word", "search.query", "llm logs -q"),
        ("query, common word, --model 'gpt-4*'", "search.query", None),
        ("search after 10 more calls", "search.update", None),
    )
    migrated = ("search after one response with a parent, migrated",)
    assert sides == [
        *[("legacy", *row) for row in each],
        ("legacy", *migrated, "search.update_migrated", None),
        *[("store", *row) for row in each],
        ("store", "search after one `llm -c`", "search.update_store", None),
        ("store", "search after a fork", "search.update_store", None),
    ]
    timed = {
        "search.build",
        "fts5.build",
        "search.update",
        "search.update_migrated",
        "search.update_store",
    }
    assert timed | {"search.query"} <= set(tasks.load())
    assert timed <= tasks.TIMERS
