"""Every conversation tree of a source as tables: the `Forest`.

Work on the whole file reads every node into one pandas table, checks its
links with vectorized operations (`convgraph.links.integrity.check_links_table`:
a hash of the parent ids and numpy pointer jumping, not a walk per node), marks
the branches (`convgraph.model.marks.mark_tree_table`) and builds a DiGraph per
conversation only when asked for (`ConversationTree.from_records`, as the
one-tree path builds it). A
command about one conversation never comes here: `convgraph.model.loading`
reads that tree alone, without pandas.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import numpy as np
import pandas as pd

from convgraph.contract import (
    INTEGER_COLUMNS,
    NODE_ATTRIBUTES,
    PARENT_ROWS,
    PARTS,
    PLACE_ATTRIBUTES,
)
from convgraph.errors import UnknownConversation
from convgraph.links.integrity import Problem, check_links_table
from convgraph.links.pointer_jumping import ids_at_rows, root_pointers
from convgraph.model.marks import hidden_records_table, mark_tree_table
from convgraph.sources import Source, opened
from convgraph.sources.notes import NodeNote, read_notes
from convgraph.sources.source import ProgressCallback, no_progress
from convgraph.sources.tables import conform_nodes

if TYPE_CHECKING:
    from convgraph.model.tree import ConversationTree

#: About how many rows `Forest.tree_rows` gives at a time.
TREE_BATCH = 20_000


class Forest:
    """Every conversation tree of a database, as tables.

    Attributes
    ----------
    nodes : pandas.DataFrame
        One row per node in log order: `id`, `tree_id`, `parent_id` (checked:
        missing for roots and for nodes whose stored link was broken), and the
        node attributes (docs/design.md#the-node-contract). The ids, parents,
        times and texts are Arrow's strings where pyarrow is installed
        (`contract.STRING_COLUMNS`: a missing one is pd.NA; the trees built
        from the table give None).
    parent_rows : numpy.ndarray
        The row of each node's parent in `nodes`, -1 for a root: the links in
        the form vectorized work wants.
    names : dict
        Each tree's name (None where it has none).
    problems : list of Problem
        The broken links that were dropped: the source's own (cycles of
        forks, given as `problems`) first, then the parent links'.

    hidden : dict
        How many nodes of each tree lie in branches the user hid (`convgraph
        hide`), left out of `nodes` (trees with none are not named); with
        `hidden=True` they stay in the table and are counted all the same.

    `notes` (node id -> `NodeNote`, as `Forest.read` reads them) fill the
    `note` and `preferred` columns and say which branches are hidden;
    `active` is the source's, or each tree's path to its last node
    (`convgraph.model.marks.mark_tree_table`), among the nodes kept. `calls`
    names the node of each call inside a run (`Source.calls`), which every
    tree built keeps (`ConversationTree.from_records`).
    """

    def __init__(
        self,
        nodes: pd.DataFrame,
        names: dict[str, Any],
        problems: Iterable[Problem] = (),
        notes: Mapping[str, NodeNote] | None = None,
        calls: Mapping[str, str] | None = None,
        hidden: bool = False,
    ):
        self.nodes, self.parent_rows, link_problems = _checked(nodes)
        in_hidden = hidden_records_table(self.nodes["id"], self.parent_rows, notes)
        counted = self.nodes["tree_id"][in_hidden].astype(str).value_counts(sort=False)
        self.hidden: dict[str, int] = {str(k): int(v) for k, v in counted.items()}
        if in_hidden.any() and not hidden:
            self.nodes, self.parent_rows = _without_branches(
                self.nodes, self.parent_rows, in_hidden
            )
        mark_tree_table(self.nodes, self.parent_rows, notes)
        self.problems = [*problems, *link_problems]
        self.names = names
        kept = None if hidden or not self.hidden else set(self.nodes["id"].tolist())
        self.calls = {
            call: node
            for call, node in (calls or {}).items()
            if kept is None or node in kept
        }
        self._calls_by_tree: dict[Any, dict[str, str]] | None = None
        self._rows_by_tree: dict[Any, np.ndarray] | None = None
        self._depths: np.ndarray | None = None

    @classmethod
    def read(
        cls,
        db: str | os.PathLike[str] | Source | None = None,
        text: bool = True,
        conversation_ids: Iterable[str] | None = None,
        progress: ProgressCallback | None = None,
        texts: Collection[str] | None = None,
        hidden: bool = False,
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
            Told how far the read has come, `(phase, done, total)`: an llm
            file's tables row by row as they are read ("reading
            responses"...: per chunk, never per row), or the trees named one
            by one ("reading conversations"), then "linking the nodes" and
            "checking parent links" (no total): for a progress bar.
        texts
            With `text`, the text columns needed (of `prompt`, `system`,
            `response`); None: all three. Where the reader can leave the
            others out (an llm file read by columns) they are missing; other
            readers read every text and keep them.
        hidden
            Keep the branches the user hid (`convgraph hide`); by default
            they are left out (and counted in `hidden`).

        Raises
        ------
        UnknownConversation
            An id names no conversation, or one without nodes.
        DatabaseError
        """
        report = progress or no_progress
        named = list(conversation_ids or ())
        asked: bool | Collection[str] = text if texts is None or not text else texts
        with opened(db) as logs:
            # Each tree once, with the id that named it (for the error).
            trees: dict[str, str] = {}
            for conversation_id in named:
                tree_id = logs.tree_id_of_conversation(conversation_id)
                trees.setdefault(tree_id, conversation_id)
            try:
                read = logs.read(asked, list(trees) if named else None, report)
            except UnknownConversation as error:
                given = trees.get(error.args[0], error.args[0])
                raise UnknownConversation(given) from None
            notes = read_notes(logs)
        report("checking parent links", 0, None)
        return cls(read.nodes, read.names, read.problems, notes, read.calls, hidden)

    def __len__(self) -> int:
        return len(self.nodes)

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

    def _rows_of_trees(self) -> dict[Any, np.ndarray]:
        """Each tree's rows, grouped once."""
        if self._rows_by_tree is None:
            groups = self.nodes.groupby("tree_id", sort=False, observed=True)
            # pandas gives each group's positions as an integer array.
            self._rows_by_tree = cast(dict[Any, np.ndarray], groups.indices)
        return self._rows_by_tree

    def tree(self, tree_id: str) -> ConversationTree:
        """The DiGraph of one conversation tree, built from the table."""
        rows_by_tree = self._rows_of_trees()
        if tree_id not in rows_by_tree:
            raise UnknownConversation(tree_id)
        rows = self.nodes.iloc[rows_by_tree[tree_id]]
        records = [_plain(record) for record in rows.to_dict("records")]
        parents = {record["id"]: record["parent_id"] for record in records}
        from convgraph.model.tree import ConversationTree

        return ConversationTree.from_records(
            records,
            parents,
            tree_id,
            self.names.get(tree_id),
            calls=self._calls_of(tree_id),
        )

    def _calls_of(self, tree_id: Any) -> dict[str, str]:
        """The calls inside the runs of one tree, by call id: grouped once."""
        if not self.calls:
            return {}
        if self._calls_by_tree is None:
            tree_of = dict(
                zip(
                    self.nodes["id"].tolist(),
                    self.nodes["tree_id"].tolist(),
                    strict=True,
                )
            )
            self._calls_by_tree = {}
            for call, node in self.calls.items():
                if node in tree_of:
                    self._calls_by_tree.setdefault(tree_of[node], {})[call] = node
        return self._calls_by_tree.get(tree_id, {})

    def trees(self, progress: ProgressCallback | None = None) -> TreeStream:
        """Every tree's DiGraph, one at a time (an iterator whose `len` is
        how many it has still to give, so that a writer can show a total).

        Built from one pass over the table: each column turned into plain
        values (None for a missing one, int for a count) once, and the rows
        grouped by tree once, so drawing or exporting the whole forest costs
        time linear in its nodes, not a pandas look-up per tree.

        `progress` is told the trees built, `("building trees", done,
        total)`, about a hundred times over the forest.
        """
        tree_ids = self.tree_ids
        return TreeStream(self._built(tree_ids, progress or no_progress), len(tree_ids))

    def _built(
        self, tree_ids: list[str], report: ProgressCallback
    ) -> Iterator[ConversationTree]:
        """The trees of `trees`, built."""
        # networkx only where DiGraphs are built: the table-direct work
        # (`tree_rows`, a whole-forest drawing) never imports it.
        from convgraph.model.tree import ConversationTree

        report("building trees", 0, None)
        rows_by_tree = self._rows_of_trees()
        keys = (*NODE_ATTRIBUTES, *self._places())
        # Each column once as plain values (None for a missing one, int for
        # a count); each tree's dicts only when it is built, so that a
        # million nodes are never a million dicts at once.
        ids, parent_ids, *columns = (
            self.nodes[name]
            .astype(object)
            .where(self.nodes[name].notna(), None)
            .to_numpy()
            for name in ("id", "parent_id", *keys)
        )
        every = max(1, len(tree_ids) // 100)
        for done, tree_id in enumerate(tree_ids):
            if done % every == 0:
                report("building trees", done, len(tree_ids))
            rows = rows_by_tree[tree_id]
            yield ConversationTree.from_columns(
                ids[rows].tolist(),
                parent_ids[rows].tolist(),
                [
                    dict(zip(keys, values, strict=True))
                    for values in zip(
                        *(column[rows].tolist() for column in columns), strict=True
                    )
                ],
                tree_id,
                self.names.get(tree_id),
                calls=self._calls_of(tree_id),
            )
        report("building trees", len(tree_ids), len(tree_ids))

    def tree_rows(
        self,
        columns: Iterable[str],
        progress: ProgressCallback | None = None,
        batch: int = TREE_BATCH,
    ) -> Iterator[TreeRows]:
        """The trees' rows in batches of whole trees, each column of
        `columns` as plain values: the table-direct form of `trees`, for work
        that needs a few columns of every tree and no DiGraph (the drawing of
        the whole forest, `convgraph.present.text_tree.forest_drawings`).

        The trees come in `tree_ids`' order, each tree's rows in log order;
        a batch holds whole trees and about `batch` rows (one tree larger
        than that is a batch alone), so that the plain values of a million
        nodes are never held at once. Values are as `trees` gives them: None
        for a missing one, int for a count. `progress` is told the trees
        given, `("building trees", done, total)`, about a hundred times
        over the forest.
        """
        report = progress or no_progress
        report("building trees", 0, None)
        columns = list(columns)
        codes, tree_ids = pd.factorize(self.nodes["tree_id"], sort=False)
        # Rows grouped by tree, trees in order of their first row, each
        # tree's rows in log order (a stable sort keeps it).
        order = np.argsort(codes, kind="stable")
        ends = np.cumsum(np.bincount(codes, minlength=len(tree_ids)))
        position = np.empty(len(order), dtype=np.int64)
        position[order] = np.arange(len(order))
        # Each row's parent as a position in that order, -1 for a root: the
        # parent is in the same tree, so in the same batch.
        parents = np.where(
            self.parent_rows >= 0, position[np.maximum(self.parent_rows, 0)], -1
        )[order]
        taking = {name: _Taker(self.nodes[name]) for name in columns}
        total, done, start = len(tree_ids), 0, 0
        every = max(1, total // 100)
        while done < total:
            # Whole trees up to about `batch` rows, at least one.
            last = max(
                int(np.searchsorted(ends, start + batch, side="right")), done + 1
            )
            stop = int(ends[last - 1])
            rows = order[start:stop]
            values = {name: taking[name].values(rows) for name in columns}
            batch_ids = [str(tree_id) for tree_id in tree_ids[done:last]]
            if done // every != last // every or done == 0:
                report("building trees", done, total)
            yield TreeRows(
                batch_ids,
                [self.names.get(tree_id) for tree_id in batch_ids],
                [int(end) - start for end in ends[done:last]],
                (parents[start:stop] - start).clip(min=-1).tolist(),
                values,
            )
            # The batch given is the caller's to drop: hold none of it while
            # the next is made.
            del values
            done, start = last, stop
        report("building trees", total, total)

    def _places(self) -> list[str]:
        """The optional place attributes the source gave (an agent's project
        and git branch), which the trees carry too."""
        return [name for name in PLACE_ATTRIBUTES if name in self.nodes.columns]


class TreeRows(NamedTuple):
    """A batch of whole trees' rows (`Forest.tree_rows`), numbered from 0
    in the batch: the trees' ids and names, where each tree's rows end,
    each row's parent's number (-1 for a root), and the columns asked for
    as plain values (by column name, a list each)."""

    tree_ids: list[str]
    names: list[Any]
    ends: list[int]
    parents: list[int]
    columns: dict[str, list[Any]]


class _Taker:
    """The values of one column at the rows of a batch, as `Forest.trees`
    gives them: None for a missing one, int for a count (`values`).

    Arrow's strings are made Python's by Arrow. Arrow's take from a column
    read in many chunks joins every chunk first, the whole column again for
    each batch: a batch whose rows lie close together (trees logged one
    after another) is taken from the slice they span; one spread over the
    column (a random branching file's trees) from the column joined once."""

    def __init__(self, column: pd.Series):
        self.column = column
        self.strings = getattr(column.dtype, "storage", None) == "pyarrow"
        self._joined: Any = None

    def values(self, rows: np.ndarray) -> list[Any]:
        """The column's values at `rows` (positions in the table)."""
        low, high = (int(rows.min()), int(rows.max()) + 1) if len(rows) else (0, 0)
        if not self.strings:
            values = self.column.iloc[low:high].take(rows - low)
            if values.dtype == bool:
                return values.tolist()
            return values.astype(object).where(values.notna(), None).tolist()
        if self._joined is None and high - low > 4 * len(rows):
            self._joined = self.column.array.__arrow_array__().combine_chunks()
        taken = (
            self._joined.take(rows)
            if self._joined is not None
            else self.column.array[low:high].__arrow_array__().take(rows - low)
        )
        found: list[Any] = taken.to_pylist()
        return found


class TreeStream(Iterator["ConversationTree"]):
    """The trees `Forest.trees` gives, one at a time; `len` says how many
    are still to come."""

    def __init__(self, trees: Iterator[ConversationTree], count: int):
        self._trees = trees
        self._left = count

    def __next__(self) -> ConversationTree:
        tree = next(self._trees)
        self._left -= 1
        return tree

    def __len__(self) -> int:
        return self._left


def _plain(record: dict[Any, Any]) -> dict[Any, Any]:
    """NaN and NA as None, numpy integers as int: the node contract's types
    (a node's parts, a list, as they are)."""
    for key, value in record.items():
        if value is None or key == PARTS:
            continue
        if pd.isna(value):
            record[key] = None
        elif key in INTEGER_COLUMNS:
            record[key] = int(value)
    return record


def _without_branches(
    nodes: pd.DataFrame, parent_rows: np.ndarray, dropped: np.ndarray
) -> tuple[pd.DataFrame, np.ndarray]:
    """The table and its parent rows without the `dropped` rows: whole
    branches (a dropped row's children are dropped too), so every kept
    row's parent is kept and only needs its new row."""
    kept = ~dropped
    new_row = np.cumsum(kept) - 1
    parents = parent_rows[kept]
    return (
        nodes[kept].reset_index(drop=True),
        np.where(parents >= 0, new_row[np.maximum(parents, 0)], -1),
    )


def _checked(nodes: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray, list[Problem]]:
    """The table in the contract's shape, its parent links checked (broken
    ones dropped: `parent_id` None), each row's parent row, and the problems."""
    # The readers hand over tables already in shape; converting them again
    # would copy a million rows for nothing. A new frame all the same: the
    # caller's table stays as it was.
    if not nodes.index.equals(pd.RangeIndex(len(nodes))):
        nodes = nodes.reset_index(drop=True)
    nodes = conform_nodes(nodes)
    # The reader may have found the parents' rows already (`PARENT_ROWS`).
    given = (
        nodes.pop(PARENT_ROWS).to_numpy(dtype=np.int64)
        if PARENT_ROWS in nodes.columns
        else None
    )
    parent_rows, problems = check_links_table(nodes, given)
    if not problems:
        # Every stored parent names its row, in its tree, off any cycle:
        # `parent_id` is right as it is (a root's missing), no need to take
        # a million ids again.
        return nodes, parent_rows, problems
    parent_ids = ids_at_rows(nodes["id"], parent_rows)
    nodes["parent_id"] = pd.Series(
        parent_ids,
        index=nodes.index,
        copy=False,
        # An object array stays one: pandas 3 would infer its string dtype.
        dtype=object if isinstance(parent_ids, np.ndarray) else None,
    )
    return nodes, parent_rows, problems
