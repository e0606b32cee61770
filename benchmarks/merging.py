"""The `merge` group (issue 47): three successive ChatGPT exports of one
account and llm's file, read merged, against the sum of reading each alone.

The exports (`write_account`) hold the size asked for in conversations
each, the conversations of `sources.ExportWriter`: the second and third
drop the oldest conversations and add as many new ones, give some
conversations a new branch (a question asked again below an earlier
answer, later than anything before), edit an answer's words and, in the
third, delete a leaf exchange. llm's file is the first export imported by
`convgraph import`, so the merge has imported conversations to recognise.
The row: `Source.read` of the four and `merge_reads` of their reads,
beside the four reads alone (the goal: at most 1.3 times), each in fresh
pyperf workers that record their peak memory.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import suite, tasks
from benchmarks.report import Row

#: The version of what `write_account` writes, in its cached folder's name.
MERGE_BUILD = 1
#: Of each export's conversations: dropped for new ones, given a new branch,
#: an edited answer, a deleted leaf exchange (the third export).
DROPPED, GROWN, EDITED, DELETED = 0.02, 0.2, 0.05, 0.05
EXPORTS = ("export-1.json", "export-2.json", "export-3.json")


def _answers(conversation: dict[str, Any]) -> list[str]:
    mapping = conversation["mapping"]
    return [
        node
        for node, entry in mapping.items()
        if entry["message"] and entry["message"]["author"]["role"] == "assistant"
    ]


def _grow(conversation: dict[str, Any], rng: random.Random, writer: Any) -> None:
    """A question asked again below one of its answers, answered, later than
    anything in the export before."""
    from tests.chat_exports import EPOCH, gpt_message

    mapping = conversation["mapping"]
    below = rng.choice(_answers(conversation))
    at = int(conversation["update_time"] - EPOCH) + rng.randint(60, 9_000)
    question, answer = writer._id(), writer._id()
    words = gpt_message(question, "user", writer._text(40, 600), at=at)
    said = gpt_message(answer, "assistant", writer._text(300, 2500), at=at + 20)
    mapping[below]["children"].append(question)
    mapping[question] = {"id": question, "message": words, "parent": below}
    mapping[question]["children"] = [answer]
    mapping[answer] = {
        "id": answer,
        "message": said,
        "parent": question,
        "children": [],
    }
    conversation["current_node"] = answer
    conversation["update_time"] = EPOCH + at + 20


def _delete_leaf(conversation: dict[str, Any], rng: random.Random) -> None:
    """A leaf answer and the question it answered taken out, where the
    question has no other answer."""
    mapping = conversation["mapping"]
    leaves = [node for node in _answers(conversation) if not mapping[node]["children"]]
    answer = rng.choice(leaves)
    question = mapping[answer]["parent"]
    above = mapping[question]["parent"]
    if mapping[question]["children"] != [answer] or mapping[above]["message"] is None:
        return
    mapping[above]["children"].remove(question)
    del mapping[answer], mapping[question]
    if conversation["current_node"] == answer:
        conversation["current_node"] = above


def write_account(folder: Path, conversations: int, seed: int = 47) -> dict[str, Any]:
    """The three exports in `folder`, and what they hold."""
    from benchmarks.sources import ExportWriter

    writer, rng = ExportWriter(seed), random.Random(seed)
    held = [writer.conversation() for _ in range(conversations)]
    folder.mkdir(parents=True, exist_ok=True)
    counts = []
    for number, name in enumerate(EXPORTS):
        if number:
            dropped = int(conversations * DROPPED)
            held = held[dropped:] + [writer.conversation() for _ in range(dropped)]
            for conversation in held:
                roll = rng.random()
                if roll < GROWN:
                    _grow(conversation, rng, writer)
                elif roll < GROWN + EDITED:
                    answer = conversation["mapping"][rng.choice(_answers(conversation))]
                    answer["message"] = copy.deepcopy(answer["message"])
                    answer["message"]["content"]["parts"] = [writer._text(300, 2500)]
                elif number == 2 and roll < GROWN + EDITED + DELETED:
                    _delete_leaf(conversation, rng)
        with open(folder / name, "w", encoding="utf-8") as out:
            json.dump(held, out, ensure_ascii=False)
        counts.append(sum(len(c["mapping"]) for c in held))
        held = copy.deepcopy(held)
    return {"conversations": conversations, "messages": counts}


def _build(folder: Path, conversations: int) -> None:
    from convgraph.store.importer import import_export

    held = write_account(folder, conversations)
    import_export(folder / EXPORTS[0], folder / "logs.db")
    (folder / "held.json").write_text(json.dumps(held))


def _paths(folder: str) -> list[Path]:
    return [Path(folder) / name for name in (*EXPORTS, "logs.db")]


@tasks.task("convgraph.merged")
def _merged(folder: str) -> Callable[[], object]:
    """The four sources read and merged into one forest's read."""
    from convgraph.sources import open_logs
    from convgraph.sources.merging import merge_reads

    def read() -> object:
        reads = []
        for path in _paths(folder):
            with open_logs(path) as source:
                reads.append(source.read())
        return merge_reads(reads)

    return read


@tasks.task("convgraph.read_each")
def _read_each(folder: str) -> Callable[[], object]:
    """The four sources read, each alone."""
    from convgraph.sources import open_logs

    def read() -> object:
        for path in _paths(folder):
            with open_logs(path) as source:
                source.read()
        return None

    return read


def merge_rows(sizes: list[int], options: suite.Options) -> list[Row]:
    """The `merge` group at each size in conversations an export."""
    found = []
    for size in sizes:
        folder = suite.cached(
            options.data_dir / f"merge-{size}-m{MERGE_BUILD}",
            lambda partial, size=size: _build(partial, size),
        )
        held = json.loads((folder / "held.json").read_text())
        row = Row(
            "merge",
            "chatgpt x3 + llm",
            size,
            "read merged (goal: at most 1.3x)",
            suite.task("convgraph.merged", folder=folder),
            suite.task("convgraph.read_each", folder=folder),
        )
        messages = ", ".join(f"{count:,}" for count in held["messages"])
        row.notes.append(f"{size:,} conversations an export; messages: {messages}")
        found.append(row)
    return found
