"""Read llm's legacy `responses` table, with or without `parent_response_id`.

Without the column (llm before 0.32) a conversation is a chain: each response
follows the one logged before it. With the column
(docs/design.md#three-generations-of-llms-database) each response names its
parent, or none for a root. A response logged outside any conversation
(`conversation_id` NULL) is a conversation of its own.

The chain rule has two forms, side by side at the end of this module:
`link_as_chains` for one tree's records, `link_as_chains_table` for the
whole nodes table at once (the row readers' and the columnar reader's
forest); `tests/test_rule_agreement.py` checks that they agree.
"""

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

#: The attributes of a node's run that no column of `responses` holds: the
#: other tables do (`legacy_parts`).
RUN_ATTRIBUTES = (PARTS, TOOL_CALLS, TOOLS)

#: A response's id and its conversation's, as text whatever SQLite holds: a
#: response outside any conversation is a conversation of its own.
ID = as_text("r.id")
CONVERSATION = f"coalesce({as_text('r.conversation_id')}, {ID})"


class LegacyReader:
    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        columns = {row[1] for row in conn.execute("pragma table_info(responses)")}
        self.has_parent = "parent_response_id" in columns
        self.has_conversations = bool(
            conn.execute(
                "select 1 from sqlite_master where type = 'table'"
                " and name = 'conversations'"
            ).fetchone()
        )
        # In an upgraded database a record in both tables is read from turns.
        self.skip_ids_in_turns = False
        self._columns = columns
        #: The tables beside `responses`: tool calls, attachments, fragments.
        self.parts = LegacyParts(conn)
        #: The rows an older llm logged into a migrated file that the last
        #: read could not place (`old_writers`).
        self.unplaced: list[Problem] = []

    def _column(self, name: str) -> str:
        """A column of `responses` in the contract's type (see
        `tables.as_text`), or NULL where this version of the table lacks it
        (early ones have no usage figures, no system)."""
        if name not in self._columns:
            return f"null as {name}"
        if name in INTEGER_ATTRIBUTES:
            return f"{as_integer('r.' + name)} as {name}"
        return f"{as_text('r.' + name)} as {name}"

    def _parent(self) -> str:
        return as_text("r.parent_response_id") if self.has_parent else "null"

    def _select(self) -> str:
        """The query of every response as a node record, texts included;
        `read_conversations` appends its condition. A response without an id
        is no node (`LogDatabase.record_problems` counts them)."""

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

    # -- naming -----------------------------------------------------------

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
        """The first `limit` responses whose id begins with `prefix`, on the
        primary key's index: id, conversation, the prompt's start."""
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
        """The first `limit` rows of `conversations` whose id begins with
        `prefix`, on the primary key's index: id, name."""
        if not self.has_conversations:
            return []
        condition, parameters = prefix_range("id", prefix)
        rows = self.conn.execute(
            f"select {as_text('id')}, {as_text('name')} from conversations"
            f" where {condition} order by id limit ?",
            [*parameters, limit],
        )
        return [tuple(row) for row in rows]

    def conversation_ids(self) -> list[str]:
        """Conversation ids in the order of their first response."""
        return [row[0] for row in self.first_responses()]

    def first_responses(self) -> list[tuple[str, str, str]]:
        """Each conversation, its first time ('' for none) and its least
        id, in that order."""
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
        """Each conversation's name (every one's when `conversation_ids` is
        None, read in short steps)."""
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

    # -- reading ----------------------------------------------------------

    def read_conversations(
        self, conversation_ids: list[str], tree_id: str
    ) -> tuple[list[dict[str, Any]], str | None]:
        """The responses of these conversations, as records of tree `tree_id`."""
        # Spelled out rather than coalesce(...) in (...), so that SQLite can
        # use an index on conversation_id where there is one (convgraph
        # migrate makes it; llm does not) and the primary key for the rest.
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
        # Without parents, the chains are linked by the pipeline
        # (`pipeline.PIPELINE`), after each id is taken once.
        if self.has_parent:
            self.unplaced = old_writers.place_tree(self.conn, records)
        names = self._names(conversation_ids)
        name = names.get(tree_id) or next(iter(names.values()), None)
        return records, name

    def links_above(self, node_id: str) -> dict[str, tuple[str | None, str]]:
        """The response and every response above it through the stored
        parent links: id -> (parent id, conversation), by primary key.

        UNION (not UNION ALL) drops rows seen before, so a cycle of links
        ends the query instead of looping.
        """
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
        """Which conversation each of these responses is in (for integrity)."""
        rows = self.conn.execute(
            f"select {ID}, {CONVERSATION} from responses r"
            " where r.id in (select value from json_each(?))",
            [_json_list(node_ids)],
        )
        return {row[0]: row[1] for row in rows}

    def read_all(
        self, text: bool = True, snapshot: Snapshot | None = None
    ) -> tuple[pd.DataFrame, dict[str, Any]]:
        """Every response as one table, with each conversation's name.

        Read in short steps (a `Snapshot`; one is made when none is given),
        so that llm can log meanwhile. Only the columns that hold something
        are selected (`text=False` leaves the texts out altogether); the
        tree id, the source and the texts left out are filled in as columns
        afterwards, not per row. Responses without an id are left out; the
        caller drops those that are turns too (`skip_ids_in_turns`).
        """
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
        """Every response's prompt, system and response, as `read_all` reads
        them (the same SQL, the same decoding), a chunk of the chunked-read
        rule at a time (`Snapshot.rows`: short statements in rowid order),
        so that no more than a chunk of texts is held. Responses without an
        id are left out, as `read_all` leaves them."""
        columns = ", ".join([ID, *(self._column(name) for name in TEXT_ATTRIBUTES)])
        snapshot = Snapshot(self.conn, ["responses"], progress)
        for chunk in snapshot.rows("responses", columns, alias="r"):
            rows = [row for row in chunk if row[1] is not None]
            if rows:
                _, ids, *texts = (list(column) for column in zip(*rows, strict=True))
                yield NodeTexts(ids, dict(zip(TEXT_ATTRIBUTES, texts, strict=True)))

    def tables(self) -> list[str]:
        """The tables `read_all` reads."""
        found = (
            ["responses", "conversations"] if self.has_conversations else ["responses"]
        )
        return found + self.parts.tables()

    def count_without_id(self) -> int:
        """How many responses have no id (NULL): none is a node."""
        (count,) = self.conn.execute(
            "select count(*) from responses where id is null"
        ).fetchone()
        return int(count)


def _json_list(values: list[str]) -> str:
    import json

    return json.dumps(list(values))


# -- the chain rule, per tree and per table ------------------------------------


@rule(RECORDS)
def link_as_chains(records: list[dict[str, Any]]) -> None:
    """Each response's parent is the one logged before it in its
    conversation: `records` in log order, their `parent_id` set in place."""
    previous: dict[str, str] = {}
    for record in records:
        record["parent_id"] = previous.get(record["conversation_id"])
        previous[record["conversation_id"]] = record["id"]


@table_form(link_as_chains)
def link_as_chains_table(nodes: pd.DataFrame) -> np.ndarray:
    """`link_as_chains` for a whole table in log order (index 0..n-1), in
    place: the rows of other sources (turns) keep their parents. Returns
    each row's parent row so set (-1: none, or not legacy)."""
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
