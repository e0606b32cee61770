"""Reading a large ChatGPT export: time and peak memory of the commands.

ChatGPT exports reach hundreds of megabytes in one `conversations.json`. This
benchmark writes a synthetic one of the size asked for (conversation by
conversation, never whole in memory: regenerated answers, edited prompts,
hidden system messages and realistic metadata, so its bytes per node are
those of a real export), then runs convgraph's commands on it, each in a
fresh process under GNU time, and prints wall time and peak resident memory.
It depends on nothing else in `benchmarks/`.

    python -m benchmarks.bench_chat_exports                  # 500 MB in /tmp
    python -m benchmarks.bench_chat_exports --size-mb 50 --zip
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

#: 2024-01-01T00:00:00Z
START = 1_704_067_200

WORDS = [
    "the",
    "a",
    "model",
    "answer",
    "prompt",
    "branch",
    "tree",
    "node",
    "python",
    "data",
    "value",
    "function",
    "list",
    "error",
    "test",
    "file",
    "line",
    "number",
    "string",
    "because",
    "which",
    "would",
    "could",
    "should",
    "might",
    "example",
    "result",
    "first",
    "second",
    "change",
    "return",
    "table",
    "column",
    "query",
    "index",
    "memory",
    "time",
    "graph",
    "path",
    "root",
    "leaf",
    "parent",
    "child",
    "conversation",
    "export",
    "reader",
    "stream",
]


def _text_block(rng: random.Random, size: int = 1 << 20) -> str:
    """A megabyte of word salad to cut messages from (faster than drawing
    every word of 500 MB)."""
    words = []
    length = 0
    while length < size:
        word = rng.choice(WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)


class ExportWriter:
    """Synthetic ChatGPT conversations, one at a time."""

    def __init__(self, seed: int = 14):
        self.rng = random.Random(seed)
        self.block = _text_block(self.rng)
        self.serial = 0
        self.clock = START

    def _id(self) -> str:
        self.serial += 1
        return f"{self.serial:08x}-5e1f-4c2b-9a7d-{self.rng.getrandbits(48):012x}"

    def _text(self, low: int, high: int) -> str:
        length = self.rng.randint(low, high)
        start = self.rng.randrange(0, len(self.block) - length)
        return self.block[start : start + length]

    def _message(self, role: str, text: str, hidden: bool = False) -> dict[str, Any]:
        self.clock += self.rng.randint(5, 90)
        metadata: dict[str, Any] = {
            "request_id": f"{self.rng.getrandbits(64):016x}",
            "message_type": None,
            "timestamp_": "absolute",
        }
        if role == "assistant":
            metadata.update(
                model_slug=self.rng.choice(("gpt-4o", "gpt-4o-mini", "o3")),
                default_model_slug="gpt-4o",
                finish_details={"type": "stop", "stop_tokens": [200002]},
                citations=[],
                content_references=[],
                is_complete=True,
                parent_id=None,
            )
        if hidden:
            metadata["is_visually_hidden_from_conversation"] = True
        return {
            "id": self._id(),
            "author": {"role": role, "name": None, "metadata": {}},
            "create_time": self.clock + self.rng.random(),
            "update_time": None,
            "content": {"content_type": "text", "parts": [text]},
            "status": "finished_successfully",
            "end_turn": True if role == "assistant" else None,
            "weight": 1.0,
            "metadata": metadata,
            "recipient": "all",
            "channel": None,
        }

    def conversation(self) -> dict[str, Any]:
        """One conversation: 5 to 40 exchanges, some answers regenerated and
        some prompts edited, the last branch current."""
        mapping: dict[str, dict[str, Any]] = {}

        def add(parent: str | None, message: dict[str, Any] | None) -> str:
            node_id = message["id"] if message else self._id()
            mapping[node_id] = {
                "id": node_id,
                "message": message,
                "parent": parent,
                "children": [],
            }
            if parent is not None:
                mapping[parent]["children"].append(node_id)
            return node_id

        root = add(None, None)
        tip = add(root, self._message("system", "", hidden=True))
        for _ in range(self.rng.randint(5, 40)):
            prompt = add(tip, self._message("user", self._text(40, 600)))
            answer = add(prompt, self._message("assistant", self._text(300, 2500)))
            roll = self.rng.random()
            if roll < 0.12:  # regenerated: go on from the new answer
                answer = add(prompt, self._message("assistant", self._text(300, 2500)))
            elif roll < 0.20:  # edited prompt: go on from the edit
                edited = add(tip, self._message("user", self._text(40, 600)))
                answer = add(edited, self._message("assistant", self._text(300, 2500)))
            tip = answer
        conversation_id = self._id()
        return {
            "title": self._text(10, 40).strip().capitalize(),
            "create_time": float(START),
            "update_time": float(self.clock),
            "mapping": mapping,
            "moderation_results": [],
            "current_node": tip,
            "plugin_ids": None,
            "conversation_id": conversation_id,
            "conversation_template_id": None,
            "gizmo_id": None,
            "is_archived": False,
            "safe_urls": [],
            "default_model_slug": "gpt-4o",
            "id": conversation_id,
        }


def write_export(path: Path, size_mb: float, seed: int = 14) -> dict[str, Any]:
    """Write a `conversations.json` of about `size_mb` megabytes; return what
    it holds (conversations, messages, the last conversation and its tip)."""
    writer = ExportWriter(seed)
    target = int(size_mb * 1_000_000)
    written = conversations = messages = 0
    last: dict[str, Any] = {}
    with open(path, "w", encoding="utf-8") as out:
        out.write("[")
        while written < target:
            conversation = writer.conversation()
            text = json.dumps(conversation, ensure_ascii=False)
            if conversations:
                out.write(", ")
            out.write(text)
            written += len(text) + 2
            conversations += 1
            messages += len(conversation["mapping"])
            last = conversation
        out.write("]")
    return {
        "conversations": conversations,
        "messages": messages,
        "bytes": path.stat().st_size,
        "last_conversation": last["id"],
        "last_node": last["current_node"],
    }


def measure(command: list[str]) -> dict[str, float]:
    """Wall time (s) and peak resident memory (MB) of `command` run in a
    fresh process under GNU time; its output is thrown away."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        started = time.perf_counter()
        subprocess.run(
            ["/usr/bin/time", "-v", "-o", report.name, *command],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )
        elapsed = time.perf_counter() - started
        text = report.read()
    peak_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)[1])
    return {"seconds": elapsed, "peak_mb": peak_kb / 1024}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=500)
    parser.add_argument(
        "--directory",
        type=Path,
        default=Path(tempfile.gettempdir()),
        help="Where the export is written (default: the temp directory)",
    )
    parser.add_argument("--zip", action="store_true", help="Measure a .zip too")
    parser.add_argument("--keep", action="store_true", help="Keep the export")
    options = parser.parse_args(argv)

    path = options.directory / f"convgraph-chatgpt-{options.size_mb:g}mb.json"
    started = time.perf_counter()
    held = write_export(path, options.size_mb)
    print(
        f"export: {held['bytes'] / 1e6:.0f} MB, {held['conversations']:,}"
        f" conversations, {held['messages']:,} messages"
        f" (written in {time.perf_counter() - started:.1f} s) at {path}"
    )
    sources = [path]
    if options.zip:
        zipped = path.with_suffix(".zip")
        with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.write(path, "conversations.json")
        print(f"zip: {zipped.stat().st_size / 1e6:.0f} MB at {zipped}")
        sources.append(zipped)

    convgraph = [sys.executable, "-m", "convgraph"]
    try:
        print(f"{'command':<58} {'seconds':>8} {'peak MB':>8}")
        for source in sources:
            tasks = {
                "stats (every conversation)": ["stats", "-q", "-d", str(source)],
                "tree (the last conversation)": [
                    "tree",
                    "-d",
                    str(source),
                    held["last_conversation"],
                ],
                "path (the last node)": ["path", held["last_node"], "-d", str(source)],
            }
            for label, arguments in tasks.items():
                figures = measure([*convgraph, *arguments])
                name = f"{label} on {source.suffix}"
                print(
                    f"{name:<58} {figures['seconds']:>8.1f} {figures['peak_mb']:>8.0f}"
                )
    finally:
        if not options.keep:
            for source in sources:
                os.unlink(source)


if __name__ == "__main__":
    main()
