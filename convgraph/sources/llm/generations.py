"""Where the generations of one llm file meet: each id once, and turns that go
on from legacy history hung below the response they continue.

A database upgraded from legacy llm to the message store holds both: the
legacy `responses` and the message store's `turns`. Two rules make one set of
nodes of them, each in two forms side by side, one tree's records (the list
form, for `LogDatabase.read_tree`) and the whole forest's table (the table
form, for `LogDatabase.read_forest`), which must agree
(tests/test_rule_agreement.py):

- each id is one node, the first logged (`first_of_each_id`,
  `first_of_each_id_table`): a table without a primary key may repeat one;
- a turn with no parent turn that llm logged below rebuilt legacy history
  (`llm -c` on a legacy conversation, or a `LogStore.fork` at one of its
  messages) takes as parent the legacy response its history ends at
  (`join_generations`, `join_generations_table`, both by `legacy_parent`).

Both forms take rows in log order, the legacy ones told by their `source`,
and the turns carrying `_continues` (a `message_store.Continuation`, or None).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from convgraph.links.integrity import DUPLICATE_ID, Problem, record_problem
from convgraph.links.rules import RECORDS, rule, table_form
from convgraph.sources.llm.legacy import SOURCE as LEGACY_SOURCE

if TYPE_CHECKING:
    import pandas as pd

    from convgraph.sources.llm.message_store import Continuation

#: The column (and record key) of a turn's `Continuation`: None for a turn
#: that needs none, False on the legacy rows of a table.
CONTINUES = "_continues"

#: A legacy response as `legacy_parent` matches it: id, parent id, answer.
LegacyResponse = tuple[str, Any, Any]


# -- each id once ---------------------------------------------------------------


@rule(RECORDS)
def first_of_each_id(
    records: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[Problem]]:
    """The records (in log order) with one per id, the first logged, and a
    problem for each id that had more (a table without a primary key).
    """
    seen: dict[str, int] = {}
    for record in records:
        seen[record["id"]] = seen.get(record["id"], 0) + 1
    if len(seen) == len(records):
        return records, []
    kept, taken = [], set()
    for record in records:
        if record["id"] not in taken:
            taken.add(record["id"])
            kept.append(record)
    problems = [
        record_problem(DUPLICATE_ID, count - 1, "the log", node_id)
        for node_id, count in seen.items()
        if count > 1
    ]
    return kept, problems


@table_form(first_of_each_id)
def first_of_each_id_table(
    nodes: pd.DataFrame,
) -> tuple[pd.DataFrame, list[Problem]]:
    """The table form of `first_of_each_id`: the rows (in log order) with one
    per id, the first, and the same problems, each id's in the order of its
    first row."""
    repeated = nodes["id"].duplicated().to_numpy()
    if not repeated.any():
        return nodes, []
    ids = nodes["id"]
    counts = ids[repeated].value_counts(sort=False)
    # Each id's problem where its first row is, as the per-tree form has it.
    firsts = ids[~repeated & ids.isin(counts.index).to_numpy()]
    problems = [
        record_problem(DUPLICATE_ID, int(counts[node_id]), "the log", str(node_id))
        for node_id in firsts
    ]
    return nodes[~repeated].reset_index(drop=True), problems


# -- turns that go on from legacy history ------------------------------------------


@rule(RECORDS)
def join_generations(records: list[dict[str, Any]], linked: bool = False) -> None:
    """Give each turn that goes on from legacy history its legacy parent, in
    place, and take `_continues` off every record.

    `records` are one tree's legacy rows and turns, in log order. When llm
    0.32+ continues a legacy conversation (`llm -c`), or a `LogStore.fork`
    starts at one of its rebuilt messages, the turn carries the old history
    in its messages but no turn to point at: its parent is the legacy
    response its history ends at (`legacy_parent`), whatever was logged
    later. `linked`: the responses carry `parent_response_id`.
    """
    conversations = None
    for record in records:
        continuation = record.pop(CONTINUES, None)
        if not continuation or record["parent_id"] is not None:
            continue
        if conversations is None:
            conversations = conversations_in_id_order(
                (r["id"], r["conversation_id"], r["parent_id"], r["response"])
                for r in records
                if r["source"] == LEGACY_SOURCE
            )
        record["parent_id"] = legacy_parent(continuation, conversations, linked)


@table_form(join_generations)
def join_generations_table(
    nodes: pd.DataFrame,
    linked: bool = False,
    response_texts: Callable[[list[str]], dict[str, str | None]] | None = None,
) -> None:
    """The table form of `join_generations`, for the whole forest (in place;
    `nodes` is in log order and keeps its `_continues` column). Only the few
    turns that go on from legacy history are looked at one by one.
    `response_texts` reads legacy answers by id when the table was read
    without its texts."""
    flags = nodes[CONTINUES]
    continues = flags.notna() & flags.astype(bool) & nodes["parent_id"].isna()
    if not continues.any():
        return
    rows = nodes.index[continues]
    continuations: list[Continuation] = list(flags[rows])
    wanted = {thread for c in continuations for thread in c.threads}
    legacy_rows = nodes[
        (nodes["source"] == LEGACY_SOURCE)
        & nodes["conversation_id"].astype(object).isin(wanted)
    ]
    ids = legacy_rows["id"].tolist()
    answers = legacy_rows["response"].tolist()
    if response_texts is not None:
        texts = response_texts(ids)
        answers = [texts.get(node_id) for node_id in ids]
    conversations = conversations_in_id_order(
        zip(
            ids,
            legacy_rows["conversation_id"].astype(object).tolist(),
            legacy_rows["parent_id"].tolist(),
            answers,
            strict=True,
        )
    )
    nodes.loc[rows, "parent_id"] = [
        legacy_parent(continuation, conversations, linked)
        for continuation in continuations
    ]


def conversations_in_id_order(
    rows: Iterable[tuple[str, str, Any, Any]],
) -> dict[str, list[LegacyResponse]]:
    """Legacy responses (id, conversation, parent, answer) by conversation,
    each in id order: the order llm replays a legacy conversation in.
    """
    conversations: dict[str, list[LegacyResponse]] = {}
    for node_id, conversation_id, parent_id, answer in rows:
        conversations.setdefault(conversation_id, []).append(
            (node_id, parent_id, answer)
        )
    for responses in conversations.values():
        responses.sort(key=lambda response: response[0])
    return conversations


def legacy_parent(
    continuation: Continuation,
    conversations: dict[str, list[LegacyResponse]],
    linked: bool = False,
) -> str | None:
    """The legacy response whose answer a turn's rebuilt history ends at.

    The conversation is the first of the turn's threads (its own, then the
    ones it was forked from) that has legacy responses. The parent is the
    response whose answer is the history's last answer; where several
    responses gave that answer, the one whose earlier history (down the
    stored parent links where there are some, as a `convgraph branch` sends
    a path of the tree; else the responses before it in id order, as llm
    replays a legacy conversation) matches the history's earlier answers
    longest, the first in id order on a tie. Matching from the end keeps a
    turn in place when a response above it was deleted, or when another
    was logged later; where the last answers match no response (deleted),
    the last one that does stands for them. Where no answer matches at all
    (the responses changed), the n-th answer is the n-th response in id
    order.
    """
    answers = continuation.answers
    responses = next(
        (conversations[t] for t in continuation.threads if t in conversations),
        None,
    )
    if not answers or not responses:
        return None
    # The last answer a response still gives (a deleted response's is
    # gone: the turn then hangs where the history's rest leads).
    by_answer: dict[Any, list[int]] = {}
    for i, response in enumerate(responses):
        by_answer.setdefault(response[2], []).append(i)
    found = next(
        (k for k in range(len(answers), 0, -1) if answers[k - 1] in by_answer), 0
    )
    if not found:
        return responses[min(len(answers), len(responses)) - 1][0]
    answers = answers[:found]
    candidates = by_answer[answers[-1]]
    if len(candidates) == 1:
        return responses[candidates[0]][0]
    position = {response[0]: i for i, response in enumerate(responses)}

    def before(i: int) -> int | None:
        if linked:
            return position.get(responses[i][1])
        return i - 1 if i else None

    def matching(i: int | None) -> int:
        # At most len(answers) steps, so a cycle of parent links ends too.
        count = 0
        for answer in reversed(answers):
            if i is None or responses[i][2] != answer:
                break
            count += 1
            i = before(i)
        return count

    return responses[max(candidates, key=matching)][0]
