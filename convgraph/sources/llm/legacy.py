"""Read llm's legacy `responses` table, with or without `parent_response_id`.

Without the column (before llm 0.32) a conversation is a chain, each response following
the one logged before it (`link_as_chains`); with it, each response names its parent. A
response outside any conversation is a conversation of its own."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from convgraph.contract import (
    INTEGER_ATTRIBUTES,
    PARTS,
    SOURCE_ATTRIBUTES,
    TEXT_ATTRIBUTES,
    TOOL_CALLS,
    TOOLS,
)
from convgraph.links.integrity import Problem
from convgraph.links.rules import RECORDS, rule, table_form
from convgraph.sources.llm import old_writers
from convgraph.sources.llm.legacy_parts import (
    LegacyParts,
    add_run_columns,
    add_run_records,
)
from convgraph.sources.llm.snapshot import Snapshot
from convgraph.sources.source import NodeTexts, ProgressCallback, prefix_range
from convgraph.sources.tables import as_integer, as_text

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

SOURCE = "responses"

#: Held by the tables beside `responses` (`legacy_parts`).
RUN_ATTRIBUTES = (PARTS, TOOL_CALLS, TOOLS)

ID = as_text("r.id")
CONVERSATION = f"coalesce({as_text('r.conversation_id')}, {ID})"


class LegacyReader:
    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        columns = {row[1] for row in conn.execute("pragma table_info(responses)")}
        self.has_parent = "parent_response_id" in columns
        self.has_conversations = old_writers.has_table(conn, "conversations")
        # In an upgraded database a record in both tables is read from turns.
        self.skip_ids_in_turns = False
        self._columns = columns
        self.parts = LegacyParts(conn)
        #: The rows the last read could not place (`old_writers`).
        self.unplaced: list[Problem] = []

    def _column(self, name: str) -> str:
        """A column in the contract's type, NULL where early llm lacks it."""
        if name not in self._columns:
            return f"null as {name}"
        if name in INTEGER_ATTRIBUTES:
            return f"{as_integer('r.' + name)} as {name}"
        return f"{as_text('r.' + name)} as {name}"

    def _parent(self) -> str:
        return as_text("r.parent_response_id") if self.has_parent else "null"

    def _select(self) -> str:
        """Every response with an id as a node record; callers append to it."""
        wanted = [
            name
            for name in SOURCE_ATTRIBUTES
            if name not in ("conversation_id", "source", *RUN_ATTRIBUTES)
        ]
        fields = ", ".join(self._column(name) for name in wanted)
        skip = (
            " and r.id not in (select id from turns)" if self.skip_ids_in_turns else ""
        )
        return (
            f"select {ID} as id, {CONVERSATION} as tree_id,"
            f" {self._parent()} as parent_id, {CONVERSATION}"
            f" as conversation_id, {fields}, '{SOURCE}' as source"
            f" from responses r where r.id is not null{skip}"
        )

    def conversation_of(self, node_id: str) -> str | None:
        row = self.conn.execute(
            f"select {CONVERSATION} from responses r where r.id = ?", [node_id]
        ).fetchone()
        return row[0] if row else None

    def has_conversation(self, conversation_id: str) -> bool:
        if (
            self.has_conversations
            and self.conn.execute(
                "select 1 from conversations where id = ?", [conversation_id]
            ).fetchone()
        ):
            return True
        return (
            self.conn.execute(
                "select 1 from responses where conversation_id = ?"
                " or (conversation_id is null and id = ?) limit 1",
                [conversation_id, conversation_id],
            ).fetchone()
            is not None
        )

    def responses_from(self, prefix: str, limit: int) -> list[tuple[str, str, Any]]:
        """Up to `limit` responses by id prefix: id, conversation, prompt."""
        condition, parameters = prefix_range("r.id", prefix)
        prompt = (
            f"substr({as_text('r.prompt')}, 1, 200)"
            if "prompt" in self._columns
            else "null"
        )
        rows = self.conn.execute(
            f"select {ID}, {CONVERSATION}, {prompt} from responses r"
            f" where {condition} order by r.id limit ?",
            [*parameters, limit],
        )
        return [tuple(row) for row in rows]

    def conversations_from(self, prefix: str, limit: int) -> list[tuple[str, Any]]:
        """Up to `limit` conversations by id prefix: id, name."""
        if not self.has_conversations:
            return []
        condition, parameters = prefix_range("id", prefix)
        rows = self.conn.execute(
            f"select {as_text('id')}, {as_text('name')} from conversations"
            f" where {condition} order by id limit ?",
            [*parameters, limit],
        )
        return [tuple(row) for row in rows]

    def first_responses(self) -> list[tuple[str, str, str]]:
        """Each conversation, first time ('' for none) and least id."""
        rows = self.conn.execute(
            f"select {CONVERSATION} as cid,"
            f" min(coalesce({as_text('r.datetime_utc')}, '')) as first, min({ID})"
            " from responses r where r.id is not null"
            " group by cid order by first, 3"
        )
        return [(row[0], row[1], row[2]) for row in rows]

    def _names(
        self,
        conversation_ids: list[str] | None = None,
        snapshot: Snapshot | None = None,
    ) -> dict[str, Any]:
        """Each conversation's name (all, by `snapshot`, for None)."""
        if not self.has_conversations:
            return {}
        columns = f"{as_text('c.id')}, {as_text('c.name')}"
        if conversation_ids is None:
            snapshot = snapshot or Snapshot(self.conn, ["conversations"])
            return {
                row[1]: row[2]
                for chunk in snapshot.rows("conversations", columns, alias="c")
                for row in chunk
            }
        rows = self.conn.execute(
            f"select {columns} from conversations c"
            " where id in (select value from json_each(?))",
            [_json_list(conversation_ids)],
        )
        return {row[0]: row[1] for row in rows}

    def read_conversations(
        self, conversation_ids: list[str], tree_id: str
    ) -> tuple[list[dict[str, Any]], str | None]:
        """The responses of these conversations, as records of tree `tree_id`."""
        # Not coalesce(...) in (...): so SQLite can use an index on
        # conversation_id (convgraph migrate makes one) and the primary key.
        query = (
            self._select() + " and (r.conversation_id in (select value from"
            " json_each(:ids)) or (r.conversation_id is null and r.id in"
            " (select value from json_each(:ids))))"
            " order by coalesce(r.datetime_utc, ''), r.id"
        )
        records = [
            dict(row)
            for row in self.conn.execute(query, {"ids": _json_list(conversation_ids)})
        ]
        for record in records:
            record["tree_id"] = tree_id
        add_run_records(self.parts, records)
        if self.has_parent:
            self.unplaced = old_writers.place_tree(self.conn, records)
        names = self._names(conversation_ids)
        name = names.get(tree_id) or next(iter(names.values()), None)
        return records, name

    def links_above(self, node_id: str) -> dict[str, tuple[str | None, str]]:
        """id -> (parent, conversation) of the response and those above it.
        UNION (not UNION ALL) ends a cycle of links instead of looping."""
        rows = self.conn.execute(
            """
            with recursive up(id, parent, conversation) as (
                select r.id, r.parent_response_id, coalesce(r.conversation_id, r.id)
                from responses r where r.id = :node
                union
                select r.id, r.parent_response_id, coalesce(r.conversation_id, r.id)
                from responses r join up on r.id = up.parent
            )
            select cast(id as text), cast(parent as text), cast(conversation as text)
            from up
            """,
            {"node": node_id},
        )
        links = {row[0]: (row[1], row[2]) for row in rows}
        return old_writers.hide_placeable_roots(self.conn, links)

    def conversation_of_ids(self, node_ids: list[str]) -> dict[str, str]:
        rows = self.conn.execute(
            f"select {ID}, {CONVERSATION} from responses r"
            " where r.id in (select value from json_each(?))",
            [_json_list(node_ids)],
        )
        return {row[0]: row[1] for row in rows}

    def read_all(
        self, text: bool = True, snapshot: Snapshot | None = None
    ) -> tuple[pd.DataFrame, dict[str, Any]]:
        """Every response with an id as one table, and the conversations'
        names; constant columns are filled in whole, not per row."""
        import pandas as pd

        from convgraph.sources.tables import frame_of_chunks

        if snapshot is None:
            snapshot = Snapshot(self.conn, self.tables())
        names = ["id", "conversation_id", "parent_id", "model", "datetime_utc"]
        names += list(INTEGER_ATTRIBUTES)
        columns = [
            ID,
            CONVERSATION,
            self._parent(),
            as_text("r.model"),
            as_text("r.datetime_utc"),
        ] + [self._column(name) for name in INTEGER_ATTRIBUTES]
        if text:
            names += list(TEXT_ATTRIBUTES)
            columns += [self._column(name) for name in TEXT_ATTRIBUTES]
        chunks = snapshot.rows("responses", ", ".join(columns), alias="r")
        nodes = frame_of_chunks(
            ([row for row in chunk if row[1] is not None] for chunk in chunks),
            names,
            categories=("conversation_id", "model"),
            integers=INTEGER_ATTRIBUTES,
        )
        nodes.insert(1, "tree_id", nodes["conversation_id"])
        for name in TEXT_ATTRIBUTES:
            if name not in nodes:
                nodes[name] = None
        add_run_columns(self.parts, nodes, text, snapshot)
        nodes["source"] = pd.Categorical([SOURCE] * len(nodes))
        nodes["_continues"] = False
        if self.has_parent:
            self.unplaced = old_writers.place_table(
                self.conn, nodes, self.skip_ids_in_turns
            )
        return nodes, self._names(snapshot=snapshot)

    def text_batches(
        self, progress: ProgressCallback | None = None
    ) -> Iterator[NodeTexts]:
        """The texts `read_all` reads, a `Snapshot` chunk at a time."""
        columns = ", ".join([ID, *(self._column(name) for name in TEXT_ATTRIBUTES)])
        snapshot = Snapshot(self.conn, ["responses"], progress)
        for chunk in snapshot.rows("responses", columns, alias="r"):
            rows = [row for row in chunk if row[1] is not None]
            if rows:
                _, ids, *texts = (list(column) for column in zip(*rows, strict=True))
                yield NodeTexts(ids, dict(zip(TEXT_ATTRIBUTES, texts, strict=True)))

    def tables(self) -> list[str]:
        found = (
            ["responses", "conversations"] if self.has_conversations else ["responses"]
        )
        return found + self.parts.tables()

    def count_without_id(self) -> int:
        (count,) = self.conn.execute(
            "select count(*) from responses where id is null"
        ).fetchone()
        return int(count)


def _json_list(values: list[str]) -> str:
    import json

    return json.dumps(list(values))


@rule(RECORDS)
def link_as_chains(records: list[dict[str, Any]]) -> None:
    """Set each record's parent to the one before it in its conversation."""
    previous: dict[str, str] = {}
    for record in records:
        record["parent_id"] = previous.get(record["conversation_id"])
        previous[record["conversation_id"]] = record["id"]


@table_form(link_as_chains)
def link_as_chains_table(nodes: pd.DataFrame) -> np.ndarray:
    """`link_as_chains` on legacy rows of a table (index 0..n-1); each row's
    parent row so set (-1: none, or not legacy)."""
    import numpy as np

    is_legacy = (nodes["source"] == SOURCE).to_numpy()
    previous = np.full(len(nodes), -1, dtype=np.int64)
    previous[is_legacy] = (
        nodes.loc[is_legacy, ["conversation_id"]]
        .assign(row=np.flatnonzero(is_legacy))
        .groupby("conversation_id", sort=False, observed=True)["row"]
        .shift(1, fill_value=-1)
        .to_numpy()
    )
    ids = nodes["id"].to_numpy()
    parents = np.full(len(nodes), None, dtype=object)
    has_parent = previous >= 0
    parents[has_parent] = ids[previous[has_parent]]
    nodes.loc[is_legacy, "parent_id"] = parents[is_legacy]
    return previous
