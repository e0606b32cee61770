"""What the plugin reads of the files Datasette serves: which of them
convgraph reads as llm's database, their statistics tables, one tree.

Every read here is blocking and goes through convgraph's own read-only
connection (`convgraph.open`), never through Datasette's connections (so
nothing the plugin does can write to the file); the pages call these
functions off Datasette's event loop (`asyncio.to_thread`), and each opens
and closes its own handle in the thread it runs in, as `sqlite3` wants.

Two answers are kept between requests, each for as long as the file is
unchanged (its size, modification time and SQLite's change counter, and
its write-ahead log's size and time):
whether a file is llm's (asked for every cell `render_cell` draws), and
its statistics table (the forest page's rows: reading them is a read of the
whole file without texts, once per change of the file instead of once per
page, sort or search). llm only appends, so a new response changes the
signature and the next request reads the table again.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convgraph.errors import ConvgraphError

if TYPE_CHECKING:
    import pandas as pd

    from convgraph.model.tree import ConversationTree
    from convgraph.search import Hit

#: A file's state as the caches compare it: (size, modification time in
#: ns) of the file and of its write-ahead log (None where it has none), and
#: the file's change counter (SQLite's header: one more at every commit
#: outside WAL mode, however quick).
Signature = tuple[tuple[int, int] | None, tuple[int, int] | None, bytes]
#: Where SQLite's header keeps the change counter.
_COUNTER = slice(24, 28)


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_size, found.st_mtime_ns


def _counter(path: Path) -> bytes:
    try:
        with open(path, "rb") as file:
            return file.read(_COUNTER.stop)[_COUNTER]
    except OSError:
        return b""


def signature(path: Path) -> Signature:
    """The state of `path` the caches compare: a write by llm changes it."""
    return _stat(path), _stat(path.with_name(path.name + "-wal")), _counter(path)


_lock = threading.Lock()
#: path -> (signature, whether convgraph reads it as llm's database).
_llm_files: dict[Path, tuple[Signature, bool]] = {}
#: path -> (signature, its statistics table); one table a file.
_tables: dict[Path, tuple[Signature, pd.DataFrame]] = {}
#: path -> the lock a read of its table holds, so that requests arriving
#: together read the table once.
_table_locks: dict[Path, threading.Lock] = {}


def known_llm_file(path: Path) -> bool | None:
    """Whether `path` is llm's database, from what an earlier `is_llm_file`
    found while the file was as it is now; None where nothing is known.
    Cheap (two `stat` calls): for the hooks Datasette calls once a cell."""
    known = _llm_files.get(path)
    if known is None or known[0] != signature(path):
        return None
    return known[1]


def is_llm_file(path: Path) -> bool:
    """Whether convgraph reads `path` as llm's `logs.db` (any generation):
    an SQLite file holding llm's `responses` table or its message store.
    Blocking: opens the file read-only."""
    from convgraph.sources import LogDatabase, open_logs

    state = signature(path)
    try:
        source = open_logs(path)
    except ConvgraphError:
        answer = False
    else:
        with source:
            answer = isinstance(source, LogDatabase)
    with _lock:
        _llm_files[path] = (state, answer)
    return answer


def statistics(path: Path) -> pd.DataFrame:
    """The statistics of every tree of `path`, one row each
    (`convgraph.Logs.stats`, read without texts), from the last read while
    the file is unchanged. Treat the table as read-only: it is shared.

    Raises
    ------
    DatabaseError
        The file cannot be read.
    """
    from convgraph.logs import Logs

    with _lock:
        table_lock = _table_locks.setdefault(path, threading.Lock())
    with table_lock:
        # The signature before the read: a file changed during it is read
        # again by the next request.
        state = signature(path)
        cached = _tables.get(path)
        if cached is not None and cached[0] == state:
            return cached[1]
        with Logs(path) as logs:
            table = logs.stats()
        with _lock:
            _tables[path] = (state, table)
        return table


@dataclass(frozen=True)
class Moved:
    """The tree page of `tree_id` is where an id asked for leads: the id
    was a node (`node`, the node that holds it: a call inside a tool chain
    leads to its run's node), a fork's thread, or a prefix."""

    tree_id: str
    node: str | None


def tree_or_move(path: Path, given: str) -> ConversationTree | Moved:
    """The tree `given` names when it is the tree's own id, read alone;
    else where the tree of the node or conversation `given` names is.

    Raises
    ------
    UnknownNode
        `given` names no node and no conversation.
    AmbiguousId
        `given` begins several ids.
    DatabaseError
        The file cannot be read.
    """
    from convgraph.logs import Logs
    from convgraph.sources.source import NODE

    with Logs(path) as logs:
        source = logs.source
        kind, whole = source.resolve(given)
        if kind == NODE:
            tree_id = source.tree_id_of_node(whole)
        else:
            tree_id = source.tree_id_of_conversation(whole)
        if tree_id != given:
            return Moved(tree_id, source.node_of(whole) if kind == NODE else None)
        return logs.tree(tree_id)


def tree_page(
    tree: ConversationTree,
    row_url: Callable[[str, str], str],
    home: str,
    home_label: str,
) -> str:
    """The HTML explorer's page (`convgraph.export.html.generate_html`) of
    one tree, each node linking to its row (`row_url(table, id)`, the table
    its `source` names) and the header to `home`."""
    from convgraph.export.html import PageLinks, generate_html

    rows = {
        node: row_url(attributes["source"], node)
        for node, attributes in tree.nodes(data=True)
        if attributes.get("source") in ("responses", "turns")
    }
    links = PageLinks(nodes=rows, node_label="Row", home=home, home_label=home_label)
    title = tree.graph.get("name") or tree.graph.get("tree_id") or "Conversation"
    return "\n".join(generate_html(tree, title=str(title), links=links)) + "\n"


def search(path: Path, query: str, limit: int) -> list[Hit]:
    """The best `limit` nodes of every branch that match `query`
    (`convgraph.Logs.search`; its index lies in the user's cache).

    Raises
    ------
    ConvgraphError
        The query holds no word; the file or the index cannot be read.
    """
    from convgraph.logs import Logs

    with Logs(path) as logs:
        return logs.search(query, limit=limit)


def forget(path: Path | None = None) -> None:
    """Drop what is kept about `path` (every file when None)."""
    with _lock:
        for kept in (_llm_files, _tables):
            if path is None:
                kept.clear()
            else:
                kept.pop(path, None)


def plain_rows(table: pd.DataFrame) -> list[dict[str, Any]]:
    """A few rows of a statistics table as plain values (times in ISO
    8601, missing values None, models as lists), as `convgraph stats
    --json` gives them (`convgraph.cli.tables.plain_records`)."""
    from convgraph.cli.tables import plain_records

    return list(plain_records(table))
