"""A node's content as ordered parts, each a plain dict with `role` and `type`:

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

Missing keys are None. `parts` is None where a node is only its prompt and
response (the plain texts); `node_parts` gives the list either way."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

USER, ASSISTANT, TOOL = "user", "assistant", "tool"

TEXT = "text"
REASONING = "reasoning"
TOOL_CALL = "tool_call"
TOOL_RESULT = "tool_result"
CODE = "code"
CODE_OUTPUT = "code_output"
ATTACHMENT = "attachment"
FRAGMENT = "fragment"

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
    """A file or picture that came with a message (its name or URL, not its bytes)."""
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
    """A node's parts, else its prompt and response as text parts."""
    if (parts := data.get("parts")) is not None:
        return list(parts)
    found = []
    if data.get("prompt") is not None:
        found.append(text(USER, data["prompt"]))
    if data.get("response") is not None:
        found.append(text(ASSISTANT, data["response"]))
    return found


def is_plain(parts: Iterable[Part]) -> bool:
    """Whether the parts are at most a user's text then an answer's (no parts kept)."""
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
