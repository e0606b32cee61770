"""The operations the suite times, each beside the baseline it is compared to.

Every task is a setup function registered with `benchmarks.measure.task`: it
imports what it needs (untimed: start-up is measured on its own, as CLI
start-up) and returns the operation. Names say which side a task is on:
``convgraph.*`` is convgraph's public API; ``sqlite.*`` a bare sqlite3 fetch
of the same rows (the cost of reading the data at all); ``seed.*`` the design
notes' helpers (`benchmarks.baselines`); ``view.*`` llm's `message_tree` view.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from benchmarks.measure import task

#: The columns convgraph reads of a legacy response (its node contract).
LEGACY_COLUMNS = (
    "id, conversation_id, parent_response_id, prompt, system, response, model,"
    " datetime_utc, input_tokens, output_tokens, duration_ms"
)


def _connect(db: str) -> sqlite3.Connection:
    # As convgraph opens it: read-only.
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True)


def _fetch(db: str, sql: str, params: tuple = ()) -> Callable[[], list]:
    def fetch() -> list:
        conn = _connect(db)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    return fetch


# -- bare fetches: the cost of reading the data ---------------------------------


@task("sqlite.structure")
def _sqlite_structure(db: str) -> Callable[[], list]:
    """Every response's id, parent and conversation."""
    return _fetch(db, "select id, parent_response_id, conversation_id from responses")


@task("sqlite.all")
def _sqlite_all(db: str) -> Callable[[], list]:
    """Every response, with the columns convgraph reads."""
    return _fetch(db, f"select {LEGACY_COLUMNS} from responses")


@task("sqlite.conversation")
def _sqlite_conversation(db: str, conversation: str) -> Callable[[], list]:
    """One conversation's responses, with the columns convgraph reads."""
    return _fetch(
        db,
        f"select {LEGACY_COLUMNS} from responses where conversation_id = ?",
        (conversation,),
    )


@task("sqlite.store_structure")
def _sqlite_store_structure(db: str) -> Callable[[], list]:
    """The message store's links: every turn's thread and messages, every
    message's parent, every thread's origin."""

    def fetch() -> list:
        conn = _connect(db)
        try:
            turns = conn.execute(
                "select id, thread_id, parent_message_hash, tip_message_hash from turns"
            ).fetchall()
            conn.execute("select hash, parent_hash, role from messages").fetchall()
            conn.execute("select id, forked_from from threads").fetchall()
            return turns
        finally:
            conn.close()

    return fetch


# -- convgraph -------------------------------------------------------------------


@task("convgraph.stats")
def _convgraph_stats(db: str) -> Callable[[], Any]:
    """Forest statistics: one row per conversation, from the structure only."""
    from convgraph import Forest
    from convgraph.stats import conversation_table

    return lambda: conversation_table(Forest.read(db, text=False))


@task("convgraph.forest_structure")
def _convgraph_forest_structure(db: str) -> Callable[[], Any]:
    """The whole forest without its texts."""
    from convgraph import Forest

    return lambda: Forest.read(db, text=False)


@task("convgraph.forest")
def _convgraph_forest(db: str) -> Callable[[], Any]:
    """The whole forest with every text."""
    from convgraph import Forest

    return lambda: Forest.read(db)


@task("convgraph.load_tree")
def _convgraph_load_tree(db: str, conversation: str) -> Callable[[], Any]:
    """One conversation as a DiGraph."""
    import networkx  # noqa: F401  (imported by load_tree; not its cost)

    from convgraph import load_tree

    return lambda: load_tree(conversation, db)


@task("convgraph.path")
def _convgraph_path(db: str, node: str) -> Callable[[], list]:
    """A node's path from its root, as `convgraph path` finds it: up the
    stored links where there are any, else through its conversation's tree."""
    import networkx  # noqa: F401

    from convgraph.forest import load_path

    return lambda: load_path(node, db)


@task("convgraph.descendants")
def _convgraph_descendants(db: str, node: str) -> Callable[[], list]:
    """Every node below a node."""
    import networkx  # noqa: F401

    from convgraph import load_tree_of_node, tree

    return lambda: tree.descendants(load_tree_of_node(node, db), node)


@task("convgraph.leaves")
def _convgraph_leaves(db: str, conversation: str) -> Callable[[], list]:
    """The leaves of one conversation."""
    import networkx  # noqa: F401

    from convgraph import load_tree, tree

    return lambda: tree.leaves(load_tree(conversation, db))


# -- the seed's helpers ---------------------------------------------------------


def _seed(function: Callable, db: str, key: str, recursion: int = 0) -> Callable:
    from benchmarks import baselines

    def run() -> Any:
        conn = _connect(db)
        try:
            if recursion:
                with baselines.deep_recursion(recursion):
                    return function(conn, key)
            return function(conn, key)
        finally:
            conn.close()

    if recursion:
        run.note = f"recursion limit raised to {recursion}"
    return run


@task("seed.path")
def _seed_path(db: str, node: str) -> Callable[[], list]:
    from benchmarks.baselines import get_path_to_root

    return _seed(get_path_to_root, db, node)


@task("seed.descendants")
def _seed_descendants(db: str, node: str, recursion: int = 0) -> Callable[[], list]:
    from benchmarks.baselines import get_all_descendants

    return _seed(get_all_descendants, db, node, recursion)


@task("seed.leaves")
def _seed_leaves(db: str, conversation: str) -> Callable[[], list]:
    from benchmarks.baselines import get_leaf_nodes

    return _seed(get_leaf_nodes, db, conversation)


# -- llm's message_tree view ------------------------------------------------------


@task("view.path")
def _view_path(db: str, node: str) -> Callable[[], list]:
    from benchmarks.baselines import view_path

    return _seed(view_path, db, node)


@task("view.descendants")
def _view_descendants(db: str, node: str) -> Callable[[], list]:
    from benchmarks.baselines import view_descendants

    return _seed(view_descendants, db, node)


@task("view.leaves")
def _view_leaves(db: str, conversation: str) -> Callable[[], list]:
    from benchmarks.baselines import view_leaves

    return _seed(view_leaves, db, conversation)


# -- for the diagnosis: what convgraph could do instead ------------------------------

PATH_SQL = """
with recursive up(id, parent, depth) as (
    select id, parent_response_id, 0 from responses where id = ?
    union all
    select r.id, r.parent_response_id, up.depth + 1
    from responses r join up on r.id = up.parent
    where up.depth < 1000000
)
select id from up order by depth desc
"""


@task("sqlite.path_cte")
def _sqlite_path_cte(db: str, node: str) -> Callable[[], list]:
    """A node's path in one recursive query up the primary key: no scan."""
    return _fetch(db, PATH_SQL, (node,))
