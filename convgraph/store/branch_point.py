"""Where a branch hangs and the history every model is given first: a turn
of llm's message store (its chain of messages) or a legacy response (the
path's prompts and responses rebuilt as llm messages)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convgraph.errors import BranchError, UnknownNode
from convgraph.store.rules import require_rules
from convgraph.store.upgrade import upgrade_llm_tables

if TYPE_CHECKING:
    import networkx as nx


@dataclass
class BranchPoint:
    """Where new answers hang, and the history each model is given first."""

    path: Path
    parent_id: str | None
    tree_node: str
    default_model: str | None
    history: list[Any] = field(default_factory=list)
    current_system: str | None = None
    #: The message store's LogStore, when the answers are turns.
    store: Any = None
    #: The parent turn's `thread_id` and `tip_message_hash`.
    turn: dict[str, Any] | None = None
    thread_id: str | None = None
    conversation_id: str | None = None
    #: The legacy tree, whose path down to `parent_id` is the history.
    graph: nx.DiGraph[Any] | None = None


def point_below(path: Path, node_id: str) -> BranchPoint:
    """The branch point for new children of `node_id` (history not read yet)."""
    from convgraph.sources import LogDatabase, open_logs

    with open_logs(path) as logs:
        # A call inside a tool chain names the chain's node: go on from its
        # end; a unique prefix names its id.
        node_id = logs.node_of(logs.resolve_node(node_id))
        if not isinstance(logs, LogDatabase):
            raise UnknownNode(node_id)  # only llm's database takes branches
        store, legacy = logs.store, logs.legacy
        turn = store.turn_end(node_id) if store is not None else None
        if store is not None and turn is not None:
            # llm's load_chain would loop forever on a cycle of parent_hash.
            if (broken := store.broken_chain(turn["tip_message_hash"])) is not None:
                raise BranchError(f"cannot branch from {node_id}: {broken}")
            return BranchPoint(path, node_id, node_id, turn["model"], turn=turn)
        if legacy is None or not legacy.conversation_of(node_id):
            raise UnknownNode(node_id)
        if store is None:  # with the message store, a branch is a fork
            require_rules(logs.conn)
        from convgraph.model.loading import load_tree_of_node

        graph = load_tree_of_node(node_id, logs)
    return BranchPoint(
        path, node_id, node_id, graph.nodes[node_id]["model"], graph=graph
    )


def point_beside(path: Path, node_id: str) -> tuple[BranchPoint, dict[str, Any]]:
    """The branch point for siblings of `node_id`, and the node itself."""
    from convgraph.model.loading import load_tree_of_node
    from convgraph.model.tree import parent
    from convgraph.sources import LogDatabase, open_logs

    with open_logs(path) as logs:
        node_id = logs.resolve_node(node_id)  # a unique prefix names it
        graph = load_tree_of_node(node_id, logs)
        # A call inside a tool chain names the chain's node.
        node_id = graph.graph.get("calls", {}).get(node_id, node_id)
        node = dict(graph.nodes[node_id])
        above = parent(graph, node_id)
        store = logs.store if isinstance(logs, LogDatabase) else None
        turn = store.turn_end(node_id) if store is not None else None
    if above is not None:
        point = point_below(path, above)
        point.tree_node = node_id
    elif turn is not None:
        point = BranchPoint(path, None, node_id, None, thread_id=turn["thread_id"])
    else:
        point = BranchPoint(
            path, None, node_id, None, conversation_id=node["conversation_id"]
        )
    point.default_model = node["model"]
    return point, node


def open_history(llm: Any, conn: sqlite3.Connection, point: BranchPoint) -> None:
    """Read the history the models are given, as llm messages."""
    if point.turn is not None or point.thread_id is not None:
        import sqlite_utils
        from llm.logs import LogStore

        # llm's own pending migrations first, as llm would apply them, but
        # in one transaction (store.upgrade), so LogStore finds none left.
        upgrade_llm_tables(conn)
        point.store = LogStore(sqlite_utils.Database(conn))  # type: ignore[no-untyped-call]
        if point.turn is not None:
            point.history = point.store.load_chain(point.turn["tip_message_hash"])
            point.current_system = system_of(point.history)
        return
    if point.graph is not None and point.parent_id is not None:
        point.history, point.current_system = legacy_history(
            llm, point.graph, point.parent_id
        )


def legacy_history(
    llm: Any, graph: nx.DiGraph[Any], node_id: str
) -> tuple[list[Any], str | None]:
    """The prompts and responses from the root down to `node_id` as llm
    messages, and the system prompt in force after them."""
    from convgraph.model.tree import path as path_to

    history: list[Any] = []
    current_system = None
    for ancestor in path_to(graph, node_id):
        node = graph.nodes[ancestor]
        if node["system"] and node["system"] != current_system:
            history.append(llm.system(node["system"]))
            current_system = node["system"]
        if node["prompt"]:
            history.append(llm.user(node["prompt"]))
        if node["response"]:
            history.append(llm.assistant(node["response"]))
    return history, current_system


def with_system(
    llm: Any, history: list[Any], current: str | None, system: str | None
) -> list[Any]:
    """The history, with `system` after it when it changes the system prompt:
    models read the system from the messages, not from `system=`."""
    return [*history, llm.system(system)] if system and system != current else history


def system_of(messages: list[Any]) -> str | None:
    """The text of the last system message in a chain."""
    for message in reversed(messages):
        if message.role == "system":
            return "".join(getattr(part, "text", None) or "" for part in message.parts)
    return None
