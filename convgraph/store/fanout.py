"""Ask several models (or one several times) at once, and hand each answer back as soon
as it is complete. The first Ctrl-C stops what runs and keeps what completed; a second
goes to the handler from before. llm is imported only when requests run."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

_T = TypeVar("_T")

#: The states of a request, in the order they happen.
WAITING, STREAMING, DONE = "waiting", "streaming", "done"
FAILED, STOPPED = "failed", "stopped"

#: How often a live display is told that time passed, in seconds.
TICK_SECONDS = 0.2

#: The help llm users know for an unknown model.
UNKNOWN_MODEL_HINT = "(`llm models` lists the models llm knows)"


@dataclass(frozen=True)
class Request:
    """One model call: the model, which try, and the history and prompt given."""

    model_id: str
    attempt: int
    prompt: str
    messages: list[Any]
    system: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class Job:
    """A request and how it is going: what a live display shows."""

    request: Request
    label: str
    state: str = WAITING
    chunks: int = 0
    characters: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    started: float | None = None
    ended: float | None = None
    reason: str | None = None
    unknown_model: bool = False
    #: What `on_answer` returned for the answer (the logged node).
    result: Any = None
    #: The answer's chunks: adding to a string would copy it every chunk.
    pieces: list[str] = field(default_factory=list, repr=False)

    @property
    def text(self) -> str:
        """The answer received so far (all of it once the job is done)."""
        return "".join(self.pieces)

    @property
    def elapsed(self) -> float | None:
        """Seconds since the request started (until it ended), or None."""
        start = self.started
        return None if start is None else (self.ended or time.monotonic()) - start

    @property
    def message(self) -> str:
        """The one line that says why the request failed or stopped."""
        if self.unknown_model:
            return f"unknown model {self.request.model_id!r} {UNKNOWN_MODEL_HINT}"
        if self.state == STOPPED:
            return f"model {self.label} stopped: {self.reason}"
        return f"model {self.label} failed: {self.reason}"


@dataclass(frozen=True)
class Outcome:
    """Every job, in the order requested, and whether Ctrl-C ended the run."""

    jobs: list[Job]
    interrupted: bool


def job_labels(requests: Sequence[Request]) -> list[str]:
    """Each request's name in messages: its model id, `#N` where asked again."""
    counts = Counter(request.model_id for request in requests)
    return [
        request.model_id
        if counts[request.model_id] == 1
        else f"{request.model_id} #{request.attempt}"
        for request in requests
    ]


def run_requests(
    requests: Sequence[Request],
    on_answer: Callable[[Job, Any], Any],
    *,
    parallel: int = 8,
    timeout: float | None = None,
    on_change: Callable[[list[Job]], None] | None = None,
) -> Outcome:
    """Run the requests concurrently; call `on_answer(job, response)` on this thread for
    each completed answer (its return is `job.result`; its exception fails the job).
    Returns the jobs, done, failed or stopped, and whether Ctrl-C interrupted the
    run."""
    jobs = [
        Job(request, label)
        for request, label in zip(requests, job_labels(requests), strict=True)
    ]
    runner = _Runner(jobs, on_answer, max(1, parallel), timeout, on_change)
    with _first_ctrl_c_stops(runner):
        interrupted = asyncio.run(runner.run_all())
    return Outcome(jobs, interrupted)


@contextlib.contextmanager
def _first_ctrl_c_stops(runner: _Runner) -> Iterator[None]:
    """While the run lasts, the first Ctrl-C stops it and a later one goes to
    the handler from before. asyncio's own would raise inside the loop, reported
    as a task's error. Only the main thread touches signals."""
    before = signal.getsignal(signal.SIGINT)
    main = threading.current_thread() is threading.main_thread()
    if not main or before in (signal.SIG_IGN, None):
        yield
        return

    def on_ctrl_c(number: int, frame: Any) -> None:
        if runner.stop():
            return
        signal.signal(signal.SIGINT, before)
        if callable(before):
            before(number, frame)
        else:  # SIG_DFL: the process ends as Ctrl-C would have ended it
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_ctrl_c)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def outside_event_loop(function: Callable[[], _T]) -> _T:
    """Call `function` here, or in a thread of its own where a loop already runs
    in this one (Jupyter); its result or exception comes back either way."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return function()
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = function()
        except BaseException as error:  # handed back to the caller below
            outcome["error"] = error

    thread = threading.Thread(target=target, name="convgraph-fan-out")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    value: _T = outcome["value"]
    return value


class _Runner:
    """One run of requests on one event loop."""

    def __init__(
        self,
        jobs: list[Job],
        on_answer: Callable[[Job, Any], Any],
        parallel: int,
        timeout: float | None,
        on_change: Callable[[list[Job]], None] | None,
    ):
        self.jobs, self.on_answer, self.on_change = jobs, on_answer, on_change
        self.parallel, self.timeout = parallel, timeout
        self.models: dict[str, tuple[Any, bool] | str] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self.main: asyncio.Task[Any] | None = None
        self.stopped = False

    def stop(self) -> bool:
        """Ctrl-C: stop the run; False when stopped already."""
        if self.stopped:
            return False
        self.stopped = True
        if self.loop is not None and self.main is not None:
            with contextlib.suppress(RuntimeError):  # the loop has ended
                self.loop.call_soon_threadsafe(self.main.cancel)
        return True

    def changed(self) -> None:
        if self.on_change is not None:
            self.on_change(self.jobs)

    async def run_all(self) -> bool:
        """Run every job; True when Ctrl-C (a cancel of this task) ended it."""
        self.loop = asyncio.get_running_loop()
        self.main = asyncio.current_task()
        self.loop.set_exception_handler(_not_an_interrupt)
        self.slots = asyncio.Semaphore(self.parallel)
        self.starting = asyncio.Lock()
        if self.stopped:  # Ctrl-C before the loop ran
            for job in self.jobs:
                job.state, job.reason = STOPPED, "interrupted (Ctrl-C)"
            return True
        tasks = [asyncio.ensure_future(self.run(job)) for job in self.jobs]
        ticker = asyncio.ensure_future(self.tick()) if self.on_change else None
        self.changed()
        interrupted = False
        try:
            await asyncio.gather(*tasks)
        except asyncio.CancelledError:
            # Ctrl-C: the jobs are cancelled; what was logged stays.
            interrupted = True
            await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            if ticker is not None:
                ticker.cancel()
        self.changed()
        return interrupted

    async def tick(self) -> None:
        while True:
            await asyncio.sleep(TICK_SECONDS)
            self.changed()

    async def run(self, job: Job) -> None:
        cancel = _Cancel()
        deadline = None
        try:
            async with self.slots:
                if (model := self.model(job)) is None:
                    return
                job.state, job.started = STREAMING, time.monotonic()
                self.changed()
                async with asyncio.timeout(self.timeout) as deadline:
                    response, error = await self.answer(job, *model, cancel)
        except TimeoutError as error:
            cancel.set()
            if deadline is not None and deadline.expired():
                self.fail(job, f"no answer within {self.timeout:g} s (--timeout)")
            else:
                self.fail(job, _reason(error))  # not the --timeout
            return
        except asyncio.CancelledError:
            cancel.set()
            job.state, job.reason = STOPPED, "interrupted (Ctrl-C)"
            job.ended = time.monotonic()
            return
        except Exception as error:  # finding the model failed: this job only
            self.fail(job, _reason(error))
            return
        if error is not None:
            # Whatever the model raised, a SystemExit too, fails this one alone.
            self.fail(job, _reason(error))
            return
        job.input_tokens = response.input_tokens
        job.output_tokens, job.ended = response.output_tokens, time.monotonic()
        try:
            # No await inside: the first Ctrl-C cannot cut a write.
            job.result = self.on_answer(job, response)
        except Exception as error:
            self.fail(job, f"answered, but the answer was not logged: {error}")
            return
        job.state = DONE
        self.changed()

    def fail(self, job: Job, reason: str) -> None:
        job.state, job.reason, job.ended = FAILED, reason, time.monotonic()
        self.changed()

    def model(self, job: Job) -> tuple[Any, bool] | None:
        """The job's model and whether it is async, or None where llm has none."""
        model_id = job.request.model_id
        if model_id not in self.models:
            self.models[model_id] = _resolve(model_id)
        found = self.models[model_id]
        if isinstance(found, str):
            job.unknown_model = True
            self.fail(job, found)
            return None
        return found

    async def answer(
        self, job: Job, model: Any, is_async: bool, cancel: _Cancel
    ) -> tuple[Any, BaseException | None]:
        """The finished answer, streamed in a thread of its own: `(response, None)`
        or `(None, error)`. Threads start one at a time, each once the one before has
        begun (llm takes the time then), so answers' times follow the order asked."""
        loop = asyncio.get_running_loop()
        started: asyncio.Future[Any] = loop.create_future()
        finished: asyncio.Future[tuple[Any, BaseException | None]]
        finished = loop.create_future()
        async with self.starting:
            threading.Thread(
                target=self.stream_in_thread,
                args=(job, model, is_async, started, finished, cancel),
                name=f"convgraph-{job.label}",
                daemon=True,
            ).start()
            await started
        return await finished

    def chunk(self, job: Job, chunk: str) -> None:
        job.chunks += 1
        job.characters += len(chunk)
        job.pieces.append(chunk)
        self.changed()

    def stream_in_thread(
        self,
        job: Job,
        model: Any,
        is_async: bool,
        started: asyncio.Future[Any],
        finished: asyncio.Future[Any],
        cancel: _Cancel,
    ) -> None:
        """Stream the answer in the request's thread; what the model raises is the
        request's value (`_settle`)."""
        try:
            if is_async:
                response = asyncio.run(self.stream_async(job, model, started, cancel))
            else:
                response = _prompt(model, job.request)
                self.from_thread(_settle, started, None, None)
                for chunk in response:
                    if cancel.done:
                        return  # abandoned: nobody waits for the rest
                    self.from_thread(self.chunk, job, chunk)
        except BaseException as error:
            self.from_thread(_settle, started, None, None)
            self.from_thread(_settle, finished, None, error)
            return
        self.from_thread(_settle, finished, response, None)

    async def stream_async(
        self, job: Job, model: Any, started: asyncio.Future[Any], cancel: _Cancel
    ) -> Any:
        """An async model's answer, on this thread's own event loop."""
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        assert task is not None
        cancel.on_set(lambda: loop.call_soon_threadsafe(task.cancel))
        response = _prompt(model, job.request)
        # aiter() once: llm takes the response's time there.
        chunks = aiter(response)
        self.from_thread(_settle, started, None, None)
        while True:  # not `async for`, which would call aiter() again
            try:
                chunk = await anext(chunks)
            except StopAsyncIteration:
                break
            self.from_thread(self.chunk, job, chunk)
        return await response.to_sync_response()

    def from_thread(self, function: Callable[..., None], *args: Any) -> None:
        # Once the loop has ended the run is over: nothing waits any more.
        if self.loop is None:
            return
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(function, *args)


class _Cancel:
    """A request abandoned: a flag its thread reads between chunks, and what to
    do at once when set (an async task cancelled on its loop)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.done = False
        self.callbacks: list[Callable[[], object]] = []

    def set(self) -> None:
        with self.lock:
            self.done = True
            callbacks, self.callbacks = self.callbacks, []
        for callback in callbacks:
            with contextlib.suppress(RuntimeError):  # its loop has ended
                callback()

    def on_set(self, callback: Callable[[], object]) -> None:
        with self.lock:
            if not self.done:
                self.callbacks.append(callback)
                return
        with contextlib.suppress(RuntimeError):
            callback()


def _not_an_interrupt(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """asyncio's report of a task's error, but for a second Ctrl-C raised inside
    the loop, which is the caller's."""
    if isinstance(context.get("exception"), KeyboardInterrupt | SystemExit):
        return
    loop.default_exception_handler(context)


def _settle(
    future: asyncio.Future[Any], value: Any, error: BaseException | None
) -> None:
    """Hand a thread's answer or exception to the loop as a value, so no model's
    SystemExit is raised in the loop."""
    if not future.done():
        future.set_result((value, error))


def _prompt(model: Any, request: Request) -> Any:
    return model.prompt(
        request.prompt,
        messages=request.messages,
        system=request.system,
        **request.options,
    )


def _resolve(model_id: str) -> tuple[Any, bool] | str:
    """llm's model for an id or alias, async where possible, or why there is none."""
    import llm

    try:
        model = llm.get_model(model_id)
    except llm.UnknownModelError:
        return f"unknown model {UNKNOWN_MODEL_HINT}"
    try:
        return llm.get_async_model(model_id), True
    except llm.UnknownModelError:
        return model, False


def _reason(error: BaseException) -> str:
    """An exception as one line: its message, else its type's name; the type
    first for what is no `Exception`."""
    text = " ".join(str(error).split())
    if not isinstance(error, Exception):
        return f"{type(error).__name__}: {text}" if text else type(error).__name__
    return text or type(error).__name__
