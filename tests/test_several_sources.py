"""Several sources read as one forest: an llm file written by llm itself, a
ChatGPT export and a Claude Code project folder, through `convgraph.open`
and every reading command with repeated `--db`; the saved list of sources
(`convgraph sources`); ids held by two sources; the Parquet dataset
partitioned by source."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import convgraph
from tests.chat_exports import (
    chatgpt_branches,
    chatgpt_tools,
    claude_export,
    write_json,
)
from tests.databases import LlmLog
from tests.helpers import run

PROJECT = Path(__file__).parent / "data" / "agents" / "claude-code" / "projects"
AGENTS = PROJECT / "-home-ada-tree"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path | str]:
    """The three sources, and the llm conversation's thread and turns."""
    directory = tmp_path_factory.mktemp("several")
    export = write_json(directory / "chatgpt.json", [chatgpt_branches()])
    (directory / "llm").mkdir()
    with LlmLog(directory / "llm") as log:
        first = log.prompt("What is a tree?")
        thread = log.thread_of(first)
        second = log.prompt("And a forest?", continue_conversation=thread)
    return {
        "llm": log.path,
        "chatgpt": export,
        "agents": AGENTS,
        "thread": thread,
        "first": first,
        "second": second,
    }


@pytest.fixture(autouse=True)
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty configuration folder of the test's own."""
    monkeypatch.setenv("CONVGRAPH_CONFIG_DIR", str(tmp_path / "config"))
    return tmp_path / "config"


def both(files: dict[str, Path | str]) -> list[str]:
    return ["--db", str(files["llm"]), "--db", str(files["chatgpt"])]


def lines(*args: object) -> list[str]:
    return run(*args).stdout.splitlines()


def test_three_sources_are_one_forest_each_node_saying_its_source(files):
    paths = [str(files[name]) for name in ("llm", "chatgpt", "agents")]
    with convgraph.open(paths) as logs:
        forest = logs.forest(text=False)
        assert logs.source.sources.keys() == {"logs", "chatgpt", "home-ada-tree"}
    nodes = forest.nodes
    counts = nodes.groupby(["origin", "tree_id"], observed=True).size().to_dict()
    assert counts == {
        ("chatgpt", "conv-monad"): 4,
        ("home-ada-tree", "s1"): 6,
        ("logs", files["thread"]): 2,
    }
    assert str(nodes["origin"].dtype) == "category"
    assert forest.problems == []
    # Each source's nodes as it alone gives them, ids as each app wrote them.
    for name, path in zip(("logs", "chatgpt", "home-ada-tree"), paths, strict=True):
        with convgraph.open(path) as alone:
            ids = alone.forest(text=False).nodes["id"].astype(str).tolist()
        assert sorted(nodes["id"][nodes["origin"] == name].astype(str)) == sorted(ids)
    # One tree read by id says its source too.
    with convgraph.open(paths) as logs:
        tree = logs.tree("conv-monad")
        assert {tree.nodes[node]["origin"] for node in tree} == {"chatgpt"}
        assert logs.tree(files["second"]).graph["tree_id"] == files["thread"]


def test_every_reading_command_takes_two_databases(files):
    two = both(files)
    export = ["--db", str(files["chatgpt"])]
    # A command about one tree answers as the source holding it alone does.
    for words in (
        ["tree", "conv-monad"],
        ["path", "a2e"],
        ["children", "a1b"],
        ["siblings", "a1"],
        ["descendants", "a1b"],
        ["roots", "conv-monad"],
        ["leaves", "conv-monad"],
        ["diff", "a2", "a2e"],
        ["compare", "a1b"],
        ["transcript", "a2e"],
    ):
        assert run(*words, *two).stdout == run(*words, *export).stdout, words
    assert lines("path", files["second"], *two) == [files["first"], files["second"]]
    listed = json.loads(run("conversations", "--json", *two).stdout)
    assert [row["tree_id"] for row in listed] == ["conv-monad", files["thread"]]
    stats = json.loads(run("stats", "--json", *two).stdout)
    assert [(row["tree_id"], row["nodes"]) for row in stats] == [
        ("conv-monad", 4),
        (files["thread"], 2),
    ]
    assert lines("check", *two) == ["no problems found"]
    pairs = json.loads(run("pairs", "--json", *two).stdout)
    assert [(pair["chosen_id"], pair["rejected_id"]) for pair in pairs] == [
        ("a1b", "a1")
    ]
    hits = run("search", "forest", *two).stdout
    assert files["second"] in hits and "conv-monad" not in hits
    assert "a1b" in run("search", "monad", *two).stdout
    document = json.loads(run("export", "--format", "json", *two).stdout)
    origins = {node["id"]: node["origin"] for node in document["nodes"]}
    assert origins == {
        "a1": "chatgpt",
        "a1b": "chatgpt",
        "a2": "chatgpt",
        "a2e": "chatgpt",
        files["first"]: "logs",
        files["second"]: "logs",
    }


def test_source_filters_by_app_or_by_name_and_stats_groups_by_it(files):
    two = both(files)

    def trees(*words: str) -> list[str]:
        found = json.loads(run("conversations", "--json", *words, *two).stdout)
        return [row["tree_id"] for row in found]

    assert trees("--source", "logs") == [files["thread"]]
    assert trees("--source", "turns") == [files["thread"]]
    assert trees("--source", "chatgpt") == ["conv-monad"]
    assert trees("--source", "logs", "--source", "chatgpt") == [
        "conv-monad",
        files["thread"],
    ]
    # Search filters alike, by the app or by the source's name.
    for source, hits in (("logs", 0), ("turns", 0), ("chatgpt", 2)):
        found = run("search", "monad", "--source", source, "--json", *two).stdout
        assert len(json.loads(found)) == hits
    found = run("search", "tree", "--source", "logs", "--json", *two).stdout
    assert [hit["id"] for hit in json.loads(found)] == [files["first"]]
    wrong = run("conversations", "--source", "nope", *two, expect=2).stderr
    assert wrong.startswith("Error: --source nope: no such source; one of responses,")
    assert wrong.rstrip().endswith("copilot-cli, logs, chatgpt")
    pytest.importorskip("genai_prices")
    usage = json.loads(run("stats", "--by", "source", "--json", *two).stdout)
    assert [(row["source"], row["conversations"], row["nodes"]) for row in usage] == [
        ("chatgpt", 1, 4),
        ("logs", 1, 2),
    ]
    # One file: the app's source.
    alone = run("stats", "--by", "source", "--json", "--db", files["llm"]).stdout
    assert [row["source"] for row in json.loads(alone)] == ["turns"]


def test_the_saved_list_is_read_without_db(files, config, monkeypatch):
    monkeypatch.setenv("LLM_USER_PATH", str(Path(files["llm"]).parent))
    # No list: llm's logs.db alone, as before.
    assert lines("sources", "list", "--tsv") == [
        "name\tpath",
        f"llm\t{files['llm']}",
    ]
    assert lines("tree", "--json") == lines("tree", "--json", "--db", files["llm"])
    assert not config.exists()
    added = run("sources", "add", files["chatgpt"]).stderr
    assert added == f"added {files['chatgpt']} as chatgpt\n"
    run("sources", "add", str(AGENTS), "--name", "laptop")
    assert lines("sources", "list", "--tsv")[1:] == [
        f"llm\t{files['llm']}",
        f"chatgpt\t{files['chatgpt']}",
        f"laptop\t{AGENTS}",
    ]
    listed = json.loads(run("conversations", "--json").stdout)
    assert [row["tree_id"] for row in listed] == ["conv-monad", "s1", files["thread"]]
    assert lines("leaves", "s1") == lines("leaves", "s1", "--db", AGENTS)
    laptop = json.loads(run("stats", "--source", "laptop", "--json").stdout)
    assert [row["tree_id"] for row in laptop] == ["s1"]
    # Refused: a path listed already, a name taken or unsafe, no such source.
    for words, message in (
        (
            ["add", files["chatgpt"]],
            f"{files['chatgpt']} is in the list already, as chatgpt",
        ),
        (["add", files["llm"]], f"{files['llm']} is in the list already, as llm"),
        (["add", str(PROJECT), "--name", "laptop"], "--name laptop: the name is taken"),
        (
            ["add", str(PROJECT), "--name", "a/b"],
            "--name a/b: the name is not letters, digits, . _ -",
        ),
        (["remove", "desktop"], "desktop: no source of that name or path in the list"),
    ):
        assert run("sources", *words, expect=2).stderr == f"Error: {message}\n"
    assert run("sources", "remove", str(AGENTS)).stderr == "removed laptop\n"
    assert run("sources", "remove", "llm").stderr == "removed llm\n"
    # One source left: read as `--db` names it, with no origin column.
    assert lines("tree", "--json") == lines("tree", "--json", "--db", files["chatgpt"])
    run("sources", "remove", "chatgpt")
    # An empty list is no list: llm's logs.db.
    assert lines("tree", "--json") == lines("tree", "--json", "--db", files["llm"])
    assert json.loads((config / "sources.json").read_text()) == {"sources": []}


def test_llm_default_left_out_where_missing(files, tmp_path, monkeypatch):
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "nowhere"))
    run("sources", "add", files["chatgpt"])
    run("sources", "add", str(AGENTS))
    listed = json.loads(run("conversations", "--json").stdout)
    assert [row["tree_id"] for row in listed] == ["conv-monad", "s1"]
    run("sources", "remove", "chatgpt")
    run("sources", "remove", "home-ada-tree")
    message = run("conversations", expect=2).stderr
    assert message.startswith(f"Error: no llm database at {tmp_path / 'nowhere'}")


def test_a_source_that_cannot_be_read_is_named(files, tmp_path, monkeypatch):
    monkeypatch.setenv("LLM_USER_PATH", str(Path(files["llm"]).parent))
    run("sources", "add", files["chatgpt"])
    gone = write_json(tmp_path / "old.json", [chatgpt_branches()])
    run("sources", "add", gone, "--name", "old")
    gone.unlink()
    message = run("conversations", "--db", files["llm"], "--db", gone, expect=2)
    assert message.stderr == f"Error: source old: no database file at {gone}\n"
    assert run("tree", expect=2).stderr == message.stderr


def test_same_conversation_in_two_exports_is_one_tree(files, tmp_path):
    copy = write_json(tmp_path / "again.json", [chatgpt_branches()])
    two = ["--db", str(files["chatgpt"]), "--db", str(copy)]
    assert lines("tree", "conv-monad", *two) == lines(
        "tree", "conv-monad", "--db", files["chatgpt"]
    )
    stats = json.loads(run("stats", "--json", *two).stdout)
    assert [(row["tree_id"], row["nodes"]) for row in stats] == [("conv-monad", 4)]


def test_an_id_two_apps_hold_is_kept_twice_and_named(files, tmp_path):
    claude = claude_export()
    claude[0]["uuid"] = "conv-monad"
    other = write_json(tmp_path / "claude.json", claude)
    two = ["--db", str(files["chatgpt"]), "--db", str(other)]
    error = run("tree", "conv-monad", *two, expect=2).stderr
    assert error == (
        "Error: conv-monad is in several sources (chatgpt, claude): read one"
        " of them with --db PATH\n"
    )
    problems = json.loads(run("check", "--json", *two, expect=1).stdout)
    assert [problem["kind"] for problem in problems] == ["id-clash"]


def test_parquet_of_several_sources_is_partitioned_by_source(files, tmp_path):
    pytest.importorskip("pyarrow")
    target = tmp_path / "dataset"
    run("export", "--format", "parquet", "-o", target, *both(files))
    held = sorted(str(path.relative_to(target)) for path in target.rglob("*.parquet"))
    assert held == [
        "edges/origin=chatgpt/part-00000.parquet",
        "edges/origin=logs/part-00000.parquet",
        "nodes/origin=chatgpt/part-00000.parquet",
        "nodes/origin=logs/part-00000.parquet",
    ]
    import pandas as pd

    nodes = pd.read_parquet(target / "nodes")
    assert nodes.groupby("origin", observed=True).size().to_dict() == {
        "chatgpt": 4,
        "logs": 2,
    }
    from_dataset = json.loads(run("stats", "--json", "--db", target).stdout)
    from_sources = json.loads(run("stats", "--json", *both(files)).stdout)
    key = "tree_id"
    assert sorted(from_dataset, key=lambda row: row[key]) == sorted(
        from_sources, key=lambda row: row[key]
    )


@pytest.mark.slow
def test_stats_on_dask_reads_the_dataset_partitioned_by_source(files, tmp_path):
    pytest.importorskip("distributed")
    target = tmp_path / "dataset"
    run("export", "--format", "parquet", "-o", target, *both(files))
    on_dask = json.loads(
        run("stats", "--json", "--dask", "local", "--db", target).stdout
    )
    alone = json.loads(run("stats", "--json", "--db", target).stdout)
    from convgraph.analysis.datasets import read_nodes

    lazy = read_nodes(target, ["id", "origin"]).compute()
    assert sorted(zip(lazy["origin"], lazy["id"], strict=True)) == sorted(
        [("chatgpt", id) for id in ("a1", "a1b", "a2", "a2e")]
        + [("logs", files["first"]), ("logs", files["second"])]
    )
    trees = sorted(row["tree_id"] for row in on_dask)
    assert trees == sorted(["conv-monad", files["thread"]])
    assert sorted(on_dask, key=lambda row: row["tree_id"]) == sorted(
        alone, key=lambda row: row["tree_id"]
    )


def test_one_search_index_refreshed_per_source(files, tmp_path):
    from convgraph.search.index import open_index

    directory = tmp_path / "copies"
    shutil.copytree(Path(files["llm"]).parent, directory / "llm")
    export = shutil.copy(files["chatgpt"], directory / "chatgpt.json")
    paths = [str(directory / "llm" / "logs.db"), str(export)]
    reads: list[tuple[str, str, object]] = []

    def opened(*words: str) -> tuple[str, list[str]]:
        """What the index's update did and the nodes `words` find; each read
        of a source's trees is put in `reads`."""
        with convgraph.open(paths) as logs:
            for name, source in logs.source.sources.items():
                for method in ("read", "read_tree"):
                    real = getattr(source, method)

                    def counted(*args, real=real, method=method, name=name, **kw):
                        reads.append((name, method, kw.get("trees", args[:1])))
                        return real(*args, **kw)

                    setattr(source, method, counted)
            with open_index(logs.source) as index:
                hits = [hit.id for word in words for hit in logs.search(word)]
                return index.built, sorted(hits)

    assert opened("oaks", "monad") == ("built", ["a1", "a1b"])
    assert opened("oaks", "monad") == ("", ["a1", "a1b"])
    with LlmLog(directory / "llm") as log:
        oaks = log.prompt("A forest of oaks?")
    # Rows logged in the llm file: only its tree read again (each source is
    # asked for it: the export finds none).
    reads.clear()
    assert opened("oaks", "monad") == ("updated", [oaks, "a1", "a1b"])
    thread = (log.thread_of(oaks),)
    assert reads == [("logs", "read_tree", thread), ("chatgpt", "read_tree", thread)]
    # A new export with one more conversation: only the export read again.
    reads.clear()
    write_json(export, [chatgpt_branches(), chatgpt_tools()])
    assert opened("oaks", "monad", "picture") == ("updated", [oaks, "a1", "a1b", "a3"])
    assert reads == [("chatgpt", "read", ())]
    assert documents(paths) == documents(paths, rebuild=True)
    # One without the first: its nodes leave the index.
    write_json(export, [chatgpt_tools()])
    assert opened("oaks", "monad", "picture") == ("updated", [oaks, "a3"])
    assert documents(paths) == documents(paths, rebuild=True)


def documents(paths: list[str], rebuild: bool = False) -> list[list[tuple]]:
    """Every document of the sources' index, brought up to date or built anew."""
    import tantivy

    from convgraph.search.index import open_index

    with convgraph.open(paths) as logs, open_index(logs.source, rebuild=rebuild) as it:
        hits = it.searcher.search(tantivy.Query.all_query(), 1000).hits
        found = [it.searcher.doc(address).to_dict() for _, address in hits]
        return sorted(sorted((k, tuple(v)) for k, v in doc.items()) for doc in found)


def test_an_export_imported_into_llm_and_changed_is_indexed_as_rebuilt(tmp_path):
    # The export's conversation is one tree with its copy in llm's file: the
    # export changed, its copy is read again from llm's file with it.
    export = write_json(tmp_path / "chatgpt.json", [chatgpt_branches()])
    target = tmp_path / "logs.db"
    run("import", export, "--db", target)
    with convgraph.open(target) as logs:
        (imported,) = logs.source.tree_ids()
    with LlmLog(tmp_path) as log:
        later = log.prompt("And oaks?", continue_conversation=imported)
    paths = [str(target), str(export)]

    def oaks() -> list[tuple[str, str, int | None]]:
        with convgraph.open(paths) as logs:
            return [(hit.id, hit.tree_id, hit.depth) for hit in logs.search("oaks")]

    assert oaks() == [(later, "conv-monad", 2)]
    assert documents(paths) == documents(paths, rebuild=True)
    write_json(export, [chatgpt_branches(), chatgpt_tools()])
    assert oaks() == [(later, "conv-monad", 2)]
    assert documents(paths) == documents(paths, rebuild=True)


def test_browse_lists_both_sources_with_their_figures(files):
    pytest.importorskip("textual")
    import asyncio

    from convgraph.browse import BrowseApp
    from tests.tui import settle

    async def main() -> list[tuple[str, int, str | None]]:
        app = BrowseApp({"logs": files["llm"], "chatgpt": files["chatgpt"]})
        async with app.run_test(size=(100, 24)) as pilot:
            await settle(app, pilot)
            assert app.refusal is not None and app.refusal.startswith("several")
            return [
                (row.tree_id, row.nodes, row.name) for row in app.conversations.shown
            ]

    assert asyncio.run(main()) == [
        (files["thread"], 2, "What is a tree?"),
        ("conv-monad", 4, "Monads"),
    ]
