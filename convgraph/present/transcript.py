"""A branch taken out of its tree: one path as a linear transcript."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from convgraph import parts as kinds
from convgraph.errors import HiddenNode, UnknownConversation, UnknownNode
from convgraph.model.tree import run_calls
from convgraph.present.local_time import person_time
from convgraph.present.markdown_text import (
    cut,
    fenced,
    inline_code,
    inline_text,
    markdown_block,
)

if TYPE_CHECKING:
    import networkx as nx

    from convgraph.sources import Source

#: The roles of chat messages.
SYSTEM, USER, ASSISTANT, TOOL = "system", "user", "assistant", "tool"

#: Characters of an output or arguments a transcript shows; the rest is cut.
OUTPUT_LIMIT = 2000

#: The key Qwen's, DeepSeek's and other chat templates read reasoning from.
REASONING_KEY = "reasoning_content"


@dataclass
class Transcript:
    """One path of one tree: the tree, and the node ids from root to end."""

    tree: nx.DiGraph[Any]
    path: list[str]

    @property
    def end(self) -> str:
        """The last node of the path."""
        return self.path[-1]

    def messages(self, reasoning: bool = False) -> list[dict[str, Any]]:
        """The path as chat messages (see `path_messages`)."""
        return path_messages(self.tree, self.path, reasoning=reasoning)

    def markdown(self, full: bool = False, local_times: bool = False) -> str:
        """The path as Markdown (`transcript_lines`); `full` keeps outputs whole,
        `local_times` shows times as a person reads them."""
        limit = None if full else OUTPUT_LIMIT
        lines = transcript_lines(self.tree, self.path, limit, local_times)
        return "\n".join(lines) + "\n"


def active_end(tree: nx.DiGraph[str]) -> str:
    """The active path's end: the active node without an active child, else the
    last node; raises UnknownConversation for an empty tree."""
    if not len(tree):
        raise UnknownConversation(str(tree.graph.get("tree_id")))
    data = tree.nodes
    for node in reversed(list(tree)):
        if data[node].get("active") and not any(
            data[child].get("active") for child in tree.successors(node)
        ):
            return node
    return list(tree)[-1]


def path_system(tree: nx.DiGraph[Any], path: list[str]) -> str | None:
    """The path's system prompt: the first one given on it (None for none)."""
    for node in path:
        if system := tree.nodes[node].get("system"):
            return str(system)
    return None


def path_messages(
    tree: nx.DiGraph[Any], path: list[str], system: bool = True, reasoning: bool = False
) -> list[dict[str, Any]]:
    """The path (node ids from a root down) as chat messages: the system prompt
    first where `system`, then each step's user message and its run's messages."""
    messages = ChatMessages(reasoning)
    found = path_system(tree, path) if system else None
    if found:
        messages.messages.append({"role": SYSTEM, "content": found})
    for node in path:
        messages.add(kinds.node_parts(tree.nodes[node]))
    return messages.messages


class ChatMessages:
    """Chat messages built part by part: texts of one role joined, tool calls
    gathered in the assistant message before their results. A call without an id
    gets one (`call_1`, ...) for its result to name."""

    def __init__(self, reasoning: bool = False) -> None:
        self.messages: list[dict[str, Any]] = []
        self.reasoning = reasoning
        # Unanswered calls in order: (id, name, whether the id is made here).
        self._waiting: list[tuple[str, str, bool]] = []
        self._made = 0

    def add(self, parts: Iterable[Mapping[str, Any]]) -> None:
        """Add one node's parts (`convgraph.parts.node_parts`)."""
        for part in parts:
            kind, role = part.get("type"), part.get("role")
            if kind == kinds.TEXT:
                self.text(USER if role == USER else ASSISTANT, part.get("text"))
            elif kind == kinds.REASONING:
                if self.reasoning and part.get("text"):
                    message = self._assistant()
                    before = message.get(REASONING_KEY)
                    message[REASONING_KEY] = _joined(before, part["text"])
            elif kind == kinds.TOOL_CALL:
                self.call(part.get("name"), _arguments(part.get("arguments")), part)
            elif kind == kinds.CODE:
                language = part.get("language")
                name = language if isinstance(language, str) and language else "code"
                code = {"code": _string(part.get("text"))}
                self.call(name, json.dumps(code, ensure_ascii=False), {})
            elif kind == kinds.TOOL_RESULT:
                output = _string(part.get("output")) or _string(part.get("error"))
                self.result(part.get("id"), part.get("name"), output)
            elif kind == kinds.CODE_OUTPUT:
                self.result(None, None, _string(part.get("text")))

    def text(self, role: str, content: Any) -> None:
        """A text of `role`, joined to the message before where it is of the same
        role (an assistant's, even with calls, until a result comes)."""
        if not isinstance(content, str) or not content:
            return
        last = self.messages[-1] if self.messages else None
        if last is not None and last["role"] == role:
            last["content"] = _joined(last["content"], content)
        else:
            self.messages.append({"role": role, "content": content})

    def call(self, name: Any, arguments: str, part: Mapping[str, Any]) -> None:
        """A tool call, in the assistant message being written."""
        call_id = part.get("id")
        made = not isinstance(call_id, str) or not call_id
        if made:
            self._made += 1
        call_id = f"call_{self._made}" if made else str(call_id)
        name = name if isinstance(name, str) else ""
        self._assistant().setdefault("tool_calls", []).append(
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
        )
        self._waiting.append((call_id, name, made))

    def result(self, call_id: Any, name: Any, content: str) -> None:
        """A tool's result answering its call: by id, else the first unanswered
        call of its name, else the first without a source id (a result without an id
        answers no call with one while another waits), else the first unanswered."""
        waiting = self._waiting
        rules = (
            lambda call: (
                isinstance(call_id, str) and not call[2] and call[0] == call_id
            ),
            lambda call: isinstance(name, str) and call[1] == name,
            lambda call: call[2],
            lambda call: True,
        )
        for rule in rules:
            found = next((i for i, call in enumerate(waiting) if rule(call)), None)
            if found is not None:
                call_id = waiting.pop(found)[0]
                break
        else:
            if not isinstance(call_id, str) or not call_id:
                self._made += 1
                call_id = f"call_{self._made}"
        self.messages.append(
            {"role": TOOL, "tool_call_id": call_id, "content": content}
        )

    def _assistant(self) -> dict[str, Any]:
        """The assistant message being written: the last, or a new one."""
        if not self.messages or self.messages[-1]["role"] != ASSISTANT:
            self.messages.append({"role": ASSISTANT, "content": ""})
        return self.messages[-1]


def _joined(before: str | None, text: str) -> str:
    return f"{before}\n\n{text}" if before else text


def _string(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _arguments(arguments: Any) -> str:
    """A call's arguments as the JSON string chat messages carry."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps({} if arguments is None else arguments, ensure_ascii=False)


def title(tree: nx.DiGraph[Any]) -> str:
    """A tree's title, as one line of Markdown: its name, else its id."""
    name = tree.graph.get("name")
    return inline_text(name if name else f"Conversation {tree.graph.get('tree_id')}")


def transcript_lines(
    tree: nx.DiGraph[Any],
    path: list[str],
    limit: int | None = OUTPUT_LIMIT,
    local_times: bool = False,
) -> Iterator[str]:
    """The path as Markdown, line by line: title, system prompt once, then each
    step's prompt and labelled answer; outputs cut at `limit` (None: whole)."""
    yield f"# {title(tree)}"
    yield ""
    yield (
        f"Conversation {inline_code(tree.graph.get('tree_id'))},"
        f" down to {inline_code(path[-1])}."
    )
    if system := path_system(tree, path):
        yield ""
        yield from system_lines(system)
    for number, node in enumerate(path, 1):
        yield ""
        yield from step_lines(tree, node, number, limit=limit, local_times=local_times)


def system_lines(system: str) -> Iterator[str]:
    """The system prompt: a label, and the text as a quote."""
    yield "**System**"
    yield ""
    for line in markdown_block(system):
        yield f"> {line}" if line else ">"


def step_lines(
    tree: nx.DiGraph[Any],
    node: str,
    number: int,
    heading: str = "##",
    limit: int | None = OUTPUT_LIMIT,
    local_times: bool = False,
) -> Iterator[str]:
    """One step as Markdown: the user's part under one heading, the run under
    another with its label (`answer_label`); outputs cut at `limit`."""
    data = tree.nodes[node]
    found = kinds.node_parts(data)
    asked = [part for part in found if part.get("role") == kinds.USER]
    answered = [part for part in found if part.get("role") != kinds.USER]
    if asked_lines := list(parts_lines(asked, limit)):
        yield f"{heading} {number}. User"
        yield ""
        yield from asked_lines
        yield ""
    # The calls the run folds, so every id llm logged is in the text.
    calls = run_calls(tree, node) if tree.graph.get("calls") else []
    yield f"{heading} {number}. {answer_label(data, node, calls, local_times)}"
    yield ""
    answer = list(parts_lines(answered, limit))
    yield from answer if answer else ["*(no answer)*"]


def answer_label(
    data: Mapping[str, Any],
    node: str,
    calls: Iterable[str] = (),
    local_times: bool = False,
) -> str:
    """`Assistant · model · time · `id``, the run's earlier `calls` where there
    are some, and the node's marks. The time is as stored, or with `local_times`
    in the reader's zone (`person_time`)."""
    label = ["Assistant"]
    if data.get("model"):
        label.append(inline_text(data["model"]))
    if data.get("datetime_utc"):
        moment = data["datetime_utc"]
        label.append(inline_text(person_time(moment) if local_times else moment))
    named = [inline_code(call) for call in calls]
    label.append(
        inline_code(node) + (f" (earlier calls {', '.join(named)})" if named else "")
    )
    if data.get("preferred"):
        label.append("★ preferred")
    text = " · ".join(label)
    if data.get("note"):
        text += f" — note: {inline_text(data['note'])}"
    return text


def parts_lines(
    found: Iterable[Mapping[str, Any]], limit: int | None = OUTPUT_LIMIT
) -> Iterator[str]:
    """Parts as Markdown blocks, a blank line between two (`part_lines`)."""
    first = True
    for part in found:
        lines = part_lines(part, limit)
        if not lines:
            continue
        if not first:
            yield ""
        first = False
        yield from lines


def part_lines(part: Mapping[str, Any], limit: int | None = OUTPUT_LIMIT) -> list[str]:
    """One part as Markdown lines (none for an empty text): text as its own Markdown
    (`markdown_block`), reasoning folded in `<details>`, calls, results, code and
    outputs fenced, attachments and fragments one line; outputs longer than `limit` are
    cut with their size said."""
    kind = part.get("type")
    if kind == kinds.TEXT:
        text = part.get("text")
        return markdown_block(text) if isinstance(text, str) and text.strip() else []
    if kind == kinds.REASONING:
        return _reasoning_lines(part)
    if kind == kinds.TOOL_CALL:
        arguments = part.get("arguments")
        label = f"**Tool call** · {_name(part)}"
        if isinstance(arguments, str):
            return [label, "", *_output_lines(arguments, None, limit)]
        text = json.dumps(arguments, indent=2, ensure_ascii=False, default=str)
        return [label, "", *_output_lines(text, "json", limit)]
    if kind == kinds.TOOL_RESULT:
        error, output = part.get("error"), _string(part.get("output"))
        label = f"**Tool result** · {_name(part)}" + (" · error" if error else "")
        lines = [label]
        # An error the output already says (Claude's is_error results) once.
        told = _string(error)
        for text in (output, told) if error and told != output else (output,):
            if text or not error:
                lines += ["", *_output_lines(text, None, limit)]
        return lines
    if kind == kinds.CODE:
        language = part.get("language")
        label = "**Code**" + (f" · {inline_text(language)}" if language else "")
        language = language if isinstance(language, str) else None
        return [label, "", *fenced(_string(part.get("text")), language)]
    if kind == kinds.CODE_OUTPUT:
        output = _string(part.get("text"))
        return ["**Output**", "", *_output_lines(output, None, limit)]
    if kind in (kinds.ATTACHMENT, kinds.FRAGMENT):
        said = [
            inline_text(part[key])
            for key in ("name", "mime", "url")
            if part.get(key) not in (None, "")
        ]
        size = part.get("size")
        if isinstance(size, int) and not isinstance(size, bool):
            said.append(f"{size:,} bytes")
        label = "**Attachment**" if kind == kinds.ATTACHMENT else "**Fragment**"
        return [" · ".join([label, *said])]
    # A part type from a newer convgraph: its JSON, as it is.
    text = json.dumps(dict(part), indent=2, ensure_ascii=False, default=str)
    return [f"**{inline_text(kind)}**", "", *_output_lines(text, "json", limit)]


def _name(part: Mapping[str, Any]) -> str:
    name = part.get("name")
    return inline_code(name) if name else "*(unnamed)*"


def _output_lines(text: str, language: str | None, limit: int | None) -> list[str]:
    if limit is None:
        return fenced(text, language)
    shown, said = cut(text, limit)
    lines = fenced(shown, language)
    return [*lines, "", said] if said else lines


def _reasoning_lines(part: Mapping[str, Any]) -> list[str]:
    text = part.get("text")
    redacted = part.get("redacted")
    if not isinstance(text, str) or not text.strip():
        return ["*(reasoning redacted by the provider)*"] if redacted else []
    # After a blank line GitHub reads the inside of the HTML block as Markdown.
    summary = "Reasoning (redacted in part)" if redacted else "Reasoning"
    inside = markdown_block(text)
    return ["<details>", f"<summary>{summary}</summary>", "", *inside, "", "</details>"]


def transcript(
    node_or_conversation_id: str,
    db: str | os.PathLike[str] | Source | None = None,
    hidden: bool = False,
) -> Transcript:
    """The transcript down to a node (`node_or_conversation_id` a node id), or along a
    conversation's active path (a conversation id), from `db` (a path, a `Source`, or
    None for llm's own); `hidden` keeps hidden branches. Raises `UnknownNode` (the id
    names neither a node nor a conversation); `HiddenNode` (the node is in a hidden
    branch, and `hidden` is False); `DatabaseError`."""
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
        tree = read_tree(logs, tree_id, hidden=hidden)[0]
    if node is not None and node not in tree:
        node = tree.graph.get("calls", {}).get(node)
        if node is None:
            raise HiddenNode(node_or_conversation_id)
    end = node if node is not None else active_end(tree)
    return Transcript(tree, path(tree, end))
