"""No stored text reaches a terminal raw, from any command (issue 24.6).

Every text of the files here holds escape sequences (OSC 0 sets the window's
title, OSC 52 writes the clipboard), a C1 control that starts one on many
terminals, bidirectional overrides, DEL, a carriage return and a tab: the
conversations' names and ids, every message's id and words, the model, the
tools' names, arguments and results, code and its output, reasoning,
attachments, and the user's notes. Each command of `convgraph --help` that
prints text for a person runs on them (read, measure, compare, write,
import, transcript, pairs, notes, search), and none lets a control character reach
the screen but the line ends and click's own colours; `export` shows them as
symbols where stdout is a terminal. The formats for programs keep the text
exact: JSON, CSV, an export to a pipe, the Markdown file written with -o.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from convgraph.cli import cli
from tests import chat_exports as build
from tests.databases import add_response, legacy_database
from tests.helpers import read_forest, run, run_on_a_terminal

#: What every stored text holds: OSC 0 and OSC 52, a C1 CSI, bidi controls,
#: DEL, a carriage return and a tab.
HOSTILE = "\x1b]0;title\x07\x1b]52;c;aGk=\x07\x9b2J\u202erev\u2066\x7f\r\t"

#: What a terminal must never receive from stored text: every C0 control but
#: the line feed that ends a line, DEL, C1, bidi controls, line separators.
UNSAFE = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]"
)
#: The styles click writes (bold, colours): the only escapes allowed.
STYLE = re.compile(r"\x1b\[[0-9;]*m")

#: Values of the export that are its structure, not text someone stored.
STRUCTURE = {"content_type", "role", "status", "channel"}
KEPT = {"all", "python"}


def hostile(value: Any, key: str | None = None, ids: bool = False) -> Any:
    """A ChatGPT export with HOSTILE after every stored string: titles, ids
    (the mapping's keys and every reference to them alike), texts, models,
    tool names (recipients but `all` and `python`), code, outputs, files."""
    if isinstance(value, dict):
        return {
            (name + HOSTILE if ids else name): hostile(item, name, name == "mapping")
            for name, item in value.items()
        }
    if isinstance(value, list):
        return [hostile(item, key) for item in value]
    if isinstance(value, str) and key not in STRUCTURE and value not in KEPT:
        return value + HOSTILE
    return value


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The hostile export; llm's logs.db it was imported into; a legacy
    logs.db written by raw SQL with hostile ids, texts, model and name."""
    directory = tmp_path_factory.mktemp("hostile")
    export = build.write_json(
        directory / "conversations.json",
        [hostile(build.chatgpt_agent()), hostile(build.chatgpt_branches())],
    )
    imported = directory / "imported" / "logs.db"
    imported.parent.mkdir()
    run("import", export, "--db", imported)
    legacy = directory / "legacy.db"
    conn = legacy_database(legacy)
    add_response(
        conn,
        f"root{HOSTILE}",
        f"c{HOSTILE}",
        f"What{HOSTILE}",
        response=f"Answer{HOSTILE}",
        system=f"System{HOSTILE}",
        model=f"echo{HOSTILE}",
        name=f"name{HOSTILE}",
    )
    add_response(
        conn,
        f"leaf{HOSTILE}",
        f"c{HOSTILE}",
        f"More{HOSTILE}",
        response=f"Again{HOSTILE}",
        parent=f"root{HOSTILE}",
        model=f"echo{HOSTILE}",
    )
    add_response(
        conn,
        f"other{HOSTILE}",
        f"c{HOSTILE}",
        f"Else{HOSTILE}",
        parent=f"root{HOSTILE}",
    )
    conn.commit()
    conn.close()
    nodes = read_forest(export).nodes
    ids = dict(zip(nodes["id"].str.split("\x1b").str[0], nodes["id"], strict=True))
    trees = {tree.split("\x1b")[0]: tree for tree in nodes["tree_id"].astype(str)}
    imported_nodes = read_forest(imported).nodes
    return {
        "export": export,
        "imported": imported,
        "legacy": legacy,
        "ids": ids,
        "trees": trees,
        "imported_leaf": str(imported_nodes["id"].iloc[-1]),
        "imported_tree": str(imported_nodes["tree_id"].iloc[-1]),
    }


def copy(path: Path, tmp_path: Path) -> Path:
    """A copy of a file to write into (its folder too, for an export's
    notes beside it)."""
    target = tmp_path / path.name
    shutil.copyfile(path, target)
    return target


def human_commands(f: dict[str, Any], tmp_path: Path) -> dict[str, list[list[Any]]]:
    """Each command of `convgraph --help` that prints for a person, with the
    invocations that show every kind of stored text it prints."""
    export, imported, legacy = f["export"], f["imported"], f["legacy"]
    ids, trees = f["ids"], f["trees"]
    e = ["--db", export]
    writable = copy(imported, tmp_path)
    notes = copy(export, tmp_path)
    legacy_copy = copy(legacy, tmp_path)
    hostile_path = tmp_path / f"export{HOSTILE}.json"
    hostile_path.write_bytes(Path(export).read_bytes())
    return {
        "conversations": [["--db", db] for db in (export, imported, legacy)],
        "tree": [
            *(["--db", db] for db in (export, imported, legacy)),
            [trees["conv-agent"], "--active", *e],
        ],
        "path": [[ids["a2e"], *e], [f["imported_leaf"], "--db", imported]],
        "children": [[ids["a1b"], *e]],
        "siblings": [[ids["a2"], *e], [ids["a1"], *e]],
        "descendants": [[ids["a1b"], *e]],
        "roots": [[trees["conv-monad"], *e]],
        "leaves": [[trees["conv-monad"], *e]],
        "check": [["--db", db] for db in (export, imported, legacy)],
        "stats": [
            *(["--db", db] for db in (export, imported, legacy)),
            [trees["conv-agent"], *e],
        ],
        "diff": [[ids["a2"], ids["a2e"], *e]],
        "compare": [[ids["a1b"], *e], [ids["a1b"], "--table", "--meaning", *e]],
        "transcript": [
            [trees["conv-agent"], *e],
            [ids["a2e"], *e],
            [f["imported_leaf"], "--db", imported],
            [f"root{HOSTILE}", "--db", legacy],
        ],
        "pairs": [e, ["--db", imported]],
        "topics": [e, ["--db", legacy], ["--db", legacy, "--json"]],
        "similar": [[ids["a1b"], *e], ["--text", "an answer", "--db", legacy]],
        # The words found in a snippet are styled, every stored text in it
        # shown as symbols (the index is written beside each file).
        "search": [
            ["Tides", *e],
            ["Tides", "--db", imported],
            ["Answer", "--db", legacy],
            ["Answer", "--table", "--db", legacy],
            ["--meaning", "an answer", "--db", legacy],
        ],
        "note": [[ids["a2"], f"why{HOSTILE}", "--db", notes]],
        "prefer": [[ids["a2e"], "--db", notes]],
        "hide": [[ids["a2"], "--db", notes]],
        "unhide": [[ids["a2"], "--db", notes]],
        "import": [
            [export, "--db", tmp_path / "new.db"],
            [export, "--dry-run", "--db", writable],
        ],
        "branch": [
            [f["imported_leaf"], f"Go on{HOSTILE}", "-m", "echo", "--db", writable]
        ],
        "regenerate": [[f["imported_leaf"], "-m", "echo", "--db", writable]],
        "migrate": [["--dry-run", "--db", legacy_copy], ["--db", legacy_copy]],
        # The saved list shows the names and paths a user typed.
        "sources": [
            ["add", export, "--name", f"mine{HOSTILE}", REFUSED],
            ["add", hostile_path, "--name", "hostile"],
            ["list"],
        ],
        "delete": [
            [f"leaf{HOSTILE}", "--db", legacy_copy],
            # A turn of the message store is never deleted: one line.
            [f["imported_leaf"], "--db", writable, REFUSED],
        ],
        # Errors name the id asked for.
        "errors": [
            ["path", f"nope{HOSTILE}", *e, REFUSED],
            ["stats", f"nope{HOSTILE}", *e, REFUSED],
            ["transcript", f"nope{HOSTILE}", *e, REFUSED],
        ],
    }


#: The mark of an invocation that must end in a one-line error (status 2).
REFUSED = object()


def assert_safe(text: str, color: bool) -> None:
    if color:
        text = STYLE.sub("", text)
    found = sorted({f"U+{ord(c):04X}" for c in UNSAFE.findall(text)})
    assert not found, f"{found} reach the terminal in:\n{text!r}"


#: Commands that print for no person on stdout: `browse` is the terminal
#: browser (its screens are tests/test_browse.py's), `export` writes a file
#: format (on a terminal: `test_an_export_on_a_terminal_shows_symbols`).
NOT_HERE = {"browse", "export"}


@pytest.mark.parametrize("color", [False, True])
def test_no_command_lets_a_control_character_reach_the_terminal(
    files: dict[str, Any], tmp_path: Path, color: bool, monkeypatch: Any
) -> None:
    monkeypatch.setenv("CONVGRAPH_CONFIG_DIR", str(tmp_path / "config"))
    commands = human_commands(files, tmp_path)
    assert set(commands) - {"errors"} == set(cli.commands) - NOT_HERE
    shown = []
    for name, invocations in commands.items():
        for words in invocations:
            refused = words[-1] is REFUSED
            words = words[:-1] if refused else words
            words = words if name == "errors" else [name, *words]
            result = run(*words, expect=2 if refused else 0, color=color)
            if refused:
                assert result.stderr.count("\n") == 1, (words, result.stderr)
            assert_safe(result.stdout + result.stderr, color)
            if name == "search":
                assert result.stdout.strip(), f"no hit: {words}"
            shown.append(result.stdout + result.stderr)
    # The texts were there to be shown: as symbols.
    everything = "\n".join(shown)
    for symbol in ("␛]0;title␇", "␛]52;c;aGk=␇", "\ufffd2J", "␡"):
        assert symbol in everything


def test_transcript_shows_each_text_as_symbols(files: dict[str, Any]) -> None:
    document = run("transcript", files["trees"]["conv-agent"], "--db", files["export"])
    lines = document.stdout.splitlines()
    assert lines[0] == (
        "# Tides and a lighthouse␛\\]0;title␇␛\\]52;c;aGk=␇\ufffd2J\ufffdrev\ufffd␡"
    )
    # Inside a fence, a tab shows as the spaces a terminal would show.
    assert "Tides in Brest today?␛]0;title␇␛]52;c;aGk=␇\ufffd2J\ufffdrev\ufffd␡" in (
        "\n".join(lines)
    )


def test_the_formats_for_programs_keep_the_text_exact(
    files: dict[str, Any], tmp_path: Path
) -> None:
    export, trees = files["export"], files["trees"]
    (row,) = json.loads(
        run("stats", trees["conv-agent"], "--json", "--db", export).stdout
    )
    assert row["name"] == f"Tides and a lighthouse{HOSTILE}"
    text = run("conversations", "--csv", "--db", export).stdout
    names = [r["name"] for r in csv.DictReader(io.StringIO(text, newline=""))]
    assert f"Monads{HOSTILE}" in names
    messages = json.loads(
        run(
            "transcript", files["ids"]["a2e"], "--format", "json", "--db", export
        ).stdout
    )
    # The system message was empty: now it holds the hostile text alone.
    assert [m["content"] for m in messages[:2]] == [
        HOSTILE,
        f"What is a monad?{HOSTILE}",
    ]
    # An export to a pipe or a file is exact: JSON, and the Markdown file.
    document = json.loads(run("export", "--format", "json", "--db", export).stdout)
    assert f"Monads{HOSTILE}" in [c["name"] for c in document["graph"]["conversations"]]
    target = tmp_path / "conversations.md"
    run("export", "--format", "markdown", "-o", target, "--db", export)
    written = target.read_bytes().decode("utf-8")
    # Every control character as stored (a carriage return ends a line in
    # Markdown: it is written as the line end it is).
    assert f"What is a monad?{HOSTILE}".replace("\r", "\n") in written
    piped = run("export", "--format", "markdown", "--db", export).stdout
    assert piped == written


def on_a_terminal(*words: object) -> str:
    """`python -m convgraph WORDS` with stdout on a pseudo-terminal: what the
    terminal received."""
    done = run_on_a_terminal(*words)
    assert done.status == 0, done.piped.decode()
    return done.shown.decode("utf-8")


@pytest.mark.parametrize("format_name", ["markdown", "json", "dot", "chat-jsonl"])
def test_an_export_on_a_terminal_shows_symbols(
    files: dict[str, Any], format_name: str
) -> None:
    # The terminal turns each line end into a carriage return and a line feed.
    screen = on_a_terminal("export", "--format", format_name, "--db", files["export"])
    assert_safe(screen.replace("\r\n", "\n"), color=False)
    assert "␛]0;title␇" in screen or "\\u001b]0;title\\u0007" in screen
