"""Builders of ChatGPT, Claude.ai and Open WebUI exports for the tests.

The shapes follow what the apps write (learnt from public parsers of real
exports): ChatGPT's `mapping` with a placeholder root, hidden system message,
custom instructions, tool calls and image pointers; Claude.ai's
`chat_messages` with `parent_message_uuid` and the all-zero root sentinel
(and the older exports without links); Open WebUI's `chat.history` (and the
older `chat.messages` list). Each builder returns plain JSON values;
`write_*` put them on disk the way the apps hand them over.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

#: 2024-03-01T12:00:00Z: every test conversation starts here.
EPOCH = 1_709_294_400


def iso(offset: int) -> str:
    """The ISO form that the readers give `EPOCH + offset`."""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(EPOCH + offset, UTC).isoformat(
        timespec="microseconds"
    )


# -- ChatGPT -----------------------------------------------------------------


def gpt_message(
    message_id: str,
    role: str,
    text: str | None = None,
    *,
    at: int | None = None,
    model: str | None = None,
    content: dict[str, Any] | None = None,
    hidden: bool = False,
    recipient: str = "all",
    name: str | None = None,
    attachments: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One ChatGPT message (the `message` of a mapping node)."""
    metadata: dict[str, Any] = {}
    if model is not None:
        metadata["model_slug"] = model
        metadata["default_model_slug"] = model
    if hidden:
        metadata["is_visually_hidden_from_conversation"] = True
    if attachments is not None:
        metadata["attachments"] = attachments
    return {
        "id": message_id,
        "author": {"role": role, "name": name, "metadata": {}},
        "create_time": None if at is None else EPOCH + at,
        "update_time": None,
        "content": content
        if content is not None
        else {"content_type": "text", "parts": [text if text is not None else ""]},
        "status": "finished_successfully",
        "end_turn": role == "assistant" or None,
        "weight": 0.0 if hidden else 1.0,
        "metadata": metadata,
        "recipient": recipient,
        "channel": None,
    }


def gpt_conversation(
    conversation_id: str,
    title: str,
    nodes: list[tuple[str, str | None, dict[str, Any] | None]],
    current_node: str | None,
    *,
    default_model: str | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ChatGPT conversation from (node id, parent id, message) triples;
    `children` are derived from the parents, in the order given."""
    mapping: dict[str, Any] = {}
    for node_id, parent, message in nodes:
        mapping[node_id] = {
            "id": node_id,
            "message": message,
            "parent": parent,
            "children": [],
        }
    for node_id, parent, _ in nodes:
        if parent in mapping:
            mapping[parent]["children"].append(node_id)
    times = [
        message["create_time"]
        for _, _, message in nodes
        if message and message.get("create_time")
    ]
    conversation = {
        "title": title,
        "create_time": min(times) if times else None,
        "update_time": max(times) if times else None,
        "mapping": mapping,
        "moderation_results": [],
        "current_node": current_node,
        "plugin_ids": None,
        "conversation_id": conversation_id,
        "conversation_template_id": None,
        "gizmo_id": None,
        "is_archived": False,
        "safe_urls": [],
        "default_model_slug": default_model,
        "id": conversation_id,
    }
    conversation.update(extra or {})
    return conversation


def gpt_preamble(root: str, system: str) -> list[tuple[str, str | None, Any]]:
    """The placeholder root and the hidden, empty system message that start
    every ChatGPT conversation."""
    return [
        (root, None, None),
        (system, root, gpt_message(system, "system", "", hidden=True)),
    ]


def chatgpt_branches() -> dict[str, Any]:
    """Regenerated first answer (two roots), then an edited prompt."""
    return gpt_conversation(
        "conv-monad",
        "Monads",
        [
            *gpt_preamble("root-m", "sys-m"),
            ("u1", "sys-m", gpt_message("u1", "user", "What is a monad?", at=0)),
            (
                "a1",
                "u1",
                gpt_message("a1", "assistant", "A monoid.", at=10, model="gpt-4o"),
            ),
            (
                "a1b",
                "u1",
                gpt_message("a1b", "assistant", "A burrito.", at=20, model="gpt-4o"),
            ),
            ("u2", "a1b", gpt_message("u2", "user", "Simpler?", at=30)),
            (
                "a2",
                "u2",
                gpt_message("a2", "assistant", "A box.", at=40, model="gpt-4o-mini"),
            ),
            ("u2e", "a1b", gpt_message("u2e", "user", "An example?", at=50)),
            (
                "a2e",
                "u2e",
                gpt_message("a2e", "assistant", "Maybe.", at=60, model="gpt-4o"),
            ),
        ],
        current_node="a2e",
        default_model="gpt-4o",
    )


def chatgpt_tools() -> dict[str, Any]:
    """Custom instructions, an image and a file in the prompt, a Python run,
    and an unanswered last prompt that is the current node."""
    picture = {
        "content_type": "multimodal_text",
        "parts": [
            {
                "content_type": "image_asset_pointer",
                "asset_pointer": "file-service://file-abc",
                "size_bytes": 1000,
                "width": 64,
                "height": 64,
            },
            "What is in this picture?",
        ],
    }
    context = {
        "content_type": "user_editable_context",
        "user_profile": "I am a chemist.",
        "user_instructions": "Answer briefly.",
    }
    return gpt_conversation(
        "conv-tools",
        "Picture and Python",
        [
            *gpt_preamble("root-t", "sys-t"),
            ("ctx", "sys-t", gpt_message("ctx", "user", content=context, hidden=True)),
            (
                "u3",
                "ctx",
                gpt_message(
                    "u3",
                    "user",
                    content=picture,
                    at=100,
                    attachments=[
                        {
                            "id": "file-abc",
                            "name": "photo.png",
                            "mime_type": "image/png",
                        },
                        {
                            "id": "file-def",
                            "name": "notes.pdf",
                            "mime_type": "application/pdf",
                        },
                    ],
                ),
            ),
            (
                "call",
                "u3",
                gpt_message(
                    "call",
                    "assistant",
                    content={
                        "content_type": "code",
                        "language": "unknown",
                        "text": "print(1 + 1)",
                    },
                    at=110,
                    model="gpt-4o",
                    recipient="python",
                ),
            ),
            (
                "run",
                "call",
                gpt_message(
                    "run",
                    "tool",
                    content={"content_type": "execution_output", "text": "2"},
                    at=111,
                    name="python",
                ),
            ),
            (
                "a3",
                "run",
                gpt_message("a3", "assistant", "It shows 2.", at=120, model="gpt-4o"),
            ),
            ("u4", "a3", gpt_message("u4", "user", "And now?", at=130)),
        ],
        current_node="u4",
    )


def chatgpt_chain(length: int) -> dict[str, Any]:
    """One long chain of `length` question-and-answer steps."""
    nodes = gpt_preamble("root-c", "sys-c")
    parent = "sys-c"
    for step in range(length):
        question, answer = f"q{step:04d}", f"r{step:04d}"
        nodes.append(
            (
                question,
                parent,
                gpt_message(question, "user", f"Q{step}", at=1000 + 2 * step),
            )
        )
        nodes.append(
            (
                answer,
                question,
                gpt_message(
                    answer, "assistant", f"A{step}", at=1001 + 2 * step, model="gpt-4"
                ),
            )
        )
        parent = answer
    return gpt_conversation("conv-chain", "A long chain", nodes, current_node=parent)


def chatgpt_export() -> list[dict[str, Any]]:
    """The ChatGPT test export: branches, tools, a 2,000-step chain."""
    return [chatgpt_branches(), chatgpt_tools(), chatgpt_chain(2000)]


def chatgpt_hostile() -> list[dict[str, Any]]:
    """Links that go round, point nowhere or are missing; a current node that
    does not exist; a conversation without an id; a message without author."""
    loop = gpt_conversation(
        "conv-loop",
        "Loop",
        [
            *gpt_preamble("root-l", "sys-l"),
            ("lu", "sys-l", gpt_message("lu", "user", "Fine?", at=0)),
            ("la", "lu", gpt_message("la", "assistant", "Fine.", at=1)),
            ("x", "y", gpt_message("x", "user", "Round?", at=2)),
            ("y", "x", gpt_message("y", "assistant", "And round.", at=3)),
            ("orphan-u", "ghost", gpt_message("orphan-u", "user", "Where from?", at=4)),
            (
                "orphan-a",
                "orphan-u",
                gpt_message("orphan-a", "assistant", "Nowhere.", at=5),
            ),
            ("lone-u", None, gpt_message("lone-u", "user", "Alone?", at=6)),
            ("lone-a", "lone-u", gpt_message("lone-a", "assistant", "Yes.", at=7)),
            ("odd", "la", {"id": "odd", "content": None}),
        ],
        current_node="no-such-node",
    )
    nameless = gpt_conversation(
        "",
        "No id",
        [("nu", None, gpt_message("nu", "user", "Hello?", at=8))],
        current_node=None,
        extra={"id": None, "conversation_id": None},
    )
    return [loop, nameless]


# -- Claude.ai -----------------------------------------------------------------

ROOT_SENTINEL = "00000000-0000-4000-8000-000000000000"


def claude_message(
    uuid: str,
    sender: str,
    text: str,
    at: int,
    parent: str | None = ROOT_SENTINEL,
    *,
    blocks: list[dict[str, Any]] | None = None,
    attachments: list[dict[str, Any]] | None = None,
    files: list[dict[str, Any]] | None = None,
    linked: bool = True,
) -> dict[str, Any]:
    """One Claude.ai chat message."""
    stamp = iso(at).replace("+00:00", "Z")
    message = {
        "uuid": uuid,
        "text": text,
        "content": blocks
        if blocks is not None
        else [
            {
                "start_timestamp": stamp,
                "stop_timestamp": stamp,
                "type": "text",
                "text": text,
                "citations": [],
            }
        ],
        "sender": sender,
        "created_at": stamp,
        "updated_at": stamp,
        "attachments": attachments or [],
        "files": files or [],
    }
    if linked:
        message["parent_message_uuid"] = parent
    return message


def claude_export() -> list[dict[str, Any]]:
    """A branching conversation with tools and a file, and an old-style one
    without parent links."""
    tool_blocks = [
        {"type": "thinking", "thinking": "Two is even."},
        {"type": "text", "text": "2"},
        {"type": "tool_use", "name": "calc", "input": {"expr": "2 % 2"}},
        {
            "type": "tool_result",
            "name": "calc",
            "content": [{"type": "text", "text": "0"}],
        },
        {"type": "text", "text": "It is the only one."},
    ]
    branching = {
        "uuid": "claude-primes",
        "name": "Primes",
        "summary": "",
        "created_at": iso(0).replace("+00:00", "Z"),
        "updated_at": iso(90).replace("+00:00", "Z"),
        "account": {"uuid": "acct-1"},
        "current_leaf_message_uuid": "as2",
        "chat_messages": [
            claude_message("h1", "human", "Name a prime.", 0),
            claude_message("as1", "assistant", "7", 10, "h1"),
            claude_message("as1b", "assistant", "11", 20, "h1"),
            claude_message(
                "h2",
                "human",
                "Name an even prime.",
                30,
                "as1b",
                attachments=[
                    {
                        "file_name": "primes.txt",
                        "file_size": 12,
                        "file_type": "txt",
                        "extracted_content": "2 3 5 7 11",
                    }
                ],
            ),
            claude_message("as2", "assistant", "", 40, "h2", blocks=tool_blocks),
            claude_message("h2b", "human", "Name an odd prime.", 50, "as1b"),
        ],
    }
    old = {
        "uuid": "claude-old",
        "name": "Before branches",
        "created_at": iso(100).replace("+00:00", "Z"),
        "updated_at": iso(130).replace("+00:00", "Z"),
        "account": {"uuid": "acct-1"},
        "chat_messages": [
            claude_message("oh1", "human", "Hello", 100, linked=False),
            claude_message("oa1", "assistant", "Hi there", 110, linked=False),
            claude_message(
                "oh2",
                "human",
                "Look at this",
                120,
                linked=False,
                files=[{"file_name": "cat.jpg"}],
            ),
            claude_message("oa2", "assistant", "A cat", 130, linked=False),
        ],
    }
    return [branching, old]


# -- Open WebUI ----------------------------------------------------------------


def webui_message(
    message_id: str,
    role: str,
    content: str,
    at: int,
    parent: str | None,
    children: list[str],
    **extra: Any,
) -> dict[str, Any]:
    """One Open WebUI message of `chat.history.messages`."""
    message = {
        "id": message_id,
        "parentId": parent,
        "childrenIds": children,
        "role": role,
        "content": content,
        "timestamp": EPOCH + at,
    }
    message.update(extra)
    return message


def webui_chat(
    chat_id: str, title: str, chat: dict[str, Any], at: int = 0
) -> dict[str, Any]:
    """One chat of Open WebUI's export (the array element)."""
    return {
        "id": chat_id,
        "user_id": "user-1",
        "title": title,
        "chat": chat,
        "updated_at": EPOCH + at,
        "created_at": EPOCH + at,
        "share_id": None,
        "archived": False,
        "pinned": False,
        "meta": {},
        "folder_id": None,
    }


def webui_export() -> list[dict[str, Any]]:
    """Two models answering one prompt, a follow-up with an image, a system
    prompt; and an old chat with only `chat.messages`."""
    messages = {
        "m1": webui_message(
            "m1", "user", "Hi", 0, None, ["m2", "m2b"], models=["llama3", "mistral"]
        ),
        "m2": webui_message(
            "m2",
            "assistant",
            "Hello!",
            5,
            "m1",
            ["m3"],
            model="llama3",
            modelName="Llama 3",
            done=True,
            info={
                "prompt_eval_count": 5,
                "eval_count": 7,
                "total_duration": 1_500_000_000,
            },
        ),
        "m2b": webui_message(
            "m2b",
            "assistant",
            "Hey.",
            6,
            "m1",
            [],
            model="mistral",
            done=True,
            usage={"prompt_tokens": 4, "completion_tokens": 2},
        ),
        "m3": webui_message(
            "m3",
            "user",
            "Tell a joke",
            10,
            "m2",
            ["m4"],
            files=[{"type": "image", "url": "data:image/png;base64,AAAA"}],
        ),
        "m4": webui_message("m4", "assistant", "No.", 15, "m3", [], model="llama3"),
    }
    current = {
        "id": "",
        "title": "Greetings",
        "models": ["llama3", "mistral"],
        "params": {"system": "Be terse."},
        "history": {"messages": messages, "currentId": "m4"},
        "messages": [messages["m1"], messages["m2"], messages["m3"], messages["m4"]],
        "tags": [],
        "timestamp": (EPOCH + 0) * 1000,
        "files": [],
    }
    old = {
        "title": "Old chat",
        "models": ["llama2"],
        "messages": [
            {"id": "o1", "role": "user", "content": "Old?", "timestamp": EPOCH + 100},
            {
                "id": "o2",
                "role": "assistant",
                "content": "Yes.",
                "model": "llama2",
                "timestamp": EPOCH + 101,
            },
            {"role": "user", "content": "Unanswered", "timestamp": EPOCH + 102},
        ],
    }
    return [
        webui_chat("chat-greet", "Greetings", current),
        webui_chat("chat-old", "Old chat", old, 100),
    ]


# -- the whole conversation: tools, code, reasoning, files (issue 23) ------------
# Shapes as real exports hold them, learnt from conversations.json files
# published on GitHub (ChatGPT's thoughts, reasoning_recap, execution_output
# with author.name "python", tether_browsing_display from "web.run",
# system_error), the notes of mitkury/chatgpt-export-parser and of
# Sinity/polylogue (Claude.ai's tool_use/tool_result blocks with id,
# tool_use_id, is_error and search results as "knowledge" blocks), and Open
# WebUI's chat.history messages with `files`.


def chatgpt_agent() -> dict[str, Any]:
    """A reasoning model searching the web, running code that fails once,
    and drawing a picture; then a follow-up that ends in a tool error."""
    search = {"content_type": "code", "language": "unknown", "text": "tides Brest"}
    found = {
        "content_type": "tether_browsing_display",
        "result": "# 【0†Tides in Brest】\nHigh water 06:12.",
        "summary": "",
        "assets": None,
        "tether_id": None,
    }
    thinking = {
        "content_type": "thoughts",
        "thoughts": [
            {
                "summary": "Looking up tides",
                "content": "The user wants today's tides.",
                "chunks": [],
                "finished": True,
            }
        ],
        "source_analysis_msg_id": "x",
    }
    recap = {"content_type": "reasoning_recap", "content": "Thought for 4s"}
    cell = {"content_type": "code", "language": "python", "text": "1/0"}
    failed = {
        "content_type": "execution_output",
        "text": "ZeroDivisionError: division by zero",
    }
    cell2 = {"content_type": "code", "language": "unknown", "text": "print(6 * 7)"}
    printed = {"content_type": "execution_output", "text": "42"}
    draw = {"content_type": "code", "text": '{"prompt": "a lighthouse"}'}
    drawn = {
        "content_type": "multimodal_text",
        "parts": [
            {
                "content_type": "image_asset_pointer",
                "asset_pointer": "sediment://file_lighthouse",
                "size_bytes": 2048,
                "width": 1024,
                "height": 1024,
            }
        ],
    }
    error = {
        "content_type": "system_error",
        "name": "ChatGPTAgentToolException",
        "text": "The tool timed out.",
    }
    hidden_spinner = {
        "content_type": "tether_browsing_display",
        "result": "",
        "summary": "",
    }
    message = gpt_message
    return gpt_conversation(
        "conv-agent",
        "Tides and a lighthouse",
        [
            *gpt_preamble("root-g", "sys-g"),
            ("g-u1", "sys-g", message("g-u1", "user", "Tides in Brest today?", at=0)),
            ("g-th", "g-u1", message("g-th", "assistant", content=thinking, at=1)),
            ("g-rc", "g-th", message("g-rc", "assistant", content=recap, at=2)),
            (
                "g-s",
                "g-rc",
                message("g-s", "assistant", content=search, at=3, recipient="web.run"),
            ),
            (
                "g-sr",
                "g-s",
                message("g-sr", "tool", content=found, at=4, name="web.run"),
            ),
            (
                "g-c1",
                "g-sr",
                message("g-c1", "assistant", content=cell, at=5, recipient="python"),
            ),
            (
                "g-o1",
                "g-c1",
                message("g-o1", "tool", content=failed, at=6, name="python"),
            ),
            (
                "g-c2",
                "g-o1",
                message("g-c2", "assistant", content=cell2, at=7, recipient="python"),
            ),
            (
                "g-o2",
                "g-c2",
                message("g-o2", "tool", content=printed, at=8, name="python"),
            ),
            (
                "g-d",
                "g-o2",
                message(
                    "g-d", "assistant", content=draw, at=9, recipient="dalle.text2im"
                ),
            ),
            (
                "g-dr",
                "g-d",
                message("g-dr", "tool", content=drawn, at=10, name="dalle.text2im"),
            ),
            (
                "g-a1",
                "g-dr",
                message("g-a1", "assistant", "High water at 06:12.", at=11, model="o3"),
            ),
            ("g-u2", "g-a1", message("g-u2", "user", "And tomorrow?", at=20)),
            (
                "g-s2",
                "g-u2",
                message(
                    "g-s2", "assistant", content=search, at=21, recipient="web.run"
                ),
            ),
            (
                "g-sp",
                "g-s2",
                message(
                    "g-sp",
                    "tool",
                    content=hidden_spinner,
                    at=22,
                    name="web.run",
                    hidden=True,
                ),
            ),
            (
                "g-e",
                "g-sp",
                message("g-e", "tool", content=error, at=23, name="web.run"),
            ),
            (
                "g-a2",
                "g-e",
                message("g-a2", "assistant", "I could not look.", at=24, model="o3"),
            ),
        ],
        current_node="g-a2",
    )


def claude_agent() -> dict[str, Any]:
    """Claude.ai thinking, searching (a tool that fails, then one that
    answers with search results) and answering a prompt with a file."""
    stamp = iso(0).replace("+00:00", "Z")
    blocks = [
        {
            "start_timestamp": stamp,
            "stop_timestamp": stamp,
            "type": "thinking",
            "thinking": "The page may need a search first.",
            "summaries": [{"summary": "Planning"}],
            "cut_off": False,
        },
        {
            "start_timestamp": stamp,
            "type": "text",
            "text": "Let me look.",
            "citations": [],
        },
        {
            "start_timestamp": stamp,
            "type": "tool_use",
            "id": "toolu_01",
            "name": "web_fetch",
            "input": {"url": "https://example.org/tides"},
            "message": "Fetching: https://example.org/tides",
            "integration_name": "Web Fetch",
            "display_content": None,
        },
        {
            "start_timestamp": stamp,
            "type": "tool_result",
            "tool_use_id": "toolu_01",
            "name": "web_fetch",
            "content": [
                {
                    "type": "text",
                    "text": "PERMISSIONS_ERROR: not in a prior search",
                    "uuid": "u-1",
                }
            ],
            "is_error": True,
            "message": "Failed to fetch",
        },
        {
            "start_timestamp": stamp,
            "type": "tool_use",
            "id": "toolu_02",
            "name": "web_search",
            "input": {"query": "tides Brest"},
            "message": "Searching the web",
        },
        {
            "start_timestamp": stamp,
            "type": "tool_result",
            "tool_use_id": "toolu_02",
            "name": "web_search",
            "content": [
                {
                    "type": "knowledge",
                    "title": "Tides in Brest",
                    "url": "https://example.org/tides",
                    "metadata": {
                        "type": "webpage_metadata",
                        "site_domain": "example.org",
                    },
                    "is_missing": False,
                    "text": "High water 06:12.",
                    "is_citable": True,
                }
            ],
            "is_error": False,
        },
        {"start_timestamp": stamp, "type": "text", "text": "High water is at 06:12."},
    ]
    return {
        "uuid": "claude-agent",
        "name": "Tides",
        "summary": "",
        "created_at": stamp,
        "updated_at": iso(10).replace("+00:00", "Z"),
        "account": {"uuid": "acct-1"},
        "chat_messages": [
            claude_message(
                "ca-h1",
                "human",
                "When is high water?",
                0,
                attachments=[
                    {
                        "file_name": "harbour.txt",
                        "file_size": 120,
                        "file_type": "text/plain",
                        "extracted_content": "Brest harbour notes",
                    }
                ],
                files=[{"file_uuid": "f-1", "file_name": "chart.png"}],
            ),
            claude_message("ca-a1", "assistant", "", 10, "ca-h1", blocks=blocks),
        ],
    }


def webui_files() -> dict[str, Any]:
    """One Open WebUI chat (as its download holds it: the chat alone) with a
    PDF uploaded, a picture kept inline as a data URL, and an answer."""
    messages = {
        "w1": webui_message(
            "w1",
            "user",
            "Summarise these",
            0,
            None,
            ["w2"],
            files=[
                {
                    "type": "file",
                    "file": {
                        "id": "f-pdf",
                        "filename": "report.pdf",
                        "meta": {
                            "name": "report.pdf",
                            "content_type": "application/pdf",
                            "size": 52000,
                        },
                    },
                    "id": "f-pdf",
                    "url": "/api/v1/files/f-pdf",
                    "name": "report.pdf",
                    "status": "uploaded",
                    "size": 52000,
                },
                {"type": "image", "url": "data:image/png;base64,iVBORw0KGgo="},
            ],
        ),
        "w2": webui_message(
            "w2", "assistant", "A report and a picture.", 5, "w1", [], model="llama3"
        ),
    }
    return {
        "id": "chat-files",
        "title": "Files",
        "models": ["llama3"],
        "history": {"messages": messages, "currentId": "w2"},
        "messages": [messages["w1"], messages["w2"]],
        "timestamp": (EPOCH + 0) * 1000,
    }


def chatgpt_feedback() -> list[dict[str, Any]]:
    """ChatGPT's message_feedback.json for `chatgpt_branches`: thumbs up on
    the regenerated first answer (which has an alternative), thumbs up on an
    answer without one, thumbs down with tags and words on another. The
    shape: one object per rating, `content` a JSON text of tags and words
    (as published descriptions of the export show it)."""
    return [
        {
            "id": "fb-1",
            "conversation_id": "conv-monad",
            "user_id": "user-1",
            "rating": "thumbsUp",
            "message_id": "a1",
            "content": "{}",
            "create_time": EPOCH + 100,
        },
        {
            "id": "fb-2",
            "conversation_id": "conv-monad",
            "user_id": "user-1",
            "rating": "thumbsUp",
            "message_id": "a2e",
            "content": "{}",
            "create_time": EPOCH + 101,
        },
        {
            "id": "fb-3",
            "conversation_id": "conv-monad",
            "user_id": "user-1",
            "rating": "thumbsDown",
            "message_id": "a2",
            "content": json.dumps({"tags": ["not-helpful"], "text": "Too short."}),
            "create_time": EPOCH + 102,
        },
    ]


# -- writing ---------------------------------------------------------------------


def write_json(path: Path, value: Any) -> Path:
    """`value` as the apps write it (UTF-8 JSON, one line)."""
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return path


def write_zip(path: Path, members: dict[str, Any]) -> Path:
    """A zip like the downloaded exports: JSON members plus whatever else
    (`str` or `bytes` values are written as they are)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, value in members.items():
            if isinstance(value, bytes | str):
                archive.writestr(name, value)
            else:
                archive.writestr(name, json.dumps(value, ensure_ascii=False))
    return path


def split(conversations: list[Any], size: int) -> dict[str, list[Any]]:
    """The conversations as newer ChatGPT exports split them:
    `conversations-000.json`, `conversations-001.json`, ..."""
    return {
        f"conversations-{number:03d}.json": conversations[start : start + size]
        for number, start in enumerate(range(0, len(conversations), size))
    }
