"""`convgraph import` killed while llm's migrations upgrade an older llm's
file: at every statement, the file is either as it was or fully upgraded,
llm 0.36 opens it (`llm logs`), a second import finishes the job, and no
row is lost.

The kills are real SIGKILLs, one per statement (`tests/kill_points.py`).
The quick test upgrades a file at llm 0.19's schema made by llm 0.36's own
first migrations (the ones llm 0.19 had), every tenth statement of the
upgrade killed; the slow ones kill every statement on files written by llm
0.19 and 0.31 themselves (`tests/old_llm.py`).
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from convgraph.store.importer import import_export
from tests.chat_exports import (
    chatgpt_branches,
    chatgpt_chain,
    claude_export,
    write_json,
)
from tests.helpers import ROOT, read_forest, run
from tests.old_llm import OldLlmUnavailable, old_llm

#: The last of llm's migrations that llm 0.19 had.
LLM_019_LAST = "m013_usage"


def older_file(path: Path) -> Path:
    """A logs.db at llm 0.19's schema, made by llm's own migrations up to
    the last one 0.19 had, with two conversations logged into it as llm
    0.19 logs them (rows of `conversations` and `responses`)."""
    import sqlite_utils
    from llm.migrations import MIGRATIONS, ensure_migrations_table

    db = sqlite_utils.Database(path)
    ensure_migrations_table(db)
    for migration in MIGRATIONS:
        migration(db)
        db["_llm_migrations"].insert(
            {"name": migration.__name__, "applied_at": "2024-11-01 10:00:00"}
        )
        if migration.__name__ == LLM_019_LAST:
            break
    for conversation, prompts in [
        ("c1", ["What is a tree?", "And a forest?"]),
        ("c2", ["Hello"]),
    ]:
        db["conversations"].insert(
            {"id": conversation, "name": prompts[0], "model": "echo"}
        )
        for number, prompt in enumerate(prompts):
            db["responses"].insert(
                {
                    "id": f"{conversation}-r{number}",
                    "model": "echo",
                    "prompt": prompt,
                    "system": None,
                    "prompt_json": None,
                    "options_json": "{}",
                    "response": f"echo: {prompt}",
                    "response_json": None,
                    "conversation_id": conversation,
                    "duration_ms": 1,
                    "datetime_utc": f"2024-11-01T10:0{number}:00",
                    "input_tokens": 2,
                    "output_tokens": 3,
                    "token_details": None,
                }
            )
    db.close()
    return path


def schema(path: Path) -> list[tuple]:
    """Every table, index, trigger and view, as SQLite holds them (opened
    for writing: a killed transaction's journal is rolled back first), but
    the import's record of origins, made with the first conversation."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "select type, name, tbl_name, sql from sqlite_master"
            " where tbl_name != '_convgraph_imports' order by type, name"
        ).fetchall()
    finally:
        conn.close()


#: llm 0.19's columns of `responses` (the upgrade adds more).
RESPONSE_COLUMNS = (
    "id, model, prompt, system, prompt_json, options_json, response,"
    " response_json, conversation_id, duration_ms, datetime_utc, input_tokens,"
    " output_tokens, token_details"
)


def legacy_rows(path: Path) -> list[tuple]:
    """The legacy responses, in llm 0.19's columns."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            f"select {RESPONSE_COLUMNS} from responses order by id"
        ).fetchall()
    finally:
        conn.close()


def turn_ids(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {row[0] for row in conn.execute("select id from turns")}
    except sqlite3.OperationalError:  # no message store (yet)
        return set()
    finally:
        conn.close()


def kill_at_each_statement(
    source: Path, pristine: Path, directory: Path, stride: int
) -> dict:
    """Run tests/kill_points.py; its JSON answer."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.kill_points",
            str(source),
            str(pristine),
            str(directory),
            str(stride),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def llm_logs(path: Path) -> list[dict]:
    """`llm logs --json` of llm 0.36 (in process), which first runs llm's
    migrations on the file, as any llm command does."""
    from llm.cli import cli

    return json.loads(run("logs", "-d", path, "--json", "-n", "0", cli=cli).stdout)


def content(path: Path) -> str:
    """The whole database as SQL (`iterdump`), but for the moments at which
    llm's migrations were recorded: equal for two files that hold the same
    tables and rows."""
    conn = sqlite3.connect(path)
    try:
        return "\n".join(
            re.sub(
                r"^(INSERT INTO \"?_llm_migrations\"? VALUES\('[^']*'),.*", r"\1", line
            )
            for line in conn.iterdump()
        )
    finally:
        conn.close()


def assert_whole_after_each_kill(
    source: Path, pristine: Path, tmp_path: Path, stride: int
) -> dict:
    """Kill the import at every `stride`-th statement and at the bounds of
    the upgrade; check every killed copy. Returns the sweep's answer, with
    `states`: how many copies were as they were, upgraded with nothing
    imported, or upgraded with some conversations imported.

    A copy is never half-way: after SQLite rolls the killed transaction
    back, its schema is the file's as it was or fully upgraded, and its
    legacy rows are as they were. llm then opens it and a second import
    finishes the job; both are run once for each distinct content the kills
    left (two copies with the same tables and rows behave the same)."""
    sweep = kill_at_each_statement(source, pristine, tmp_path, stride)
    whole = Path(sweep["whole"])
    original_schema = schema(pristine)
    upgraded_schema = schema(whole)
    assert upgraded_schema != original_schema
    legacy = legacy_rows(pristine)
    prompts = {row[2] for row in legacy}
    imported = turn_ids(whole)
    nodes = len(read_forest(whole).nodes)
    states = {"as it was": 0, "upgraded": 0, "partly imported": 0}
    distinct: dict[str, int] = {}
    for point in sweep["killed"]:
        path = tmp_path / f"killed-{point}.db"
        found = schema(path)
        assert found in (original_schema, upgraded_schema), point
        assert legacy_rows(path) == legacy, point
        if found == original_schema:
            states["as it was"] += 1
            assert point <= sweep["upgrade"], point
        elif turn_ids(path):
            states["partly imported"] += 1
            assert turn_ids(path) < imported, point
        else:
            states["upgraded"] += 1
            assert point > sweep["upgrade"], point
        distinct.setdefault(content(path), point)
    for point in distinct.values():
        path = tmp_path / f"killed-{point}.db"
        # llm 0.36 opens it, lists every legacy prompt, and finds its own
        # tables complete (or completes them, for a file as it was).
        logged = llm_logs(path)
        assert prompts <= {entry["prompt"] for entry in logged}, point
        assert schema(path) == upgraded_schema, point
        # A second import finishes the job.
        import_export(source, path)
        assert turn_ids(path) == imported, point
        assert legacy_rows(path) == legacy, point
        assert len(read_forest(path).nodes) == nodes, point
    sweep["states"] = states
    sweep["distinct"] = len(distinct)
    return sweep


def test_an_import_killed_while_llm_upgrades_the_file_leaves_it_whole(tmp_path):
    """A kill at every 25th statement, at the first of the upgrade, before
    its commit and after it."""
    pristine = older_file(tmp_path / "older.db")
    source = write_json(tmp_path / "claude.json", claude_export())
    directory = tmp_path / "kills"
    directory.mkdir()
    sweep = assert_whole_after_each_kill(source, pristine, directory, stride=25)
    # Killed up to the commit, the file as it was each time; past it,
    # upgraded, with the conversations committed before the kill.
    assert sweep["killed"] == sweep["points"]
    states, upgrade = sweep["states"], sweep["upgrade"]
    assert states["as it was"] == len([p for p in sweep["points"] if p <= upgrade])
    # The file is idle: both conversations are written in one transaction
    # (convgraph.store.transaction.batched_writes), so no kill leaves one
    # of them without the other.
    assert states["upgraded"] >= 1 and states["partly imported"] == 0


def test_a_migration_that_cannot_run_in_one_transaction_changes_nothing(
    tmp_path, monkeypatch
):
    """A migration that commits on its own (as llm's would with an older
    sqlite-utils, or a VACUUM) is refused before its commit: one line, exit
    status 2, the file as it was, and the advice to let llm upgrade it."""
    from llm import migrations

    pristine = older_file(tmp_path / "older.db")
    before = schema(pristine)
    rows = legacy_rows(pristine)

    def commits(db):
        db.conn.execute("create table half_way (id integer)")
        db.conn.commit()

    commits.__name__ = "m999_commits_on_its_own"
    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, commits])
    source = write_json(tmp_path / "claude.json", claude_export())
    result = run("import", source, "--db", pristine, expect=2)
    assert result.stderr == (
        f"Error: llm's migrations could not bring {pristine} up to date in one"
        " transaction (DatabaseError: not authorized); nothing was changed:"
        " run llm once (`llm logs -n 1`) to upgrade it, then try again\n"
    )
    assert schema(pristine) == before
    assert legacy_rows(pristine) == rows


@pytest.fixture(scope="module", params=[("0.19", "0.2"), ("0.31", "0.4")])
def written_by_old_llm(request, tmp_path_factory) -> Path:
    """A logs.db written by an older llm itself: two conversations."""
    try:
        old = old_llm(*request.param)
    except OldLlmUnavailable as error:
        pytest.skip(str(error))
    directory = tmp_path_factory.mktemp(f"llm-{request.param[0]}")
    old.run(directory, "-m", "echo", "What is a tree?")
    old.run(directory, "-m", "echo", "-c", "And a forest?")
    old.run(directory, "-m", "echo", "Hello")
    return directory / "logs.db"


@pytest.mark.slow
def test_killed_at_every_statement_on_an_older_llms_own_file(
    written_by_old_llm, tmp_path
):
    source = write_json(
        tmp_path / "chatgpt.json", [chatgpt_branches(), chatgpt_chain(3)]
    )
    directory = tmp_path / "kills"
    directory.mkdir()
    sweep = assert_whole_after_each_kill(
        source, written_by_old_llm, directory, stride=1
    )
    states = sweep["states"]
    assert sweep["killed"] == list(range(1, sweep["statements"] + 1))
    assert states["as it was"] == sweep["upgrade"]
    # The file is idle: both conversations are written in one transaction
    # (convgraph.store.transaction.batched_writes), so no kill leaves one
    # of them without the other.
    assert states["upgraded"] >= 1 and states["partly imported"] == 0
