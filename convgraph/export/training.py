"""Training data from conversation trees: chat examples and preference pairs.

Every root-to-leaf path of a tree is a conversation someone had, so a
branching history is a set of fine-tuning examples: `chat_examples` gives one
record per path, `{"messages": [...], "conversation_id", "leaf_id"}`, in the
chat format that fine-tuning APIs and Hugging Face datasets take (or, with
`paths="active"`, one per conversation, along its active path).

The branches also say which answers a person preferred. Alternatives are the
nodes that answer the same prompt at the same point of a tree (same parent,
or both roots, and the same prompt text): regenerations, and other models'
answers. In each group the chosen answer is the one marked preferred
(`convgraph prefer`), else the one on the active path; every other answer of
the group is rejected against it, one record each, in the conversational
preference format that TRL's DPO trainer reads:
`{"prompt": [messages up to and including the prompt], "chosen":
[assistant message], "rejected": [assistant message], "conversation_id",
"chosen_id", "rejected_id"}`. A group with neither a mark nor the active
path gives no pair. `preference_pairs` returns them as a pandas DataFrame.

docs/training-schema.md holds the JSON schemas of both records.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from convgraph.present.transcript import ASSISTANT, USER, active_end, path_messages

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
PAIR_COLUMNS = (
    "prompt",
    "chosen",
    "rejected",
    "conversation_id",
    "chosen_id",
    "rejected_id",
)

#: The keys of a chat example, in order.
EXAMPLE_COLUMNS = ("messages", "conversation_id", "leaf_id")


def chat_examples(
    graphs: Iterable[nx.DiGraph], paths: str = "leaves"
) -> Iterator[dict[str, Any]]:
    """One chat example per root-to-leaf path (leaves in log order), or per
    tree along its active path (`paths="active"`).

    A path that ends on a prompt never answered ends with the last answer
    before it; a path with no answer at all gives no example.

    Raises
    ------
    ValueError
        `paths` is not one of `PATHS`.
    """
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
            messages = path_messages(tree, path(tree, end))
            while messages and messages[-1]["role"] == USER:
                messages.pop()
            if not any(message["role"] == ASSISTANT for message in messages):
                continue
            yield {
                "messages": messages,
                "conversation_id": tree.graph.get("tree_id"),
                "leaf_id": end,
            }


def alternative_groups(tree: nx.DiGraph) -> Iterator[tuple[str | None, list[str]]]:
    """Each group of two or more answered alternatives: (their parent, or
    None for roots; their ids in log order). Answers to an empty prompt (a
    tool's output given back) are no alternatives: there is no prompt."""
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


def tree_pairs(tree: nx.DiGraph, prefer: str = "notes") -> Iterator[dict[str, Any]]:
    """The preference pairs of one tree, group by group in log order.

    Raises
    ------
    ValueError
        `prefer` is not one of `PREFER`.
    """
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
        # The chosen answer's own path, less its answer: the history, the
        # system prompt first, ending with the prompt the group answers.
        history = path_messages(tree, path(tree, chosen))[:-1]
        for rejected in group:
            if rejected == chosen:
                continue
            yield {
                "prompt": [dict(message) for message in history],
                "chosen": [{"role": ASSISTANT, "content": data[chosen]["response"]}],
                "rejected": [
                    {"role": ASSISTANT, "content": data[rejected]["response"]}
                ],
                "conversation_id": tree.graph.get("tree_id"),
                "chosen_id": chosen,
                "rejected_id": rejected,
            }


def pairs(
    graphs: Iterable[nx.DiGraph], prefer: str = "notes"
) -> Iterator[dict[str, Any]]:
    """The preference pairs of every tree, tree by tree (see `tree_pairs`)."""
    for tree in graphs:
        yield from tree_pairs(tree, prefer)


def preference_pairs(
    db: str | os.PathLike[str] | Source | None = None,
    conversation_ids: Iterable[str] = (),
    prefer: str = "notes",
) -> pd.DataFrame:
    """The preference pairs of a database's trees (or those named) as a
    DataFrame with the columns `PAIR_COLUMNS`: `prompt`, `chosen` and
    `rejected` hold lists of chat messages, as TRL's DPO trainer takes them
    (`datasets.Dataset.from_pandas(frame)`).

    Raises
    ------
    UnknownConversation, DatabaseError, ValueError
    """
    import pandas as pd

    from convgraph.model.loading import load_trees

    records = list(pairs(load_trees(conversation_ids, db), prefer))
    return pd.DataFrame.from_records(records, columns=list(PAIR_COLUMNS))
