"""A branch taken out of its tree: one path as a linear transcript.

A path from a root down to a node is a plain conversation again: the system
prompt once, then each step's prompt and answer in order. `path_messages`
gives it as chat messages (`{"role", "content"}`, the shape chat APIs and
fine-tuning sets take), `transcript_lines` as Markdown that reads well on
GitHub, with each answer's model, time and node id. `transcript` reads one
tree from a database and picks the path: down to a node, or, given a
conversation id, along the conversation's active path (the branch last
used).

Steps are the node contract's: a node's prompt is a user message and its
response an assistant message. llm logs the call that hands a tool's output
back to the model with an empty prompt: it has no user message, and its
answer joins the answer before it, so the messages always alternate.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from convgraph.errors import UnknownConversation, UnknownNode

if TYPE_CHECKING:
    import networkx as nx

    from convgraph.sources import Source

#: The roles of chat messages.
SYSTEM, USER, ASSISTANT = "system", "user", "assistant"


@dataclass
class Transcript:
    """One path of one tree: the tree, and the node ids from root to end."""

    tree: nx.DiGraph
    path: list[str]

    @property
    def end(self) -> str:
        """The last node of the path."""
        return self.path[-1]

    def messages(self) -> list[dict[str, str]]:
        """The path as chat messages (see `path_messages`)."""
        return path_messages(self.tree, self.path)

    def markdown(self) -> str:
        """The path as a Markdown document (see `transcript_lines`)."""
        return "\n".join(transcript_lines(self.tree, self.path)) + "\n"


def active_end(tree: nx.DiGraph) -> str:
    """The end of the tree's active path: its active node without an active
    child, or the last node in log order where none is marked.

    Raises
    ------
    UnknownConversation
        The tree has no nodes.
    """
    if not len(tree):
        raise UnknownConversation(str(tree.graph.get("tree_id")))
    data = tree.nodes
    for node in reversed(list(tree)):
        if data[node].get("active") and not any(
            data[child].get("active") for child in tree.successors(node)
        ):
            return node
    return list(tree)[-1]


def path_system(tree: nx.DiGraph, path: list[str]) -> str | None:
    """The path's system prompt: the first one given on it (None for none)."""
    for node in path:
        system = tree.nodes[node].get("system")
        if system:
            return system
    return None


def path_messages(
    tree: nx.DiGraph, path: list[str], system: bool = True
) -> list[dict[str, str]]:
    """The path as chat messages: the system prompt first where there is one,
    then user and assistant messages, alternating.

    Examples
    --------
    >>> from convgraph.model.tree import ConversationTree
    >>> tree = ConversationTree.from_edges([("r", "a")], {
    ...     "r": {"prompt": "Hi", "response": "Hello", "system": "Be brief"},
    ...     "a": {"prompt": "Bye", "response": "Bye"}})
    >>> for message in path_messages(tree, ["r", "a"]):
    ...     print(message["role"], message["content"])
    system Be brief
    user Hi
    assistant Hello
    user Bye
    assistant Bye
    """
    messages: list[dict[str, str]] = []
    found = path_system(tree, path) if system else None
    if found:
        messages.append({"role": SYSTEM, "content": found})
    for node in path:
        data = tree.nodes[node]
        _add(messages, USER, data.get("prompt"))
        _add(messages, ASSISTANT, data.get("response"))
    return messages


def _add(messages: list[dict[str, str]], role: str, content: str | None) -> None:
    """Append a message, joined to the one before when it has the same role
    (a tool result's answer after an answer), so roles alternate."""
    if not content:
        return
    if messages and messages[-1]["role"] == role:
        messages[-1]["content"] += "\n\n" + content
    else:
        messages.append({"role": role, "content": content})


# -- Markdown --------------------------------------------------------------------


def title(tree: nx.DiGraph) -> str:
    """A tree's title: its name, else its id."""
    name = tree.graph.get("name")
    return _one_line(name) if name else f"Conversation {tree.graph.get('tree_id')}"


def transcript_lines(tree: nx.DiGraph, path: list[str]) -> Iterator[str]:
    """The path as Markdown, line by line: the tree's name as a title, the
    system prompt once, then each step's prompt and answer, the answer
    labelled with its model, time and node id."""
    yield f"# {title(tree)}"
    yield ""
    yield f"Conversation `{tree.graph.get('tree_id')}`, down to `{path[-1]}`."
    system = path_system(tree, path)
    if system:
        yield ""
        yield "**System**"
        yield ""
        yield from _quoted(system)
    for number, node in enumerate(path, 1):
        yield ""
        yield from step_lines(tree, node, number)


def step_lines(
    tree: nx.DiGraph, node: str, number: int, heading: str = "##"
) -> Iterator[str]:
    """One step as Markdown: the prompt, then the answer with its label."""
    data = tree.nodes[node]
    prompt, response = data.get("prompt"), data.get("response")
    if prompt:
        yield f"{heading} {number}. User"
        yield ""
        yield from _block(prompt)
        yield ""
    yield f"{heading} {number}. {answer_label(data, node)}"
    yield ""
    if response:
        yield from _block(response)
    else:
        yield "*(no answer)*"


def answer_label(data: dict[str, Any], node: str) -> str:
    """`Assistant · model · time · `id``, with the marks the node carries."""
    parts = ["Assistant"]
    if data.get("model"):
        parts.append(_one_line(str(data["model"])))
    if data.get("datetime_utc"):
        parts.append(str(data["datetime_utc"]))
    parts.append(f"`{node}`")
    if data.get("preferred"):
        parts.append("★ preferred")
    label = " · ".join(parts)
    if data.get("note"):
        label += f" — note: {_one_line(data['note'])}"
    return label


def _block(text: str) -> Iterator[str]:
    """Stored text as Markdown lines (kept as written: answers are Markdown)."""
    yield from text.rstrip("\n").split("\n")


def _quoted(text: str) -> Iterator[str]:
    for line in text.rstrip("\n").split("\n"):
        yield f"> {line}" if line else ">"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


# -- reading ----------------------------------------------------------------------


def transcript(
    node_or_conversation_id: str,
    db: str | os.PathLike[str] | Source | None = None,
) -> Transcript:
    """The transcript down to a node, or along a conversation's active path.

    Parameters
    ----------
    node_or_conversation_id
        A node id (the path from its root down to it), or a conversation id
        (the path to the end of its active branch).
    db
        A path to a `logs.db` or chat export, an open `Source`, or None
        for llm's own.

    Raises
    ------
    UnknownNode
        The id names neither a node nor a conversation.
    DatabaseError
    """
    from convgraph.model.loading import read_tree
    from convgraph.model.tree import path
    from convgraph.sources import opened

    with opened(db) as logs:
        try:
            tree_id = logs.tree_id_of_node(node_or_conversation_id)
            node: str | None = node_or_conversation_id
        except UnknownNode:
            try:
                tree_id = logs.tree_id_of_conversation(node_or_conversation_id)
            except UnknownConversation:
                raise UnknownNode(node_or_conversation_id) from None
            node = None
        tree = read_tree(logs, tree_id)[0]
    end = node if node is not None else active_end(tree)
    return Transcript(tree, path(tree, end))
