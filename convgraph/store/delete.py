"""Delete a node of a legacy database under the deletion policy
(docs/design.md#deleting-a-node): a node with children is refused unless `reparent`
(they move to its parent) or `cascade` (its subtree goes)."""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from convgraph.errors import DeletionRefused
from convgraph.sources.llm.files import table_names
from convgraph.store.responses import keep_as_roots
from convgraph.store.rules import PARENT_COLUMN, rule_message
from convgraph.store.transaction import (
    connect_read_write,
    database_path,
    write_transaction,
)
from convgraph.text import counted

if TYPE_CHECKING:
    import networkx as nx

Mode = Literal["refuse", "reparent", "cascade"]


@dataclass
class Deletion:
    """What `delete_node` did: `deleted` (the node, then its descendants breadth
    first), `moved` children and their `new_parent` (None: roots); with
    `dry_run`, what it would have done."""

    node_id: str
    deleted: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    new_parent: str | None = None
    dry_run: bool = False


def delete_node(
    node_id: str,
    db: str | os.PathLike[str] | None = None,
    *,
    mode: Mode = "refuse",
    timeout: float | None = None,
    dry_run: bool = False,
) -> Deletion:
    """Delete one legacy response, and decide what becomes of its children. Raises
    `UnknownNode` (no node has this id); `DeletionRefused` (children and no mode; a turn
    of the message store; or turns below); `DatabaseError`, `DatabaseLocked`."""
    if mode not in ("refuse", "reparent", "cascade"):
        raise ValueError(f"unknown deletion mode {mode!r}")
    from convgraph.model import tree as tree_ops
    from convgraph.model.loading import load_tree_of_node
    from convgraph.sources import LogDatabase

    path = database_path(db)
    conn = connect_read_write(path, timeout)
    try:
        with write_transaction(conn):
            # Read under the exclusive lock: the tree cannot change meanwhile.
            logs = LogDatabase(conn, path)
            node_id = logs.resolve_node(node_id)  # a unique prefix names it
            graph = load_tree_of_node(node_id, logs)
            # A call inside a tool chain names the chain's node (its last call).
            node_id = tree_ops.node_of(graph, node_id)
            has_column = logs.legacy is not None and logs.legacy.has_parent
            if _turns(graph, [node_id]):
                raise DeletionRefused(
                    f"node {node_id} is a turn of llm's message store: its messages"
                    " are shared between threads and llm itself never deletes them,"
                    " so convgraph does not either"
                )
            children = tree_ops.children(graph, node_id)
            result = Deletion(node_id, dry_run=dry_run)
            # A turn's stored history ends at its parent, which convgraph can
            # neither move nor delete: the advice names only what works.
            turns_below = _turns(graph, tree_ops.descendants(graph, node_id))
            below_turns = frozenset(turns_below)
            turn_children = [n for n in children if n in below_turns]
            if turn_children and has_column:
                raise DeletionRefused(
                    f"node {node_id} is continued by turns of llm's message store"
                    f" ({', '.join(turn_children[:5])}), whose stored history holds"
                    " its answer; convgraph neither moves nor deletes turns, so it"
                    " cannot be deleted; nothing was deleted"
                )
            if children and mode == "refuse":
                ways = ["pass --children reparent to move them to its parent"]
                if not turns_below:
                    ways.append("--children cascade to delete its whole subtree")
                raise DeletionRefused(
                    f"node {node_id} has {counted(len(children), 'child', 'children')}"
                    f" ({', '.join(children[:5])}{', ...' if len(children) > 5 else ''}):"
                    f" {', or '.join(ways)}; nothing was deleted"
                )
            doomed = [node_id]
            if mode == "cascade":
                doomed += tree_ops.descendants(graph, node_id)
                if turns := _turns(graph, doomed):
                    raise DeletionRefused(
                        f"the subtree of {node_id} holds turns of llm's message store"
                        f" ({', '.join(turns[:5])}), which convgraph does not delete;"
                        " nothing was deleted"
                    )
            elif children:
                result.moved = children
                result.new_parent = tree_ops.parent(graph, node_id)
                if has_column:
                    _reparent(
                        conn, graph, node_id, children, result.new_parent, dry_run
                    )
            # Each call of the node's run goes, earlier ones listed first.
            runs = [(tree_ops.run_calls(graph, node), node) for node in doomed]
            doomed = [c for calls, n in runs for c in [*_in_log_order(conn, calls), n]]
            if has_column:
                # The moved children (moved already, or in a dry run about
                # to be) no longer name the node.
                _refuse_outside_children(conn, doomed, result.moved)
            if not dry_run:
                _delete_responses(conn, doomed)
            result.deleted = doomed
        return result
    finally:
        conn.close()


def _in_log_order(conn: sqlite3.Connection, ids: list[str]) -> list[str]:
    """These responses in log order (a run's calls, as llm logged them)."""
    if not ids:
        return []
    return [
        row[0]
        for row in conn.execute(
            "select id from responses where id in (select value from json_each(?))"
            " order by datetime_utc, id",
            [json.dumps(ids)],
        )
    ]


def _turns(graph: nx.DiGraph[Any], nodes: list[str]) -> list[str]:
    """Which of `nodes` are message-store turns (convgraph deletes none)."""
    data = graph.nodes
    return [node for node in nodes if data[node]["source"] != "responses"]


def _reparent(
    conn: sqlite3.Connection,
    graph: nx.DiGraph[Any],
    node_id: str,
    children: list[str],
    new_parent: str | None,
    dry_run: bool = False,
) -> None:
    if turns := _turns(graph, children):
        raise DeletionRefused(
            f"node {node_id} has children in llm's message store"
            f" ({', '.join(turns)}), whose parents convgraph cannot change;"
            " nothing was deleted"
        )
    if dry_run:
        return
    try:
        conn.execute(
            f"update responses set {PARENT_COLUMN} = ?"
            " where id in (select value from json_each(?))",
            [new_parent, json.dumps(children)],
        )
    except sqlite3.IntegrityError as error:
        raise DeletionRefused(
            f"cannot move the children of {node_id}:"
            f" {rule_message(error) or error}; nothing was deleted"
        ) from None
    if new_parent is None:
        keep_as_roots(conn, children)  # roots on purpose, not an old llm's rows


def _refuse_outside_children(
    conn: sqlite3.Connection, doomed: list[str], moved: list[str]
) -> None:
    """Stored links the tree left out must not dangle either."""
    outside = [
        row[0]
        for row in conn.execute(
            f"select id from responses where {PARENT_COLUMN} in"
            " (select value from json_each(:ids))"
            " and id not in (select value from json_each(:ids))"
            " and id not in (select value from json_each(:moved))",
            {"ids": json.dumps(doomed), "moved": json.dumps(moved)},
        )
    ]
    if outside:
        raise DeletionRefused(
            f"cannot delete {doomed[0]}: {', '.join(outside[:5])} (outside the tree"
            " convgraph shows, see `convgraph check`) names it or its subtree as"
            " parent; nothing was deleted"
        )


def _delete_responses(conn: sqlite3.Connection, ids: list[str]) -> None:
    """Delete these responses, children first, with the rows that belong to them."""
    ids_json = json.dumps(ids)
    conversations = [
        row[0]
        for row in conn.execute(
            "select distinct conversation_id from responses"
            " where id in (select value from json_each(?))"
            " and conversation_id is not null",
            [ids_json],
        )
    ]
    for table, where in reversed(_dependent_rows(conn)):
        conn.execute(f'delete from "{table}" where {where}', [ids_json])
    try:
        conn.executemany(
            "delete from responses where id = ?", [[node] for node in reversed(ids)]
        )
    except sqlite3.IntegrityError as error:
        raise DeletionRefused(
            f"cannot delete {ids[0]}: {rule_message(error) or error};"
            " nothing was deleted"
        ) from None
    _drop_empty_conversations(conn, conversations)


def _dependent_rows(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """The rows belonging to the responses deleted, table by table, found from
    the schema's foreign keys (so later llm tables are covered): a table and a
    WHERE clause each, parents before dependents."""
    references: dict[str, list[tuple[str, str, str | None]]] = {}
    tables = [
        row[0]
        for row in conn.execute(
            "select name from sqlite_master where type = 'table'"
            " and sql not like 'CREATE VIRTUAL TABLE%'"
        )
    ]
    for table in tables:
        for key in conn.execute(f'pragma foreign_key_list("{table}")'):
            references.setdefault(key[2], []).append((table, key[3], key[4]))

    found: list[tuple[str, str]] = []
    queue = [("responses", "id in (select value from json_each(?))")]
    seen: set[tuple[str, str]] = set()
    while queue:
        table, where = queue.pop(0)
        for child, column, target in references.get(table, []):
            # Self-references are the policy's; each key is followed once.
            if child == table or (child, column) in seen:
                continue
            seen.add((child, column))
            target = target or _primary_key(conn, table)
            child_where = (
                f'"{column}" in (select "{target}" from "{table}" where {where})'
            )
            found.append((child, child_where))
            queue.append((child, child_where))
    return found


def _primary_key(conn: sqlite3.Connection, table: str) -> str:
    for row in conn.execute(f'pragma table_info("{table}")'):
        if row[5] == 1:
            return str(row[1])
    return "rowid"


def _drop_empty_conversations(
    conn: sqlite3.Connection, conversation_ids: list[str]
) -> None:
    """Remove conversations left without responses, unless llm continued them
    as a thread of the same id."""
    if not conversation_ids:
        return
    tables = table_names(conn)
    if "conversations" not in tables:
        return
    in_threads = (
        " and id not in (select id from threads)" if "threads" in tables else ""
    )
    conn.execute(
        "delete from conversations where id in (select value from json_each(?))"
        " and not exists (select 1 from responses r"
        " where r.conversation_id = conversations.id)" + in_threads,
        [json.dumps(conversation_ids)],
    )
