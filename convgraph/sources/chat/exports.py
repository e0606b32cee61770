"""Read the data exports of ChatGPT, Claude.ai and Open WebUI as conversation
trees (docs/design.md#chat-exports): `ChatExport` answers as `LogDatabase`
does, streaming the export one conversation at a time."""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convgraph.contract import (
    CATEGORY_COLUMNS,
    CONTENT_ATTRIBUTES,
    INTEGER_COLUMNS,
    SOURCE_COLUMNS,
)
from convgraph.errors import DatabaseError, UnknownConversation, UnknownNode
from convgraph.links.integrity import EMPTY_CONVERSATION, SHARED_IDS, Problem
from convgraph.sources.chat import chatgpt, claude, openwebui
from convgraph.sources.chat.json_files import (
    ExportFile,
    file_on_disk,
    file_values,
    folder_files,
    path_kind,
    side_file,
    zip_files,
)
from convgraph.sources.chat.messages import Conversation, Message
from convgraph.sources.chat.nodes import conversation_records
from convgraph.sources.source import (
    CONVERSATION,
    LISTED,
    MIN_PREFIX,
    NODE,
    ForestRead,
    IdMatch,
    ProgressCallback,
    Source,
    TreeRecords,
    sort_log_order,
)

if TYPE_CHECKING:
    import pandas as pd

    from convgraph.sources.notes import NodeNote

__all__ = [
    "ChatExport",
    "Conversation",
    "Message",
    "conversation_records",
    "detect",
    "shared_ids",
]

#: The columns of `read_forest`: the llm readers', then `active`.
FOREST_COLUMNS = (*SOURCE_COLUMNS, "active")

#: ChatGPT's file of the person's thumbs up and down, beside the
#: conversations.
FEEDBACK_FILE = "message_feedback.json"


def _formats() -> dict[str, Any]:
    return {module.SOURCE: module for module in (chatgpt, claude, openwebui)}


def detect(path: str | os.PathLike[str]) -> ChatExport | None:
    """A chat export at `path`, or None where it is none (for llm's reader to try).
    Raises DatabaseError for a damaged zip, one without conversations, or JSON
    that is no supported export or ends early."""
    path = Path(path)
    kind = path_kind(path)
    if kind == "folder":
        files = folder_files(path)
        if not files:
            return None
    elif kind == "zip":
        files = zip_files(path)
    elif kind == "json":
        files = [file_on_disk(path)]
    else:
        return None
    return ChatExport(path, files)


def shared_ids(conversation_id: str, ids: list[str], taken: set[str]) -> dict[str, str]:
    """The ids of a conversation that earlier ones hold (`taken`), each with the
    id it is read by, `CONVERSATION_ID/MESSAGE_ID` (numbered where taken);
    `taken` gains this conversation's ids."""
    own = set(ids)
    renamed: dict[str, str] = {}
    for message_id in ids:
        if message_id not in taken:
            continue
        candidate = f"{conversation_id}/{message_id}"
        number = 2
        while candidate in taken or candidate in own:
            candidate = f"{conversation_id}/{message_id}+{number}"
            number += 1
        renamed[message_id] = candidate
        taken.add(candidate)
    taken.update(own)
    return renamed


@dataclass
class _Item:
    """One conversation of the export, as `_items` hands it over."""

    position: int
    id: str
    raw: dict[str, Any]
    #: Its message ids (the export's, made distinct).
    ids: list[str]
    #: The ids an earlier conversation holds too, and what they are read as.
    renamed: dict[str, str] = field(default_factory=dict)
    #: The app's scaffolding ids (ChatGPT's `client-created-root`): no copy.
    structural: set[str] = field(default_factory=set)

    @property
    def copied(self) -> dict[str, str]:
        """The shared ids that are messages: what `check` reports."""
        return {
            shared: read_as
            for shared, read_as in self.renamed.items()
            if shared not in self.structural
        }

    def holds(self, message_id: str) -> bool:
        """Whether a message of this conversation is read with this id."""
        if message_id in self.renamed.values():
            return True
        return message_id not in self.renamed and message_id in self.ids


class ChatExport(Source):
    """A ChatGPT, Claude.ai or Open WebUI export, read like llm's `logs.db`: each
    question streams the export again, the last conversation found kept for
    the read that follows. Reading never writes."""

    def __init__(self, path: Path, files: list[ExportFile]):
        self.path = path
        self._files = files
        self._tree_ids: list[str] | None = None
        self._found: TreeRecords | None = None
        #: The last complete `_scan`: its prefix and limit, and its matches.
        self._scanned: tuple[tuple[str, int], list[IdMatch]] | None = None
        self._feedback: dict[str, list[dict[str, Any]]] | None = None
        #: The marks the app's feedback gives the nodes read so far, and the
        #: alternatives of each node it prefers (`convgraph.sources.notes`).
        self.app_marks: dict[str, NodeNote] = {}
        self.alternatives: dict[str, tuple[Any, ...]] = {}
        #: The later copies of conversations listed twice, by the last whole pass.
        self.repeated: list[_Item] = []
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

    def _raw_items(self) -> Iterator[Any]:
        """Every conversation's JSON, one at a time, across the split files."""
        for file in self._files:
            yield from file_values(file)

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

    def _items(self) -> Iterator[_Item]:
        """Every conversation, once per id (a conversation repeated across split files
        is read from its first copy), with the ids it shares with the conversations
        before it; items that are not conversations of the format are skipped."""
        module = self._module
        if module is None:
            return
        seen: set[str] = set()
        taken: set[str] = set()
        repeated: list[_Item] = []
        for position, raw in enumerate(self._raw_items()):
            if not module.is_conversation(raw):
                continue
            conversation_id = module.conversation_id(raw, position)
            if conversation_id in seen:
                repeated.append(_Item(position, conversation_id, raw, []))
                continue
            seen.add(conversation_id)
            ids = module.message_ids(raw, position)
            renamed = shared_ids(conversation_id, ids, taken)
            scaffold = getattr(module, "structural_ids", None)
            structural = scaffold(raw, position) if renamed and scaffold else set()
            yield _Item(position, conversation_id, raw, ids, renamed, structural)
        self.repeated = repeated

    def _parse(self, item: _Item, texts: bool = True) -> Conversation:
        """One item of `_items`, parsed by the format's module (which is
        there whenever `_items` gives an item), its shared ids renamed;
        ChatGPT's texts and parts only with `texts`."""
        assert self._module is not None
        conversation: Conversation = (
            self._module.parse_conversation(item.raw, item.position)
            if texts or self._module is not chatgpt
            else chatgpt.parse_conversation(item.raw, item.position, texts=False)
        )
        renamed = item.renamed
        if renamed:
            for message in conversation.messages:
                message.id = renamed.get(message.id, message.id)
                if message.parent is not None:
                    message.parent = renamed.get(message.parent, message.parent)
            if conversation.current is not None:
                conversation.current = renamed.get(
                    conversation.current, conversation.current
                )
        return conversation

    def conversations(self) -> Iterator[Conversation]:
        """Every conversation, parsed, one at a time."""
        for item in self._items():
            yield self._parse(item)

    def _records(self, item: _Item, texts: bool = True) -> TreeRecords:
        """One conversation's records (see `_parse` for `texts`), and the
        marks the app's feedback gives its nodes (kept in `app_marks`)."""
        feedback = self.feedback().get(item.id)
        # The feedback groups alternatives by their prompts' texts.
        conversation = self._parse(item, texts or bool(feedback))
        node_of: dict[str, str] = {}
        if feedback:
            records = conversation_records(conversation, self.format or "", node_of)
        else:
            records = conversation_records(conversation, self.format or "")
        if feedback:
            from convgraph.sources.notes import feedback_marks

            marks, alternatives = feedback_marks(
                feedback, records, node_of, item.renamed
            )
            self.app_marks.update(marks)
            self.alternatives.update(alternatives)
        problems = []
        if item.copied:
            problems.append(_shared_problem(item))
        return TreeRecords(conversation.id, conversation.name, records, problems)

    def feedback(self) -> dict[str, list[dict[str, Any]]]:
        """The person's ratings of messages in the app, by conversation id
        (ChatGPT's `message_feedback.json`; none for the other apps)."""
        if self._feedback is None:
            self._feedback = {}
            found = (
                side_file(self.path, FEEDBACK_FILE)
                if self.format == chatgpt.SOURCE
                else None
            )
            if found is not None:
                from convgraph.sources.notes import feedback_by_conversation

                self._feedback = feedback_by_conversation(file_values(found))
        return self._feedback

    def tree_ids(self) -> list[str]:
        """Every conversation's id, in the export's order (those with nodes:
        an empty conversation names no tree)."""
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
        from convgraph.sources.merging import merge_trees

        # Read to the end: a later copy of the conversation is merged in.
        copies = [
            self._records(item) for item in self._items() if item.id == conversation_id
        ]
        copies += [
            self._records(item) for item in self.repeated if item.id == conversation_id
        ]
        self._found = (
            merge_trees(copies) if len(copies) > 1 else next(iter(copies), None)
        )
        return self._found

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
        for item in self._items():
            if not item.holds(node_id):
                continue
            tree = self._records(item)
            if any(record["id"] == node_id for record in tree.records):
                self._found = tree
                return tree.tree_id
        raise UnknownNode(node_id)

    def id_matches(self, given: str, limit: int) -> list[IdMatch]:
        """The conversations and nodes whose id begins with `given`, up to
        `limit` of each, in one pass over the export (`_scan`)."""
        return self._scan(given, limit)[0]

    def is_id(self, given: str, kind: str) -> bool:
        """Whether `given` is a whole id of `kind`, by the same pass as `id_matches`."""
        if len(given) < MIN_PREFIX:
            return super().is_id(given, kind)
        found, whole = self._scan(given, LISTED + 1, stop_at=kind)
        if any(match.id == given and match.kind == kind for match in found):
            return True
        return False if whole else super().is_id(given, kind)

    def _scan(
        self, given: str, limit: int, stop_at: str | None = None
    ) -> tuple[list[IdMatch], bool]:
        """The matches of `id_matches`, and whether every conversation was looked at;
        only conversations holding an id `given` begins are parsed."""
        if self._scanned is not None and self._scanned[0] == (given, limit):
            return self._scanned[1], True
        conversations: list[IdMatch] = []
        nodes: list[IdMatch] = []
        for item in self._items():
            if len(conversations) >= limit and len(nodes) >= limit:
                return conversations + nodes, False
            named = item.id.startswith(given)
            held = any(
                (item.renamed.get(message, message)).startswith(given)
                for message in item.ids
            )
            if not named and not held:
                continue
            tree = self._records(item)
            self._found = tree
            if named and len(conversations) < limit:
                conversations.append(IdMatch(CONVERSATION, item.id, item.id, tree.name))
            nodes += [
                IdMatch(NODE, record["id"], tree.tree_id, record.get("prompt"))
                for record in tree.records
                if record["id"].startswith(given)
            ][: limit - len(nodes)]
            if stop_at is not None and any(
                match.id == given and match.kind == stop_at
                for match in (conversations if stop_at == CONVERSATION else nodes)
            ):
                return conversations + nodes, False
        self._scanned = ((given, limit), conversations + nodes)
        return conversations + nodes, True

    def path_by_links(self, node_id: str) -> list[str] | None:
        """None: an export has no index to walk; the tree answers."""
        return None

    def read_tree(self, tree_id: str) -> TreeRecords:
        """One conversation's records (none for an unknown id)."""
        return self._find(tree_id) or TreeRecords(tree_id, None, [])

    def trees(self, texts: bool = False) -> Iterator[TreeRecords]:
        """Every conversation's records in the export's order, empty ones
        too, in one pass of the file (`read_tree` finds one conversation by
        reading the file from its start); texts and parts may be left out
        unless `texts`, as the statistics need none."""
        for item in self._items():
            yield self._records(item, texts)

    def read_all(
        self, texts: bool | Collection[str], progress: ProgressCallback
    ) -> ForestRead:
        """Every node as one table, read conversation by conversation: `LogDatabase`'s
        columns and `active`; the names hold the empty conversations too."""
        progress("reading the file", 0, None)
        text = bool(texts)
        columns: dict[str, list[Any]] = {name: [] for name in FOREST_COLUMNS}
        names: dict[str, Any] = {}
        problems: list[Problem] = []
        for tree in self.trees(text):
            names[tree.tree_id] = tree.name
            problems.extend(tree.problems)
            if not tree.records:
                problems.append(_empty_problem(tree))
                continue
            for record in tree.records:
                for name, values in columns.items():
                    values.append(
                        None
                        if not text and name in CONTENT_ATTRIBUTES
                        else record[name]
                    )
        found = ForestRead(_forest_frame(columns), names, problems)
        if self.repeated:
            from convgraph.sources.merging import merge_read_copies

            copies = [self._records(item) for item in self.repeated]
            found = merge_read_copies(found, copies, text)
        return found


def _shared_problem(item: _Item) -> Problem:
    """The report of a conversation read with qualified ids."""
    copied = item.copied
    first = next(iter(copied.values()))
    count = len(copied)
    return Problem(
        SHARED_IDS,
        first,
        None,
        item.id,
        f"{item.id} holds {count} message id{'s' if count != 1 else ''} an"
        f" earlier conversation holds too (a copy?): read as {item.id}/ID",
    )


def _empty_problem(tree: TreeRecords) -> Problem:
    """The report of a conversation without a node."""
    named = f" ({tree.name})" if tree.name else ""
    return Problem(
        EMPTY_CONVERSATION,
        tree.tree_id,
        None,
        tree.tree_id,
        f"{tree.tree_id}{named} holds no prompt and no answer: 0 nodes",
    )


def _forest_frame(columns: dict[str, list[Any]]) -> pd.DataFrame:
    """The forest table with the llm readers' types; a repeated id is dropped."""
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
