"""Search every node of every tree: hits ranked by BM25, each with a snippet
around the words found, where it lies (tree, node, depth) and whether it is
on the active path, on an abandoned branch, or in a coding agent's subagent
(a sidechain: neither).

The ranking and the snippets are SQLite FTS5's (`bm25()`, `snippet()`) over
the index of `convgraph.analysis.search_index`, which is brought up to date
before each search; the depths and branch marks are the model's
(`model.marks`, pointer jumping), kept in the index beside each node's
texts. A query reads the index alone: its cost grows with its matches, not
with the file.

A query is text: each word, split at white space, is quoted as an FTS5
string, so `"`, `*`, `NEAR(`, `AND`, `-`, `:` and `^` are words to find (or
nothing, where they hold no letter or digit), never operators; every word
must occur in the node, in any of its texts. `fts=True` hands the query to
FTS5 as an expression (`AND`, `OR`, `NOT`, `NEAR`, prefixes `word*`, columns
`response : word`).
"""

from __future__ import annotations

import os
import re
import sqlite3
from dataclasses import asdict, dataclass
from typing import Any

from convgraph.analysis.search_index import (
    FIELDS,
    ZERO_WIDTH_SPACE,
    open_index,
    spaced,
)
from convgraph.errors import ConvgraphError
from convgraph.model.filters import TreeFilter
from convgraph.sources import Source, opened

#: How many hits a search gives unless told.
DEFAULT_LIMIT = 20
#: The tokens of text around the hit that a snippet shows (FTS5 allows 64).
SNIPPET_TOKENS = 16
#: Where a snippet is cut: an ellipsis.
ELLIPSIS = "…"
#: The characters FTS5 puts around each word found, taken out again
#: (`Hit.marks` says where they were): private-use code points.
_OPEN, _CLOSE = "\ue000", "\ue001"
#: A word holds a letter or a digit; anything else is no word to search for.
_WORD = re.compile(r"\w")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Hit:
    """One node that matched, as `search` gives it.

    `snippet` is one line of the node's best-matching text around the
    words found (white space runs made one space, `ELLIPSIS` where cut);
    `marks` the words found in it, as ``[start, end)`` offsets in
    characters (code points) of `snippet`; `fields` the node's texts that
    match (`prompt`, `response`, `system`, `parts`: tool calls and their
    results, reasoning, code); `score` the BM25 relevance (higher is
    better); `rank` the place, from 1; `depth` (0 for a root) and `active`
    (on the path to the branch last used; False: an abandoned branch, or a
    subagent's node) as the model gives them; `sidechain` True for a
    subagent's node (`convgraph.analysis.abandoned`), off the active path
    but no branch the user left.
    """

    rank: int
    score: float
    tree_id: str
    id: str
    depth: int | None
    active: bool | None
    sidechain: bool
    model: str | None
    datetime_utc: str | None
    source: str | None
    fields: list[str]
    snippet: str
    marks: list[list[int]]

    def as_record(self) -> dict[str, Any]:
        """The hit as a dict of plain JSON values."""
        return asdict(self)


def fts_query(query: str) -> str:
    """The FTS5 expression that finds `query` as text: each word quoted, all
    of them required.

    Raises
    ------
    ConvgraphError
        The query holds no letter or digit.

    Examples
    --------
    >>> print(fts_query("say hi* NEAR(x -"))
    "say" "hi*" "NEAR(x"
    """
    words = [word for word in query.split() if _WORD.search(word)]
    if not words:
        raise ConvgraphError(
            f"nothing to search for in {query!r}: give a word with a letter or digit"
        )
    return " ".join('"' + spaced(word).replace('"', '""') + '"' for word in words)


def marked(snippet: str) -> tuple[str, list[list[int]]]:
    """A snippet as FTS5 gave it (words between `_OPEN` and `_CLOSE`) as
    plain one-line text and the offsets of the words found.

    Examples
    --------
    >>> marked("a \\ue000big\\ue001\\n cat")
    ('a big cat', [[2, 5]])
    >>> marked("\\ue000東\\ue001\\ue000京\\ue001")
    ('東京', [[0, 2]])
    """
    text = _SPACES.sub(" ", snippet.replace(ZERO_WIDTH_SPACE, ""))
    plain: list[str] = []
    marks: list[list[int]] = []
    length = 0
    start = None
    for piece in re.split(f"([{_OPEN}{_CLOSE}])", text):
        if piece == _OPEN:
            start = length
        elif piece == _CLOSE:
            if start is not None and marks and marks[-1][1] == start:
                marks[-1][1] = length  # a word of a script without spaces
            elif start is not None and length > start:
                marks.append([start, length])
            start = None
        else:
            plain.append(piece)
            length += len(piece)
    return "".join(plain), marks


def search(
    db: str | os.PathLike[str] | Source | None,
    query: str,
    limit: int = DEFAULT_LIMIT,
    abandoned: bool = False,
    fts: bool = False,
    where: TreeFilter | None = None,
) -> list[Hit]:
    """The nodes that match `query`, best first.

    Parameters
    ----------
    db
        llm's database, a chat export (a path or an open `Source`), or None
        for llm's own `logs.db`. Its index is built or brought up to date
        first (`convgraph.analysis.search_index`).
    query
        Text: every word must occur (see the module's docstring); with
        `fts`, an FTS5 expression.
    limit
        At most this many hits.
    abandoned
        Only hits that lie off the active path, on abandoned branches (not
        in a subagent).
    fts
        Take `query` as an FTS5 expression.
    where
        Only hits in the trees this filter keeps (a tree is in when any of
        its nodes matches: `convgraph.model.filters`).

    Returns
    -------
    list[Hit]
        Ranked by BM25 over the node's prompt, response, system prompt and
        parts (SQLite's `bm25()`, all four weighted alike).

    Raises
    ------
    ConvgraphError
        The query holds no word, or (with `fts`) is no FTS5 expression.
    DatabaseError
        The file cannot be read, or its index cannot be written.
    """
    expression = spaced(query) if fts else fts_query(query)
    if limit <= 0:
        return []
    with opened(db) as logs, open_index(logs) as index:
        rows = _matching(index.conn, expression, limit, abandoned, where)
    return [_hit(rank, row) for rank, row in enumerate(rows, 1)]


def _matching(
    conn: sqlite3.Connection,
    expression: str,
    limit: int,
    abandoned: bool,
    where: TreeFilter | None = None,
) -> list[tuple[Any, ...]]:
    """The best `limit` matching nodes in rank order, with their snippets
    (only those on abandoned branches where `abandoned`, only in the trees
    `where` keeps where given).

    The filter is SQL on the index (`model.filters.sql_condition`): the
    trees any of whose nodes matches, found by SQLite in a scan of `nodes`
    (its pages, not the table, in memory), so that a filtered query's memory
    does not grow with the file; the globs are matched once per model name
    the index holds (its `models` table)."""
    from convgraph.model.filters import sql_condition

    snippets = ", ".join(
        f"snippet(texts, {column}, '{_OPEN}', '{_CLOSE}', '{ELLIPSIS}',"
        f" {SNIPPET_TOKENS})"
        for column in [-1, *range(len(FIELDS))]
    )
    terms, parameters = [], list[Any]()
    if abandoned:
        terms.append("nodes.active = 0 and nodes.sidechain = 0")
    if where:
        names = [name for (name,) in conn.execute("select name from models")]
        condition, parameters = sql_condition(where, names)
        terms.append(f"nodes.tree_id in (select tree_id from nodes where {condition})")
    # The best rows first, by bm25() alone, then the snippets of those: an
    # ORDER BY of the expression with a LIMIT keeps only the best `limit`
    # as SQLite goes (FTS5's own `ORDER BY rank` sorts every match: a word
    # in 74k of 100k nodes is ranked in 80 ms that way, 51 ms this way),
    # and nodes are joined only where a filter asks.
    joined = " join nodes on nodes.rowid = texts.rowid" if terms else ""
    filters = "".join(f" and {term}" for term in terms)
    try:
        return conn.execute(
            "with best as (select texts.rowid as rowid, bm25(texts) as score"
            f" from texts{joined} where texts match ?{filters}"
            " order by score, texts.rowid limit ?)"
            " select nodes.id, nodes.tree_id, nodes.model, nodes.datetime_utc,"
            " nodes.source, nodes.depth, nodes.active, best.score,"
            f" {snippets}, nodes.sidechain"
            " from best join texts on texts.rowid = best.rowid"
            " join nodes on nodes.rowid = best.rowid"
            " where texts match ? order by best.score, best.rowid",
            [expression, *parameters, limit, expression],
        ).fetchall()
    except sqlite3.OperationalError as error:
        if "fts5" in str(error) or "syntax" in str(error) or "no such" in str(error):
            raise ConvgraphError(f"not an FTS5 query: {error}") from None
        raise


def _hit(rank: int, row: tuple[Any, ...]) -> Hit:
    snippet, marks = marked(row[8] or "")
    fields = [
        field
        for field, text in zip(FIELDS, row[9:-1], strict=True)
        if text is not None and _OPEN in text
    ]
    return Hit(
        rank=rank,
        score=round(-float(row[7]), 6),
        tree_id=row[1],
        id=row[0],
        depth=row[5],
        active=None if row[6] is None else bool(row[6]),
        model=row[2],
        datetime_utc=row[3],
        source=row[4],
        fields=fields,
        snippet=snippet,
        marks=marks,
        sidechain=bool(row[-1]),
    )
