"""Synthetic llm databases of any size and shape, built fast, for the benchmarks.

`build_legacy` writes llm 0.31's legacy schema (`responses`, `conversations`,
optionally the `parent_response_id` column); `build_message_store` lets llm
0.36 create its own message-store schema and fills `messages`, `parts`,
`threads`, `turns` and `turn_search` as llm's `LogStore.log` and
`LogStore.fork` would. Rows are generated, never held: each table is one
`executemany` over a generator inside one transaction, so a million responses
take seconds. Everything is a pure function of the row's index (ids, times,
texts, the parent), so a build is reproducible and the parent of a row is
computed, not looked up.

Shapes, inside each conversation (nodes numbered 0..n-1 in log order):

- ``linear``: a chain, with an occasional retry (about one node in eight
  from the third on) that is a sibling of the node before it, as `llm` users
  make when they re-run a prompt; the chain goes on from the retry.
- ``bushy``: a complete `BUSHY_FANOUT`-ary tree in breadth-first order: every
  inner node has `BUSHY_FANOUT` children (the last one maybe fewer).
- ``deep``: one chain, the whole conversation: depth = size - 1.
- ``revisited`` (built on request, not one of the benchmarks' `SHAPES`):
  ``linear``, but the user went back at the end: the conversation's last
  node continues the alternative its first retry left behind, where the
  chain had gone on two steps or more. The branch last used (convgraph's
  active path, where `llm -c` goes on: in the message store, the older
  thread that alternative is in) is then neither the longest branch nor the
  one most recently started (the newest fork), as in the chat apps a
  person goes back to an older answer; a reader that guesses the active
  branch is the longest, or the newest thread's, gets it wrong.

Conversations hold consecutive blocks of responses; their sizes differ by at
most one (the first `responses % conversations` get one more).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

SCHEMA_0_31 = (
    Path(__file__).resolve().parent.parent / "tests" / "data" / "llm-0.31-schema.sql"
)

#: The shapes the benchmarks measure.
SHAPES = ("linear", "bushy", "deep")
#: Every shape a build takes.
BUILD_SHAPES = (*SHAPES, "revisited")
#: Children of every inner node in the bushy shape.
BUSHY_FANOUT = 4
#: One node in RETRY_EVERY (pseudo-random, from the third on) is a retry.
RETRY_EVERY = 8
#: Models the responses rotate through.
MODELS = ("gpt-4o-mini", "claude-3.5-sonnet", "gemini-2.0-flash", "echo")
#: The first response is logged at this time (ms since the epoch), one about
#: every 7 seconds after it.
START_MS = 1_735_689_600_000
STEP_MS = 7_013
#: llm's conversation names are the first prompt, this long at most.
NAME_LENGTH = 32

_SENTENCE = (
    "the tree of a conversation branches where a prompt was retried or a"
    " different model was asked from the same point and every branch keeps"
    " its own history so that a user can compare answers and go back to any"
    " earlier turn to take another path through the problem while the log"
    " records each model call with its usage figures timings and the text"
    " that went in and came out of it including code samples explanations"
    " lists of steps and the occasional long digression about graphs forests"
    " roots leaves depth breadth and the cost of reading a million rows"
)
WORDS = _SENTENCE.split(" ")
_POOL_RANDOM = random.Random(7)
_POOL = " ".join(_POOL_RANDOM.choice(WORDS) for _ in range(4000))
_CROCKFORD = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", b"0123456789abcdefghjkmnpqrstvwxyz"
)
_DIGITS = "0123456789abcdefghjkmnpqrstvwxyz"


def parent_index(shape: str, k: int, g: int, size: int = 0) -> int | None:
    """The local index of node `k`'s parent in a conversation of `shape`.

    `g` is the node's global index, which seeds the linear shape's retries;
    `size` the conversation's (the revisited shape's last node needs it).
    None for the root (k = 0).
    """
    if k == 0:
        return None
    if shape == "deep":
        return k - 1
    if shape == "bushy":
        return (k - 1) // BUSHY_FANOUT
    if shape == "revisited" and k == size - 1:
        behind = revisited_alternative(g - k, size)
        if behind is not None:
            return behind
        shape = "linear"
    if shape in ("linear", "revisited"):
        if k >= 2 and is_retry(g):
            # A retry answers the same prompt again: the previous node's
            # sibling. Following the previous node's own link keeps a run of
            # retries on one parent.
            return _linear_parent(k - 1, g - 1)
        return k - 1
    raise ValueError(
        f"unknown shape {shape!r}; choose one of {', '.join(BUILD_SHAPES)}"
    )


def revisited_alternative(start: int, size: int) -> int | None:
    """In a revisited conversation of `size` nodes whose root is global node
    `start`: the node its last node goes back to (the alternative the first
    retry left behind), or None where the chain did not go on two steps
    past it (then the conversation is linear).

    Until its first retry a conversation is a chain, so the alternative left
    behind is the node before that retry, at its own depth; the chain's end
    (node size - 2) lies as deep as its nodes less its retries.

    Examples
    --------
    >>> [k for k in range(2, 12) if is_retry(1000 + k)]  # the retries
    [4]
    >>> revisited_alternative(1000, 12)  # node 3, left behind by node 4
    3
    >>> revisited_alternative(1000, 7) is None  # the chain ends at depth 4
    True
    """
    retries = [k for k in range(2, size - 1) if is_retry(start + k)]
    if not retries:
        return None
    behind = retries[0] - 1
    chain_end_depth = (size - 2) - len(retries)
    if chain_end_depth < behind + 2:
        return None
    return behind


def _linear_parent(k: int, g: int) -> int:
    # Walk back over a run of retries without recursion.
    while k >= 2 and is_retry(g):
        k, g = k - 1, g - 1
    return k - 1


def is_retry(g: int) -> bool:
    """Whether global node `g` of a linear conversation is a retry."""
    return ((g * 2_654_435_761) >> 11) % RETRY_EVERY == 0


def conversation_sizes(responses: int, conversations: int) -> Iterator[int]:
    """How many responses each conversation holds (differing by one at most)."""
    if responses < 1 or not 1 <= conversations <= responses:
        raise ValueError("need 1 <= conversations <= responses")
    base, extra = divmod(responses, conversations)
    for c in range(conversations):
        yield base + (c < extra)


class _Ids:
    """ULID-like ids (26 characters of Crockford base32, lower case, as llm's
    `monotonic_ulid` prints them): a millisecond time part, then 80 random bits
    drawn up front, so that id(i) is a pure function of i."""

    def __init__(self, count: int, seed: int, start_ms: int = START_MS):
        rng = random.Random(seed)
        self.start_ms = start_ms
        self.random = (
            base64.b32encode(rng.randbytes(10 * count)).translate(_CROCKFORD).decode()
        )
        self.pairs = [a + b for a in _DIGITS for b in _DIGITS]

    def __call__(self, index: int, ms: int) -> str:
        pairs = self.pairs
        time_part = (
            pairs[(ms >> 40) & 1023]
            + pairs[(ms >> 30) & 1023]
            + pairs[(ms >> 20) & 1023]
            + pairs[(ms >> 10) & 1023]
            + pairs[ms & 1023]
        )
        return time_part + self.random[16 * index : 16 * index + 16]


def _timestamp(ms: int, sep: str = "T") -> str:
    seconds, millis = divmod(ms, 1000)
    return time.strftime(f"%Y-%m-%d{sep}%H:%M:%S", time.gmtime(seconds)) + (
        f".{millis:03d}{(ms * 7) % 1000:03d}+00:00"
    )


def prompt_text(g: int) -> str:
    """The prompt of global node `g`: 80 to 280 characters."""
    length = 80 + (g * 37) % 201
    start = (g * 7_919) % (len(_POOL) - 300)
    return f"Question {g}: " + _POOL[start : start + length]


def response_text(g: int) -> str:
    """The response of global node `g`: 200 to 700 characters."""
    length = 200 + (g * 53) % 501
    start = (g * 104_729) % (len(_POOL) - 800)
    return _POOL[start : start + length]


def _name(prompt: str) -> str:
    return prompt if len(prompt) <= NAME_LENGTH else prompt[: NAME_LENGTH - 1] + "…"


def _fast_connection(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    # A build is all or nothing (a half-built file is deleted), so it needs
    # no journal and no fsync; a big cache keeps the id indexes in memory.
    conn.execute("pragma journal_mode = off")
    conn.execute("pragma synchronous = off")
    conn.execute("pragma cache_size = -400000")
    return conn


def _fresh(path: str | os.PathLike[str]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-journal", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    return path


def build_legacy(
    path: str | os.PathLike[str],
    responses: int,
    conversations: int,
    shape: str = "linear",
    with_parent: bool = True,
    *,
    seed: int = 0,
    search_index: bool = False,
) -> Path:
    """A legacy llm 0.31 `logs.db` of `responses` rows in `conversations`.

    Parameters
    ----------
    path
        Where to write it (replaced if it exists).
    responses, conversations
        Exact row counts of `responses` and `conversations`.
    shape
        ``"linear"``, ``"bushy"``, ``"deep"`` or ``"revisited"`` (see the
        module's docstring).
    with_parent
        Add the `parent_response_id` column and fill it from the shape;
        without it each conversation is a chain in log order, as llm < 0.32
        wrote them, whatever the shape.
    search_index
        Keep llm's full-text triggers during the load, so `responses_fts` is
        filled as llm would fill it. Off by default: convgraph never reads
        it, and it triples the build time. The triggers are in the schema
        either way.

    Returns
    -------
    The path written.
    """
    if shape not in BUILD_SHAPES:
        raise ValueError(
            f"unknown shape {shape!r}; choose one of {', '.join(BUILD_SHAPES)}"
        )
    sizes = list(conversation_sizes(responses, conversations))
    path = _fresh(path)
    ids = _Ids(responses, seed)
    conversation_ids = _Ids(conversations, seed + 1)
    conn = _fast_connection(path)
    try:
        conn.executescript(SCHEMA_0_31.read_text())
        if with_parent:
            conn.execute("alter table responses add column parent_response_id text")
        triggers = _drop_triggers(conn, "responses") if not search_index else []
        conn.execute("begin")

        def response_rows() -> Iterator[tuple]:
            g = 0
            for c, size in enumerate(sizes):
                start = g
                conversation = conversation_ids(c, START_MS + start * STEP_MS)
                for k in range(size):
                    ms = START_MS + g * STEP_MS
                    parent = parent_index(shape, k, g, size)
                    parent_id = (
                        ids(start + parent, START_MS + (start + parent) * STEP_MS)
                        if parent is not None
                        else None
                    )
                    prompt = prompt_text(g)
                    row = (
                        ids(g, ms),
                        MODELS[c % len(MODELS)],
                        prompt,
                        "You are a helpful assistant." if c % 3 == 0 else None,
                        "{}",
                        response_text(g),
                        conversation,
                        400 + (g * 31) % 9000,
                        _timestamp(ms),
                        len(prompt) // 4,
                        100 + (g * 17) % 600,
                    )
                    yield (*row, parent_id) if with_parent else row
                    g += 1

        columns = (
            "id, model, prompt, system, options_json, response, conversation_id,"
            " duration_ms, datetime_utc, input_tokens, output_tokens"
        )
        marks = "?, " * 10 + "?"
        if with_parent:
            columns += ", parent_response_id"
            marks += ", ?"
        conn.executemany(
            f"insert into responses ({columns}) values ({marks})", response_rows()
        )

        def conversation_rows() -> Iterator[tuple]:
            start = 0
            for c, size in enumerate(sizes):
                yield (
                    conversation_ids(c, START_MS + start * STEP_MS),
                    _name(prompt_text(start)),
                    MODELS[c % len(MODELS)],
                )
                start += size

        conn.executemany(
            "insert into conversations (id, name, model) values (?, ?, ?)",
            conversation_rows(),
        )
        conn.execute("commit")
        for sql in triggers:
            conn.execute(sql)
    except BaseException:
        conn.close()
        _fresh(path)
        raise
    conn.close()
    return path


def _drop_triggers(conn: sqlite3.Connection, table: str) -> list[str]:
    """Drop a table's triggers for a bulk load; returns the SQL to recreate them."""
    rows = conn.execute(
        "select name, sql from sqlite_master where type = 'trigger' and tbl_name = ?",
        [table],
    ).fetchall()
    for name, _ in rows:
        conn.execute(f'drop trigger "{name}"')
    return [sql for _, sql in rows]


def message_hash(role: str, text: str, parent_hash: str | None) -> str:
    """llm's content hash of a one-text-part message reached via `parent_hash`.

    The same value as `llm.logs.message_hash(llm.user(text), parent_hash)`
    (blake2b of the canonical JSON of parent and message), written out by
    hand because building llm's Message objects per row would be the slowest
    part of a build.
    """
    canonical = (
        '{"message":{"parts":[{"text":'
        + _json_string(text)
        + ',"type":"text"}],"role":"'
        + role
        + '"},"parent":'
        + (f'"{parent_hash}"' if parent_hash is not None else "null")
        + "}"
    )
    digest = hashlib.blake2b(canonical.encode("utf-8"), digest_size=16).hexdigest()
    return "b2:" + digest


def _json_string(text: str) -> str:
    # The generated texts need no escaping; json.dumps is for any other text.
    if '"' in text or "\\" in text or not text.isascii() or not text.isprintable():
        return json.dumps(text, ensure_ascii=False)
    return f'"{text}"'


def build_message_store(
    path: str | os.PathLike[str],
    turns: int,
    conversations: int | None = None,
    shape: str = "linear",
    *,
    seed: int = 0,
    search_index: bool = False,
) -> Path:
    """An llm 0.36 `logs.db` holding `turns` turns in the message store.

    The schema is llm's own (its migrations run through `LogStore`); the rows
    are written directly, in the shape `LogStore.log` and `LogStore.fork`
    give them. Each turn is one user message (its `parent_message_hash`) whose
    parent is the assistant message of the turn it continues, and one
    assistant message (its `tip_message_hash`), each with one text part.
    Each conversation starts an original thread; the first child of a turn
    continues the turn's thread, and every further child (a retry, another
    branch) is logged in a new thread forked from it (`forked_from`), as
    `LogStore.fork` at the parent's answer followed by `LogStore.log` makes
    it. A thread's tip is its last turn's answer.

    Parameters
    ----------
    path
        Where to write it (replaced if it exists).
    turns
        Exact number of turns.
    conversations
        Number of original threads (trees); default ``turns // 10``, at least 1.
    shape
        ``"linear"``, ``"bushy"``, ``"deep"`` or ``"revisited"``, the shape
        of the turn tree.
    search_index
        Also write `turn_search` with llm's full-text triggers on, as llm
        does. Off by default: `turn_search` is then filled without its
        full-text index (the triggers are dropped for the load and put back),
        which convgraph does not read.

    Returns
    -------
    The path written.
    """
    import sqlite_utils
    from llm.logs import LogStore

    if shape not in BUILD_SHAPES:
        raise ValueError(
            f"unknown shape {shape!r}; choose one of {', '.join(BUILD_SHAPES)}"
        )
    if conversations is None:
        conversations = max(1, turns // 10)
    sizes = list(conversation_sizes(turns, conversations))
    path = _fresh(path)
    db = sqlite_utils.Database(path)
    LogStore(db)
    db.close()

    ids = _Ids(turns, seed)
    thread_ids = _Ids(turns, seed + 1)
    conn = _fast_connection(path)
    try:
        triggers = _drop_triggers(conn, "turn_search") if not search_index else []
        conn.execute("begin")
        threads: list[tuple] = []

        def turn_rows() -> Iterator[tuple]:
            """Turns, and the messages and parts they need, as one stream of
            (table, row) pairs; threads are collected per conversation."""
            g = 0
            forks = 0
            for c, size in enumerate(sizes):
                # Per conversation only: each turn's thread and answer (the
                # hashes chain down from the root, so a child's hash needs its
                # parent's), which turns already have a child, and each
                # thread's latest tip.
                thread_of: list[str] = []
                answers: list[str] = []
                has_child: set[int] = set()
                conversation_threads: dict[str, list] = {}
                for k in range(size):
                    ms = START_MS + g * STEP_MS
                    parent = parent_index(shape, k, g, size)
                    if parent is None:
                        thread = thread_ids(forks, START_MS + g * STEP_MS)
                        forks += 1
                        name = _name(prompt_text(g))
                        conversation_threads[thread] = [name, None, None, ms]
                    elif parent not in has_child:
                        thread = thread_of[parent]
                    else:
                        thread = thread_ids(forks, START_MS + g * STEP_MS - 1)
                        forks += 1
                        conversation_threads[thread] = [
                            None,
                            None,
                            thread_of[parent],
                            ms,
                        ]
                    if parent is not None:
                        has_child.add(parent)
                    thread_of.append(thread)
                    prompt = prompt_text(g)
                    response = response_text(g)
                    above = answers[parent] if parent is not None else None
                    user = message_hash("user", prompt, above)
                    answer = message_hash("assistant", response, user)
                    answers.append(answer)
                    yield "m", (user, above, "user")
                    yield "m", (answer, user, "assistant")
                    yield "p", (user, prompt)
                    yield "p", (answer, response)
                    yield (
                        "t",
                        (
                            ids(g, ms),
                            thread,
                            user,
                            answer,
                            MODELS[c % len(MODELS)],
                            len(prompt) // 4,
                            100 + (g * 17) % 600,
                            400 + (g * 31) % 9000,
                            _timestamp(ms),
                        ),
                    )
                    yield "s", (ids(g, ms), prompt, response)
                    conversation_threads[thread][1] = answer
                    g += 1
                for thread, (
                    name,
                    tip,
                    forked_from,
                    ms,
                ) in conversation_threads.items():
                    threads.append(
                        (thread, name, tip, forked_from, _timestamp(ms, " "))
                    )

        inserts = {
            "m": "insert into messages (hash, parent_hash, role) values (?, ?, ?)",
            "p": "insert into parts (message_hash, position, type, text)"
            " values (?, 0, 'text', ?)",
            "t": "insert into turns (id, thread_id, parent_message_hash,"
            " tip_message_hash, model, input_tokens, output_tokens, duration_ms,"
            " datetime_utc) values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            "s": "insert into turn_search (turn_id, prompt, response) values (?, ?, ?)",
        }
        # One pass over the stream, buffered per table in chunks so that no
        # table's rows are all held at once.
        buffers: dict[str, list[tuple]] = {key: [] for key in inserts}
        for table, row in turn_rows():
            buffer = buffers[table]
            buffer.append(row)
            if len(buffer) >= 20_000:
                conn.executemany(inserts[table], buffer)
                buffer.clear()
            if len(threads) >= 20_000:
                _insert_threads(conn, threads)
        for table, buffer in buffers.items():
            conn.executemany(inserts[table], buffer)
        _insert_threads(conn, threads)
        conn.execute("commit")
        for sql in triggers:
            conn.execute(sql)
    except BaseException:
        conn.close()
        _fresh(path)
        raise
    conn.close()
    return path


def _insert_threads(conn: sqlite3.Connection, threads: list[tuple]) -> None:
    conn.executemany(
        "insert into threads (id, name, tip_message_hash, forked_from, datetime_utc)"
        " values (?, ?, ?, ?, ?)",
        threads,
    )
    threads.clear()


# -- the random-branching legacy file (issue 28's shape) --------------------------

#: Conversations of the random shape hold 1 to RANDOM_MOST responses (mean
#: about 10.5: a million responses in some 95,000 conversations).
RANDOM_MOST = 20


def random_sizes(responses: int, seed: int = 0) -> list[int]:
    """Conversation sizes drawn uniformly from 1 to `RANDOM_MOST` (the last
    one cut so that they add up to exactly `responses`).

    Examples
    --------
    >>> sizes = random_sizes(1_000)
    >>> sum(sizes), min(sizes) >= 1, max(sizes) <= RANDOM_MOST
    (1000, True, True)
    """
    if responses < 1:
        raise ValueError("need at least one response")
    rng = random.Random(seed)
    sizes: list[int] = []
    left = responses
    while left:
        size = min(rng.randint(1, RANDOM_MOST), left)
        sizes.append(size)
        left -= size
    return sizes


def random_parent(k: int, g: int) -> int | None:
    """The local index of node `k`'s parent in a random-branching
    conversation: a pseudo-random earlier node of it (a pure function of
    the global index `g`); None for the root."""
    if k == 0:
        return None
    return ((g * 2_654_435_761) >> 7) % k


def build_random_legacy(
    path: str | os.PathLike[str], responses: int, *, seed: int = 0
) -> Path:
    """A migrated legacy `logs.db` of `responses` rows with random branching:
    conversations of `random_sizes`, each response's parent a random earlier
    response of its conversation (`random_parent`), as a file looks after
    `convgraph migrate --link-linear` and llm logging branches into it since:
    `parent_response_id` filled, its index and the conversation index,
    convgraph's rules and the migration's record.

    Built as the linear legacy file of as many conversations, whose rows
    (ids, times, texts, in log order) are then regrouped into the random
    conversations and relinked in one pass, and migrated by convgraph's own
    `migrate` (which adds the indexes, the rules and the record).
    """
    from convgraph.store.migrate import migrate

    sizes = random_sizes(responses, seed)
    path = build_legacy(path, responses, len(sizes), "linear", seed=seed)
    conn = _fast_connection(path)
    try:
        conversation_ids = [
            row[0]
            for row in conn.execute("select id from conversations order by rowid")
        ]
        ids = [
            row[0] for row in conn.execute("select id from responses order by rowid")
        ]

        def relinked() -> Iterator[tuple]:
            g = 0
            for c, size in enumerate(sizes):
                start = g
                for k in range(size):
                    parent = random_parent(k, g)
                    yield (
                        conversation_ids[c],
                        MODELS[c % len(MODELS)],
                        None if parent is None else ids[start + parent],
                        g + 1,
                    )
                    g += 1

        def named() -> Iterator[tuple]:
            start = 0
            for c, size in enumerate(sizes):
                yield _name(prompt_text(start)), MODELS[c % len(MODELS)], c + 1
                start += size

        triggers = _drop_triggers(conn, "responses")
        conn.execute("begin")
        conn.executemany(
            "update responses set conversation_id = ?, model = ?,"
            " parent_response_id = ? where rowid = ?",
            relinked(),
        )
        conn.executemany(
            "update conversations set name = ?, model = ? where rowid = ?", named()
        )
        conn.execute("commit")
        for sql in triggers:
            conn.execute(sql)
    except BaseException:
        conn.close()
        _fresh(path)
        raise
    conn.close()
    migrate(path)
    return path


def build_imported_legacy(
    path: str | os.PathLike[str], responses: int, *, seed: int = 0
) -> Path:
    """The random-branching migrated file (`build_random_legacy`) as an
    imported history leaves it: conversations stored one after another, but
    their times in a shuffled order, so that `datetime_utc` is not in id (or
    storage) order and log order is a real sort. Each conversation keeps its
    own responses' order and spacing: conversation `c` is moved to the
    place in time of a pseudo-random other one."""
    path = build_random_legacy(path, responses, seed=seed)
    sizes = random_sizes(responses, seed)
    places = list(range(len(sizes)))
    random.Random(seed + 1).shuffle(places)
    # The running total of sizes in the shuffled order gives each
    # conversation's first global step.
    first, total = [0] * len(sizes), 0
    for c in sorted(range(len(sizes)), key=places.__getitem__):
        first[c], total = total, total + sizes[c]

    def retimed() -> Iterator[tuple[str, int]]:
        g = 0
        for c, size in enumerate(sizes):
            for k in range(size):
                yield _timestamp(START_MS + (first[c] + k) * STEP_MS), g + 1
                g += 1

    conn = _fast_connection(path)
    try:
        triggers = _drop_triggers(conn, "responses")
        conn.execute("begin")
        conn.executemany(
            "update responses set datetime_utc = ? where rowid = ?", retimed()
        )
        conn.execute("commit")
        for sql in triggers:
            conn.execute(sql)
    finally:
        conn.close()
    return path
