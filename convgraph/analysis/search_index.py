"""The full-text index that `convgraph search` ranks with: every node's
prompt, response, system prompt and parts in an SQLite FTS5 table of
convgraph's own, with the node's depth and branch mark as the model gives
them (`Forest`: `model.marks`, pointer jumping), kept in a file beside the
one it indexes and brought up to date before each search.

Why an index of our own: llm 0.36's `responses_fts` and `turn_search_fts`
index only the prompt and the answer of each call (no tool calls or results,
no reasoning, no system prompt), one row a call rather than a node (a tool
chain is one node: `sources.runs`), with the default tokenizer, and a file
upgraded from an older llm holds the two generations in two tables. So the
index is built from the forest (`Forest.read` with its texts), one row a
node, never inside llm's file: it lies beside it
(`logs.db.convgraph-search.db`, as an export's notes lie beside the export),
or, where that directory cannot be written, in the user's cache directory
(`$XDG_CACHE_HOME/convgraph/search/`, else `~/.cache/convgraph/search/`).
It lives in the analysis layer because it holds the model's marks: reading
them per hit instead (a message-store tree read by name costs a tenth of a
second) would make a query of twenty hits seconds long.

Staying current: for llm's file the index keeps each node table's largest
rowid and row count (`responses`, `turns`) as they were when it last read.
llm only appends, so rows above the old bounds are what it logged since:
their trees alone are read again (`Forest.read` of those trees, queries
about them only) and replace their rows in the index, depths and marks
included (logging into a tree is what moves its active path). A count
below the old bound that moved means rows were deleted or replaced
(`convgraph delete`):
then the whole index is built again, as the snapshot reads again
(`snapshot.Snapshot.changed`). A chat export is indexed on first search and
again whenever its size or modification time changes. Each check is a few
short statements on llm's file; the whole-file read follows the
chunked-read rule (`snapshot`), so llm's lock is never held long.

Scripts without spaces (Chinese, Japanese, Thai and their neighbours) have
no word boundaries the `unicode61` tokenizer could find, so every character
of them is made a token of its own by a zero-width space put after it
(`spaced`), in the index and in the query alike: a word of them is then a
phrase of its characters. The tokenizer is `unicode61` with
`remove_diacritics 2`, so "cafe" finds "café" and Cyrillic folds case.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import re
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convgraph.contract import PARTS
from convgraph.errors import DatabaseError, UnknownConversation, UnknownNode
from convgraph.parts import (
    ATTACHMENT,
    CODE,
    CODE_OUTPUT,
    FRAGMENT,
    REASONING,
    TOOL_CALL,
    TOOL_RESULT,
)
from convgraph.sources.source import Source

if TYPE_CHECKING:
    from convgraph.model.forest import Forest

#: The index's file name beside the file it indexes: `logs.db` + this.
INDEX_SUFFIX = ".convgraph-search.db"
#: Bumped when the index's layout or its text rules change: an index of
#: another version is built again.
INDEX_VERSION = "4"
#: The indexed texts of a node, in the FTS table's column order.
FIELDS = ("prompt", "response", "system", PARTS)
#: The tables of llm's file whose rows are nodes (or calls folded into one).
NODE_TABLES = ("responses", "turns")
#: Put after each character of a script without spaces: a separator to
#: `unicode61` (a format character), invisible where it shows.
ZERO_WIDTH_SPACE = "\u200b"

#: Characters of scripts written without spaces between words: CJK
#: ideographs and their extensions, kana, Thai, Lao, Khmer, Myanmar.
_UNSPACED = re.compile(
    "([\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f])"
)


def spaced(text: str) -> str:
    """`text` with a zero-width space after every character of a script
    written without spaces, so that each is a token of its own.

    Examples
    --------
    >>> spaced("東京 in May") == "東\\u200b京\\u200b in May"
    True
    """
    if text.isascii():
        return text  # most text: no scan for the characters
    return _UNSPACED.sub("\\1" + ZERO_WIDTH_SPACE, text)


def parts_text(parts: Iterable[dict[str, Any]] | None) -> str | None:
    """The searchable text of a node's parts beyond its prompt and answer:
    reasoning, each tool call's name and arguments, each result's output
    and error, code and what it printed, attachments' and fragments' names,
    one a line; None where there is none.

    Examples
    --------
    >>> from convgraph import parts
    >>> print(parts_text([parts.tool_call("lookup", {"city": "Oslo"})]))
    lookup {"city": "Oslo"}
    """
    lines: list[str] = []
    for part in parts or ():
        kind = part.get("type")
        if kind in (REASONING, CODE, CODE_OUTPUT):
            values = [part.get("text")]
        elif kind == TOOL_CALL:
            arguments = part.get("arguments")
            if arguments is not None and not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False, default=str)
            values = [part.get("name"), arguments]
        elif kind == TOOL_RESULT:
            values = [part.get("name"), part.get("output"), part.get("error")]
        elif kind in (ATTACHMENT, FRAGMENT):
            values = [part.get("name"), part.get("url")]
        else:
            continue  # text parts are the prompt and the response already
        words = " ".join(str(value) for value in values if value)
        if words:
            lines.append(words)
    return "\n".join(lines) or None


def index_path(source_path: Path) -> Path:
    """Where the index of the file at `source_path` lies: beside it where its
    directory can be written, else in the user's cache directory, named by a
    hash of the file's absolute path."""
    source_path = Path(source_path).absolute()
    beside = source_path.with_name(source_path.name + INDEX_SUFFIX)
    if beside.exists() or os.access(source_path.parent, os.W_OK):
        return beside
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    digest = hashlib.sha256(str(source_path).encode()).hexdigest()[:16]
    return cache / "convgraph" / "search" / f"{digest}-{source_path.name}{INDEX_SUFFIX}"


_SCHEMA = f"""
create table meta (key text primary key, value text);
create table nodes (
    rowid integer primary key, id text, tree_id text, model text,
    datetime_utc text, source text, depth integer, active integer,
    sidechain integer, moment integer
);
create table models (name text primary key);
create virtual table texts using fts5 (
    {", ".join(FIELDS)},
    tokenize = 'unicode61 remove_diacritics 2'
);
"""
#: The indexes of `nodes`, made after its rows are in: a b-tree built once
#: from the sorted rows costs less than one kept up row by row.
_NODE_INDEXES = """
create unique index nodes_id on nodes (id);
create index nodes_tree on nodes (tree_id);
"""
#: The columns of the index's `nodes` table that come from the nodes table.
_NODE_COLUMNS = ("id", "tree_id", "model", "datetime_utc", "source")


class SearchIndex:
    """The index of one file of conversations, brought up to date when
    opened (`open_index`); `conn` is its SQLite connection. Its `texts`
    FTS5 table has a row per node (columns `FIELDS`), its rowid the one of
    the node's row in `nodes` (`id`, `tree_id`, `model`, `datetime_utc`,
    `source`, and the model's `depth` and `active`, and `sidechain`: 1 for
    a subagent's node, `convgraph.analysis.abandoned.subagent_rows`; and
    `moment`, its time in nanoseconds, `model.filters.moments`). `models`
    holds every model name `nodes` has held: what a filter's globs are
    matched against (`model.filters.sql_condition`), so that a filtered
    query reads no whole table."""

    def __init__(self, conn: sqlite3.Connection, path: Path):
        self.conn = conn
        self.path = path

    def close(self) -> None:
        """Let go of the index file."""
        self.conn.close()

    def __enter__(self) -> SearchIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_index(logs: Source, path: Path | None = None) -> SearchIndex:
    """The index of `logs`, built on first use and brought up to date with
    the file (see the module's docstring).

    Parameters
    ----------
    logs
        The open file (llm's database or a chat export).
    path
        Where the index lies; `index_path` of the file's path by default.

    Raises
    ------
    DatabaseError
        Neither beside the file nor in the cache directory can the index
        be written.
    """
    path = path or index_path(logs.path)
    # The file's size and time first: a commit after them changes them.
    seen = json.dumps(_file_stamp(logs))
    conn = _connect(path)
    try:
        meta = _meta(conn)
        current = meta.get("version") == INDEX_VERSION and "stamp" in meta
        if current and meta.get("file") == seen:
            return SearchIndex(conn, path)  # untouched since: no statement on it
        stamp = _stamp(logs)
        old = json.loads(meta["stamp"]) if current else None
        if old == stamp:
            with conn:  # written, but not in the tables indexed (a note)
                _write_stamp(conn, stamp, seen)
        else:
            trees = None if old is None else _changed_trees(logs, old, stamp)
            if trees is None or not _refreshed(conn, logs, trees, stamp, seen):
                conn.close()
                _build(logs, path, stamp, seen)
                conn = _connect(path)
    except BaseException:
        conn.close()
        raise
    return SearchIndex(conn, path)


def _file_stamp(logs: Source) -> list[list[Any]]:
    """The size and modification time of llm's file and its write-ahead log
    (where it has one), or of the export's files: any commit changes them,
    so while they are the same the index is current without a statement on
    the file."""
    path = Path(logs.path)
    if path.is_dir():
        files = sorted(path.rglob("*"))
    else:
        files = [path, path.with_name(path.name + "-wal")]
    found = []
    for file in files:
        with contextlib.suppress(OSError):
            status = file.stat()
            if not file.is_dir():
                found.append([str(file), status.st_size, status.st_mtime_ns])
    if logs.conn is not None and found:
        # SQLite's file change counter (bytes 24-27 of the header), which a
        # commit in rollback-journal mode moves even where the file system
        # keeps times to the second.
        with contextlib.suppress(OSError), path.open("rb") as header:
            found[0].append(header.read(28)[24:].hex())
    return found


def _connect(path: Path) -> sqlite3.Connection:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=30)
    except (OSError, sqlite3.OperationalError) as error:
        raise DatabaseError(f"cannot write the search index {path}: {error}") from None
    return conn


def _meta(conn: sqlite3.Connection) -> dict[str, str]:
    try:
        return dict(conn.execute("select key, value from meta").fetchall())
    except sqlite3.DatabaseError:
        return {}  # a new file, or not an index of this version


def _stamp(logs: Source) -> dict[str, Any]:
    """What tells whether the file changed since the index read it: each
    node table's largest rowid and row count (llm's file), or the size and
    modification time of the export's files."""
    if logs.conn is None:
        return {"files": _file_stamp(logs)}
    tables = {
        row[0]
        for row in logs.conn.execute(
            "select name from sqlite_master where type = 'table'"
        )
    }
    stamp: dict[str, Any] = {}
    for table in NODE_TABLES:
        if table in tables:
            largest, count = logs.conn.execute(
                f'select max(rowid), count(*) from "{table}"'
            ).fetchone()
            stamp[table] = [largest, count]
    return stamp


def _changed_trees(
    logs: Source, old: dict[str, Any], new: dict[str, Any]
) -> set[str] | None:
    """The trees holding rows logged since `old` was taken, or None where
    rows were deleted or replaced (or the file is an export that changed):
    then the index is built again."""
    if logs.conn is None or set(old) != set(new):
        return None
    trees: set[str] = set()
    for table, (largest, count) in old.items():
        bound = -(2**63) if largest is None else largest
        # The count now is the new stamp's; those appended a range of rowids.
        total = new[table][1]
        (appended,) = logs.conn.execute(
            f'select count(*) from "{table}" where rowid > ?', [bound]
        ).fetchone()
        if total - appended != count:
            return None
        if not appended:
            continue
        if table == "responses":
            query = (
                "select distinct cast(coalesce(conversation_id, id) as text),"
                " cast(id as text) from responses where rowid > ?"
            )
        else:
            query = "select distinct thread_id, id from turns where rowid > ?"
        seen: set[str] = set()
        for conversation_id, node_id in logs.conn.execute(query, [bound]).fetchall():
            if conversation_id in seen:
                continue
            seen.add(conversation_id)
            trees.add(_tree_of(logs, conversation_id, node_id))
    return trees


def _tree_of(logs: Source, conversation_id: str, node_id: str) -> str:
    """The tree a newly logged row belongs to."""
    with contextlib.suppress(UnknownConversation):
        return logs.tree_id_of_conversation(conversation_id)
    with contextlib.suppress(UnknownNode):
        return logs.tree_id_of_node(node_id)
    return conversation_id


def _write_stamp(conn: sqlite3.Connection, stamp: dict[str, Any], seen: str) -> None:
    conn.executemany(
        "insert or replace into meta (key, value) values (?, ?)",
        [("version", INDEX_VERSION), ("stamp", json.dumps(stamp)), ("file", seen)],
    )


def _insert(conn: sqlite3.Connection, forest: Forest, first_rowid: int) -> None:
    """Every node of `forest` into the index, rowids from `first_rowid`:
    its row in `nodes` (with the model's depth and branch mark) and its
    texts."""
    nodes = forest.nodes
    frame = nodes[list(_NODE_COLUMNS)].astype(object)
    frame = frame.where(frame.notna(), None)
    depths = forest.depths.tolist()
    active = nodes["active"].tolist()
    # Here, not at the top: the index's names are read without pandas.
    from convgraph.analysis.abandoned import subagent_rows
    from convgraph.model.filters import moments

    subagent = subagent_rows(nodes).tolist()
    conn.executemany(
        "insert into nodes (rowid, id, tree_id, model, datetime_utc, source,"
        " depth, active, sidechain, moment) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            (rowid, *row, int(depth), bool(on_path), side, moment)
            for rowid, row, depth, on_path, side, moment in zip(
                itertools.count(first_rowid),
                frame.itertuples(index=False),
                depths,
                active,
                subagent,
                moments(nodes["datetime_utc"]),
                strict=False,
            )
        ),
    )
    # A name no node holds any more (after an update) is harmless: no row
    # matches it.
    conn.executemany(
        "insert or ignore into models (name) values (?)",
        ((name,) for name in frame["model"].dropna().unique().tolist()),
    )
    conn.executemany(
        f"insert into texts (rowid, {', '.join(FIELDS)}) values (?, ?, ?, ?, ?)",
        (
            (rowid, *texts)
            for rowid, texts in zip(
                itertools.count(first_rowid), _frame_texts(nodes), strict=False
            )
        ),
    )


def _frame_texts(nodes: Any) -> Iterator[tuple[str | None, ...]]:
    """The four texts of each row of a nodes table, ready for the index."""
    from pandas import NA

    def ready(value: Any) -> str | None:
        # None, or pandas' missing value (NaN, or NA in Arrow's strings).
        if value is None or value is NA or value != value:
            return None
        return spaced(str(value))

    for prompt, response, system, node_parts in zip(
        nodes["prompt"].tolist(),
        nodes["response"].tolist(),
        nodes["system"].tolist(),
        nodes[PARTS].tolist(),
        strict=True,
    ):
        extra = parts_text(node_parts) if isinstance(node_parts, list) else None
        yield ready(prompt), ready(response), ready(system), ready(extra)


def _build(logs: Source, path: Path, stamp: dict[str, Any], seen: str) -> None:
    """The whole index, written to a file of its own and moved into place,
    so that a search never sees half an index."""
    from convgraph.model.forest import Forest

    forest = Forest.read(logs, text=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    partial.unlink(missing_ok=True)
    conn = _connect(partial)
    try:
        conn.execute("pragma journal_mode = off")
        conn.execute("pragma synchronous = off")
        conn.executescript(_SCHEMA)
        with conn:
            _insert(conn, forest, 1)
        conn.executescript(_NODE_INDEXES)
        with conn:
            _write_stamp(conn, stamp, seen)
    finally:
        conn.close()
    os.replace(partial, path)


def _refreshed(
    conn: sqlite3.Connection,
    logs: Source,
    trees: set[str],
    stamp: dict[str, Any],
    seen: str,
) -> bool:
    """The rows of `trees` read again (texts, depths, branch marks) and put
    in place of their old ones; False where a tree cannot be read by name
    (then the whole index is built again)."""
    from convgraph.model.forest import Forest

    try:
        forest = Forest.read(logs, text=True, conversation_ids=sorted(trees))
    except UnknownConversation:
        return False
    ids = json.dumps(forest.nodes["id"].tolist())
    named = json.dumps(sorted(trees))
    with conn:
        # The trees' old rows, and any row of the same ids (a tree named
        # anew), leave first.
        old = (
            "select rowid from nodes where tree_id in (select value from json_each(?))"
            " or id in (select value from json_each(?))"
        )
        conn.execute(f"delete from texts where rowid in ({old})", [named, ids])
        conn.execute(f"delete from nodes where rowid in ({old})", [named, ids])
        (last,) = conn.execute("select coalesce(max(rowid), 0) from nodes").fetchone()
        _insert(conn, forest, last + 1)
        _write_stamp(conn, stamp, seen)
    return True
