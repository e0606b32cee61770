"""ChatGPT, Claude.ai and Open WebUI exports read as conversation trees.

Each test builds an export in the shape the app writes (tests/chat_exports.py),
reads it through convgraph's own entry points (`open_logs`, `load_tree`,
`Forest.read`, the command line) and asserts the exact nodes: ids, parents,
prompts, responses, models and the active branch.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from convgraph.errors import DatabaseError, UnknownConversation, UnknownNode
from convgraph.model.loading import load_path, load_tree, load_tree_of_node
from convgraph.sources import open_logs
from convgraph.sources.chat import exports as chat_exports
from convgraph.sources.chat.exports import ChatExport, detect
from tests import chat_exports as build
from tests.helpers import read_forest, run

EXAMPLES = Path(__file__).parent.parent / "examples"

COLUMNS = ("id", "parent_id", "prompt", "response", "model", "active")

#: conv-monad: the first answer regenerated (two roots), then an edited prompt.
MONAD = [
    ("a1", None, "What is a monad?", "A monoid.", "gpt-4o", False),
    ("a1b", None, "What is a monad?", "A burrito.", "gpt-4o", True),
    ("a2", "a1b", "Simpler?", "A box.", "gpt-4o-mini", False),
    ("a2e", "a1b", "An example?", "Maybe.", "gpt-4o", True),
]

#: conv-tools: the Python run is inside the node; the last prompt unanswered.
TOOLS = [
    (
        "a3",
        None,
        "What is in this picture?\n[1 image, 1 file]",
        "It shows 2.",
        "gpt-4o",
        True,
    ),
    ("u4", "a3", "And now?", None, None, True),
]

CLAUDE_PRIMES = [
    ("as1", None, "Name a prime.", "7", None, False),
    ("as1b", None, "Name a prime.", "11", None, True),
    (
        "as2",
        "as1b",
        "Name an even prime.\n[1 file]",
        "2\n\nIt is the only one.",
        None,
        True,
    ),
    ("h2b", "as1b", "Name an odd prime.", None, None, False),
]

CLAUDE_OLD = [
    ("oa1", None, "Hello", "Hi there", None, True),
    ("oa2", "oa1", "Look at this\n[1 file]", "A cat", None, True),
]

WEBUI_GREET = [
    ("m2", None, "Hi", "Hello!", "llama3", True),
    ("m2b", None, "Hi", "Hey.", "mistral", False),
    ("m4", "m2", "Tell a joke\n[1 image]", "No.", "llama3", True),
]

WEBUI_OLD = [
    ("o2", None, "Old?", "Yes.", "llama2", True),
    ("chat-old-2", "o2", "Unanswered", None, None, True),
]


def rows(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [tuple(record[column] for column in COLUMNS) for record in records]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def chatgpt_json(tmp_path: Path) -> Path:
    return build.write_json(tmp_path / "conversations.json", build.chatgpt_export())


@pytest.fixture
def chatgpt_zip(tmp_path: Path) -> Path:
    """The export as downloaded: split conversation files beside the rest."""
    return build.write_zip(
        tmp_path / "chatgpt-export.zip",
        {
            **build.split(build.chatgpt_export(), 2),
            "user.json": {"id": "user-1", "email": "someone@example.com"},
            "message_feedback.json": [],
            "chat.html": "<html></html>",
            "file-abc.png": b"\x89PNG\r\n",
        },
    )


@pytest.fixture
def claude_zip(tmp_path: Path) -> Path:
    return build.write_zip(
        tmp_path / "claude-export.zip",
        {
            "conversations.json": build.claude_export(),
            "users.json": [{"uuid": "acct-1", "full_name": "Someone"}],
            "projects.json": [],
        },
    )


@pytest.fixture
def webui_json(tmp_path: Path) -> Path:
    return build.write_json(tmp_path / "chat-export-1.json", build.webui_export())


@pytest.fixture
def hostile_json(tmp_path: Path) -> Path:
    return build.write_json(tmp_path / "conversations.json", build.chatgpt_hostile())


# -- the trees ------------------------------------------------------------------


@pytest.mark.parametrize("export", ["chatgpt_json", "chatgpt_zip"])
def test_chatgpt_regenerations_and_edits(export: str, request: Any) -> None:
    path = request.getfixturevalue(export)
    with open_logs(path) as logs:
        assert isinstance(logs, ChatExport)
        assert logs.generations == ["chatgpt"]
        assert logs.tree_ids() == ["conv-monad", "conv-tools", "conv-chain"]
        tree = logs.read_tree("conv-monad")
    assert tree.name == "Monads"
    assert rows(tree.records) == MONAD
    first = tree.records[0]
    assert first["conversation_id"] == first["tree_id"] == "conv-monad"
    assert first["source"] == "chatgpt"
    assert first["system"] is None  # the hidden system message is empty
    assert first["datetime_utc"] == build.iso(10)
    assert (first["input_tokens"], first["output_tokens"], first["duration_ms"]) == (
        None,
        None,
        None,
    )


def test_chatgpt_tools_images_and_custom_instructions(chatgpt_json: Path) -> None:
    with open_logs(chatgpt_json) as logs:
        tree = logs.read_tree("conv-tools")
    assert rows(tree.records) == TOOLS
    assert [record["system"] for record in tree.records] == [
        "I am a chemist.\n\nAnswer briefly."
    ] * 2
    assert [record["datetime_utc"] for record in tree.records] == [
        build.iso(120),
        build.iso(130),
    ]


def test_chatgpt_chain_of_two_thousand_steps(chatgpt_json: Path) -> None:
    graph = load_tree("conv-chain", chatgpt_json)
    assert graph.number_of_nodes() == 2000
    assert list(graph.edges)[:2] == [("r0000", "r0001"), ("r0001", "r0002")]
    assert all(active for _, active in graph.nodes(data="active", default=True))
    path = load_path("r1999", chatgpt_json)
    assert path == [f"r{step:04d}" for step in range(2000)]
    with open_logs(chatgpt_json) as logs:
        records = logs.read_tree("conv-chain").records
    assert all(record["active"] for record in records)
    assert (records[-1]["prompt"], records[-1]["response"]) == ("Q1999", "A1999")


def test_split_files_in_a_folder_read_as_one_export(tmp_path: Path) -> None:
    conversations = build.chatgpt_export()
    for name, part in build.split(conversations, 1).items():
        build.write_json(tmp_path / name, part)
    build.write_json(tmp_path / "user.json", {"id": "user-1"})
    single = build.write_json(tmp_path.parent / "single.json", conversations)
    with detect(tmp_path) as folder, detect(single) as whole:
        assert folder.tree_ids() == whole.tree_ids()
        assert rows(folder.read_tree("conv-monad").records) == MONAD
        read = folder.read()
        nodes, names = read.nodes, read.names
        read = whole.read()
        whole_nodes, whole_names = read.nodes, read.names
    assert nodes.equals(whole_nodes)
    assert names == whole_names


def test_a_conversation_repeated_across_split_files_is_read_once(
    tmp_path: Path,
) -> None:
    monad = build.chatgpt_branches()
    path = build.write_zip(
        tmp_path / "export.zip",
        {"conversations-000.json": [monad], "conversations-001.json": [monad]},
    )
    with open_logs(path) as logs:
        read = logs.read()
        nodes, names = read.nodes, read.names
    assert list(nodes["id"]) == ["a1", "a1b", "a2", "a2e"]
    assert names == {"conv-monad": "Monads"}


def test_claude_branches_tools_and_files(claude_zip: Path) -> None:
    with open_logs(claude_zip) as logs:
        assert logs.generations == ["claude"]
        assert logs.tree_ids() == ["claude-primes", "claude-old"]
        primes = logs.read_tree("claude-primes")
        old = logs.read_tree("claude-old")
    assert primes.name == "Primes"
    assert rows(primes.records) == CLAUDE_PRIMES
    assert rows(old.records) == CLAUDE_OLD
    assert {record["source"] for record in primes.records} == {"claude"}
    assert primes.records[2]["datetime_utc"] == build.iso(40)


def test_claude_without_current_leaf_marks_the_latest_message(tmp_path: Path) -> None:
    export = build.claude_export()
    del export[0]["current_leaf_message_uuid"]
    path = build.write_json(tmp_path / "conversations.json", export)
    records = detect(path).read_tree("claude-primes").records
    # h2b, the unanswered edit, was written last.
    assert [record["id"] for record in records if record["active"]] == [
        "as1b",
        "h2b",
    ]


def test_open_webui_models_side_by_side_and_usage(webui_json: Path) -> None:
    with open_logs(webui_json) as logs:
        assert logs.generations == ["openwebui"]
        greet = logs.read_tree("chat-greet")
        old = logs.read_tree("chat-old")
    assert greet.name == "Greetings"
    assert rows(greet.records) == WEBUI_GREET
    assert rows(old.records) == WEBUI_OLD
    usage = [
        (record["input_tokens"], record["output_tokens"], record["duration_ms"])
        for record in greet.records
    ]
    assert usage == [(5, 7, 1500), (4, 2, None), (None, None, None)]
    assert {record["system"] for record in greet.records} == {"Be terse."}


def test_open_webui_single_chat_file(tmp_path: Path) -> None:
    chat = build.webui_export()[0]
    path = build.write_json(tmp_path / "chat-export.json", chat)
    with open_logs(path) as logs:
        assert logs.tree_ids() == ["chat-greet"]
        assert rows(logs.read_tree("chat-greet").records) == WEBUI_GREET


# -- the interface the commands use -----------------------------------------------


def test_forest_table_has_the_llm_readers_columns_and_types(
    chatgpt_json: Path,
) -> None:
    with open_logs(EXAMPLES / "logs.db") as llm_logs:
        read = llm_logs.read()
        expected, _ = read.nodes, read.names
    with open_logs(chatgpt_json) as logs:
        read = logs.read()
        nodes, names = read.nodes, read.names
        bare = logs.read(texts=False).nodes
    assert list(nodes.columns) == [*expected.columns, "active"]
    for column in expected.columns:
        assert (
            str(nodes[column].dtype).split("(")[0]
            == str(expected[column].dtype).split("(")[0]
        ), column
    assert str(nodes["active"].dtype) == "bool"
    assert len(nodes) == 2006
    keys = list(zip(nodes["datetime_utc"], nodes["id"], strict=True))
    assert keys == sorted(keys)  # log order
    assert names == {
        "conv-monad": "Monads",
        "conv-tools": "Picture and Python",
        "conv-chain": "A long chain",
    }
    assert bare[["prompt", "system", "response"]].isna().all().all()
    assert list(bare["id"]) == list(nodes["id"])


def test_forest_and_one_tree_agree(chatgpt_zip: Path) -> None:
    forest = read_forest(chatgpt_zip)
    assert forest.problems == []
    for tree_id in ("conv-monad", "conv-tools"):
        from_forest = forest.tree(tree_id)
        alone = load_tree(tree_id, chatgpt_zip)
        assert list(from_forest.edges) == list(alone.edges)
        assert dict(from_forest.nodes(data=True)) == dict(alone.nodes(data=True))
    assert sorted(load_tree_of_node("a2", chatgpt_zip).nodes) == [
        "a1",
        "a1b",
        "a2",
        "a2e",
    ]


def test_one_conversation_builds_one_tree(
    chatgpt_json: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []
    real = chat_exports.conversation_records

    def counting(conversation: Any, source: str) -> list[dict[str, Any]]:
        built.append(conversation.id)
        return real(conversation, source)

    monkeypatch.setattr(chat_exports, "conversation_records", counting)
    assert list(load_tree("conv-tools", chatgpt_json).nodes) == ["a3", "u4"]
    assert load_path("a2e", chatgpt_json) == ["a1b", "a2e"]
    assert built == ["conv-tools", "conv-monad"]


def test_unknown_ids(chatgpt_json: Path) -> None:
    with pytest.raises(UnknownConversation):
        load_tree("no-such-conversation", chatgpt_json)
    with pytest.raises(UnknownNode):
        load_tree_of_node("no-such-node", chatgpt_json)
    # A prompt that was answered is a message, not a node.
    with pytest.raises(UnknownNode):
        load_tree_of_node("u2", chatgpt_json)


# -- hostile content and bad files --------------------------------------------------


def test_hostile_links_are_problems_not_crashes(hostile_json: Path) -> None:
    with open_logs(hostile_json) as logs:
        loop = logs.read_tree("conv-loop").records
        nameless = logs.read_tree("chatgpt-1").records
    assert [(r["id"], r["parent_id"], r["active"]) for r in loop] == [
        # la's run goes on to a message without author or content.
        ("odd", None, False),
        # x and y name each other: one node, its own parent.
        ("y", "y", False),
        ("orphan-a", "ghost", False),
        ("lone-a", None, False),
    ]
    assert [(r["id"], r["prompt"], r["active"]) for r in nameless] == [
        ("nu", "Hello?", True)
    ]
    problems = read_forest(hostile_json).problems
    assert sorted((problem.kind, problem.node_id) for problem in problems) == [
        ("missing-parent", "orphan-a"),
        ("self-parent", "y"),
    ]
    result = run("check", "--db", hostile_json, expect=1)
    assert result.stdout.splitlines() == [
        "self-parent: y is its own parent",
        "missing-parent: orphan-a has parent ghost, which does not exist",
    ]


def test_cycle_through_several_nodes_is_reported(tmp_path: Path) -> None:
    message = build.gpt_message
    conversation = build.gpt_conversation(
        "conv-ring",
        "Ring",
        [
            ("p", "c", message("p", "user", "1", at=0)),
            ("a", "p", message("a", "assistant", "2", at=1)),
            ("q", "a", message("q", "user", "3", at=2)),
            ("b", "q", message("b", "assistant", "4", at=3)),
            ("r", "b", message("r", "user", "5", at=4)),
            ("c", "r", message("c", "assistant", "6", at=5)),
        ],
        current_node="c",
    )
    path = build.write_json(tmp_path / "conversations.json", [conversation])
    problems = read_forest(path).problems
    assert [problem.kind for problem in problems] == ["cycle"]
    run("check", "--db", path, expect=1)
    run("tree", "--db", path, "conv-ring")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"hello, world", "not an SQLite database"),
        (b'{"tables": []}', "is JSON but not a ChatGPT, Claude.ai or Open WebUI"),
        (b"[1, 2, 3]", "is JSON but not a ChatGPT, Claude.ai or Open WebUI"),
        (b'[{"mapping": {}, "id": "x"', "is JSON with an error at line 1 column 27"),
    ],
)
def test_files_that_are_no_export(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "conversations.json"
    path.write_bytes(content)
    with pytest.raises(DatabaseError, match=message):
        read_forest(path)
    result = run("stats", "--db", path, expect=2)
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_truncated_export_fails_where_it_ends(
    tmp_path: Path, chatgpt_json: Path
) -> None:
    whole = chatgpt_json.read_bytes()
    path = tmp_path / "cut.json"
    path.write_bytes(whole[: len(whole) * 2 // 3])
    with open_logs(path) as logs:  # the first conversation is whole
        assert logs.generations == ["chatgpt"]
        with pytest.raises(DatabaseError, match="cut short or malformed"):
            logs.read()
    result = run("conversations", "--db", path, expect=2)
    assert result.stderr.startswith("Error: cannot read ")
    assert len(result.stderr.strip().splitlines()) == 1


def test_zip_without_conversations(tmp_path: Path) -> None:
    path = build.write_zip(tmp_path / "export.zip", {"user.json": {"id": "u"}})
    with pytest.raises(DatabaseError, match="holds no conversations.json"):
        open_logs(path)
    broken = tmp_path / "broken.zip"
    broken.write_bytes(path.read_bytes()[:-30])
    result = run("stats", "--db", broken, expect=2)
    assert len(result.stderr.strip().splitlines()) == 1


def test_byte_order_mark_and_empty_export(tmp_path: Path) -> None:
    text = json.dumps(build.claude_export())
    path = tmp_path / "conversations.json"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert detect(path).tree_ids() == ["claude-primes", "claude-old"]
    path.write_text("[]")
    with open_logs(path) as logs:
        assert logs.tree_ids() == []
        read = logs.read()
        nodes, names = read.nodes, read.names
    assert len(nodes) == 0 and names == {}


def test_sqlite_files_and_missing_paths_are_left_to_llms_reader(
    tmp_path: Path,
) -> None:
    assert detect(EXAMPLES / "logs.db") is None
    assert detect(tmp_path / "missing.json") is None
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    assert detect(empty) is None


# -- the command line, on every format ------------------------------------------------


@pytest.mark.parametrize(
    ("export", "conversation", "node", "expected"),
    [
        ("chatgpt_zip", "conv-monad", "a2e", MONAD),
        ("claude_zip", "claude-primes", "as2", CLAUDE_PRIMES),
        ("webui_json", "chat-greet", "m4", WEBUI_GREET),
    ],
)
def test_commands_on_each_format(
    export: str,
    conversation: str,
    node: str,
    expected: list[tuple[Any, ...]],
    request: Any,
) -> None:
    path = request.getfixturevalue(export)
    before = digest(path)
    drawn = run("tree", "-d", path, conversation).stdout
    assert all(row[0] in drawn for row in expected)
    listed = run("conversations", "-d", path).stdout
    assert conversation in listed
    ids = run("path", node, "--db", path).stdout.split()
    active = [row[0] for row in expected if row[5]]
    assert ids == active
    assert "no problems found" in run("check", "-d", path).output
    stats = run("stats", "-d", path, conversation).stdout
    assert conversation in stats
    exported = json.loads(
        run("export", conversation, "--format", "json", "-d", path).stdout
    )
    assert [item["id"] for item in exported["nodes"]] == [row[0] for row in expected]
    assert sorted((edge["source"], edge["target"]) for edge in exported["edges"]) == (
        sorted((row[1], row[0]) for row in expected if row[1] is not None)
    )
    assert exported["graph"]["tree_id"] == conversation
    assert digest(path) == before  # reading never changes the export


def test_example_chatgpt_export() -> None:
    path = EXAMPLES / "chatgpt-export.zip"
    forest = read_forest(path)
    assert forest.problems == []
    assert len(forest.tree_ids) >= 3
    assert set(forest.nodes["source"]) == {"chatgpt"}
    assert forest.nodes["active"].any()


@pytest.mark.parametrize(
    ("current", "active"),
    [
        ("a2", ["a1b", "a2"]),
        # Inside a run (a prompt answered twice, the system message above
        # everything): down the latest branch to the node that ends it.
        ("u1", ["a1b"]),
        ("sys-m", ["a1b"]),
        ("gone", []),
    ],
)
def test_active_branch_from_the_current_node(
    tmp_path: Path, current: str, active: list[str]
) -> None:
    conversation = build.chatgpt_branches()
    conversation["current_node"] = current
    empty = build.gpt_conversation(
        "conv-empty", "Nothing said", build.gpt_preamble("root-e", "sys-e"), None
    )
    path = build.write_json(tmp_path / "conversations.json", [conversation, empty])
    with open_logs(path) as logs:
        assert logs.tree_ids() == ["conv-monad"]
        records = logs.read_tree("conv-monad").records
    assert [record["id"] for record in records if record["active"]] == active


# -- files as they really come (issue 23.5) ----------------------------------------


def test_open_webui_one_chat_download_without_its_wrapper(tmp_path: Path) -> None:
    # The chat object alone, as Open WebUI downloads one chat: no array, no
    # {"chat": ...} around it.
    path = build.write_json(tmp_path / "chat-export-files.json", build.webui_files())
    with open_logs(path) as logs:
        assert logs.generations == ["openwebui"]
        assert logs.tree_ids() == ["chat-files"]
        tree = logs.read_tree("chat-files")
    assert tree.name == "Files"
    assert rows(tree.records) == [
        (
            "w2",
            None,
            "Summarise these\n[1 image, 1 file]",
            "A report and a picture.",
            "llama3",
            True,
        )
    ]
    assert run("path", "w2", "--db", path).stdout.split() == ["w2"]
    # The same chat inside an export's array, wrapped, reads the same.
    wrapped = build.write_json(
        tmp_path / "export.json",
        [build.webui_chat("chat-files", "Files", build.webui_files())],
    )
    assert rows(detect(wrapped).read_tree("chat-files").records) == rows(tree.records)


EMPTY = {
    "chatgpt": lambda: build.gpt_conversation(
        "conv-empty", "Nothing said", build.gpt_preamble("root-e", "sys-e"), None
    ),
    "claude": lambda: {
        "uuid": "claude-empty",
        "name": "Nothing said",
        "chat_messages": [],
    },
    "openwebui": lambda: build.webui_chat(
        "chat-empty", "Nothing said", {"history": {"messages": {}, "currentId": None}}
    ),
}

FULL = {
    "chatgpt": (build.chatgpt_branches, "conv-monad", 4),
    "claude": (lambda: build.claude_export()[0], "claude-primes", 4),
    "openwebui": (lambda: build.webui_export()[0], "chat-greet", 3),
}


@pytest.mark.parametrize("app", sorted(EMPTY))
def test_an_empty_conversation_is_listed_counted_and_reported(
    tmp_path: Path, app: str
) -> None:
    empty = EMPTY[app]()
    make, tree_id, nodes = FULL[app]
    path = build.write_json(tmp_path / "conversations.json", [empty, make()])
    empty_id = {"chatgpt": "conv-empty", "claude": "claude-empty"}.get(
        app, "chat-empty"
    )
    listed = json.loads(run("conversations", "--db", path, "--json").stdout)
    assert [(row["tree_id"], row["name"], row["nodes"]) for row in listed] == [
        (tree_id, listed[0]["name"], nodes),
        (empty_id, "Nothing said", 0),
    ]
    stats = json.loads(run("stats", "--db", path, "--json").stdout)
    assert [(row["tree_id"], row["nodes"], row["roots"]) for row in stats][1] == (
        empty_id,
        0,
        0,
    )
    assert run("check", "--db", path, expect=1).stdout.splitlines() == [
        f"empty-conversation: {empty_id} (Nothing said) holds no prompt and no"
        " answer: 0 nodes"
    ]
    # It names no tree: the one-tree commands say so in one line.
    with open_logs(path) as logs:
        assert logs.tree_ids() == [tree_id]
    result = run("tree", empty_id, "--db", path, expect=2)
    assert len(result.stderr.strip().splitlines()) == 1
