"""A tiny llm plugin for the tests and the fan-out benchmark: models that
answer slowly, or fail, as configured.

Each model answers with the messages it was sent, as JSON `[role, text]`
pairs (so a test can assert the exact history), in `chunks` pieces, waiting
`delay` seconds spread over them; with `fail_after` it raises
`llm.ModelError(reason)` after that many pieces, mid-stream, and with
`exit_after` `SystemExit(exit_code)`, as a plugin calling `sys.exit` would;
with `together` it first waits until that many answers have been in
progress at once (a handshake that proves they run side by side, whatever
the machine's load).
With `blocks`, its async form blocks the event loop it runs on (a wait that
is no await, as a plugin making a blocking call does) until `RELEASE` is
set; with `stall_file`, logging its answer stalls: llm reads the model's
`json_replacements` as it logs, on the thread that logs, and the model then
makes that file and waits for `RELEASE`. `registered` clears `RELEASE` and
sets it as it ends, so nothing stays blocked after a test. A model is
registered with an async form (the default, as API plugins have) or, with
`asynchronous=False`, as a synchronous model only, which convgraph runs in a
thread. `SlowModels.running` counts the answers in progress at this moment,
and `most_running` the most there ever were at once.

Register for the test process only (llm finds plugins through pluggy):

    with registered(SlowModel("slow", delay=0.2)):
        ...
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import llm
from llm.plugins import pm

PLUGIN_NAME = "convgraph-test-slow-models"


@dataclass(frozen=True)
class SlowModel:
    """How one test model behaves."""

    model_id: str
    delay: float = 0.0
    chunks: int = 3
    fail_after: int | None = None
    reason: str = "connection dropped"
    asynchronous: bool = True
    together: int = 0
    exit_after: int | None = None
    exit_code: int = 3
    blocks: bool = False
    stall_file: str | None = None


#: How long an answer waits for `together` answers at once before it fails:
#: a safety limit that turns a fan-out that is not parallel into a failure
#: instead of a hang.
TOGETHER_SECONDS = 300


#: What lets blocked and stalled models go on.
RELEASE = threading.Event()


def _together_failure(spec: SlowModel) -> llm.ModelError:
    return llm.ModelError(f"never {spec.together} answers at once")


def _check(spec: SlowModel, number: int) -> None:
    """Fail or exit as configured, before piece `number`."""
    if spec.fail_after is not None and number == spec.fail_after:
        raise llm.ModelError(spec.reason)
    if spec.exit_after is not None and number == spec.exit_after:
        raise SystemExit(spec.exit_code)


def _stall(spec: SlowModel) -> None:
    """Logging the answer: make the stall file, then wait for RELEASE (in
    short waits, so that a signal's handler runs at once)."""
    if spec.stall_file is None:
        return None
    Path(spec.stall_file).touch()
    deadline = time.monotonic() + TOGETHER_SECONDS
    while not RELEASE.wait(0.01) and time.monotonic() < deadline:
        pass
    return None


class Counter:
    """How many answers are in progress, across threads and tasks."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.most_running = 0

    def enter(self) -> None:
        with self.lock:
            self.running += 1
            self.most_running = max(self.most_running, self.running)

    def leave(self) -> None:
        with self.lock:
            self.running -= 1


COUNTER = Counter()


def _answer_pieces(prompt: llm.Prompt, chunks: int) -> list[str]:
    text = json.dumps(
        [
            [
                message.role,
                "".join(getattr(part, "text", "") or "" for part in message.parts),
            ]
            for message in prompt.messages
        ]
    )
    size = -(-len(text) // chunks)
    return [text[start : start + size] for start in range(0, len(text), size)]


class _Sync(llm.Model):
    can_stream = True

    def __init__(self, spec: SlowModel):
        self.spec = spec
        self.model_id = spec.model_id

    @property
    def json_replacements(self):
        return _stall(self.spec)

    def execute(self, prompt, stream, response, conversation=None):
        spec = self.spec
        pieces = _answer_pieces(prompt, spec.chunks)
        COUNTER.enter()
        try:
            deadline = time.monotonic() + TOGETHER_SECONDS
            while COUNTER.most_running < spec.together:
                if time.monotonic() > deadline:
                    raise _together_failure(spec)
                time.sleep(0.01)
            for number, piece in enumerate(pieces):
                time.sleep(spec.delay / len(pieces))
                _check(spec, number)
                yield piece
        finally:
            COUNTER.leave()
        response.set_usage(input=len(prompt.messages), output=len(pieces))


class _Async(llm.AsyncModel):
    can_stream = True

    def __init__(self, spec: SlowModel):
        self.spec = spec
        self.model_id = spec.model_id

    @property
    def json_replacements(self):
        return _stall(self.spec)

    async def execute(self, prompt, stream, response, conversation=None):
        spec = self.spec
        pieces = _answer_pieces(prompt, spec.chunks)
        COUNTER.enter()
        try:
            deadline = time.monotonic() + TOGETHER_SECONDS
            while COUNTER.most_running < spec.together:
                if time.monotonic() > deadline:
                    raise _together_failure(spec)
                await asyncio.sleep(0.01)
            # No await: the loop it runs on stops. Never released (a run
            # that waits for it to end first) is a failure, not an answer.
            if spec.blocks and not RELEASE.wait(TOGETHER_SECONDS):
                raise llm.ModelError("never released")
            for number, piece in enumerate(pieces):
                await asyncio.sleep(spec.delay / len(pieces))
                _check(spec, number)
                yield piece
        finally:
            COUNTER.leave()
        response.set_usage(input=len(prompt.messages), output=len(pieces))


class SlowModels:
    """The plugin: registers the models it was given."""

    def __init__(self, specs: tuple[SlowModel, ...]):
        self.specs = specs

    @llm.hookimpl
    def register_models(self, register):
        for spec in self.specs:
            if spec.asynchronous:
                register(_Sync(spec), _Async(spec))
            else:
                register(_Sync(spec))


@contextmanager
def registered(*specs: SlowModel) -> Iterator[Counter]:
    """The models registered with llm for the duration; yields the counter,
    reset."""
    COUNTER.running = COUNTER.most_running = 0
    RELEASE.clear()
    pm.register(SlowModels(specs), name=PLUGIN_NAME)
    try:
        yield COUNTER
    finally:
        RELEASE.set()
        pm.unregister(name=PLUGIN_NAME)
