"""The first five minutes of a newcomer (issue 25): flags that read the same
everywhere, help that fits its line, errors that say what to type next.
Each test runs the command line on the example database or a test file and
asserts the exact text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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
        if name in SUMMARIES:
            assert summary == SUMMARIES[name]
        # A command added later may say its own: it fits all the same.
        assert not summary.endswith("...")
        assert len(summary) <= 45
    assert set(SUMMARIES) <= set(cli.commands)


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
    for given, kind in (("svg", "svg"), ("PNG", "png"), ("pdf", "pdf"), ("jpg", "svg")):
        result = run("export", "--format", given, "-d", EXAMPLE, expect=2)
        assert result.stdout == ""
        assert result.stderr == (
            f"Error: --format {given}: a picture is drawn with --render"
            f" (svg|png|pdf):"
            f" convgraph export --render {kind} -o tree.{kind}\n"
        )


def _needs(what: str, library: str, extra: str) -> str:
    return f"Error: {what} needs {library}: pip install 'convgraph[{extra}]'\n"


def link_installed(site: Path, requirements: list[str]) -> None:
    """Link into `site` the distributions installed here that `requirements`
    need, with theirs (markers evaluated, no extras): what pip would install
    for them, at the versions the suite runs with, without a download."""
    from importlib.metadata import distribution

    from packaging.requirements import Requirement

    seen: set[str] = set()
    wanted = [Requirement(text) for text in requirements]
    while wanted:
        requirement = wanted.pop()
        name = requirement.name.lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        found = distribution(requirement.name)
        for text in found.requires or []:
            needed = Requirement(text)
            if needed.marker is None or needed.marker.evaluate({"extra": ""}):
                wanted.append(needed)
        tops = {Path(str(file)).parts[0] for file in found.files or []}
        for top in tops - {"..", "__pycache__"}:
            if not (site / top).exists():
                (site / top).symlink_to(found.locate_file(top))


@pytest.mark.slow
def test_a_missing_extra_is_one_line_and_status_2(tmp_path: Path) -> None:
    """In a fresh virtual environment with convgraph and its dependencies
    but none of its extras (linked from this environment, as pip would
    install them), every command that needs an extra says which, in one
    line, exit status 2; then with pyarrow but no Dask, --dask says it needs
    Dask."""
    import tomllib

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    link_installed(site, project["dependencies"])
    (site / "convgraph").symlink_to(ROOT / "convgraph")
    alone = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    dataset = tmp_path / "dataset"
    run("export", "--format", "parquet", "-o", dataset, "-d", EXAMPLE)

    def convgraph(*words: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [python, "-m", "convgraph", *map(str, words)],
            capture_output=True,
            text=True,
            check=False,
            cwd=tmp_path,
            env=alone,
        )

    reading = "reading a Parquet dataset (--db DIR)"
    for words, said in (
        (
            ("export", "--format", "parquet", "-o", tmp_path / "out", "-d", EXAMPLE),
            _needs("convgraph export --format parquet", "pyarrow", "parquet"),
        ),
        (("stats", "--db", dataset), _needs(reading, "pyarrow", "parquet")),
        (
            ("stats", "--dask", "local", "--db", dataset),
            _needs(reading, "pyarrow", "parquet"),
        ),
        (("check", "--db", dataset), _needs(reading, "pyarrow", "parquet")),
        (("browse", "-d", EXAMPLE), _needs("convgraph browse", "Textual", "browse")),
    ):
        done = convgraph(*words)
        assert (done.returncode, done.stdout, done.stderr) == (2, "", said), words
    assert not (tmp_path / "out").exists()
    # What needs no extra works without one.
    done = convgraph("stats", "-d", EXAMPLE, "--columns", "tree_id,nodes", "--csv")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[:2] == [
        "tree_id,nodes",
        "01jb0sourdough0000000000000,7",
    ]
    link_installed(site, ["pyarrow"])
    done = convgraph("stats", "--dask", "local", "--db", dataset)
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        _needs("convgraph stats --dask", "Dask", "dask"),
    )
    done = convgraph("stats", "--db", dataset, "--columns", "tree_id,nodes", "--csv")
    assert (done.returncode, done.stderr) == (0, "")


def test_needs_extra_imports_what_it_names() -> None:
    from convgraph.cli.options import UserError, needs_extra

    needs_extra("json", "none", "anything")  # there: nothing said
    with pytest.raises(UserError) as raised:
        needs_extra("dask.no_such_part", "dask", "convgraph stats --dask")
    assert raised.value.exit_code == 2
    assert raised.value.format_message() == (
        "convgraph stats --dask needs Dask: pip install 'convgraph[dask]'"
    )


def test_an_export_is_read_only_and_import_brings_it_in(tmp_path: Path) -> None:
    export = ROOT / "examples" / "chatgpt-export.zip"
    before = export.read_bytes()
    said = (
        f"Error: {export} is an export, which convgraph reads but never writes:"
        f" bring it into llm's database with convgraph import {export}\n"
    )
    for words in (
        ["migrate"],
        ["migrate", "--dry-run"],
        ["delete", "01k6q3sssrwxe1xgrrqttyfx5t"],
        ["branch", "01k6q3sssrwxe1xgrrqttyfx5t", "and then?"],
        ["regenerate", "01k6q3sssrwxe1xgrrqttyfx5t"],
    ):
        result = run(*words, "--db", export, expect=2)
        assert (result.stdout, result.stderr) == ("", said), words
    assert export.read_bytes() == before
    # A file that is neither SQLite nor an export: SQLite's words, as before.
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n")
    result = run("migrate", "--db", text, expect=2)
    assert result.stderr == (
        f"Error: {text} is not an SQLite database (file is not a database)\n"
    )


def test_without_an_llm_database_the_message_names_db(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    expected = (
        f"Error: no llm database at {tmp_path / 'llm' / 'logs.db'} ($LLM_USER_PATH"
        " logs.db, read when --db is not given): name one with --db PATH, or log"
        " a prompt with llm first\n"
    )
    for words in (["conversations"], ["tree"], ["stats"], ["leaves", "x"], ["migrate"]):
        result = run(*words, expect=2)
        assert (result.stdout, result.stderr) == ("", expected), words
    assert not (tmp_path / "llm").exists()
    # import makes llm's database where there is none, as it always did.
    run("import", ROOT / "examples" / "chatgpt-export.zip")
    assert (tmp_path / "llm" / "logs.db").exists()
    assert run("conversations").stdout.startswith("tree_id ")


def test_a_table_fits_by_priority_and_keeps_its_order() -> None:
    from convgraph.cli.output import TableFit

    shown = [["id", "a1"], ["n", "7"], ["name", "a long name"], ["extra", "x"]]
    fit = TableFit(24, ("id", "name", "n"), "name", 4)
    # id (2) + name (4 at first) + n (1) + extra (5), two spaces apart: 18;
    # then the name takes the cells left (10), cut with an ellipsis.
    assert fit.apply(
        ["id", "n", "name", "extra"], [list(c) for c in shown], {0, 2, 3}
    ) == (
        [["id", "a1"], ["n", "7"], ["name", "a long na…"], ["extra", "x"]],
        {0, 2, 3},
    )
    # Narrower: the column no priority names goes first; the name has 7.
    assert TableFit(14, ("id", "name", "n"), "name", 4).apply(
        ["id", "n", "name", "extra"], [list(c) for c in shown], {0, 2, 3}
    ) == ([["id", "a1"], ["n", "7"], ["name", "a long…"]], {0, 2})


# -- silence is no answer (issue 38.5) ----------------------------------------


def test_an_empty_answer_says_why_on_stderr() -> None:
    """A filter that keeps nothing says what it filtered and how many trees
    there were before it; the answer on stdout stays empty."""
    for words in (["conversations"], ["tree"]):
        result = run(*words, "--model", "gpt*x", "--source", "chatgpt", "-d", EXAMPLE)
        assert (result.stdout, result.stderr) == (
            "",
            "no conversation matches --model gpt*x --source chatgpt"
            " (4 conversations before the filter)\n",
        )
    exported = run("export", "--model", "none", "--format", "mermaid", "-d", EXAMPLE)
    assert exported.stderr == "nothing exported: no conversation matches --model none\n"
    pairs = run("pairs", "--model", "none", "-d", EXAMPLE)
    assert (pairs.stdout, pairs.stderr) == (
        "",
        "no conversation matches --model none\n",
    )
    leaf = run("children", "01jb5sd06f", "-d", EXAMPLE)
    assert (leaf.stdout, leaf.stderr) == (
        "",
        "01jb5sd06f000000000000000 has no children: it is a leaf\n",
    )
    # The forms for programs say it themselves: an empty array.
    assert run("children", "01jb5sd06f", "--json", "-d", EXAMPLE).stderr == ""


def test_a_prefix_too_short_says_how_long_one_must_be() -> None:
    result = run("path", "01j", "-d", EXAMPLE, expect=2)
    assert result.stderr == (
        "Error: no node with id '01j': an id prefix needs at least 4"
        " characters ('01j' has 3)\n"
    )
