"""convgraph inside llm: `llm tree`, `llm leaves`, `llm path`, `llm branch`,
and every command as `llm convgraph COMMAND`.

Driven through llm's own command line (llm 0.36, which loads convgraph's
entry point), on llm's own database (`LLM_USER_PATH`), against the same
commands run as `convgraph ... --db`.
"""

from __future__ import annotations

import json
from functools import partial

import click
import pytest
from llm.cli import cli as llm_cli

from convgraph.cli import cli as convgraph_cli
from convgraph.llm_plugin import GROUP, LLM_COMMANDS, register_commands
from tests.databases import LlmLog
from tests.helpers import run

llm_run = partial(run, cli=llm_cli)
convgraph_run = run


@pytest.fixture
def log(tmp_path):
    """llm's database: a conversation of three prompts and a fork at its
    first answer, all written by llm 0.36 with echo."""
    with LlmLog(tmp_path) as log:
        first = log.prompt("What is a tree?")
        conversation = log.thread_of(first)
        second = log.prompt("And a forest?", continue_conversation=conversation)
        third = log.prompt("An example?", continue_conversation=conversation)
        fork, fork_turn = log.fork(first, "What is a graph?")
        log.ids = {
            "conversation": conversation,
            "turns": [first, second, third],
            "fork": fork,
            "fork_turn": fork_turn,
        }
        yield log


def test_llm_lists_the_four_commands():
    listed = llm_run("--help").output
    for name in LLM_COMMANDS:
        assert f"\n  {name} " in listed
        assert llm_cli.commands[name] is convgraph_cli.commands[name]


def test_llm_tree_draws_llms_own_database(log):
    through_llm = llm_run("tree").output
    assert through_llm == convgraph_run("tree", "--db", log.path).output
    first, second, third = log.ids["turns"]
    # One tree: the conversation and its fork.
    assert [line.split()[-1] for line in through_llm.splitlines()[1:]] == [
        "tree?",
        "forest?",
        "example?",
        "graph?",
    ]
    as_json = json.loads(llm_run("tree", log.ids["conversation"], "--json").output)
    assert as_json == json.loads(
        convgraph_run(
            "tree", log.ids["conversation"], "--json", "--db", log.path
        ).output
    )


def test_llm_leaves_and_path(log):
    first, second, third = log.ids["turns"]
    leaves = llm_run("leaves", log.ids["conversation"]).output
    assert leaves.splitlines() == [third, log.ids["fork_turn"]]
    assert llm_run("path", third).output.splitlines() == [first, second, third]
    assert json.loads(llm_run("path", log.ids["fork_turn"], "--json").output) == [
        first,
        log.ids["fork_turn"],
    ]


def test_llm_branch_then_llm_continues_the_branch(log):
    first, second, third = log.ids["turns"]
    created = json.loads(
        llm_run("branch", second, "What about a DAG?", "--json").output
    )
    assert llm_run("path", created["node_id"]).output.splitlines() == [
        first,
        second,
        created["node_id"],
    ]
    llm_run("-m", "echo", "-c", "--cid", created["conversation_id"], "And a poset?")
    newest = log.latest_turn()
    assert log.thread_of(newest) == created["conversation_id"]
    assert llm_run("path", newest).output.splitlines() == [
        first,
        second,
        created["node_id"],
        newest,
    ]
    assert sorted(
        llm_run("leaves", log.ids["conversation"]).output.splitlines()
    ) == sorted([third, log.ids["fork_turn"], newest])


def test_every_command_as_llm_convgraph(log):
    listed = llm_run(GROUP, "--help").output
    for name in ("stats", "transcript", "note", "regenerate", "export", "check"):
        assert f"\n  {name} " in listed
    through_llm = json.loads(llm_run(GROUP, "stats", "--json").output)
    assert through_llm == json.loads(
        convgraph_run("stats", "--json", "--db", log.path).output
    )
    assert [row["nodes"] for row in through_llm] == [4]
    first, second, third = log.ids["turns"]
    transcript = llm_run(GROUP, "transcript", third).output
    assert transcript == convgraph_run("transcript", third, "--db", log.path).output
    assert "An example?" in transcript


def test_errors_through_llm_are_one_line(log):
    result = llm_run("path", "nope", expect=2)
    assert result.stderr == "Error: no node with id 'nope'\n"
    result = llm_run("branch", "nope", "hi", expect=2)
    assert result.stderr == "Error: no node with id 'nope'\n"


def test_llms_own_commands_are_never_replaced():
    @click.group()
    def other() -> None:
        pass

    @other.command(name="tree")
    def own_tree() -> None:
        pass

    @other.command(name=GROUP)
    def own_group() -> None:
        pass

    register_commands(other)
    assert other.commands["tree"] is own_tree
    assert other.commands[GROUP] is own_group
    assert [
        name
        for name in LLM_COMMANDS
        if other.commands[name] is convgraph_cli.commands.get(name)
    ] == [
        "leaves",
        "path",
        "branch",
    ]
    assert llm_cli.commands["logs"] is not convgraph_cli.commands.get("logs")
    assert llm_cli.commands[GROUP] is convgraph_cli
