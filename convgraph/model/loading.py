"""One conversation tree from a source: the loaders of the one-tree path.

A command about one conversation or one node reads only that tree's rows
(`Source.read_tree`), checks their links in plain Python
(`convgraph.links.integrity.check_links`) and builds one networkx DiGraph
with its branch marks (`ConversationTree.from_records`). Nothing here
imports pandas or numpy, and networkx only when a graph is built, so `convgraph path`, `tree` and `diff` start fast:
`load_path` answers from the stored links alone where a file has them. The
whole file as tables is `convgraph.model.forest.Forest`; it builds each tree
with the same `ConversationTree.from_records`.
"""

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
    """One tree's graph and the problems of its links, reading only that tree.

    The graph's nodes are in the order the source gives its records (an
    agent's session: the order its files are read), or with
    `log_order_nodes` in log order, the order of the forest's table: so that
    what a tree lists in the order first used (models, tools:
    `convgraph.analysis.stats.summary`) is the table's answer. The branches
    the user hid (`convgraph hide`) are left out unless `hidden`; the
    graph's `hidden` attribute counts the nodes they hold.
    """
    tree: TreeRecords = logs.read_tree(tree_id)
    if not tree.records:
        raise UnknownConversation(tree_id)
    return tree_graph(logs, tree, log_order_nodes, hidden)


def tree_graph(
    logs: Source, tree: TreeRecords, log_order_nodes: bool = False, hidden: bool = False
) -> tuple[ConversationTree, list[Problem]]:
    """`read_tree` of records already read (`tree`, which has some)."""
    # Here, not above: `load_path` mostly answers without a graph, and
    # without networkx.
    from convgraph.model.tree import ConversationTree

    # Sorting what is sorted already (llm's records) is one pass.
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
    """The conversation tree that `conversation_id` names, as a DiGraph.

    Parameters
    ----------
    conversation_id
        A legacy conversation id, or any thread id of a message-store tree,
        or a unique prefix of one (`Source.resolve`).
    db
        A path to a `logs.db`, an open `Source`, or None for llm's own.
    hidden
        Keep the branches the user hid (`convgraph hide`), left out by
        default.

    Raises
    ------
    UnknownConversation, AmbiguousId, DatabaseError
    """
    with opened(db) as logs:
        conversation_id = logs.resolve_conversation(conversation_id)
        tree_id = logs.tree_id_of_conversation(conversation_id)
        return read_tree(logs, tree_id, hidden=hidden)[0]


def load_tree_of_node(
    node_id: str,
    db: str | os.PathLike[str] | Source | None = None,
    hidden: bool = False,
) -> ConversationTree:
    """The conversation tree that holds `node_id` (a response or turn id, or
    a unique prefix of one: `Source.resolve`).

    Raises
    ------
    UnknownNode, AmbiguousId, DatabaseError
    HiddenNode
        The node is in a branch the user hid, and `hidden` is False.
    """
    with opened(db) as logs:
        node_id = logs.resolve_node(node_id)
        tree = read_tree(logs, logs.tree_id_of_node(node_id), hidden=hidden)[0]
    if node_id not in tree and node_id not in tree.graph.get("calls", {}):
        raise HiddenNode(node_id)
    return tree


def load_path(
    node_id: str,
    db: str | os.PathLike[str] | Source | None = None,
    hidden: bool = False,
) -> list[str]:
    """The ids from the root of `node_id`'s tree down to `node_id`.

    The same answer as `convgraph.model.tree.path` on `load_tree_of_node`, but where
    the file stores parent links (legacy with `parent_response_id`) it walks
    them up the primary key and reads nothing else of the conversation.

    Raises
    ------
    UnknownNode, AmbiguousId, DatabaseError
    """
    with opened(db) as logs:
        node_id = logs.resolve_node(node_id)
        found = logs.path_by_links(node_id)
        if found is not None:
            notes = read_notes(logs, found)
            if not hidden and any(note.hidden for note in notes.values()):
                raise HiddenNode(node_id)
            return found
        # Only here does the tree's answer need networkx: a command that
        # walked the links above has no reason to import it.
        from convgraph.model.tree import path

        return path(load_tree_of_node(node_id, logs, hidden), node_id)


def load_trees(
    conversation_ids: Iterable[str] = (),
    db: str | os.PathLike[str] | Source | None = None,
    hidden: bool = False,
) -> Iterator[ConversationTree]:
    """The trees these ids name, each once, in the order first named; every
    tree of the file (read as one `Forest`, built one at a time) when none.

    With ids, every tree is read (one conversation each) before the first is
    given, so an unknown id fails before a caller writes anything. Two thread
    ids of one message-store tree name the same tree.

    Raises
    ------
    UnknownConversation, DatabaseError
    """
    named = list(conversation_ids)
    if not named:
        # Every tree needs the whole table: the forest's own import, here,
        # so the one-tree loaders stay free of pandas.
        from convgraph.model.forest import Forest

        return Forest.read(db, hidden=hidden).trees()
    trees: dict[Any, ConversationTree] = {}
    with opened(db) as logs:
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
    """The conversation tree that holds both nodes, reading only that tree
    (for a diff of their branches).

    Raises
    ------
    UnknownNode
        Either id names no node.
    DifferentConversations
        The nodes are in different conversation trees.
    DatabaseError
    """
    with opened(db) as logs:
        node_a, node_b = logs.resolve_node(node_a), logs.resolve_node(node_b)
        tree = load_tree_of_node(node_a, logs, hidden)
        if node_b not in tree and node_b not in tree.graph.get("calls", {}):
            # Only an id lookup: the other tree is not read.
            other = logs.tree_id_of_node(node_b)
            if other == tree.graph["tree_id"]:
                raise HiddenNode(node_b)
            raise DifferentConversations(
                f"{node_a!r} and {node_b!r} are in different conversations"
                f" ({tree.graph['tree_id']!r} and {other!r})"
            )
        return tree
