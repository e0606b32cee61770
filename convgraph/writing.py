"""The one way out: every file convgraph writes goes through `written`.

A path that names a regular file, or nothing yet, is written atomically: the
text goes to a hidden temporary file beside it (`.NAME.XXXXXXXX.partial`),
which replaces the file in one rename once it is complete, and which is
removed on any other way out (an error, Ctrl-C's `KeyboardInterrupt`, a
`SystemExit`). A reader sees the old file or the new one, never half of
either. Anything else is written in place and never replaced: a named pipe
(a reader is waiting on it), a character device (`/dev/null`, which even
root must not turn into a regular file), a terminal, a link to an open
descriptor (`/dev/stdout`, `/proc/self/fd/N`: the file the shell opened
keeps receiving), and `-`, standard output itself.

An `OSError` of the writing (a full disk, a folder that does not exist or
may not be written) is an `OutputError`, one line naming the path; a reader
that went away (`BrokenPipeError`) is left as it is, for the caller to end
quietly, as a pipe into `head` should. The library installs no signal
handler (it leaves the process alone): the command line turns SIGTERM into
an exception for the length of a command, so that the temporary file goes
on SIGTERM too (`convgraph.cli.options.ConvgraphCommand`).
"""

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

#: Where the links that name an open descriptor live: a path through them is
#: the descriptor's own file, written in place.
_DESCRIPTOR_DIRECTORIES = ("/proc/", "/dev/fd/")
#: How many symbolic links a path may go through, as the kernel allows.
_MAX_LINKS = 40


class OutputError(ConvgraphError, OSError):
    """A file (or standard output) could not be written: `path` and the
    system's reason, one line."""

    def __init__(self, path: str, reason: str):
        super().__init__(path, reason)
        self.path = path
        self.reason = reason

    def __str__(self) -> str:
        return f"cannot write {self.path}: {self.reason}"


def output_error(path: str, error: OSError) -> OutputError:
    """The `OutputError` of `error`, raised while writing `path`."""
    reason = error.strerror or str(error) or type(error).__name__
    return OutputError(path, reason)


def stdout_name() -> str:
    """How standard output is named in a message: the file it is, where it
    is one (`/dev/full`, `out.txt`), else "standard output"."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        target = os.readlink(f"/proc/self/fd/{sys.stdout.fileno()}")
        if target.startswith("/"):
            return f"{target} (standard output)"
    return "standard output"


def written_in_place(path: str | os.PathLike[str]) -> bool:
    """Whether `written(path)` writes into the file that is there rather
    than replacing it: standard output, anything that is not a regular file
    (a named pipe, a device, a socket), and any path through a link to an
    open descriptor (`/dev/stdout` -> `/proc/self/fd/1`).

    Examples
    --------
    >>> written_in_place("-"), written_in_place("/dev/null")
    (True, True)
    >>> written_in_place("/a/file/that/is/not/there.json")
    False
    """
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
    """`path` made absolute, then each path its symbolic links lead to, in
    turn (the link of the last component only: a folder's link leads to
    the same folder's entry)."""
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
    """A binary file whose bytes end up at `path` when the block ends
    without an error.

    Parameters
    ----------
    path
        `-` for standard output (flushed, never closed); a named pipe, a
        device or a link to a descriptor is opened and written in place
        (`written_in_place`); a regular file, or a path where nothing is
        yet, is written atomically: a temporary file beside it (beside the
        link's target, for a symbolic link, which stays a link) takes the
        bytes and replaces it at the end, with the replaced file's
        permissions, or those a new file gets under the umask.

    Raises
    ------
    OutputError
        The path cannot be opened or written (no such folder, a folder, no
        room, no permission); nothing was replaced, and no temporary file
        is left.
    BrokenPipeError
        The reader of a pipe went away: the caller ends quietly.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> with written(folder / "a.txt") as file:
    ...     _ = file.write(b"whole")
    >>> (folder / "a.txt").read_text(), sorted(p.name for p in folder.iterdir())
    ('whole', ['a.txt'])
    """
    name = os.fspath(path)
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
    """Standard output's bytes (its text stream flushed first, so that the
    two keep their order), flushed at the end."""
    sys.stdout.flush()
    stream = cast(IO[bytes], getattr(sys.stdout, "buffer", sys.stdout))
    try:
        yield stream
        stream.flush()
    except BrokenPipeError:
        raise
    except OutputError:
        raise
    except OSError as error:
        raise output_error(stdout_name(), error) from None


@contextlib.contextmanager
def _in_place(path: str) -> Iterator[IO[bytes]]:
    """The file at `path` opened for writing as it is (a pipe, a device):
    never replaced, never removed."""
    try:
        file = open(path, "wb")  # noqa: SIM115 - closed below, errors told apart
    except OSError as error:
        raise output_error(path, error) from None
    try:
        with file:
            yield file
    except BrokenPipeError:
        raise
    except OutputError:
        raise
    except OSError as error:
        if error.filename is not None:
            raise  # another file's error, raised inside the block
        raise output_error(path, error) from None


@contextlib.contextmanager
def _atomic(path: str) -> Iterator[IO[bytes]]:
    """A temporary file beside `path`'s final target that replaces it at
    the end, and is removed on any other way out."""
    target = os.path.realpath(path)
    directory, base = os.path.split(target)
    try:
        replaced: os.stat_result | None = os.stat(target)
    except OSError:
        replaced = None
    partial, handle = _temporary(path, directory, base)
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


def _temporary(path: str, directory: str, base: str) -> tuple[str, int]:
    """A new, hidden file beside `base` in `directory`, and its descriptor:
    made by this process alone (O_EXCL), with the mode a new file gets under
    the umask (the kernel applies it: the umask is never read, which would
    change it for every thread for a moment)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        partial = os.path.join(directory, f".{base}.{secrets.token_hex(4)}.partial")
        try:
            return partial, os.open(partial, flags, 0o666)
        except FileExistsError:
            continue
        except OSError as error:
            raise output_error(path, error) from None


def _keep_owner_and_mode(descriptor: int, replaced: os.stat_result) -> None:
    """Give the new file the permissions of the one it replaces (and, where
    this process may, its owner): replacing must not widen or narrow who
    reads it."""
    with contextlib.suppress(OSError):
        os.fchown(descriptor, replaced.st_uid, replaced.st_gid)
    os.fchmod(descriptor, stat.S_IMODE(replaced.st_mode))


def _is_ours(error: OSError, partial: str) -> bool:
    """Whether `error` comes from writing the temporary file or moving it,
    not from another file the block opened (whose error says its name)."""
    if isinstance(error, BrokenPipeError):
        return False
    return error.filename in (None, partial)
