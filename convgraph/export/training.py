"""Training data from conversation trees: chat examples and preference pairs."""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from convgraph import parts as kinds
from convgraph.present.transcript import (
    ASSISTANT,
    SYSTEM,
    TOOL,
    USER,
    ChatMessages,
    active_end,
    path_messages,
    path_system,
)

if TYPE_CHECKING:
    import networkx as nx
    import pandas as pd

    from convgraph.sources import Source

#: The `paths` a chat export takes: every leaf's, or each active path.
PATHS = ("leaves", "active")

#: How `preference_pairs` chooses: the preferred mark, falling back to the
#: active path ("notes"), or the active path alone ("active").
PREFER = ("notes", "active")

#: The keys of a preference pair, in order: the DataFrame's columns.
PAIR_COLUMNS = tuple(
    "prompt chosen rejected conversation_id chosen_id rejected_id".split()  # noqa: SIM905 (words)
)


def chat_examples(
    graphs: Iterable[nx.DiGraph[Any]], paths: str = "leaves", reasoning: bool = False
) -> Iterator[dict[str, Any]]:
    """One chat example per root-to-leaf path (leaves in log order), or per tree along
    its active path (`paths="active"`), with reasoning where `reasoning`. Raises
    `ValueError` (`paths` is not one of `PATHS`)."""
    from convgraph.model.tree import path

    if paths not in PATHS:
        raise ValueError(f"paths must be one of {PATHS}, not {paths!r}")
    for tree in graphs:
        if not len(tree):
            continue
        if paths == "active":
            ends = [active_end(tree)]
        else:
            ends = [node for node in tree if tree.out_degree(node) == 0]
        for end in ends:
            messages = path_messages(tree, path(tree, end), reasoning=reasoning)
            while messages and messages[-1]["role"] in (USER, TOOL):
                messages.pop()
            if not any(message["role"] == ASSISTANT for message in messages):
                continue
            yield {
                "messages": messages,
                "conversation_id": tree.graph.get("tree_id"),
                "leaf_id": end,
            }


def alternative_groups(tree: nx.DiGraph[Any]) -> Iterator[tuple[str | None, list[str]]]:
    """Each group of two or more answered alternatives: (their parent, or None
    for roots; their ids in log order). Answers to an empty prompt are none."""
    points: dict[str | None, list[str]] = {}
    for node in tree:
        parent = next(iter(tree.predecessors(node)), None)
        points.setdefault(parent, []).append(node)
    for parent, nodes in points.items():
        by_prompt: dict[str, list[str]] = {}
        for node in nodes:
            data = tree.nodes[node]
            if data.get("prompt") and data.get("response"):
                by_prompt.setdefault(data["prompt"], []).append(node)
        for group in by_prompt.values():
            if len(group) > 1:
                yield parent, group


def tree_pairs(
    tree: nx.DiGraph[Any], prefer: str = "notes", reasoning: bool = False
) -> Iterator[dict[str, Any]]:
    """The preference pairs of one tree, group by group in log order; raises
    ValueError where `prefer` is not one of `PREFER`."""
    from convgraph.model.tree import path

    if prefer not in PREFER:
        raise ValueError(f"prefer must be one of {PREFER}, not {prefer!r}")
    data = tree.nodes
    for _, group in alternative_groups(tree):
        chosen = None
        if prefer == "notes":
            chosen = next((node for node in group if data[node].get("preferred")), None)
        if chosen is None:
            chosen = next((node for node in group if data[node].get("active")), None)
        if chosen is None:
            continue
        # The chosen answer's path less its run: ends with the group's prompt.
        history = _history(tree, path(tree, chosen), reasoning)
        answer = _run(history, data[chosen])
        for rejected in group:
            if rejected == chosen:
                continue
            yield {
                "prompt": copy.deepcopy(history.messages),
                "chosen": copy.deepcopy(answer),
                "rejected": _run(history, data[rejected]),
                "conversation_id": tree.graph.get("tree_id"),
                "chosen_id": chosen,
                "rejected_id": rejected,
            }


def _history(tree: nx.DiGraph[Any], nodes: list[str], reasoning: bool) -> ChatMessages:
    """A path's messages up to its last node's prompt, system prompt first."""
    history = ChatMessages(reasoning)
    if system := path_system(tree, nodes):
        history.messages.append({"role": SYSTEM, "content": system})
    for node in nodes[:-1]:
        history.add(kinds.node_parts(tree.nodes[node]))
    asked = kinds.node_parts(tree.nodes[nodes[-1]])
    history.add(part for part in asked if part.get("role") == kinds.USER)
    return history


def _run(history: ChatMessages, data: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages of a node's run after its user parts."""
    going_on = copy.deepcopy(history)
    start = len(going_on.messages)
    going_on.add(
        part for part in kinds.node_parts(data) if part.get("role") != kinds.USER
    )
    return going_on.messages[start:]


def pairs(
    graphs: Iterable[nx.DiGraph[Any]], prefer: str = "notes", reasoning: bool = False
) -> Iterator[dict[str, Any]]:
    """The preference pairs of every tree, tree by tree (see `tree_pairs`)."""
    for tree in graphs:
        yield from tree_pairs(tree, prefer, reasoning)


def preference_pairs(
    db: str | os.PathLike[str] | Source | None = None,
    conversation_ids: Iterable[str] = (),
    prefer: str = "notes",
    reasoning: bool = False,
) -> pd.DataFrame:
    """The preference pairs of a database's trees (or those named) as a DataFrame of
    `PAIR_COLUMNS`, as TRL's DPO trainer takes them. Raises `UnknownConversation`,
    `DatabaseError`, `ValueError`."""
    import pandas as pd

    from convgraph.model.loading import load_trees

    records = list(pairs(load_trees(conversation_ids, db), prefer, reasoning))
    return pd.DataFrame.from_records(records, columns=list(PAIR_COLUMNS))
