"""Progress that tells the truth: the library's `(phase, done, total)`
callback on real files, and the bar the commands draw from it
(`convgraph.cli.progress.ProgressBar`) on a real pseudo-terminal.

What a terminal finally shows is read through pyte, a terminal emulator: the
bar's bytes pass through the pty while the work runs, and the screen left at
the end must hold none of it. The "after a second" delay is set to 0 through
`CONVGRAPH_PROGRESS_DELAY`, never waited for.
"""

from __future__ import annotations

import io
import os

import pyte
import pytest

from convgraph.cli.progress import DELAY_VARIABLE, ProgressBar
from tests.helpers import run_on_a_terminal

COLUMNS, LINES = 80, 24


def screen_of(shown: bytes, columns: int = COLUMNS) -> list[str]:
    """The non-blank lines of a terminal `columns` wide (80) after these
    bytes."""
    screen = pyte.Screen(columns, LINES)
    pyte.ByteStream(screen).feed(shown)
    return [line.rstrip() for line in screen.display if line.strip()]


def on_a_terminal(*args: str, delay: str = "0") -> tuple[str, str, list[str]]:
    """Run `convgraph ARGS` with stderr on an 80x24 pseudo-terminal and
    stdout on a pipe: what stdout received, every byte the terminal was sent
    (decoded), and the terminal's screen at the end."""
    done = run_on_a_terminal(
        *args,
        stream="stderr",
        size=(LINES, COLUMNS),
        env={**os.environ, DELAY_VARIABLE: delay},
    )
    stdout = done.piped.decode()
    assert done.status == 0, stdout
    return stdout, done.shown.decode(), screen_of(done.shown)


class Terminal(io.StringIO):
    """A stream that says it is a terminal: what the bar draws, kept."""

    def isatty(self) -> bool:
        return True


# -- the bar -------------------------------------------------------------------------------


def test_the_bar_names_each_phase_and_is_erased_at_the_end() -> None:
    stream = Terminal()
    with ProgressBar(stream=stream, delay=0) as bar:
        bar("reading responses", 0, 1_000)
        bar("reading responses", 500, 1_000)
        bar("reading responses", 1_000, 1_000)
        bar("checking parent links", 0, None)
        mid_work = screen_of(stream.getvalue().encode())
    # Each phase is drawn as it begins (later counts at rich's pace).
    first = screen_of(stream.getvalue().split("\r")[1].encode())
    assert first[0].startswith("reading responses ━")
    assert first[0].endswith("   0% 0/1000")
    assert len(mid_work) == 1
    assert mid_work[0].startswith("checking parent links ━")
    assert screen_of(stream.getvalue().encode()) == []


def test_bytes_are_counted_as_bytes() -> None:
    stream = Terminal()
    with ProgressBar(in_bytes=True, stream=stream, delay=0) as bar:
        bar("reading the export", 2_500_000, 10_000_000)
        mid_work = screen_of(stream.getvalue().encode())
    assert len(mid_work) == 1
    assert "reading the export" in mid_work[0]
    assert " 25% 2.5 MB/10.0 MB" in mid_work[0]
    assert screen_of(stream.getvalue().encode()) == []


def test_a_count_without_a_total_shows_the_count_and_the_time() -> None:
    stream = Terminal()
    with ProgressBar(stream=stream, delay=0) as bar:
        bar("writing page", 5, None)
        mid_work = screen_of(stream.getvalue().encode())
    assert mid_work[0].startswith("writing page ━")
    assert mid_work[0].endswith(" 5  0 s")
    assert screen_of(stream.getvalue().encode()) == []


def test_short_work_and_a_pipe_show_nothing() -> None:
    # Work that ends before the delay: not a byte.
    stream = Terminal()
    with ProgressBar(stream=stream, delay=3600) as bar:
        bar("reading responses", 10, 10)
    assert stream.getvalue() == ""
    # Not a terminal: nothing, whatever the delay.
    piped = io.StringIO()
    with ProgressBar(stream=piped, delay=0) as bar:
        bar("reading responses", 10, 10)
    assert piped.getvalue() == ""


def test_the_delay_is_read_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv(DELAY_VARIABLE, "0")
    assert ProgressBar().delay == 0
    monkeypatch.setenv(DELAY_VARIABLE, "2.5")
    assert ProgressBar().delay == 2.5
    monkeypatch.delenv(DELAY_VARIABLE)
    assert ProgressBar().delay == 1.0


# -- the library's callback on real files --------------------------------------------------


def seven_rows_a_statement(monkeypatch) -> None:
    """Every statement of a whole-table read reads 7 rows, so that a small
    file is read in several chunks."""
    from convgraph.sources.llm import snapshot

    for name in ("FIRST_CHUNK_ROWS", "MIN_CHUNK_ROWS", "MAX_CHUNK_ROWS"):
        monkeypatch.setattr(snapshot, name, 7)


@pytest.mark.parametrize("reader", ["columnar", "rows"])
def test_a_whole_read_reports_each_table_chunk_by_chunk(seed_db, monkeypatch, reader):
    from convgraph.sources.llm import columnar
    from tests.helpers import read_forest

    if reader == "rows":
        monkeypatch.setattr(columnar, "available", lambda: False)
    elif not columnar.available():
        pytest.skip("the columnar reader needs the fast extra")
    seven_rows_a_statement(monkeypatch)
    seen: list[tuple] = []
    read_forest(seed_db, text=False, progress=lambda *report: seen.append(report))
    # The seed holds 20 responses in 4 conversations.
    responses = [
        ("reading responses", 0, 20),
        ("reading responses", 7, 20),
        ("reading responses", 14, 20),
        ("reading responses", 20, 20),
    ]
    conversations = [("reading conversations", 0, 4), ("reading conversations", 4, 4)]
    linking = [("linking the nodes", 0, None)]
    # The columnar reader links the responses before it reads the names.
    middle = (
        linking + conversations if reader == "columnar" else conversations + linking
    )
    assert seen == [*responses, *middle, ("checking parent links", 0, None)]


def test_a_message_store_read_reports_its_tables(llm_fork_db):
    from tests.helpers import read_forest

    seen: list[tuple] = []
    read_forest(
        llm_fork_db["path"], text=False, progress=lambda *report: seen.append(report)
    )
    phases = list(dict.fromkeys(phase for phase, _, _ in seen))
    assert phases[-2:] == ["linking the nodes", "checking parent links"]
    # llm 0.36 wrote 5 turns in 2 threads.
    assert ("reading turns", 5, 5) in seen
    assert ("reading threads", 2, 2) in seen
    for phase in phases:
        counts = [(done, total) for name, done, total in seen if name == phase]
        dones = [done for done, _ in counts]
        assert dones == sorted(dones)  # only ever growing
        total = counts[-1][1]
        assert total is None or dones[-1] == total  # ending at the total


def test_a_read_of_named_trees_counts_them(seed_db):
    from tests.helpers import read_forest

    seen: list[tuple] = []
    read_forest(
        seed_db,
        conversation_ids=["linear", "complex", "linear"],
        progress=lambda *report: seen.append(report),
    )
    assert seen == [
        ("reading conversations", 0, 2),
        ("reading conversations", 1, 2),
        ("reading conversations", 2, 2),
        ("checking parent links", 0, None),
    ]


# -- the commands on a terminal ----------------------------------------------------------


@pytest.fixture
def large_seed_db(seed_db, tmp_path):
    """The seed database grown past `SMALL_INPUT_BYTES` by a table of its
    own, so that `stats` reads it whole, with its phases."""
    import shutil
    import sqlite3

    from convgraph.analysis.summaries import SMALL_INPUT_BYTES

    path = tmp_path / "large.db"
    shutil.copy(seed_db, path)
    with sqlite3.connect(path) as conn:
        conn.execute("create table padding (data blob)")
        conn.execute("insert into padding values (zeroblob(?))", [SMALL_INPUT_BYTES])
    conn.close()
    return path


def test_stats_shows_its_phases_on_a_terminal_and_leaves_no_bar(large_seed_db):
    from tests.helpers import run

    seed_db = large_seed_db
    stdout, shown, screen = on_a_terminal("stats", "--db", str(seed_db))
    assert stdout == run("stats", "--db", str(seed_db)).stdout  # as piped
    for phase in (
        "reading responses",
        "reading conversations",
        "linking the nodes",
        "checking parent links",
        "computing statistics",
    ):
        assert phase in shown
    assert screen == []  # erased: no `Done [####] 100%` left behind
    # --quiet, or work shorter than the delay: not a byte on the terminal.
    assert on_a_terminal("stats", "--db", str(seed_db), "--quiet")[1] == ""
    assert on_a_terminal("stats", "--db", str(seed_db), delay="60")[1] == ""


def test_a_pipe_gets_no_bar(seed_db):
    from tests.helpers import run

    result = run("stats", "--db", str(seed_db), env={DELAY_VARIABLE: "0"}, color=True)
    assert result.stderr == ""


def test_building_every_tree_counts_the_trees(seed_db):
    from tests.helpers import read_forest

    seen: list[tuple] = []
    trees = list(read_forest(seed_db).trees(lambda *report: seen.append(report)))
    assert len(trees) == 4
    assert seen == [
        ("building trees", 0, None),
        *[("building trees", done, 4) for done in range(5)],
    ]


def test_the_trees_of_a_forest_say_how_many_are_left(seed_db):
    from tests.helpers import read_forest

    stream = read_forest(seed_db).trees()
    assert len(stream) == 4
    assert next(stream).graph["tree_id"] == "linear"
    assert len(stream) == 3
    assert [tree.graph["tree_id"] for tree in stream] == [
        "branch",
        "complex",
        "multiple-roots",
    ]
    assert len(stream) == 0


def test_tree_of_the_whole_forest_shows_its_phases(seed_db):
    from tests.helpers import run

    stdout, shown, screen = on_a_terminal("tree", "--db", str(seed_db))
    assert stdout == run("tree", "--db", str(seed_db)).stdout
    for phase in ("reading responses", "checking parent links", "building trees"):
        assert phase in shown
    assert screen == []


def test_an_import_from_a_zip_counts_the_bytes_of_its_json(tmp_path):
    import zipfile

    from convgraph.store.importer import import_export
    from tests.chat_exports import claude_export, write_zip

    source = write_zip(tmp_path / "claude.zip", {"conversations.json": claude_export()})
    with zipfile.ZipFile(source) as archive:
        size = archive.getinfo("conversations.json").file_size
    seen: list[tuple] = []
    summary = import_export(
        source,
        tmp_path / "logs.db",
        dry_run=True,
        progress=lambda *report: seen.append(report),
    )
    assert summary.imported == 2
    assert seen[0] == ("importing conversations", 0, size)
    assert seen[-1] == ("importing conversations", size, size)
    counts = [done for _, done, _ in seen]
    assert counts == sorted(counts)


def test_migrate_names_its_steps_and_counts_the_linking(tmp_path, monkeypatch):
    import importlib

    from tests.test_store_migrate import linear_database

    migration = importlib.import_module("convgraph.store.migrate")

    db = linear_database(tmp_path / "logs.db")
    seen: list[tuple] = []
    # Linking batches of 2 responses: several transactions on a small file.
    real_batch = migration._link_batch
    monkeypatch.setattr(
        migration, "_link_batch", lambda conn, start, size: real_batch(conn, start, 2)
    )
    monkeypatch.setattr(migration, "LINK_BATCH_SECONDS", 0.0)
    migration.migrate(db, link_linear=True, progress=lambda *r: seen.append(r))
    steps = [phase for phase, _, _ in seen]
    assert list(dict.fromkeys(steps)) == [
        "planning",
        "adding the parent column",
        "indexing the parents",
        "indexing the conversations",
        "linking responses",
        "adding the rules",
    ]
    # 6 responses in 2 conversations (and one outside any, left alone): a
    # batch of 2 ends before c1, the next takes c1 whole (3), the last c2.
    linking = [
        (done, total) for phase, done, total in seen if phase == "linking responses"
    ]
    assert linking == [(0, 6), (0, 6), (3, 6), (6, 6)]


def test_migrate_on_a_terminal_shows_the_linking(tmp_path):
    from tests.test_store_migrate import linear_database

    db = linear_database(tmp_path / "logs.db")
    stdout, shown, screen = on_a_terminal("migrate", "--db", str(db), "--link-linear")
    assert stdout.startswith("Migrated ")
    for phase in (
        "planning",
        "indexing the conversations",
        "linking responses",
        "adding the rules",
    ):
        assert phase in shown
    assert "linking responses" in shown and "0/6" in shown
    assert screen == []


def test_the_html_page_counts_the_conversations_written(seed_db):
    import io

    from convgraph.export.html import write_html
    from tests.helpers import read_forest

    trees = list(read_forest(seed_db).trees())
    seen: list[tuple] = []
    write_html(trees, io.StringIO(), progress=lambda *report: seen.append(report))
    assert seen == [("writing page", done, 4) for done in range(5)]
    # A stream of trees has no length: counted, the total said at the end.
    seen.clear()
    write_html(iter(trees), io.StringIO(), progress=lambda *r: seen.append(r))
    assert seen == [
        *[("writing page", done, None) for done in range(4)],
        ("writing page", 4, 4),
    ]


def test_export_html_on_a_terminal_shows_reading_and_writing(seed_db, tmp_path):
    page = tmp_path / "page.html"
    stdout, shown, screen = on_a_terminal(
        "export", "--db", str(seed_db), "--format", "html", "-o", str(page)
    )
    assert stdout == ""
    for phase in ("reading responses", "checking parent links", "writing page"):
        assert phase in shown
    assert "0/4" in shown  # the forest's trees have a total
    # The bar is gone; what stays is the line saying what was written.
    wrote = f"wrote {page} ({page.stat().st_size:,} bytes)"
    # (wrapped at 80 columns: compared without the spaces a wrap may drop)
    assert "".join(screen).replace(" ", "") == wrote.replace(" ", "")
    from convgraph.export.html import read_html

    assert len(read_html(page)) == 4
