"""One conversation tree from a source, reading only that tree, without
pandas, so the one-tree commands start fast (the whole file is `Forest`)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from convgraph.errors import DifferentConversations, HiddenNode, UnknownConversation
from convgraph.links.integrity import Problem, check_links
from convgraph.model.marks import hidden_records
from convgraph.sources import Source, TreeRecords, log_order, opened
from convgraph.sources.notes import read_notes

if TYPE_CHECKING:
    from convgraph.model.tree import ConversationTree


def read_tree(
    logs: Source, tree_id: str, log_order_nodes: bool = False, hidden: bool = False
) -> tuple[ConversationTree, list[Problem]]:
    """One tree's graph and its links' problems; nodes in the source's
    order, or log order. Hidden branches are left out unless `hidden`."""
    tree: TreeRecords = logs.read_tree(tree_id)
    if not tree.records:
        raise UnknownConversation(tree_id)
    return tree_graph(logs, tree, log_order_nodes, hidden)


def tree_graph(
    logs: Source, tree: TreeRecords, log_order_nodes: bool = False, hidden: bool = False
) -> tuple[ConversationTree, list[Problem]]:
    """`read_tree` of records already read (`tree`, which has some)."""
    # Here: `load_path` mostly answers without networkx.
    from convgraph.model.tree import ConversationTree

    records = sorted(tree.records, key=log_order) if log_order_nodes else tree.records
    ids = {record["id"] for record in records}
    outside = [
        record["parent_id"]
        for record in records
        if record["parent_id"] is not None and record["parent_id"] not in ids
    ]
    outsiders = logs.conversations_of(outside) if outside else {}
    parents, problems = check_links(records, outsiders)
    notes = read_notes(logs, ids)
    calls = tree.calls
    in_hidden = hidden_records(records, parents, notes)
    if in_hidden and not hidden:
        records = [record for record in records if record["id"] not in in_hidden]
        calls = {call: node for call, node in calls.items() if node not in in_hidden}
    graph = ConversationTree.from_records(
        records, parents, tree.tree_id, tree.name, notes, calls
    )
    if in_hidden:
        graph.graph["hidden"] = len(in_hidden)
    return graph, tree.problems + problems


def load_tree(
    conversation_id: str,
    db: str | os.PathLike[str] | Source | None = None,
    hidden: bool = False,
) -> ConversationTree:
    """The tree a conversation id (or a unique prefix) names in `db` (a
    path, a `Source`, None for llm's own).
    Raises: UnknownConversation, AmbiguousId, DatabaseError."""
    with opened(db) as logs:
        conversation_id = logs.resolve_conversation(conversation_id)
        tree_id = logs.tree_id_of_conversation(conversation_id)
        return read_tree(logs, tree_id, hidden=hidden)[0]


def load_tree_of_node(
    node_id: str,
    db: str | os.PathLike[str] | Source | None = None,
    hidden: bool = False,
) -> ConversationTree:
    """The tree that holds `node_id` (or a unique prefix of one).
    Raises: UnknownNode, AmbiguousId, DatabaseError, HiddenNode."""
    with opened(db) as logs:
        node_id = logs.resolve_node(node_id)
        tree = read_tree(logs, logs.tree_id_of_node(node_id), hidden=hidden)[0]
    if not _holds(tree, node_id):
        raise HiddenNode(node_id)
    return tree


def load_path(
    node_id: str,
    db: str | os.PathLike[str] | Source | None = None,
    hidden: bool = False,
) -> list[str]:
    """The ids from the root of `node_id`'s tree down to it (by the stored links where
    the file has them). Raises: UnknownNode, AmbiguousId, DatabaseError, HiddenNode."""
    with opened(db) as logs:
        node_id = logs.resolve_node(node_id)
        if (found := logs.path_by_links(node_id)) is not None:
            notes = read_notes(logs, found)
            if not hidden and any(note.hidden for note in notes.values()):
                raise HiddenNode(node_id)
            return found
        from convgraph.model.tree import path

        return path(load_tree_of_node(node_id, logs, hidden), node_id)


def load_trees(
    conversation_ids: Iterable[str] = (),
    db: str | os.PathLike[str] | Source | None = None,
    hidden: bool = False,
) -> Iterator[ConversationTree]:
    """The trees these ids name, each once, in the order first named; every
    tree when none. An unknown id fails before the first tree is given.
    Raises: UnknownConversation, DatabaseError."""
    named = list(conversation_ids)
    trees: dict[Any, ConversationTree] = {}
    with opened(db) as logs:
        if not named:
            # Here, so the one-tree loaders stay free of pandas.
            from convgraph.model.forest import Forest

            return Forest.read(logs, hidden=hidden).trees()
        for conversation_id in named:
            tree = load_tree(conversation_id, logs, hidden)
            trees.setdefault(tree.graph["tree_id"], tree)
    return iter(trees.values())


def load_tree_of_pair(
    node_a: str,
    node_b: str,
    db: str | os.PathLike[str] | Source | None = None,
    hidden: bool = False,
) -> ConversationTree:
    """The one tree that holds both nodes.
    Raises: UnknownNode, DifferentConversations, HiddenNode, DatabaseError."""
    with opened(db) as logs:
        node_a, node_b = logs.resolve_node(node_a), logs.resolve_node(node_b)
        tree = load_tree_of_node(node_a, logs, hidden)
        if not _holds(tree, node_b):
            other = logs.tree_id_of_node(node_b)
            if other == tree.graph["tree_id"]:
                raise HiddenNode(node_b)
            raise DifferentConversations(
                f"{node_a!r} and {node_b!r} are in different conversations"
                f" ({tree.graph['tree_id']!r} and {other!r})"
            )
        return tree


def _holds(tree: ConversationTree, node_id: str) -> bool:
    """Whether `node_id` is a node of `tree` or a call inside one of its runs."""
    return node_id in tree or node_id in tree.graph.get("calls", {})
