"""One way out (issue 39, family 1): every file convgraph writes goes
through `convgraph.writing.written`, and every command ends the same way
when a signal comes or its output cannot be written.

Real parts throughout: named pipes with a reader in another process,
`/dev/full`, `/dev/null` written as root, links to `/proc/self/fd/N`, and
signals sent to a real `convgraph` process. A signal is sent once the
process is where the test wants it (a handshake: its temporary file is
there, or its output has begun), never after so many seconds.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from convgraph.writing import OutputError, written, written_in_place
from tests.databases import legacy_database
from tests.helpers import ROOT, SAFETY_SECONDS, file_digest, run, wait_until

EXAMPLE = ROOT / "examples" / "logs.db"
#: A node and a conversation of the example.
NODE = "01jb5sd06f000000000000000"
CONVERSATION = "01jb0sourdough0000000000000"


def partials(folder: Path) -> list[str]:
    """The temporary files of `written` left in `folder`."""
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".partial"))


# -- the writer ---------------------------------------------------------------


def test_a_regular_file_is_replaced_whole_keeping_its_mode(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    target.chmod(0o640)
    inode = target.stat().st_ino
    with written(target) as file:
        file.write(b"new")
        # Until the end the old file is whole, and the new one is hidden.
        assert target.read_text() == "old"
        assert len(partials(tmp_path)) == 1
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.stat().st_ino != inode  # replaced, not rewritten
    assert partials(tmp_path) == []


def test_a_new_file_gets_the_mode_the_umask_gives(tmp_path):
    previous = os.umask(0o027)
    try:
        with written(tmp_path / "new.txt") as file:
            file.write(b"x")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o640


@pytest.mark.parametrize("way_out", [RuntimeError, KeyboardInterrupt, SystemExit])
def test_any_way_out_of_the_block_leaves_the_old_file_and_no_partial(tmp_path, way_out):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(way_out), written(target) as file:
        file.write(b"half")
        raise way_out()
    assert target.read_text() == "old"
    assert partials(tmp_path) == []


def test_a_link_stays_a_link_and_its_target_is_replaced(tmp_path):
    (tmp_path / "real.txt").write_text("old")
    (tmp_path / "link.txt").symlink_to("real.txt")
    with written(tmp_path / "link.txt") as file:
        file.write(b"new")
    assert (tmp_path / "link.txt").is_symlink()
    assert (tmp_path / "real.txt").read_text() == "new"
    assert partials(tmp_path) == []


def test_errors_are_one_line_naming_the_path(tmp_path):
    with pytest.raises(OutputError) as missing, written(tmp_path / "no" / "x"):
        pass
    assert str(missing.value) == (
        f"cannot write {tmp_path / 'no' / 'x'}: No such file or directory"
    )
    with pytest.raises(OutputError) as folder, written(tmp_path):
        pass
    assert str(folder.value) == f"cannot write {tmp_path}: Is a directory"
    with pytest.raises(OutputError) as full, written("/dev/full") as file:
        file.write(b"x" * 100_000)
    assert str(full.value) == "cannot write /dev/full: No space left on device"


def test_what_is_not_a_regular_file_is_written_in_place(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    read, write = os.pipe()
    try:
        assert written_in_place("-")
        assert written_in_place(fifo)
        assert written_in_place("/dev/null")
        assert written_in_place(f"/proc/self/fd/{write}")
        assert written_in_place("/dev/stdout")
        (tmp_path / "to-stdout").symlink_to("/dev/stdout")
        assert written_in_place(tmp_path / "to-stdout")
        assert not written_in_place(tmp_path / "nothing-yet")
        (tmp_path / "file").write_text("")
        assert not written_in_place(tmp_path / "file")
        # A descriptor's link names a regular file here: still in place.
        with open(tmp_path / "file", "wb") as opened:
            assert written_in_place(f"/proc/self/fd/{opened.fileno()}")
    finally:
        os.close(read)
        os.close(write)


def test_a_link_to_a_descriptor_writes_into_the_descriptor(tmp_path):
    read, write = os.pipe()
    try:
        with written(f"/proc/self/fd/{write}") as file:
            file.write(b"through the pipe\n")
        os.close(write)
        assert os.read(read, 100) == b"through the pipe\n"
    finally:
        os.close(read)
    assert partials(tmp_path) == []


def test_dev_null_stays_a_device_even_for_root():
    before = os.stat("/dev/null")
    with written("/dev/null") as file:
        file.write(b"gone")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode)
    assert (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


# -- the command line: where -o points ----------------------------------------


def convgraph(*words: object, **options) -> subprocess.Popen:
    """A real `convgraph` process (`python -m convgraph`), SIGINT with its
    default action (a test runner may have started with it ignored)."""
    return subprocess.Popen(
        [sys.executable, "-m", "convgraph", *map(str, words)],
        cwd=ROOT,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        **options,
    )


def finished(process: subprocess.Popen) -> tuple[int, str]:
    """The exit status and stderr of `process`, once it ended."""
    _, stderr = process.communicate(timeout=SAFETY_SECONDS)
    text = stderr.decode() if isinstance(stderr, bytes) else stderr or ""
    return process.returncode, text


def test_export_into_a_named_pipe_reaches_its_reader(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    process = convgraph(
        "export", CONVERSATION, "-o", fifo, "--format", "mermaid", "-d", EXAMPLE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    status, stderr = finished(process)
    reader.join(SAFETY_SECONDS)
    assert (status, stderr) == (0, "")
    assert received[0].startswith(b"flowchart TB\n")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert partials(tmp_path) == []


def test_export_onto_dev_null_leaves_the_device():
    before = os.stat("/dev/null")
    run("export", "-o", "/dev/null", "-d", EXAMPLE)
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino


def test_export_to_dev_stdout_writes_the_file_the_shell_opened(tmp_path):
    out = tmp_path / "out.mmd"
    link = tmp_path / "link"
    link.symlink_to("/proc/self/fd/1")
    for target in ("/dev/stdout", link, "-"):
        with open(out, "wb") as stdout:
            process = convgraph(
                "export", CONVERSATION, "--format", "mermaid", "-o", target,
                "-d", EXAMPLE, stdout=stdout, stderr=subprocess.PIPE,
            )  # fmt: skip
            assert finished(process) == (0, "")
        assert out.read_bytes().startswith(b"flowchart TB\n"), target
    assert link.is_symlink()
    assert partials(tmp_path) == []


# -- the command line: stdout that cannot be written -------------------------

#: A command of each kind, as a user types it, with what the example holds.
COMMANDS = [
    ["tree"],
    ["conversations"],
    ["stats", "--json"],
    ["check"],
    ["search", "sourdough"],
    ["transcript", NODE],
    ["export"],
    ["export", "--format", "json"],
    ["path", NODE],
    ["compare", "01jb0sd02b000000000000000"],
    ["diff", NODE, "01jb4sd04d000000000000000"],
    ["pairs"],
]


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_a_full_disk_is_one_line_naming_stdout(words, tmp_path):
    database = tmp_path / "logs.db"
    database.write_bytes(EXAMPLE.read_bytes())
    with open("/dev/full", "wb") as full:
        process = convgraph(
            *words, "-d", database, stdout=full, stderr=subprocess.PIPE,
            env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")},
        )  # fmt: skip
        status, stderr = finished(process)
    lines = [line for line in stderr.splitlines() if "search index" not in line]
    assert (status, lines) == (
        2,
        ["Error: cannot write /dev/full (standard output): No space left on device"],
    )


def test_a_file_on_a_full_disk_is_one_line_naming_it():
    result = run("export", "-o", "/dev/full", "-d", EXAMPLE, expect=2)
    assert result.stderr == "Error: cannot write /dev/full: No space left on device\n"


@pytest.fixture(scope="module")
def many(tmp_path_factory) -> Path:
    """A legacy file of 2,000 conversations of 3 turns: each output below is
    far longer than a pipe holds (64 KiB)."""
    path = tmp_path_factory.mktemp("many") / "many.db"
    conn = legacy_database(path)
    text = "a prompt long enough to fill a pipe soon " * 4
    conn.executemany(
        "insert into conversations (id, name, model) values (?, ?, 'echo')",
        [(f"c{c:04d}", f"conversation number {c} of many") for c in range(2000)],
    )
    conn.executemany(
        "insert into responses (id, model, prompt, options_json, response,"
        " conversation_id, datetime_utc, parent_response_id)"
        " values (?, 'echo', ?, '{}', ?, ?, ?, ?)",
        [
            (
                f"c{c:04d}n{n}",
                f"{n} {text}",
                f"answer {text}",
                f"c{c:04d}",
                f"2025-01-{1 + c // 1440:02d}T{c // 60 % 24:02d}:{c % 60:02d}:{n:02d}"
                "+00:00",
                None if n == 0 else f"c{c:04d}n{n - 1}",
            )
            for c in range(2000)
            for n in range(3)
        ],
    )
    conn.commit()
    conn.close()
    return path


LONG_OUTPUTS = [["tree"], ["conversations"], ["stats", "--json"], ["export"]]


def _blocked_writing(pid: int) -> bool:
    """Whether process `pid` sleeps writing into a full pipe (Linux's wait
    channel of that write)."""
    try:
        return "pipe_write" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


@pytest.mark.parametrize("words", LONG_OUTPUTS, ids=" ".join)
def test_a_closed_pipe_ends_the_command_quietly(words, many):
    """stdout is a pipe whose reader has gone: the first write fails, and
    the command ends without a word."""
    read, write = os.pipe()
    os.close(read)
    try:
        process = convgraph(*words, "-d", many, stdout=write, stderr=subprocess.PIPE)
    finally:
        os.close(write)
    assert finished(process) == (1, "")


def test_head_ends_the_command_quietly(many):
    """As a user types it: the pipe closes while the command writes."""
    command = f"{sys.executable} -m convgraph tree -d {many} | head -1"
    done = subprocess.run(
        ["sh", "-c", command], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert (done.stdout, done.stderr) == ("c0000  conversation number 0 of many\n", "")


@pytest.mark.parametrize("words", LONG_OUTPUTS, ids=" ".join)
@pytest.mark.parametrize(
    ("sent", "status", "said"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
    ids=["SIGINT", "SIGTERM"],
)
def test_a_signal_while_printing_is_one_line(words, sent, status, said, many):
    """The output waits on a pipe nobody reads: the signal comes once the
    kernel says the command sleeps writing it."""
    process = convgraph(
        *words, "-d", many, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        wait_until(
            lambda: process.poll() is not None or _blocked_writing(process.pid),
            "the command waits for its output to be read",
        )
        process.send_signal(sent)
        assert finished(process) == (status, f"{said}\n")
    finally:
        process.kill()


# -- signals while a file is written --------------------------------------------


@pytest.fixture(scope="module")
def long_conversation(tmp_path_factory) -> Path:
    """One conversation of 10,000 turns, a few KB each: its GraphML takes
    long enough to write that the test sees the temporary file."""
    path = tmp_path_factory.mktemp("long") / "long.db"
    conn = legacy_database(path)
    text = "word " * 400
    conn.execute(
        "insert into conversations (id, name, model) values ('c1', 'long', 'echo')"
    )
    conn.executemany(
        "insert into responses (id, model, prompt, options_json, response,"
        " conversation_id, datetime_utc, parent_response_id)"
        " values (?, 'echo', ?, '{}', ?, 'c1', ?, ?)",
        [
            (
                f"n{i:06d}",
                f"prompt {i} {text}",
                f"answer {text}",
                f"2025-01-01T00:{i // 6000:02d}:{i // 100 % 60:02d}.{i:06d}+00:00",
                None if i == 0 else f"n{i - 1:06d}",
            )
            for i in range(10_000)
        ],
    )
    conn.commit()
    conn.close()
    return path


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sent", "status", "said"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
    ids=["SIGINT", "SIGTERM"],
)
def test_a_signal_while_a_file_is_written_leaves_the_old_file(
    sent, status, said, long_conversation, tmp_path
):
    """The export is stopped (SIGSTOP) once its temporary file is seen, and sent
    the signal only if that file is still there, so that it cannot finish
    between the look and the signal; an export that finished first is tried
    again."""
    target = tmp_path / "tree.graphml"
    for _ in range(3):
        target.write_text("the file before\n")
        process = convgraph(
            "export", "c1", "-o", target, "-d", long_conversation,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        wait_until(
            lambda process=process: process.poll() is not None or partials(tmp_path),
            "the export's temporary file is there",
            poll=0.002,
        )
        process.send_signal(signal.SIGSTOP)
        if partials(tmp_path):
            break
        process.send_signal(signal.SIGCONT)
        finished(process)
    else:
        pytest.fail("the export finished before it was stopped, three times")
    process.send_signal(sent)
    process.send_signal(signal.SIGCONT)
    assert finished(process) == (status, f"{said}\n")
    assert target.read_text() == "the file before\n"
    assert partials(tmp_path) == []


def test_ctrl_c_while_waiting_for_a_pipes_reader_leaves_the_pipe(tmp_path):
    """A named pipe nobody opens: the export waits in `open` for a reader;
    Ctrl-C ends it in one line, and the pipe is still a pipe. The signal
    goes once the kernel says the process waits there (its wait channel)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    process = convgraph(
        "export", "-o", fifo, "-d", EXAMPLE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    wait_until(
        lambda: process.poll() is not None or _waits_for_a_reader(process.pid),
        "the export waits for the pipe's reader",
    )
    process.send_signal(signal.SIGINT)
    assert finished(process) == (130, "interrupted\n")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert partials(tmp_path) == []


def _waits_for_a_reader(pid: int) -> bool:
    """Whether process `pid` sleeps in opening a named pipe that has no
    reader yet (Linux's wait channel of that open)."""
    try:
        return Path(f"/proc/{pid}/wchan").read_text() == "wait_for_partner"
    except OSError:
        return False


def test_reading_never_changes_the_file(tmp_path):
    database = tmp_path / "logs.db"
    database.write_bytes(EXAMPLE.read_bytes())
    before = file_digest(database)
    with open("/dev/full", "wb") as full:
        finished(convgraph("tree", "-d", database, stdout=full, stderr=subprocess.PIPE))
    assert file_digest(database) == before
    sqlite3.connect(database).close()


def test_a_chart_goes_through_the_one_writer(tmp_path: Path) -> None:
    """`stats --by --plot FILE` writes the picture whole into a named pipe
    (a reader waiting), in place, and replaces a regular file without a
    partial file left beside it."""
    pytest.importorskip("matplotlib")
    from convgraph.analysis.charts import write_chart
    from convgraph.analysis.usage import usage_table
    from tests.helpers import read_forest

    forest = read_forest(ROOT / "examples" / "logs.db", text=False)
    table = usage_table(forest, ["model"])
    pipe = tmp_path / "chart.svg"
    os.mkfifo(pipe)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_bytes()))
    reader.start()
    write_chart(table, "output_tokens", str(pipe))
    reader.join(timeout=60)
    assert stat.S_ISFIFO(os.stat(pipe).st_mode)
    assert received and received[0].lstrip().startswith(b"<?xml")
    picture = tmp_path / "chart.png"
    picture.write_bytes(b"old")
    write_chart(table, "output_tokens", str(picture))
    assert picture.read_bytes().startswith(b"\x89PNG")
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "chart.png",
        "chart.svg",
    ]
