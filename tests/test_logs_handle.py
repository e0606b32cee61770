"""`convgraph.open`: one handle on every kind of file, answering as the
functions it calls answer on their own."""

from __future__ import annotations

from pathlib import Path

import pytest

import convgraph
from convgraph.errors import DatabaseError, UnknownConversation
from convgraph.model import tree as operations
from convgraph.model.filters import TreeFilter
from convgraph.model.loading import load_tree
from tests.helpers import ROOT, read_forest

EXAMPLES = ROOT / "examples"
AGENT_SESSION = ROOT / "tests/data/agents/claude-code/sample_session.jsonl"


@pytest.mark.parametrize(
    "path",
    [
        EXAMPLES / "logs.db",
        EXAMPLES / "chatgpt-export.zip",
        AGENT_SESSION,
    ],
    ids=["llm", "chatgpt", "claude-code"],
)
def test_the_handle_answers_as_the_functions_do(path: Path):
    forest = read_forest(path)
    with convgraph.open(path) as logs:
        assert logs.tree_ids() == forest.tree_ids
        first = logs.tree_ids()[0]
        tree = logs.tree(first)
        assert sorted(tree.nodes) == sorted(load_tree(first, path).nodes)
        # A node's id names the tree that holds it.
        leaf = operations.leaves(tree)[-1]
        assert logs.tree(leaf).graph["tree_id"] == first
        assert logs.forest().nodes["id"].tolist() == forest.nodes["id"].tolist()
        stats = logs.stats()
        assert stats["tree_id"].tolist()[: len(forest.tree_ids)] == forest.tree_ids
        assert stats["nodes"].sum() == len(forest.nodes)
        assert [t.graph["tree_id"] for t in logs.trees([first])] == [first]


def test_the_handle_takes_prefixes_filters_and_searches():
    with convgraph.open(EXAMPLES / "logs.db") as logs:
        assert repr(logs).startswith("<convgraph.Logs ")
        assert logs.tree("01jb1haiku").graph["tree_id"] == "01jb1haiku000000000000000"
        kept = logs.forest(where=TreeFilter(models=("claude*",)))
        assert kept.tree_ids == [
            "01jb1haiku000000000000000",
            "01jb2hashmap0000000000000",
        ]
        hits = logs.search("sourdough", limit=3)
        assert hits and all(
            hit.tree_id == "01jb0sourdough0000000000000" for hit in hits
        )
        with pytest.raises(UnknownConversation):
            logs.tree("01jzzzzz")


def test_a_file_of_no_kind_is_one_error(tmp_path: Path):
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    with pytest.raises(DatabaseError):
        convgraph.open(path)


def test_the_handle_chooses_the_form_of_the_statistics():
    # A small file is measured tree by tree, its rows those of the table.
    with convgraph.open(EXAMPLES / "logs.db") as logs:
        small = logs.summaries()
        table = logs.stats()
        named = logs.summaries(["01jb1haiku000000000000000"])
    assert isinstance(small.rows, list) and small.read == len(table)
    assert [row["tree_id"] for row in small.rows] == table["tree_id"].tolist()
    assert [row["nodes"] for row in small.rows] == table["nodes"].tolist()
    assert [row["tree_id"] for row in named.rows] == ["01jb1haiku000000000000000"]
    # A filter takes the table, counting the trees read before it.
    with convgraph.open(EXAMPLES / "logs.db") as logs:
        kept = logs.summaries(where=TreeFilter(models=("claude*",)))
    assert kept.rows["tree_id"].tolist() == [
        "01jb1haiku000000000000000",
        "01jb2hashmap0000000000000",
    ]
    assert kept.read == len(table)


def test_the_handle_refuses_to_overwrite_what_it_reads(tmp_path: Path):
    import shutil

    from convgraph.logs import is_export

    copy = tmp_path / "logs.db"
    shutil.copy(EXAMPLES / "logs.db", copy)
    with convgraph.open(copy) as logs:
        assert logs.writable
        refusal = logs.overwrite_refusal(str(copy))
        assert refusal is not None and "it is the file being read" in refusal
        assert logs.overwrite_refusal(str(tmp_path / "new.json")) is None
    assert not is_export(str(copy))
    assert is_export(str(EXAMPLES / "chatgpt-export.zip"))


def test_the_forest_reads_an_open_source_only():
    with pytest.raises(TypeError, match=r"not PosixPath: .*convgraph\.open"):
        convgraph.Forest.read(EXAMPLES / "logs.db")
