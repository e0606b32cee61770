"""What every reader gives: the `Source` interface, one tree's raw records, and
log order.

llm's `logs.db` (`LogDatabase`) and an app's chat export (`ChatExport`) are
read through the same questions — which trees there are, which tree holds a
node, one tree's records, the whole forest as a table — so the forest and the
commands never ask which kind of file they hold. The pieces both need live
here, apart from the readers, so that no reader imports another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convgraph.links.integrity import Problem

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class TreeRecords:
    """The raw rows of one conversation tree, before its links are checked.

    `records` are dicts with `id`, `tree_id`, `parent_id` (as stored, maybe
    invalid) and the node attributes, in log order; `problems` the tree's
    broken links that are not parent links (cycles of forks); `calls` the
    node of each call inside a run (a tool chain folded into one node,
    `runs`), by the call's id.
    """

    tree_id: str
    name: str | None
    records: list[dict[str, Any]]
    problems: list[Problem] = field(default_factory=list)
    calls: dict[str, str] = field(default_factory=dict)


class Source:
    """A file of conversations, read-only: the questions every reader answers.

    A reader names trees (`tree_ids`, `tree_id_of_conversation`,
    `tree_id_of_node`), reads one (`read_tree`) or all of them as one table
    (`read_forest`), and reports what is no node (`record_problems`, filled by
    the last read; `fork_problems`). `legacy`, `store` and `conn` are llm's
    SQL readers and connection, None where no SQL is behind the file.
    """

    path: Path
    legacy: Any = None
    store: Any = None
    conn: Any = None
    #: Rows that are no node (no id, no thread, an id seen before), found by
    #: the last `read_forest` or `read_tree`.
    record_problems: list[Problem]
    #: The node of each call inside a run (`TreeRecords.calls`), found by
    #: the last `read_forest`.
    calls: dict[str, str] = {}

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Let go of the file."""

    @property
    def generations(self) -> list[str]:
        """Which storage formats the file holds, oldest first."""
        raise NotImplementedError

    def tree_ids(self) -> list[str]:
        """Every conversation tree's id, in the order of its first node."""
        raise NotImplementedError

    def tree_id_of_conversation(self, conversation_id: str) -> str:
        """The tree that `conversation_id` names."""
        raise NotImplementedError

    def tree_id_of_node(self, node_id: str) -> str:
        """The id of the conversation tree that holds `node_id`."""
        raise NotImplementedError

    def node_of(self, node_id: str) -> str:
        """The id of the node that holds `node_id`: itself, or, for a call
        inside a run (a tool chain is one node, `runs`), the run's node."""
        return self.read_tree(self.tree_id_of_node(node_id)).calls.get(node_id, node_id)

    def path_by_links(self, node_id: str) -> list[str] | None:
        """The ids from the root down to `node_id` by stored links alone, or
        None where only the whole tree gives the answer."""
        return None

    def read_tree(self, tree_id: str) -> TreeRecords:
        """The rows of one tree, read with questions about that tree only."""
        raise NotImplementedError

    def read_forest(self, text: bool = True) -> tuple[pd.DataFrame, dict[str, Any]]:
        """Every node as one table (in log order), and the name of every tree."""
        raise NotImplementedError

    def fork_problems(self) -> list[Problem]:
        """Cycles of forks, where the file has forks."""
        return []


def log_order(record: dict[str, Any]) -> tuple[str, str]:
    """Sort key of log order (docs/design.md#the-node-contract): `datetime_utc`,
    then `id`."""
    return (record["datetime_utc"] or "", record["id"])


def sort_log_order(nodes: pd.DataFrame) -> pd.DataFrame:
    """The table in log order, with a fresh 0..n-1 index.

    llm appends as it logs, so rows read in storage order are nearly always in
    log order already: checking that is one vectorized comparison, sorting a
    million string keys is seconds.
    """
    key = nodes["datetime_utc"].fillna("").to_numpy()
    ids = nodes["id"].to_numpy()
    if (
        len(nodes) < 2
        or (
            (key[1:] > key[:-1]) | ((key[1:] == key[:-1]) & (ids[1:] >= ids[:-1]))
        ).all()
    ):
        return nodes.reset_index(drop=True)
    order = (
        nodes.assign(_key=key)
        .sort_values(["_key", "id"], kind="stable")
        .drop(columns="_key")
    )
    return order.reset_index(drop=True)
