"""`convgraph branch` with several models or tries, and `convgraph regenerate`:
one history, many answers, each logged as a sibling, and the faults that
must not lose them.

The databases are written by llm 0.36 with llm-echo (echo answers with the
prompt and system it was given). The concurrent cases use the suite's own
model plugin (`tests/plugins/llm_slow_model.py`), registered for this
process: its models answer with the exact messages they were sent, after a
configurable delay, or fail mid-stream. How long a fan-out takes is measured
by `benchmarks/bench_fanout.py`, never here.
"""

from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from convgraph.cli import write
from convgraph.cli.progress import LiveProgress, progress_line
from convgraph.model.loading import load_tree, load_tree_of_node
from convgraph.model.tree import children, roots
from convgraph.model.tree import path as path_to
from convgraph.store.branch import DEFAULT_PARALLEL, fan_out, regenerate
from convgraph.store.fanout import Job, Request
from tests.helpers import SAFETY_SECONDS, file_digest, run, wait_until
from tests.plugins.llm_slow_model import SlowModel, registered

ROOT = Path(__file__).parent.parent


def texts(tree, node: str) -> list[list[str]]:
    """The [role, text] pairs a node's path holds, as the slow models see a
    history: each ancestor's prompt and response."""
    pairs = []
    for ancestor in path_to(tree, node):
        pairs.append(["user", tree.nodes[ancestor]["prompt"]])
        pairs.append(["assistant", tree.nodes[ancestor]["response"]])
    return pairs


# -- several models from one history ------------------------------------------


def test_every_model_answers_the_same_history_as_a_new_sibling(store):
    log, conversation, first, second = store
    with registered(
        SlowModel("slow", delay=0.05), SlowModel("threaded", asynchronous=False)
    ):
        result = run(
            "branch", second, "Now a graph", "-m", "slow", "-m", "threaded",
            "-m", "echo", "--db", log.path, "--json",
        )  # fmt: skip
    created = json.loads(result.stdout)
    new = [answer["node_id"] for answer in created["answers"]]
    assert [(a["model"], a["attempt"]) for a in created["answers"]] == [
        ("slow", 1),
        ("threaded", 1),
        ("echo", 1),
    ]
    tree = load_tree(conversation, log.path)
    assert sorted(children(tree, second)) == sorted(new)
    history = texts(tree, second)
    for node in new[:2]:
        assert tree.nodes[node]["prompt"] == "Now a graph"
        assert json.loads(tree.nodes[node]["response"]) == [
            *history,
            ["user", "Now a graph"],
        ]
    echoed = json.loads(tree.nodes[new[2]]["response"])
    assert (echoed["prompt"], echoed["system"]) == ("Now a graph", "")
    # Each answer is a fork of its own that llm continues.
    threads = {answer["conversation_id"] for answer in created["answers"]}
    assert len(threads) == 3 and conversation not in threads
    assert {tree.nodes[node]["conversation_id"] for node in new} == threads


def test_json_is_the_new_nodes_the_failures_and_the_compare_table(store):
    log, conversation, first, second = store
    result = run(
        "branch", first, "Why?", "-m", "echo", "-n", "2", "--db", log.path, "--json"
    )
    document = json.loads(result.stdout)
    a, b = (answer["node_id"] for answer in document["answers"])
    threads = [answer["conversation_id"] for answer in document["answers"]]
    tree = load_tree(conversation, log.path)
    nodes = tree.nodes
    assert document == {
        "parent_id": first,
        "answers": [
            {
                "node_id": a,
                "conversation_id": threads[0],
                "model": "echo",
                "attempt": 1,
            },
            {
                "node_id": b,
                "conversation_id": threads[1],
                "model": "echo",
                "attempt": 2,
            },
        ],
        "failures": [],
        "interrupted": False,
        "compare": [
            {
                "id": node,
                "model": "echo",
                "input_tokens": nodes[node]["input_tokens"],
                "output_tokens": nodes[node]["output_tokens"],
                "duration_ms": nodes[node]["duration_ms"],
                "response_length": len(nodes[node]["response"]),
                "subtree_size": 1,
                "active": nodes[node]["active"],
                "preferred": False,
                "note": None,
                "similarity": {
                    other: 1.0
                    if {node, other} == {a, b}
                    else pytest.approx(document["compare"][index]["similarity"][other])
                    for other in (second, a, b)
                    if other != node
                },
            }
            for index, node in enumerate([second, a, b])
        ],
    }
    # The last answer logged is where the conversation goes on.
    assert [nodes[node]["active"] for node in (second, a, b)] == [False, False, True]
    # The same records as `compare` prints for the node.
    compared = json.loads(run("compare", first, "--db", log.path, "--json").stdout)
    assert compared == document["compare"]


def test_text_report_lists_the_new_nodes_then_the_compare_table(store):
    log, conversation, first, second = store
    result = run("branch", first, "Why?", "-m", "echo", "-n", "2", "--db", log.path)
    lines = result.stdout.splitlines()
    tree = load_tree(conversation, log.path)
    a, b = children(tree, first)[1:]
    threads = [tree.nodes[node]["conversation_id"] for node in (a, b)]
    assert lines[:3] == [
        f"node {a}  echo  conversation {threads[0]}",
        f"node {b}  echo  conversation {threads[1]}",
        "",
    ]
    compared = run("compare", first, "--db", log.path).stdout.splitlines()
    assert lines[3:-3] == compared
    assert lines[3] == f"3 alternatives after {first}"
    # The llm command that goes on from each new branch (issue 38.8).
    assert lines[-3:] == [
        "Continue one: llm -c --cid THREAD 'your prompt', its THREAD here:",
        f"  {threads[0]}  ({a}, echo)",
        f"  {threads[1]}  ({b}, echo)",
    ]
    assert result.stderr == ""


def test_tries_of_one_model_and_options_reach_every_request(store):
    log, conversation, first, second = store
    result = run(
        "branch", first, "Again", "-m", "echo", "-n", "3", "-o", "example_bool",
        "true", "--db", log.path, "--json",
    )  # fmt: skip
    new = [answer["node_id"] for answer in json.loads(result.stdout)["answers"]]
    tree = load_tree(conversation, log.path)
    assert children(tree, first) == [second, *new]
    for node in new:
        assert json.loads(tree.nodes[node]["response"])["options"] == {
            "example_bool": True
        }


def test_parallel_caps_how_many_run_at_once(store):
    log, conversation, first, second = store
    with registered(SlowModel("slow", delay=0.2)) as counter:
        fan_out(first, "Hm", log.path, models=["slow"], tries=3, parallel=1)
        assert counter.most_running == 1
    # Each answer waits until all three run at once: side by side by proof,
    # not because a pause was long enough.
    with registered(SlowModel("slow", together=3)) as counter:
        result = fan_out(first, "Hm", log.path, models=["slow"], tries=3)
        assert counter.most_running == 3
    assert result.failures == []
    assert len(children(load_tree(conversation, log.path), first)) == 1 + 6


def test_llm_continues_a_fan_out_branch(store):
    log, conversation, first, second = store
    result = fan_out(first, "Graphs?", log.path, models=["echo", "echo"])
    answer = result.answers[1]
    with log:
        turn = log.prompt("And DAGs?", continue_conversation=answer.conversation_id)
    tree = load_tree_of_node(turn, log.path)
    assert path_to(tree, turn) == [first, answer.node_id, turn]


def test_legacy_fan_out_is_new_children_with_the_whole_history(legacy):
    with registered(SlowModel("slow"), SlowModel("threaded", asynchronous=False)):
        result = fan_out(
            "f", "And then?", legacy, models=["slow", "threaded"], system="Be brief"
        )
    assert result.ok and result.parent_id == "f"
    tree = load_tree("t", legacy)
    new = [answer.node_id for answer in result.answers]
    assert set(children(tree, "f")) == set(new)
    for answer in result.answers:
        assert answer.conversation_id == "t"
        node = tree.nodes[answer.node_id]
        assert (node["prompt"], node["system"], node["model"]) == (
            "And then?",
            "Be brief",
            answer.model,
        )
        assert json.loads(node["response"]) == [
            ["system", "You like trees"],
            ["user", "prompt root"],
            ["assistant", "answer to prompt root"],
            ["user", "prompt e"],
            ["assistant", "answer to prompt e"],
            ["user", "prompt f"],
            ["assistant", "answer to prompt f"],
            ["system", "Be brief"],
            ["user", "And then?"],
        ]


def test_on_change_sees_each_answer_grow_chunk_by_chunk(legacy):
    """`job.text` is the answer so far at every change: for a live display
    that shows the text as it streams in (`convgraph browse`)."""
    seen: dict[str, list[str]] = {}

    def watch(jobs: list[Job]) -> None:
        for job in jobs:
            seen.setdefault(job.label, []).append(job.text)

    with registered(
        SlowModel("slow", chunks=4), SlowModel("threaded", chunks=4, asynchronous=False)
    ):
        result = fan_out(
            "f", "And then?", legacy, models=["slow", "threaded"], on_change=watch
        )
    tree = load_tree("t", legacy)
    for answer in result.answers:
        final = tree.nodes[answer.node_id]["response"]
        size = -(-len(final) // 4)  # the plugin's piece size
        grown = ["", *(final[: start + size] for start in range(0, len(final), size))]
        assert len(grown) == 5
        # Each distinct text seen, in order: nothing, then one piece more each
        # time, ending with the whole answer that was logged.
        assert list(dict.fromkeys(seen[answer.model])) == grown


# -- faults ---------------------------------------------------------------------


def test_a_failing_model_leaves_the_others_logged_and_exits_1(store):
    log, conversation, first, second = store
    with registered(
        SlowModel("slow", delay=0.05),
        SlowModel("broken", fail_after=1, reason="connection reset by peer"),
        SlowModel("broken-thread", fail_after=2, asynchronous=False),
    ):
        result = run(
            "branch", first, "Hm", "-m", "slow", "-m", "broken", "-m",
            "broken-thread", "-m", "no-such-model", "--db", log.path, "--json",
            expect=1,
        )  # fmt: skip
    assert result.stderr.splitlines() == [
        "model broken failed: connection reset by peer",
        "model broken-thread failed: connection dropped",
        "unknown model 'no-such-model' (`llm models` lists the models llm knows)",
    ]
    document = json.loads(result.stdout)
    assert [answer["model"] for answer in document["answers"]] == ["slow"]
    assert document["failures"] == [
        {"model": "broken", "attempt": 1, "reason": "connection reset by peer"},
        {"model": "broken-thread", "attempt": 1, "reason": "connection dropped"},
        {
            "model": "no-such-model",
            "attempt": 1,
            "reason": "unknown model (`llm models` lists the models llm knows)",
        },
    ]
    tree = load_tree(conversation, log.path)
    assert children(tree, first) == [second, document["answers"][0]["node_id"]]
    # Nothing half-written: the one answer is the one new turn and thread.
    conn = sqlite3.connect(log.path)
    counts = conn.execute(
        "select (select count(*) from turns), (select count(*) from threads)"
    ).fetchone()
    conn.close()
    assert counts == (3, 2)


def test_a_missing_key_is_one_line_and_the_others_are_kept(store, monkeypatch):
    log, conversation, first, second = store
    monkeypatch.delenv("LLM_ECHO_NEEDS_KEY_KEY", raising=False)
    result = run(
        "branch", first, "Hm", "-m", "echo-needs-key", "-m", "echo",
        "--db", log.path, expect=1,
    )  # fmt: skip
    assert result.stderr == (
        "model echo-needs-key failed: No key found - add one using"
        " 'llm keys set echo-needs-key' or set the LLM_ECHO_NEEDS_KEY_KEY"
        " environment variable\n"
    )
    assert len(children(load_tree(conversation, log.path), first)) == 2


def test_a_request_past_the_timeout_fails_alone(store):
    # slow answers at once, and must do so within the timeout: a few seconds,
    # so that a busy machine cannot make it late; stuck would take an hour.
    log, conversation, first, second = store
    with registered(SlowModel("slow"), SlowModel("stuck", delay=3600)):
        result = run(
            "branch", first, "Hm", "-m", "stuck", "-m", "slow",
            "--timeout", "3", "--db", log.path, expect=1,
        )  # fmt: skip
    assert result.stderr == "model stuck failed: no answer within 3 s (--timeout)\n"
    tree = load_tree(conversation, log.path)
    (new,) = children(tree, first)[1:]
    assert tree.nodes[new]["model"] == "slow"


def test_a_model_raising_system_exit_fails_alone(store):
    """A plugin that calls sys.exit (in its async form and in a thread) ends
    its own request, one line each; the model still answering goes on and
    its answer is logged. The three wait for each other to be in progress,
    so the slower one is mid-answer when the others exit."""
    log, conversation, first, second = store
    with registered(
        SlowModel("exits", exit_after=1, together=3),
        SlowModel("exits-thread", exit_after=0, together=3, asynchronous=False),
        SlowModel("slower", together=3, delay=0.05),
    ):
        result = run(
            "branch", first, "Hm", "-m", "exits", "-m", "exits-thread",
            "-m", "slower", "--db", log.path, "--json", expect=1,
        )  # fmt: skip
    assert result.stderr.splitlines() == [
        "model exits failed: SystemExit: 3",
        "model exits-thread failed: SystemExit: 3",
    ]
    document = json.loads(result.stdout)
    assert [answer["model"] for answer in document["answers"]] == ["slower"]
    tree = load_tree(conversation, log.path)
    assert children(tree, first) == [second, document["answers"][0]["node_id"]]


def test_the_timeout_ends_an_async_model_that_blocks_its_event_loop(store):
    """An async plugin that blocks (a wait that is no await) stalls only its
    own event loop: --timeout ends it and the other model answers. It
    blocks until the test ends (`registered` releases it): were the loop
    shared, the fan-out would wait for it up to the plugin's safety limit,
    and the model would fail as never released, not by the timeout."""
    log, conversation, first, second = store
    with registered(SlowModel("blocks", blocks=True), SlowModel("slow")):
        result = run(
            "branch", first, "Hm", "-m", "blocks", "-m", "slow",
            "--timeout", "3", "--db", log.path, expect=1,
        )  # fmt: skip
    assert result.stderr == "model blocks failed: no answer within 3 s (--timeout)\n"
    tree = load_tree(conversation, log.path)
    (new,) = children(tree, first)[1:]
    assert tree.nodes[new]["model"] == "slow"


def test_nothing_fails_nothing_is_written_when_every_model_is_unknown(store):
    log, conversation, first, second = store
    before = file_digest(log.path)
    result = run("branch", first, "Hm", "-m", "nope", "-n", "2", "--db", log.path,
                 expect=1)  # fmt: skip
    assert (
        result.stderr.splitlines()
        == ["unknown model 'nope' (`llm models` lists the models llm knows)"] * 2
    )
    assert result.stdout == ""
    assert file_digest(log.path) == before


#: The fan-out of the Ctrl-C test, as a user runs it, with the suite's slow
#: models registered; run from the repository's root, where `tests` imports.
#: The slow models would answer after an hour: only Ctrl-C ends them.
#: The child. A background job of a non-interactive shell starts with SIGINT
#: ignored, and Python keeps that: Ctrl-C's handler is put back first.
FAN_OUT = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from tests.plugins.llm_slow_model import SlowModel, registered
from convgraph.cli import cli
with registered(SlowModel("quick"), SlowModel("slow", delay=3600),
                SlowModel("slow-thread", delay=3600, chunks=240, asynchronous=False)):
    cli(sys.argv[1:])
"""


def test_ctrl_c_stops_the_rest_and_keeps_what_completed(store):
    """A real SIGINT to a real process: the quick answer is logged, the slow
    requests are stopped, the exit status is 130. The signal goes once the
    quick answer is in the file (a handshake, not a wait of so many
    seconds); how soon the process then ends is the benchmarks' to measure."""
    log, conversation, first, second = store
    process = subprocess.Popen(
        [sys.executable, "-c", FAN_OUT, "branch", first, "Hm", "-m", "quick",
         "-m", "slow", "-m", "slow-thread", "--db", str(log.path)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "LLM_USER_PATH": str(log.directory)},
    )  # fmt: skip
    try:
        wait_until(
            lambda: (
                process.poll() is not None
                or len(children(load_tree(conversation, log.path), first)) == 2
            ),
            "the quick answer is logged",
            poll=0.05,
        )
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=SAFETY_SECONDS)
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    assert stderr.splitlines() == [
        "model slow stopped: interrupted (Ctrl-C)",
        "model slow-thread stopped: interrupted (Ctrl-C)",
        "interrupted: 1 answer kept",
    ]
    tree = load_tree(conversation, log.path)
    (new,) = children(tree, first)[1:]
    assert tree.nodes[new]["model"] == "quick"
    assert stdout.splitlines()[0].startswith(f"node {new}  quick  conversation ")


#: The child of the second-Ctrl-C test, one request at a time (--parallel
#: 1, so each answer is logged before the next request starts): "quick"
#: answers and is logged; logging "stalls" stalls inside its write
#: transaction (it makes the file argv[1] and waits); "slow" waits its turn.
STALLED_FAN_OUT = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from tests.plugins.llm_slow_model import SlowModel, registered
from convgraph.cli import cli
with registered(SlowModel("quick"), SlowModel("stalls", stall_file=sys.argv[1]),
                SlowModel("slow", delay=3600)):
    cli(sys.argv[2:])
"""


def test_a_second_ctrl_c_exits_at_once_with_one_line(store, tmp_path):
    """Ctrl-C while an answer is being written: the first asks the fan-out
    to stop (it cannot cut the write), the next ends the process at once,
    with status 130 and one line, no traceback. The write it cut is rolled
    back: the file holds the quick answer, whole, and llm goes on using it.
    The signals go once the write is under way (a handshake), and again
    until the process ends (the first two may reach it as one)."""
    import select
    import time

    log, conversation, first, second = store
    stalled = tmp_path / "stalled"
    process = subprocess.Popen(
        [sys.executable, "-c", STALLED_FAN_OUT, str(stalled), "branch", first,
         "Hm", "-m", "quick", "-m", "stalls", "-m", "slow", "--parallel", "1",
         "--db", str(log.path)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "LLM_USER_PATH": str(log.directory)},
    )  # fmt: skip
    try:
        wait_until(
            lambda: process.poll() is not None or stalled.exists(),
            "the stalling answer is being logged",
        )
        deadline = time.monotonic() + SAFETY_SECONDS
        while process.poll() is None and time.monotonic() < deadline:
            process.send_signal(signal.SIGINT)
            # Until it says something (or ends): the line it exits with.
            if select.select([process.stderr], [], [], 0.05)[0]:
                break
        stdout, stderr = process.communicate(timeout=SAFETY_SECONDS)
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    assert stderr == (
        "interrupted: stopped at once; the answers logged before stay logged\n"
    )
    assert stdout == ""
    conn = sqlite3.connect(log.path)
    assert conn.execute("pragma integrity_check").fetchall() == [("ok",)]
    conn.close()
    assert not Path(f"{log.path}-journal").exists()
    tree = load_tree(conversation, log.path)
    (new,) = children(tree, first)[1:]
    assert tree.nodes[new]["model"] == "quick"
    with log:
        turn = log.prompt("And then?", continue_conversation=conversation)
    assert turn in load_tree(conversation, log.path)


def test_one_model_keeps_branch_s_answer_and_its_errors(store):
    """One request is `branch` as before: node and conversation, and a
    failure is an error (status 2)."""
    log, conversation, first, second = store
    lines = run("branch", first, "Hm", "--db", log.path).stdout.splitlines()
    assert [line.split(" ")[0] for line in lines] == [
        "node",
        "conversation",
        "Continue",
    ]
    with registered(SlowModel("broken", fail_after=0)):
        result = run("branch", first, "Hm", "-m", "broken", "--db", log.path, expect=2)
    assert result.stderr == "Error: model broken failed: connection dropped\n"


# -- regenerate -----------------------------------------------------------------


def test_regenerate_asks_the_nodes_prompt_again_as_siblings(store):
    log, conversation, first, second = store
    with registered(SlowModel("slow")):
        result = run(
            "regenerate", second, "-m", "slow", "-m", "echo", "--db", log.path,
            "--json",
        )  # fmt: skip
    document = json.loads(result.stdout)
    new = [answer["node_id"] for answer in document["answers"]]
    assert document["parent_id"] == first
    tree = load_tree(conversation, log.path)
    # Siblings in log order, which is the order the requests started.
    assert set(children(tree, first)) == {second, *new}
    assert [tree.nodes[node]["prompt"] for node in new] == ["And a forest?"] * 2
    assert json.loads(tree.nodes[new[0]]["response"]) == [
        *texts(tree, first),
        ["user", "And a forest?"],
    ]
    # echo answers the same prompt, so its answer is the node's own.
    assert tree.nodes[new[1]]["response"] == tree.nodes[second]["response"]
    assert [record["id"] for record in document["compare"]] == children(tree, first)


def test_regenerate_defaults_to_the_nodes_model_and_its_system(legacy):
    conn = sqlite3.connect(legacy)
    conn.execute(
        "update responses set model = 'slow', system = 'Be kind' where id = 'g'"
    )
    conn.commit()
    conn.close()
    with registered(SlowModel("slow")):
        result = regenerate("g", legacy, tries=2)
    assert result.ok and result.parent_id == "e"
    tree = load_tree("t", legacy)
    assert children(tree, "e")[:2] == ["f", "g"]
    assert set(children(tree, "e")) == {"f", "g", *(a.node_id for a in result.answers)}
    for answer in result.answers:
        node = tree.nodes[answer.node_id]
        assert (node["model"], node["prompt"], node["system"]) == (
            "slow",
            "prompt g",
            "Be kind",
        )
        assert json.loads(node["response"])[-2:] == [
            ["system", "Be kind"],
            ["user", "prompt g"],
        ]


def test_regenerate_a_root_makes_new_roots_of_the_same_tree(store):
    log, conversation, first, second = store
    result = run("regenerate", first, "-n", "2", "--db", log.path, "--json")
    document = json.loads(result.stdout)
    new = [answer["node_id"] for answer in document["answers"]]
    assert document["parent_id"] is None
    tree = load_tree(conversation, log.path)
    assert roots(tree) == [first, *new]
    for node in new:
        assert tree.nodes[node]["prompt"] == "What is a tree?"
        assert json.loads(tree.nodes[node]["response"])["prompt"] == "What is a tree?"
    # The table compares the root with its regenerations.
    assert [record["id"] for record in document["compare"]] == [first, *new]
    assert [record["subtree_size"] for record in document["compare"]] == [2, 1, 1]
    lines = run("regenerate", first, "--db", log.path).stdout.splitlines()
    # Only this run's answers: separate roots are otherwise no alternatives.
    assert lines[2] == "2 alternatives after (new roots)"


def test_regenerate_a_legacy_root_stays_in_its_conversation(legacy):
    result = regenerate("root", legacy, models=["echo"])
    tree = load_tree("t", legacy)
    (answer,) = result.answers
    assert roots(tree) == ["root", answer.node_id]
    assert answer.conversation_id == "t"
    given = json.loads(tree.nodes[answer.node_id]["response"])
    assert (given["prompt"], given["system"]) == ("prompt root", "You like trees")


def test_regenerate_an_unknown_node_is_an_error(legacy):
    before = file_digest(legacy)
    result = run("regenerate", "nope", "--db", legacy, expect=2)
    assert result.stderr == "Error: no node with id 'nope'\n"
    assert file_digest(legacy) == before


# -- the live display -----------------------------------------------------------


def job(state: str, **values) -> Job:
    return Job(Request("echo", 1, "hi", []), "echo #1", state=state, **values)


def test_progress_lines_say_state_tokens_and_time():
    assert [
        progress_line(job("waiting"), 8),
        progress_line(job("streaming", chunks=1, started=1.0, ended=3.5), 8),
        progress_line(job("done", output_tokens=42, started=1.0, ended=3.0), 8),
        progress_line(job("failed", reason="No key found", started=1.0, ended=2), 8),
        progress_line(job("stopped", reason="interrupted (Ctrl-C)"), 8),
    ] == [
        "echo #1   waiting",
        "echo #1   streaming  1 chunk  2.5 s",
        "echo #1   done       42 tokens  2.0 s",
        "echo #1   failed     No key found",
        "echo #1   stopped    interrupted (Ctrl-C)",
    ]


class Terminal:
    """A stream that says it is a terminal and keeps what was written."""

    def __init__(self):
        self.written = []

    def isatty(self):
        return True

    def write(self, text):
        self.written.append(text)

    def flush(self):
        pass


def test_the_display_redraws_in_place_on_a_terminal_only():
    terminal = Terminal()
    display = LiveProgress(terminal)
    jobs = [job("waiting"), job("waiting")]
    display(jobs)
    jobs[0].state = "failed"
    jobs[0].reason = "boom"
    display(jobs)
    assert terminal.written == [
        "\x1b[2Kecho #1  waiting\n\x1b[2Kecho #1  waiting\n",
        "\x1b[2F\x1b[2Kecho #1  failed     boom\n\x1b[2Kecho #1  waiting\n",
    ]
    piped = LiveProgress(io.StringIO())
    assert piped.enabled is False


def test_the_default_parallel_is_one_number():
    assert write.DEFAULT_PARALLEL == DEFAULT_PARALLEL


def test_a_fan_out_from_inside_a_running_event_loop(store):
    """As in Jupyter, where a loop already runs: the fan-out runs its own in
    a thread of its own and answers the same."""
    import asyncio

    log, conversation, first, second = store

    async def in_a_loop():
        return fan_out(first, "Hm", log.path, models=["echo", "echo"])

    result = asyncio.run(in_a_loop())
    assert result.ok
    tree = load_tree(conversation, log.path)
    assert set(children(tree, first)) == {second, *(a.node_id for a in result.answers)}
