"""Output safety: what convgraph writes never lands on what it reads, what it
prints never drives the terminal, what Graphviz draws is the text as stored,
and a --db that is no file says so in one line.

The hostile texts are stored the way a hostile world stores them: by llm
itself where llm takes them (a prompt), by raw SQL where only another writer
could (names, ids, models, a dangling parent).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import lxml.etree
import pytest

from convgraph.export import generate_dot
from convgraph.sources import READS
from tests.chat_exports import chatgpt_export, split, write_json
from tests.databases import LlmLog, add_response, legacy_database
from tests.helpers import file_digest, run

SQLITE_HEADER = b"SQLite format 3\x00"


def assert_one_line_error(result, *messages: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("Error: "), result.stderr
    for message in messages:
        assert message in result.stderr, result.stderr


# -- 1. no write lands on the file being read -------------------------------


@pytest.fixture
def db(seed_db: Path) -> Path:
    return seed_db


def refused(*args: object, target: Path, message: str) -> None:
    """The command fails in one line and `target` keeps every byte."""
    before = target.read_bytes()
    assert_one_line_error(run(*args, expect=2), message)
    assert target.read_bytes() == before
    # Nothing half-written is left beside it either.
    assert not list(target.parent.glob(f".{target.name}.*"))


def test_export_onto_the_database_it_reads_is_refused(db):
    refused(
        "export",
        "--format",
        "json",
        "-o",
        db,
        "--db",
        db,
        target=db,
        message="is the file being read",
    )


def test_force_never_overwrites_the_database_being_read(db):
    refused(
        "export",
        "--format",
        "json",
        "-o",
        db,
        "--db",
        db,
        "--force",
        target=db,
        message="is the file being read",
    )


def test_same_file_by_relative_path_hard_link_and_symlink(db, monkeypatch):
    monkeypatch.chdir(db.parent)
    refused(
        "export",
        "-o",
        db.name,
        "--db",
        db,
        target=db,
        message="is the file being read",
    )
    refused(
        "export",
        "-o",
        f"./{db.name}",
        "--db",
        db.name,
        target=db,
        message="is the file being read",
    )
    hard = db.parent / "hard.db"
    os.link(db, hard)
    refused(
        "export",
        "-o",
        hard,
        "--db",
        db,
        "--force",
        target=db,
        message="is the file being read",
    )
    soft = db.parent / "soft.db"
    soft.symlink_to(db)
    refused(
        "export",
        "--format",
        "graphml",
        "-o",
        soft,
        "--db",
        db,
        "--force",
        target=db,
        message="is the file being read",
    )
    assert soft.is_symlink()


def test_default_database_is_the_one_being_read(db, monkeypatch):
    """Without --db convgraph reads llm's logs.db: -o there is refused too."""
    monkeypatch.setenv("LLM_USER_PATH", str(db.parent))
    logs = db.parent / "logs.db"
    shutil.copyfile(db, logs)
    refused("export", "-o", logs, "--force", target=logs, message="being read")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_render_onto_the_database_it_reads_is_refused(db):
    refused(
        "export",
        "--render",
        "svg",
        "-o",
        db,
        "--db",
        db,
        target=db,
        message="is the file being read",
    )


def test_another_sqlite_file_needs_force(db, tmp_path):
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("create table t (x)").connection.close()
    assert other.read_bytes().startswith(SQLITE_HEADER)
    refused(
        "export",
        "--format",
        "json",
        "-o",
        other,
        "--db",
        db,
        target=other,
        message="is an SQLite database",
    )
    run("export", "--format", "json", "-o", other, "--db", db, "--force")
    assert json.loads(other.read_text())["format"] == "convgraph.node-link"


def test_other_files_are_replaced_as_before(db, tmp_path):
    target = tmp_path / "forest.json"
    target.write_text("old")
    run("export", "--format", "json", "-o", target, "--db", db)
    assert json.loads(target.read_text())["format"] == "convgraph.node-link"


def test_export_onto_the_chat_export_it_reads_is_refused(tmp_path):
    export = write_json(tmp_path / "conversations.json", chatgpt_export())
    refused(
        "export",
        "--format",
        "json",
        "-o",
        export,
        "--db",
        export,
        "--force",
        target=export,
        message="is the file being read",
    )
    folder = tmp_path / "split"
    folder.mkdir()
    for name, part in split(chatgpt_export(), 1).items():
        write_json(folder / name, part)
    first = sorted(folder.iterdir())[0]
    refused(
        "export",
        "--format",
        "json",
        "-o",
        first,
        "--db",
        folder,
        "--force",
        target=first,
        message="is the file being read",
    )


def test_migrate_backup_onto_the_database_is_refused(db):
    before = file_digest(db)
    assert_one_line_error(
        run("migrate", "--db", db, "--backup", db, expect=2), "already exists"
    )
    assert file_digest(db) == before


# -- 7. terminal output shows control characters, never runs them ------------

CLIPBOARD = "\x1b]52;c;aGVsbG8=\x07"
TITLE = "\x1b]0;pwned\x07"
#: A single-byte CSI (C1), a right-to-left override, DEL, NUL, CR, tab.
OTHERS = "\x9b2J\u202erev\u2066\x7f\x00\r\t"

#: What a terminal must never receive from stored text: every C0 control but
#: the newline that ends a line, DEL, C1, bidi controls, line separators.
UNSAFE = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]"
)
#: The styles click writes (bold, colours): the only escapes allowed.
STYLE = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory) -> dict:
    """A logs.db written by llm 0.36 (a prompt, its continuation, a fork at
    the first answer), then made hostile by raw SQL: the thread's name and
    id, a turn's id and a model hold escapes."""
    directory = tmp_path_factory.mktemp("hostile")
    with LlmLog(directory) as log:
        first = log.prompt(f"What is {CLIPBOARD} a tree?{OTHERS}")
        thread = log.thread_of(first)
        second = log.prompt(f"More {TITLE}", continue_conversation=thread)
        _, fork_turn = log.fork(first, f"Fork {CLIPBOARD}")
    conn = sqlite3.connect(log.path)
    hostile_thread = f"thread{TITLE}\n"
    hostile_turn = f"turn{CLIPBOARD}{OTHERS}"
    with conn:
        conn.execute("update threads set id = ? where id = ?", [hostile_thread, thread])
        conn.execute(
            "update threads set forked_from = ? where forked_from = ?",
            [hostile_thread, thread],
        )
        conn.execute(
            "update turns set thread_id = ? where thread_id = ?",
            [hostile_thread, thread],
        )
        conn.execute(
            "update threads set name = ? where id = ?",
            [f"name {TITLE}{OTHERS}", hostile_thread],
        )
        conn.execute("update turns set id = ? where id = ?", [hostile_turn, second])
        conn.execute(
            "update turns set model = ? where id = ?", [f"echo{TITLE}", fork_turn]
        )
    conn.close()
    return {
        "path": log.path,
        "thread": hostile_thread,
        "first": first,
        "second": hostile_turn,
        "fork_turn": fork_turn,
    }


@pytest.fixture(scope="module")
def hostile_legacy(tmp_path_factory) -> Path:
    """A legacy database by raw SQL with a dangling parent whose id, and a
    node whose id, hold escapes: for `check`."""
    path = tmp_path_factory.mktemp("legacy") / "logs.db"
    conn = legacy_database(path)
    add_response(conn, "root", "c1", f"hello {TITLE}")
    add_response(conn, f"orphan{CLIPBOARD}", "c1", "x", parent=f"gone{TITLE}{OTHERS}")
    conn.commit()
    conn.close()
    return path


def shown(result) -> str:
    return result.stdout + result.stderr


def assert_safe(text: str, color: bool = False) -> None:
    if color:
        text = STYLE.sub("", text)
    found = sorted({f"U+{ord(c):04X}" for c in UNSAFE.findall(text)})
    assert not found, f"{found} reach the terminal in:\n{text!r}"


def human_commands(h: dict) -> list[list[str]]:
    db = ["--db", str(h["path"])]
    return [
        ["conversations", *db],
        ["stats", *db],
        ["tree", *db],
        ["tree", h["thread"], *db],
        ["path", h["second"], *db],
        ["children", h["first"], *db],
        ["siblings", h["second"], *db],
        ["descendants", h["first"], *db],
        ["roots", h["thread"], *db],
        ["leaves", h["thread"], *db],
        ["diff", h["second"], h["fork_turn"], *db],
        ["compare", h["first"], *db],
        ["compare", h["first"], "--table", *db],
        ["path", f"nope{TITLE}{OTHERS}", *db],
    ]


@pytest.mark.parametrize("color", [False, True])
def test_human_output_shows_controls_as_symbols(hostile_db, color):
    for words in human_commands(hostile_db):
        result = run(*words, expect=None, color=color)
        assert result.exit_code in (0, 2), (words, result.output)
        assert_safe(shown(result), color)


@pytest.mark.parametrize("color", [False, True])
def test_check_lines_show_controls_as_symbols(hostile_legacy, color):
    result = run("check", "--db", hostile_legacy, expect=1, color=color)
    assert_safe(shown(result), color)
    assert "gone␛]0;pwned␇" in result.stdout


def test_the_symbols_are_the_control_pictures(hostile_db):
    h = hostile_db
    ids = run("path", h["second"], "--db", h["path"]).stdout.splitlines()
    assert ids == [h["first"], "turn␛]52;c;aGVsbG8=␇\ufffd2J\ufffdrev\ufffd␡␀␍␉"]
    drawing = run("tree", h["thread"], "--db", h["path"]).stdout
    assert "What is ␛]52;c;aGVsbG8=␇ a tree?\ufffd2J\ufffdrev\ufffd␡" in drawing
    assert drawing.splitlines()[0].startswith("thread␛]0;pwned␇␊  name ␛]0;pwned␇")
    missing = h["path"].parent / f"missing{TITLE}\n.db"
    error = run("stats", "--db", missing, expect=2).stderr
    assert error.count("\n") == 1 and "missing␛]0;pwned␇␊.db" in error


def stored(h: dict) -> dict:
    conn = sqlite3.connect(h["path"])
    try:
        return {
            "name": conn.execute(
                "select name from threads where id = ?", [h["thread"]]
            ).fetchone()[0],
            "model": conn.execute(
                "select model from turns where id = ?", [h["fork_turn"]]
            ).fetchone()[0],
        }
    finally:
        conn.close()


def test_machine_formats_keep_the_stored_text(hostile_db):
    h = hostile_db
    db = ["--db", h["path"]]
    name = stored(h)["name"]
    [row] = json.loads(run("conversations", *db, "--json").stdout)
    assert (row["tree_id"], row["name"]) == (h["thread"], name)
    [line] = run("conversations", *db, "--nl").stdout.splitlines()
    assert json.loads(line)["name"] == name
    for flag, delimiter in (("--csv", ","), ("--tsv", "\t")):
        text = run("conversations", *db, flag).stdout
        rows = list(csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter))
        assert [(r["tree_id"], r["name"]) for r in rows] == [(h["thread"], name)]
    assert json.loads(run("path", h["second"], *db, "--json").stdout) == [
        h["first"],
        h["second"],
    ]
    models = {
        r["id"]: r["model"]
        for r in json.loads(run("compare", h["first"], *db, "--json").stdout)
    }
    assert models[h["fork_turn"]] == stored(h)["model"]
    drawn = json.loads(run("tree", h["thread"], *db, "--json").stdout)
    assert drawn[0]["prompt"] == f"What is {CLIPBOARD} a tree?{OTHERS}"


def test_json_on_a_terminal_escapes_what_drives_it(hostile_db):
    """JSON may escape any character: C1 and bidi controls are written as
    \\u escapes, so the JSON reads back exact and shows safely."""
    h = hostile_db
    text = run("conversations", "--db", h["path"], "--json").stdout
    assert_safe(text.replace("\n", " "))
    assert "\\u009b2J\\u202erev\\u2066\\u007f" in text


# -- 8. DOT tooltips and labels show the text as stored -----------------------

BACKSLASHES = [
    "\\N is the node name",
    "\\G the graph, \\L the label",
    "\\E \\T \\H on edges",
    "two \\\\ backslashes, one \\",
    "\\n \\l \\r are not line ends",
    '&amp; &lt;b&gt; <b> {x|y} "quoted"',
    "50% and a line\nend, then crlf\r\nend\\",
]


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_graphviz_tooltips_show_the_stored_text(tmp_path):
    from convgraph.model.tree import ConversationTree

    attributes = {
        f"n{index}": {"prompt": text, "response": f"answer {text}", "model": "echo"}
        for index, text in enumerate(BACKSLASHES)
    }
    tree = ConversationTree.from_edges(
        [("n0", f"n{index}") for index in range(1, len(BACKSLASHES))],
        attributes,
        tree_id="c\\G",
        name="name \\N",
    )
    done = subprocess.run(
        ["dot", "-Tsvg"],
        input="\n".join(generate_dot(tree)).encode(),
        capture_output=True,
        check=True,
    )
    svg = lxml.etree.fromstring(done.stdout)
    space = {
        "svg": "http://www.w3.org/2000/svg",
        "xlink": "http://www.w3.org/1999/xlink",
    }
    tips = {}
    labels = {}
    for node in svg.xpath("//svg:g[contains(@class, 'node')]", namespaces=space):
        [title] = node.xpath("svg:title/text()", namespaces=space)
        [tip] = node.xpath(".//svg:a/@xlink:title", namespaces=space)
        tips[title] = tip
        labels[title] = node.xpath(".//svg:text/text()", namespaces=space)
    for index, text in enumerate(BACKSLASHES):
        assert tips[f"n{index}"] == f"prompt: {text}\n\nresponse: answer {text}"
    from convgraph.text import excerpt

    for index, text in enumerate(BACKSLASHES):
        assert f"» {excerpt(text, 40)}" in labels[f"n{index}"]


# -- 12. a --db that is no database file: one line --------------------------


def test_a_directory_as_db_is_one_line(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    for words in (["stats"], ["conversations"], ["export"], ["tree"], ["check"]):
        assert_one_line_error(
            run(*words, "--db", folder, expect=2),
            f"no sessions were found under {folder}: {READS}",
        )


def _without_read_permission() -> list[str] | None:
    """A prefix that runs a command unable to read what its mode forbids: none
    needed for a user, setpriv dropping the capabilities that let root read
    anything; None where neither is possible."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]


def test_an_unreadable_db_is_one_line(seed_db):
    prefix = _without_read_permission()
    if prefix is None:
        pytest.skip("running as root without setpriv: every file is readable")
    seed_db.chmod(0)
    try:
        done = subprocess.run(
            [*prefix, sys.executable, "-m", "convgraph", "stats", "--db", seed_db],
            capture_output=True,
            text=True,
        )
    finally:
        seed_db.chmod(0o644)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("Error: "), done.stderr
    assert str(seed_db) in done.stderr and "permission" in done.stderr.lower()


def test_a_truncated_zip_is_named_even_where_sqlite_is_asked(tmp_path):
    # A chat export cut short has no zip directory at its end, so nothing
    # but its first bytes says it is a zip: they name it, not "not an
    # SQLite database" (issue 24.9), wherever a command opens it.
    from convgraph.errors import DatabaseError
    from convgraph.sources.llm.files import connect_read_only
    from tests.chat_exports import write_zip

    whole = write_zip(tmp_path / "export.zip", {"conversations.json": chatgpt_export()})
    cut = tmp_path / "cut.zip"
    cut.write_bytes(whole.read_bytes()[:4096])
    with pytest.raises(DatabaseError) as raised:
        connect_read_only(cut)
    assert str(raised.value) == (
        f"{cut} is a zip file that is truncated or damaged, not an SQLite database"
    )
    for words in (["conversations"], ["check"], ["tree", "conv-monad"]):
        result = run(*words, "--db", cut, expect=2)
        assert result.stderr.startswith(
            f"Error: {cut} is a zip file that is truncated or damaged ("
        )
        assert result.stderr.count("\n") == 1
