"""Rebuild examples/logs.db: the four scenarios (docs/design.md#the-four-scenarios)
as a user would log them.

The file is a legacy llm database (the schema llm 0.31 created, from
tests/data/llm-0.31-schema.sql) with the `parent_response_id` column, holding
four conversations:

1. a linear chain (sourdough starter questions);
2. a simple branch (one haiku, two rewrites);
3. a complex tree (hash maps: two topics, two follow-ups each);
4. multiple roots (two translations started in one conversation).

Then, as a long-time user's file does, it goes on in llm's message store:
llm 0.36 itself opens the file (its own migrations add the message store),
continues the sourdough conversation as `llm -c --cid` does (rebuilding the
legacy responses as messages), forks it at the second answer's rebuilt
message with its Python API (`LogStore.fork`, then `log(...,
thread_id=...)`) and continues the fork. The answers come from a small model
defined here that replays written answers, so the script runs offline; ids
and times are fixed so that a rebuild gives the same tree.

Run it from anywhere (llm must be installed):
``python examples/build_example_db.py``.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

HERE = Path(__file__).parent
SCHEMA = HERE.parent / "tests" / "data" / "llm-0.31-schema.sql"
TARGET = HERE / "logs.db"

# (conversation id, name, [(response id, parent id, model, prompt, response)])
CONVERSATIONS = [
    (
        "01jb0sourdough0000000000000",
        "Starting a sourdough starter",
        [
            (
                "01jb0sd00root0000000000000",
                None,
                "gpt-4o-mini",
                "How do I start a sourdough starter from scratch?",
                "Mix 50 g of whole-wheat flour with 50 g of lukewarm water in a jar, "
                "cover it loosely and keep it somewhere warm (24-26 °C). After 24 "
                "hours, discard half and feed it again with equal weights of flour "
                "and water.",
            ),
            (
                "01jb0sd01a000000000000000",
                "01jb0sd00root0000000000000",
                "gpt-4o-mini",
                "How often should I feed it?",
                "Once a day for the first week, then twice a day once it doubles "
                "reliably. Feed it at the same times each day so you can read its rhythm.",
            ),
            (
                "01jb0sd02b000000000000000",
                "01jb0sd01a000000000000000",
                "gpt-4o-mini",
                'It smells like nail-polish remover. Is that "bad"?',
                "No: an acetone smell means the yeast is hungry. Feed it more often, "
                "or use a 1:2:2 ratio of starter, flour and water.",
            ),
            (
                "01jb0sd03c000000000000000",
                "01jb0sd02b000000000000000",
                "gpt-4o-mini",
                "When is it ready to bake with?",
                "When it doubles within 4-8 hours of a feed, has a domed, bubbly top "
                "and a spoonful floats in water. That is usually day 7 to 14.",
            ),
        ],
    ),
    (
        "01jb1haiku000000000000000",
        "Autumn haiku",
        [
            (
                "01jb1hk00root000000000000",
                None,
                "claude-3.5-sonnet",
                "Write a haiku about autumn.",
                "Maple leaves let go\nthe wind keeps what it is given\nsmoke above the field",
            ),
            (
                "01jb1hk01b000000000000000",
                "01jb1hk00root000000000000",
                "claude-3.5-sonnet",
                "Make it funnier.",
                "Leaves fall on my car\nI wash it, they fall again\nthe tree is winning",
            ),
            (
                "01jb1hk02c000000000000000",
                "01jb1hk00root000000000000",
                "gpt-4o-mini",
                "Make it funnier.",
                "Pumpkin spice returns\nmy wallet, like the maples,\nturns red and goes bare",
            ),
        ],
    ),
    (
        "01jb2hashmap0000000000000",
        "How hash maps work",
        [
            (
                "01jb2hm00root000000000000",
                None,
                "gpt-4o-mini",
                "Explain how a hash map works.",
                "A hash map stores key-value pairs in an array of buckets. A hash "
                "function turns each key into an index; collisions are resolved by "
                "chaining (a list per bucket) or by open addressing (probing for "
                "the next free slot). Lookups are O(1) on average.",
            ),
            (
                "01jb2hm01b000000000000000",
                "01jb2hm00root000000000000",
                "gpt-4o-mini",
                "Show me a minimal implementation in Python.",
                "class HashMap:\n    def __init__(self, size=8):\n"
                "        self.buckets = [[] for _ in range(size)]\n"
                "    def put(self, key, value):\n"
                "        bucket = self.buckets[hash(key) % len(self.buckets)]\n"
                "        ...",
            ),
            (
                "01jb2hm02c000000000000000",
                "01jb2hm01b000000000000000",
                "gpt-4o-mini",
                "Add resizing when the load factor passes 0.75.",
                "Track the number of items; when items / len(buckets) > 0.75, "
                "allocate twice as many buckets and re-insert every pair.",
            ),
            (
                "01jb2hm03d000000000000000",
                "01jb2hm01b000000000000000",
                "llama3.2",
                "Use open addressing instead of chaining.",
                "Keep one flat list of slots; on a collision probe i+1, i+2, ... "
                "(linear probing) and mark deleted slots with a tombstone so "
                "lookups keep probing past them.",
            ),
            (
                "01jb2hm04e000000000000000",
                "01jb2hm00root000000000000",
                "claude-3.5-sonnet",
                "Compare it with a binary search tree.",
                "A balanced BST gives O(log n) lookups but keeps keys in order, "
                "so it supports range queries and ordered iteration; a hash map "
                "is faster on average for point lookups but unordered.",
            ),
            (
                "01jb2hm05f000000000000000",
                "01jb2hm04e000000000000000",
                "claude-3.5-sonnet",
                "Which is faster for range queries?",
                "The BST: find the lower bound in O(log n), then walk in order. A "
                "hash map has to scan every key.",
            ),
            (
                "01jb2hm06g000000000000000",
                "01jb2hm04e000000000000000",
                "claude-3.5-sonnet",
                "Which uses less memory?",
                "Usually the hash map with open addressing at a high load factor; "
                "a BST pays for two child pointers (and balance data) per key.",
            ),
        ],
    ),
    (
        "01jb3translate00000000000",
        "Good morning, translated",
        [
            (
                "01jb3tr00root1000000000000",
                None,
                "gpt-4o-mini",
                "Translate 'good morning' into French.",
                "Bonjour.",
            ),
            (
                "01jb3tr01a000000000000000",
                "01jb3tr00root1000000000000",
                "gpt-4o-mini",
                "And something more casual?",
                "Salut ! or, to a friend in the morning, « Coucou ! ».",
            ),
            (
                "01jb3tr02b000000000000000",
                "01jb3tr01a000000000000000",
                "gpt-4o-mini",
                "How would I say it to my boss?",
                "Bonjour Madame / Monsieur, or simply « Bonjour » with a handshake.",
            ),
            (
                "01jb3tr03root2000000000000",
                None,
                "llama3.2",
                "Translate 'good morning' into Japanese.",
                "おはようございます (ohayō gozaimasu).",
            ),
            (
                "01jb3tr04x000000000000000",
                "01jb3tr03root2000000000000",
                "llama3.2",
                "Is there a shorter form?",
                "おはよう (ohayō), for friends and family.",
            ),
            (
                "01jb3tr05y000000000000000",
                "01jb3tr04x000000000000000",
                "llama3.2",
                "Write it in katakana for a sign.",
                "Signs use hiragana or kanji for this; katakana would read as "
                "foreign: オハヨウ.",
            ),
        ],
    ),
]


def build(target: Path = TARGET) -> Path:
    """Write the example database to `target`, replacing any old one."""
    partial = target.with_suffix(".db.partial")
    partial.unlink(missing_ok=True)
    conn = sqlite3.connect(partial)
    conn.executescript(SCHEMA.read_text())
    conn.execute(
        "alter table responses add column parent_response_id text references responses(id)"
    )
    minute = 0
    for conversation_id, name, responses in CONVERSATIONS:
        conn.execute(
            "insert into conversations (id, name, model) values (?, ?, ?)",
            [conversation_id, name, responses[0][2]],
        )
        for response_id, parent_id, model, prompt, response in responses:
            minute += 1
            conn.execute(
                "insert into responses (id, model, prompt, system, prompt_json,"
                " options_json, response, response_json, conversation_id,"
                " duration_ms, datetime_utc, input_tokens, output_tokens,"
                " parent_response_id) values (?, ?, ?, ?, null, '{}', ?, null,"
                " ?, ?, ?, ?, ?, ?)",
                [
                    response_id,
                    model,
                    prompt,
                    None,
                    response,
                    conversation_id,
                    400 + 37 * len(response) % 1900,
                    f"2025-09-27T{9 + minute // 60:02d}:{minute % 60:02d}:00.000000+00:00",
                    len(prompt.split()) + 12,
                    len(response.split()) + 3,
                    parent_id,
                ],
            )
    conn.commit()
    conn.close()
    continue_with_llm(partial)
    conn = sqlite3.connect(partial)
    conn.execute("vacuum")
    conn.close()
    partial.replace(target)
    return target


SOURDOUGH = "01jb0sourdough0000000000000"
#: The second legacy answer of the sourdough conversation, where the fork is.
FORKED_AT = 1
FORK_THREAD = "01jb5sdfork0thread00000000"

#: What llm 0.36 logged after the upgrade: (turn id, time, prompt, answer).
CONTINUED = (
    "01jb4sd04d000000000000000",
    "2025-11-03T18:02:00+00:00",
    "My kitchen is only 18 °C in winter. What should I change?",
    "Use water at about 30 °C for each feed and keep the jar somewhere warmer, "
    "such as the oven with only its light on. Expect it to take twice as long "
    "to double, so feed it less often rather than more.",
)
FORKED = (
    "01jb5sd05e000000000000000",
    "2025-11-04T08:15:00+00:00",
    "Can I keep it in the fridge between bakes instead?",
    "Yes: once it is established, feed it, leave it out for an hour and then "
    "refrigerate it. Feed it once a week, and take it out the day before you "
    "bake so it can have two room-temperature feeds.",
)
FORK_CONTINUED = (
    "01jb5sd06f000000000000000",
    "2025-11-04T08:21:00+00:00",
    "How long can it go without a feed in there?",
    "Two to three weeks is fine; a grey liquid (hooch) on top just means it is "
    "hungry. Pour it off, discard half and feed it twice before baking.",
)
REPLIES = {
    prompt: answer for _, _, prompt, answer in (CONTINUED, FORKED, FORK_CONTINUED)
}


def continue_with_llm(path: Path) -> None:
    """Go on with the legacy sourdough conversation in llm 0.36's message
    store, written by llm itself: `llm -c --cid` on it, then a fork at its
    second answer, continued once."""
    import llm
    import sqlite_utils
    from llm.cli import load_conversation
    from llm.logs import LogStore
    from llm.plugins import pm

    pm.register(_ReplayPlugin(), name="convgraph-example-replay")
    try:
        with sqlite3.connect(path) as conn:
            before = [
                row[0] for row in conn.execute("select name from _llm_migrations")
            ]
        LogStore(sqlite_utils.Database(path))  # llm's migrations, as on upgrade
        model = llm.get_model(_ReplayModel.model_id)

        # `llm -c --cid SOURDOUGH`: llm rebuilds the legacy responses as the
        # history and logs into a thread of the conversation's id.
        conversation = load_conversation(SOURDOUGH, database=str(path))
        conversation.model = model
        response = conversation.prompt(CONTINUED[2])
        _log(path, response, CONTINUED)

        # A fork at the second legacy answer's rebuilt message, made as
        # LogStore.fork makes one (with a fixed id), and its first turn.
        db = sqlite_utils.Database(path)
        store = LogStore(db)
        parent = db["turns"].get(CONTINUED[0])["parent_message_hash"]
        answers = [
            message
            for message in _chain_hashes(db, parent)
            if db["messages"].get(message)["role"] == "assistant"
        ]
        thread = store.create_thread(
            name=_name(FORKED[2]),
            tip=answers[FORKED_AT],
            forked_from=SOURDOUGH,
            id=FORK_THREAD,
        )
        history = store.load_chain(store.thread_tip(thread))
        response = model.prompt(messages=[*history, llm.user(FORKED[2])])
        _log(path, response, FORKED, thread_id=thread)

        # `llm -c --cid FORK_THREAD`: the fork's own history, from its messages.
        conversation = load_conversation(FORK_THREAD, database=str(path))
        conversation.model = model
        response = conversation.prompt(FORK_CONTINUED[2])
        _log(path, response, FORK_CONTINUED)
        with sqlite3.connect(path) as conn:
            # When llm made each thread: fixed, like every other time here.
            conn.execute("update threads set datetime_utc = ?", ["2025-11-03 18:02:00"])
            conn.execute(
                "update _llm_migrations set applied_at = ?"
                " where name not in (select value from json_each(?))",
                ["2025-11-03 18:01:00+00:00", json.dumps(before)],
            )
    finally:
        pm.unregister(name="convgraph-example-replay")


def _log(path: Path, response, turn: tuple, thread_id: str | None = None) -> None:
    """Log a completed response as llm does, with the turn's fixed id and time."""
    import datetime

    import sqlite_utils
    from llm.logs import LogStore

    response.text()
    response.id = turn[0]
    response._start_utcnow = datetime.datetime.fromisoformat(turn[1])
    response._start, response._end = 0.0, 0.4 + len(turn[3]) / 1000
    db = sqlite_utils.Database(path)
    if thread_id is None:
        response.log_to_db(db)
    else:
        LogStore(db).log(response, thread_id=thread_id)
    db.close()


def _chain_hashes(db, tip: str) -> list[str]:
    """The messages from the first down to `tip`."""
    hashes = []
    while tip is not None:
        hashes.append(tip)
        tip = db["messages"].get(tip)["parent_hash"]
    return hashes[::-1]


def _name(prompt: str) -> str:
    """A thread's name, as llm names a new conversation (32 characters)."""
    text = " ".join(prompt.split())
    return text if len(text) <= 32 else text[:31] + "\u2026"


def _import_llm_model():
    import llm

    return llm


class _ReplayModel(_import_llm_model().Model):
    """A model that answers each prompt with the answer written above."""

    model_id = "llama3.2"
    can_stream = False

    def execute(self, prompt, stream, response, conversation=None):
        asked = "".join(
            getattr(part, "text", None) or "" for part in prompt.messages[-1].parts
        )
        text = REPLIES[asked]
        response.set_usage(input=len(asked.split()) + 40, output=len(text.split()))
        yield text


class _ReplayPlugin:
    @_import_llm_model().hookimpl
    def register_models(self, register):
        register(_ReplayModel())


if __name__ == "__main__":
    print(build())
