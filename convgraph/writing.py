"""The one way out: every file convgraph writes goes through `written`."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import sys
from collections.abc import Iterator
from typing import IO, cast

from convgraph.errors import ConvgraphError

#: The path that names standard output.
STDOUT = "-"

#: A path through these names an open descriptor's file, written in place.
_DESCRIPTOR_DIRECTORIES = ("/proc/", "/dev/fd/")
_MAX_LINKS = 40
_SEPARATORS = tuple(filter(None, (os.sep, os.altsep)))
#: What the hidden temporary name adds to the user's: `.`, `.`, 8 hex, `.partial`.
_ADDED = len(".." + "0" * 8 + ".partial")
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


class OutputError(ConvgraphError, OSError):
    """A file (or standard output) could not be written: `path` and the reason."""

    def __init__(self, path: str, reason: str):
        super().__init__(path, reason)
        self.path = path
        self.reason = reason

    def __str__(self) -> str:
        return f"cannot write {self.path}: {self.reason}"


def output_error(path: str, error: OSError) -> OutputError:
    """The `OutputError` of `error`, raised while writing `path`."""
    return OutputError(path, error.strerror or str(error) or type(error).__name__)


def stdout_name() -> str:
    """Standard output's name in a message: its file where it is one."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        target = os.readlink(f"/proc/self/fd/{sys.stdout.fileno()}")
        if target.startswith("/"):
            return f"{target} (standard output)"
    return "standard output"


def written_in_place(path: str | os.PathLike[str]) -> bool:
    """Whether `written(path)` writes into what is there rather than replacing
    it: `-`, anything not a regular file, a path through a descriptor's link."""
    name = os.fspath(path)
    if name == STDOUT:
        return True
    for hop in _link_chain(name):
        if hop.startswith(_DESCRIPTOR_DIRECTORIES) or hop in (
            "/dev/stdout",
            "/dev/stderr",
        ):
            return True
    try:
        found = os.stat(name)
    except OSError:
        return False  # nothing there: made atomically (or the error said then)
    return not stat.S_ISREG(found.st_mode)


def _link_chain(path: str) -> Iterator[str]:
    """`path` made absolute, then each path its last component's links lead to."""
    current = os.path.abspath(path)
    for _ in range(_MAX_LINKS):
        yield current
        try:
            target = os.readlink(current)
        except OSError:
            return
        current = os.path.normpath(os.path.join(os.path.dirname(current), target))


@contextlib.contextmanager
def written(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """A binary file whose bytes end up at `path` when the block ends without error:
    atomically where `path` is a regular file or nothing, else in place (`-` flushed,
    never closed). Raises `OutputError` where it cannot be written, nothing replaced
    and no temporary file left; `BrokenPipeError` where a reader left."""
    name = os.fspath(path)
    if name.endswith(_SEPARATORS):
        # Without the slash a new file would take the folder's name.
        raise OutputError(
            name, "a path ending in a separator names a folder, not the file written"
        )
    if name == STDOUT:
        with _stdout() as stream:
            yield stream
    elif written_in_place(name):
        with _in_place(name) as stream:
            yield stream
    else:
        with _atomic(name) as stream:
            yield stream


@contextlib.contextmanager
def _stdout() -> Iterator[IO[bytes]]:
    """Standard output's bytes, its text stream flushed first to keep the order."""
    sys.stdout.flush()
    stream = cast(IO[bytes], getattr(sys.stdout, "buffer", sys.stdout))
    try:
        yield stream
        stream.flush()
    except OSError as error:
        if isinstance(error, (BrokenPipeError, OutputError)):
            raise
        raise output_error(stdout_name(), error) from None


@contextlib.contextmanager
def _in_place(path: str) -> Iterator[IO[bytes]]:
    try:
        file = open(path, "wb")  # noqa: SIM115 - closed below, errors told apart
    except OSError as error:
        raise output_error(path, error) from None
    try:
        with file:
            yield file
    except OSError as error:
        if isinstance(error, (BrokenPipeError, OutputError)):
            raise
        if error.filename is not None:
            raise  # another file's error, raised inside the block
        raise output_error(path, error) from None


@contextlib.contextmanager
def _atomic(path: str) -> Iterator[IO[bytes]]:
    target = os.path.realpath(path)
    directory, base = os.path.split(target)
    try:
        replaced: os.stat_result | None = os.stat(target)
    except OSError:
        replaced = None
    while True:
        partial = _hidden_name(directory, base)
        try:
            # Made by this process alone (O_EXCL), with the umask applied by
            # the kernel: reading it would change it for a moment.
            handle = os.open(partial, _CREATE, 0o666)
            break
        except FileExistsError:
            continue
        except OSError as error:
            raise output_error(path, error) from None
        except BaseException:  # a signal raised as the file was made
            with contextlib.suppress(OSError):
                os.unlink(partial)
            raise
    try:
        with open(handle, "wb") as file:
            yield file
            file.flush()
            # The bytes reach the disk before the name does: after a crash
            # the file is the old one or the whole new one.
            os.fsync(file.fileno())
            if replaced is not None:
                _keep_owner_and_mode(file.fileno(), replaced)
        os.replace(partial, target)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        if isinstance(error, OSError) and _is_ours(error, partial):
            raise output_error(path, error) from None
        raise


def _hidden_name(directory: str, base: str) -> str:
    """A new hidden name beside `base`, for the file written before it takes
    `base`'s place."""
    try:
        longest = os.pathconf(directory, "PC_NAME_MAX")
    except (OSError, ValueError):
        longest = 255
    # A name as long as the file system takes leaves no room for the suffix.
    base = os.fsencode(base)[: max(longest - _ADDED, 0)].decode("utf-8", "ignore")
    return os.path.join(directory, f".{base}.{secrets.token_hex(4)}.partial")


def _keep_owner_and_mode(descriptor: int, replaced: os.stat_result) -> None:
    """Replacing a file must not widen or narrow who reads it."""
    with contextlib.suppress(OSError):
        os.fchown(descriptor, replaced.st_uid, replaced.st_gid)
    os.fchmod(descriptor, stat.S_IMODE(replaced.st_mode))


def _is_ours(error: OSError, partial: str) -> bool:
    """Whether `error` comes from the temporary file, not another file the block opened."""
    if isinstance(error, BrokenPipeError):
        return False
    return error.filename in (None, partial)
