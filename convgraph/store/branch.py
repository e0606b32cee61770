"""Continue a conversation from any node with llm's Python API: one answer (`branch`),
several at once (`fan_out`), or a node's prompt asked again (`regenerate`). The models
are called before any write (`store.fanout`), so a slow model never holds the lock; each
answer is logged by `log_answer`, the one place that decides how, in a short transaction
of its own. llm is imported here only."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from convgraph.errors import BranchError
from convgraph.sources.llm.old_writers import has_table
from convgraph.store.branch_point import (
    BranchPoint,
    open_history,
    point_below,
    point_beside,
    with_system,
)
from convgraph.store.fanout import DONE, Job, Request, outside_event_loop, run_requests
from convgraph.store.responses import LoggedNode, log_response, require_llm
from convgraph.store.transaction import (
    connect_read_write,
    database_path,
    reporting_locks,
    write_transaction,
)
from convgraph.store.upgrade import upgrade_llm_tables

if TYPE_CHECKING:
    from convgraph.analysis.compare import Comparison

#: How many requests run at a time unless told otherwise.
DEFAULT_PARALLEL = 8

#: Why branching needs llm, said when it is not installed.
NEEDS_LLM = "branching calls a model through llm"


@dataclass(frozen=True)
class Answer:
    """A logged answer: the new node, its conversation (the new thread, which
    `llm -c --cid` continues), and the model and try that gave it."""

    node_id: str
    conversation_id: str
    model: str
    attempt: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Failure:
    """A request that gave no logged answer, and why (one line)."""

    model: str
    attempt: int
    reason: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "attempt": self.attempt, "reason": self.reason}


@dataclass(frozen=True)
class FanOut:
    """What a fan-out did: answers logged and requests failed, in the order
    asked, and whether Ctrl-C stopped it."""

    parent_id: str | None
    tree_node: str
    answers: list[Answer]
    failures: list[Failure]
    interrupted: bool
    path: Path

    @property
    def ok(self) -> bool:
        """Every request gave a logged answer."""
        return not self.failures and not self.interrupted

    def comparison(self) -> Comparison:
        """The `compare` table of the new answers and their siblings (for new
        roots, the node asked again and its regenerations)."""
        from convgraph.analysis.compare import compare
        from convgraph.model.loading import load_tree_of_node

        tree = load_tree_of_node(self.tree_node, self.path)
        if self.parent_id is not None:
            return compare(tree, self.parent_id)
        # Roots have no parent: give them one that is not a node id.
        tree = tree.copy()
        above = "(new roots)"
        while above in tree:
            above += "'"
        new = {answer.node_id for answer in self.answers} | {self.tree_node}
        tree.add_node(above)
        tree.add_edges_from((above, node) for node in list(tree) if node in new)
        return compare(tree, above)


ProgressCallback = Callable[[list[Job]], None]


class _Asked(NamedTuple):
    """What `fan_out` and `regenerate` ask, beside where and what."""

    models: Sequence[str]
    tries: int
    options: Mapping[str, Any] | None
    parallel: int
    request_timeout: float | None
    lock_timeout: float | None
    on_change: ProgressCallback | None


def branch(
    node_id: str,
    prompt: str,
    db: str | os.PathLike[str] | None = None,
    *,
    model: str | None = None,
    system: str | None = None,
    timeout: float | None = None,
    request_timeout: float | None = None,
) -> LoggedNode:
    """Prompt a model with the history up to `node_id`, and log the answer as a new
    child of that node. `model` defaults to the node's own; `system` is given after the
    history; `timeout` is for the write lock, `request_timeout` for the model (None: no
    limit). Returns the new node and its conversation (the new thread, for `llm -c
    --cid`). Raises `UnknownNode`, `NotMigrated` (a legacy file without the
    parent column or rules), `BranchError` (llm is missing, the model is unknown
    or failed), `DatabaseError`, `DatabaseLocked`, `RuleViolation`."""
    result = fan_out(
        node_id,
        prompt,
        db,
        models=[model] if model else [],
        system=system,
        lock_timeout=timeout,
        request_timeout=request_timeout,
    )
    return single_answer(result)


def single_answer(result: FanOut) -> LoggedNode:
    """The one answer of a one-request fan-out, or its failure as BranchError."""
    if result.failures:
        raise BranchError(result.failures[0].message)
    if not result.answers:
        raise BranchError("interrupted: nothing was logged")
    answer = result.answers[0]
    return LoggedNode(answer.node_id, answer.conversation_id)


def fan_out(
    node_id: str,
    prompt: str,
    db: str | os.PathLike[str] | None = None,
    *,
    models: Sequence[str] = (),
    tries: int = 1,
    system: str | None = None,
    options: Mapping[str, Any] | None = None,
    parallel: int = DEFAULT_PARALLEL,
    request_timeout: float | None = None,
    lock_timeout: float | None = None,
    on_change: ProgressCallback | None = None,
) -> FanOut:
    """Ask several models (or one several times, `tries`) to continue from `node_id`
    with `prompt`, logging every answer as a new child of the node. Raises
    `UnknownNode`, `NotMigrated`, `BranchError (llm missing)`, `DatabaseError`."""
    return _fan_out_at(
        db,
        lambda path: (point_below(path, node_id), prompt, system),
        _Asked(
            models, tries, options, parallel, request_timeout, lock_timeout, on_change
        ),
    )


def regenerate(
    node_id: str,
    db: str | os.PathLike[str] | None = None,
    *,
    models: Sequence[str] = (),
    tries: int = 1,
    options: Mapping[str, Any] | None = None,
    parallel: int = DEFAULT_PARALLEL,
    request_timeout: float | None = None,
    lock_timeout: float | None = None,
    on_change: ProgressCallback | None = None,
) -> FanOut:
    """Ask `node_id`'s own prompt and system prompt again from its parent's history, so
    every answer is a sibling (a root's answers are new roots). The parameters are
    `fan_out`'s. Raises `UnknownNode`, `NotMigrated`, `BranchError (llm missing)`,
    `DatabaseError`."""

    def beside(path: Path) -> tuple[BranchPoint, str, str | None]:
        point, node = point_beside(path, node_id)
        return point, node["prompt"] or "", node["system"]

    return _fan_out_at(
        db,
        beside,
        _Asked(
            models, tries, options, parallel, request_timeout, lock_timeout, on_change
        ),
    )


def _fan_out_at(
    db: str | os.PathLike[str] | None,
    where: Callable[[Path], tuple[BranchPoint, str, str | None]],
    asked: _Asked,
) -> FanOut:
    """Import llm first (so its absence is said before the file is read), then,
    outside any running event loop, find the point (`where`) and run."""
    llm = require_llm(NEEDS_LLM, BranchError)
    return outside_event_loop(lambda: _run(llm, where(database_path(db)), asked))


def _run(llm: Any, where: tuple[BranchPoint, str, str | None], asked: _Asked) -> FanOut:
    point, prompt, system = where
    models, tries, options, parallel, request_timeout, lock_timeout, on_change = asked
    model_ids = list(models) or [point.default_model or llm.get_default_model()]
    conn = connect_read_write(point.path, lock_timeout)
    try:
        with reporting_locks(conn):
            open_history(llm, conn, point)
            messages = with_system(llm, point.history, point.current_system, system)
            requests = [
                Request(
                    model_id, attempt, prompt, messages, system, dict(options or {})
                )
                for model_id in model_ids
                for attempt in range(1, tries + 1)
            ]
            outcome = run_requests(
                requests,
                lambda job, response: log_answer(conn, point, response, system),
                parallel=parallel,
                timeout=request_timeout,
                on_change=on_change,
            )
    finally:
        conn.close()
    answers, failures = [], []
    for job in outcome.jobs:
        request = job.request
        if job.state == DONE:
            logged: LoggedNode = job.result
            answers.append(
                Answer(
                    logged.node_id,
                    logged.conversation_id,
                    request.model_id,
                    request.attempt,
                )
            )
        else:
            failures.append(
                Failure(
                    request.model_id, request.attempt, job.reason or "", job.message
                )
            )
    return FanOut(
        point.parent_id,
        point.tree_node,
        answers,
        failures,
        outcome.interrupted,
        point.path,
    )


def log_answer(
    conn: sqlite3.Connection, point: BranchPoint, response: Any, system: str | None
) -> LoggedNode:
    """Log one completed answer below the branch point, in one short transaction. In the
    message store: a new thread forked at the parent turn's output (a new root: an empty
    thread beside the asked root's), the turn in it."""
    name = thread_name(response)
    if point.store is not None:
        store = point.store
        with write_transaction(conn):
            if point.turn is not None:
                thread = store.fork(
                    point.turn["tip_message_hash"],
                    name=name,
                    forked_from=point.turn["thread_id"],
                )
            else:
                thread = store.create_thread(name=name, forked_from=point.thread_id)
            turn_id = store.log(response, thread_id=thread)
        return LoggedNode(turn_id, thread)
    if (
        point.graph is not None
        and point.parent_id is not None
        and has_table(conn, "turns")
    ):
        import sqlite_utils
        from llm.logs import LogStore

        # llm's pending migrations in one transaction (store.upgrade).
        upgrade_llm_tables(conn)
        store = LogStore(sqlite_utils.Database(conn))  # type: ignore[no-untyped-call]
        conversation = point.graph.nodes[point.parent_id]["conversation_id"]
        with write_transaction(conn):
            # Forked from the conversation's thread, so it is a branch of its
            # tree; made here, that thread points at no message and `llm -c`
            # of the conversation still replays its responses.
            if not conn.execute(
                "select 1 from threads where id = ?", [conversation]
            ).fetchone():
                store.create_thread(name=point.graph.graph.get("name"), id=conversation)
            tip = store.ensure_chain(point.history)
            assert tip is not None  # the history ends with the parent's answer
            thread = store.fork(tip, name=name, forked_from=conversation)
            turn_id = store.log(response, thread_id=thread)
        return LoggedNode(turn_id, thread)
    options = {
        key: value
        for key, value in dict(response.prompt.options).items()
        if value is not None
    }
    return log_response(
        conn,
        prompt=response.prompt.prompt,
        response=response.text(),
        model=response.model.model_id,
        parent_response_id=point.parent_id,
        conversation_id=point.conversation_id,
        system=system,
        datetime_utc=response.datetime_utc(),
        input_tokens=response.input_tokens,
        output_tokens=response.output_tokens,
        duration_ms=response.duration_ms(),
        columns={
            "options_json": json.dumps(options),
            "prompt_json": _json_or_none(getattr(response, "_prompt_json", None)),
            "response_json": _json_or_none(getattr(response, "response_json", None)),
            "token_details": _json_or_none(getattr(response, "token_details", None)),
            "resolved_model": getattr(response, "resolved_model", None),
        },
    )


def thread_name(response: Any) -> str:
    """A new thread's name as llm names one: the prompt (else system prompt) on
    one line, cut to llm's length with an ellipsis."""
    from llm import models

    limit = getattr(models, "CONVERSATION_NAME_LENGTH", 32)
    text = " ".join((response.prompt.prompt or response.prompt.system or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _json_or_none(value: Any) -> str | None:
    return None if value is None else json.dumps(value, default=str)
