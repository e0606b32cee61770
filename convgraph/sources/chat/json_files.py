"""Find a chat export's JSON files (a zip, a folder, one file) and stream their
top-level values one at a time, so memory holds one conversation."""

from __future__ import annotations

import codecs
import contextlib
import gc
import io
import json
import os
import re
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from types import SimpleNamespace
from typing import IO, Any

from convgraph.errors import DatabaseError
from convgraph.sources.llm.files import SQLITE_HEADER, ZIP_HEADER

#: How deeply a value may nest (the top-level array is one level).
MAX_DEPTH = 100

#: The longest one value may be in the file's bytes (an inline image fits),
#: checked a `READ_SIZE` at a time, so exact to within one read.
MAX_VALUE_BYTES = 64 * 2**20

#: What ijson reads at a time: yajl re-lexes a token a read cut, so a long
#: value costs its length squared over this.
READ_SIZE = 2 * 2**20

#: What `array_values` reads at a time (more for a longer element): small, as
#: one character past U+FFFF makes the decoded text 4 bytes a character.
WINDOW = 2**18

UTF8_BOM = b"\xef\xbb\xbf"

CONVERSATION_FILE = re.compile(r"conversations(-\d+)?\.json", re.IGNORECASE)

#: What comes before an array's element: its start or a comma, in whitespace.
SEPARATOR = re.compile(r"[ \t\n\r]*([,\[]?)[ \t\n\r]*")

#: A UTF-16 surrogate escaped, as a pair (12 characters) or alone (6),
#: which ijson reads as `?` or refuses.
SURROGATES = re.compile(
    r"\\u[dD](?:[89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F]|[89a-fA-F])[0-9a-fA-F]{2}"
)


class ValueTooLarge(DatabaseError):
    """A JSON value of an export past `MAX_DEPTH` or `MAX_VALUE_BYTES`."""


@dataclass(frozen=True)
class ExportFile:
    """One JSON file of an export: a file on disk or a member of a zip."""

    name: str
    open: Callable[[], IO[bytes]]
    #: A member of a zip: a stream that breaks is the zip's damage.
    in_zip: bool = False


def conversation_names(names: list[str]) -> list[str]:
    """The split conversation files among `names` in order, else `conversations.json`."""
    found = [name for name in names if CONVERSATION_FILE.fullmatch(Path(name).name)]
    split = sorted(name for name in found if "-" in Path(name).name)
    return split or sorted(found)


def _member_opener(path: Path, name: str) -> Callable[[], IO[bytes]]:
    def open_member() -> IO[bytes]:
        archive = zipfile.ZipFile(path)
        try:
            member = archive.open(name)
        except Exception:
            archive.close()
            raise
        return _ClosingBoth(member, archive)

    return open_member


class _ClosingBoth(io.BufferedReader):
    """A zip member's stream that also closes its archive."""

    def __init__(self, member: IO[bytes], archive: zipfile.ZipFile):
        super().__init__(member)  # type: ignore[arg-type]
        self._archive = archive

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._archive.close()


def _zip_names(path: Path) -> list[str]:
    try:
        with zipfile.ZipFile(path) as archive:
            return [info.filename for info in archive.infolist() if not info.is_dir()]
    except (zipfile.BadZipFile, OSError) as error:
        raise DatabaseError(
            f"{path} is a zip file that is truncated or damaged ({error})"
        ) from None


def zip_files(path: Path) -> list[ExportFile]:
    """The conversation files of a zip export; DatabaseError where there are none."""
    wanted = conversation_names(_zip_names(path))
    if not wanted:
        raise DatabaseError(
            f"{path} holds no conversations.json (not a ChatGPT or Claude.ai export)"
        )
    return [
        ExportFile(f"{path}:{name}", _member_opener(path, name), in_zip=True)
        for name in wanted
    ]


def file_on_disk(path: Path) -> ExportFile:
    """A JSON file of the export, on disk."""
    return ExportFile(str(path), lambda: open(path, "rb"))  # noqa: SIM115


def folder_files(path: Path) -> list[ExportFile]:
    """The conversation files of an export unpacked into a folder."""
    names = [entry.name for entry in path.iterdir() if entry.is_file()]
    return [file_on_disk(path / name) for name in conversation_names(names)]


def side_file(path: Path, name: str) -> ExportFile | None:
    """The file `name` the app puts beside the conversations, or None."""
    if path.is_dir():
        candidate = path / name
        return file_on_disk(candidate) if candidate.is_file() else None
    if zipfile.is_zipfile(path):
        for member in _zip_names(path):
            if Path(member).name == name:
                return ExportFile(
                    f"{path}:{member}", _member_opener(path, member), in_zip=True
                )
        return None
    candidate = path.with_name(name)
    return file_on_disk(candidate) if candidate.is_file() else None


def skip_to_json(stream: IO[bytes]) -> bytes:
    """Skip a byte-order mark and whitespace; the first byte of JSON, left unread."""
    peek = stream.peek(64)  # type: ignore[attr-defined]
    if peek.startswith(UTF8_BOM):
        stream.read(len(UTF8_BOM))
        peek = stream.peek(64)  # type: ignore[attr-defined]
    while peek and not peek.lstrip():  # long leading whitespace, a buffer at a time
        stream.read(len(peek))
        peek = stream.peek(64)  # type: ignore[attr-defined]
    return bytes(peek.lstrip()[:1])


def stream_values(stream: IO[bytes]) -> Iterator[Any]:
    """The top-level values of one JSON file, built one at a time (each element of
    a top-level array, or the top-level object). Raises DatabaseError for other
    JSON or past the bounds (`ValueTooLarge`); ijson's errors for broken JSON."""
    from decimal import Decimal

    import ijson

    first = skip_to_json(stream)
    if first not in (b"[", b"{"):
        raise DatabaseError("it is not JSON")
    # `taken` counts the events built so far; a read that finds it where
    # the last read left it means yajl is still inside one value (or one
    # run of whitespace), as long as the bytes read since.
    taken = 0
    seen = -1
    gap = 0

    def read(size: int = -1) -> bytes:
        nonlocal seen, gap
        data = stream.read(size)
        if taken == seen:
            gap += len(data)
            if gap > MAX_VALUE_BYTES:
                raise ValueTooLarge(
                    f"a JSON value is longer than {MAX_VALUE_BYTES // 2**20} MiB"
                    " (convgraph reads none longer)"
                )
        else:
            seen, gap = taken, len(data)
        return data

    # Numbers as ints and Decimals, made floats below: yajl's own floats
    # fail the whole file on an integer past 64 bits, which is a value past
    # its range (read as missing by the readers), not a broken file.
    events = ijson.basic_parse(SimpleNamespace(read=read), buf_size=READ_SIZE)
    # The values are built here from ijson's unprefixed events: ijson's own
    # builder makes a prefix string per event. `current` is the innermost
    # open container, `outer` the ones around it with their keys.
    outer: list[tuple[Any, bool, Any]] = []
    current: Any = None
    is_map = False
    key: Any = None
    depth = 0
    # Elements of a top-level array are handed over, not added to it.
    handed = 2 if first == b"[" else 1
    for event, value in events:
        taken += 1
        if event == "map_key":
            key = value
            continue
        if event == "start_map" or event == "start_array":
            if depth >= MAX_DEPTH:
                raise ValueTooLarge(
                    f"a JSON value nests deeper than {MAX_DEPTH} levels"
                    " (convgraph reads none deeper)"
                )
            container: Any = {} if event == "start_map" else []
            if depth >= handed:
                if is_map:
                    current[key] = container
                else:
                    current.append(container)
            outer.append((current, is_map, key))
            current, is_map, key = container, event == "start_map", None
            depth += 1
            continue
        if event == "end_map" or event == "end_array":
            value = current
            current, is_map, key = outer.pop()
            depth -= 1
            if depth == handed - 1:
                yield value
            continue
        # A string, number, boolean or null.
        if type(value) is Decimal:
            value = float(value)  # inf past a float's range
        if depth >= handed:
            if is_map:
                current[key] = value
            else:
                current.append(value)
        elif depth == handed - 1:
            yield value


class _Unusual(Exception):
    """What `array_values` leaves to `stream_values` to read or refuse."""


def _refuse(constant: str) -> Any:
    raise _Unusual


def _within(value: Any, depth: int) -> bool:
    """Whether `value` nests at most `depth` levels (itself one). A level's containers
    are gc's tracked referents of the one above, found in C: a dict is untracked
    only while it holds no container, a leaf, counted below the last level."""
    if value.__class__ is not dict and value.__class__ is not list:
        return True
    level = [value]
    while depth > 0:
        depth -= 1
        below = gc.get_referents(*level)
        level = [*filter(gc.is_tracked, below)]
        if not level:
            return depth > 0 or not any(inner.__class__ is dict for inner in below)
    return False


def array_values(stream: IO[bytes]) -> Iterator[Any]:
    """`stream_values` of a top-level array, each element parsed whole by
    json's C scanner from a window of the decoded file (ijson builds a value
    an event at a time); raises `_Unusual` for anything else, which
    `stream_values` reads alike or refuses with its word."""
    if skip_to_json(stream) != b"[":
        raise _Unusual
    decode = codecs.getincrementaldecoder("utf-8")().decode
    scan = json.JSONDecoder(parse_constant=_refuse).raw_decode
    # `expect`, the last element's length: a shorter rest of the window is
    # read on before scanning, as a scan the window cuts is work thrown away.
    text, at, first, ended, expect = "", 0, True, False, 0
    while True:
        gap = SEPARATOR.match(text, at)
        assert gap is not None  # it matches the empty string
        start, separator, value, stop = gap.end(), gap.group(1), None, -1
        if start < len(text) and (ended or len(text) - start > expect):
            if text[start] == "]" and separator == ("[" if first else ""):
                chunks = iter(lambda: stream.read(READ_SIZE), b"")
                if text[start + 1 :].strip(" \t\n\r") or any(
                    chunk.strip(b" \t\n\r") for chunk in chunks
                ):
                    raise _Unusual  # what follows the array: stream_values says
                decode(b"", True)
                return
            with contextlib.suppress(ValueError, RecursionError):
                value, stop = scan(text, start)
        if stop == -1 or stop == len(text):  # cut by the window, or broken
            if ended or len(text) - at > MAX_VALUE_BYTES:
                raise _Unusual
            chunk = stream.read(max(WINDOW, len(text) - at))
            text, at, ended = text[at:] + decode(chunk, not chunk), 0, not chunk
            continue
        # An element past the bound may hold a value past it: ijson tells.
        if stop - start > MAX_VALUE_BYTES or separator != ("[" if first else ","):
            raise _Unusual
        if not _within(value, MAX_DEPTH - 1):
            raise _Unusual
        if any(len(m[0]) < 12 for m in SURROGATES.finditer(text, start, stop)):
            raise _Unusual
        yield value
        at, first, expect = stop, False, stop - start


def read_errors() -> tuple[type[BaseException], ...]:
    """What reading an export's JSON may raise for a damaged file."""
    import ijson

    return (
        ijson.JSONError,
        zipfile.BadZipFile,
        zlib.error,
        EOFError,
        OSError,
        UnicodeDecodeError,
        ValueError,
    )


def file_values(file: ExportFile) -> Iterator[Any]:
    """`stream_values` of one file, every failure one `DatabaseError` naming it."""
    handed = 0
    try:
        try:
            with file.open() as stream:
                for value in array_values(stream):
                    yield value
                    handed += 1
        except (_Unusual, UnicodeDecodeError):
            with file.open() as stream:
                yield from islice(stream_values(stream), handed, None)
    except DatabaseError as error:
        raise DatabaseError(f"cannot read {file.name}: {error}") from None
    except Exception as error:
        # ijson is imported only where it reads or a read fails.
        if not isinstance(error, read_errors()):
            raise
        detail = str(error).splitlines()[0] if str(error) else type(error).__name__
        if file.in_zip and isinstance(
            error, zipfile.BadZipFile | zlib.error | EOFError
        ):
            what = "the zip file is truncated or damaged"
        else:
            what = "the JSON is cut short or malformed"
        raise DatabaseError(f"cannot read {file.name}: {what} ({detail})") from None


def path_kind(path: str | os.PathLike[str]) -> str | None:
    """What `path` holds by its first bytes: "folder", "zip", "json", "sqlite" or None."""
    path = Path(path)
    if path.is_dir():
        return "folder"
    if not path.is_file():
        return None
    with open(path, "rb") as stream:
        head = stream.read(4096)
    if head.startswith(SQLITE_HEADER):
        return "sqlite"
    if head.startswith(ZIP_HEADER) or zipfile.is_zipfile(path):  # a damaged one too
        return "zip"
    if head.removeprefix(UTF8_BOM).lstrip()[:1] in (b"[", b"{"):
        return "json"
    return None
