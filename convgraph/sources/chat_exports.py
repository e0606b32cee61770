"""Read the data exports of ChatGPT, Claude.ai and Open WebUI as conversation trees.

Each app keeps a conversation as parent-linked messages. This module finds the
export's JSON (a downloaded `.zip`, its `conversations.json`, the split
`conversations-000.json`, ... files in a folder or zip, or Open WebUI's chat
export), tells the format by content, and streams it one conversation at a
time with ijson. The per-format modules (`chatgpt`, `claude`, `openwebui`)
only turn one conversation's JSON into `Message`s, and `chat_nodes` turns
those into the node contract's records (docs/design.md#chat-exports).
`ChatExport` answers the same questions as `LogDatabase`, so every command
reads an export as it reads llm's `logs.db`.
"""

from __future__ import annotations

import io
import os
import re
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from convgraph.contract import (
    CATEGORY_COLUMNS,
    CONTENT_ATTRIBUTES,
    INTEGER_COLUMNS,
    SOURCE_COLUMNS,
)
from convgraph.errors import DatabaseError, UnknownConversation, UnknownNode
from convgraph.sources import chatgpt, claude, openwebui
from convgraph.sources.chat_messages import Conversation, Message
from convgraph.sources.chat_nodes import conversation_records
from convgraph.sources.files import SQLITE_HEADER
from convgraph.sources.source import Source, TreeRecords, sort_log_order

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ChatExport",
    "Conversation",
    "Message",
    "conversation_records",
    "open_source",
]

UTF8_BOM = b"\xef\xbb\xbf"

#: `conversations.json`, or one of the split `conversations-000.json` files.
CONVERSATION_FILE = re.compile(r"conversations(-\d+)?\.json", re.IGNORECASE)

#: The columns of `read_forest`: the llm readers', then `active`.
FOREST_COLUMNS = (*SOURCE_COLUMNS, "active")


# -- finding and streaming the export ---------------------------------------


@dataclass(frozen=True)
class _Part:
    """One JSON file of an export: a file on disk or a member of a zip."""

    name: str
    open: Callable[[], IO[bytes]]


def _formats() -> dict[str, Any]:
    return {module.SOURCE: module for module in (chatgpt, claude, openwebui)}


def _conversation_parts(names: list[str]) -> list[str]:
    """The conversation files among `names`: the split files where there are
    some (in their numbered order), else `conversations.json`."""
    found = [name for name in names if CONVERSATION_FILE.fullmatch(Path(name).name)]
    split = sorted(name for name in found if "-" in Path(name).name)
    return split or sorted(found)


def _zip_parts(path: Path) -> list[_Part]:
    try:
        with zipfile.ZipFile(path) as archive:
            names = [info.filename for info in archive.infolist() if not info.is_dir()]
    except (zipfile.BadZipFile, OSError) as error:
        raise DatabaseError(f"{path} is not a readable zip file ({error})") from None
    wanted = _conversation_parts(names)
    if not wanted:
        raise DatabaseError(
            f"{path} holds no conversations.json (not a ChatGPT or Claude.ai export)"
        )

    def opener(name: str) -> Callable[[], IO[bytes]]:
        def open_member() -> IO[bytes]:
            archive = zipfile.ZipFile(path)
            try:
                member = archive.open(name)
            except Exception:
                archive.close()
                raise
            return _ClosingBoth(member, archive)

        return open_member

    return [_Part(f"{path}:{name}", opener(name)) for name in wanted]


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


def _file_part(path: Path) -> _Part:
    return _Part(str(path), lambda: open(path, "rb"))  # noqa: SIM115


def _skip_to_json(stream: IO[bytes]) -> bytes:
    """Drop a byte-order mark and return the first byte of the JSON text
    (b"" when there is none), leaving it unread."""
    peek = stream.peek(64)  # type: ignore[attr-defined]
    if peek.startswith(UTF8_BOM):
        stream.read(len(UTF8_BOM))
        peek = stream.peek(64)  # type: ignore[attr-defined]
    stripped = peek.lstrip()
    if not stripped and peek:
        # Long leading whitespace: consume it a buffer at a time.
        while peek and not peek.lstrip():
            stream.read(len(peek))
            peek = stream.peek(64)  # type: ignore[attr-defined]
        stripped = peek.lstrip()
    return stripped[:1]


def _stream_items(stream: IO[bytes]) -> Iterator[Any]:
    """The conversations of one JSON file: the elements of a top-level array,
    or a top-level object as the one conversation (a single exported chat)."""
    import ijson

    first = _skip_to_json(stream)
    if first == b"[":
        yield from ijson.items(stream, "item", use_float=True)
    elif first == b"{":
        yield from ijson.items(stream, "", use_float=True)
    else:
        raise DatabaseError("it is not JSON")


def _read_errors() -> tuple[type[BaseException], ...]:
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


def open_source(path: str | os.PathLike[str]) -> ChatExport | None:
    """A chat export at `path`, or None where `path` is not one (missing, an
    SQLite file, or a file that is neither JSON nor a zip), so that the
    caller can try llm's reader.

    Raises
    ------
    DatabaseError
        A zip or folder without a conversations file, JSON that is no
        supported export, or JSON that ends early.
    """
    path = Path(path)
    if path.is_dir():
        names = [entry.name for entry in path.iterdir() if entry.is_file()]
        wanted = _conversation_parts(names)
        if not wanted:
            return None
        parts = [_file_part(path / name) for name in wanted]
    elif path.is_file():
        with open(path, "rb") as stream:
            head = stream.read(4096)
        if head.startswith(SQLITE_HEADER):
            return None
        if zipfile.is_zipfile(path):
            parts = _zip_parts(path)
        else:
            if head.removeprefix(UTF8_BOM).lstrip()[:1] not in (b"[", b"{"):
                return None
            parts = [_file_part(path)]
    else:
        return None
    return ChatExport(path, parts)


class ChatExport(Source):
    """A ChatGPT, Claude.ai or Open WebUI export, read like llm's `logs.db`.

    Nothing is read at once but the first conversation (to tell the format);
    every question streams the export's JSON again, keeping one conversation
    at a time, and the last conversation found is kept for the read that
    follows it. Reading never writes.
    """

    def __init__(self, path: Path, parts: list[_Part]):
        # The llm readers stay unset: no SQL is behind an export.
        self.path = path
        self.conn = None  # type: ignore[assignment]
        self.legacy = None
        self.store = None
        self.record_problems = []  # an export's messages are always nodes
        self._parts = parts
        self._tree_ids: list[str] | None = None
        self._found: TreeRecords | None = None
        self.format = self._detect()
        self._module = _formats()[self.format] if self.format else None

    def __repr__(self) -> str:
        return f"<ChatExport {self.format or 'empty'} {self.path}>"

    def close(self) -> None:
        self._found = None

    @property
    def generations(self) -> list[str]:
        """The export's format (`chatgpt`, `claude`, `openwebui`), as a list
        like `LogDatabase.generations`."""
        return [self.format] if self.format else []

    # -- streaming ------------------------------------------------------

    def _raw_items(self) -> Iterator[Any]:
        """Every conversation's JSON, one at a time, across the split files."""
        errors = _read_errors()
        for part in self._parts:
            try:
                with part.open() as stream:
                    yield from _stream_items(stream)
            except DatabaseError as error:
                raise DatabaseError(f"cannot read {part.name}: {error}") from None
            except errors as error:
                raise DatabaseError(
                    f"cannot read {part.name}: the JSON is cut short or malformed"
                    f" ({str(error).splitlines()[0] if str(error) else type(error).__name__})"
                ) from None

    def _detect(self) -> str | None:
        """The format of the first conversation; None for an empty export."""
        for item in self._raw_items():
            for name, module in _formats().items():
                if module.is_conversation(item):
                    return name
            raise DatabaseError(
                f"{self.path} is JSON but not a ChatGPT, Claude.ai or Open WebUI export"
            )
        return None

    def _items(self) -> Iterator[tuple[int, str, dict[str, Any]]]:
        """Every conversation's position, id and JSON, once per id (a
        conversation repeated across split files is read from its first
        copy); items that are not conversations of the format are skipped."""
        if self._module is None:
            return
        seen: set[str] = set()
        for position, item in enumerate(self._raw_items()):
            if not self._module.is_conversation(item):
                continue
            conversation_id = self._module.conversation_id(item, position)
            if conversation_id in seen:
                continue
            seen.add(conversation_id)
            yield position, conversation_id, item

    def _parse(self, item: Any, position: int) -> Conversation:
        """One item of `_items`, parsed by the format's module (which is
        there whenever `_items` gives an item)."""
        assert self._module is not None
        return self._module.parse_conversation(item, position)

    def conversations(self) -> Iterator[Conversation]:
        """Every conversation, parsed, one at a time."""
        for position, _, item in self._items():
            yield self._parse(item, position)

    def _records(self, conversation: Conversation) -> TreeRecords:
        records = conversation_records(conversation, self.format or "")
        return TreeRecords(conversation.id, conversation.name, records)

    # -- naming trees ---------------------------------------------------

    def tree_ids(self) -> list[str]:
        """Every conversation's id, in the export's order."""
        if self._tree_ids is None:
            self._tree_ids = [
                conversation.id
                for conversation in self.conversations()
                if conversation_records(conversation, self.format or "")
            ]
        return list(self._tree_ids)

    def _find(self, conversation_id: str) -> TreeRecords | None:
        """The records of one conversation, only that one parsed."""
        if self._found is not None and self._found.tree_id == conversation_id:
            return self._found
        for position, found_id, item in self._items():
            if found_id == conversation_id:
                self._found = self._records(self._parse(item, position))
                return self._found
        return None

    def tree_id_of_conversation(self, conversation_id: str) -> str:
        """A conversation id names its own tree (the export's id)."""
        if self._find(conversation_id) is None:
            raise UnknownConversation(conversation_id)
        return conversation_id

    def tree_id_of_node(self, node_id: str) -> str:
        """The conversation whose messages end a node at `node_id`."""
        if self._found is not None and any(
            record["id"] == node_id for record in self._found.records
        ):
            return self._found.tree_id
        module = self._module
        if module is None:  # an empty export
            raise UnknownNode(node_id)
        for position, _, item in self._items():
            if not module.holds_message(item, position, node_id):
                continue
            tree = self._records(self._parse(item, position))
            if any(record["id"] == node_id for record in tree.records):
                self._found = tree
                return tree.tree_id
        raise UnknownNode(node_id)

    def fork_problems(self) -> list[Any]:
        """None: exports have no forks between threads (their broken links
        are the records' own, checked like any other)."""
        return []

    def path_by_links(self, node_id: str) -> list[str] | None:
        """None: an export has no index to walk; the tree answers."""
        return None

    # -- reading --------------------------------------------------------

    def read_tree(self, tree_id: str) -> TreeRecords:
        """One conversation's records (none for an unknown id)."""
        return self._find(tree_id) or TreeRecords(tree_id, None, [])

    def read_forest(self, text: bool = True) -> tuple[pd.DataFrame, dict[str, Any]]:
        """Every node as one table, read conversation by conversation.

        The same columns and types as `LogDatabase.read_forest`, plus the
        boolean `active`. `text=False` leaves the texts out (as None).
        """
        columns: dict[str, list[Any]] = {name: [] for name in FOREST_COLUMNS}
        names: dict[str, Any] = {}
        for conversation in self.conversations():
            tree = self._records(conversation)
            if not tree.records:
                continue
            names[tree.tree_id] = tree.name
            for record in tree.records:
                for name, values in columns.items():
                    values.append(
                        None
                        if not text and name in CONTENT_ATTRIBUTES
                        else record[name]
                    )
        return _forest_frame(columns), names


def _forest_frame(columns: dict[str, list[Any]]) -> pd.DataFrame:
    """The forest table with the llm readers' types, in log order, each node
    id once (an id seen in an earlier conversation is dropped there)."""
    import numpy as np
    import pandas as pd

    from convgraph.sources.tables import categorical, conform_nodes, object_column

    frame = {}
    for name, values in columns.items():
        if name in CATEGORY_COLUMNS:
            frame[name] = pd.Series(categorical(values))
        elif name in INTEGER_COLUMNS:
            frame[name] = pd.Series(pd.array(values, dtype="Int64"))
        elif name == "active":
            frame[name] = pd.Series(np.array(values, dtype=bool))
        else:
            # Not np.array: lists of parts of one length would make a matrix.
            frame[name] = pd.Series(object_column(values), dtype=object)
    nodes = pd.DataFrame(frame)
    duplicated = nodes["id"].duplicated()
    if duplicated.any():
        nodes = nodes[~duplicated.to_numpy()]
    return conform_nodes(sort_log_order(nodes))
