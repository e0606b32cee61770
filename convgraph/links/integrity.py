"""Find the parent links that break the tree's rules, and drop them.

A stored parent link can be wrong in four ways: a node is its own parent, the
parent does not exist, the parent is in another conversation (the
same-conversation rule forbids it: docs/design.md#the-same-conversation-rule),
or following parents goes round a cycle. Each is reported as a `Problem`; the
link is dropped, so the node becomes a root and every tree convgraph builds is
a real forest. The message store's threads have links of their own
(`forked_from`), and a cycle of forks is reported the same way.

The rule has two forms, side by side at the end of this module, with one
property test for the pair (tests/test_rule_agreement.py): `check_links` for one
tree's records (plain Python: the one-tree path reads no pandas) and
`check_links_table` for a whole nodes table (vectorized: a hash of the parent
ids and pointer jumping, not a walk per node). Both report the same problems
and keep the same parents.

Every walk up a chain of links in convgraph, of nodes, messages or threads, is
a `ParentWalk`: iterative, each id visited once, so nothing here recurses or
can loop forever.
"""

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
#: Rows that cannot be nodes, or not all of them (data llm never writes):
#: reported, and left out of every tree.
NO_ID = "no-id"
NO_THREAD = "no-thread"
DUPLICATE_ID = "duplicate-id"
#: A chat export's conversation without a prompt or an answer: listed with
#: 0 nodes (`convgraph.analysis.stats.conversation_table`), and reported.
EMPTY_CONVERSATION = "empty-conversation"
#: A chat export's conversation holding message ids an earlier one holds
#: too (ChatGPT's "Branch in new chat" copies): read with those ids
#: qualified by the conversation's (`convgraph.sources.chat.exports`), and
#: reported.
SHARED_IDS = "shared-ids"
#: A node whose token count is negative or more than any request holds
#: (`convgraph.analysis.prices.count_problems`): summed as it is, priced at
#: nothing, and reported.
IMPOSSIBLE_COUNT = "impossible-count"
#: A legacy row an older llm logged without a parent into a migrated file,
#: whose parent the rule cannot tell (`convgraph.sources.llm.old_writers`): it
#: stays a root.
UNPLACED = "unplaced"


class ParentWalk:
    """The ids from `start` up a chain of parent links: `start`, its parent,
    its grandparent, and so on.

    `parent_of` is a mapping or a callable giving an id's parent, None for a
    root. Iteration ends after a root, or just before an id would come a
    second time: then `repeat` is that id (the links go round a cycle, which
    begins there), else `repeat` is None. Parents are asked for lazily, one
    step at a time, so a caller that stops early asks no further.
    """

    __slots__ = ("parent_of", "repeat", "start")

    def __init__(
        self,
        start: str | None,
        parent_of: Mapping[str, str | None] | Callable[[str], str | None],
    ):
        self.start = start
        # callable() rather than isinstance(Mapping): a walk is made per
        # message of a million-turn read, and the ABC check costs more than
        # most walks.
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
        """The ids of `walked` (this walk's ids, in order) that are on the
        cycle it ended on, in parent order; [] when it ended at a root."""
        if self.repeat is None:
            return []
        return walked[walked.index(self.repeat) :]


@dataclass(frozen=True)
class Problem:
    """One broken parent link.

    `node_id` is the node whose link was dropped (it is treated as a root);
    `parent_id` the parent it named; for a cycle, `cycle` lists the nodes on
    it in parent order, starting at `node_id`. A fork cycle is a cycle of
    message-store threads (`forked_from`): there `node_id`, `parent_id`,
    `conversation_id` and `cycle` are thread ids, and `node_id` is the thread
    read as the original thread of the tree.
    """

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
    """A `Problem` for rows that are no node: `count` rows of `table` without
    an id (`NO_ID`) or without a thread (`NO_THREAD`), or `count` rows more
    with the id `node_id` (`DUPLICATE_ID`)."""
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
    """Drop one link of every cycle in `parents`, in place, and report it.

    `parents` maps each node to its parent (every parent is a key or None).
    The link dropped is that of the cycle's node that comes first in `order`
    (log order), so the earliest message of a cycle becomes its root. Each
    node is walked once: linear in the number of nodes. `kind` is the
    problems' kind: `CYCLE` for nodes, `FORK_CYCLE` for threads.
    """
    position = {node: index for index, node in enumerate(order)}
    finished: set[str] = set()

    def unfinished_parent(node: str) -> str | None:
        # A walk ends where an earlier walk went: that part is done.
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
            problems.append(
                Problem(
                    kind,
                    first,
                    parents[first],
                    conversation_of.get(first),
                    f"{first} is on a cycle of {len(cycle)} {links}: "
                    + " -> ".join(cycle + [first]),
                    tuple(cycle),
                )
            )
            parents[first] = None
        finished.update(walked)
    return problems


@rule(RECORDS)
def check_links(
    records: list[dict[str, Any]],
    conversation_of_outsiders: Mapping[str, str],
) -> tuple[dict[str, str | None], list[Problem]]:
    """The valid parent of each record of one tree, and the problems found.

    `records` are one tree's rows in log order, with `id`, `parent_id` and
    `conversation_id`; `conversation_of_outsiders` says which conversation a
    parent outside the tree is in (a parent in neither is missing).
    """
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
    """`check_links` of a whole nodes table: the row of each node's valid
    parent (-1 for a root), and the problems found.

    Parameters
    ----------
    nodes
        One row per node, many trees, in log order: `id` (unique),
        `parent_id` (as stored), `tree_id` and `conversation_id`. A parent
        in another tree is a cross-conversation link (its tree is named in
        the message), one in no row is missing.
    parent_rows
        The row of each stored parent where the reader found it already
        (`convgraph.contract.PARENT_ROWS`: -1 for none, or a parent id that
        names no row); else found from the ids.

    Returns
    -------
    tuple
        The checked parent rows, and the problems: the self, missing and
        cross-conversation parents in row order, then one per cycle.
    """
    # Imported here, not above: the one-tree path imports this module for
    # `check_links` and `ParentWalk`, and stays free of numpy and pandas.
    import numpy as np
    import pandas as pd

    from convgraph.links.pointer_jumping import parent_rows_of, reaches_root

    # The columns stay as they are (Arrow's strings, no Python object per
    # row): only the rows of a problem are turned into Python values.
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

    # Only the nodes that reach no root are on a cycle or hang off one: they
    # are walked, in log order, as `check_links` walks every node.
    on_cycles = np.flatnonzero(~reaches_root(checked))
    if len(on_cycles):
        cycle_ids = _values_at(ids, on_cycles)
        parents = dict(zip(cycle_ids, _values_at(ids, checked[on_cycles]), strict=True))
        conversation_of = dict(
            zip(
                cycle_ids,
                _values_at(nodes["conversation_id"], on_cycles),
                strict=True,
            )
        )
        cycle_problems = break_cycles(parents, parents, conversation_of)
        problems.extend(cycle_problems)
        row_of = dict(zip(cycle_ids, on_cycles.tolist(), strict=True))
        for problem in cycle_problems:
            checked[row_of[problem.node_id]] = -1
    return checked, problems


def _values_at(column: pd.Series, rows: np.ndarray) -> list[Any]:
    """A column's values at `rows` as Python values, None where missing
    (NA in Arrow's strings, NaN in a categorical)."""

    picked = column.iloc[rows]
    return picked.astype(object).where(picked.notna(), None).tolist()
