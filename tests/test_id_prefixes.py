"""Ids that forgive (issue 25, item 4): a unique prefix of an id names it,
as git's do; an ambiguous one lists its candidates; a node's id where a
conversation's is wanted (or the other way round) says what it is and what
to type. Resolved on each file's own index: examples/logs.db, hand-made
files with colliding prefixes (legacy, message store, both in one file),
a chat export; through the library and the command line."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convgraph.errors import (
    AmbiguousId,
    ConversationNotNode,
    NodeNotConversation,
    UnknownConversation,
    UnknownNode,
)
from convgraph.sources import open_logs
from convgraph.sources.source import CONVERSATION, MIN_PREFIX, NODE, prefix_end
from convgraph.text import excerpt
from tests.chat_exports import gpt_conversation, gpt_message, gpt_preamble, write_json
from tests.databases import add_response, legacy_database, timestamp
from tests.helpers import examples, file_digest, run

EXAMPLES = Path(__file__).parent.parent / "examples"
LOGS = EXAMPLES / "logs.db"
HASHMAP = "01jb2hashmap0000000000000"
HASHMAP_NODES = [
    ("01jb2hm00root000000000000", "Explain how a hash map works."),
    ("01jb2hm01b000000000000000", "Show me a minimal implementation in Pyt…"),
    ("01jb2hm02c000000000000000", "Add resizing when the load factor passe…"),
    ("01jb2hm03d000000000000000", "Use open addressing instead of chaining."),
    ("01jb2hm04e000000000000000", "Compare it with a binary search tree."),
    ("01jb2hm05f000000000000000", "Which is faster for range queries?"),
    ("01jb2hm06g000000000000000", "Which uses less memory?"),
]


def candidate(node: str, tree: str, words: str) -> str:
    """A node's line of an ambiguous prefix's listing: words fill 78 columns."""
    head = f"{node}  node of {tree}"
    return f"{head}: {excerpt(words, 78 - len(head) - 2)}"


# -- the rule, on examples/logs.db -----------------------------------------


def test_prefix_end_is_the_least_string_above_the_prefix():
    assert prefix_end("01jb") == "01jc"
    assert prefix_end("a\U0010ffff") == "b"
    assert prefix_end("\U0010ffff") is None


@pytest.mark.parametrize(
    ("given", "wanted", "expected"),
    [
        ("01jb2hm03d", NODE, (NODE, "01jb2hm03d000000000000000")),
        ("01jb2hm03d", None, (NODE, "01jb2hm03d000000000000000")),
        ("01jb2h", CONVERSATION, (CONVERSATION, HASHMAP)),
        ("01jb2hashmap", None, (CONVERSATION, HASHMAP)),
        (HASHMAP, CONVERSATION, (CONVERSATION, HASHMAP)),
        ("01jb5sd", CONVERSATION, (CONVERSATION, "01jb5sdfork0thread00000000")),
        ("01jb3tr05", NODE, (NODE, "01jb3tr05y000000000000000")),
    ],
)
def test_a_unique_prefix_names_its_id(given, wanted, expected):
    with open_logs(LOGS) as logs:
        assert logs.resolve(given, wanted) == expected


def test_an_ambiguous_prefix_lists_its_candidates():
    with open_logs(LOGS) as logs, pytest.raises(AmbiguousId) as raised:
        logs.resolve_node("01jb2h")
    assert str(raised.value).splitlines() == [
        "01jb2h is ambiguous: it begins 7 ids:",
        *(f"  {candidate(node, HASHMAP, words)}" for node, words in HASHMAP_NODES),
    ]
    with open_logs(LOGS) as logs, pytest.raises(AmbiguousId) as raised:
        logs.resolve_conversation("01jb")
    assert str(raised.value).splitlines() == [
        "01jb is ambiguous: it begins 5 ids:",
        "  01jb0sourdough0000000000000  conversation: My kitchen is only 18 °C in win…",
        "  01jb1haiku000000000000000  conversation: Autumn haiku",
        "  01jb2hashmap0000000000000  conversation: How hash maps work",
        "  01jb3translate00000000000  conversation: Good morning, translated",
        "  01jb5sdfork0thread00000000  conversation in tree"
        " 01jb0sourdough0000000000000",
    ]


def test_a_prefix_of_many_lists_a_few_and_says_there_are_more():
    with open_logs(LOGS) as logs, pytest.raises(AmbiguousId) as raised:
        logs.resolve_node("01jb")
    lines = str(raised.value).splitlines()
    assert lines[0] == "01jb is ambiguous: it begins more than 8 ids:"
    assert len(lines) == 9


def test_the_wrong_kind_says_what_the_id_is():
    with open_logs(LOGS) as logs:
        with pytest.raises(NodeNotConversation) as raised:
            logs.resolve_conversation("01jb2hm06g")
        assert (raised.value.id, raised.value.tree_id) == (
            "01jb2hm06g000000000000000",
            HASHMAP,
        )
        assert str(raised.value) == (
            "01jb2hm06g000000000000000 is a node of conversation"
            f" {HASHMAP}, not a conversation"
        )
        with pytest.raises(ConversationNotNode) as raised_node:
            logs.resolve_node("01jb2hash")
        assert str(raised_node.value) == f"{HASHMAP} is a conversation, not a node"
        # Both are still the errors callers catch for an unknown id.
        assert isinstance(raised.value, UnknownConversation)
        assert isinstance(raised_node.value, UnknownNode)


def test_a_short_prefix_is_not_searched():
    assert MIN_PREFIX == 4
    with open_logs(LOGS) as logs:
        with pytest.raises(UnknownNode):
            logs.resolve_node("01j")
        with pytest.raises(UnknownConversation):
            logs.resolve_conversation("01j")


def test_no_match_is_unknown():
    with (
        open_logs(LOGS) as logs,
        pytest.raises(UnknownNode, match="no node with id '01jz'"),
    ):
        logs.resolve_node("01jz")


@pytest.mark.parametrize(
    ("table", "index"),
    [
        ("responses", "sqlite_autoindex_responses_1"),
        ("conversations", "sqlite_autoindex_conversations_1"),
        ("turns", "sqlite_autoindex_turns_1"),
        ("threads", "sqlite_autoindex_threads_1"),
    ],
)
def test_the_prefix_is_a_range_on_the_primary_key(table, index):
    """Every statement the lookup makes is a SEARCH on the table's primary
    key index, never a SCAN: a million responses cost a few pages."""
    conn = sqlite3.connect(LOGS)
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    with open_logs(LOGS) as logs:
        logs.conn.set_trace_callback(seen.append)
        logs.resolve_node("01jb2hm03d")
    statements = [sql for sql in seen if f" from {table} " in sql and ">=" in sql]
    assert statements, f"no range lookup on {table}"
    for sql in statements:
        plan = " ".join(
            row[3] for row in conn.execute(f"explain query plan {sql}").fetchall()
        )
        assert f"USING INDEX {index}" in plan or "USING PRIMARY KEY" in plan, plan
        assert f"SCAN {table}" not in plan and "SCAN r" not in plan, plan
    conn.close()


# -- colliding prefixes in hand-made files ---------------------------------


@pytest.fixture
def colliding(tmp_path: Path) -> Path:
    """A legacy file whose ids collide at every length up to the last
    characters: two conversations `abcd1…`, `abcd2…`; nodes `abcd1x…`."""
    path = tmp_path / "logs.db"
    conn = legacy_database(path)
    rows = [
        ("abcd1xa", "abcd1conv", None, "first question"),
        ("abcd1xb", "abcd1conv", "abcd1xa", "second question"),
        ("abcd2ya", "abcd2conv", None, "other question"),
        ("abce", None, None, "a response of its own"),
    ]
    for index, (node, conversation, parent, prompt) in enumerate(rows):
        add_response(
            conn,
            node,
            conversation,
            prompt,
            parent=parent,
            datetime_utc=timestamp(index),
        )
    conn.commit()
    conn.close()
    return path


def test_legacy_collisions(colliding):
    before = file_digest(colliding)
    with open_logs(colliding) as logs:
        assert logs.resolve("abcd1xb") == (NODE, "abcd1xb")
        assert logs.resolve("abcd2y") == (NODE, "abcd2ya")
        assert logs.resolve("abcd2", CONVERSATION) == (CONVERSATION, "abcd2conv")
        # A response outside any conversation is a node and a conversation.
        assert logs.resolve("abce", NODE) == (NODE, "abce")
        assert logs.resolve("abce", CONVERSATION) == (CONVERSATION, "abce")
        with pytest.raises(AmbiguousId) as raised:
            logs.resolve("abcd1")
        assert str(raised.value).splitlines() == [
            "abcd1 is ambiguous: it begins 3 ids:",
            "  abcd1conv  conversation: first question",
            "  abcd1xa  node of abcd1conv: first question",
            "  abcd1xb  node of abcd1conv: second question",
        ]
        with pytest.raises(AmbiguousId) as raised:
            logs.resolve_conversation("abcd")
        assert raised.value.candidates == [
            "abcd1conv  conversation: first question",
            "abcd2conv  conversation: other question",
        ]
        with pytest.raises(AmbiguousId) as raised:
            logs.resolve_conversation("abcd1x")
        assert raised.value.heading() == (
            "abcd1x is ambiguous: it begins 2 ids, none of them a conversation"
        )
    assert file_digest(colliding) == before


def test_message_store_prefixes(llm_fork_db):
    """Turns and threads that llm 0.36 wrote: ULIDs made within a second
    share their first characters."""
    path = llm_fork_db["path"]
    thread, fork = llm_fork_db["thread"], llm_fork_db["fork"]
    turns = llm_fork_db["turns"] + llm_fork_db["fork_turns"]
    with open_logs(path) as logs:
        for turn in turns:
            shortest = next(
                turn[:length]
                for length in range(MIN_PREFIX, len(turn) + 1)
                if sum(other.startswith(turn[:length]) for other in turns) == 1
                and not any(t.startswith(turn[:length]) for t in (thread, fork))
            )
            assert logs.resolve_node(shortest) == turn
        assert logs.resolve_conversation(fork) == fork
        with pytest.raises(NodeNotConversation) as raised:
            logs.resolve_conversation(llm_fork_db["fork_turns"][1])
        # The node's conversation is its tree: the thread it was forked from.
        assert raised.value.tree_id == thread
        common = turns[0][:MIN_PREFIX]
        with pytest.raises(AmbiguousId) as raised_many:
            logs.resolve(common)
        named = sorted(i for i in [*turns, thread, fork] if i.startswith(common))
        shown = [line.split()[0] for line in raised_many.value.candidates]
        assert shown == named[: len(shown)]


def test_both_generations_in_one_file(llm_fork_db, tmp_path):
    """Legacy responses beside llm's turns, with prefixes that cross the
    generations."""
    path = tmp_path / "logs.db"
    shutil.copy(llm_fork_db["path"], path)
    conn = sqlite3.connect(path)
    thread = llm_fork_db["thread"]
    first = llm_fork_db["turns"][0]
    add_response(conn, first[:-1] + "!", "legacyconv", "legacy question")
    conn.commit()
    conn.close()
    with open_logs(path) as logs:
        assert logs.resolve_node(first) == first
        assert logs.resolve_node(first[:-1] + "!") == first[:-1] + "!"
        assert logs.resolve_conversation("legacyc") == "legacyconv"
        with pytest.raises(AmbiguousId) as raised:
            logs.resolve_node(first[:-1])
        assert raised.value.candidates == [
            f"{first[:-1]}!  node of legacyconv: legacy question",
            candidate(first, thread, "What is a tree?"),
        ]


# -- a chat export -----------------------------------------------------------


def test_chat_export_prefixes():
    zip_path = EXAMPLES / "chatgpt-export.zip"
    with open_logs(zip_path) as logs:
        conversation = "68e0c0de-0002-4000-8000-000000000000"
        node = "00020008-5e1f-4c2b-9a7d-000000000008"
        assert logs.resolve_conversation("68e0c0de-0002") == conversation
        assert logs.resolve_node("00020008") == node
        with pytest.raises(NodeNotConversation) as raised:
            logs.resolve_conversation("00020008")
        assert str(raised.value) == (
            f"{node} is a node of conversation {conversation}, not a conversation"
        )
        with pytest.raises(AmbiguousId) as raised_many:
            logs.resolve_conversation("68e0c0de")
        assert raised_many.value.candidates == [
            "68e0c0de-0001-4000-8000-000000000000  conversation: Three days in Kyoto",
            "68e0c0de-0002-4000-8000-000000000000  conversation: Why is my CSV sum"
            " wrong?",
            "68e0c0de-0003-4000-8000-000000000000  conversation: Autumn haiku",
            "68e0c0de-0004-4000-8000-000000000000  conversation: Identify this plant",
        ]


@pytest.fixture
def colliding_export(tmp_path: Path) -> Path:
    """A ChatGPT export whose two conversations and their messages share
    prefixes: conversations `cafe1…` and `cafe2…`, answers `beef1…` in
    both."""

    def conversation(cid: str, user: str, answer: str, words: str) -> dict:
        return gpt_conversation(
            cid,
            f"About {words}",
            [
                *gpt_preamble(f"{cid}-root", f"{cid}-system"),
                (user, f"{cid}-system", gpt_message(user, "user", words, at=1)),
                (answer, user, gpt_message(answer, "assistant", "ok", at=2)),
            ],
            answer,
        )

    return write_json(
        tmp_path / "conversations.json",
        [
            conversation("cafe1", "u1", "beef1a", "apples"),
            conversation("cafe2", "u2", "beef1b", "pears"),
        ],
    )


def test_chat_export_collisions(colliding_export):
    before = file_digest(colliding_export)
    with open_logs(colliding_export) as logs:
        assert logs.resolve_node("beef1a") == "beef1a"
        assert logs.resolve("cafe2") == (CONVERSATION, "cafe2")
        with pytest.raises(AmbiguousId) as raised:
            logs.resolve_node("beef1")
        assert raised.value.candidates == [
            "beef1a  node of cafe1: apples",
            "beef1b  node of cafe2: pears",
        ]
        with pytest.raises(ConversationNotNode) as raised_node:
            logs.resolve_node("cafe1")
        assert raised_node.value.tree_id == "cafe1"
        with pytest.raises(AmbiguousId) as raised:
            logs.resolve("cafe")
        assert raised.value.candidates == [
            "cafe1  conversation: About apples",
            "cafe2  conversation: About pears",
        ]
    assert file_digest(colliding_export) == before


@pytest.mark.parametrize("given", ["beef1", "cafe", "cafe2", "u1", "beef1b"])
def test_the_default_lookup_reads_the_same_ids(colliding_export, given):
    """`Source.id_matches`, which reads every tree (for a reader without an
    index of its ids), finds what the export's own pass finds."""
    from convgraph.sources.source import Source

    with open_logs(colliding_export) as logs:
        own = logs.id_matches(given, 9)
        assert Source.id_matches(logs, given, 9) == own


# -- the loaders and the write side ------------------------------------------


def test_the_loaders_take_prefixes():
    from convgraph.model.loading import (
        load_path,
        load_tree,
        load_tree_of_node,
        load_tree_of_pair,
    )

    assert load_tree("01jb2hash", LOGS).graph["tree_id"] == HASHMAP
    assert load_tree_of_node("01jb2hm03d", LOGS).graph["tree_id"] == HASHMAP
    assert load_path("01jb2hm03d", LOGS) == [
        "01jb2hm00root000000000000",
        "01jb2hm01b000000000000000",
        "01jb2hm03d000000000000000",
    ]
    assert load_tree_of_pair("01jb2hm03d", "01jb2hm06", LOGS).graph["tree_id"] == (
        HASHMAP
    )
    with pytest.raises(AmbiguousId):
        load_path("01jb2hm0", LOGS)
    with pytest.raises(NodeNotConversation):
        load_tree("01jb2hm03d", LOGS)


def test_the_write_side_takes_prefixes(colliding):
    from convgraph.sources.notes import read_notes
    from convgraph.store import delete_node
    from convgraph.store.migrate import migrate
    from convgraph.store.notes import set_note, set_preferred

    migrate(colliding)
    set_note("abcd1xb", "kept", colliding)
    set_note("abcd2y", "other", colliding)
    assert set_preferred("abcd2y", True, colliding) == []
    with open_logs(colliding) as logs:
        notes = read_notes(logs, ["abcd1xb", "abcd2ya"])
        assert {node: note.note for node, note in notes.items()} == {
            "abcd1xb": "kept",
            "abcd2ya": "other",
        }
    with pytest.raises(AmbiguousId):
        set_note("abcd1x", "which?", colliding)
    deletion = delete_node("abcd1xb", colliding)
    assert deletion.deleted == ["abcd1xb"]
    before = file_digest(colliding)
    with pytest.raises(AmbiguousId):
        delete_node("abcd", colliding)
    assert file_digest(colliding) == before


def test_a_whole_id_of_the_other_kind_beats_a_prefix(seed_db):
    """`multiple-roots` is a conversation, and begins the ids of its six
    nodes: as a node it is the conversation it names, not ambiguous."""
    with open_logs(seed_db) as logs:
        with pytest.raises(ConversationNotNode) as raised:
            logs.resolve_node("multiple-roots")
        assert raised.value.id == "multiple-roots"
        assert logs.resolve("multiple-roots") == (CONVERSATION, "multiple-roots")
        assert logs.resolve_node("multiple-roots-root2") == "multiple-roots-root2"


# -- through the command line ------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["path", "01jb2hm03d"],
            HASHMAP_NODES[0][0]
            + "\n"
            + HASHMAP_NODES[1][0]
            + "\n"
            + HASHMAP_NODES[3][0]
            + "\n",
        ),
        (
            ["children", "01jb2hm01"],
            "01jb2hm02c000000000000000\n01jb2hm03d000000000000000\n",
        ),
        (["siblings", "01jb1hk01"], "01jb1hk02c000000000000000\n"),
        (
            ["descendants", "01jb2hm04"],
            "01jb2hm05f000000000000000\n01jb2hm06g000000000000000\n",
        ),
        (
            ["roots", "01jb3tra"],
            "01jb3tr00root1000000000000\n01jb3tr03root2000000000000\n",
        ),
        (
            ["leaves", "01jb1h"],
            "01jb1hk01b000000000000000\n01jb1hk02c000000000000000\n",
        ),
    ],
)
def test_every_command_takes_a_prefix(args, expected):
    before = file_digest(LOGS)
    assert run(*args, "--db", LOGS).stdout == expected
    assert file_digest(LOGS) == before


def test_commands_of_conversations_take_prefixes():
    assert (
        run("tree", "01jb1ha", "--db", LOGS).stdout
        == run("tree", "01jb1haiku000000000000000", "--db", LOGS).stdout
    )
    stats = run("stats", "01jb1h", "01jb2hash", "--csv", "--db", LOGS).stdout
    assert [line.split(",")[0] for line in stats.splitlines()[1:]] == [
        "01jb1haiku000000000000000",
        HASHMAP,
    ]
    exported = run("export", "01jb1h", "--format", "json", "--db", LOGS).stdout
    assert (
        exported
        == run(
            "export", "01jb1haiku000000000000000", "--format", "json", "--db", LOGS
        ).stdout
    )
    transcript = run("transcript", "01jb1hk02", "--db", LOGS).stdout
    assert (
        transcript
        == run("transcript", "01jb1hk02c000000000000000", "--db", LOGS).stdout
    )
    compared = run("compare", "01jb3tra", "--json", "--db", LOGS).stdout
    assert (
        compared
        == run("compare", "01jb3translate00000000000", "--json", "--db", LOGS).stdout
    )
    diffed = run("diff", "01jb2hm03", "01jb2hm06", "--db", LOGS).stdout
    assert diffed.splitlines()[0] == (
        "diff 01jb2hm03d000000000000000 01jb2hm06g000000000000000"
        f"  (conversation {HASHMAP})"
    )


def test_an_ambiguous_prefix_on_the_command_line():
    result = run("path", "01jb2h", "--db", LOGS, expect=2)
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "Error: 01jb2h is ambiguous: it begins 7 ids:",
        *(f"  {candidate(node, HASHMAP, words)}" for node, words in HASHMAP_NODES),
    ]


def test_the_wrong_kind_on_the_command_line_says_what_to_type():
    result = run("leaves", "01jb2hm06g", "--db", LOGS, expect=2, prog_name="convgraph")
    assert result.stderr == (
        "Error: 01jb2hm06g000000000000000 is a node of conversation"
        f" {HASHMAP}: convgraph leaves {HASHMAP}\n"
    )
    result = run(
        "stats",
        "01jb2hm06g000000000000000",
        "--db",
        LOGS,
        expect=2,
        prog_name="convgraph",
    )
    assert result.stderr == (
        "Error: 01jb2hm06g000000000000000 is a node of conversation"
        f" {HASHMAP}: convgraph stats {HASHMAP}\n"
    )
    result = run("path", HASHMAP, "--db", LOGS, expect=2, prog_name="convgraph")
    assert result.stderr == (
        f"Error: {HASHMAP} is a conversation, not a node: convgraph leaves"
        f" {HASHMAP} lists its branch tips\n"
    )


def test_through_llm_the_hint_names_llms_commands():
    """Inside llm the hint names the command as llm's user types it: `llm
    leaves` beside `llm path`, the `convgraph` group's own inside it."""
    from llm.cli import cli as llm_cli

    def through_llm(*args: str) -> str:
        return run(*args, "--db", LOGS, expect=2, cli=llm_cli, prog_name="llm").stderr

    assert through_llm("path", HASHMAP) == (
        f"Error: {HASHMAP} is a conversation, not a node: llm leaves"
        f" {HASHMAP} lists its branch tips\n"
    )
    assert through_llm("convgraph", "children", HASHMAP) == (
        f"Error: {HASHMAP} is a conversation, not a node: llm convgraph leaves"
        f" {HASHMAP} lists its branch tips\n"
    )
    assert through_llm("convgraph", "stats", "01jb2hm06g") == (
        "Error: 01jb2hm06g000000000000000 is a node of conversation"
        f" {HASHMAP}: llm convgraph stats {HASHMAP}\n"
    )


def test_the_write_commands_take_prefixes(colliding):
    run("note", "abcd2y", "a note", "--db", colliding)
    run("prefer", "abcd1xb", "--db", colliding)
    with open_logs(colliding) as logs:
        from convgraph.sources.notes import read_notes

        notes = read_notes(logs, ["abcd2ya", "abcd1xb"])
        assert notes["abcd2ya"].note == "a note"
        assert notes["abcd1xb"].preferred is True
    before = file_digest(colliding)
    result = run("delete", "abcd1x", "--db", colliding, expect=2)
    assert result.stderr.splitlines() == [
        "Error: abcd1x is ambiguous: it begins 2 ids:",
        "  abcd1xa  node of abcd1conv: first question",
        "  abcd1xb  node of abcd1conv: second question",
    ]
    assert file_digest(colliding) == before


def test_prefixes_in_a_chat_export_on_the_command_line(colliding_export):
    assert run("path", "beef1b", "--db", colliding_export).stdout == "beef1b\n"
    assert run("leaves", "cafe2", "--db", colliding_export).stdout == "beef1b\n"
    result = run(
        "leaves", "beef1a", "--db", colliding_export, expect=2, prog_name="convgraph"
    )
    assert result.stderr == (
        "Error: beef1a is a node of conversation cafe1: convgraph leaves cafe1\n"
    )


def test_a_parquet_dataset_takes_prefixes(tmp_path):
    pytest.importorskip("pyarrow")
    dataset = tmp_path / "dataset"
    run("export", "--format", "parquet", "-o", dataset, "--db", LOGS)
    stats = run("stats", "01jb1h", "01jb5sd", "--csv", "--db", dataset).stdout
    # A forked thread's id names its tree, as a whole id does.
    assert [line.split(",")[0] for line in stats.splitlines()[1:]] == [
        "01jb1haiku000000000000000",
        "01jb0sourdough0000000000000",
    ]
    result = run("stats", "01jb", "--db", dataset, expect=2)
    assert result.stderr.splitlines() == [
        "Error: 01jb is ambiguous: it begins 5 ids:",
        "  01jb0sourdough0000000000000  conversation",
        "  01jb1haiku000000000000000  conversation",
        "  01jb2hashmap0000000000000  conversation",
        "  01jb3translate00000000000  conversation",
        "  01jb5sdfork0thread00000000  conversation in tree"
        " 01jb0sourdough0000000000000",
    ]


def shortest_prefix(wanted: str, ids: list[str]) -> str:
    """The shortest prefix (of `MIN_PREFIX` characters or more) that begins
    `wanted` alone among `ids`."""
    return next(
        wanted[:length]
        for length in range(MIN_PREFIX, len(wanted) + 1)
        if [other for other in ids if other.startswith(wanted[:length])] == [wanted]
    )


def test_branch_takes_a_prefix(store):
    from convgraph.model.loading import load_tree
    from convgraph.model.tree import parent

    log, conversation, first, second = store
    prefix = shortest_prefix(second, [first, second, conversation])
    result = run("branch", prefix, "More", "--db", log.path, "-m", "echo")
    node = result.stdout.splitlines()[0].removeprefix("node ")
    assert parent(load_tree(conversation, log.path), node) == second


def test_browse_resolves_its_conversation_before_it_opens():
    pytest.importorskip("textual")
    result = run("browse", "01jb2hm06g", "--db", LOGS, expect=2, prog_name="convgraph")
    assert result.stderr == (
        "Error: 01jb2hm06g000000000000000 is a node of conversation"
        f" {HASHMAP}: convgraph browse {HASHMAP}\n"
    )
    result = run("browse", "01jb", "--db", LOGS, expect=2)
    assert result.stderr.splitlines()[0] == "Error: 01jb is ambiguous: it begins 5 ids:"


def test_regenerate_takes_a_prefix(store):
    from convgraph.model.loading import load_tree
    from convgraph.model.tree import siblings
    from convgraph.store import regenerate

    log, conversation, first, second = store
    prefix = shortest_prefix(second, [first, second, conversation])
    result = regenerate(prefix, log.path, models=["echo"])
    (answer,) = result.answers
    assert siblings(load_tree(conversation, log.path), second) == [answer.node_id]


@pytest.mark.slow  # a database an example: seconds
@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    ids=st.sets(st.text("ab0", min_size=2, max_size=6), min_size=1, max_size=12),
    typed=st.text("ab0", min_size=1, max_size=6),
)
def test_resolution_is_the_rule_on_any_ids(tmp_path, ids, typed):
    """On any set of response ids, `resolve_node` is the rule said plainly:
    the whole id, else the one id a prefix of 4 or more begins, else an
    ambiguous prefix lists them in order, else unknown."""
    path = tmp_path / f"{len(list(tmp_path.iterdir()))}.db"
    conn = legacy_database(path)
    for index, node in enumerate(sorted(ids)):
        add_response(
            conn, node, "zconv", f"prompt {node}", datetime_utc=timestamp(index)
        )
    conn.commit()
    conn.close()
    begun = sorted(node for node in ids if node.startswith(typed))
    with open_logs(path) as logs:
        if typed in ids or (len(typed) >= MIN_PREFIX and len(begun) == 1):
            expected = typed if typed in ids else begun[0]
            assert logs.resolve_node(typed) == expected
        elif len(typed) >= MIN_PREFIX and begun:
            with pytest.raises(AmbiguousId) as raised:
                logs.resolve_node(typed)
            assert [line.split()[0] for line in raised.value.candidates] == begun[:8]
            assert raised.value.more == (len(begun) > 8)
        else:
            with pytest.raises(UnknownNode):
                logs.resolve_node(typed)
