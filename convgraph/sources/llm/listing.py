"""The trees of llm's database from its small tables and one aggregate query
per generation, without reading any tree."""

from __future__ import annotations

from typing import TYPE_CHECKING

from convgraph.sources.llm.message_store import _thread_roots

if TYPE_CHECKING:
    import sqlite3

    from convgraph.sources.llm.database import LogDatabase

#: A tree's id, name, calls logged, last time and models (sorted).
TreeCount = tuple[str, str | None, int, str | None, list[str]]

_LEGACY_SQL = """
select coalesce(conversation_id, id) as cid, count(*) as nodes,
       max(datetime_utc) as last, group_concat(distinct model) as models
from responses{skip}
group by cid
"""

_TURNS_SQL = """
select thread_id, count(*) as nodes, max(datetime_utc) as last,
       group_concat(distinct model) as models
from turns group by thread_id
"""

Threads = dict[str, tuple[str | None, str | None]]


def tree_names(db: LogDatabase) -> list[tuple[str, str | None]]:
    """Every named tree's id and name, newest first, from the `threads` and
    `conversations` tables alone."""
    names: dict[str, str | None] = {}
    roots: dict[str, str] = {}
    if db.store is not None:
        threads, roots = _threads(db.conn)
        # Newest first: llm adds a thread when it is made.
        for tree_id in reversed(threads):
            if roots.get(tree_id, tree_id) == tree_id:
                names[tree_id] = threads[tree_id][0]
    if db.legacy is not None and db.legacy.has_conversations:
        for cid, name in db.conn.execute(
            "select id, name from conversations order by rowid desc"
        ):
            tree_id = roots.get(cid, cid)
            if tree_id not in names or (cid == tree_id and name):
                # llm's own name for the conversation, not the one of the
                # thread llm 0.32+ went on with it in (named by a later prompt).
                names[tree_id] = name
            else:
                names[tree_id] = names[tree_id] or name
    return list(names.items())


def tree_counts(db: LogDatabase) -> list[TreeCount]:
    """Every tree with the calls logged in it (not its nodes: a tool chain's
    calls are one node), its last time and models: one aggregate query over
    `responses` and one over `turns`, a scan of the file."""
    counts: dict[str, TreeCount] = {}
    roots: dict[str, str] = {}
    if db.store is not None:
        threads, roots = _threads(db.conn)
        for thread_id, calls, last, models in db.conn.execute(_TURNS_SQL):
            tree_id = roots.get(thread_id, thread_id)
            name = threads.get(tree_id, (None, None))[0]
            _add(counts, tree_id, name, calls, last, models)
    if db.legacy is not None:
        names: dict[str, str | None] = {}
        if db.legacy.has_conversations:
            names = dict(db.conn.execute("select id, name from conversations"))
        skip = " where id not in (select id from turns)"
        sql = _LEGACY_SQL.format(skip=skip if db.legacy.skip_ids_in_turns else "")
        for cid, calls, last, models in db.conn.execute(sql):
            # llm continues a legacy conversation in a thread of the same id.
            tree_id = roots.get(cid, cid)
            _add(counts, tree_id, names.get(cid), calls, last, models)
            if cid == tree_id and names.get(cid):
                counts[tree_id] = (tree_id, names[cid], *counts[tree_id][2:])
    return list(counts.values())


def _threads(conn: sqlite3.Connection) -> tuple[Threads, dict[str, str]]:
    """Every thread's name and origin, and the tree each thread belongs to."""
    threads: Threads = {
        row[0]: (row[1], row[2])
        for row in conn.execute(
            "select id, name, forked_from from threads order by rowid"
        )
    }
    roots = _thread_roots({tid: forked for tid, (_, forked) in threads.items()})[0]
    return threads, roots


def _add(
    counts: dict[str, TreeCount],
    tree_id: str,
    name: str | None,
    calls: int,
    last: str | None,
    models: str | None,
) -> None:
    """Fold one group's figures into its tree's."""
    found = models.split(",") if models else []
    if tree_id not in counts:
        counts[tree_id] = (tree_id, name, calls, last, sorted(found))
        return
    _, known_name, known_calls, known_last, known_models = counts[tree_id]
    if last is None or (known_last is not None and last <= known_last):
        last = known_last
    counts[tree_id] = (
        tree_id,
        known_name or name,
        known_calls + calls,
        last,
        sorted(set(known_models) | set(found)),
    )
