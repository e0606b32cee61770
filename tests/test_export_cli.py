"""`convgraph export` through click's CliRunner, on real SQLite files."""

from __future__ import annotations

import io
import json
import os
import shutil
import stat

import lxml.etree
import pydot
import pytest

from convgraph.export import read_graphml, read_json, read_tree_json
from tests.helpers import file_digest, run

needs_graphviz = pytest.mark.skipif(
    shutil.which("dot") is None,
    reason="Graphviz's dot is not installed (apt-get install graphviz)",
)


def assert_one_line_error(result, message: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert message in result.stderr


def test_no_id_exports_every_conversation_as_dot(seed_db):
    result = run("export", "--db", str(seed_db))
    assert result.exit_code == 0, result.output
    [graph] = pydot.graph_from_dot_data(result.stdout)
    assert len(graph.get_subgraphs()) == 4


@pytest.mark.parametrize(
    ("format_name", "reader"),
    [("graphml", read_graphml), ("json", read_json), ("tree-json", read_tree_json)],
)
def test_round_trip_formats_on_stdout(seed_db, format_name, reader):
    result = run(
        "export", "complex", "linear", "--format", format_name, "--db", str(seed_db)
    )
    assert result.exit_code == 0, result.output
    trees = reader(io.BytesIO(result.stdout_bytes))
    assert [tree.graph["tree_id"] for tree in trees] == ["complex", "linear"]
    assert [len(tree) for tree in trees] == [7, 4]


def test_mermaid_and_rankdir(seed_db):
    result = run(
        "export",
        "branch",
        "--format",
        "mermaid",
        "--rankdir",
        "lr",
        "--db",
        str(seed_db),
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "flowchart LR"
    dot = run("export", "branch", "--rankdir", "BT", "--db", str(seed_db))
    assert '  rankdir="BT";' in dot.stdout.splitlines()


def test_output_file_is_written_whole_with_a_normal_mode(seed_db, tmp_path):
    (tmp_path / "out").mkdir()
    target = tmp_path / "out" / "forest.json"
    result = run("export", "--format", "json", "-o", str(target), "--db", str(seed_db))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert (
        json.loads(target.read_text(encoding="utf-8"))["format"]
        == "convgraph.node-link"
    )
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    assert [path.name for path in (tmp_path / "out").iterdir()] == ["forest.json"]


def test_reading_never_changes_the_database(seed_db, tmp_path):
    before = file_digest(seed_db)
    for format_name in ("dot", "graphml", "json", "tree-json", "mermaid"):
        assert (
            run("export", "--format", format_name, "--db", str(seed_db)).exit_code == 0
        )
    assert file_digest(seed_db) == before


def test_two_ids_of_one_message_store_tree_export_it_once(llm_fork_db):
    result = run(
        "export",
        llm_fork_db["thread"],
        llm_fork_db["fork"],
        "--format",
        "json",
        "--db",
        str(llm_fork_db["path"]),
    )
    assert result.exit_code == 0, result.output
    [tree] = read_json(io.BytesIO(result.stdout_bytes))
    assert tree.graph["tree_id"] == llm_fork_db["thread"]
    assert len(tree) == 5


def assert_usage_error(result, message: str) -> None:
    """click's own error for a value an option does not take: status 2, the
    usage, and the message naming the option and the value."""
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == message


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        (
            "--format",
            "xml",
            "Error: Invalid value for '--format': 'xml' is not one of"
            " 'dot', 'graphml', 'json', 'tree-json', 'mermaid', 'html',"
            " 'parquet', 'markdown', 'chat-jsonl'.",
        ),
        (
            "--rankdir",
            "up",
            "Error: Invalid value for '--rankdir': 'up' is not one of"
            " 'tb', 'lr', 'bt', 'rl'.",
        ),
        (
            "--render",
            "gif",
            "Error: Invalid value for '--render': 'gif' is not one of 'svg', 'png',"
            " 'pdf'.",
        ),
    ],
)
def test_unknown_choices_are_clicks_usage_errors(seed_db, option, value, message):
    result = run("export", option, value, "-o", "x", "-d", seed_db, expect=2)
    assert_usage_error(result, message)


def test_choices_ignore_case(seed_db):
    result = run(
        "export", "branch", "--format", "Mermaid", "--rankdir", "lr", "-d", seed_db
    )
    lines = result.stdout.splitlines()
    assert lines[0] == "flowchart LR"
    upper = run(
        "export", "branch", "--format", "MERMAID", "--rankdir", "LR", "-d", seed_db
    )
    assert upper.stdout == result.stdout


def test_unknown_id_fails_before_any_output(seed_db):
    assert_one_line_error(
        run("export", "complex", "nope", "--db", str(seed_db), expect=2),
        "Error: no conversation with id 'nope'",
    )


def test_option_errors(seed_db, tmp_path):
    db = ["--db", str(seed_db)]
    assert_one_line_error(
        run("export", "--format", "graphml", "--rankdir", "LR", *db, expect=2),
        "--rankdir does not apply to --format graphml",
    )
    assert_one_line_error(
        run("export", "--render", "svg", *db, expect=2), "--render svg needs -o FILE"
    )
    assert_one_line_error(
        run("export", "--format", "json", "--render", "svg", "-o", "x", *db, expect=2),
        "--render draws the DOT export",
    )
    assert_one_line_error(
        run("export", "-o", str(tmp_path / "missing" / "x.dot"), *db, expect=2),
        f"cannot write {tmp_path / 'missing' / 'x.dot'}",
    )
    assert_one_line_error(
        run("export", "-o", str(tmp_path), *db, expect=2), "it is a directory"
    )
    assert_one_line_error(
        run("export", "--db", str(tmp_path / "none.db"), expect=2), "Error: "
    )


def test_render_says_clearly_when_graphviz_is_missing(seed_db, tmp_path):
    # A PATH without Graphviz on it: the command looks dot up on PATH.
    empty = tmp_path / "bin"
    empty.mkdir()
    result = run(
        "export",
        "--render",
        "svg",
        "-o",
        str(tmp_path / "x.svg"),
        "--db",
        str(seed_db),
        env={"PATH": str(empty)},
        expect=2,
    )
    assert_one_line_error(
        result, "--render needs Graphviz's `dot` program, which is not installed"
    )
    assert not (tmp_path / "x.svg").exists()


@needs_graphviz
@pytest.mark.parametrize("kind", ["svg", "png"])
def test_render_draws_a_picture(seed_db, tmp_path, kind):
    target = tmp_path / f"forest.{kind}"
    result = run("export", "--render", kind, "-o", str(target), "--db", str(seed_db))
    assert result.exit_code == 0, result.output
    content = target.read_bytes()
    if kind == "png":
        assert content.startswith(b"\x89PNG\r\n\x1a\n")
    else:
        svg = lxml.etree.fromstring(content)
        space = {"svg": "http://www.w3.org/2000/svg"}
        assert len(svg.xpath("//svg:g[@class='cluster']", namespaces=space)) == 4


def test_help_lists_the_registry_formats():
    result = run("export", "--help")
    assert result.exit_code == 0
    from convgraph.export import FORMATS

    # Every registered format, in the registry's order, and the first ones by
    # name so that a format dropped from the registry is noticed.
    assert f"--format [{'|'.join(FORMATS)}]" in result.stdout
    assert "--format [dot|graphml|json|tree-json|mermaid|html|" in result.stdout
    assert "--rankdir [TB|LR|BT|RL]" in result.stdout


@needs_graphviz
def test_render_svg_is_valid_xml_whatever_the_ids_hold(tmp_path):
    """Graphviz writes a name's `&...;` into its SVG as it stands (`&;`, `R&D;`,
    `&#X41;` are no XML); the picture convgraph writes is valid XML, each
    node's title the id as it is, an HTML entity as its character."""
    from tests.databases import add_response, legacy_database

    ids = ["R&D;", "&;", "&#X41;", "&#0;", "x&eacute;", "&amp;", "&#233;"]
    db = tmp_path / "logs.db"
    conn = legacy_database(db)
    for number, response_id in enumerate(ids):
        add_response(conn, response_id, "c&1;", f"prompt {number}")
    conn.commit()
    conn.close()
    target = tmp_path / "tree.svg"
    result = run(
        "export", "c&1;", "--render", "svg", "-o", str(target), "--db", str(db)
    )
    assert result.exit_code == 0, result.output
    svg = lxml.etree.fromstring(target.read_bytes())
    space = {"svg": "http://www.w3.org/2000/svg"}
    titles = svg.xpath(
        "//svg:g[@class and svg:title]/svg:title/text()", namespaces=space
    )
    assert sorted(titles) == sorted(
        ["c&1;", "R&D;", "&;", "&#X41;", "&#0;", "xé", "&", "é"]
    )


# -- -o FILE.EXT chooses the format (issue 38.4) ------------------------------


@pytest.mark.parametrize(
    ("name", "starts"),
    [
        ("t.dot", b'digraph "complex" {'),
        ("t.gv", b'digraph "complex" {'),
        ("t.graphml", b"<?xml"),
        ("t.json", b'{"format":"convgraph.node-link"'),
        ("t.mmd", b"flowchart TB"),
        ("t.mermaid", b"flowchart TB"),
        ("t.md", b"# "),
        ("t.html", b"<!DOCTYPE html>"),
        ("t.jsonl", b'{"messages":'),
    ],
)
def test_the_extension_of_o_chooses_the_format(seed_db, tmp_path, name, starts):
    target = tmp_path / name
    run("export", "complex", "-o", target, "--db", seed_db)
    assert target.read_bytes().startswith(starts)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
@pytest.mark.parametrize(
    ("name", "magic"),
    [("t.png", b"\x89PNG\r\n"), ("t.svg", b"<?xml"), ("t.pdf", b"%PDF-")],
)
def test_a_picture_extension_draws_the_picture(seed_db, tmp_path, name, magic):
    """`export -o guess.png` wrote DOT text with exit status 0: now Graphviz
    draws the picture, as --render does."""
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / name
    run("export", "complex", "-o", target, "--db", seed_db)
    assert target.read_bytes().startswith(magic)
    assert sorted(p.name for p in folder.iterdir()) == [name]


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (
            ["-o", "t.png", "--format", "json"],
            "Error: -o t.png names a picture (PNG), drawn from the DOT export:"
            " leave out --format json, or give -o t.json",
        ),
        (
            ["-o", "t.svg", "--render", "png"],
            "Error: --render png draws PNG, but -o t.svg names SVG: give -o t.png",
        ),
        (
            ["-o", "t.json", "--format", "mermaid"],
            "Error: --format mermaid does not write .json files (-o t.json names"
            " json): give -o t.mmd, or leave out --format",
        ),
        (
            ["-o", "t.html", "--render", "svg"],
            "Error: --render svg draws a picture, but -o t.html names html:"
            " give -o t.svg",
        ),
    ],
)
def test_a_format_that_contradicts_the_extension_is_refused(
    seed_db, tmp_path, monkeypatch, words, message
):
    folder = tmp_path / "out"
    folder.mkdir()
    monkeypatch.chdir(folder)
    result = run("export", "complex", *words, "--db", seed_db, expect=2)
    assert (result.stdout, result.stderr) == ("", message + "\n")
    assert list(folder.iterdir()) == []


def test_agreeing_options_and_unknown_extensions_keep_working(seed_db, tmp_path):
    json_tree = tmp_path / "tree.json"
    run("export", "complex", "--format", "tree-json", "-o", json_tree, "--db", seed_db)
    assert json.loads(json_tree.read_text())["format"] == "convgraph.tree-json"
    other = tmp_path / "tree.txt"
    run("export", "complex", "--format", "dot", "-o", other, "--db", seed_db)
    assert other.read_text().startswith('digraph "complex" {')
    stdout = run("export", "complex", "--format", "mermaid", "-o", "-", "--db", seed_db)
    assert stdout.stdout.startswith("flowchart TB\n")
