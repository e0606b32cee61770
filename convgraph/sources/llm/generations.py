"""Where the generations of an upgraded llm file meet, in list and table form:
each id once (a table without a primary key may repeat one), and a turn that
goes on from legacy history (`llm -c` on a legacy conversation, a fork at
one of its messages) hung below the legacy response it continues."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from convgraph.links.integrity import DUPLICATE_ID, Problem, record_problem
from convgraph.links.rules import RECORDS, rule, table_form
from convgraph.sources.llm.legacy import SOURCE as LEGACY_SOURCE

if TYPE_CHECKING:
    import pandas as pd

    from convgraph.sources.llm.message_store import Continuation

#: A turn's `Continuation` (None for none; False on a table's legacy rows).
CONTINUES = "_continues"

#: id, parent id, answer.
LegacyResponse = tuple[str, Any, Any]


@rule(RECORDS)
def first_of_each_id(
    records: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[Problem]]:
    """The first record of each id, and a problem for each repeated id."""
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
def first_of_each_id_table(nodes: pd.DataFrame) -> tuple[pd.DataFrame, list[Problem]]:
    """The table form of `first_of_each_id`."""
    repeated = nodes["id"].duplicated().to_numpy()
    if not repeated.any():
        return nodes, []
    ids = nodes["id"]
    counts = ids[repeated].value_counts(sort=False)
    firsts = ids[~repeated & ids.isin(counts.index).to_numpy()]
    problems = [
        record_problem(DUPLICATE_ID, int(counts[node_id]), "the log", str(node_id))
        for node_id in firsts
    ]
    return nodes[~repeated].reset_index(drop=True), problems


@rule(RECORDS)
def join_generations(records: list[dict[str, Any]], linked: bool = False) -> None:
    """In place: each turn that continues legacy history gets its
    `legacy_parent`, and `_continues` is taken off every record. `linked`:
    the responses carry `parent_response_id`."""
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
    """The table form of `join_generations` (keeps `_continues`);
    `response_texts` reads legacy answers when the table has no texts."""
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
    """Legacy responses by conversation, each in id order (llm's replay order)."""
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

    Among responses giving the last answer still found, the one whose
    earlier history (by parent links if `linked`, else id order) matches
    longest, first on a tie; matching from the end survives deletions and
    later responses. With no answer found, the n-th answer's n-th response."""
    answers = continuation.answers
    responses = next(
        (conversations[t] for t in continuation.threads if t in conversations), None
    )
    if not answers or not responses:
        return None
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
