"""`convgraph import`: chat exports written into llm's message store.

Every test reads the result back with real readers: convgraph's own (the
imported trees must be the export's trees), and llm's (`llm logs --json`,
`llm -c --cid` with the offline echo model, `LogStore`). The rows written by
hand are compared with the rows llm's own `LogStore.log` writes for the same
responses.
"""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from convgraph.errors import DatabaseError
from convgraph.model.loading import read_tree
from convgraph.sources import open_logs
from convgraph.sources.chat.exports import conversation_records
from convgraph.store.importer import (
    ImportRefused,
    import_export,
    plan_conversation,
)
from tests.chat_exports import (
    chatgpt_branches,
    chatgpt_chain,
    chatgpt_export,
    chatgpt_hostile,
    chatgpt_tools,
    claude_export,
    webui_export,
    write_json,
    write_zip,
)
from tests.databases import LlmLog
from tests.helpers import file_digest, read_forest, run, run_on_a_terminal

EXAMPLE = Path(__file__).parent.parent / "examples" / "chatgpt-export.zip"


# -- helpers -----------------------------------------------------------------------


def plans_of(source: Path) -> list[Any]:
    """The import plan of every conversation of an export (test's own read)."""
    with open_logs(source) as export:
        return [
            plan_conversation(
                conversation.id,
                conversation.name,
                conversation_records(conversation, export.format),
                export.format,
            )
            for conversation in export.conversations()
            if conversation_records(conversation, export.format)
        ]


def turn_ids(source: Path) -> dict[str, str]:
    """Export node id -> turn id, for every node of the export."""
    return {
        turn.record["id"]: turn.turn_id
        for plan in plans_of(source)
        for thread in plan.threads
        for turn in thread.turns
    }


def text(value: str | None) -> str:
    """A text as both readers compare: llm's store has no "no prompt", only ""."""
    return value or ""


def moment(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def node_view(graph: Any, node: str) -> tuple:
    attributes = graph.nodes[node]
    return (
        text(attributes["prompt"]),
        text(attributes["response"]),
        text(attributes["system"]),
        attributes["model"],
        moment(attributes["datetime_utc"]),
        attributes["input_tokens"],
        attributes["output_tokens"],
        attributes["duration_ms"],
    )


def assert_same_trees(source: Path, target: Path) -> int:
    """Every tree of the export is a tree of the target, node for node: the
    same nodes, edges, texts, models, times and usage, and the same name.
    Returns the number of nodes compared."""
    ids = turn_ids(source)
    plans = {plan.conversation_id: plan for plan in plans_of(source)}
    compared = 0
    with open_logs(source) as export, open_logs(target) as imported:
        export_trees = export.tree_ids()
        assert len(imported.tree_ids()) == len(export_trees)
        for tree_id in export_trees:
            before, _ = read_tree(export, tree_id)
            after, problems = read_tree(imported, plans[tree_id].thread_id)
            assert problems == []
            assert after.graph["name"] == before.graph["name"]
            assert len(after) == len(before)
            assert sorted(after.edges) == sorted(
                (ids[parent], ids[child]) for parent, child in before.edges
            )
            for node in before:
                assert node_view(after, ids[node]) == node_view(before, node), node
                assert after.nodes[ids[node]]["source"] == "turns"
            compared += len(before)
    return compared


@pytest.fixture
def exports(tmp_path: Path) -> dict[str, Path]:
    """One export file per format, as the apps hand them over."""
    return {
        "chatgpt": write_zip(
            tmp_path / "chatgpt.zip",
            {
                "conversations.json": [
                    chatgpt_branches(),
                    chatgpt_tools(),
                    chatgpt_chain(60),
                ],
                "user.json": {"id": "user-1"},
            },
        ),
        "claude": write_json(tmp_path / "claude.json", claude_export()),
        "openwebui": write_json(tmp_path / "openwebui.json", webui_export()),
        "hostile": write_json(tmp_path / "hostile.json", chatgpt_hostile()),
        "example": EXAMPLE,
    }


def llm_logs(directory: Path, *args: str) -> Any:
    """`llm logs --json ARGS` on the logs.db in `directory`, parsed."""
    with LlmLog(directory) as log:
        return json.loads(log.cli("logs", "--json", "-n", "0", *args))


# -- the trees ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "nodes"),
    [("chatgpt", 66), ("claude", 6), ("openwebui", 5), ("hostile", 5), ("example", 12)],
)
def test_imported_trees_are_the_exports_trees(exports, tmp_path, name, nodes):
    target = tmp_path / "logs.db"
    summary = import_export(exports[name], target)
    assert summary.created
    assert (summary.nodes, summary.skipped) == (nodes, 0)
    assert assert_same_trees(exports[name], target) == nodes


def test_forest_tables_agree(exports, tmp_path):
    """The whole-file read (vectorized) sees the trees the one-tree read sees:
    per tree, the same number of nodes and of roots."""
    target = tmp_path / "logs.db"
    import_export(exports["example"], target)
    export = read_forest(exports["example"])
    imported = read_forest(target)
    names = {plan.thread_id: plan.conversation_id for plan in plans_of(EXAMPLE)}

    def shape(forest: Any, rename: dict[str, str]) -> dict[str, tuple[int, int]]:
        nodes = forest.nodes
        roots = nodes[nodes["parent_id"].isna()]
        return {
            rename.get(tree, tree): (
                int((nodes["tree_id"] == tree).sum()),
                int((roots["tree_id"] == tree).sum()),
            )
            for tree in nodes["tree_id"].unique()
        }

    assert shape(imported, names) == shape(export, {})
    assert shape(export, {}) == {
        "68e0c0de-0001-4000-8000-000000000000": (4, 2),
        "68e0c0de-0002-4000-8000-000000000000": (2, 1),
        "68e0c0de-0003-4000-8000-000000000000": (4, 3),
        "68e0c0de-0004-4000-8000-000000000000": (2, 1),
    }


@pytest.mark.slow
def test_long_chain_is_imported_whole(tmp_path):
    """The 2,000-step chain of the ChatGPT test export: one tree, one thread,
    each turn's parent the turn before it."""
    source = write_json(tmp_path / "export.json", chatgpt_export())
    target = tmp_path / "logs.db"
    summary = import_export(source, target)
    assert (summary.imported, summary.nodes, summary.threads) == (3, 2006, 5)
    assert assert_same_trees(source, target) == 2006


def test_branches_become_forks_of_the_active_branch(exports, tmp_path):
    """ChatGPT's conversation with a regenerated first answer and an edited
    prompt: the active branch (a1b, a2e) is the first thread; a2 is a fork
    from a1b's answer; a1, another root, a thread forked from the first."""
    target = tmp_path / "logs.db"
    import_export(exports["chatgpt"], target)
    ids = turn_ids(exports["chatgpt"])
    (plan,) = [
        p for p in plans_of(exports["chatgpt"]) if p.conversation_id == "conv-monad"
    ]
    conn = sqlite3.connect(target)
    turns = dict(conn.execute("select id, thread_id from turns"))
    threads = {
        row[0]: row[1:]
        for row in conn.execute("select id, forked_from, tip_message_hash from threads")
    }
    tips = dict(conn.execute("select id, tip_message_hash from turns"))
    main = plan.thread_id
    assert turns[ids["a1b"]] == turns[ids["a2e"]] == main
    assert threads[main] == (None, tips[ids["a2e"]])
    fork = turns[ids["a2"]]
    assert threads[fork] == (main, tips[ids["a2"]])
    other_root = turns[ids["a1"]]
    assert threads[other_root] == (main, tips[ids["a1"]])
    assert len({main, fork, other_root}) == 3
    # The fork shares the history up to a1b's answer: its turn's input
    # hangs below that answer, as LogStore.fork leaves it.
    parent_of_a2 = conn.execute(
        "select m.parent_hash from turns t join messages m"
        " on m.hash = t.parent_message_hash where t.id = ?",
        [ids["a2"]],
    ).fetchone()[0]
    assert parent_of_a2 == tips[ids["a1b"]]
    conn.close()


# -- llm's readers ----------------------------------------------------------------------


def test_llm_logs_lists_the_imported_prompts_and_responses(exports, tmp_path):
    import_export(exports["chatgpt"], tmp_path / "logs.db")
    ids = turn_ids(exports["chatgpt"])
    plans = {plan.conversation_id: plan for plan in plans_of(exports["chatgpt"])}
    rows = llm_logs(tmp_path, "--cid", plans["conv-monad"].thread_id)
    assert [
        (row["id"], row["prompt"], row["response"], row["model"], row["datetime_utc"])
        for row in rows
    ] == [
        (
            ids["a1b"],
            "What is a monad?",
            "A burrito.",
            "gpt-4o",
            "2024-03-01T12:00:20+00:00",
        ),
        (ids["a2e"], "An example?", "Maybe.", "gpt-4o", "2024-03-01T12:01:00+00:00"),
    ]
    assert {row["conversation_name"] for row in rows} == {"Monads"}
    rows = llm_logs(tmp_path, "--cid", plans["conv-tools"].thread_id)
    assert [(row["prompt"], row["response"], row["system"]) for row in rows] == [
        (
            "What is in this picture?\n[1 image, 1 file]",
            "It shows 2.",
            "I am a chemist.\n\nAnswer briefly.",
        ),
        ("And now?", "", "I am a chemist.\n\nAnswer briefly."),
    ]
    # Every imported turn is listed, once.
    everything = llm_logs(tmp_path)
    assert sorted(row["id"] for row in everything) == sorted(ids.values())


def test_llm_search_finds_imported_text(exports, tmp_path):
    """The search rows are written with llm's own SQL: `llm logs -q` finds them."""
    import_export(exports["claude"], tmp_path / "logs.db")
    ids = turn_ids(exports["claude"])
    rows = llm_logs(tmp_path, "-q", "even")
    assert [row["id"] for row in rows] == [ids["as2"]]


def chain_of(directory: Path, message_hash: str | None) -> list[tuple[str, str]]:
    """The messages llm reads back up to `message_hash`: (role, text)."""
    import sqlite_utils
    from llm.logs import LogStore

    db = sqlite_utils.Database(directory / "logs.db")
    try:
        return [
            (
                message.role,
                "".join(getattr(part, "text", "") or "" for part in message.parts),
            )
            for message in LogStore(db).load_chain(message_hash)
        ]
    finally:
        db.close()


def continue_with_echo(directory: Path, thread_id: str, prompt: str) -> dict:
    """`llm -m echo -c --cid THREAD PROMPT`: what echo answered, and the new
    turn's row."""
    with LlmLog(directory) as log:
        answer = json.loads(log.cli("-m", "echo", "-c", "--cid", thread_id, prompt))
        turn = log.latest_turn()
    conn = sqlite3.connect(directory / "logs.db")
    conn.row_factory = sqlite3.Row
    row = dict(conn.execute("select * from turns where id = ?", [turn]).fetchone())
    conn.close()
    return {"answer": answer, "turn": row}


def test_llm_continues_a_fork_with_its_whole_history(exports, tmp_path):
    """`llm -c --cid` on the branch that was left behind (the edited prompt's
    other answer): llm sends that branch's history, and convgraph sees the new
    turn as a child of the branch's last node."""
    import_export(exports["chatgpt"], tmp_path / "logs.db")
    ids = turn_ids(exports["chatgpt"])
    conn = sqlite3.connect(tmp_path / "logs.db")
    fork = conn.execute("select thread_id from turns where id = ?", [ids["a2"]])
    fork = fork.fetchone()[0]
    conn.close()
    result = continue_with_echo(tmp_path, fork, "And a list?")
    assert result["answer"]["prompt"] == "And a list?"
    turn = result["turn"]
    assert (turn["thread_id"], turn["model"]) == (fork, "echo")
    # The history llm gave the model is the prompt's messages, which llm
    # stores as the turn's input chain.
    assert chain_of(tmp_path, turn["parent_message_hash"]) == [
        ("user", "What is a monad?"),
        ("assistant", "A burrito."),
        ("user", "Simpler?"),
        ("assistant", "A box."),
        ("user", "And a list?"),
    ]
    with open_logs(tmp_path / "logs.db") as logs:
        tree, _ = read_tree(logs, logs.tree_id_of_node(turn["id"]))
    assert tree.graph["name"] == "Monads"
    assert list(tree.predecessors(turn["id"])) == [ids["a2"]]
    assert len(tree) == 5


def test_llm_continues_claude_and_openwebui_conversations(exports, tmp_path):
    """Claude.ai's export names no model: llm continues with its default (here
    echo, with -m). Open WebUI's models are the app's ("llama3"), which llm
    must know to load the conversation: an alias makes it so."""
    import_export(exports["claude"], tmp_path / "logs.db")
    import_export(exports["openwebui"], tmp_path / "logs.db")
    plans = {
        plan.conversation_id: plan
        for source in (exports["claude"], exports["openwebui"])
        for plan in plans_of(source)
    }
    primes = continue_with_echo(tmp_path, plans["claude-primes"].thread_id, "Three?")
    assert chain_of(tmp_path, primes["turn"]["parent_message_hash"]) == [
        ("user", "Name a prime."),
        ("assistant", "11"),
        ("user", "Name an even prime.\n[1 file]"),
        ("assistant", "2\n\nIt is the only one."),
        ("user", "Three?"),
    ]
    with LlmLog(tmp_path) as log:
        log.cli("aliases", "set", "llama3", "echo")
    greet = continue_with_echo(tmp_path, plans["chat-greet"].thread_id, "Another")
    assert greet["answer"]["system"] == ""
    assert chain_of(tmp_path, greet["turn"]["parent_message_hash"]) == [
        ("system", "Be terse."),
        ("user", "Hi"),
        ("assistant", "Hello!"),
        ("user", "Tell a joke\n[1 image]"),
        ("assistant", "No."),
        ("user", "Another"),
    ]


def test_rows_are_the_rows_llm_logstore_log_writes(tmp_path):
    """The same conversation written by llm's own `LogStore.log` (one
    `Response.from_dict` per node, with its whole history, its id and its
    time) and by the import: the same messages, parts, turns, search rows and
    threads. Only duration_ms differs: llm times its own calls (0 for a
    response it did not time), the export does not say (NULL)."""
    import llm
    import sqlite_utils
    from llm.logs import LogStore
    from llm.parts import Message

    conversations = [chatgpt_branches(), chatgpt_tools()]
    source = write_json(tmp_path / "export.json", conversations)
    imported = tmp_path / "imported" / "logs.db"
    import_export(source, imported)

    class AppModel(llm.Model):
        def __init__(self, model_id: str | None):
            self.model_id = model_id

        def execute(self, prompt, stream, response, conversation=None):
            raise AssertionError("never called")

    reference = tmp_path / "reference.db"
    db = sqlite_utils.Database(reference)
    store = LogStore(db)
    for plan in plans_of(source):
        messages: dict[str, list] = {}
        for thread in plan.threads:
            fork_messages = messages[thread.fork_node] if thread.fork_node else []
            store.create_thread(
                name=plan.name,
                tip=store.ensure_chain(fork_messages) if fork_messages else None,
                forked_from=thread.forked_from,
                id=thread.thread_id,
            )
            for turn in thread.turns:
                record = turn.record
                history = list(messages[turn.parent]) if turn.parent else []
                if turn.parent is None and record["system"]:
                    history.append(llm.system(record["system"]))
                if record["prompt"] is not None:
                    history.append(llm.user(record["prompt"]))
                if record["response"] is not None:
                    answer = [llm.assistant(record["response"])]
                else:  # a prompt never answered: an answer without parts
                    answer = [Message(role="assistant", parts=[])]
                response = llm.Response.from_dict(
                    {
                        "model": record["model"],
                        "prompt": {"messages": [m.to_dict() for m in history]},
                        "messages": [m.to_dict() for m in answer],
                        "id": turn.turn_id,
                    },
                    model=AppModel(record["model"]),
                )
                response._start_utcnow = datetime.fromisoformat(record["datetime_utc"])
                store.log(response, thread_id=thread.thread_id)
                messages[record["id"]] = history + answer
    db.close()

    def rows(path: Path, sql: str) -> list[tuple]:
        conn = sqlite3.connect(path)
        try:
            return sorted(conn.execute(sql).fetchall(), key=repr)
        finally:
            conn.close()

    turn_columns = (
        "id, thread_id, parent_message_hash, tip_message_hash, model,"
        " resolved_model, options_json, schema_id, input_tokens, output_tokens,"
        " token_details, datetime_utc, response_json"
    )
    for sql in (
        "select hash, parent_hash, role, provider_metadata from messages",
        "select message_hash, position, type, tool_name, text, payload from parts",
        f"select {turn_columns} from turns",
        "select turn_id, prompt, response from turn_search",
        "select id, name, tip_message_hash, forked_from from threads",
    ):
        assert rows(imported, sql) == rows(reference, sql), sql
    assert rows(reference, "select distinct duration_ms from turns") == [(0,)]
    assert rows(imported, "select distinct duration_ms from turns") == [(None,)]
    # And llm finds nothing wrong with the stored messages' hashes.
    db = sqlite_utils.Database(imported)
    assert LogStore(db).verify() == []
    db.close()


# -- again, and dry runs -------------------------------------------------------------------


def test_a_second_import_writes_nothing(exports, tmp_path):
    target = tmp_path / "logs.db"
    first = run("import", exports["chatgpt"], "--db", target)
    digest = file_digest(target)
    second = run("import", exports["chatgpt"], "--db", target)
    assert file_digest(target) == digest
    assert second.stdout == (
        f"Imported 0 conversations (0 nodes as turns, 0 threads) into {target}\n"
        "Skipped 3 conversations imported before\n"
    )
    assert first.stdout.startswith(
        f"Created {target} with llm's tables\n"
        f"Imported 3 conversations (66 nodes as turns, 5 threads) into {target}\n"
    )


def test_the_import_says_what_llm_takes_next(tmp_path):
    """One line a conversation with the id `llm -c --cid` takes, the thread
    of its current branch (its tree's id too), then where the other
    branches are."""
    target = tmp_path / "logs.db"
    result = run("import", EXAMPLE, "--db", target)
    plans = plans_of(EXAMPLE)
    assert result.stdout == (
        f"Created {target} with llm's tables\n"
        f"Imported 4 conversations (12 nodes as turns, 8 threads) into {target}\n"
        + "".join(
            f"  {plan.thread_id}  {plan.name}  ({plan.node_count} nodes)\n"
            for plan in plans
        )
        + "Continue one where it was left (its current branch):"
        " llm -c --cid ID 'your prompt'\n"
        "Its other branches: convgraph tree ID draws them, and"
        " convgraph branch NODE_ID 'your prompt' goes on from any node\n"
    )
    # Each id is a tree's, and the thread llm continues: the first one.
    listed = [line.split()[0] for line in result.stdout.splitlines()[2:6]]
    trees = json.loads(run("conversations", "--db", target, "--json").stdout)
    assert listed == [tree["tree_id"] for tree in trees]
    conn = sqlite3.connect(target)
    try:
        for thread in listed:
            (forked_from,) = conn.execute(
                "select forked_from from threads where id = ?", [thread]
            ).fetchone()
            assert forked_from is None  # the first thread, the others fork
    finally:
        conn.close()


def test_a_large_import_lists_twenty(tmp_path):
    conversations = [
        {**chatgpt_chain(2), "conversation_id": f"conv-{index:02d}", "id": f"c{index}"}
        for index in range(23)
    ]
    source = write_json(tmp_path / "many.json", conversations)
    result = run("import", source, "--db", tmp_path / "logs.db")
    lines = result.stdout.splitlines()
    assert len([line for line in lines if line.startswith("  01")]) == 20
    assert "  and 3 more: convgraph conversations lists every id" in lines


def test_the_same_conversation_from_a_grown_export_gets_its_new_nodes(tmp_path):
    """An export downloaded again after the conversation went on: the turns
    imported before are not written twice, the new one is added."""
    target = tmp_path / "logs.db"
    import_export(write_json(tmp_path / "old.json", [chatgpt_chain(3)]), target)
    summary = import_export(
        write_json(tmp_path / "new.json", [chatgpt_chain(4)]), target
    )
    assert (summary.imported, summary.skipped) == (0, 0)
    assert [(c.conversation_id, c.nodes) for c in summary.grown] == [("conv-chain", 1)]


def test_dry_run_writes_nothing(exports, tmp_path):
    target = tmp_path / "logs.db"
    result = run("import", exports["example"], "--db", target, "--dry-run")
    assert not target.exists()
    plans = plans_of(EXAMPLE)
    assert result.stdout == (
        f"Would create {target} with llm's tables\n"
        f"Would import 4 conversations (12 nodes as turns, 8 threads) into {target}\n"
        + "".join(
            f"  {plan.thread_id}  {plan.name}  ({plan.node_count} nodes)\n"
            for plan in plans
        )
        + "Nothing was written (--dry-run)\n"
    )
    # Against a file that has the first conversation already.
    with LlmLog(tmp_path) as log:
        log.prompt("hello")
    import_export(
        write_zip(tmp_path / "one.zip", {"conversations.json": [chatgpt_branches()]}),
        target,
    )
    digest = file_digest(target)
    result = run("import", exports["chatgpt"], "--db", target, "--dry-run")
    assert file_digest(target) == digest
    assert result.stdout.splitlines()[:2] == [
        f"Would import 2 conversations (62 nodes as turns, 2 threads) into {target}",
        "Skipped 1 conversation imported before",
    ]


def test_empty_conversations_are_counted_and_named(tmp_path):
    """A conversation with nothing said in it has no turn to write: the
    import says so and names it, instead of dropping it silently."""
    export = write_json(
        tmp_path / "conversations.json",
        [
            {"uuid": "claude-blank", "name": "Untitled", "chat_messages": []},
            *claude_export(),
            {"uuid": "claude-nameless", "name": "", "chat_messages": []},
        ],
    )
    target = tmp_path / "logs.db"
    result = run("import", export, "--db", target, "--dry-run")
    assert result.stdout.splitlines()[1:] == [
        f"Would import 2 conversations (6 nodes as turns, 4 threads) into {target}",
        *[
            f"  {plan.thread_id}  {plan.name}  ({plan.node_count} nodes)"
            for plan in plans_of(export)
        ],
        "Left out 2 empty conversations (no prompt and no answer):",
        "  claude-blank  Untitled",
        "  claude-nameless  no title",
        "Nothing was written (--dry-run)",
    ]
    summary = import_export(export, target)
    assert (summary.imported, summary.skipped) == (2, 0)
    assert summary.empty == [("claude-blank", "Untitled"), ("claude-nameless", None)]


def test_progress_is_reported_in_bytes_of_the_export(exports, tmp_path):
    seen = []
    summary = import_export(
        exports["claude"],
        tmp_path / "logs.db",
        progress=lambda *report: seen.append(report),
    )
    results = summary.conversations
    assert [(r.conversation_id, r.nodes, r.threads, r.status) for r in results] == [
        ("claude-primes", 4, 3, "imported"),
        ("claude-old", 2, 1, "imported"),
    ]
    size = Path(exports["claude"]).stat().st_size
    assert seen[0] == ("importing conversations", 0, size)
    assert seen[-1] == ("importing conversations", size, size)
    counts = [done for _, done, _ in seen]
    assert counts == sorted(counts)


def test_a_terminal_sees_a_progress_bar(tmp_path):
    """On a terminal (stderr a tty), the bytes of the export read are shown
    on a bar while conversations are written, erased at the end; piped,
    only the summary is printed."""
    from tests.test_progress import screen_of

    source = write_json(tmp_path / "export.json", chatgpt_export())
    database = tmp_path / "logs.db"
    # convgraph on a terminal wide enough for the line that names the
    # temporary path, its bar shown at once.
    width = max(80, len(f"Created {database} with llm's tables") + 10)
    shown = run_on_a_terminal(
        "import",
        source,
        "--db",
        database,
        stream="both",
        size=(24, width),
        env={**os.environ, "CONVGRAPH_PROGRESS_DELAY": "0"},
    ).shown
    screen = shown.decode()
    assert "importing conversations" in screen
    assert "Imported 3 conversations (2,006 nodes as turns, 5 threads)" in screen
    left = screen_of(shown, columns=width)
    # The summary, and no bar, is left.
    assert left[0] == f"Created {database} with llm's tables"
    assert not any("importing conversations" in line for line in left)


# -- targets ---------------------------------------------------------------------------------


def test_import_beside_llms_own_history(exports, tmp_path):
    """A logs.db that llm wrote: its conversations stay, the export's join."""
    with LlmLog(tmp_path) as log:
        first = log.prompt("What is a tree?")
    before = read_forest(tmp_path / "logs.db").nodes
    import_export(exports["claude"], tmp_path / "logs.db")
    after = read_forest(tmp_path / "logs.db").nodes
    assert len(before) == 1
    assert len(after) == 1 + 6
    assert first in set(after["id"])
    # llm -c (no id) still goes on from llm's own latest conversation: the
    # imported ids are dated 2024, llm's own now.
    with LlmLog(tmp_path) as log:
        own_thread = log.thread_of(first)
        log.cli("-m", "echo", "-c", "again")
        assert log.thread_of(log.latest_turn()) == own_thread


def test_an_older_llms_database_is_brought_up_to_date(seed_db, tmp_path):
    """A legacy logs.db (llm 0.31's tables): llm's migrations run first, as
    llm's next command would run them; the old conversations stay readable."""
    before = len(read_forest(seed_db).nodes)
    digest = file_digest(seed_db)
    said = run("import", EXAMPLE, "--db", seed_db, "--dry-run").stdout
    assert file_digest(seed_db) == digest
    assert said.splitlines()[0] == (
        f"Would bring {seed_db} up to llm's current tables first (llm's own migrations)"
    )
    summary = import_export(EXAMPLE, seed_db)
    assert summary.upgraded and not summary.created
    assert len(read_forest(seed_db).nodes) == before + 12


@pytest.mark.parametrize(
    "kind", ["export", "sqlite", "json", "directory", "llm-source"]
)
def test_refusals_are_one_line(exports, tmp_path, kind):
    source = exports["claude"]
    if kind == "export":
        target, message = source, "is the export being imported, not llm's database"
    elif kind == "sqlite":
        target = tmp_path / "other.db"
        conn = sqlite3.connect(target)
        conn.execute("create table notes (id integer primary key, body text)")
        conn.commit()
        conn.close()
        message = "is an SQLite database but not llm's (no llm tables)"
    elif kind == "json":
        target = exports["openwebui"]
        message = "is not an llm database (not SQLite)"
    elif kind == "directory":
        target, message = tmp_path, "is a directory, not an llm database"
    else:
        (tmp_path / "llm").mkdir()
        with LlmLog(tmp_path / "llm") as log:
            log.prompt("hi")
        source, target = log.path, tmp_path / "logs.db"
        message = "is an llm database, not a ChatGPT, Claude.ai or Open WebUI export"
    digest = file_digest(target) if target.is_file() else None
    result = run("import", source, "--db", target, expect=2)
    assert result.stderr.count("\n") == 1
    assert message in result.stderr
    assert "Traceback" not in result.output
    if digest is not None:
        assert file_digest(target) == digest
    refused = DatabaseError if kind == "llm-source" else ImportRefused
    with pytest.raises(refused, match="llm"):
        import_export(source, target)


@pytest.mark.slow
def test_llm_logging_beside_the_import_loses_nothing(tmp_path):
    """llm logs prompts in a child process while a 400-step conversation and
    the example are imported into the same file."""
    from tests.llm_logging import LlmLogging

    with LlmLog(tmp_path) as log:
        log.prompt("warm up")
    source = write_json(
        tmp_path / "export.json", [chatgpt_chain(400), *json.loads(_example_json())]
    )
    with LlmLogging(tmp_path, prompts=15, interval=0.05) as logging:
        logging.wait_until_logging()
        summary = import_export(source, tmp_path / "logs.db")
    assert logging.errors == []
    assert summary.nodes == 400 + 12
    # Every prompt llm was asked is logged beside the imported turns.
    assert logging.logged == logging.prompts + summary.nodes


def _example_json() -> str:
    import zipfile

    with zipfile.ZipFile(EXAMPLE) as archive:
        name = next(n for n in archive.namelist() if n.endswith("conversations.json"))
        return archive.read(name).decode("utf-8")
