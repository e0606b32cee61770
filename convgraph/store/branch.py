"""Continue a conversation from any node, with llm's own Python API: one
answer (`branch`), several at once (`fan_out`), or a node's prompt asked
again (`regenerate`).

Every model is given the same history, from the root down to the node, then
the new prompt; every answer is logged as a new child of the node.

- In llm's message store the node is a turn: a new thread is forked at the
  turn's output (`LogStore.fork`) and the new turn is logged into it, so the
  fork has a turn of its own and `llm -c --cid FORK` continues it.
- In a legacy database with the parent column the history is rebuilt from
  the path's prompts and responses, and the answer becomes a response whose
  `parent_response_id` is the node, in the node's conversation, written by
  `log_response` under the database's rules.

How an answer is written is decided in one place, `log_answer`. The models
are called before any write begins (`convgraph.store.fanout` runs them
concurrently), so a slow model never holds the write lock; each answer is
logged by the thread that called, in a short transaction of its own, once it
is complete. llm is imported here only: convgraph reads databases without it.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convgraph.errors import BranchError, UnknownNode
from convgraph.store.fanout import (
    DONE,
    Job,
    Request,
    outside_event_loop,
    run_requests,
)
from convgraph.store.responses import LoggedNode, log_response, require_llm
from convgraph.store.rules import require_rules
from convgraph.store.transaction import (
    connect_read_write,
    database_path,
    reporting_locks,
    write_transaction,
)
from convgraph.store.upgrade import upgrade_llm_tables

if TYPE_CHECKING:
    import networkx as nx

    from convgraph.analysis.compare import Comparison

#: How many requests run at a time unless told otherwise.
DEFAULT_PARALLEL = 8

#: Why branching needs llm, said when it is not installed.
NEEDS_LLM = "branching calls a model through llm"


@dataclass
class BranchPoint:
    """Where new answers hang, and the history each model is given first.

    `parent_id` is the node the answers become children of; None when they
    are new roots (a root's prompt asked again), which then go in `thread_id`'s
    tree (message store) or `conversation_id` (legacy).
    """

    path: Path
    parent_id: str | None
    tree_node: str
    default_model: str | None
    history: list[Any] = field(default_factory=list)
    current_system: str | None = None
    #: The message store's LogStore, when the answers are turns.
    store: Any = None
    #: The parent turn's `thread_id` and `tip_message_hash`.
    turn: dict[str, Any] | None = None
    thread_id: str | None = None
    conversation_id: str | None = None
    #: The legacy tree, whose path down to `parent_id` is the history.
    graph: nx.DiGraph[Any] | None = None


@dataclass(frozen=True)
class Answer:
    """An answer that was logged: the new node, its conversation (for the
    message store the new thread, which `llm -c --cid` continues), and the
    model and try that gave it."""

    node_id: str
    conversation_id: str
    model: str
    attempt: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "node_id": self.node_id,
            "conversation_id": self.conversation_id,
            "model": self.model,
            "attempt": self.attempt,
        }


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
    """What a fan-out did: the answers logged and the requests that failed,
    each in the order asked, and whether Ctrl-C stopped it."""

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
        """The `compare` table of the new answers and their siblings: the
        children of the parent, or for new roots the node asked again and
        its regenerations (separate roots are otherwise no alternatives)."""
        from convgraph.analysis.compare import compare
        from convgraph.model.loading import load_tree_of_node

        tree = load_tree_of_node(self.tree_node, self.path)
        if self.parent_id is not None:
            return compare(tree, self.parent_id)
        # Roots have no parent to compare under: give the asked root and its
        # new roots one that is not a node id.
        tree = tree.copy()
        above = "(new roots)"
        while above in tree:
            above += "'"
        new = {answer.node_id for answer in self.answers}
        tree.add_node(above)
        tree.add_edges_from(
            (above, node)
            for node in list(tree)
            if node in new or node == self.tree_node
        )
        return compare(tree, above)


ProgressCallback = Callable[[list[Job]], None]


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
    """Prompt a model with the history up to `node_id`, and log the answer
    as a new child of that node.

    Parameters
    ----------
    node_id
        The node to continue from: a turn or a legacy response.
    prompt
        The new prompt.
    db
        The database; llm's own logs.db when None.
    model
        An llm model id or alias; by default the node's own model.
    system
        A system prompt for the new call (given to the model before the
        prompt, after the history).
    timeout
        Seconds to wait for the database's write lock.
    request_timeout
        Seconds the model may take; None for no limit.

    Returns
    -------
    LoggedNode
        The new node's id, and its conversation id (for the message store,
        the new thread: `llm -c --cid` it to go on).

    Raises
    ------
    UnknownNode
        No node has this id.
    NotMigrated
        The node is a legacy response and the database has no parent column
        (or no rules) yet.
    BranchError
        llm is missing, the model is unknown, or the model failed.
    DatabaseError, DatabaseLocked, RuleViolation
    """
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
    """The one answer of a fan-out of one request, or its failure as a
    `BranchError`."""
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
    """Ask several models, or one model several times, to continue from
    `node_id` with `prompt`; log every answer as a new child of the node.

    Every model gets the same history (root to `node_id`, then `prompt`).
    The requests run concurrently (see `convgraph.store.fanout`); each answer
    is logged once complete, in its own short transaction. A failing request
    (unknown model, missing key, an error mid-stream, `request_timeout`)
    loses no other answer.

    Parameters
    ----------
    models
        llm model ids or aliases; none means the node's own model.
    tries
        How many answers to ask of each model.
    options
        Model options (`-o KEY VALUE`), given to every model.
    parallel
        At most this many requests at a time.
    on_change
        Called with the jobs whenever one changes (a live display).

    Returns
    -------
    FanOut
        The answers and failures, in the order asked.

    Raises
    ------
    UnknownNode, NotMigrated, BranchError (llm missing), DatabaseError
    """
    return _fan_out_at(
        db,
        lambda path: (_point_below(path, node_id), prompt, system),
        models,
        tries,
        options,
        parallel,
        request_timeout,
        lock_timeout,
        on_change,
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
    """Ask `node_id`'s own prompt (and system prompt) again, from the history
    down to its parent, so that every answer is a sibling of `node_id`.

    The default model is the node's own. A root is asked with no history;
    its answers are new roots of its conversation tree. The other parameters
    are `fan_out`'s.

    Raises
    ------
    UnknownNode, NotMigrated, BranchError (llm missing), DatabaseError
    """

    def beside(path: Path) -> tuple[BranchPoint, str, str | None]:
        point, node = _point_beside(path, node_id)
        return point, node["prompt"] or "", node["system"]

    return _fan_out_at(
        db,
        beside,
        models,
        tries,
        options,
        parallel,
        request_timeout,
        lock_timeout,
        on_change,
    )


def _fan_out_at(
    db: str | os.PathLike[str] | None,
    where: Callable[[Path], tuple[BranchPoint, str, str | None]],
    models: Sequence[str],
    tries: int,
    options: Mapping[str, Any] | None,
    parallel: int,
    request_timeout: float | None,
    lock_timeout: float | None,
    on_change: ProgressCallback | None,
) -> FanOut:
    """What `fan_out` and `regenerate` both do: import llm first (so that a
    missing llm is said before the file is read), then, outside any running
    event loop, find the branch point, the prompt and the system prompt in
    the file (`where`), ask the models and log each answer."""
    llm = require_llm(NEEDS_LLM, BranchError)

    def run() -> FanOut:
        point, prompt, system = where(database_path(db))
        return _run(
            llm,
            point,
            prompt,
            system,
            models,
            tries,
            options,
            parallel,
            request_timeout,
            lock_timeout,
            on_change,
        )

    return outside_event_loop(run)


def _run(
    llm: Any,
    point: BranchPoint,
    prompt: str,
    system: str | None,
    models: Sequence[str],
    tries: int,
    options: Mapping[str, Any] | None,
    parallel: int,
    request_timeout: float | None,
    lock_timeout: float | None,
    on_change: ProgressCallback | None,
) -> FanOut:
    model_ids = list(models) or [point.default_model or llm.get_default_model()]
    conn = connect_read_write(point.path, lock_timeout)
    try:
        with reporting_locks(conn):
            _open_history(llm, conn, point)
            messages = _with_system(llm, point.history, point.current_system, system)
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
    """Log one completed answer below the branch point, in one short
    transaction: the one place that decides how a branch is written.

    In the message store: a new thread, forked at the parent turn's output
    (or, for a new root, started empty beside the asked root's thread), and
    the turn in it; the thread is named as llm names a new conversation. A
    legacy node of a file that has the message store is branched the same
    way, with a fork at its history rebuilt as messages (as llm 0.32+
    rebuilds legacy history), so `llm -c --cid NEW_THREAD` goes on with that
    branch alone: llm would replay every response of a legacy conversation.
    In a legacy database: a response whose parent is the branch point's node,
    under the rules.
    """
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
    if point.graph is not None and point.parent_id is not None and _has_turns(conn):
        import sqlite_utils
        from llm.logs import LogStore

        # llm's pending migrations in one transaction (store.upgrade).
        upgrade_llm_tables(conn)
        store = LogStore(sqlite_utils.Database(conn))  # type: ignore[no-untyped-call]
        conversation = point.graph.nodes[point.parent_id]["conversation_id"]
        with write_transaction(conn):
            # The fork names the conversation's thread as the one it came
            # from, which makes it a branch of the conversation's tree. llm
            # makes that thread when it first goes on with the conversation;
            # made here, it points at no message, so `llm -c --cid` of the
            # conversation still replays its responses as before.
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
    """A new thread's name, as llm names a new conversation: its prompt (or
    else its system prompt) on one line, cut to llm's length with an
    ellipsis."""
    from llm import models

    limit = getattr(models, "CONVERSATION_NAME_LENGTH", 32)
    text = " ".join((response.prompt.prompt or response.prompt.system or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _has_turns(conn: sqlite3.Connection) -> bool:
    """Whether the file has llm 0.32+'s message store."""
    return bool(
        conn.execute(
            "select 1 from sqlite_master where type = 'table' and name = 'turns'"
        ).fetchone()
    )


def _point_below(path: Path, node_id: str) -> BranchPoint:
    """The branch point for new children of `node_id` (history not read yet)."""
    from convgraph.sources import LogDatabase, open_logs

    with open_logs(path) as logs:
        # A call inside a tool chain names the chain's node: go on from its
        # end; a unique prefix names its id.
        node_id = logs.node_of(logs.resolve_node(node_id))
        if not isinstance(logs, LogDatabase):
            raise UnknownNode(node_id)  # only llm's database takes branches
        store, legacy = logs.store, logs.legacy
        turn = store.turn_end(node_id) if store is not None else None
        if store is not None and turn is not None:
            # llm's load_chain would loop forever on a cycle of parent_hash.
            broken = store.broken_chain(turn["tip_message_hash"])
            if broken is not None:
                raise BranchError(f"cannot branch from {node_id}: {broken}")
            return BranchPoint(path, node_id, node_id, turn["model"], turn=turn)
        if legacy is None or not legacy.conversation_of(node_id):
            raise UnknownNode(node_id)
        if store is None:  # with the message store, a branch is a fork
            require_rules(logs.conn)
        from convgraph.model.loading import load_tree_of_node

        graph = load_tree_of_node(node_id, logs)
    return BranchPoint(
        path, node_id, node_id, graph.nodes[node_id]["model"], graph=graph
    )


def _point_beside(path: Path, node_id: str) -> tuple[BranchPoint, dict[str, Any]]:
    """The branch point for siblings of `node_id`, and the node itself."""
    from convgraph.model.loading import load_tree_of_node
    from convgraph.model.tree import parent
    from convgraph.sources import LogDatabase, open_logs

    with open_logs(path) as logs:
        node_id = logs.resolve_node(node_id)  # a unique prefix names it
        graph = load_tree_of_node(node_id, logs)
        # A call inside a tool chain names the chain's node.
        node_id = graph.graph.get("calls", {}).get(node_id, node_id)
        node = dict(graph.nodes[node_id])
        above = parent(graph, node_id)
        store = logs.store if isinstance(logs, LogDatabase) else None
        turn = store.turn_end(node_id) if store is not None else None
    if above is not None:
        point = _point_below(path, above)
        point.tree_node = node_id
    elif turn is not None:
        point = BranchPoint(path, None, node_id, None, thread_id=turn["thread_id"])
    else:
        point = BranchPoint(
            path, None, node_id, None, conversation_id=node["conversation_id"]
        )
    point.default_model = node["model"]
    return point, node


def _open_history(llm: Any, conn: sqlite3.Connection, point: BranchPoint) -> None:
    """Read the history the models are given, as llm messages."""
    if point.turn is not None or point.thread_id is not None:
        import sqlite_utils
        from llm.logs import LogStore

        # llm's own pending migrations first, as llm would apply them, but
        # in one transaction (store.upgrade), so LogStore finds none left.
        upgrade_llm_tables(conn)
        point.store = LogStore(sqlite_utils.Database(conn))  # type: ignore[no-untyped-call]
        if point.turn is not None:
            point.history = point.store.load_chain(point.turn["tip_message_hash"])
            point.current_system = _system_of(point.history)
        return
    if point.graph is not None and point.parent_id is not None:
        point.history, point.current_system = _legacy_history(
            llm, point.graph, point.parent_id
        )


def _legacy_history(
    llm: Any, graph: nx.DiGraph[Any], node_id: str
) -> tuple[list[Any], str | None]:
    """The prompts and responses from the root down to `node_id` as llm
    messages, and the system prompt in force after them."""
    from convgraph.model.tree import path as path_to

    history: list[Any] = []
    current_system = None
    for ancestor in path_to(graph, node_id):
        node = graph.nodes[ancestor]
        if node["system"] and node["system"] != current_system:
            history.append(llm.system(node["system"]))
            current_system = node["system"]
        if node["prompt"]:
            history.append(llm.user(node["prompt"]))
        if node["response"]:
            history.append(llm.assistant(node["response"]))
    return history, current_system


def _with_system(
    llm: Any, history: list[Any], current: str | None, system: str | None
) -> list[Any]:
    """The history, with `system` after it when it changes the system prompt:
    models read the system from the messages, not from `system=`."""
    if system and system != current:
        return [*history, llm.system(system)]
    return history


def _system_of(messages: list[Any]) -> str | None:
    """The text of the last system message in a chain."""
    for message in reversed(messages):
        if message.role == "system":
            return "".join(getattr(part, "text", None) or "" for part in message.parts)
    return None


def _json_or_none(value: Any) -> str | None:
    return None if value is None else json.dumps(value, default=str)
