"""Every conversation tree of a source as tables: the `Forest`.

The whole file in one pandas table, its links checked and its branches marked
by the rules' table forms; a DiGraph per tree only when asked for. A command
about one conversation reads it with `convgraph.model.loading`, without pandas.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import numpy as np
import pandas as pd

from convgraph.contract import (
    INTEGER_COLUMNS,
    NODE_ATTRIBUTES,
    OPTIONAL_ATTRIBUTES,
    PARENT_ROWS,
    PARTS,
)
from convgraph.errors import UnknownConversation
from convgraph.links.integrity import Problem, check_links_table
from convgraph.links.pointer_jumping import ids_at_rows, root_pointers
from convgraph.model.marks import hidden_records_table, mark_tree_table
from convgraph.sources import Source
from convgraph.sources.notes import NodeNote, read_notes
from convgraph.sources.source import ProgressCallback, no_progress
from convgraph.sources.tables import conform_nodes

if TYPE_CHECKING:
    from convgraph.model.tree import ConversationTree

TREE_BATCH = 20_000


class Forest:
    """Every conversation tree of a database, as tables.

    `nodes`: one row per node in log order, `id`, `tree_id`, the checked
    `parent_id` (missing for roots and broken links) and the node attributes
    (docs/design.md#the-node-contract), strings as Arrow's where pyarrow is
    installed. `parent_rows`: each node's parent row, -1 for a root.
    `problems`: the source's (fork cycles) then the links'. `hidden`: how many
    nodes of each tree lie in hidden branches, left out of `nodes` unless
    `hidden=True`. `notes` fill `note` and `preferred`; `calls` names the node
    of each call inside a run.
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
        in_hidden = hidden_records_table(self.nodes, self.parent_rows, notes)
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
        source: Source,
        text: bool = True,
        conversation_ids: Iterable[str] | None = None,
        progress: ProgressCallback | None = None,
        texts: Collection[str] | None = None,
        hidden: bool = False,
    ) -> Forest:
        """Read every tree of an open `source` (a path: `convgraph.open(path).forest()`),
        or only the trees named. `text=False` leaves the texts out; `texts` names the
        ones needed (readers that cannot leave some out keep them). `conversation_ids`:
        only these trees (any id of a tree, each once, in order first named). `progress`
        is told `(phase, done, total)`. `hidden` keeps the hidden branches. Raises
        UnknownConversation (an id names no tree with nodes), DatabaseError, TypeError.
        """
        if not isinstance(source, Source):
            name = type(source).__name__
            raise TypeError(
                f"Forest.read takes a Source, not {name}: a path is read with"
                " convgraph.open(path).forest()"
            )
        report = progress or no_progress
        named = list(conversation_ids or ())
        asked: bool | Collection[str] = text if texts is None or not text else texts
        # Each tree once, with the id that named it for the error.
        trees: dict[str, str] = {}
        for conversation_id in named:
            tree_id = source.tree_id_of_conversation(conversation_id)
            trees.setdefault(tree_id, conversation_id)
        try:
            read = source.read(asked, list(trees) if named else None, report)
        except UnknownConversation as error:
            given = trees.get(error.args[0], error.args[0])
            raise UnknownConversation(given) from None
        notes = read_notes(source)
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
        if self._rows_by_tree is None:
            groups = self.nodes.groupby("tree_id", sort=False, observed=True)
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
        """Every tree's DiGraph, one at a time, from one pass over the table
        (`len`: how many are still to come). `progress` is told
        `("building trees", done, total)`.
        """
        tree_ids = self.tree_ids
        return TreeStream(self._built(tree_ids, progress or no_progress), len(tree_ids))

    def _built(
        self, tree_ids: list[str], report: ProgressCallback
    ) -> Iterator[ConversationTree]:
        # networkx only here: the table-direct work never imports it.
        from convgraph.model.tree import ConversationTree

        report("building trees", 0, None)
        rows_by_tree = self._rows_of_trees()
        keys = (*NODE_ATTRIBUTES, *self._places())
        # Each tree's dicts only when it is built: never a dict per node at once.
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
        """The trees' rows, `columns` as plain values, in batches of whole
        trees of about `batch` rows (a larger tree alone): `trees` without
        DiGraphs, in `tree_ids`' order, each tree in log order.
        """
        report = progress or no_progress
        report("building trees", 0, None)
        columns = list(columns)
        codes, tree_ids = pd.factorize(self.nodes["tree_id"], sort=False)
        # A stable sort keeps each tree's rows in log order.
        order = np.argsort(codes, kind="stable")
        ends = np.cumsum(np.bincount(codes, minlength=len(tree_ids)))
        position = np.empty(len(order), dtype=np.int64)
        position[order] = np.arange(len(order))
        # A parent is in the same tree, so in the same batch.
        parents = np.where(
            self.parent_rows >= 0, position[np.maximum(self.parent_rows, 0)], -1
        )[order]
        taking = {name: _Taker(self.nodes[name]) for name in columns}
        total, done, start = len(tree_ids), 0, 0
        every = max(1, total // 100)
        while done < total:
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
            # Hold none of the batch given while the next is made.
            del values
            done, start = last, stop
        report("building trees", total, total)

    def _places(self) -> list[str]:
        """The place attributes the source gave (an agent's project, branch)."""
        return [name for name in OPTIONAL_ATTRIBUTES if name in self.nodes.columns]


class TreeRows(NamedTuple):
    """A batch of `Forest.tree_rows`, rows numbered from 0: where each
    tree's rows end, each row's parent (-1 for a root), and the columns."""

    tree_ids: list[str]
    names: list[Any]
    ends: list[int]
    parents: list[int]
    columns: dict[str, list[Any]]


class _Taker:
    """One column's plain values at a batch's rows. Arrow's take joins every
    chunk first: close rows are taken from the slice they span, spread ones
    from the column joined once."""

    def __init__(self, column: pd.Series):
        self.column = column
        self.strings = getattr(column.dtype, "storage", None) == "pyarrow"
        self._joined: Any = None

    def values(self, rows: np.ndarray) -> list[Any]:
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
        return cast(list[Any], taken.to_pylist())


class TreeStream(Iterator["ConversationTree"]):
    """The trees `Forest.trees` gives; `len` says how many are still to come."""

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
    """NaN and NA as None, numpy integers as int (parts, a list, as they are)."""
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
    """The table and parent rows without `dropped`: whole branches, so every
    kept row's parent is kept."""
    kept = ~dropped
    new_row = np.cumsum(kept) - 1
    parents = parent_rows[kept]
    return (
        nodes[kept].reset_index(drop=True),
        np.where(parents >= 0, new_row[np.maximum(parents, 0)], -1),
    )


def _checked(nodes: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray, list[Problem]]:
    """The table in the contract's shape with its links checked, each row's
    parent row, and the problems."""
    if not nodes.index.equals(pd.RangeIndex(len(nodes))):
        nodes = nodes.reset_index(drop=True)
    nodes = conform_nodes(nodes)
    given = (
        nodes.pop(PARENT_ROWS).to_numpy(dtype=np.int64)
        if PARENT_ROWS in nodes.columns
        else None
    )
    parent_rows, problems = check_links_table(nodes, given)
    if not problems:
        # Every stored parent_id is right: no need to take the ids again.
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
