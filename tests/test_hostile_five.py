"""Hostile round five (issue 48, section 1) on a real `datasette serve`
and the command line: Datasette's permissions inside a database, a file
that is not llm's, numbers and ids typed into a page, and `-o`.

The server serves four files: examples/logs.db as it is (`logs`), a copy
whose every table Datasette refuses with SQL turned off (`denied`), a copy
whose tables are refused but SQL allowed (`sql`: a query reads them all),
and a survey file with llm's table names but its own columns (`survey`).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("datasette", reason="pip install 'convgraph[datasette]'")
httpx = pytest.importorskip("httpx")
lxml_html = pytest.importorskip("lxml.html")

from convgraph.errors import ECHOED  # noqa: E402
from tests.helpers import ROOT, SAFETY_SECONDS, file_digest, run, wait_until  # noqa: E402
from tests.test_datasette_browser import free_port, responds  # noqa: E402

EXAMPLE = ROOT / "examples" / "logs.db"
HAIKU = "01jb1haiku000000000000000"


def survey_file(path: Path) -> Path:
    """A survey's own `responses` and `conversations`: llm's names, not its columns."""
    conn = sqlite3.connect(path)
    conn.execute("create table responses (id text primary key, survey text, body text)")
    conn.execute("create table conversations (id text primary key, title text)")
    conn.execute("insert into responses values ('r1', 's1', 'I like it')")
    conn.execute("insert into conversations values ('c1', 'Spring survey')")
    conn.commit()
    conn.close()
    return path


def refused(tables: list[str]) -> dict[str, dict[str, bool]]:
    return {table: {"allow": False} for table in tables}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("hostile")
    paths = [
        Path(shutil.copy(EXAMPLE, folder / f"{name}.db"))
        for name in ("logs", "denied", "sql")
    ]
    paths.append(survey_file(folder / "survey.db"))
    conn = sqlite3.connect(EXAMPLE)
    tables = [
        row[0]
        for row in conn.execute("select name from sqlite_master where type = 'table'")
    ]
    conn.close()
    metadata = {
        "databases": {
            "denied": {"allow_sql": False, "tables": refused(tables)},
            "sql": {"tables": refused(tables)},
        }
    }
    (folder / "metadata.json").write_text(json.dumps(metadata))
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "datasette", "serve", *map(str, paths)]
        + ["--metadata", str(folder / "metadata.json")]
        + ["--host", "127.0.0.1", "--port", str(port)],
        env={**os.environ, "XDG_CACHE_HOME": str(folder / "cache")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(
            lambda: process.poll() is not None or responds(url + "/-/versions.json"),
            "datasette answers",
            poll=0.1,
        )
        assert process.poll() is None, "datasette serve stopped"
        yield url
    finally:
        process.terminate()
        process.wait(timeout=SAFETY_SECONDS)


def get(server: str, path: str) -> httpx.Response:
    return httpx.get(server + path, timeout=SAFETY_SECONDS)


def message(response: httpx.Response) -> str:
    """The message of Datasette's error page."""
    (box,) = lxml_html.fromstring(response.text).xpath(
        "//section[@class='content']/div"
    )
    return box.text_content().strip()


# -- permissions inside a database ------------------------------------------


def test_a_database_whose_tables_are_refused_shows_no_text(server: str) -> None:
    for path in ("/denied/responses", "/denied/turns", "/denied?sql=select+1"):
        assert get(server, path).status_code == 403, path
    for path in (
        "/-/convgraph/denied",
        f"/-/convgraph/denied/{HAIKU}",
        "/-/convgraph/denied?q=haiku",
    ):
        response = get(server, path)
        assert response.status_code == 403, path
        assert message(response) == (
            "You do not have permission to view the tables these conversations come from"
        )
        assert "haiku" not in response.text.lower()
    assert "View as conversation trees" not in get(server, "/denied").text


def test_sql_that_could_read_the_tables_is_enough(server: str) -> None:
    assert get(server, "/sql/responses").status_code == 403
    assert get(server, "/sql?sql=select+prompt+from+responses").status_code == 200
    for path in ("/-/convgraph/sql", f"/-/convgraph/sql/{HAIKU}"):
        assert get(server, path).status_code == 200, path
    assert get(server, "/-/convgraph/logs").status_code == 200


# -- a database that is not llm's --------------------------------------------


def test_a_survey_with_llms_table_names_is_left_alone(server: str) -> None:
    for path in ("/-/convgraph/survey", "/-/convgraph/survey/r1"):
        response = get(server, path)
        assert response.status_code == 404
        assert (
            message(response) == "survey is not an llm database: no conversation trees"
        )
    for page in ("/survey", "/survey/responses", "/survey/conversations"):
        text = get(server, page).text
        assert "View as conversation trees" not in text
        assert "convgraph" not in text


@pytest.mark.parametrize(
    "words",
    [
        ["conversations"],
        ["tree", "r1"],
        ["stats"],
        ["search", "like"],
        ["export", "--format", "json"],
    ],
)
def test_the_command_line_says_the_survey_is_not_llms(
    tmp_path: Path, words: list[str]
) -> None:
    path = survey_file(tmp_path / "survey.db")
    before = file_digest(path)
    result = run(*words, "--db", path, expect=2)
    assert result.stderr == (
        f"Error: {path} has no llm tables (no responses or turns with the columns llm writes)\n"
    )
    assert file_digest(path) == before


# -- numbers and ids typed into a page ----------------------------------------


@pytest.mark.parametrize(
    ("page", "shown"),
    [("%C2%B2", "'²'"), ("9" * 5000, "'" + "9" * (ECHOED - 3) + "…'"), ("-1", "'-1'")],
)
def test_a_page_number_is_ascii_digits_and_bounded(
    server: str, page: str, shown: str
) -> None:
    response = get(server, f"/-/convgraph/logs?_page={page}")
    assert response.status_code == 400
    assert (
        message(response) == f"_page is a whole number from 1 to {10**9}, not {shown}"
    )


def raw_get(server: str, path: str) -> tuple[int, str]:
    """One GET on a socket of its own: httpx refuses a URL this long."""
    host, port = server.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=SAFETY_SECONDS) as conn:
        conn.sendall(
            f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
        )
        received = b""
        while chunk := conn.recv(1 << 16):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode()


def test_a_long_id_is_refused_before_any_read(server: str) -> None:
    given = "01jb" + "x" * 99_996
    status, body = raw_get(server, f"/-/convgraph/logs/{given}")
    assert status == 404
    cut = "'" + given[: ECHOED - 3] + "…'"
    (box,) = lxml_html.fromstring(body).xpath("//section[@class='content']/div")
    assert box.text_content().strip() == f"No conversation tree or node {cut}"
    assert get(server, "/-/versions.json").status_code == 200


def test_an_unknown_id_echoes_at_most_a_bounded_part(server: str) -> None:
    given = "01jc" + "y" * 900
    response = get(server, f"/-/convgraph/logs/{given}")
    assert response.status_code == 404
    cut = "'" + given[: ECHOED - 3] + "…'"
    assert message(response) == f"No conversation tree or node {cut} in logs"


# -- numbers on the command line -------------------------------------------


@pytest.mark.parametrize(
    ("limit", "shown"),
    [
        ("²", "'²'"),
        ("٣", "'٣'"),
        ("9" * 5000, "'" + "9" * (ECHOED - 3) + "…'"),
        ("1e3", "'1e3'"),
    ],
)
def test_a_number_on_the_command_line_is_ascii_digits_and_bounded(
    limit: str, shown: str
) -> None:
    result = run("search", "hash", "--limit", limit, "--db", EXAMPLE, expect=2)
    assert result.stderr.splitlines()[-1] == (
        f"Error: Invalid value for '-n' / '--limit': {shown} is not a whole number from 1 to 100000"
    )


# -- -o ------------------------------------------------------------------------


def test_a_trailing_separator_names_a_folder(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    target = f"{tmp_path / 'out' / 'exports'}{os.sep}"
    result = run("export", "--db", EXAMPLE, "-o", target, expect=2)
    assert result.stderr == (
        f"Error: cannot write {target}: a path ending in a separator names a folder,"
        " not the file written\n"
    )
    assert list((tmp_path / "out").iterdir()) == []


def test_a_name_as_long_as_the_file_system_takes_is_written(tmp_path: Path) -> None:
    longest = os.pathconf(tmp_path, "PC_NAME_MAX")
    name = "t" * (longest - len(".dot")) + ".dot"
    result = run("export", HAIKU, "--db", EXAMPLE, "-o", tmp_path / name)
    assert [path.name for path in tmp_path.iterdir()] == [name]
    assert (tmp_path / name).read_text().startswith(f'digraph "{HAIKU}" {{')
    size = (tmp_path / name).stat().st_size
    assert result.stderr == f"wrote {tmp_path / name} ({size:,} bytes)\n"


def test_a_long_id_on_the_command_line_is_refused_with_its_echo_cut() -> None:
    given = "01jb" + "z" * 99_996
    result = run("tree", given, "--db", EXAMPLE, expect=2)
    cut = "'" + given[: ECHOED - 3] + "…'"
    assert result.stderr == f"Error: no conversation with id {cut}\n"
