"""Read llm's content-addressed message store (llm 0.32 and later).

`messages` form a parent-linked tree of content; a `turn` (a model call) runs from its
input message to its tip; `threads` are named pointers, a fork naming its origin. A tree
is an original thread with every thread forked from it, named by its id; a cycle of
forks (hostile) is named by its smallest thread id and reported as `fork-cycle`."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from convgraph.contract import INTEGER_ATTRIBUTES, SOURCE_ATTRIBUTES, TEXT_ATTRIBUTES
from convgraph.links.integrity import FORK_CYCLE, ParentWalk, Problem, break_cycles
from convgraph.sources.llm.files import table_names
from convgraph.sources.llm.generations import CONTINUES
from convgraph.sources.llm.message_chains import (
    Chains,
    add_texts,
    own_messages,
    system_of,
)
from convgraph.sources.llm.message_parts import read_content, read_tool_names
from convgraph.sources.llm.runs import RUN, TOOL_NAMES
from convgraph.sources.llm.snapshot import Snapshot
from convgraph.sources.llm.turn_parents import turn_parents
from convgraph.sources.source import log_order, prefix_range
from convgraph.sources.tables import as_integer, as_text

if TYPE_CHECKING:
    import pandas as pd

SOURCE = "turns"


@dataclass(frozen=True)
class Continuation:
    """A parentless turn below legacy history that llm 0.32+ rebuilt as
    messages (`generations.legacy_parent` finds its parent): its thread and
    those it was forked from, and the answers above its input, oldest first."""

    threads: tuple[str, ...]
    answers: tuple[str, ...]


TURN_NAMES = tuple(
    "id thread_id parent_message_hash tip_message_hash model datetime_utc"  # noqa: SIM905 (words)
    " input_tokens output_tokens duration_ms".split()
)
TURN_COLUMNS = ", ".join(
    f"{as_integer(name) if name in INTEGER_ATTRIBUTES else as_text(name)} as {name}"
    for name in TURN_NAMES
)
TURN_IS_NODE = "id is not null and thread_id is not null"

# The messages above a set of tips, each once: UNION (not UNION ALL) makes a
# hostile cycle in parent_hash end instead of looping.
CHAIN_SQL = """
with recursive chain(hash) as (
    select tip_message_hash from turns
    where thread_id in (select value from json_each(:threads))
    union
    select parent_message_hash from turns
    where thread_id in (select value from json_each(:threads))
    union
    select m.parent_hash from messages m join chain c on m.hash = c.hash
    where m.parent_hash is not null
)
select cast(m.hash as text), cast(m.parent_hash as text), cast(m.role as text)
from messages m join chain using (hash)
"""

MESSAGE_COLUMNS = "cast(hash as text), cast(parent_hash as text), cast(role as text)"

SOME_THREADS = " where thread_id in (select value from json_each(:threads))"


class MessageStoreReader:
    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        tables = table_names(conn)
        self.has_attachments = {"part_attachments", "attachments"} <= tables

    def has_thread(self, thread_id: str) -> bool:
        return bool(
            self.conn.execute(
                "select 1 from threads where id = ?", [thread_id]
            ).fetchone()
        )

    def has_turns(self) -> bool:
        return self.conn.execute("select 1 from turns limit 1").fetchone() is not None

    def thread_of_turn(self, turn_id: str) -> str | None:
        row = self.conn.execute(
            "select cast(thread_id as text) from turns"
            " where id = ? and thread_id is not null",
            [turn_id],
        ).fetchone()
        return row[0] if row else None

    def turns_from(self, prefix: str, limit: int) -> list[tuple[str, str, Any]]:
        """Up to `limit` turns whose id begins with `prefix`: id, thread, input."""
        condition, parameters = prefix_range("t.id", prefix)
        given = (
            "(select group_concat(cast(p.text as text), ' ') from parts p"
            " where p.message_hash = t.parent_message_hash and p.type = 'text')"
        )
        rows = self.conn.execute(
            f"select cast(t.id as text), cast(t.thread_id as text),"
            f" substr({given}, 1, 200) from turns t"
            f" where {condition} and t.thread_id is not null order by t.id limit ?",
            [*parameters, limit],
        )
        return [tuple(row) for row in rows]

    def threads_from(self, prefix: str, limit: int) -> list[tuple[str, Any]]:
        """Up to `limit` threads whose id begins with `prefix`: id, name."""
        condition, parameters = prefix_range("id", prefix)
        rows = self.conn.execute(
            "select cast(id as text), cast(name as text) from threads"
            f" where {condition} order by id limit ?",
            [*parameters, limit],
        )
        return [tuple(row) for row in rows]

    def turn_end(self, turn_id: str) -> dict[str, Any] | None:
        """A turn's `thread_id`, `tip_message_hash` and `model`, or None."""
        row = self.conn.execute(
            "select cast(thread_id as text) as thread_id,"
            " cast(tip_message_hash as text) as tip_message_hash,"
            " cast(model as text) as model from turns"
            " where id = ? and thread_id is not null",
            [turn_id],
        ).fetchone()
        return dict(row) if row else None

    def broken_chain(self, tip: str | None) -> str | None:
        """Why the messages from `tip` up are no history (missing, a cycle),
        or None. llm's `load_chain` raises KeyError or loops forever there."""
        missing: list[Any] = []

        def parent_of(message_hash: Any) -> Any:
            row = self.conn.execute(
                "select parent_hash from messages where hash = ?", [message_hash]
            ).fetchone()
            if row is None:
                missing.append(message_hash)
                return None
            return row[0]

        walk = ParentWalk(tip, parent_of)
        walked = sum(1 for _ in walk)
        if missing:
            where = "it ends at" if walked == 1 else "its history goes up to"
            return f"{where} message {missing[0]!s}, which is not in the file"
        if walk.repeat is not None:
            return (
                f"the parent links of its history go round a cycle"
                f" (message {walk.repeat!s} is its own ancestor)"
            )
        return None

    def root_thread(self, thread_id: str) -> str:
        """The original thread up `forked_from` (a cycle's smallest id)."""
        walk = ParentWalk(thread_id, self._forked_from)
        walked = list(walk)
        cycle = walk.cycle(walked)
        return min(cycle) if cycle else walked[-1]

    def _forked_from(self, thread_id: str) -> str | None:
        row = self.conn.execute(
            "select cast(t.forked_from as text) from threads t join threads f"
            " on f.id = t.forked_from where t.id = ?",
            [thread_id],
        ).fetchone()
        return row[0] if row else None

    def member_threads(self, tree_id: str) -> dict[str, dict[str, Any]]:
        """The original thread and every thread forked from it, transitively."""
        rows = self.conn.execute(
            """
            with recursive members(id) as (
                select :root
                union
                select t.id from threads t join members m on t.forked_from = m.id
            )
            select cast(t.id as text) as id, cast(t.name as text) as name,
                cast(t.forked_from as text) as forked_from
            from threads t join members using (id)
            """,
            {"root": tree_id},
        )
        return {row["id"]: dict(row) for row in rows}

    def _all_forks(self, snapshot: Snapshot | None = None) -> dict[str, str | None]:
        """Every thread's `forked_from`, None for an original."""
        snapshot = snapshot or Snapshot(self.conn, ["threads"])
        return {
            row[1]: row[2]
            for chunk in snapshot.rows(
                "threads", "cast(id as text), cast(forked_from as text)"
            )
            for row in chunk
            if row[1] is not None
        }

    def fork_problems(
        self, threads: dict[str, dict[str, Any]] | None = None
    ) -> list[Problem]:
        """The cycles of forks among `threads` (`member_threads`) or all."""
        forks: dict[str, str | None]
        if threads is None:
            # Only forks can be on a cycle of forks.
            forks = {t: f for t, f in self._all_forks().items() if f is not None}
        else:
            forks = {tid: row["forked_from"] for tid, row in threads.items()}
        return _thread_roots(forks)[1]

    def first_turns(self) -> list[tuple[str, str, str]]:
        """Each thread's tree, first time ('' for none) and least turn id."""
        roots = _thread_roots(self._all_forks())[0]
        rows = self.conn.execute(
            "select cast(thread_id as text),"
            " min(coalesce(cast(datetime_utc as text), '')) as first,"
            f" min(cast(id as text)) from turns where {TURN_IS_NODE}"
            " group by thread_id order by first, 3"
        )
        return [(roots.get(row[0], row[0]), row[1], row[2]) for row in rows]

    def read_turns(
        self, threads: dict[str, dict[str, Any]], tree_id: str
    ) -> list[dict[str, Any]]:
        thread_roots = dict.fromkeys(threads, tree_id)
        forked_from = {tid: row["forked_from"] for tid, row in threads.items()}
        return self._read(list(threads), thread_roots, forked_from, text=True)

    def count_unplaced(self) -> tuple[int, int]:
        row = self.conn.execute(
            "select (select count(*) from turns where id is null),"
            " (select count(*) from turns where thread_id is null"
            " and id is not null)"
        ).fetchone()
        return row[0], row[1]

    def tables(self) -> list[str]:
        return ["threads", "turns", "messages", "parts", "fragments"]

    def read_all(
        self, text: bool = True, snapshot: Snapshot | None = None
    ) -> tuple[pd.DataFrame, dict[str, Any], dict[str, str]]:
        """Every turn as one table, the trees' names, each thread's tree."""
        import pandas as pd

        if snapshot is None:
            snapshot = Snapshot(self.conn, self.tables())
        threads = {
            row[1]: {"id": row[1], "name": row[2], "forked_from": row[3]}
            for chunk in snapshot.rows(
                "threads",
                "cast(id as text), cast(name as text), cast(forked_from as text)",
            )
            for row in chunk
            if row[1] is not None
        }
        forked_from = {tid: row["forked_from"] for tid, row in threads.items()}
        thread_roots = _thread_roots(forked_from)[0]
        records = self._read(None, thread_roots, forked_from, text, snapshot)
        columns = [
            "id",
            "tree_id",
            "parent_id",
            *SOURCE_ATTRIBUTES,
            CONTINUES,
            RUN,
            TOOL_NAMES,
        ]
        # Texts as objects: pandas' string dtype shows missing as NaN, which
        # concatenating with the legacy table would keep.
        nodes = pd.DataFrame.from_records(records, columns=columns)
        for name in INTEGER_ATTRIBUTES:  # as Int64: a float64 loses 2**53 and up
            nodes[name] = pd.array([r.get(name) for r in records], dtype="Int64")
        for name in TEXT_ATTRIBUTES:
            values = nodes[name]
            nodes[name] = values.astype(object).where(values.notna(), None)
        names = {
            tid: row["name"]
            for tid, row in threads.items()
            if thread_roots.get(tid, tid) == tid
        }
        return nodes, names, thread_roots

    def _read(
        self,
        thread_ids: list[str] | None,
        thread_roots: dict[str, str],
        forked_from: dict[str, str | None],
        text: bool,
        snapshot: Snapshot | None = None,
    ) -> list[dict[str, Any]]:
        """Node records of the turns of `thread_ids`; None reads every thread
        from whole tables instead of walking chains."""
        threads_json = json.dumps(thread_ids)
        if thread_ids is None:
            snapshot = snapshot or Snapshot(self.conn, self.tables())
            turns = [
                dict(zip(TURN_NAMES, row[1:], strict=True))
                for chunk in snapshot.rows("turns", TURN_COLUMNS)
                for row in chunk
                if row[1] is not None and row[2] is not None
            ]
            # Rowid order is log order unless a clock went back: one pass.
            turns.sort(key=log_order)
        else:
            turns = [
                dict(row)
                for row in self.conn.execute(
                    f"select {TURN_COLUMNS} from turns{SOME_THREADS}"
                    " and id is not null"
                    " order by coalesce(cast(datetime_utc as text), ''),"
                    " cast(id as text)",
                    {"threads": threads_json},
                )
            ]
        if not turns:
            return []
        if thread_ids is None:
            assert snapshot is not None
            messages = {
                row[1]: (row[2], row[3])
                for chunk in snapshot.rows("messages", MESSAGE_COLUMNS)
                for row in chunk
                if row[1] is not None
            }
        else:
            messages = {
                row[0]: (row[1], row[2])
                for row in self.conn.execute(CHAIN_SQL, {"threads": threads_json})
                if row[0] is not None
            }
        chains = Chains(messages)
        hashes = None if thread_ids is None else list(messages)
        content = (
            read_content(self.conn, hashes, snapshot, self.has_attachments)
            if text
            else None
        )
        tool_names = (
            content.tool_names
            if content is not None
            else read_tool_names(self.conn, hashes, snapshot)
        )
        system_hashes = {h for h, (_, role) in messages.items() if role == "system"}
        # Answers above continuing turns are read even without texts.
        continuing: list[tuple[dict[str, Any], list[str]]] = []

        for turn in turns:
            turn["tree_id"] = thread_roots.get(turn["thread_id"], turn["thread_id"])
        parents = turn_parents(turns, chains.nearest, forked_from)

        records = []
        for turn, parent, (input_hashes, output_hashes) in zip(
            turns, parents, own_messages(turns, chains), strict=True
        ):
            start = turn["parent_message_hash"]
            answers_above = chains.answers_above(start) if parent is None else []
            names = [
                name
                for message_hash in (*input_hashes, *output_hashes)
                for name in tool_names.get(message_hash, ())
            ]
            record = {
                "id": turn["id"],
                "tree_id": turn["tree_id"],
                "parent_id": parent["id"] if parent else None,
                "conversation_id": turn["thread_id"],
                "prompt": None,
                "system": None,
                "response": None,
                "parts": None,
                "tool_calls": len(names),
                "tools": None,
                "model": turn["model"],
                "datetime_utc": turn["datetime_utc"],
                "input_tokens": turn["input_tokens"],
                "output_tokens": turn["output_tokens"],
                "duration_ms": turn["duration_ms"],
                "source": SOURCE,
                CONTINUES: None,
                # Sent tool results: the call carries on the run above.
                RUN: messages.get(start, (None, None))[1] == "tool",
                TOOL_NAMES: names or None,
            }
            if content is not None:
                add_texts(record, content, messages, input_hashes, output_hashes)
                record["system"] = system_of(content, chains, start, system_hashes)
            records.append(record)
            if answers_above:
                continuing.append((record, answers_above))
        if continuing:
            wanted = sorted({h for _, hashes in continuing for h in hashes})
            answers = content or read_content(self.conn, wanted, None, False)
            for record, hashes in continuing:
                record[CONTINUES] = Continuation(
                    threads=tuple(ParentWalk(record["conversation_id"], forked_from)),
                    answers=tuple(answers.text_of(h) or "" for h in hashes),
                )
        return records


def _thread_roots(
    forked_from: dict[str, str | None],
) -> tuple[dict[str, str], list[Problem]]:
    """Each thread's original thread, as `root_thread` says, and the cycles
    of forks found."""

    def parent_of(thread_id: str) -> str | None:
        parent = forked_from[thread_id]
        return parent if parent in forked_from else None

    roots: dict[str, str] = {}
    problems: list[Problem] = []
    for thread_id, parent in forked_from.items():
        # llm writes a fork after its origin: most threads need no walk.
        if parent is None or parent not in forked_from:
            roots[thread_id] = thread_id
            continue
        if parent in roots:
            roots[thread_id] = roots[parent]
            continue
        if thread_id in roots:
            continue
        walked = []
        walk = ParentWalk(thread_id, parent_of)
        for current in walk:
            if current in roots:
                root = roots[current]
                break
            walked.append(current)
        else:
            cycle = walk.cycle(walked)
            root = min(cycle) if cycle else walked[-1]
            if cycle:
                links: dict[str, str | None] = dict(
                    zip(cycle, cycle[1:] + cycle[:1], strict=True)
                )
                problems.extend(
                    break_cycles(
                        links, sorted(cycle), {t: t for t in cycle}, FORK_CYCLE
                    )
                )
        for walked_id in walked:
            roots[walked_id] = root
    return roots, problems
