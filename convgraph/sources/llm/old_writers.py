"""Legacy rows that an llm older than 0.32 logged into a migrated file with a
NULL parent, placed on the read side for files whose trigger was missing
(docs/design.md#three-generations-of-llms-database).

The rule: such a row logged at or after the migration, not a deliberate root
(`ROOTS_TABLE`) and not its conversation's first, hangs under the response
logged just before it. Where that response's id sorts after its own (two
`llm -c` at once, a clock gone back), the order cannot be told: the row
stays a root and is reported (`UNPLACED`)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from convgraph.links.integrity import UNPLACED, Problem
from convgraph.links.rules import RECORDS, rule, table_form

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

#: convgraph's migration log; from its `applied_at` a NULL parent may be an
#: old llm's.
RECORD_TABLE = "_convgraph_migrations"
MIGRATION_NAME = "parent_response_id"

#: Responses convgraph made roots on purpose after the migration.
ROOTS_TABLE = "_convgraph_roots"


@dataclass(frozen=True)
class Placing:
    """The migration's time (ISO 8601 text) and the deliberate roots."""

    migrated_at: str
    roots: frozenset[str]


def has_table(conn: sqlite3.Connection, name: str) -> bool:
    return (
        conn.execute(
            "select 1 from sqlite_master where type = 'table' and name = ?", [name]
        ).fetchone()
        is not None
    )


def read_placing(
    conn: sqlite3.Connection, node_ids: Collection[str] | None = None
) -> Placing | None:
    """The file's `Placing` (roots among `node_ids` only, if given), or None
    where no migration time is recorded: then no row is placed."""
    if not has_table(conn, RECORD_TABLE):
        return None
    row = conn.execute(
        f"select applied_at from {RECORD_TABLE} where name = ?", [MIGRATION_NAME]
    ).fetchone()
    if row is None or not isinstance(row[0], str):
        return None
    roots: frozenset[str] = frozenset()
    if has_table(conn, ROOTS_TABLE):
        query = f"select cast(id as text) from {ROOTS_TABLE}"
        if node_ids is None:
            found = conn.execute(query)
        else:
            found = conn.execute(
                query + " where id in (select value from json_each(?))",
                [json.dumps(list(node_ids))],
            )
        roots = frozenset(found_id for (found_id,) in found if found_id is not None)
    return Placing(row[0], roots)


def unplaced_problem(node_id: str, previous: str, conversation_id: str) -> Problem:
    return Problem(
        UNPLACED,
        node_id,
        None,
        conversation_id,
        f"{node_id} was logged after the migration without a parent (an llm"
        f" older than 0.32), but {previous}, the response before it by time,"
        f" has an id that sorts after its own: which was logged first, and so"
        f" which it continued, cannot be told; it is read as a root",
    )


@rule(RECORDS)
def place_records(
    records: list[dict[str, Any]], placing: Placing | None
) -> list[Problem]:
    """Place one tree's legacy rows (log order) in place; the problems."""
    if placing is None:
        return []
    problems = []
    previous: dict[Any, str] = {}
    for record in records:
        node, conversation = record["id"], record["conversation_id"]
        before = previous.get(conversation)
        previous[conversation] = node
        if (
            before is None
            or record["parent_id"] is not None
            or (record["datetime_utc"] or "") < placing.migrated_at
            or node in placing.roots
        ):
            continue
        if before > node:
            problems.append(unplaced_problem(node, before, conversation))
        else:
            record["parent_id"] = before
    return problems


@table_form(place_records)
def place_records_table(
    nodes: pd.DataFrame,
    placing: Placing | None,
    leave_out: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, list[Problem]]:
    """`place_records` on a table in any order, `parent_id` set in place:
    rows placed, their parents' rows, problems. `leave_out(ids)` marks rows
    that are no node (read from the turns), never anyone's previous."""
    import numpy as np
    import pandas as pd

    none = np.empty(0, dtype=np.int64)
    if placing is None or not len(nodes):
        return none, none, []
    # Whole columns are only compared; values are taken out only for the
    # conversations that hold a candidate.
    candidates = nodes["parent_id"].isna().to_numpy(dtype=bool).copy()
    if not candidates.any():
        return none, none, []
    where = np.flatnonzero(candidates)
    times = nodes["datetime_utc"]
    chosen = times.iloc[where].to_numpy(dtype=object)
    present = times.iloc[where].notna().to_numpy(dtype=bool)
    after = np.zeros(len(where), dtype=bool)
    after[present] = chosen[present] >= placing.migrated_at  # None: ''
    candidates[where] = after
    if candidates.any() and placing.roots:
        candidates &= ~nodes["id"].isin(placing.roots).to_numpy(dtype=bool)
    if not candidates.any():
        return none, none, []
    codes = pd.factorize(nodes["conversation_id"])[0]  # a category's own codes
    rows = np.flatnonzero(np.isin(codes, np.unique(codes[candidates])))
    ids = nodes["id"].iloc[rows].to_numpy(dtype=object)
    if leave_out is not None:
        kept = ~leave_out(ids)
        rows, ids = rows[kept], ids[kept]
    group = pd.DataFrame(
        {
            "conversation": codes[rows],
            "key": times.iloc[rows].fillna("").to_numpy(dtype=object),
            "id": ids,
            "at": np.arange(len(rows)),
        }
    ).sort_values(["key", "id"], kind="stable")
    group["before"] = group.groupby("conversation", sort=False)["at"].shift(
        1, fill_value=-1
    )
    group = group[candidates[rows[group["at"].to_numpy()]] & (group["before"] >= 0)]
    at = group["at"].to_numpy(dtype=np.int64)
    before = group["before"].to_numpy(dtype=np.int64)
    ambiguous = ids[before] > ids[at]
    conversation_ids = nodes["conversation_id"].iloc[rows[at[ambiguous]]].tolist()
    problems = [
        unplaced_problem(ids[mine], ids[previous], conversation)
        for mine, previous, conversation in zip(
            at[ambiguous].tolist(),
            before[ambiguous].tolist(),
            conversation_ids,
            strict=True,
        )
    ]
    at, before = at[~ambiguous], before[~ambiguous]
    if len(at):
        parent_ids = nodes["parent_id"].to_numpy(dtype=object, copy=True)
        parent_ids[rows[at]] = ids[before]
        # As object: pandas would infer its string type, with NaN for None.
        nodes["parent_id"] = pd.Series(parent_ids, index=nodes.index, dtype=object)
    return rows[at], rows[before], problems


def place_tree(
    conn: sqlite3.Connection, records: list[dict[str, Any]]
) -> list[Problem]:
    roots = [record["id"] for record in records if record["parent_id"] is None]
    return place_records(records, read_placing(conn, roots) if roots else None)


def place_table(
    conn: sqlite3.Connection, nodes: pd.DataFrame, skip_ids_in_turns: bool = False
) -> list[Problem]:
    """`place_records_table` on the legacy table read from `conn`."""
    import numpy as np

    def in_turns(ids: np.ndarray) -> np.ndarray:
        found = {
            row[0]
            for row in conn.execute(
                "select value from json_each(?) where value in (select id from turns)",
                [json.dumps(ids.tolist())],
            )
        }
        return np.fromiter((node in found for node in ids), dtype=bool, count=len(ids))

    leave_out = in_turns if skip_ids_in_turns else None
    return place_records_table(nodes, read_placing(conn), leave_out)[2]


#: An id no response has: a walk up stored links stops short of a root.
MAY_BE_PLACED = "\x00may be placed"


def hide_placeable_roots(
    conn: sqlite3.Connection, links: dict[str, tuple[str | None, str]]
) -> dict[str, tuple[str | None, str]]:
    """Links (id -> (parent, conversation)) with `MAY_BE_PLACED` as the
    parent of each root the rule may place, so `path_by_links` defers."""
    roots = [node for node, (parent, _) in links.items() if parent is None]
    if not roots:
        return links
    placing = read_placing(conn, roots)
    if placing is None:
        return links
    rows = conn.execute(
        "select cast(id as text), coalesce(cast(datetime_utc as text), '')"
        " from responses where id in (select value from json_each(?))",
        [json.dumps(roots)],
    )
    placeable = {
        node
        for node, key in rows
        if key >= placing.migrated_at and node not in placing.roots
    }
    return {
        node: (MAY_BE_PLACED if node in placeable else parent, conversation)
        for node, (parent, conversation) in links.items()
    }
