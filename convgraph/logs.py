"""`convgraph.open(path)`: one read-only handle on a file of conversations."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

from convgraph.errors import NodeNotConversation
from convgraph.sources import Source, open_logs
from convgraph.sources.source import ProgressCallback, no_progress

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from convgraph.links.integrity import Problem
    from convgraph.model.filters import TreeFilter
    from convgraph.model.forest import Forest
    from convgraph.model.tree import ConversationTree
    from convgraph.present.transcript import Transcript
    from convgraph.search import Hit

COMPUTING = "computing statistics"
T = TypeVar("T")

#: One file or folder, several (a list, or paths by name: read as one
#: forest), or None for llm's logs.db.
Given = (
    str | os.PathLike[str] | Sequence[str] | Mapping[str, str | os.PathLike[str]] | None
)


@dataclass
class Summaries:
    """`Logs.summaries`: rows per tree, trees read, hidden nodes by tree."""

    rows: list[dict[str, Any]] | pd.DataFrame
    read: int
    hidden: dict[str, int] = field(default_factory=dict)


class Logs:
    """A file of conversations, open read-only; `hidden` keeps hidden branches,
    `redact` replaces secrets in what it hands out (`convgraph.redaction`)."""

    def __init__(self, path: Given = None, hidden: bool = False, redact: bool = False):
        from convgraph.redaction import Redactor

        self.redactor = Redactor() if redact else None  # before: says what is missing
        self.given = path
        self.hidden = hidden
        if isinstance(path, str | os.PathLike) or path is None:
            self.source: Source = open_logs(path)
            self.paths = [
                os.fspath(path) if path is not None else str(self.source.path)
            ]
        else:
            from convgraph.sources.several import SeveralSources, named_paths

            named = named_paths(path) if isinstance(path, Sequence) else path
            self.source = SeveralSources(named)
            self.paths = [os.fspath(one) for one in named.values()]
        self.name = ", ".join(self.paths)

    def __enter__(self) -> Logs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.source.close()

    def __repr__(self) -> str:
        return f"<convgraph.Logs {self.source.path}>"

    @property
    def writable(self) -> bool:
        """Whether the file is llm's database (exports are read only)."""
        return self.source.conn is not None

    @property
    def generations(self) -> list[str]:
        """Which storage formats the file holds, oldest first."""
        return self.source.generations

    def files(self) -> list[str]:
        """The paths read: each file, or a folder and the files directly in it."""
        found = []
        for path in self.paths:
            found.append(path)
            if os.path.isdir(path):
                with contextlib.suppress(OSError), os.scandir(path) as entries:
                    found += [entry.path for entry in entries]
        return found

    def overwrite_refusal(self, output: str, force: bool = False) -> str | None:
        """Why writing `output` would destroy a file being read or, without
        `force`, an SQLite database; else None."""
        from convgraph.sources import is_sqlite_file

        try:
            target = os.stat(output)
        except OSError:
            return None  # nothing there to lose; the write says what fails
        for read in self.files():
            try:
                found = os.stat(read)
            except OSError:
                continue
            if (found.st_dev, found.st_ino) == (target.st_dev, target.st_ino):
                return (
                    f"refusing to write {output}: it is the file being read;"
                    " write the export to another file"
                )
        # Only a regular file is opened to look: a FIFO would wait for input.
        if not force and stat.S_ISREG(target.st_mode) and is_sqlite_file(output):
            return (
                f"refusing to write {output}: it is an SQLite database"
                " (--force replaces it)"
            )
        return None

    def resolve(self, given: str, kind: str | None = None) -> str:
        """The whole id `given` (or a unique prefix) names, of `kind` (any when
        None). Raises UnknownNode, UnknownConversation, AmbiguousId."""
        return self.source.resolve(given, kind)[1]

    def tree_ids(self) -> list[str]:
        """Every conversation tree's id, in the order of its first node."""
        return self.source.tree_ids()

    def tree(self, id: str) -> ConversationTree:
        """The tree an id or prefix names. Raises UnknownConversation, AmbiguousId."""
        try:
            # As `convgraph tree` resolves it: one prefix, one message.
            return self.tree_of_conversation(self.source.resolve_conversation(id))
        except NodeNotConversation as error:
            return self.tree_of_node(error.id)

    def tree_of_conversation(self, conversation_id: str) -> ConversationTree:
        from convgraph.model.loading import load_tree

        return self._out(load_tree(conversation_id, self.source, self.hidden))

    def tree_of_node(self, node_id: str) -> ConversationTree:
        from convgraph.model.loading import load_tree_of_node

        return self._out(load_tree_of_node(node_id, self.source, self.hidden))

    def tree_of_pair(self, node_a: str, node_b: str) -> ConversationTree:
        from convgraph.model.loading import load_tree_of_pair

        return self._out(load_tree_of_pair(node_a, node_b, self.source, self.hidden))

    def checked_tree(
        self, conversation_id: str
    ) -> tuple[ConversationTree, list[Problem]]:
        """A conversation's tree and the problems of its links."""
        from convgraph.model.loading import read_tree

        whole = self.source.resolve_conversation(conversation_id)
        tree_id = self.source.tree_id_of_conversation(whole)
        return self._out(read_tree(self.source, tree_id, hidden=self.hidden))

    def path(self, node_id: str) -> list[str]:
        """The ids from the root of a node's tree down to it (`load_path`)."""
        from convgraph.model.loading import load_path

        return load_path(node_id, self.source, self.hidden)

    def trees(self, ids: Iterable[str] = ()) -> Iterator[ConversationTree]:
        """The trees these conversation ids name, each once; all when none."""
        from convgraph.model.loading import load_trees

        trees = load_trees(ids, self.source, self.hidden)
        return map(self._out, trees) if self.redactor else trees

    def forest(
        self,
        text: bool = True,
        trees: Iterable[str] | None = None,
        where: TreeFilter | None = None,
        progress: ProgressCallback | None = None,
        texts: Collection[str] | None = None,
    ) -> Forest:
        """Every tree, or those named, as tables; `where` filters them."""
        from convgraph.model.filters import select_trees
        from convgraph.model.forest import Forest

        forest = Forest.read(self.source, text, trees, progress, texts, self.hidden)
        return self._out(select_trees(forest, where) if where else forest)

    def drawn_forest(self, progress: ProgressCallback | None = None) -> Forest:
        """The forest with `DRAWN_TEXTS` and prompt-less nodes' answers."""
        from convgraph.present.text_tree import DRAWN_TEXTS

        forest = self.forest(progress=progress, texts=DRAWN_TEXTS)
        nodes = forest.nodes
        empty = (nodes["prompt"] == "").fillna(False).to_numpy(dtype=bool)
        missing = empty & nodes["response"].isna().to_numpy()
        if missing.any():  # asked of these nodes alone: no tree read again
            ids = nodes["id"][missing].tolist()
            if found := self.source.answers(ids):
                nodes.loc[missing, "response"] = [found.get(node) for node in ids]
        return forest

    def stats(self, where: TreeFilter | None = None) -> pd.DataFrame:
        """The statistics of every tree, one row each (`conversation_table`)."""
        from convgraph.analysis.stats import conversation_table

        return conversation_table(self.forest(text=False, where=where))

    def summaries(
        self,
        conversation_ids: Iterable[str] = (),
        where: TreeFilter | None = None,
        progress: ProgressCallback | None = None,
    ) -> Summaries:
        """`stats` rows; a small unfiltered file is measured without pandas."""
        from convgraph.analysis.summaries import is_small, summary_records

        named = list(conversation_ids)
        if not where and is_small(self.source):
            records = summary_records(self.source, named)
            if records:  # an empty file's table says what its columns are
                return Summaries(records, len(records))
        from convgraph.analysis.stats import conversation_table
        from convgraph.model.filters import select_trees

        read = self.forest(text=False, trees=named or None, progress=progress)
        (progress or no_progress)(COMPUTING, 0, None)
        hidden = read.hidden
        if where:
            trees = int(read.nodes["tree_id"].nunique())
            selected = select_trees(read, where)
            hidden = selected.hidden
            table = conversation_table(selected)
        else:
            # Not needed by the table: freed first, a lower peak.
            del read.nodes["id"], read.nodes["parent_id"]
            table = conversation_table(read)
            trees = len(table)
        return Summaries(table, trees, hidden)

    def problems(self) -> list[Problem]:
        """Broken links, impossible counts and a migration's lost rules."""
        from convgraph.analysis.prices import count_problems
        from convgraph.store.rules import rule_problems

        forest = self.forest(text=False)
        rules = rule_problems(self.source.path) if self.writable else []
        return [*forest.problems, *count_problems(forest.nodes), *rules]

    def transcript(self, id: str) -> Transcript:
        """The conversation from its root to a node, or its active path."""
        from convgraph.present.transcript import transcript

        return self._out(transcript(id, self.source, self.hidden))

    def search(self, query: str, **options: Any) -> list[Hit]:
        """The nodes matching `query`, best first (`convgraph.search.search`)."""
        from convgraph.search import search

        return self._out(search(self.source, query, **options))

    def reopen(self) -> Logs:
        """The file reopened for another thread (SQLite's rule)."""
        return Logs(self.given, redact=self.redactor is not None)

    def _out(self, found: T) -> T:
        """`found` with its secrets replaced where the handle redacts."""
        from convgraph.redaction import redact

        return cast(T, redact(found, self.redactor)) if self.redactor else found

    def tree_names(self) -> list[tuple[str, str | None]] | None:
        """Every named tree's (id, name), newest first; None where unknown."""
        return self.source.tree_names()

    def tree_counts(
        self,
    ) -> list[tuple[str, str | None, int, str | None, list[str]]] | None:
        """Every tree's id, name, calls, last time, models; None if unknown."""
        return self.source.tree_counts()

    def embeddings(self, model: str | None = None) -> tuple[list[str], np.ndarray]:
        """Each node text's node id and its vector (float16, normalised), a row a
        prompt or response (`convgraph.meaning.node_vectors`)."""
        from convgraph.meaning import node_vectors

        vectors = node_vectors(self, model)
        return list(vectors.ids), vectors.matrix

    def similar(
        self,
        node_id: str | None = None,
        text: str | None = None,
        k: int = 10,
        model: str | None = None,
        progress: ProgressCallback | None = None,
    ) -> list[dict[str, Any]]:
        """The `k` prompts or answers nearest a node's or a text's meaning, as
        records: rank, score (cosine), tree_id, id, role, active, snippet
        (`convgraph.meaning.similar`)."""
        from convgraph.meaning import similar

        return self._out(similar(self, node_id, text, k, model, progress))


def open(path: Given = None, hidden: bool = False, redact: bool = False) -> Logs:
    """Open llm's `logs.db` (its own when `path` is None), a chat export or
    agents' sessions read-only, or several as one forest (a list of paths, or
    paths by name); `hidden` keeps hidden branches, `redact` replaces secrets.
    Raises DatabaseError where a file is missing or none of these,
    ConvgraphError where `redact` lacks its extra."""
    return Logs(path, hidden, redact)


def is_export(path: str) -> bool:
    """Whether `path` is read but never written (an export)."""
    from convgraph.errors import DatabaseError
    from convgraph.sources import is_sqlite_file

    if not os.path.exists(path) or is_sqlite_file(path):
        return False
    try:
        with Logs(path) as logs:
            return not logs.writable
    except (DatabaseError, OSError):
        return False
