"""Build examples/chatgpt-export.zip: a small ChatGPT data export to try convgraph on.

The zip has the shape of the one ChatGPT mails (Settings, Data controls,
Export data): `conversations.json` with each conversation's `mapping` of
parent-linked messages, beside `user.json`, `message_feedback.json` and
`chat.html`. Its four conversations hold what people do in ChatGPT: a
regenerated answer, an edited prompt, a switch of model, a Python run, an
uploaded picture, and a last prompt left unanswered.

    python examples/build_chatgpt_export.py
    convgraph tree -d examples/chatgpt-export.zip

The output is byte-identical from run to run (fixed ids, times and zip dates).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
OUTPUT = HERE / "chatgpt-export.zip"

#: 2025-10-04T08:00:00Z
START = 1_759_564_800
ZIP_DATE = (2025, 10, 6, 9, 0, 0)


class Conversation:
    """A conversation being written: messages added under their parents."""

    def __init__(self, number: int, title: str, model: str, start: int):
        self.number = number
        self.id = f"68e0c0de-{number:04d}-4000-8000-000000000000"
        self.title = title
        self.model = model
        self.clock = START + start
        self.count = 0
        self.mapping: dict[str, dict[str, Any]] = {}
        root = self._node(None, None)
        self.system = self._node(
            root,
            self._message(
                "system", {"content_type": "text", "parts": [""]}, hidden=True
            ),
        )

    def _new_id(self) -> str:
        self.count += 1
        return f"{self.number:04d}{self.count:04d}-5e1f-4c2b-9a7d-0000{self.count:08d}"

    def _node(self, parent: str | None, message: dict[str, Any] | None) -> str:
        node_id = message["id"] if message else self._new_id()
        self.mapping[node_id] = {
            "id": node_id,
            "message": message,
            "parent": parent,
            "children": [],
        }
        if parent is not None:
            self.mapping[parent]["children"].append(node_id)
        return node_id

    def _message(
        self,
        role: str,
        content: dict[str, Any],
        *,
        model: str | None = None,
        hidden: bool = False,
        recipient: str = "all",
        name: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        self.clock += 17
        extra = dict(metadata or {})
        if model:
            extra.update(model_slug=model, default_model_slug=self.model)
        if hidden:
            extra["is_visually_hidden_from_conversation"] = True
        return {
            "id": self._new_id(),
            "author": {"role": role, "name": name, "metadata": {}},
            "create_time": float(self.clock),
            "update_time": None,
            "content": content,
            "status": "finished_successfully",
            "end_turn": True if role == "assistant" else None,
            "weight": 1.0,
            "metadata": extra,
            "recipient": recipient,
            "channel": None,
        }

    def ask(self, parent: str, text: str, **options: Any) -> str:
        content = {"content_type": "text", "parts": [text]}
        return self._node(parent, self._message("user", content, **options))

    def answer(self, parent: str, text: str, model: str | None = None) -> str:
        content = {"content_type": "text", "parts": [text]}
        return self._node(
            parent, self._message("assistant", content, model=model or self.model)
        )

    def add(self, parent: str, message: dict[str, Any]) -> str:
        return self._node(parent, message)

    def export(self, current: str) -> dict[str, Any]:
        times = [
            node["message"]["create_time"]
            for node in self.mapping.values()
            if node["message"] and node["message"]["create_time"]
        ]
        return {
            "title": self.title,
            "create_time": min(times),
            "update_time": max(times),
            "mapping": self.mapping,
            "moderation_results": [],
            "current_node": current,
            "plugin_ids": None,
            "conversation_id": self.id,
            "conversation_template_id": None,
            "gizmo_id": None,
            "is_archived": False,
            "safe_urls": [],
            "default_model_slug": self.model,
            "id": self.id,
        }


def kyoto() -> dict[str, Any]:
    """A regenerated first answer, an edited prompt, and another model."""
    talk = Conversation(1, "Three days in Kyoto", "gpt-4o", 0)
    ask = talk.ask(talk.system, "Plan three days in Kyoto in November.")
    talk.answer(
        ask,
        "Day 1: Higashiyama and Kiyomizu-dera. Day 2: Arashiyama. Day 3: Fushimi Inari.",
    )
    second = talk.answer(
        ask,
        "Day 1: Fushimi Inari at dawn, then Tofuku-ji for the maples. Day 2: Arashiyama"
        " and the bamboo grove. Day 3: Gion, Kiyomizu-dera and the Philosopher's Path.",
    )
    budget = talk.ask(second, "What would it cost on a budget?")
    talk.answer(budget, "About 12,000 yen a day: a hostel, buses and temple fees.")
    rain = talk.ask(second, "What if it rains on day 2?")
    indoor = talk.answer(
        rain,
        "Swap Arashiyama for Nishiki Market and the Kyoto National Museum.",
        model="o3",
    )
    return talk.export(indoor)


def script() -> dict[str, Any]:
    """A file uploaded, a Python run inside the answer, a follow-up."""
    talk = Conversation(2, "Why is my CSV sum wrong?", "gpt-4o", 3_600)
    ask = talk.ask(
        talk.system,
        "The total of the amount column looks wrong. Can you check?",
        metadata={
            "attachments": [
                {
                    "id": "file-7Qk2",
                    "name": "expenses.csv",
                    "mime_type": "text/csv",
                    "size": 2048,
                }
            ]
        },
    )
    call = talk.add(
        ask,
        talk._message(
            "assistant",
            {
                "content_type": "code",
                "language": "unknown",
                "text": "import pandas as pd\ndf = pd.read_csv('expenses.csv')\ndf['amount'].dtype",
            },
            model="gpt-4o",
            recipient="python",
        ),
    )
    output = talk.add(
        call,
        talk._message(
            "tool",
            {"content_type": "execution_output", "text": "dtype('O')"},
            name="python",
        ),
    )
    found = talk.answer(
        output,
        "The amount column was read as text: two rows use a comma as the decimal"
        " mark. Read it with decimal=',' and the total is 1,284.50.",
    )
    more = talk.ask(found, "Can you also group it by month?")
    grouped = talk.answer(more, "January 402.10, February 515.90, March 366.50.")
    return talk.export(grouped)


def haiku() -> dict[str, Any]:
    """Three tries at one prompt; the person went on from the second."""
    talk = Conversation(3, "Autumn haiku", "gpt-4o-mini", 7_200)
    ask = talk.ask(talk.system, "Write a haiku about autumn.")
    talk.answer(
        ask,
        "Red leaves drift and fall\nthe river carries them off\nsilence in the pines",
    )
    kept = talk.answer(
        ask, "Cold moon on the pond\na single maple leaf turns\nthe carp do not care"
    )
    talk.answer(
        ask,
        "Chestnuts in the fire\nsmoke climbs the evening mountain\ngeese call, then are gone",
    )
    more = talk.ask(kept, "Now one about the same pond in winter.")
    winter = talk.answer(
        more, "Ice over the pond\nthe carp asleep underneath\nthe moon skates alone"
    )
    return talk.export(winter)


def photo() -> dict[str, Any]:
    """An uploaded picture, and a last question never answered."""
    talk = Conversation(4, "Identify this plant", "gpt-4o", 10_800)
    picture = {
        "content_type": "multimodal_text",
        "parts": [
            {
                "content_type": "image_asset_pointer",
                "asset_pointer": "file-service://file-Ha9c",
                "size_bytes": 182_331,
                "width": 1024,
                "height": 768,
                "fovea": None,
                "metadata": None,
            },
            "What plant is this, and is it safe for cats?",
        ],
    }
    ask = talk.add(
        talk.system,
        talk._message(
            "user",
            picture,
            metadata={
                "attachments": [
                    {"id": "file-Ha9c", "name": "plant.jpg", "mime_type": "image/jpeg"}
                ]
            },
        ),
    )
    named = talk.answer(
        ask,
        "It looks like a peace lily (Spathiphyllum). It is toxic to cats: its"
        " calcium oxalate crystals irritate the mouth.",
    )
    last = talk.ask(named, "Which houseplants are safe for cats?")
    return talk.export(last)


def build(path: Path = OUTPUT) -> Path:
    """Write the export zip to `path`."""
    conversations = [kyoto(), script(), haiku(), photo()]
    members = {
        "conversations.json": json.dumps(conversations, ensure_ascii=False),
        "user.json": json.dumps({"id": "user-example", "email": "someone@example.com"}),
        "message_feedback.json": "[]",
        "chat.html": "<!DOCTYPE html><html><body>Open conversations.json</body></html>",
    }
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in members.items():
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, text)
    return path


if __name__ == "__main__":
    print(build())
