"""The first five minutes of a newcomer (issue 25): flags that read the same
everywhere, help that fits its line, errors that say what to type next.
Each test runs the command line on the example database or a test file and
asserts the exact text."""

from __future__ import annotations

import json

from convgraph.cli import COMMANDS, SUMMARIES, cli
from tests.helpers import ROOT, run

EXAMPLE = ROOT / "examples" / "logs.db"
HAIKU = "01jb1haiku000000000000000"


def test_h_is_help_for_the_group_and_every_command() -> None:
    assert run("-h").stdout == run("--help").stdout
    for command in COMMANDS:
        assert run(command.name, "-h").stdout == run(command.name, "--help").stdout


def test_every_summary_fits_its_line() -> None:
    listed = run("--help", terminal_width=80).stdout.split("Commands:\n")[1]
    lines = listed.splitlines()
    assert len(lines) == len(COMMANDS)
    for line in lines:
        name, summary = line.split(maxsplit=1)
        assert summary == SUMMARIES[name]
        assert not summary.endswith("...")
        assert len(summary) <= 45
    assert set(SUMMARIES) == set(cli.commands)


def test_database_is_db() -> None:
    assert (
        run("leaves", HAIKU, "--database", EXAMPLE).stdout
        == run("leaves", HAIKU, "--db", EXAMPLE).stdout
        == run("leaves", HAIKU, "-d", EXAMPLE).stdout
        == "01jb1hk01b000000000000000\n01jb1hk02c000000000000000\n"
    )


def test_transcript_json_as_every_command_spells_it() -> None:
    spelt = run("transcript", HAIKU, "--json", "-d", EXAMPLE)
    assert spelt.stderr == ""
    messages = json.loads(spelt.stdout)
    assert [message["role"] for message in messages] == ["user", "assistant"] * 2
    # The spelling before --json still works, and says the new one.
    before = run("transcript", HAIKU, "--format", "json", "-d", EXAMPLE)
    assert before.stdout == spelt.stdout
    assert before.stderr == "Note: --format json is spelt --json now, as elsewhere\n"
    markdown = run("transcript", HAIKU, "-d", EXAMPLE)
    assert markdown.stdout.startswith("# Autumn haiku\n")
    assert (
        markdown.stdout
        == run("transcript", HAIKU, "--format", "markdown", "-d", EXAMPLE).stdout
    )


def test_a_picture_format_points_to_render() -> None:
    for given, kind in (("svg", "svg"), ("PNG", "png"), ("pdf", "svg")):
        result = run("export", "--format", given, "-d", EXAMPLE, expect=2)
        assert result.stdout == ""
        assert result.stderr == (
            f"Error: --format {given}: a picture is drawn with --render (svg|png):"
            f" convgraph export --render {kind} -o tree.{kind}\n"
        )
