"""From source rows to conversation trees: the `Forest` and one-tree loading.

Two ways through, one answer. A command about one conversation calls
`load_tree`: it reads that conversation's rows only, checks their links in
plain Python and builds one networkx DiGraph, without importing pandas. Work on
the whole file builds a `Forest`: every node in one pandas table, its links
checked with vectorized operations (numpy pointer jumping, not a walk per
node), and a DiGraph built per conversation only when asked for.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from convgraph.contract import (
    INTEGER_ATTRIBUTES,
    NODE_ATTRIBUTES,
    NODE_COLUMNS,
    PARENT_ROWS,
    TEXT_ATTRIBUTES,
)
from convgraph.errors import DifferentConversations, UnknownConversation
from convgraph.links.integrity import (
    CROSS_CONVERSATION,
    MISSING_PARENT,
    SELF_PARENT,
    Problem,
    break_cycles,
    check_links,
    link_problem,
)
from convgraph.links.pointer_jumping import reaches_root, root_pointers
from convgraph.sources import Source, TreeRecords, open_logs
from convgraph.sources.tables import conform_nodes

if TYPE_CHECKING:
    import networkx as nx
    import numpy as np
    import pandas as pd

    from convgraph.store.notes import NodeNote


def build_graph(
    tree_id: str,
    name: str | None,
    records: list[dict[str, Any]],
    parents: dict[str, str | None],
    notes: Mapping[str, NodeNote] | None = None,
) -> nx.DiGraph:
    """One conversation's DiGraph from its records (in log order) and checked
    parents. Nodes go in in log order, so successors come out in log order.
    The branch attributes a source does not give (`active`, `note`,
    `preferred`) are attached by `convgraph.model.marks.mark_tree`, with `notes`."""
    from convgraph.model.marks import mark_tree
    from convgraph.model.tree import ConversationTree

    graph = ConversationTree(tree_id=tree_id, name=name)
    for record in records:
        graph.add_node(
            record["id"], **{key: record.get(key) for key in NODE_ATTRIBUTES}
        )
    graph.add_edges_from(
        (parent, record["id"])
        for record in records
        if (parent := parents[record["id"]]) is not None
    )
    return mark_tree(graph, notes)


def read_tree(logs: Source, tree_id: str) -> tuple[nx.DiGraph, list[Problem]]:
    """One tree's graph and the problems of its links, reading only that tree."""
    tree: TreeRecords = logs.read_tree(tree_id)
    if not tree.records:
        raise UnknownConversation(tree_id)
    ids = {record["id"] for record in tree.records}
    outside = [
        record["parent_id"]
        for record in tree.records
        if record["parent_id"] is not None and record["parent_id"] not in ids
    ]
    outsiders = (
        logs.legacy.conversation_of_ids(outside) if outside and logs.legacy else {}
    )
    parents, problems = check_links(tree.records, outsiders)
    from convgraph.store.notes import read_notes

    notes = read_notes(logs, ids)
    graph = build_graph(tree.tree_id, tree.name, tree.records, parents, notes)
    return graph, tree.problems + problems


def load_tree(
    conversation_id: str, db: str | os.PathLike[str] | Source | None = None
) -> nx.DiGraph:
    """The conversation tree that `conversation_id` names, as a DiGraph.

    Parameters
    ----------
    conversation_id
        A legacy conversation id, or any thread id of a message-store tree.
    db
        A path to a `logs.db`, an open `Source`, or None for llm's own.

    Raises
    ------
    UnknownConversation, DatabaseError
    """
    with _opened(db) as logs:
        return read_tree(logs, logs.tree_id_of_conversation(conversation_id))[0]


def load_tree_of_node(
    node_id: str, db: str | os.PathLike[str] | Source | None = None
) -> nx.DiGraph:
    """The conversation tree that holds `node_id` (a response or turn id)."""
    with _opened(db) as logs:
        return read_tree(logs, logs.tree_id_of_node(node_id))[0]


def load_path(
    node_id: str, db: str | os.PathLike[str] | Source | None = None
) -> list[str]:
    """The ids from the root of `node_id`'s tree down to `node_id`.

    The same answer as `convgraph.model.tree.path` on `load_tree_of_node`, but where
    the file stores parent links (legacy with `parent_response_id`) it walks
    them up the primary key and reads nothing else of the conversation.

    Raises
    ------
    UnknownNode, DatabaseError
    """
    with _opened(db) as logs:
        found = logs.path_by_links(node_id)
        if found is not None:
            return found
        # Only here does the tree's answer need networkx: a command that
        # walked the links above has no reason to import it.
        from convgraph.model.tree import path

        return path(read_tree(logs, logs.tree_id_of_node(node_id))[0], node_id)


def load_trees(
    conversation_ids: Iterable[str] = (),
    db: str | os.PathLike[str] | Source | None = None,
) -> Iterator[nx.DiGraph]:
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
        return Forest.read(db).trees()
    trees: dict[Any, nx.DiGraph] = {}
    with _opened(db) as logs:
        for conversation_id in named:
            tree = load_tree(conversation_id, logs)
            trees.setdefault(tree.graph["tree_id"], tree)
    return iter(trees.values())


def load_tree_of_pair(
    node_a: str, node_b: str, db: str | os.PathLike[str] | Source | None = None
) -> nx.DiGraph:
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
    with _opened(db) as logs:
        tree = load_tree_of_node(node_a, logs)
        if node_b not in tree:
            # Only an id lookup: the other tree is not read.
            other = logs.tree_id_of_node(node_b)
            raise DifferentConversations(
                f"{node_a!r} and {node_b!r} are in different conversations"
                f" ({tree.graph['tree_id']!r} and {other!r})"
            )
        return tree


class _opened:
    """Use an open Source as it is, or open a path and close it after."""

    def __init__(self, db: str | os.PathLike[str] | Source | None):
        self.given = db if isinstance(db, Source) else None
        self.path = None if isinstance(db, Source) else db

    def __enter__(self) -> Source:
        self.logs = self.given or open_logs(self.path)
        return self.logs

    def __exit__(self, *exc: object) -> None:
        if self.given is None:
            self.logs.close()


class Forest:
    """Every conversation tree of a database, as tables.

    Attributes
    ----------
    nodes : pandas.DataFrame
        One row per node in log order: `id`, `tree_id`, `parent_id` (checked:
        None for roots and for nodes whose stored link was broken), and the
        node attributes of DESIGN.md.
    parent_rows : numpy.ndarray
        The row of each node's parent in `nodes`, -1 for a root: the links in
        the form vectorized work wants.
    names : dict
        Each tree's name (None where it has none).
    problems : list of Problem
        The broken links that were dropped: the source's own (cycles of
        forks, given as `problems`) first, then the parent links'.

    `notes` (node id -> `NodeNote`, as `Forest.read` reads them) fill the
    `note` and `preferred` columns; `active` is the source's, or each tree's
    path to its last node (`convgraph.model.marks.mark_forest`).
    """

    def __init__(
        self,
        nodes: pd.DataFrame,
        names: dict[str, Any],
        problems: Iterable[Problem] = (),
        notes: Mapping[str, NodeNote] | None = None,
    ):
        from convgraph.model.marks import mark_forest

        self.nodes, self.parent_rows, link_problems = _checked(nodes)
        mark_forest(self.nodes, self.parent_rows, notes)
        self.problems = [*problems, *link_problems]
        self.names = names
        self._rows_by_tree: dict[Any, np.ndarray] | None = None
        self._depths: np.ndarray | None = None

    @classmethod
    def read(
        cls,
        db: str | os.PathLike[str] | Source | None = None,
        text: bool = True,
        conversation_ids: Iterable[str] | None = None,
        progress: Callable[[str], object] | None = None,
    ) -> Forest:
        """Read every tree of a database, or only the trees named.

        Parameters
        ----------
        db
            A path to a `logs.db`, an open `Source`, or None for llm's own.
        text
            False leaves the prompt, system and response out (None): most of a
            file's bytes, and not needed for structure and usage.
        conversation_ids
            Read only the trees these ids name (a legacy conversation id, or
            any thread id of a message-store tree), each once, in the order
            first named, with queries about those trees only. None or empty:
            every tree, read at once.
        progress
            Called with a label as each stage begins (opening, reading, once
            per tree when trees are named, checking the links): for a
            progress bar.

        Raises
        ------
        UnknownConversation
            An id names no conversation, or one without nodes.
        DatabaseError
        """
        step = progress or (lambda label: None)
        named = list(conversation_ids or ())
        step("Opening the database")
        with _opened(db) as logs:
            if named:
                nodes, names, problems = _read_named(logs, named, text, step)
            else:
                step("Reading every conversation")
                nodes, names = logs.read_forest(text=text)
                problems = [*logs.record_problems, *logs.fork_problems()]
            from convgraph.store.notes import read_notes

            notes = read_notes(logs)
        step("Checking parent links")
        return cls(nodes, names, problems, notes)

    def __len__(self) -> int:
        return len(self.nodes)

    def _repr_html_(self) -> str:
        """Jupyter shows a forest as its statistics table."""
        from convgraph.present.notebook import forest_html

        return forest_html(self)

    def __repr__(self) -> str:
        return (
            f"<Forest: {len(self.nodes)} nodes in {len(self.tree_ids)} conversations,"
            f" {len(self.problems)} problems>"
        )

    @property
    def tree_ids(self) -> list[str]:
        """The trees' ids, in the order of their first node."""
        return list(self.nodes["tree_id"].drop_duplicates())

    @property
    def depths(self) -> np.ndarray:
        """Each node's depth (a root is 0), aligned with `nodes`' rows."""
        if self._depths is None:
            self._depths = root_pointers(self.parent_rows)[1]
        return self._depths

    @property
    def edges(self) -> pd.DataFrame:
        """One row per checked link: `parent`, `child`, `tree_id`."""
        linked = self.nodes[self.nodes["parent_id"].notna()]
        return (
            linked[["parent_id", "id", "tree_id"]]
            .rename(columns={"parent_id": "parent", "id": "child"})
            .reset_index(drop=True)
        )

    def tree(self, tree_id: str) -> nx.DiGraph:
        """The DiGraph of one conversation tree, built from the table."""
        if self._rows_by_tree is None:
            self._rows_by_tree = self.nodes.groupby("tree_id", sort=False).indices
        if tree_id not in self._rows_by_tree:
            raise UnknownConversation(tree_id)
        rows = self.nodes.iloc[self._rows_by_tree[tree_id]]
        records = [_plain(record) for record in rows.to_dict("records")]
        parents = {record["id"]: record["parent_id"] for record in records}
        return build_graph(tree_id, self.names.get(tree_id), records, parents)

    def trees(self) -> Iterator[nx.DiGraph]:
        """Every tree's DiGraph, one at a time.

        Built from one pass over the table: each column turned into plain
        values (None for a missing one, int for a count) once, and the rows
        grouped by tree once, so drawing or exporting the whole forest costs
        time linear in its nodes, not a pandas look-up per tree.
        """
        if self._rows_by_tree is None:
            self._rows_by_tree = self.nodes.groupby("tree_id", sort=False).indices
        columns = {
            name: self.nodes[name].astype(object).where(self.nodes[name].notna(), None)
            for name in ("id", "parent_id", *NODE_ATTRIBUTES)
        }
        records = [
            dict(zip(columns, values, strict=True))
            for values in zip(
                *(column.tolist() for column in columns.values()), strict=True
            )
        ]
        for tree_id in self.tree_ids:
            rows = [records[row] for row in self._rows_by_tree[tree_id]]
            parents = {record["id"]: record["parent_id"] for record in rows}
            yield build_graph(tree_id, self.names.get(tree_id), rows, parents)


def _read_named(
    logs: Source,
    conversation_ids: Iterable[str],
    text: bool,
    step: Callable[[str], object],
) -> tuple[pd.DataFrame, dict[str, Any], list[Problem]]:
    """The nodes, names and fork problems of the trees these ids name."""
    import pandas as pd

    named: dict[str, str] = {}  # each tree once, with the id that named it
    for conversation_id in conversation_ids:
        named.setdefault(logs.tree_id_of_conversation(conversation_id), conversation_id)
    records: list[dict[str, Any]] = []
    names: dict[str, Any] = {}
    problems: list[Problem] = []
    for tree_id, named_as in named.items():
        step(f"Reading {tree_id}")
        tree = logs.read_tree(tree_id)
        if not tree.records:
            raise UnknownConversation(named_as)
        records.extend(tree.records)
        names[tree_id] = tree.name
        problems.extend(tree.problems)
    nodes = pd.DataFrame.from_records(records, columns=NODE_COLUMNS)
    if not text:
        # One tree's texts are little to read; dropping them keeps the table
        # the same as a whole-file read without texts.
        for name in TEXT_ATTRIBUTES:
            nodes[name] = None
    return nodes, names, problems


def _plain(record: dict[str, Any]) -> dict[str, Any]:
    """NaN and NA as None, numpy integers as int: the node contract's types."""
    import pandas as pd

    for key, value in record.items():
        if value is None:
            continue
        if pd.isna(value):
            record[key] = None
        elif key in INTEGER_ATTRIBUTES:
            record[key] = int(value)
    return record


def _checked(nodes: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray, list[Problem]]:
    """Drop the broken parent links of the whole table, vectorized."""
    import numpy as np
    import pandas as pd

    # The readers hand over tables already in shape; converting them again
    # would copy a million rows for nothing. A new frame all the same: the
    # caller's table stays as it was.
    if not nodes.index.equals(pd.RangeIndex(len(nodes))):
        nodes = nodes.reset_index(drop=True)
    nodes = conform_nodes(nodes)
    ids = pd.Index(nodes["id"])
    has_parent = nodes["parent_id"].notna().to_numpy()
    if PARENT_ROWS in nodes.columns:
        # The reader found the parents' rows already (`contract.PARENT_ROWS`).
        parent_index = nodes.pop(PARENT_ROWS).to_numpy(dtype=np.int64)
    else:
        parent_index = ids.get_indexer(nodes["parent_id"].where(has_parent, None))
    own_index = np.arange(len(nodes))
    tree = pd.factorize(nodes["tree_id"])[0]  # codes: cheap on categories

    self_parent = has_parent & (parent_index == own_index)
    missing = has_parent & (parent_index < 0)
    safe_index = np.where(parent_index < 0, own_index, parent_index)
    cross = has_parent & ~missing & (tree[safe_index] != tree)
    broken = self_parent | missing | cross

    problems = []
    if broken.any():
        tree_of_id = dict(zip(nodes["id"], nodes["tree_id"], strict=True))
        kinds = np.select(
            [self_parent, missing], [SELF_PARENT, MISSING_PARENT], CROSS_CONVERSATION
        )
        for row in np.flatnonzero(broken):
            parent = nodes.at[row, "parent_id"]
            problems.append(
                link_problem(
                    str(kinds[row]),
                    nodes.at[row, "id"],
                    parent,
                    nodes.at[row, "conversation_id"],
                    str(tree_of_id.get(parent, "")),
                )
            )
    parent_index = np.where(broken | ~has_parent, -1, parent_index)

    on_cycles = ~reaches_root(parent_index)
    if on_cycles.any():
        rows = np.flatnonzero(on_cycles)
        node_ids = nodes["id"].to_numpy()
        parents = {node_ids[row]: node_ids[parent_index[row]] for row in rows}
        conversation_of = dict(
            zip(node_ids[rows], nodes["conversation_id"].to_numpy()[rows], strict=True)
        )
        cycle_problems = break_cycles(parents, list(parents), conversation_of)
        problems.extend(cycle_problems)
        for problem in cycle_problems:
            parent_index[ids.get_loc(problem.node_id)] = -1

    node_ids = nodes["id"].to_numpy()
    nodes["parent_id"] = pd.Series(
        np.where(parent_index >= 0, node_ids[np.maximum(parent_index, 0)], None),
        dtype=object,
    )
    return nodes, parent_index, problems
