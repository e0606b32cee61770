"""A node's content as ordered parts: text, reasoning, tool calls and their
results, code and its output, attachments and fragments.

A node is what the user asked and the run that answered it, and a run may be
more than one text: the model reasons, calls tools, gets their results back
(llm sends them in a model call of their own), runs code, and answers. Every
reader gives a node's content as a list of parts, in the order the source
holds them, each a plain dict (JSON as it is) with a `role` and a `type`:

========== ============== =================================================
type       role           keys besides role and type
========== ============== =================================================
text       user/assistant ``text``
reasoning  assistant      ``text`` (may be empty), ``redacted`` (bool)
tool_call  assistant      ``name``, ``arguments`` (any JSON value), ``id``
tool_result tool          ``name``, ``output`` (str), ``id``, ``error``
code       assistant      ``language``, ``text`` (code the model ran)
code_output tool          ``text`` (what running it printed)
attachment user/assistant ``name``, ``url``, ``mime``, ``size``
fragment   user           ``name`` (where it came from), ``size``
========== ============== =================================================

Keys a source does not have are None. `prompt` and `response` stay the plain
text they always were (the user's text parts, and the assistant's text parts
joined by a blank line), so whatever reads only them is unchanged. Where a
node's content is nothing but its prompt and its response, its `parts` is
None, so plain conversations cost nothing more; `node_parts` gives the list
either way.

Examples
--------
>>> node_parts({"prompt": "hi", "response": "hello", "parts": None})
[{'role': 'user', 'type': 'text', 'text': 'hi'}, {'role': 'assistant', 'type': 'text', 'text': 'hello'}]
>>> call = tool_call("shout", {"word": "tree"}, "c1")
>>> call["name"], call["arguments"], call["id"]
('shout', {'word': 'tree'}, 'c1')
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: The roles a part may have.
USER, ASSISTANT, TOOL = "user", "assistant", "tool"

#: The types of parts.
TEXT = "text"
REASONING = "reasoning"
TOOL_CALL = "tool_call"
TOOL_RESULT = "tool_result"
CODE = "code"
CODE_OUTPUT = "code_output"
ATTACHMENT = "attachment"
FRAGMENT = "fragment"

PART_TYPES = (
    TEXT,
    REASONING,
    TOOL_CALL,
    TOOL_RESULT,
    CODE,
    CODE_OUTPUT,
    ATTACHMENT,
    FRAGMENT,
)

#: A part: a JSON object with `role` and `type`.
Part = dict[str, Any]


def text(role: str, value: str) -> Part:
    """A text part."""
    return {"role": role, "type": TEXT, "text": value}


def reasoning(value: str, redacted: bool = False) -> Part:
    """The model's reasoning (empty and `redacted` where the provider kept it)."""
    return {"role": ASSISTANT, "type": REASONING, "text": value, "redacted": redacted}


def tool_call(name: str | None, arguments: Any, call_id: str | None = None) -> Part:
    """A call of a tool by the model."""
    return {
        "role": ASSISTANT,
        "type": TOOL_CALL,
        "name": name,
        "arguments": arguments,
        "id": call_id,
    }


def tool_result(
    name: str | None,
    output: str,
    call_id: str | None = None,
    error: str | None = None,
) -> Part:
    """What a tool gave back (`error`: what it raised, where it failed)."""
    return {
        "role": TOOL,
        "type": TOOL_RESULT,
        "name": name,
        "output": output,
        "id": call_id,
        "error": error,
    }


def code(value: str, language: str | None = None) -> Part:
    """Code the model ran (ChatGPT's code interpreter, a provider's sandbox)."""
    return {"role": ASSISTANT, "type": CODE, "language": language, "text": value}


def code_output(value: str) -> Part:
    """What running the model's code printed."""
    return {"role": TOOL, "type": CODE_OUTPUT, "text": value}


def attachment(
    role: str,
    name: str | None = None,
    url: str | None = None,
    mime: str | None = None,
    size: int | None = None,
) -> Part:
    """A file or picture that came with a message (its name or URL, not its
    bytes)."""
    return {
        "role": role,
        "type": ATTACHMENT,
        "name": name,
        "url": url,
        "mime": mime,
        "size": size,
    }


def fragment(name: str | None, size: int | None = None) -> Part:
    """A fragment llm put into the prompt (`llm -f`): where it came from."""
    return {"role": USER, "type": FRAGMENT, "name": name, "size": size}


def node_parts(data: Mapping[str, Any]) -> list[Part]:
    """A node's parts: its own where it has them, else its prompt and
    response as two text parts (leaving out a missing one)."""
    parts = data.get("parts")
    if parts is not None:
        return list(parts)
    found = []
    if data.get("prompt") is not None:
        found.append(text(USER, data["prompt"]))
    if data.get("response") is not None:
        found.append(text(ASSISTANT, data["response"]))
    return found


def is_plain(parts: Iterable[Part]) -> bool:
    """Whether the parts are no more than a user's text and an answer's
    text, at most one of each in that order (then a node keeps no parts)."""
    kinds = [(part.get("role"), part.get("type")) for part in parts]
    return kinds in (
        [],
        [(USER, TEXT)],
        [(ASSISTANT, TEXT)],
        [(USER, TEXT), (ASSISTANT, TEXT)],
    )


def tool_names(parts: Iterable[Part]) -> list[str]:
    """The tools the parts call, each once, in the order first called."""
    names: dict[str, None] = {}
    for part in parts:
        if part.get("type") == TOOL_CALL and isinstance(part.get("name"), str):
            names.setdefault(part["name"], None)
    return list(names)
