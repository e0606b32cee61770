"""A turn's parent turn: the message store's link rule, in its two forms.

In llm's message store a node is a turn (one model call), and nothing says
which turn a turn goes on from: the messages do. The rule: a turn's parent
is a turn of the same conversation tree that ended at (whose tip is) the
nearest message at or above the turn's input (its `parent_message_hash`)
that is the tip of some turn of that tree. Identical content shares rows,
so several turns (a retry that gave the same answer, a fork that asked the
same question) can end at one message: of those, the first logged of the
turn's own thread, else of the thread it was forked from, and so on up the
forks, else the first logged of all; never the turn itself. A hash that
names no message is a message without parent.

`turn_parents` applies the rule turn by turn, walking up the messages with
a memo (`NearestAbove`): the row reader's form (`message_store`), for one
tree or the whole file. `turn_parents_table` applies it to whole arrays at
once, with pointer jumping and no Python loop per turn: the columnar
reader's form (`columnar.message_store`). `tests/test_rule_agreement.py` checks
that the two give the same parents on random message trees, turns and
forks.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Container, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from convgraph.links.integrity import ParentWalk
from convgraph.links.rules import TURNS, rule, table_form

if TYPE_CHECKING:
    import numpy as np

#: A turn as `turn_parents` reads it: a dict with `id`, `tree_id`,
#: `thread_id`, `parent_message_hash` and `tip_message_hash`.
TurnRecord = dict[str, Any]


class NearestAbove:
    """The nearest message at or above a start that is in a set, by walking
    up the parent links; every message is walked once per set however many
    turns share it (a memo of the answer for each message walked).

    Parameters
    ----------
    parent_of
        A message's parent hash; None for a root or a hash that names no
        message.
    """

    def __init__(self, parent_of: Callable[[str], str | None]):
        self.parent_of = parent_of
        self._found: dict[tuple[str, str], str | None] = {}

    def __call__(
        self, start: str | None, marked: Container[str], key: str
    ) -> str | None:
        """The nearest message at or above `start` that is in `marked`.
        `key` names the set: the memo of one key is valid only while its
        set does not change."""
        walked = []
        found = None
        for current in ParentWalk(start, self.parent_of):
            if (key, current) in self._found:
                found = self._found[(key, current)]
                break
            if current in marked:
                found = current
                break
            walked.append(current)
        for message_hash in walked:
            self._found[(key, message_hash)] = found
        return found


@rule(TURNS)
def turn_parents(
    turns: Sequence[TurnRecord],
    nearest: NearestAbove,
    forked_from: Mapping[str, str | None],
) -> list[TurnRecord | None]:
    """Each turn's parent turn (one of `turns`, in log order), None for none:
    the rule turn by turn.

    Parameters
    ----------
    turns
        The turns, in log order, each with its tree (`tree_id`).
    nearest
        The walk up the messages the turns' hashes name.
    forked_from
        Each thread's origin (None for an original thread); a thread not in
        it, or an origin not in it, ends the walk up the forks.
    """
    # The candidates for being some turn's parent, by (tree, tip).
    by_tip: dict[tuple[str, str], list[TurnRecord]] = defaultdict(list)
    for turn in turns:
        by_tip[(turn["tree_id"], turn["tip_message_hash"])].append(turn)
    tips_by_tree: dict[str, set[str]] = defaultdict(set)
    for tree_id, tip in by_tip:
        tips_by_tree[tree_id].add(tip)
    parents: list[TurnRecord | None] = []
    for turn in turns:
        tree_id = turn["tree_id"]
        above = nearest(turn["parent_message_hash"], tips_by_tree[tree_id], tree_id)
        parents.append(
            None
            if above is None
            else choose_parent(by_tip[(tree_id, above)], turn, forked_from)
        )
    return parents


def choose_parent(
    candidates: list[TurnRecord],
    turn: TurnRecord,
    forked_from: Mapping[str, str | None],
) -> TurnRecord | None:
    """Which of the turns that ended at one message (`candidates`, in log
    order) is this turn's parent: of the turn's own thread, then of the
    thread it was forked from, and so on up; else the first one logged;
    never the turn itself."""
    candidates = [c for c in candidates if c["id"] != turn["id"]]
    if len(candidates) < 2:  # nearly always: nothing to choose between
        return candidates[0] if candidates else None
    for thread in ParentWalk(turn["thread_id"], forked_from):
        in_thread = [c for c in candidates if c["thread_id"] == thread]
        if in_thread:
            return in_thread[0]
    return candidates[0]


@table_form(turn_parents)
def turn_parents_table(
    tree_codes: np.ndarray,
    parent_rows: np.ndarray,
    start_rows: np.ndarray,
    tip_rows: np.ndarray,
    thread_codes: np.ndarray,
    fork_up: np.ndarray,
) -> np.ndarray:
    """Each turn's parent turn as a row of the turns (in log order), -1 for
    none: the rule on arrays, for every turn at once.

    Parameters
    ----------
    tree_codes
        Each turn's tree, as a number (0 or more).
    parent_rows
        Each message's parent message (-1: a root); a hash that names no
        message is a message of its own here, past the others, with no
        parent. The links must not go round a cycle
        (`pointer_jumping.reaches_root`).
    start_rows, tip_rows
        Each turn's input message and tip message (-1: none).
    thread_codes
        Each turn's thread, as a row of `fork_up`.
    fork_up
        Each thread's origin thread (-1: none, or one not in the file); no
        cycle.
    """
    import numpy as np
    import pandas as pd

    from convgraph.links.pointer_jumping import nearest_marked

    count = len(tree_codes)
    message_count = len(parent_rows)
    if not message_count:  # no hash at all: no turn ends at a message
        return np.full(count, -1)

    # A turn's candidates are the turns of its tree that ended at one
    # message: a group per (tree, tip message).
    has_tip = tip_rows >= 0
    tip_keys = np.where(has_tip, tree_codes * message_count + tip_rows, -1)
    group_of, group_keys = pd.factorize(tip_keys)
    group_of = np.where(has_tip, group_of, -1)
    group_index = pd.Index(group_keys)

    # The nearest tip above the input: first the nearest message that is any
    # turn's tip (pointer jumping), then, where that is only another tree's
    # tip (content is shared across trees), on from its parent, round by
    # round: as many rounds as such tips stand in one chain.
    marked = np.zeros(message_count, bool)
    marked[tip_rows[has_tip]] = True
    nearest = nearest_marked(parent_rows, marked)
    current = np.where(start_rows >= 0, nearest[np.maximum(start_rows, 0)], -1)
    found_group = np.full(count, -1)
    pending = np.flatnonzero(current >= 0)
    while len(pending):
        groups = group_index.get_indexer(
            tree_codes[pending] * message_count + current[pending]
        )
        hit = groups >= 0
        found_group[pending[hit]] = groups[hit]
        pending = pending[~hit]
        above = parent_rows[current[pending]]
        current[pending] = np.where(above >= 0, nearest[np.maximum(above, 0)], -1)
        pending = pending[current[pending] >= 0]

    # The first two turns (in log order) of every group, and of every
    # (group, thread): enough to pass over the turn itself.
    thread_count = len(fork_up)
    members = np.flatnonzero(group_of >= 0)
    first, second, sizes = _first_two(group_of[members], members, len(group_keys))
    pair_keys = group_of[members] * thread_count + thread_codes[members]
    pair_codes, pair_values = pd.factorize(pair_keys)
    pair_first, pair_second, _ = _first_two(pair_codes, members, len(pair_values))
    pair_index = pd.Index(pair_values)

    parents = np.full(count, -1)
    rows = np.flatnonzero(found_group >= 0)
    groups = found_group[rows]
    # The first candidate that is not the turn itself.
    earliest = np.where(first[groups] != rows, first[groups], second[groups])
    others = sizes[groups] - (group_of[rows] == groups)
    parents[rows] = np.where(others >= 1, earliest, -1)
    # Several candidates: up the turn's threads for one that has some.
    several = others >= 2
    rows, groups, earliest = rows[several], groups[several], earliest[several]
    thread = thread_codes[rows]
    while len(rows):
        pairs = pair_index.get_indexer(groups * thread_count + thread)
        at = np.maximum(pairs, 0)
        pick = np.where(pairs >= 0, pair_first[at], -1)
        pick = np.where((pairs >= 0) & (pick == rows), pair_second[at], pick)
        parents[rows[pick >= 0]] = pick[pick >= 0]
        thread = fork_up[thread]
        # Where no thread up the forks has one, the first logged stays.
        going = (pick < 0) & (thread >= 0)
        rows, groups, thread = rows[going], groups[going], thread[going]
    return parents


def _first_two(
    codes: np.ndarray, positions: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each code 0..size-1: the first and second of its `positions`
    (ascending; -1 for none) and how many it has."""
    import numpy as np

    order = np.argsort(codes, kind="stable")
    ranked = np.append(positions[order], -1)
    counts = np.bincount(codes, minlength=size)
    starts = np.cumsum(counts) - counts
    first = np.where(counts > 0, ranked[starts], -1)
    second = np.where(counts > 1, ranked[np.minimum(starts + 1, len(order))], -1)
    return first, second, counts
