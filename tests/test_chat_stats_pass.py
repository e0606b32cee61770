"""The pass `stats` makes over a ChatGPT export (`ChatExport.trees`, texts
left out) gives every node what the full read gives it but the texts and
parts, the tool calls counted alike; a conversation the app's feedback rates
is read with its texts, which the ratings are grouped by."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from convgraph.contract import CONTENT_ATTRIBUTES
from convgraph.sources.chat.exports import ChatExport, detect
from tests import chat_exports as build

EXPORTS = {
    "branches": lambda: build.chatgpt_export(),
    "hostile": lambda: build.chatgpt_hostile(),
    "tools": lambda: [build.chatgpt_tools(), build.chatgpt_agent()],
}


def structure(export: ChatExport, texts: bool) -> list[dict[str, Any]]:
    return [
        {key: value for key, value in record.items() if key not in CONTENT_ATTRIBUTES}
        for tree in export.trees(texts)
        for record in tree.records
    ]


@pytest.mark.parametrize("name", EXPORTS)
def test_the_pass_without_texts_keeps_every_node(tmp_path: Path, name: str) -> None:
    path = build.write_json(tmp_path / "conversations.json", EXPORTS[name]())
    export = detect(path)
    assert export is not None
    found = structure(export, texts=False)
    assert found == structure(export, texts=True)
    assert all(
        record[key] is None
        for tree in export.trees()
        for record in tree.records
        for key in ("prompt", "response", "system")
    )
    if name == "tools":
        assert [(r["id"], r["tools"]) for r in found if r["tool_calls"]] == [
            ("g-a1", "web.run, dalle.text2im"),
            ("g-a2", "web.run"),
        ]


def test_a_rated_conversation_is_read_with_its_texts(tmp_path: Path) -> None:
    folder = tmp_path / "export"
    folder.mkdir()
    build.write_json(folder / "conversations.json", [build.chatgpt_branches()])
    build.write_json(folder / "message_feedback.json", build.chatgpt_feedback())
    marks = []
    for texts in (False, True):
        export = detect(folder)
        assert export is not None
        records = [record for tree in export.trees(texts) for record in tree.records]
        assert all(record["prompt"] for record in records)
        marks.append(export.app_marks)
    assert marks[0] == marks[1]
    assert len(marks[0]) == 2
