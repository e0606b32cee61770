"""A folder of agents' sessions read in shares, on both cores.

Reading one session group is independent of reading another but for the
joins (`agent_join._Joiner`: a resumed session holding or naming messages
of an earlier one). `read_in_workers` cuts the groups into `WORKERS`
shares (whole folders: Claude Code keeps a project's sessions in the
project's folder, Gemini a project's chats likewise), each read in the
order the sessions began: the first by the calling process, each other by
a worker process. It hands back their reads joined in that order
(`joined`): each read logs the joins it made and the parent messages it
looked for and did not find, and the caller's process makes the joins
again in the order of the one read, a session continuing another share's
hung under the node holding the message it names. Where the shares touch
otherwise (a message or a session in two, a subagent anchored in another
share) or a read fails (an unreadable file, a line too long), it hands
back None and the caller reads in process, which gives the very table, or
the very error.

A worker hands back its rows as the table's lists: a year's nodes are
tens of thousands of rows, pickled in tens of milliseconds; its messages
are many more, their ids two lists of strings. It is worth it past
`PARALLEL_BYTES` of session files and with two cores. A worker is a fresh
interpreter (`_start`) that imports the reader alone: forking the caller
is unsafe where it holds threads (the progress bar's timer and rich's
refresh thread), and multiprocessing's spawn and fork server import the
caller's main module again in the worker (a script's own code, a
command's whole CLI). Measured (a worker importing the reader, under a
load of 5 on 2 cores): fork 10-24 ms, this 190-210 ms, spawn 0.6-1.5 s and
a fork server 2 s a worker, both for the caller's main module's imports.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pickle
import select
import subprocess
import sys
from collections.abc import Callable
from io import BufferedReader
from pathlib import Path
from types import ModuleType
from typing import Any

from convgraph.errors import DatabaseError
from convgraph.sources.agents.join import SessionsRead, read_sessions
from convgraph.sources.tables import no_garbage_collection

#: Session files of fewer bytes in all are read in one process: the
#: worker's start (an interpreter and the reader's imports, 0.2 s) and the
#: hand-back and join (0.1 s at 50 MB) cost about what sharing the read
#: saves below it (half a read of about 0.6 s on a free core).
PARALLEL_BYTES = 64 * 2**20

#: Processes reading at most, this one and its workers (and never more than
#: the machine's cores).
WORKERS = 2

#: What the progress callback is told as the files are read.
PHASE = "reading sessions"

Groups = list[tuple[str, list[Path]]]
HIGHEST = pickle.HIGHEST_PROTOCOL
Progress = Callable[[str, int, int | None], None]


def worker_count(sizes: list[int]) -> int:
    """The processes to read groups of these byte sizes with (this one and
    its workers): 1 for one group or a small total, else `WORKERS` or the
    cores there are."""
    cores = os.cpu_count() or 1
    # POSIX alone: the workers' pipes are waited on with select().
    if os.name != "posix" or len(sizes) < 2 or sum(sizes) < PARALLEL_BYTES:
        return 1
    return max(1, min(WORKERS, cores, len(sizes)))


def group_sizes(groups: Groups) -> list[int]:
    """Each group's bytes (a file that cannot be measured counts none: the
    read reports it)."""
    sizes = []
    for _, files in groups:
        size = 0
        for file in files:
            with contextlib.suppress(OSError):
                size += file.stat().st_size
        sizes.append(size)
    return sizes


def shares(groups: Groups, sizes: list[int], workers: int) -> list[list[int]]:
    """The groups' indices for each worker, each share in the groups' order:
    whole folders (of a group's first file) to the least loaded worker,
    largest first; where there are fewer folders than workers, the groups
    cut into runs of about equal bytes."""
    folders: dict[Path, list[int]] = {}
    for index, (_, files) in enumerate(groups):
        folders.setdefault(files[0].parent if files else Path(), []).append(index)
    found: list[list[int]] = [[] for _ in range(workers)]
    if len(folders) >= workers:
        loads = [0] * workers
        weighed = sorted(
            folders.values(), key=lambda share: -sum(sizes[i] for i in share)
        )
        for share in weighed:
            least = loads.index(min(loads))
            found[least].extend(share)
            loads[least] += sum(sizes[i] for i in share)
        for share in found:
            share.sort()
    else:
        total, running = sum(sizes) or 1, 0
        for index, size in enumerate(sizes):
            found[min(workers - 1, running * workers // total)].append(index)
            running += size
    return [share for share in found if share]


def joined(
    count: int, parts: list[list[int]], reads: list[SessionsRead]
) -> SessionsRead | None:
    """The reads of the shares `parts` of `count` groups as one read in the
    groups' order, or None where they cannot be: a message or a session in
    two shares, or a subagent anchored in another share's message.

    A session continuing one of another share (a parent message its worker
    did not find) is joined here as the one read would have joined it: its
    row hangs under the node holding that message, where that message's
    group comes first, and its tree joins that tree, the joins replayed in
    the groups' order."""
    messages: set[str] = set()
    for read in reads:
        if not messages.isdisjoint(read.messages):
            return None
        messages.update(read.messages)
    if any(not messages.isdisjoint(read.outside) for read in reads):
        return None
    del messages
    sessions: set[str] = set()
    for read in reads:
        keys = {key for group in read.groups for key, *_ in group.sessions}
        if not sessions.isdisjoint(keys):
            return None
        sessions |= keys
    del sessions
    where: list[tuple[int, int, int]] = [(0, 0, 0)] * count
    for number, (share, read) in enumerate(zip(parts, reads, strict=True)):
        start = 0
        for position, index in enumerate(share):
            where[index] = (number, position, start)
            start += read.groups[position].rows
    first = reads[0].table or {}
    table: dict[str, list[Any]] = {name: [] for name in first}
    found = SessionsRead([], table, [], {})
    starts: list[int] = []
    for number, position, start in where:
        read = reads[number]
        group = read.groups[position]
        found.groups.append(group)
        starts.append(len(table["id"]) if "id" in table else 0)
        if group.rows:
            columns = read.table or {}
            end = start + group.rows
            for name, column in table.items():
                column.extend(columns[name][start:end])
    found.tree_of = _replay(found, starts, _holders(reads))
    return found


def _holders(reads: list[SessionsRead]) -> dict[str, tuple[str, str]]:
    """The node and session holding each message a read looked for and
    did not find, where another read holds it."""
    wanted = {
        event[1]
        for read in reads
        for group in read.groups
        for events in group.events
        for event in events
        if not isinstance(event, str)
    }
    holders: dict[str, tuple[str, str]] = {}
    if not wanted:
        return holders
    for read in reads:
        nodes = {
            node
            for message, node in zip(read.messages, read.nodes, strict=True)
            if message in wanted
        }
        if not nodes:
            continue
        columns = read.table or {}
        # A node's session: the first row holding it (the joiner's group_of).
        session_of: dict[str, str] = {}
        for node, session in zip(columns["id"], columns["tree_id"], strict=True):
            if node in nodes:
                session_of.setdefault(node, session)
        for message, node in zip(read.messages, read.nodes, strict=True):
            if message in wanted and node in session_of:
                holders[message] = (node, session_of[node])
    return holders


def _replay(
    read: SessionsRead, starts: list[int], holders: dict[str, tuple[str, str]]
) -> dict[str, str]:
    """Each session's tree, the joins of every share made again in the
    groups' order with those across shares (`holders`) among them, as the
    one read's joiner makes them; rows whose parent message another share
    holds hang under its node."""
    parent: dict[str, str] = {}
    order: dict[str, int] = {}
    table = read.table or {}

    def find(key: str) -> str:
        while parent[key] != key:
            key = parent[key]
        return key

    def join(key: str, earlier: str) -> None:
        mine, theirs = find(key), find(earlier)
        if mine != theirs:
            parent[mine] = theirs

    for index, (group, start) in enumerate(zip(read.groups, starts, strict=True)):
        for (key, *_), events in zip(group.sessions, group.events, strict=True):
            parent.setdefault(key, key)
            order.setdefault(key, index)
            for event in events:
                if isinstance(event, str):
                    join(key, event)
                    continue
                row, message = event
                holder = holders.get(message)
                if holder is not None and order.get(holder[1], index) < index:
                    table["parent_id"][start + row] = holder[0]
                    join(key, holder[1])
    return {key: find(key) for key in parent}


def read_in_workers(
    module: ModuleType,
    groups: Groups,
    text: bool,
    names: list[str],
    progress: Progress | None = None,
) -> SessionsRead | None:
    """The groups read in shares, the first by this process and each other
    by a worker process, into the table's columns `names`, as
    `read_sessions` reads them all in process; None where that is not worth
    it (`worker_count`), where the shares touch, or where a read fails: the
    caller reads in process then. `progress` is told the files read
    (`PHASE`) as each group is done."""
    sizes = group_sizes(groups)
    workers = worker_count(sizes)
    if workers < 2:
        return None
    parts = shares(groups, sizes, workers)
    if len(parts) < 2:
        return None
    started: list[subprocess.Popen[bytes]] = []
    try:
        # Every worker started before any is handed its share: their
        # start-ups overlap (a worker reads its share once it has started).
        for _ in parts[1:]:
            started.append(_start())
        for worker, share in zip(started, parts[1:], strict=True):
            assert worker.stdin is not None
            with worker.stdin:
                job = (module.__name__, [groups[i] for i in share], text, names)
                pickle.dump(job, worker.stdin, HIGHEST)
        gather = _Gather(started, sum(len(files) for _, files in groups), progress)
        own: dict[str, list[Any]] = {name: [] for name in names}
        mine = read_sessions(
            module, [groups[i] for i in parts[0]], text, own, True, gather.done
        )
        while gather.waiting:
            gather.take(block=True)
        return joined(len(groups), parts, [mine, *gather.reads])
    except (OSError, DatabaseError, _Failed):
        # The caller's read in process gives the same table, or the same
        # error (a share's error may not be the first in the sessions' order).
        return None
    finally:
        # A worker still running (the caller interrupted, or another
        # failed) is ended here, none left behind.
        for worker in started:
            if worker.poll() is None:
                worker.kill()
            worker.wait()
            if worker.stdout is not None:
                worker.stdout.close()


class _Failed(Exception):
    """A worker failed, or ended without its share's read."""


class _Gather:
    """The workers' messages, taken as they come: files read (told to the
    progress callback with this process's own), then each share's read."""

    def __init__(
        self,
        workers: list[subprocess.Popen[bytes]],
        total: int,
        progress: Progress | None,
    ) -> None:
        self.waiting: dict[BufferedReader, int] = {}
        for number, worker in enumerate(workers):
            assert isinstance(worker.stdout, BufferedReader)
            self.waiting[worker.stdout] = number
        self.reads: list[SessionsRead] = []
        self._found: dict[int, SessionsRead] = {}
        self.total, self.progress, self.files = total, progress, 0
        self._tell()

    def _tell(self) -> None:
        if self.progress is not None:
            self.progress(PHASE, self.files, self.total)

    def done(self, files: int) -> None:
        """This process read a group of `files` files: told, with what the
        workers have sent meanwhile."""
        self.files += files
        self._tell()
        self.take(block=False)

    def take(self, block: bool) -> None:
        """The messages the workers have sent (waiting for one, `block`)."""
        while self.waiting:
            ready = select.select(list(self.waiting), [], [], None if block else 0)[0]
            if not ready:
                return
            for stream in ready:
                message = _receive(stream)
                if isinstance(message, int):
                    self.files += message
                    self._tell()
                elif isinstance(message, SessionsRead):
                    self._found[self.waiting.pop(stream)] = message
                    self.reads = [self._found[n] for n in sorted(self._found)]
                else:
                    raise _Failed
            if block:
                return


def _start() -> subprocess.Popen[bytes]:
    """A worker: a fresh interpreter importing the reader alone (not the
    caller's main module, as multiprocessing's spawn and fork server do),
    in a session of its own so that Ctrl-C reaches only the caller, which
    ends it; its share is written to its standard input."""
    # Where the caller found convgraph, last on the worker's path: the
    # worker finds it where the caller's environment does, else there.
    home = str(Path(__file__).resolve().parents[3])
    code = f"import sys; sys.path.append({home!r}); from {__name__} import work; work()"
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )


def _send(stream: Any, message: object) -> None:
    """One message to the caller: its pickle's length, then the pickle."""
    data = pickle.dumps(message, HIGHEST)
    stream.write(len(data).to_bytes(8, "little"))
    stream.write(data)
    stream.flush()


def _receive(stream: BufferedReader) -> object:
    """One message from a worker (None where it ended without one)."""
    head = stream.read(8)
    if len(head) < 8:
        return None
    size = int.from_bytes(head, "little")
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)


def work() -> None:
    """A worker's main: its share read from standard input, each group's
    file count sent as it is done, then the `SessionsRead` (False where the
    read failed), on what was standard output; anything printed meanwhile
    goes to standard error."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    try:
        module_name, groups, text, names = pickle.load(sys.stdin.buffer)
        module = importlib.import_module(module_name)
        table: dict[str, list[Any]] = {name: [] for name in names}
        with no_garbage_collection():
            read = read_sessions(
                module, groups, text, table, True, lambda files: _send(out, files)
            )
        _send(out, read)
    except Exception:
        # The caller reads in process, which raises the same error (where
        # the caller is gone, nobody is told).
        with contextlib.suppress(OSError):
            _send(out, False)
    finally:
        with contextlib.suppress(OSError):
            out.close()
