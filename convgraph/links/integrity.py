"""Find the parent links that break the tree's rules, and drop them.

A node that is its own parent, names no parent, one in another conversation
(docs/design.md#the-same-conversation-rule), or is on a cycle (of nodes, or of
`forked_from` threads) is a `Problem` and becomes a root: every tree is a tree."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from convgraph.links.rules import RECORDS, rule, table_form
from convgraph.text import counted

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

SELF_PARENT = "self-parent"
MISSING_PARENT = "missing-parent"
CROSS_CONVERSATION = "cross-conversation"
CYCLE = "cycle"
FORK_CYCLE = "fork-cycle"
#: Rows that cannot be nodes (data llm never writes): left out of every tree.
NO_ID = "no-id"
NO_THREAD = "no-thread"
DUPLICATE_ID = "duplicate-id"
#: A chat export's conversation without a prompt or an answer (0 nodes).
EMPTY_CONVERSATION = "empty-conversation"
#: Message ids an earlier conversation holds too (ChatGPT's "Branch in new
#: chat"): read qualified by the conversation's id.
SHARED_IDS = "shared-ids"
#: Merged reads (`sources.merging`): one id naming different things in two
#: sources; copies of a node that differ; a conversation listed twice.
ID_CLASH = "id-clash"
CHANGED_NODE = "changed-node"
DUPLICATE_CONVERSATION = "duplicate-conversation"
#: A token count negative or beyond any request: summed, priced at nothing.
IMPOSSIBLE_COUNT = "impossible-count"
#: A legacy row logged without a parent into a migrated file: stays a root.
UNPLACED = "unplaced"


class ParentWalk:
    """The ids from `start` up its parent links (`parent_of`: a mapping or
    callable, None for a root), asked lazily. Ends after a root, or before an
    id would come again: then `repeat` is that id (a cycle begins there)."""

    __slots__ = ("parent_of", "repeat", "start")

    def __init__(
        self,
        start: str | None,
        parent_of: Mapping[str, str | None] | Callable[[str], str | None],
    ):
        self.start = start
        # callable(), not isinstance(Mapping): the ABC check costs more than
        # most walks, and a walk is made per message.
        self.parent_of = parent_of if callable(parent_of) else parent_of.get
        self.repeat: str | None = None

    def __iter__(self) -> Iterator[str]:
        self.repeat = None
        parent_of = self.parent_of
        seen: set[str] = set()
        node = self.start
        while node is not None:
            if node in seen:
                self.repeat = node
                return
            seen.add(node)
            yield node
            node = parent_of(node)

    def cycle(self, walked: list[str]) -> list[str]:
        """The ids of `walked` (this walk's, in order) on the cycle it ended on."""
        return [] if self.repeat is None else walked[walked.index(self.repeat) :]


@dataclass(frozen=True)
class Problem:
    """One broken parent link: `node_id` became a root, `parent_id` is the
    parent it named, `cycle` the nodes of a cycle in parent order from
    `node_id`. In a fork cycle all of these are thread ids."""

    kind: str
    node_id: str
    parent_id: str | None
    conversation_id: str | None
    message: str
    cycle: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        record = asdict(self)
        record["cycle"] = list(self.cycle)
        return record


def link_problem(
    kind: str,
    node_id: str,
    parent_id: str,
    conversation_id: str | None,
    detail: str = "",
) -> Problem:
    """A `Problem` for a self, missing or cross-conversation parent."""
    messages = {
        SELF_PARENT: f"{node_id} is its own parent",
        MISSING_PARENT: f"{node_id} has parent {parent_id}, which does not exist",
        CROSS_CONVERSATION: f"{node_id} has parent {parent_id}"
        f" in another conversation ({detail})",
    }
    return Problem(kind, node_id, parent_id, conversation_id, messages[kind])


def record_problem(kind: str, count: int, table: str, node_id: str = "") -> Problem:
    """A `Problem` for `count` rows of `table` that are no node (for
    `DUPLICATE_ID`: rows beyond the first with the id `node_id`)."""
    rows = f"{counted(count, 'row')} of {table}"
    messages = {
        NO_ID: f"{rows} {'have' if count != 1 else 'has'} no id: left out",
        NO_THREAD: f"{rows} {'have' if count != 1 else 'has'} no thread_id: left out",
        DUPLICATE_ID: f"{node_id} is the id of {count + 1} rows: the first"
        " logged is read, the others left out",
    }
    return Problem(kind, node_id, None, None, messages[kind])


def break_cycles(
    parents: dict[str, str | None],
    order: Iterable[str],
    conversation_of: Mapping[str, str | None],
    kind: str = CYCLE,
) -> list[Problem]:
    """Drop one link of every cycle in `parents` (every parent a key or
    None), in place, and report it. The cycle's node first in `order` (log
    order) becomes the root. Each node is walked once."""
    position = {node: index for index, node in enumerate(order)}
    finished: set[str] = set()

    def unfinished_parent(node: str) -> str | None:
        parent = parents.get(node)
        return None if parent in finished else parent

    links = "forks" if kind == FORK_CYCLE else "parent links"
    problems = []
    for start in position:
        if start in finished:
            continue
        walk = ParentWalk(start, unfinished_parent)
        walked = list(walk)
        cycle = walk.cycle(walked)
        if cycle:
            first = min(cycle, key=position.__getitem__)
            turn = cycle.index(first)
            cycle = cycle[turn:] + cycle[:turn]
            said = f"{first} is on a cycle of {len(cycle)} {links}: "
            message = said + " -> ".join(cycle + [first])
            tree = conversation_of.get(first)
            problems.append(
                Problem(kind, first, parents[first], tree, message, tuple(cycle))
            )
            parents[first] = None
        finished.update(walked)
    return problems


@rule(RECORDS)
def check_links(
    records: list[dict[str, Any]], conversation_of_outsiders: Mapping[str, str]
) -> tuple[dict[str, str | None], list[Problem]]:
    """The valid parent of each of one tree's records (log order), and the
    problems. `conversation_of_outsiders` holds the parents outside the tree
    (a parent in neither is missing)."""
    ids = {record["id"] for record in records}
    parents: dict[str, str | None] = {}
    problems = []
    conversation_of = {record["id"]: record["conversation_id"] for record in records}
    for record in records:
        node, parent = record["id"], record["parent_id"]
        if parent is None or parent in ids and parent != node:
            parents[node] = parent
            continue
        parents[node] = None
        if parent == node:
            kind, detail = SELF_PARENT, ""
        elif parent in conversation_of_outsiders:
            kind, detail = CROSS_CONVERSATION, conversation_of_outsiders[parent]
        else:
            kind, detail = MISSING_PARENT, ""
        problems.append(
            link_problem(kind, node, parent, record["conversation_id"], detail)
        )
    problems.extend(break_cycles(parents, parents, conversation_of))
    return parents, problems


@table_form(check_links)
def check_links_table(
    nodes: pd.DataFrame, parent_rows: np.ndarray | None = None
) -> tuple[np.ndarray, list[Problem]]:
    """`check_links` of a nodes table: each valid parent row (-1 for a root)
    and the problems (cycles last). `parent_rows`: the reader's, if found."""
    # Here, not above: the one-tree path imports this module without numpy.
    import numpy as np
    import pandas as pd

    from convgraph.links.pointer_jumping import parent_rows_of, reaches_root

    # Only the rows of a problem become Python values.
    ids, stored = nodes["id"], nodes["parent_id"]
    has_parent = stored.notna().to_numpy(dtype=bool)
    if parent_rows is None:
        parent_rows = parent_rows_of(ids, stored)
    found = np.asarray(parent_rows, dtype=np.int64)
    own = np.arange(len(ids))
    tree = pd.factorize(nodes["tree_id"])[0]  # codes: cheap on categories

    self_parent = has_parent & (found == own)
    missing = has_parent & (found < 0)
    safe = np.where(found < 0, own, found)
    cross = has_parent & ~missing & (tree[safe] != tree)
    broken = self_parent | missing | cross

    problems = []
    if broken.any():
        rows = np.flatnonzero(broken)
        kinds = np.select(
            [self_parent, missing], [SELF_PARENT, MISSING_PARENT], CROSS_CONVERSATION
        )
        for row, node_id, parent_id, conversation_id, other_tree in zip(
            rows.tolist(),
            _values_at(ids, rows),
            _values_at(stored, rows),
            _values_at(nodes["conversation_id"], rows),
            _values_at(nodes["tree_id"], np.maximum(found[rows], 0)),
            strict=True,
        ):
            problems.append(
                link_problem(
                    str(kinds[row]),
                    node_id,
                    parent_id,
                    conversation_id,
                    str(other_tree) if cross[row] else "",
                )
            )
    checked = np.where(broken | ~has_parent, -1, found)

    # Only nodes reaching no root are on or below a cycle: walk those.
    on_cycles = np.flatnonzero(~reaches_root(checked))
    if len(on_cycles):
        cycle_ids = _values_at(ids, on_cycles)
        parents = dict(zip(cycle_ids, _values_at(ids, checked[on_cycles]), strict=True))
        conversation_of = dict(
            zip(cycle_ids, _values_at(nodes["conversation_id"], on_cycles), strict=True)
        )
        cycle_problems = break_cycles(parents, parents, conversation_of)
        problems.extend(cycle_problems)
        row_of = dict(zip(cycle_ids, on_cycles.tolist(), strict=True))
        for problem in cycle_problems:
            checked[row_of[problem.node_id]] = -1
    return checked, problems


def _values_at(column: pd.Series, rows: np.ndarray) -> list[Any]:
    """A column's values at `rows` as Python values, None where missing."""
    picked = column.iloc[rows]
    return picked.astype(object).where(picked.notna(), None).tolist()
