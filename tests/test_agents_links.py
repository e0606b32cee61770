"""Every prompt, tool call and result of an agent's session lands in exactly
one node, whatever the links say (issue 46): generated sessions of each
format with hostile link shapes (placeholder and reused ids, links to
records written later, to none, to themselves, round cycles; sidechains,
compactions, rewinds, resumed copies in a second file, sessions sharing
ids) are read, and each prompt, answer, call and result written is counted
in the nodes."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convgraph.sources import open_logs

KINDS = ("prompt", "call", "result", "answer")


def _write(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


def _counted(folder: Path) -> Counter[str]:
    """Each prompt, answer, call and result as the nodes hold them."""
    found: Counter[str] = Counter()
    with open_logs(folder) as logs:
        nodes, _ = logs.read_forest()
    for prompt, response, parts in zip(
        nodes["prompt"], nodes["response"], nodes["parts"], strict=True
    ):
        if isinstance(prompt, str):
            found[prompt] += 1
        if isinstance(response, str):
            found.update(response.split("\n\n"))
        for part in parts if isinstance(parts, list) else ():
            if part["type"] in ("tool_call", "tool_result"):
                found[f"{part['type']}:{part['id']}"] += 1
    return found


def _read(files: dict[str, list[dict[str, Any]]]) -> Counter[str]:
    folder = Path(tempfile.mkdtemp())
    try:
        for name, records in files.items():
            _write(folder / name, records)
        return _counted(folder)
    finally:
        shutil.rmtree(folder)


# -- Claude Code ------------------------------------------------------------

ids = st.sampled_from(["x", "y", "00000000-0000-0000-0000-000000000000"])


@st.composite
def claude_sessions(draw: st.DrawFn) -> tuple[dict[str, list[dict]], Counter[str]]:
    """One session file of records whose links point anywhere, and maybe a
    resumed second file copying a part of it; what must be counted."""
    size = draw(st.integers(1, 14))
    uuids = [
        draw(st.one_of(ids, st.just(f"r{i}"))) if draw(st.booleans()) else f"r{i}"
        for i in range(size)
    ]
    records: list[dict[str, Any]] = []
    expected: Counter[str] = Counter()
    for i in range(size):
        kind = draw(st.sampled_from(KINDS))
        parent = draw(
            st.one_of(
                st.none(),
                st.sampled_from(uuids),
                st.just("missing"),
                st.just(uuids[i - 1] if i else "missing"),
            )
        )
        side = draw(st.integers(0, 5)) == 0
        if kind == "prompt":
            role, content, key = "user", f"p{i}", f"p{i}"
        elif kind == "answer":
            role, content, key = (
                "assistant",
                [{"type": "text", "text": f"a{i}"}],
                f"a{i}",
            )
        elif kind == "call":
            role, key = "assistant", f"tool_call:c{i}"
            content = [{"type": "tool_use", "id": f"c{i}", "name": "Bash", "input": {}}]
        else:
            role, key = "user", f"tool_result:c{i}"
            content = [{"type": "tool_result", "tool_use_id": f"c{i}", "content": "ok"}]
        records.append(
            {
                "type": role,
                "uuid": uuids[i],
                "parentUuid": parent,
                "sessionId": "s1",
                "isSidechain": side,
                "timestamp": f"2026-01-01T10:00:{i:02d}.000Z",
                "message": {"role": role, "content": content},
            }
        )
        expected[key] += 1
        if draw(st.integers(0, 6)) == 0:
            # A compaction's boundary, linked to the record before.
            records.append(
                {
                    "type": "system",
                    "subtype": "compact_boundary",
                    "uuid": f"b{i}",
                    "parentUuid": None,
                    "logicalParentUuid": uuids[i],
                    "sessionId": "s1",
                    "timestamp": f"2026-01-01T10:00:{i:02d}.500Z",
                }
            )
    files = {"s1.jsonl": records}
    if draw(st.booleans()):
        # Resumed: a second session copying a prefix, going on from it.
        copied = [dict(record, sessionId="s2") for record in records[: size // 2]]
        more = {
            "type": "user",
            "uuid": "later",
            "parentUuid": uuids[-1],
            "sessionId": "s2",
            "isSidechain": False,
            "timestamp": "2026-01-01T11:00:00.000Z",
            "message": {"role": "user", "content": "later"},
        }
        files["s2.jsonl"] = [*copied, more]
        expected["later"] += 1
    return files, expected


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(claude_sessions())
def test_claude_code_parts_land_once(case: tuple[dict, Counter[str]]) -> None:
    files, expected = case
    assert _read(files) == expected


# -- Gemini CLI -------------------------------------------------------------


@st.composite
def gemini_sessions(draw: st.DrawFn) -> tuple[dict[str, list[dict]], Counter[str]]:
    """Two JSON-lines sessions using the same message ids, each with
    rewinds to any id; what must be counted (a rewound message stays, as a
    branch)."""
    files: dict[str, list[dict]] = {}
    expected: Counter[str] = Counter()
    for session in ("g1", "g2"):
        lines: list[dict[str, Any]] = [
            {
                "sessionId": session,
                "projectHash": "h",
                "startTime": "2026-01-01T10:00:00Z",
            }
        ]
        size = draw(st.integers(1, 10))
        for i in range(size):
            if i and draw(st.integers(0, 4)) == 0:
                lines.append({"$rewindTo": f"m{draw(st.integers(0, i))}"})
            kind = draw(st.sampled_from(KINDS))
            key = f"{session}-{i}"
            message: dict[str, Any] = {
                "id": f"m{i}",
                "timestamp": f"2026-01-01T10:00:{i:02d}Z",
            }
            if kind == "prompt":
                message.update(type="user", content=[{"text": key}])
                expected[key] += 1
            elif kind == "answer":
                message.update(type="gemini", content=key)
                expected[key] += 1
            else:
                call = {"id": key, "name": "ls", "args": {}, "result": "ok"}
                message.update(type="gemini", content="", toolCalls=[call])
                expected[f"tool_call:{key}"] += 1
                expected[f"tool_result:{key}"] += 1
            lines.append(message)
        files[f"chats/session-2026-01-01T10-00-{session}.jsonl"] = lines
    return files, expected


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gemini_sessions())
def test_gemini_cli_parts_land_once(case: tuple[dict, Counter[str]]) -> None:
    files, expected = case
    assert _read(files) == expected


# -- GitHub Copilot CLI -----------------------------------------------------


@st.composite
def copilot_sessions(draw: st.DrawFn) -> tuple[dict[str, list[dict]], Counter[str]]:
    """A session's events whose ids may repeat (a trimmed placeholder) and
    whose parents point anywhere; some a subagent's (`parentToolCallId`)."""
    size = draw(st.integers(1, 14))
    events: list[dict[str, Any]] = [
        {"type": "session.start", "data": {"sessionId": "c1"}, "id": "e0", "parentId": None, "timestamp": "2026-01-01T10:00:00Z"}
    ]  # fmt: skip
    expected: Counter[str] = Counter()
    ids = ["e0"]
    for i in range(1, size + 1):
        ids.append(draw(st.sampled_from(["t", f"e{i}", f"e{i}"])))
    for i in range(1, size + 1):
        kind = draw(st.sampled_from((*KINDS, "other")))
        key = f"k{i}"
        data: dict[str, Any]
        if kind == "prompt":
            kind, data = "user.message", {"content": key}
            expected[key] += 1
        elif kind == "answer":
            kind, data = "assistant.message", {"content": key, "toolRequests": []}
            expected[key] += 1
        elif kind == "call":
            request = {"toolCallId": key, "name": "bash", "arguments": {}}
            kind, data = "assistant.message", {"content": "", "toolRequests": [request]}
            expected[f"tool_call:{key}"] += 1
        elif kind == "result":
            kind, data = "tool.execution_complete", {"toolCallId": key, "success": True}
            expected[f"tool_result:{key}"] += 1
        else:
            kind, data = "assistant.turn_start", {}
        if kind != "user.message" and draw(st.integers(0, 4)) == 0:
            data["parentToolCallId"] = f"k{draw(st.integers(1, size))}"
        events.append(
            {
                "type": kind,
                "data": data,
                "id": ids[i],
                "parentId": draw(st.sampled_from([*ids, None, "gone"])),
                "timestamp": f"2026-01-01T10:00:{i:02d}Z",
            }
        )
    return {"c1/events.jsonl": events}, expected


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(copilot_sessions())
def test_copilot_cli_parts_land_once(case: tuple[dict, Counter[str]]) -> None:
    files, expected = case
    assert _read(files) == expected


# -- Codex CLI --------------------------------------------------------------


@st.composite
def codex_rollouts(draw: st.DrawFn) -> tuple[dict[str, list[dict]], Counter[str]]:
    """A rollout of items in any order (a call's output before its call,
    answers before any prompt), compactions and items of kinds not known
    between them."""
    lines: list[dict[str, Any]] = [
        {"timestamp": "2026-01-01T10:00:00Z", "type": "session_meta", "payload": {"id": "x"}}
    ]  # fmt: skip
    expected: Counter[str] = Counter()
    for i in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from((*KINDS, "compacted", "future")))
        key = f"k{i}"
        if kind == "prompt":
            item = {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": key}],
            }
            expected[key] += 1
        elif kind == "answer":
            item = {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": key}],
            }
            expected[key] += 1
        elif kind == "call":
            item = {
                "type": "function_call",
                "name": "shell",
                "arguments": "{}",
                "call_id": key,
            }
            expected[f"tool_call:{key}"] += 1
        elif kind == "result":
            item = {"type": "function_call_output", "call_id": key, "output": "ok"}
            expected[f"tool_result:{key}"] += 1
        elif kind == "compacted":
            lines.append(
                {
                    "timestamp": "2026-01-01T10:00:01Z",
                    "type": "compacted",
                    "payload": {"message": "s"},
                }
            )
            continue
        else:
            item = {"type": "future_item"}
        lines.append(
            {
                "timestamp": f"2026-01-01T10:00:{i:02d}Z",
                "type": "response_item",
                "payload": item,
            }
        )
    return {"rollout-2026-01-01T10-00-00-x.jsonl": lines}, expected  # fmt: skip


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(codex_rollouts())
def test_codex_parts_land_once(case: tuple[dict, Counter[str]]) -> None:
    files, expected = case
    assert _read(files) == expected
