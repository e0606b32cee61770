"""How every command ends when it cannot end as meant (`way_out`): Ctrl-C status 130,
SIGTERM 143, a closed stdout quietly with 1, an unwritable stdout one line with 2."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import IO, Any

import click

INTERRUPTED = 130
TERMINATED = 143


class StdoutFailed(click.ClickException):
    """Standard output could not be written: one line, exit status 2."""

    exit_code = 2

    def format_message(self) -> str:
        from convgraph.text import terminal_text

        return terminal_text(self.message)


class Terminated(SystemExit):
    """SIGTERM, raised where the command is, so that it unwinds."""


@contextlib.contextmanager
def way_out() -> Iterator[None]:
    """Run a command's body so signals and a broken stdout end it as one line
    (or quietly, for a closed pipe) with the right status, no traceback."""
    from convgraph.writing import OutputError

    previous = _catch_sigterm()
    real = sys.stdout
    guarded = real if isinstance(real, GuardedStdout) else GuardedStdout(real)
    sys.stdout = guarded
    try:
        yield
        guarded.flush()
    except KeyboardInterrupt:
        _stdout_to_nothing()
        _say_on_stderr("interrupted")
        raise click.exceptions.Exit(INTERRUPTED) from None
    except Terminated:
        _stdout_to_nothing()
        _say_on_stderr("terminated")
        raise click.exceptions.Exit(TERMINATED) from None
    except BrokenPipeError:
        _stdout_to_nothing()
        raise click.exceptions.Exit(1) from None
    except OutputError as error:
        # stdout's, met in a print or in the last flush.
        _stdout_to_nothing()
        raise StdoutFailed(str(error)) from None
    finally:
        if guarded.failed:
            # What stdout still buffers would fail again at exit.
            _stdout_to_nothing()
        if sys.stdout is guarded:
            sys.stdout = real
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


class GuardedStdout:
    """Standard output for a command, a write's or flush's `OSError` (but a
    `BrokenPipeError`) raised as an `OutputError`; its `buffer` guarded too."""

    def __init__(self, stream: IO[Any]) -> None:
        self._stream = stream
        binary = getattr(stream, "buffer", None)
        self._buffer = None if binary is None else GuardedStdout(binary)
        self._failed = False

    @property
    def failed(self) -> bool:
        """Whether a write or a flush failed."""
        return self._failed or (self._buffer is not None and self._buffer.failed)

    @property
    def buffer(self) -> Any:
        if self._buffer is None:
            raise AttributeError("buffer")
        return self._buffer

    def write(self, data: Any) -> int:
        try:
            return self._stream.write(data)
        except OSError as error:
            raise self._failure(error) from None

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as error:
            raise self._failure(error) from None

    def _failure(self, error: OSError) -> OSError:
        """A closed pipe as it is, any other error as an `OutputError`."""
        self._failed = True
        if isinstance(error, BrokenPipeError):
            return error
        from convgraph.writing import output_error, stdout_name

        return output_error(stdout_name(), error)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _catch_sigterm() -> Any:
    """Have SIGTERM raise `Terminated`, returning the old handler; None where
    left alone (not the main thread, or SIGTERM handled already)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    previous = signal.getsignal(signal.SIGTERM)
    if previous is not signal.SIG_DFL:
        return None

    def terminate(number: int, frame: Any) -> None:
        raise Terminated(TERMINATED)

    signal.signal(signal.SIGTERM, terminate)
    return previous


def _stdout_to_nothing() -> None:
    """Point stdout's descriptor at /dev/null, so the exit's flush is silent."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        descriptor = sys.__stdout__.fileno() if sys.__stdout__ else 1
        if sys.stdout is not None and hasattr(sys.stdout, "fileno"):
            descriptor = sys.stdout.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, descriptor)
        os.close(devnull)


def _say_on_stderr(text: str) -> None:
    """One line on stderr, past its buffer (a signal may have cut a write)."""
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    with contextlib.suppress(Exception):
        click.echo(text, err=True)
