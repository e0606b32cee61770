"""The newcomer's list (issue 48, section 3): what a new user meets first on
a fresh clone, each with the exact answer convgraph gives."""

from __future__ import annotations

import csv
import io
import re
import shlex
import shutil
import tomllib
from pathlib import Path

import pytest

import convgraph
from convgraph.errors import AmbiguousId
from convgraph.sources import READS
from tests.helpers import ROOT, run, run_on_a_terminal

EXAMPLE = ROOT / "examples" / "logs.db"
HASHMAP = "01jb2hashmap0000000000000"
#: The ambiguous prefix `01jb`'s listing: conversations, as `tree` wants.
LISTING_01JB = [
    "01jb is ambiguous: it begins 5 ids:",
    "  01jb0sourdough0000000000000  conversation: My kitchen is only 18 °C in win…",
    "  01jb1haiku000000000000000  conversation: Autumn haiku",
    "  01jb2hashmap0000000000000  conversation: How hash maps work",
    "  01jb3translate00000000000  conversation: Good morning, translated",
    "  01jb5sdfork0thread00000000  conversation in tree 01jb0sourdough0000000000000",
]


def shown_lines(shown: bytes) -> list[str]:
    """What a terminal received, as lines."""
    return shown.decode().replace("\r\n", "\n").splitlines()


def test_a_prefix_search_shows_is_unique_in_the_whole_file() -> None:
    # 60 columns: the heading does not fit, so ids are cut. 8 characters
    # tell the hit's two ids apart, but 01jb2hm0 begins 7 ids of the file.
    result = run_on_a_terminal("search", "memory", "--db", EXAMPLE, size=(24, 60))
    lines = shown_lines(result.shown)
    assert lines[0] == "1.  01jb2hash  01jb2hm06  depth 2  active  claude-3.5-sonne…"
    tree, node = lines[0].split()[1:3]
    with convgraph.open(EXAMPLE) as logs:
        assert logs.resolve(tree) == HASHMAP
        assert logs.resolve(node) == "01jb2hm06g000000000000000"


def test_all_brings_llm_which_import_needs() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    (wanted,) = extras["all"]
    named = re.fullmatch(r"convgraph\[(.*)\]", wanted)
    assert named is not None
    brought = [
        package for extra in named.group(1).split(",") for package in extras[extra]
    ]
    assert "llm>=0.36" in brought


def test_an_empty_file_says_it_is_empty(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.touch()
    result = run("conversations", "--db", empty, expect=2)
    assert result.stderr == f"Error: {empty} is empty: {READS}\n"


def test_broken_json_says_where(tmp_path: Path) -> None:
    broken = tmp_path / "conversations.json"
    broken.write_text('[{"title": "x",\n  "mapping": {1: 2}}]')
    result = run("tree", "--db", broken, expect=2)
    assert result.stderr == (
        f"Error: {broken} is JSON with an error at line 2 column 15 (Expecting"
        f" property name enclosed in double quotes): {READS}\n"
    )


def test_a_folder_without_sessions_says_so(tmp_path: Path) -> None:
    projects = tmp_path / ".claude" / "projects"
    projects.mkdir(parents=True)
    result = run("conversations", "--db", projects, expect=2)
    assert result.stderr == f"Error: no sessions were found under {projects}: {READS}\n"


def test_an_id_that_is_a_path_points_to_db(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    result = run("tree", "examples/logs.db", "--db", "examples/logs.db", expect=2)
    assert result.stderr == (
        "Error: no conversation with id 'examples/logs.db': examples/logs.db is a"
        " path; to read it, give it with --db examples/logs.db\n"
    )


def test_an_unknown_extension_names_the_known_ones(tmp_path: Path) -> None:
    target = tmp_path / "out.xyz"
    result = run("export", "--db", EXAMPLE, "-o", target, expect=2)
    assert result.stderr == (
        f"Error: -o {target}: .xyz is no extension convgraph writes (.dot .gv"
        " .graphml .json .mmd .mermaid .md .markdown .html .htm .jsonl .parquet"
        " .svg .png .pdf): rename the file, or choose the format with --format\n"
    )
    assert not target.exists()


def said(path: Path) -> str:
    return f"wrote {path} ({path.stat().st_size:,} bytes)\n"


def test_a_file_output_says_what_it_wrote(tmp_path: Path) -> None:
    dot = tmp_path / "forest.dot"
    assert run("export", "--db", EXAMPLE, "-o", dot).stderr == said(dot)
    assert dot.read_text().startswith('digraph "')
    if shutil.which("dot") is not None:
        svg = tmp_path / "haiku.svg"
        result = run(
            "export", "01jb1haiku", "--render", "svg", "-o", svg, "--db", EXAMPLE
        )
        assert result.stderr == said(svg)
    pytest.importorskip("matplotlib")
    pytest.importorskip("genai_prices")
    chart = tmp_path / "weeks.png"
    result = run("stats", "--by", "week", "--plot", chart, "--db", EXAMPLE, "--csv")
    assert result.stderr.splitlines()[-1] == said(chart).rstrip("\n")


def test_error_lines_wrap_to_the_terminal(tmp_path: Path) -> None:
    missing = tmp_path / ("d" * 70) / "x.json"
    result = run_on_a_terminal(
        "conversations", "--db", missing, stream="stderr", size=(24, 50)
    )
    lines = shown_lines(result.shown)
    assert result.status == 2
    assert all(len(line) <= 50 for line in lines)
    assert " ".join(line.strip() for line in lines).replace(" ", "") == (
        f"Error: no database file at {missing}".replace(" ", "")
    )


def test_the_ambiguous_listing_fits_80_columns() -> None:
    result = run_on_a_terminal(
        "tree", "01jb", "--db", EXAMPLE, stream="stderr", size=(24, 200)
    )
    lines = shown_lines(result.shown)
    assert lines == ["Error: " + LISTING_01JB[0], *LISTING_01JB[1:]]
    assert max(len(line) for line in lines) <= 80


def test_the_library_and_the_cli_say_the_same_of_a_prefix() -> None:
    with convgraph.open(EXAMPLE) as logs, pytest.raises(AmbiguousId) as raised:
        logs.tree("01jb")
    assert str(raised.value).splitlines() == LISTING_01JB
    result = run("tree", "01jb", "--db", EXAMPLE, expect=2)
    assert result.stderr == "Error: " + "\n".join(LISTING_01JB) + "\n"


def test_the_readmes_commands_name_the_files_of_a_clone() -> None:
    """Every convgraph command the README shows reads --db examples/... or a
    file it names, and no output shows a path of the machine it ran on."""
    text = (ROOT / "README.md").read_text()
    assert "/tmp/" not in text
    commands = [
        shlex.split(line.removeprefix("$ ").split("&&")[-1])
        for block in re.findall(r"^```(?:console|bash)\n(.*?)^```$", text, re.S | re.M)
        for line in block.splitlines()
        if line.removeprefix("$ ").startswith(("convgraph", "pip install"))
    ]
    assert len(commands) >= 9
    for words in commands:
        if words[0] != "convgraph" or words[1:2] == ["import"]:
            continue
        assert "--db" in words and words[words.index("--db") + 1].startswith(
            "examples/"
        ), words
    shown = {words[1] for words in commands if words[0] == "convgraph"}
    assert {"transcript", "diff", "export", "import", "tree", "search"} <= shown


def test_stats_show_cache_reads_and_writes_of_agents_sessions() -> None:
    sessions = ROOT / "tests" / "data" / "agents" / "claude-code"
    rows = list(
        csv.DictReader(io.StringIO(run("stats", "--db", sessions, "--csv").stdout))
    )
    assert [
        (
            row["tree_id"],
            row["input_tokens"],
            row["cache_read_tokens"],
            row["cache_write_tokens"],
        )
        for row in rows
    ] == [
        ("s1", "443", "100", "5"),
        ("test-session-id", "", "", ""),
    ]
    pytest.importorskip("genai_prices")
    by = run("stats", "--db", sessions, "--by", "month", "--csv").stdout
    months = list(csv.DictReader(io.StringIO(by)))
    assert [
        (row["month"], row["cache_read_tokens"], row["cache_write_tokens"])
        for row in months
    ] == [
        ("2025-06", "100", "5"),
        ("2025-12", "", ""),
    ]
    # llm's files have no cache figures: their tables keep their columns.
    plain = run("stats", "--db", EXAMPLE, "--csv").stdout.splitlines()[0]
    assert "cache" not in plain
