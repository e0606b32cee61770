"""A branch taken out of its tree: one path as a linear transcript.

A path from a root down to a node is a plain conversation again: the system
prompt once, then each step's prompt and the run that answered it.
`path_messages` gives it as chat messages, the shape chat APIs and
fine-tuning sets take (`{"role", "content"}`; an assistant message's tool
calls as `tool_calls: [{"id", "type": "function", "function": {"name",
"arguments"}}]`, each result a `{"role": "tool", "tool_call_id", "content"}`
message; reasoning as the assistant message's `reasoning_content`, only when
asked). `transcript_lines` gives it as Markdown that reads well on GitHub,
each answer labelled with its model, time and node id, its tool calls with
their arguments and results, code and its output in fences, reasoning
folded in a `<details>` block. No stored text can change the document's
structure: every text passes `convgraph.present.markdown_text`. `transcript`
reads one tree from a database and picks the path: down to a node, or,
given a conversation id, along the conversation's active path (the branch
last used).

Steps are the node contract's: a node is the user's step, and its parts
(`convgraph.parts.node_parts`) say what the run held. llm's older files may
log the call that hands a tool's output back to the model as a node with an
empty prompt: it has no user message, and its answer joins the answer
before it.
"""

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

#: How many characters of a tool's output, a call's arguments or code's
#: output a Markdown transcript shows; the rest is cut, its size said.
OUTPUT_LIMIT = 2000

#: The key of an assistant message's reasoning, where it is asked for (the
#: key that Qwen's, DeepSeek's and other chat templates read).
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
        """The path as a Markdown document (see `transcript_lines`); `full`
        keeps long outputs whole instead of cutting them at
        `OUTPUT_LIMIT`; `local_times` shows times as a person reads them
        (`person_time`) rather than as stored (ISO 8601, UTC)."""
        limit = None if full else OUTPUT_LIMIT
        lines = transcript_lines(self.tree, self.path, limit, local_times)
        return "\n".join(lines) + "\n"


def active_end(tree: nx.DiGraph[str]) -> str:
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


def path_system(tree: nx.DiGraph[Any], path: list[str]) -> str | None:
    """The path's system prompt: the first one given on it (None for none)."""
    for node in path:
        system = tree.nodes[node].get("system")
        if system:
            return str(system)
    return None


# -- chat messages ---------------------------------------------------------------


def path_messages(
    tree: nx.DiGraph[Any], path: list[str], system: bool = True, reasoning: bool = False
) -> list[dict[str, Any]]:
    """The path as chat messages: the system prompt first where there is one,
    then each step's user message and the messages of its run (assistant
    messages, with their tool calls, and the tools' results).

    Consecutive texts of one role join into one message, so that user and
    assistant messages alternate where there are no tool calls. Code that
    the model ran (a code interpreter) is a call of a tool named after its
    language (`{"code": ...}` its arguments) and its output that tool's
    result. Attachments and fragments are left out: a chat message holds
    text.

    Parameters
    ----------
    tree, path
        The tree and the node ids from a root down.
    system
        Whether to put the path's system prompt first.
    reasoning
        Whether to keep the model's reasoning, as the assistant message's
        `reasoning_content`.
    """
    messages = ChatMessages(reasoning)
    found = path_system(tree, path) if system else None
    if found:
        messages.messages.append({"role": SYSTEM, "content": found})
    for node in path:
        messages.add(kinds.node_parts(tree.nodes[node]))
    return messages.messages


class ChatMessages:
    """Chat messages built part by part: texts of one role joined, tool calls
    gathered in the assistant message before their results, each result
    answering its call (by id, else by name, else the first call still
    unanswered). A call without an id gets one (`call_1`, `call_2`, ...) so
    that its result can name it."""

    def __init__(self, reasoning: bool = False) -> None:
        self.messages: list[dict[str, Any]] = []
        self.reasoning = reasoning
        # The calls not answered yet, in order: (id, name, whether the id
        # is one made here).
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
        """A text of `role`, joined to the message before when it is a
        message of the same role (an assistant's, even with tool calls,
        until a tool's result comes)."""
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
        """A tool's result: a `tool` message answering its call: the call
        with its id, else the first unanswered call of its tool's name, else
        the first unanswered call the source gave no id (a result without an
        id answers no call that has one while another waits), else the
        first unanswered call."""
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
        """The assistant message being written: the last message where it is
        the assistant's, else a new one."""
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
    """A call's arguments as the JSON string chat messages carry (a string
    the source kept is kept as it is)."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps({} if arguments is None else arguments, ensure_ascii=False)


# -- Markdown --------------------------------------------------------------------


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
    """The path as Markdown, line by line: the tree's name as a title, the
    system prompt once, then each step's prompt and answer, the answer
    labelled with its model, time and node id; outputs cut at `limit`
    characters (None: kept whole)."""
    yield f"# {title(tree)}"
    yield ""
    yield (
        f"Conversation {inline_code(tree.graph.get('tree_id'))},"
        f" down to {inline_code(path[-1])}."
    )
    system = path_system(tree, path)
    if system:
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
    """One step as Markdown: the user's part of it (prompt, attachments,
    fragments) under one heading, the run that answered under another with
    its label (`answer_label`, its time as a person reads it where
    `local_times`); outputs cut at `limit` (None: whole)."""
    data = tree.nodes[node]
    found = kinds.node_parts(data)
    asked = [part for part in found if part.get("role") == kinds.USER]
    answered = [part for part in found if part.get("role") != kinds.USER]
    asked_lines = list(parts_lines(asked, limit))
    if asked_lines:
        yield f"{heading} {number}. User"
        yield ""
        yield from asked_lines
        yield ""
    # The ids of the calls the node's run folds, so that every id llm logged
    # is in the text (`convgraph.model.tree.run_calls`).
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
    """`Assistant · model · time · `id``, then the earlier `calls` of the
    node's run where there are some (`(earlier calls `r1`, `r2`)`), with
    the marks the node carries. The time is as stored (ISO 8601, UTC: a
    document's data), or with `local_times` in the reader's time zone to
    the minute (`person_time`: a person's terminal)."""
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
    """One part as Markdown lines (none for an empty text): a text as its
    own Markdown (`markdown_text.markdown_block`), reasoning folded in a
    `<details>` block, a tool call as its name and its arguments (JSON) in
    a fence, a result, code and its output in fences, an attachment or a
    fragment as one line. Outputs longer than `limit` characters are cut,
    with their size said (None: kept whole).
    """
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
        code = _string(part.get("text"))
        return [
            label,
            "",
            *fenced(code, language if isinstance(language, str) else None),
        ]
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
    # A part of a type this convgraph does not know (a file written by a
    # newer one): its JSON, as it is.
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
    if not isinstance(text, str) or not text.strip():
        return (
            ["*(reasoning redacted by the provider)*"] if part.get("redacted") else []
        )
    # The block is HTML of convgraph's own; the text inside it is Markdown
    # again after a blank line, as GitHub reads it.
    summary = "Reasoning (redacted in part)" if part.get("redacted") else "Reasoning"
    return [
        "<details>",
        f"<summary>{summary}</summary>",
        "",
        *markdown_block(text),
        "",
        "</details>",
    ]


# -- reading ----------------------------------------------------------------------


def transcript(
    node_or_conversation_id: str,
    db: str | os.PathLike[str] | Source | None = None,
    hidden: bool = False,
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
    hidden
        Keep the branches the user hid (`convgraph hide`), left out by
        default.

    Raises
    ------
    UnknownNode
        The id names neither a node nor a conversation.
    HiddenNode
        The node is in a hidden branch, and `hidden` is False.
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
        tree = read_tree(logs, tree_id, hidden=hidden)[0]
    if node is not None and node not in tree:
        node = tree.graph.get("calls", {}).get(node)
        if node is None:
            raise HiddenNode(node_or_conversation_id)
    end = node if node is not None else active_end(tree)
    return Transcript(tree, path(tree, end))
