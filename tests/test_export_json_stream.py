"""The whole forest's node-link JSON written from the table is the DiGraphs'.

`convgraph export --format json` of every conversation writes the forest
from its table (`export.json.forest_blocks` over `Forest.tree_rows`, a batch
of nodes a call of orjson), without a DiGraph per tree; named conversations
and the library's DiGraphs go through `generate_json` as before. Each test
reads a source once and asserts the same bytes both ways, in batches of the
default size, of one tree and of three: the seed scenarios with a note and a
preferred answer, llm's own fork database, the message store and legacy
files with tool chains and reasoning, the chat exports, an agent's sessions
with a subagent, files with cycles, self-links, orphans and cross links,
ids shared by copied conversations, and forests cut by filters. The command
is run both ways too (`FOREST_FORMATS` emptied gives the DiGraph path), and
`json_lines` (orjson an object a call, joined once) is held to writing each
object alone with `dumps`, what orjson refuses included.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import convgraph.cli.export as export_command
import convgraph.export.json as json_export
from convgraph.encoding import dumps
from convgraph.export import ExportError, generate_json, read_json, write_json
from convgraph.export.json import forest_blocks, json_lines
from convgraph.model.filters import TreeFilter, select_trees
from convgraph.model.forest import Forest
from tests import test_hostile_data
from tests.chat_exports import (
    chatgpt_agent,
    chatgpt_export,
    chatgpt_tools,
    claude_agent,
    claude_export,
    webui_export,
)
from tests.chat_exports import write_json as write_export
from tests.helpers import examples, read_forest, run
from tests.test_hostile_data import _apply, _copy, hostile_writes
from tests.test_hostile_exports import copied
from tests.test_integrity import hostile_db
from tests.test_tree_from_table import hostile_links, noted_seed

# Fixtures shared with the modules that define them: pytest finds a fixture
# by its name in the test's module.
base_files = test_hostile_data.base_files
legacy_base = test_hostile_data.legacy_base
legacy_parts_base = test_hostile_data.legacy_parts_base
store_parts_base = test_hostile_data.store_parts_base
__all__ = ["copied", "hostile_db", "hostile_links", "noted_seed"]

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ROOT / "tests" / "data" / "agents"


def per_tree(forest: Forest) -> bytes:
    """The document `generate_json` writes from the forest's DiGraphs."""
    return "".join(line + "\n" for line in generate_json(forest.trees())).encode()


def from_table(forest: Forest) -> bytes:
    return b"".join(forest_blocks(forest))


def assert_same_json(forest: Forest, monkeypatch: pytest.MonkeyPatch) -> bytes:
    """Both ways give the same bytes, in every batch size and through every
    writer; a forest of several trees written from its rows, no DiGraph
    built. The document, for tests that look further."""
    expected = per_tree(forest)
    from_rows = len(forest.tree_ids) > 1
    built = []
    trees = Forest.trees

    def counted(self: Forest, *args: object) -> object:
        built.append(self)
        return trees(self, *args)

    monkeypatch.setattr(Forest, "trees", counted)
    for batch in (json_export.NODES_PER_BLOCK, 1, 3):
        monkeypatch.setattr(json_export, "NODES_PER_BLOCK", batch)
        assert from_table(forest) == expected, batch
    assert bool(built) != from_rows
    assert list(generate_json(forest)) == expected.decode().split("\n")[:-1]
    binary, text = io.BytesIO(), io.StringIO()
    write_json(forest, binary)
    write_json(forest, text)
    assert binary.getvalue() == expected
    assert text.getvalue() == expected.decode()
    return expected


def both_ways(*args: object) -> tuple[object, object]:
    """`convgraph export --format json ARGS` written from the table and from
    the DiGraphs: each run's exit status, stdout and stderr."""
    table = run("export", "--format", "json", *args, expect=None)
    formats = export_command.FOREST_FORMATS
    export_command.FOREST_FORMATS = frozenset()
    try:
        graphs = run("export", "--format", "json", *args, expect=None)
    finally:
        export_command.FOREST_FORMATS = formats
    return (
        (table.exit_code, table.stdout, table.stderr),
        (graphs.exit_code, graphs.stdout, graphs.stderr),
    )


def test_the_seed_scenarios_with_marks(
    noted_seed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forest = read_forest(noted_seed)
    document = json.loads(assert_same_json(forest, monkeypatch))
    assert [entry["tree_id"] for entry in document["graph"]["conversations"]] == [
        "linear",
        "branch",
        "complex",
        "multiple-roots",
    ]
    nodes = {node["id"]: node for node in document["nodes"]}
    assert nodes["branch-b"]["note"] == "too short\nsecond line"
    assert nodes["complex-c"]["preferred"] is True
    assert nodes["branch-b"]["tree_id"] == "branch"
    assert {"source": "branch-root", "target": "branch-b"} in document["edges"]
    # Read back, the DiGraphs the forest builds.
    back = read_json(io.BytesIO(from_table(forest)))
    for graph, tree in zip(back, forest.trees(), strict=True):
        assert dict(graph.nodes(data=True)) == dict(tree.nodes(data=True))
        assert list(graph.edges) == list(tree.edges)
    table, graphs = both_ways("--db", noted_seed)
    assert table == graphs and table[0] == 0
    assert table[1] == per_tree(forest).decode()


def test_llms_own_fork_database(
    llm_fork_db: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    forest = read_forest(llm_fork_db["path"])
    assert_same_json(forest, monkeypatch)
    table, graphs = both_ways("--db", llm_fork_db["path"])
    assert table == graphs and table[0] == 0


def test_tool_chains_reasoning_and_hostile_base_files(
    base_files: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = b""
    for base in base_files.values():
        forest = read_forest(base["path"])
        written += assert_same_json(forest, monkeypatch)
        table, graphs = both_ways("--db", base["path"])
        assert table == graphs and table[0] == 0
    # The files' parts are written: tool calls and reasoning.
    assert b'"type":"tool_call"' in written and b'"type":"reasoning"' in written


def test_chat_exports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exports = {
        "chatgpt.json": chatgpt_export(),
        "tools.json": [chatgpt_tools(), *chatgpt_export()],
        "agent.json": [chatgpt_agent(), *chatgpt_export()],
        "claude.json": claude_export(),
        "claude-agent.json": [claude_agent(), *claude_export()],
        "webui.json": webui_export(),
    }
    for name, conversations in exports.items():
        path = write_export(tmp_path / name, conversations)
        assert_same_json(read_forest(path), monkeypatch)
        table, graphs = both_ways("--db", path)
        assert table == graphs and table[0] == 0, name
    assert_same_json(read_forest(ROOT / "examples" / "chatgpt-export.zip"), monkeypatch)


def test_an_agents_sessions_with_a_subagent(monkeypatch: pytest.MonkeyPatch) -> None:
    assert_same_json(read_forest(AGENTS / "claude-code" / "projects"), monkeypatch)
    for path in (AGENTS / "claude-code", AGENTS / "codex", AGENTS / "gemini-cli"):
        forest = read_forest(path)
        document = json.loads(assert_same_json(forest, monkeypatch))
        # An agent's nodes carry their place after the contract's attributes,
        # then the calls they fold.
        assert list(document["nodes"][0])[-4:] == [
            "project",
            "git_branch",
            "calls",
            "tree_id",
        ]
        table, graphs = both_ways("--db", path)
        assert table == graphs and table[0] == 0, path


def test_broken_links_cycles_and_orphans(
    hostile_links: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forest = read_forest(hostile_links)
    assert len(forest.problems) == 4
    document = json.loads(assert_same_json(forest, monkeypatch))
    targets = {edge["target"] for edge in document["edges"]}
    # Dropped links are no edges: the self-link, the cross link, the cycle's.
    assert "s-loop" not in targets and "x-stray" not in targets
    table, graphs = both_ways("--db", hostile_links)
    assert table == graphs and table[0] == 0


def test_ids_shared_by_copied_conversations(
    copied: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forest = read_forest(copied)
    assert_same_json(forest, monkeypatch)
    table, graphs = both_ways("--db", copied)
    assert table == graphs and table[0] == 0


def test_an_id_on_two_rows_is_refused_as_the_digraphs_refuse_it(
    noted_seed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nodes = read_forest(noted_seed).nodes.copy()
    # A node of the last tree given the id of one of the first.
    nodes.loc[len(nodes) - 1, "id"] = nodes.loc[0, "id"]
    forest = Forest(nodes, {})
    with pytest.raises(ExportError, match="is in two of the conversations"):
        per_tree(forest)
    with pytest.raises(ExportError, match="is in two of the conversations"):
        from_table(forest)


def test_one_tree_and_none_keep_their_documents(
    noted_seed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forest = read_forest(noted_seed)
    one = select_trees(forest, TreeFilter(models=("nothing-*",)))
    document = json.loads(assert_same_json(one, monkeypatch))
    assert document["graph"] == {} and document["nodes"] == []
    nodes = forest.nodes[forest.nodes["tree_id"] == "branch"].reset_index(drop=True)
    alone = Forest(nodes, {"branch": "Branches"})
    document = json.loads(assert_same_json(alone, monkeypatch))
    assert document["graph"] == {"tree_id": "branch", "name": "Branches"}


def test_forests_cut_by_filters(
    noted_seed: Path, llm_fork_db: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    for path in (noted_seed, llm_fork_db["path"]):
        forest = read_forest(path)
        first = forest.nodes["datetime_utc"].dropna().sort_values().iloc[1]
        since = datetime.fromisoformat(str(first)).replace(tzinfo=UTC)
        for where in (TreeFilter(since=since), TreeFilter(models=("*",))):
            kept = select_trees(forest, where)
            assert_same_json(kept, monkeypatch)
        for words in (
            ["--since", since.isoformat()],
            ["--model", "nothing-*"],
            ["--model", "*"],
        ):
            table, graphs = both_ways("--db", path, *words)
            assert table == graphs and table[0] == 0, words


def test_errors_are_the_digraphs_too(noted_seed: Path, tmp_path: Path) -> None:
    table, graphs = both_ways("--db", tmp_path / "missing.db")
    assert table == graphs and table[0] == 2
    output = tmp_path / "forest.json"
    table, graphs = both_ways("--db", noted_seed, "-o", output)
    assert table == graphs and table[0] == 0
    assert output.read_bytes() == per_tree(read_forest(noted_seed))


def test_json_lines_is_each_object_alone() -> None:
    def alone(items: list) -> bytes:
        return ",\n".join(dumps(item) for item in items).encode()

    cases = [
        [{"id": "a", "n": 1}, {"id": 'b},{"id":', "n": None}],
        # Objects of the same first key inside a value: written one by one.
        [{"id": "a", "parts": [{"id": 1}, {"id": 2}]}, {"id": "b"}],
        # What orjson refuses (an int past 64 bits), json writes.
        [{"id": "a", "n": 2**70}, {"id": "b", "n": 2}],
        [{"id": "é", "prompt": "line\nnext\t\x01"}],
    ]
    for items in cases:
        assert bytes(json_lines(items)) == alone(items), items
    assert bytes(json_lines([])) == b""
    assert bytes(json_lines(cases[0])) == (
        b'{"id":"a","n":1},\n{"id":"b},{\\"id\\":","n":null}'
    )


@pytest.mark.slow
@settings(
    max_examples=examples(60),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_any_value_in_any_column_writes_the_digraphs_json(
    base_files: dict, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    kind, writes = data.draw(hostile_writes(base_files))
    path = _copy(base_files[kind]["path"], tmp_path_factory.mktemp("hostile"))
    _apply(path, writes)
    table, graphs = both_ways("--db", path)
    assert table == graphs, (kind, writes)
