"""Read llm's legacy `responses` table, with or without `parent_response_id`.

Without the column (llm before 0.32) a conversation is a chain: each response
follows the one logged before it. With the column (the seed design notes) each
response names its parent, or none for a root. A response logged outside any
conversation (`conversation_id` NULL) is a conversation of its own.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from convgraph.contract import INTEGER_ATTRIBUTES, NODE_ATTRIBUTES, TEXT_ATTRIBUTES

if TYPE_CHECKING:
    import pandas as pd

SOURCE = "responses"


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

    def _column(self, name: str) -> str:
        """A column of `responses`, or NULL where this version of the table
        lacks it (early ones have no usage figures, no system)."""
        return f"r.{name}" if name in self._columns else f"null as {name}"

    def _select(self) -> str:
        """The query of every response as a node record, texts included;
        `read_conversations` appends its condition."""

        parent = "r.parent_response_id" if self.has_parent else "null"
        wanted = [
            name
            for name in NODE_ATTRIBUTES
            if name not in ("conversation_id", "source")
        ]
        fields = ", ".join(self._column(name) for name in wanted)
        skip = (
            " and r.id not in (select id from turns)" if self.skip_ids_in_turns else ""
        )
        return (
            f"select r.id, coalesce(r.conversation_id, r.id) as tree_id,"
            f" {parent} as parent_id, coalesce(r.conversation_id, r.id)"
            f" as conversation_id, {fields}, '{SOURCE}' as source"
            f" from responses r where 1 = 1{skip}"
        )

    # -- naming -----------------------------------------------------------

    def conversation_of(self, node_id: str) -> str | None:
        row = self.conn.execute(
            "select coalesce(conversation_id, id) from responses where id = ?",
            [node_id],
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

    def conversation_ids(self) -> list[str]:
        """Conversation ids in the order of their first response."""
        rows = self.conn.execute(
            "select coalesce(conversation_id, id) as cid from responses"
            " group by cid order by min(coalesce(datetime_utc, '')), min(id)"
        )
        return [row[0] for row in rows]

    def _names(self, conversation_ids: list[str] | None = None) -> dict[str, Any]:
        if not self.has_conversations:
            return {}
        if conversation_ids is None:
            rows = self.conn.execute("select id, name from conversations")
        else:
            rows = self.conn.execute(
                "select id, name from conversations"
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
        if not self.has_parent:
            _link_as_chains(records)
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
                select id, parent_response_id, coalesce(conversation_id, id)
                from responses where id = :node
                union
                select r.id, r.parent_response_id, coalesce(r.conversation_id, r.id)
                from responses r join up on r.id = up.parent
            )
            select id, parent, conversation from up
            """,
            {"node": node_id},
        )
        return {row[0]: (row[1], row[2]) for row in rows}

    def conversation_of_ids(self, node_ids: list[str]) -> dict[str, str]:
        """Which conversation each of these responses is in (for integrity)."""
        rows = self.conn.execute(
            "select id, coalesce(conversation_id, id) from responses"
            " where id in (select value from json_each(?))",
            [_json_list(node_ids)],
        )
        return {row[0]: row[1] for row in rows}

    def read_all(self, text: bool = True) -> tuple[pd.DataFrame, dict[str, Any]]:
        """Every response as one table, with each conversation's name.

        Only the columns that hold something are selected (`text=False`
        leaves the texts out altogether); the tree id, the source and the
        texts left out are filled in as columns afterwards, not per row.
        """
        import pandas as pd

        from convgraph.sources.tables import read_frame

        parent = "r.parent_response_id" if self.has_parent else "null"
        texts = [self._column(name) for name in TEXT_ATTRIBUTES] if text else []
        query = (
            "select r.id, coalesce(r.conversation_id, r.id) as conversation_id,"
            f" {parent} as parent_id, r.model, r.datetime_utc, "
            + ", ".join([self._column(name) for name in INTEGER_ATTRIBUTES] + texts)
            + " from responses r"
            + (
                " where r.id not in (select id from turns)"
                if self.skip_ids_in_turns
                else ""
            )
        )
        nodes = read_frame(
            self.conn.execute(query),
            categories=("conversation_id", "model"),
            integers=INTEGER_ATTRIBUTES,
        )
        nodes.insert(1, "tree_id", nodes["conversation_id"])
        for name in TEXT_ATTRIBUTES:
            if name not in nodes:
                nodes[name] = None
        nodes["source"] = pd.Categorical([SOURCE] * len(nodes))
        nodes["_continues"] = False
        return nodes, self._names()


def _json_list(values: list[str]) -> str:
    import json

    return json.dumps(list(values))


def _link_as_chains(records: list[dict[str, Any]]) -> None:
    """Each response's parent is the one logged before it in its conversation."""
    previous: dict[str, str] = {}
    for record in records:
        record["parent_id"] = previous.get(record["conversation_id"])
        previous[record["conversation_id"]] = record["id"]


def link_frame_as_chains(nodes: pd.DataFrame) -> None:
    """`_link_as_chains` for a whole table in log order, in place."""
    is_legacy = nodes["source"] == SOURCE
    previous = nodes[is_legacy].groupby("conversation_id", sort=False)["id"].shift(1)
    nodes.loc[is_legacy, "parent_id"] = previous
