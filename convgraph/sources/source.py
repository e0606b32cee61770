"""What every reader gives: the `Source` interface, one tree's raw records, and
log order.

llm's `logs.db` (`LogDatabase`) and an app's chat export (`ChatExport`) are
read through the same questions — which trees there are, which tree holds a
node, one tree's records, the whole forest as a table — so the forest and the
commands never ask which kind of file they hold. The pieces both need live
here, apart from the readers, so that no reader imports another.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from convgraph.errors import (
    AmbiguousId,
    ConversationNotNode,
    NodeNotConversation,
    UnknownConversation,
    UnknownNode,
)
from convgraph.links.integrity import Problem
from convgraph.text import excerpt

if TYPE_CHECKING:
    import pandas as pd


#: Told how far a read has come: `(phase, done, total)`, the total None
#: where it is not known ("reading responses", rows read, the table's
#: largest rowid; "linking the nodes", 0, None).
ProgressCallback = Callable[[str, int, int | None], None]


def no_progress(phase: str, done: int, total: int | None) -> None:
    """The `ProgressCallback` of work nobody watches: it does nothing."""


@dataclass
class TreeRecords:
    """The raw rows of one conversation tree, before its links are checked.

    `records` are dicts with `id`, `tree_id`, `parent_id` (as stored, maybe
    invalid) and the node attributes, in log order; `problems` the tree's
    broken links that are not parent links (cycles of forks); `calls` the
    node of each call inside a run (a tool chain folded into one node,
    `runs`), by the call's id.
    """

    tree_id: str
    name: str | None
    records: list[dict[str, Any]]
    problems: list[Problem] = field(default_factory=list)
    calls: dict[str, str] = field(default_factory=dict)


#: The kinds of id `Source.resolve` tells apart.
NODE = "node"
CONVERSATION = "conversation"

#: The shortest prefix of an id that is looked up as one: shorter, and
#: "01jb" would begin nearly every id of a year, so it names only itself.
#: (git asks for 4 characters too.)
MIN_PREFIX = 4

#: How many candidates an ambiguous prefix lists.
LISTED = 8


@dataclass(frozen=True)
class IdMatch:
    """An id a prefix begins (`Source.id_matches`): a node (a response, a
    turn, a call inside a run, a chat export's message) or a conversation
    (a legacy conversation, a thread, an export's conversation), the tree
    that holds it, and the words that say which it is (a node's prompt, a
    conversation's name)."""

    kind: str
    id: str
    tree_id: str
    text: str | None = None

    def describe(self) -> str:
        """One line for a list of candidates: the id, what it is, its words."""
        if self.kind == NODE:
            what = f"node of conversation {self.tree_id}"
        elif self.tree_id != self.id:
            what = f"conversation (of tree {self.tree_id})"
        else:
            what = "conversation"
        words = excerpt(self.text, 40) if self.text else ""
        return f"{self.id}  {what}: {words}" if words else f"{self.id}  {what}"


def prefix_end(prefix: str) -> str | None:
    """The least string above every string that begins with `prefix`, in
    SQLite's and Python's order of code points (None where there is none),
    so that `id >= prefix and id < prefix_end(prefix)` is a range an index
    answers.
    """
    while prefix and prefix[-1] == chr(0x10FFFF):
        prefix = prefix[:-1]
    if not prefix:
        return None
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def prefix_range(column: str, prefix: str) -> tuple[str, list[str]]:
    """The SQL condition, and its parameters, that `column` begins with
    `prefix`: a range, which the column's index answers without a scan
    (where `like` or `substr` would read every row).
    """
    end = prefix_end(prefix)
    if end is None:
        return f"{column} >= ?", [prefix]
    return f"{column} >= ? and {column} < ?", [prefix, end]


@dataclass
class ForestRead:
    """What a read of many trees gives (`Source.read`).

    `nodes` is the nodes table in log order: the columns of
    `contract.SOURCE_COLUMNS` (a chat export's `active` too, a source's own
    place columns after them, and `contract.PARENT_ROWS` where the reader
    found each row's parent row on its own arrays), its links as stored,
    not yet checked. `names` names every tree read (empty ones too);
    `problems` is what the read left out or found wrong beside the parent
    links (rows that are no node, cycles of forks, a chat export's empty
    conversations and shared ids); `calls` names the node of each call
    inside a run (a tool chain folded into one node), by the call's id.
    """

    nodes: pd.DataFrame
    names: dict[str, Any]
    problems: list[Problem] = field(default_factory=list)
    calls: dict[str, str] = field(default_factory=dict)


class NodeTexts(NamedTuple):
    """A batch of nodes' texts read apart from the forest
    (`Source.text_batches`): the nodes' ids, and each text column
    (`contract.TEXT_ATTRIBUTES`: prompt, system, response) as a list of
    str or None aligned with them."""

    ids: list[str]
    texts: dict[str, list[str | None]]


class Source:
    """A file of conversations, read-only: the questions every reader answers.

    A reader names trees (`tree_ids`, `tree_id_of_conversation`,
    `tree_id_of_node`), reads one tree (`read_tree`: its records, no pandas)
    or many as one table (`read`, a `ForestRead`), and says which
    conversation nodes outside a tree are in (`conversations_of`). What the
    user types for an id, whole or a unique prefix, becomes the whole id
    once, here (`resolve`, on the reader's own index of its ids:
    `id_matches`, `is_id`).

    A reader implements `read_all` (every tree); `read` of named trees is
    built here from `read_tree`, each tree read with questions about it
    alone.
    """

    path: Path
    #: The SQLite connection behind the file (llm's database), None where
    #: there is none.
    conn: sqlite3.Connection | None = None

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Let go of the file."""

    @property
    def generations(self) -> list[str]:
        """Which storage formats the file holds, oldest first."""
        raise NotImplementedError

    def tree_ids(self) -> list[str]:
        """Every conversation tree's id, in the order of its first node."""
        raise NotImplementedError

    def tree_id_of_conversation(self, conversation_id: str) -> str:
        """The tree that `conversation_id` names."""
        raise NotImplementedError

    def tree_id_of_node(self, node_id: str) -> str:
        """The id of the conversation tree that holds `node_id`."""
        raise NotImplementedError

    def node_of(self, node_id: str) -> str:
        """The id of the node that holds `node_id`: itself, or, for a call
        inside a run (a tool chain is one node, `runs`), the run's node."""
        return self.read_tree(self.tree_id_of_node(node_id)).calls.get(node_id, node_id)

    def conversations_of(self, node_ids: list[str]) -> dict[str, str]:
        """Which conversation each of these nodes is in, for those the file
        holds: how a parent outside a tree is told apart as another
        conversation's (not a missing one). None of them here: a reader
        whose trees can link outside themselves says."""
        return {}

    # -- ids as the user types them ----------------------------------------

    def id_matches(self, given: str, limit: int) -> list[IdMatch]:
        """The ids that begin with `given` (itself included where it is an
        id): up to `limit` of each kind the file stores, read on the file's
        own index. Called only for a `given` of `MIN_PREFIX` characters or
        more; a shorter one is looked up whole (`exact_matches`).

        This default reads every tree in turn, for a reader with no index
        of its ids (a folder of a few agent sessions); llm's database and
        the chat exports answer from their own index instead.
        """
        conversations: list[IdMatch] = []
        nodes: list[IdMatch] = []
        for tree_id in self.tree_ids():
            tree = self.read_tree(tree_id)
            if tree_id.startswith(given) and len(conversations) < limit:
                conversations.append(IdMatch(CONVERSATION, tree_id, tree_id, tree.name))
            words = {record["id"]: record.get("prompt") for record in tree.records}
            words.update((call, None) for call in tree.calls)
            nodes += [
                IdMatch(NODE, node_id, tree_id, text)
                for node_id, text in words.items()
                if node_id.startswith(given)
            ][: limit - len(nodes)]
        return conversations + nodes

    def exact_matches(self, given: str) -> list[IdMatch]:
        """`given` itself, as a node and as a conversation where it is one."""
        found = []
        with contextlib.suppress(UnknownNode):
            found.append(IdMatch(NODE, given, self.tree_id_of_node(given)))
        try:
            tree_id = self.tree_id_of_conversation(given)
            found.append(IdMatch(CONVERSATION, given, tree_id))
        except UnknownConversation:
            pass
        return found

    def is_id(self, given: str, kind: str) -> bool:
        """Whether `given` is a whole id of this kind (`NODE` or
        `CONVERSATION`): the quick question `resolve` asks first."""
        try:
            if kind == NODE:
                self.tree_id_of_node(given)
            else:
                self.tree_id_of_conversation(given)
        except (UnknownNode, UnknownConversation):
            return False
        return True

    def resolve(self, given: str, wanted: str | None = None) -> tuple[str, str]:
        """The id `given` names, as git takes a unique prefix of a hash:
        `given` itself where it is an id, else the one id of `MIN_PREFIX`
        or more characters it begins. `wanted` is `NODE`, `CONVERSATION`
        or None for either (a node first, where an id is both).

        Returns
        -------
        (kind, id)
            `NODE` or `CONVERSATION`, and the whole id.

        Raises
        ------
        AmbiguousId
            `given` begins several ids of the kind wanted (the first
            `LISTED` are its candidates).
        NodeNotConversation, ConversationNotNode
            `given` names an id of the other kind only.
        UnknownNode, UnknownConversation
            `given` names nothing.
        """
        kinds = (wanted,) if wanted is not None else (NODE, CONVERSATION)
        # The whole id first: the lookup every command made before prefixes,
        # one index probe in llm's database.
        for kind in kinds:
            if self.is_id(given, kind):
                return kind, given
        if len(given) < MIN_PREFIX:
            matches = self.exact_matches(given)
        else:
            matches = self.id_matches(given, LISTED + 1)
        exact = [match for match in matches if match.id == given]
        for kind in kinds:
            for match in exact:
                if match.kind == kind:
                    return kind, given
        if exact:
            # A whole id of the other kind means what it says, even where it
            # also begins ids of the kind wanted.
            raise _other_kind(given, exact[0])
        chosen = _each_id_once([match for match in matches if match.kind in kinds])
        if len(chosen) == 1:
            return chosen[0].kind, chosen[0].id
        if len(chosen) > 1:
            raise _ambiguous(given, chosen)
        others = _each_id_once(matches)
        if len(others) > 1:
            raise _ambiguous(given, others, none_of=wanted)
        if others:
            raise _other_kind(given, others[0])
        if wanted == CONVERSATION:
            raise UnknownConversation(given)
        raise UnknownNode(given)

    def resolve_node(self, given: str) -> str:
        """The node id `given` names, itself or as a prefix (`resolve`)."""
        return self.resolve(given, NODE)[1]

    def resolve_conversation(self, given: str) -> str:
        """The conversation id `given` names, itself or as a prefix
        (`resolve`)."""
        return self.resolve(given, CONVERSATION)[1]

    def path_by_links(self, node_id: str) -> list[str] | None:
        """The ids from the root down to `node_id` by stored links alone, or
        None where only the whole tree gives the answer."""
        return None

    def read_tree(self, tree_id: str) -> TreeRecords:
        """The rows of one tree, read with questions about that tree only."""
        raise NotImplementedError

    def read(
        self,
        texts: bool | Collection[str] = True,
        trees: Iterable[str] | None = None,
        progress: ProgressCallback | None = None,
    ) -> ForestRead:
        """Every tree as one table, or only the trees named (each with
        questions about it alone, in the order first named).

        `texts` False leaves the texts and the parts out (None): most of a
        file's bytes, and not needed for structure and usage; a collection
        names the text columns wanted (of `prompt`, `system`, `response`),
        which a reader may read alone. `trees` are tree ids
        (`tree_id_of_conversation`'s answers). `progress` is told how far
        the read has come, `(phase, done, total)`.
        """
        report = progress or no_progress
        if trees is not None:
            return _read_trees(self, list(dict.fromkeys(trees)), bool(texts), report)
        return self.read_all(texts, report)

    def read_all(
        self, texts: bool | Collection[str], progress: ProgressCallback
    ) -> ForestRead:
        """Every tree as one table (`read` without `trees`)."""
        raise NotImplementedError

    def text_batches(
        self, progress: ProgressCallback | None = None
    ) -> Iterator[NodeTexts] | None:
        """Every node's texts apart from the rest of the forest, in batches
        of a few thousand nodes, for work that reads the structure without
        texts (`read(texts=False)`) and cannot hold every text at once (the
        search index's first build). A node's texts are the ones `read`
        gives it, its prompt, system and response being all of them (no
        parts); the batches may hold nodes that the forest read before
        did not (rows logged since, hidden branches), in any order.

        None (this default) where the reader gives its texts only with the
        forest: then read it with its texts.
        """
        return None

    def tree_names(self) -> list[tuple[str, str | None]] | None:
        """Every named tree's id and name, newest first, from the file's
        small tables; None (this default) where it has none."""
        return None

    def tree_counts(
        self,
    ) -> list[tuple[str, str | None, int, str | None, list[str]]] | None:
        """Every tree's id, name, calls logged (a tool chain's calls are one
        node, so not its nodes), last time and sorted models, without
        reading any tree; None (this default) where only the forest tells."""
        return None

    def trees(self) -> Iterator[TreeRecords] | None:
        """Every tree's records in one pass of the file, empty trees too,
        where `read_tree` finds a tree by reading the file from its start
        (a chat export); None (this default) where it reads a tree alone."""
        return None

    def table_stamps(
        self, since: dict[str, Any] | None = None
    ) -> dict[str, Any] | None:
        """What the file's rows say of themselves, from its own indexes, as
        plain JSON values: any commit that adds, deletes or moves rows changes
        it. With `since` (an earlier stamp), its "logged_since" names the
        trees of the rows logged after that one, or is None where anything
        else changed. None (this default) where the file has no such tables:
        compare the files themselves."""
        return None


def _read_trees(
    logs: Source, tree_ids: list[str], text: bool, report: ProgressCallback
) -> ForestRead:
    """`Source.read` of named trees: each tree's records (`read_tree`) as
    one table, with the trees' problems and calls."""
    import pandas as pd

    from convgraph.contract import CONTENT_ATTRIBUTES, NODE_COLUMNS
    from convgraph.errors import UnknownConversation
    from convgraph.sources.tables import object_column

    records: list[dict[str, Any]] = []
    found = ForestRead(pd.DataFrame(), {})
    for done, tree_id in enumerate(tree_ids):
        report("reading conversations", done, len(tree_ids))
        tree = logs.read_tree(tree_id)
        if not tree.records:
            raise UnknownConversation(tree_id)
        records.extend(tree.records)
        found.names[tree_id] = tree.name
        found.problems.extend(tree.problems)
        found.calls.update(tree.calls)
    report("reading conversations", len(tree_ids), len(tree_ids))
    nodes = pd.DataFrame.from_records(records, columns=NODE_COLUMNS)
    # A source's columns beyond the contract's (an agent's project, git
    # branch, subagent...) stay, as its whole-file read keeps them: values
    # as they are (None, not NaN), each column's reader casts it.
    extra = [key for key in records[0] if key not in NODE_COLUMNS] if records else []
    for key in extra:
        values = object_column([record.get(key) for record in records])
        nodes[key] = pd.Series(values, index=nodes.index, dtype=object)
    if not text:
        # One tree's texts are little to read; dropping them keeps the table
        # the same as a whole-file read without texts.
        for name in CONTENT_ATTRIBUTES:
            nodes[name] = None
    found.nodes = nodes
    return found


def _each_id_once(matches: list[IdMatch]) -> list[IdMatch]:
    """Each id once, in order (a node before a conversation of the same id:
    a legacy response outside any conversation is both)."""
    seen: dict[str, IdMatch] = {}
    for match in sorted(matches, key=lambda match: match.kind != NODE):
        seen.setdefault(match.id, match)
    return sorted(seen.values(), key=lambda match: (match.id, match.kind))


def _other_kind(given: str, other: IdMatch) -> UnknownNode | UnknownConversation:
    """The error for an id of the other kind than the one wanted."""
    if other.kind == NODE:
        return NodeNotConversation(given, other.id, other.tree_id)
    return ConversationNotNode(given, other.id, other.tree_id)


def _ambiguous(
    given: str, matches: list[IdMatch], none_of: str | None = None
) -> AmbiguousId:
    return AmbiguousId(
        given,
        [match.describe() for match in matches[:LISTED]],
        more=len(matches) > LISTED,
        none_of=none_of,
    )


def log_order(record: dict[str, Any]) -> tuple[str, str]:
    """Sort key of log order (docs/design.md#the-node-contract): `datetime_utc`,
    then `id`."""
    return (record["datetime_utc"] or "", record["id"])


def sort_log_order(nodes: pd.DataFrame) -> pd.DataFrame:
    """The table in log order, with a fresh 0..n-1 index.

    llm appends as it logs, so rows read in storage order are nearly always in
    log order already: checking that is one vectorized comparison, sorting a
    million string keys is seconds.
    """
    key = nodes["datetime_utc"].fillna("").to_numpy()
    ids = nodes["id"].to_numpy()
    if (
        len(nodes) < 2
        or (
            (key[1:] > key[:-1]) | ((key[1:] == key[:-1]) & (ids[1:] >= ids[:-1]))
        ).all()
    ):
        return nodes.reset_index(drop=True)
    order = (
        nodes.assign(_key=key)
        .sort_values(["_key", "id"], kind="stable")
        .drop(columns="_key")
    )
    return order.reset_index(drop=True)
