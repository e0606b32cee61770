"""A turn's parent turn: the message store's link rule, in its two forms.

A turn's parent is a turn of its tree whose tip is the nearest message at or
above the turn's input that is some such tip. Identical content shares rows,
so several turns may end at one message: take the first logged of the
turn's own thread, else up its forks, else the first of all; never itself."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Container, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from convgraph.links.integrity import ParentWalk
from convgraph.links.rules import TURNS, rule, table_form

if TYPE_CHECKING:
    import numpy as np

#: `id`, `tree_id`, `thread_id`, `parent_message_hash`, `tip_message_hash`.
TurnRecord = dict[str, Any]


class NearestAbove:
    """The nearest message at or above a start that is in a set, memoised
    per set; `parent_of` gives None for a root or an unknown hash."""

    def __init__(self, parent_of: Callable[[str], str | None]):
        self.parent_of = parent_of
        self._found: dict[tuple[str, str], str | None] = {}

    def __call__(
        self, start: str | None, marked: Container[str], key: str
    ) -> str | None:
        """`key` names the set `marked`, which must not change."""
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
    """Each turn's parent turn (or None), `turns` in log order;
    `forked_from` maps each thread to its origin."""
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
    """The turn's parent among turns that ended at one message (see module)."""
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
    """Each turn's parent as a row of the turns, -1 for none. `parent_rows`
    links messages (acyclic; an unknown hash is a message with no parent);
    `start_rows`, `tip_rows` are messages; `fork_up` links threads."""
    import numpy as np
    import pandas as pd

    from convgraph.links.pointer_jumping import nearest_marked

    count = len(tree_codes)
    message_count = len(parent_rows)
    if not message_count:  # no hash at all: no turn ends at a message
        return np.full(count, -1)

    # A group of candidates per (tree, tip message).
    has_tip = tip_rows >= 0
    tip_keys = np.where(has_tip, tree_codes * message_count + tip_rows, -1)
    group_of, group_keys = pd.factorize(tip_keys)
    group_of = np.where(has_tip, group_of, -1)
    group_index = pd.Index(group_keys)

    # The nearest tip of any tree, then on up where it is only another
    # tree's tip (content is shared across trees).
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

    # The first two of every group and (group, thread): enough to skip itself.
    thread_count = len(fork_up)
    members = np.flatnonzero(group_of >= 0)
    first, second, sizes = first_two(group_of[members], members, len(group_keys))
    pair_keys = group_of[members] * thread_count + thread_codes[members]
    pair_codes, pair_values = pd.factorize(pair_keys)
    pair_first, pair_second, _ = first_two(pair_codes, members, len(pair_values))
    pair_index = pd.Index(pair_values)

    parents = np.full(count, -1)
    rows = np.flatnonzero(found_group >= 0)
    groups = found_group[rows]
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
        going = (pick < 0) & (thread >= 0)
        rows, groups, thread = rows[going], groups[going], thread[going]
    return parents


def first_two(
    codes: np.ndarray, positions: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per code 0..size-1: its first and second position (-1) and count."""
    import numpy as np

    order = np.argsort(codes, kind="stable")
    ranked = np.append(positions[order], -1)
    counts = np.bincount(codes, minlength=size)
    starts = np.cumsum(counts) - counts
    first = np.where(counts > 0, ranked[starts], -1)
    second = np.where(counts > 1, ranked[np.minimum(starts + 1, len(order))], -1)
    return first, second, counts
