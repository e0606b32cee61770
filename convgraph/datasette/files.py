"""What the plugin reads of Datasette's files, each through a `convgraph.open`
handle of its own thread; answers are cached while the file's `signature`
holds (llm only appends)."""

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

#: File and WAL (size, mtime) and SQLite's change counter.
Signature = tuple[tuple[int, int] | None, tuple[int, int] | None, bytes]
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
_llm_files: dict[Path, tuple[Signature, bool]] = {}
_tables: dict[Path, tuple[Signature, pd.DataFrame]] = {}
#: path -> the lock of a read of its table: requests together read it once.
_table_locks: dict[Path, threading.Lock] = {}


def known_llm_file(path: Path) -> bool | None:
    """Whether `path` is llm's as cached for its current signature; None where
    unknown. Cheap: asked for every cell."""
    known = _llm_files.get(path)
    return None if known is None or known[0] != signature(path) else known[1]


def is_llm_file(path: Path) -> bool:
    """Whether convgraph reads `path` as llm's `logs.db` (any generation)."""
    from convgraph.logs import Logs

    state = signature(path)
    try:
        with Logs(path) as logs:
            answer = logs.source.conn is not None
    except ConvgraphError:
        answer = False
    with _lock:
        _llm_files[path] = (state, answer)
    return answer


def statistics(path: Path) -> pd.DataFrame:
    """`Logs.stats` of `path`, cached (read-only: shared). Raises DatabaseError."""
    from convgraph.logs import Logs

    with _lock:
        table_lock = _table_locks.setdefault(path, threading.Lock())
    with table_lock:
        # Signed before the read: a file changed during it is read again.
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
    """Where a non-tree id leads: `tree_id`'s page at `node`."""

    tree_id: str
    node: str | None


def tree_or_move(path: Path, given: str) -> ConversationTree | Moved:
    """The tree `given` names when it is the tree's own id, else where it
    leads. Raises `UnknownNode`, `AmbiguousId` or `DatabaseError`."""
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
    """The HTML explorer's page of one tree, nodes linking to `row_url`."""
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
    """`Logs.search` of `path`. Raises ConvgraphError."""
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
    """Rows of a statistics table as `convgraph stats --json` gives them."""
    from convgraph.cli.tables import plain_records

    return list(plain_records(table))
