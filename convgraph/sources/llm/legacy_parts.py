"""The content of llm's legacy responses beyond prompt and answer, from tables
each added by a later llm and read only where present: tool calls and
results (0.26+), attachments, fragments (0.19+), `reasoning`.

A response's parts, in order: tool results sent, system and prompt
fragments, prompt, attachments, reasoning, answer, tool calls. A response
with an empty prompt that was sent tool results carries on a run (`RUN`)."""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from convgraph import parts as kinds
from convgraph.contract import PARTS, TOOL_CALLS
from convgraph.parts import Part, is_plain
from convgraph.sources.llm.runs import RUN, TOOL_NAMES
from convgraph.sources.llm.snapshot import Snapshot
from convgraph.sources.tables import as_integer, as_text

if TYPE_CHECKING:
    import pandas as pd

BATCH = 20_000

SOME_RESPONSES = "response_id in (select value from json_each(?))"


@dataclass
class ResponseContent:
    """What the other tables hold for one response."""

    #: The tool results it was sent, then its fragments: before its prompt.
    before: list[Part] = field(default_factory=list)
    #: Its attachments: after its prompt.
    attachments: list[Part] = field(default_factory=list)
    #: The tool calls it made: after its answer.
    calls: list[Part] = field(default_factory=list)
    #: The names of its tool calls, in order (None where a call has none).
    names: list[str | None] = field(default_factory=list)
    #: Whether it was sent tool results.
    sent_results: bool = False


#: The tables of rows by response, which `read` reads whole.
BY_RESPONSE = (
    "tool_calls",
    "tool_results",
    "prompt_attachments",
    "prompt_fragments",
    "system_fragments",
)


class LegacyParts:
    """The tables of a legacy file that hold more than prompt and answer."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self._columns: dict[str, set[str]] = {}
        for table in (
            *BY_RESPONSE,
            "tool_results_attachments",
            "attachments",
            "fragments",
        ):
            columns = {row[1] for row in conn.execute(f'pragma table_info("{table}")')}
            if columns:
                self._columns[table] = columns

    def _has(self, table: str, *columns: str) -> bool:
        return table in self._columns and set(columns) <= self._columns[table]

    def _column(self, table: str, name: str, integer: bool = False) -> str:
        if name not in self._columns.get(table, ()):
            return "null"
        quoted = f't."{name}"'
        return as_integer(quoted) if integer else as_text(quoted)

    def _size(self, table: str) -> str:
        """SQL for the size in bytes of a row's `content` (never the bytes)."""
        if "content" not in self._columns.get(table, ()):
            return "null"
        return "length(cast(t.content as blob))"

    def sent_results(self) -> bool:
        """Whether any response was sent tool results (then tool chains may
        fold calls into nodes)."""
        return self._has("tool_results", "response_id") and bool(
            self.conn.execute("select exists(select 1 from tool_results)").fetchone()[0]
        )

    def tables(self) -> list[str]:
        """The tables `read` reads whole (in a `Snapshot`)."""
        return [table for table in BY_RESPONSE if self._has(table, "response_id")]

    def read(
        self,
        response_ids: list[str] | None,
        snapshot: Snapshot | None = None,
        text: bool = True,
    ) -> dict[str, ResponseContent]:
        """What the other tables hold for these responses (None: for every response,
        each table read in `snapshot`'s short steps), by response id. `text=False`: only
        the tool calls' names and whether results were sent."""
        found: dict[str, ResponseContent] = defaultdict(ResponseContent)
        if self._has("tool_results", "response_id"):
            columns = [
                self._column("tool_results", "response_id"),
                self._column("tool_results", "name"),
                self._column("tool_results", "output"),
                self._column("tool_results", "tool_call_id"),
                self._column("tool_results", "exception"),
                self._column("tool_results", "id", integer=True),
            ]
            if not text:
                columns[1:] = ["null"] * 5
            result_rows = list(
                self._rows("tool_results", columns, response_ids, snapshot)
            )
            files = (
                self._result_attachments([row[5] for row in result_rows])
                if text
                else {}
            )
            for response_id, name, output, call_id, error, result_id in result_rows:
                content = found[response_id]
                content.sent_results = True
                if text:
                    content.before.append(
                        kinds.tool_result(name, output or "", call_id, error)
                    )
                    content.before.extend(files.get(result_id, ()))
        if text:
            self._read_fragments(found, response_ids, snapshot)
            self._read_attachments(found, response_ids, snapshot)
        if self._has("tool_calls", "response_id"):
            columns = [
                self._column("tool_calls", "response_id"),
                self._column("tool_calls", "name"),
                self._column("tool_calls", "arguments") if text else "null",
                self._column("tool_calls", "tool_call_id") if text else "null",
            ]
            for response_id, name, arguments, call_id in self._rows(
                "tool_calls", columns, response_ids, snapshot
            ):
                content = found[response_id]
                content.names.append(name)
                if text:
                    content.calls.append(
                        kinds.tool_call(name, _arguments(arguments), call_id)
                    )
        return dict(found)

    def _rows(
        self,
        table: str,
        columns: list[str],
        response_ids: list[str] | None,
        snapshot: Snapshot | None,
        order: str | None = None,
    ) -> Iterator[tuple[Any, ...]]:
        """The rows of `table` (alias t) of these responses (None: every
        row, in `snapshot`'s short steps), in the table's order: by `order`
        (SQL), then rowid. Rows without a response id are left out."""
        key = [order] if order else []
        select = ", ".join(columns)
        if response_ids is None:
            snapshot = snapshot or Snapshot(self.conn, [table])
            rows = [
                row
                for chunk in snapshot.rows(
                    table, ", ".join([select, *(key or ["null"])]), alias="t"
                )
                for row in chunk
                if row[1] is not None
            ]
            # In the table's order: by `order` (a missing one first, as
            # SQLite sorts NULL), rows of one order in rowid order.
            rows.sort(key=lambda row: (row[-1] is not None, row[-1] or 0, row[0]))
            for row in rows:
                yield row[1:-1]
            return
        for start in range(0, len(response_ids), BATCH):
            batch = json.dumps(response_ids[start : start + BATCH])
            rows = self.conn.execute(
                f"select t.rowid, {select}, {key[0] if key else 'null'}"
                f' from "{table}" t where t.{SOME_RESPONSES}',
                [batch],
            ).fetchall()
            rows.sort(key=lambda row: (row[-1] is not None, row[-1] or 0, row[0]))
            for row in rows:
                if row[1] is not None:
                    yield row[1:-1]

    def empty_prompts(self, response_ids: list[str]) -> set[str]:
        """Which of these responses have an empty prompt (NULL or '')."""
        found: set[str] = set()
        for start in range(0, len(response_ids), BATCH):
            found.update(
                row[0]
                for row in self.conn.execute(
                    f"select {as_text('r.id')} from responses r"
                    " where r.id in (select value from json_each(?))"
                    f" and coalesce({as_text('r.prompt')}, '') = ''",
                    [json.dumps(response_ids[start : start + BATCH])],
                )
            )
        return found

    def _read_fragments(
        self,
        found: dict[str, ResponseContent],
        response_ids: list[str] | None,
        snapshot: Snapshot | None,
    ) -> None:
        """Each response's system fragments, then its prompt fragments."""
        named: list[tuple[str, Any]] = []
        for table in ("system_fragments", "prompt_fragments"):
            if self._has(table, "response_id", "fragment_id"):
                named.extend(
                    self._rows(
                        table,
                        [self._column(table, "response_id"), 't."fragment_id"'],
                        response_ids,
                        snapshot,
                        order=_order(self._columns[table]),
                    )
                )
        if not named or not self._has("fragments", "id"):
            for response_id, _ in named:
                found[response_id].before.append(kinds.fragment(None))
            return
        fragments = self._by_id(
            "fragments",
            [self._column("fragments", "source"), self._size("fragments")],
            [fragment_id for _, fragment_id in named],
        )
        for response_id, fragment_id in named:
            source, size = fragments.get(fragment_id, (None, None))
            found[response_id].before.append(kinds.fragment(source, size))

    def _read_attachments(
        self,
        found: dict[str, ResponseContent],
        response_ids: list[str] | None,
        snapshot: Snapshot | None,
    ) -> None:
        """Each response's attachments, in their order."""
        table = "prompt_attachments"
        if not self._has(table, "response_id", "attachment_id"):
            return
        attached = list(
            self._rows(
                table,
                [self._column(table, "response_id"), 't."attachment_id"'],
                response_ids,
                snapshot,
                order=_order(self._columns[table]),
            )
        )
        files = self._files([attachment_id for _, attachment_id in attached])
        for response_id, attachment_id in attached:
            found[response_id].attachments.append(
                _attachment(kinds.USER, files.get(attachment_id))
            )

    def _result_attachments(self, result_ids: list[Any]) -> dict[Any, list[Part]]:
        """The attachments of these tool results, by result id, in order."""
        table = "tool_results_attachments"
        wanted = [result_id for result_id in result_ids if result_id is not None]
        if not wanted or not self._has(table, "tool_result_id", "attachment_id"):
            return {}
        rows = []
        for start in range(0, len(wanted), BATCH):
            rows += self.conn.execute(
                f'select t.rowid, t."tool_result_id", t."attachment_id",'
                f" {_order(self._columns[table])} from {table} t"
                " where t.tool_result_id in (select value from json_each(?))",
                [json.dumps(wanted[start : start + BATCH])],
            ).fetchall()
        rows.sort(key=lambda row: (row[3] is not None, row[3] or 0, row[0]))
        files = self._files([row[2] for row in rows])
        found: dict[Any, list[Part]] = defaultdict(list)
        for _, result_id, attachment_id, _ in rows:
            found[result_id].append(_attachment(kinds.TOOL, files.get(attachment_id)))
        return found

    def _files(self, attachment_ids: list[Any]) -> dict[Any, tuple[Any, ...]]:
        """Attachments by id: path, URL, type and size in bytes."""
        if not self._has("attachments", "id"):
            return {}
        return self._by_id(
            "attachments",
            [
                self._column("attachments", "path"),
                self._column("attachments", "url"),
                self._column("attachments", "type"),
                self._size("attachments"),
            ],
            attachment_ids,
        )

    def _by_id(
        self, table: str, columns: list[str], ids: list[Any]
    ) -> dict[Any, tuple[Any, ...]]:
        """Rows of `table` by their `id`, a batch of ids per statement."""
        wanted = sorted({i for i in ids if isinstance(i, int | str)}, key=str)
        found: dict[Any, tuple[Any, ...]] = {}
        for start in range(0, len(wanted), BATCH):
            for row in self.conn.execute(
                f"select t.id, {', '.join(columns)} from {table} t"
                " where t.id in (select value from json_each(?))",
                [json.dumps(wanted[start : start + BATCH])],
            ):
                found.setdefault(row[0], tuple(row[1:]))
        return found


def _order(columns: set[str]) -> str:
    return as_integer('t."order"') if "order" in columns else "null"


def _attachment(role: str, row: tuple[Any, ...] | None) -> Part:
    """An attachment part from an `attachments` row (path, URL, type, size),
    or one without a name where the row is missing."""
    if row is None:
        return kinds.attachment(role)
    path, url, mime, size = row
    return kinds.attachment(role, path, url, mime, size)


def _arguments(arguments: str | None) -> Any:
    """A tool call's arguments as JSON, or as the text stored where it is not JSON."""
    if arguments is None:
        return None
    try:
        return json.loads(arguments)
    except (ValueError, RecursionError):
        return arguments


def response_parts(
    prompt: str | None, response: str | None, content: ResponseContent | None
) -> list[Part] | None:
    """A legacy response's parts in order (see the module's docstring), or
    None where they are only its prompt and its answer."""
    if content is None:
        return None
    found: list[Part] = [*content.before]
    if prompt:
        found.append(kinds.text(kinds.USER, prompt))
    found += content.attachments
    if response:
        found.append(kinds.text(kinds.ASSISTANT, response))
    found += content.calls
    return None if is_plain(found) else found


def set_run(
    record: dict[str, Any],
    content: ResponseContent | None,
    text: bool,
    empty_prompt: bool | None = None,
) -> None:
    """A response's tool calls (`TOOL_CALLS`, `TOOL_NAMES`), whether it carries on a run
    (`RUN`: it was sent tool results, and its prompt is empty: `empty_prompt`, else told
    by its `prompt`) and, with `text`, its parts; in place."""
    names = content.names if content is not None else []
    record[TOOL_CALLS] = len(names)
    record[TOOL_NAMES] = names or None
    if empty_prompt is None:
        empty_prompt = not record["prompt"]
    record[RUN] = bool(content and content.sent_results and empty_prompt)
    record[PARTS] = (
        response_parts(record["prompt"], record["response"], content) if text else None
    )


def add_run_records(parts: LegacyParts, records: list[dict[str, Any]]) -> None:
    """`set_run` on one tree's records (read with their texts), in place."""
    wanted = [record["id"] for record in records]
    contents = parts.read(wanted) if parts.tables() and wanted else {}
    for record in records:
        set_run(record, contents.get(record["id"]), text=True)


def add_run_columns(
    parts: LegacyParts, nodes: pd.DataFrame, text: bool, snapshot: Snapshot
) -> None:
    """`set_run` on the whole table of responses, in place: only the rows of
    responses the other tables name are looked at one by one. Without the
    texts, whether a response that was sent results has an empty prompt is
    asked of those few responses alone."""
    import numpy as np
    import pandas as pd

    from convgraph.sources.tables import plain_run_columns

    count = len(nodes)
    columns = plain_run_columns(count)
    columns[RUN] = np.zeros(count, bool)
    columns[TOOL_NAMES] = np.full(count, None, dtype=object)
    contents = parts.read(None, snapshot, text) if parts.tables() and count else {}
    ids = nodes["id"].to_numpy(dtype=object)
    rows = np.flatnonzero(nodes["id"].isin(list(contents)).to_numpy()).tolist()
    empty_prompts: set[str] = set()
    if not text:
        sent = [ids[row] for row in rows if contents[ids[row]].sent_results]
        empty_prompts = parts.empty_prompts(sorted(set(sent)))
    counts = np.zeros(count, np.int64)
    for row in rows:
        record: dict[str, Any] = {
            "prompt": nodes["prompt"].iat[row] if text else None,
            "response": nodes["response"].iat[row] if text else None,
        }
        set_run(
            record,
            contents[ids[row]],
            text,
            None if text else ids[row] in empty_prompts,
        )
        counts[row] = record[TOOL_CALLS]
        for name in (RUN, TOOL_NAMES, PARTS):
            columns[name][row] = record[name]
    columns[TOOL_CALLS] = pd.arrays.IntegerArray(counts, np.zeros(count, bool))
    for name, values in columns.items():
        nodes[name] = values
