"""Continue a conversation from any node, with llm's own Python API.

The model is given the history from the node's root down to the node, then
the new prompt; the answer is logged as a new child of the node.

- In llm's message store the node is a turn: a new thread is forked at the
  turn's output (`LogStore.fork`) and the new turn is logged into it, so the
  fork has a turn of its own and `llm -c --cid FORK` continues it.
- In a legacy database with the parent column the history is rebuilt from
  the path's prompts and responses, and the answer becomes a response whose
  `parent_response_id` is the node, in the node's conversation, written by
  `log_response` under the database's rules.

The model is called before the write transaction begins, so a slow model
never holds the write lock. llm is imported here only: convgraph reads
databases without it.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from convgraph.errors import BranchError, UnknownNode
from convgraph.store.rules import LoggedNode, log_response, require_rules
from convgraph.store.transaction import (
    connect_read_write,
    database_path,
    reporting_locks,
    write_transaction,
)

if TYPE_CHECKING:
    import networkx as nx


def _import_llm() -> Any:
    try:
        import llm
    except ImportError:
        raise BranchError(
            "branching calls a model through llm, which is not installed:"
            " pip install llm"
        ) from None
    return llm


def branch(
    node_id: str,
    prompt: str,
    db: str | os.PathLike[str] | None = None,
    *,
    model: str | None = None,
    system: str | None = None,
    timeout: float | None = None,
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
    llm = _import_llm()
    from convgraph.sources import open_logs

    path = database_path(db)
    with open_logs(path) as logs:
        turn = logs.store.turn_end(node_id) if logs.store is not None else None
        if turn is None:
            if logs.legacy is None or not logs.legacy.conversation_of(node_id):
                raise UnknownNode(node_id)
            require_rules(logs.conn)
            from convgraph.forest import load_tree_of_node

            graph = load_tree_of_node(node_id, logs)

    if turn is not None:
        chosen = _get_model(llm, model or turn["model"])
        return _branch_in_store(llm, path, turn, chosen, prompt, system, timeout)
    chosen = _get_model(llm, model or graph.nodes[node_id]["model"])
    return _branch_legacy(llm, path, graph, node_id, chosen, prompt, system, timeout)


def _get_model(llm: Any, model_id: str | None) -> Any:
    try:
        return llm.get_model(model_id) if model_id else llm.get_model()
    except llm.UnknownModelError:
        raise BranchError(
            f"unknown model {model_id!r} (`llm models` lists the models llm knows)"
        ) from None


def _answer(llm: Any, model: Any, prompt: str, messages: list, system: str | None):
    """Call the model; its failures become one-line BranchErrors."""
    response = model.prompt(prompt, messages=messages, system=system)
    try:
        response.text()
    except llm.ModelError as error:
        raise BranchError(f"model {model.model_id} failed: {error}") from None
    return response


def _with_system(llm: Any, history: list, current: str | None, system: str | None):
    """The history, with `system` after it when it changes the system prompt:
    models read the system from the messages, not from `system=`."""
    if system and system != current:
        return [*history, llm.system(system)]
    return history


def _system_of(messages: list) -> str | None:
    """The text of the last system message in a chain."""
    for message in reversed(messages):
        if message.role == "system":
            return "".join(getattr(part, "text", None) or "" for part in message.parts)
    return None


def _branch_in_store(
    llm: Any,
    path: os.PathLike[str],
    turn: dict[str, Any],
    model: Any,
    prompt: str,
    system: str | None,
    timeout: float | None,
) -> LoggedNode:
    import sqlite_utils
    from llm.logs import LogStore

    conn = connect_read_write(path, timeout)
    try:
        with reporting_locks(conn):
            # LogStore applies llm's own pending migrations, as llm would.
            store = LogStore(sqlite_utils.Database(conn))
            history = store.load_chain(turn["tip_message_hash"])
            messages = _with_system(llm, history, _system_of(history), system)
            response = _answer(llm, model, prompt, messages, system)
            with write_transaction(conn):
                fork = store.fork(
                    turn["tip_message_hash"], forked_from=turn["thread_id"]
                )
                turn_id = store.log(response, thread_id=fork)
        return LoggedNode(turn_id, fork)
    finally:
        conn.close()


def _branch_legacy(
    llm: Any,
    path: os.PathLike[str],
    graph: nx.DiGraph,
    node_id: str,
    model: Any,
    prompt: str,
    system: str | None,
    timeout: float | None,
) -> LoggedNode:
    from convgraph.tree import path as path_to

    history: list = []
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
    messages = _with_system(llm, history, current_system, system)
    response = _answer(llm, model, prompt, messages, system)
    options = {
        key: value
        for key, value in dict(response.prompt.options).items()
        if value is not None
    }
    return log_response(
        path,
        prompt=prompt,
        response=response.text(),
        model=response.model.model_id,
        parent_response_id=node_id,
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
        timeout=timeout,
    )


def _json_or_none(value: Any) -> str | None:
    return None if value is None else json.dumps(value, default=str)
