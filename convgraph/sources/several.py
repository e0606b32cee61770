"""Several sources read as one forest (`SeveralSources`), each node saying
which one it came from (`contract.ORIGIN`), and the saved list of sources
read when no `--db` is given (`saved_sources`, in `config_directory()`).

The union goes through `merging.merge_reads`: copies of one conversation are
merged, an id naming different things in two sources is kept twice and
reported. Ids stay as each app wrote them, so a lookup asks every source.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from convgraph.contract import ORIGIN
from convgraph.errors import (
    ConvgraphError,
    DatabaseError,
    HeldBySeveral,
    UnknownConversation,
    UnknownNode,
)
from convgraph.sources import default_database_path, open_logs
from convgraph.sources.merging import APPS
from convgraph.sources.source import (
    ForestRead,
    IdMatch,
    NodeTexts,
    ProgressCallback,
    Source,
    TreeRecords,
)

CONFIG_VARIABLE = "CONVGRAPH_CONFIG_DIR"
LIST_FILE = "sources.json"
#: The list's first entry unless removed: llm's own logs.db, found as llm finds it.
LLM = "llm"
NAME_FORM = re.compile(r"[\w][\w.-]*")
#: `Source.table_stamps`' key of the trees logged since the stamp given.
LOGGED_SINCE = "logged_since"
#: The key of the sources changed otherwise than by rows logged.
RENEWED = "renewed"

#: A name and a path, or None for llm's logs.db wherever llm keeps it.
Entry = tuple[str, str | None]


class ListError(ConvgraphError):
    """A saved list that cannot be read or changed as asked."""


def config_directory() -> Path:
    """convgraph's configuration: `$CONVGRAPH_CONFIG_DIR`, else beside its
    cache by the same rules (`$XDG_CONFIG_HOME/convgraph`, ~/.config/convgraph)."""
    if own := os.environ.get(CONFIG_VARIABLE):
        return Path(own)
    config = os.environ.get("XDG_CONFIG_HOME") or ""
    base = Path(config) if os.path.isabs(config) else Path.home() / ".config"
    return base / "convgraph"


def saved_sources() -> list[Entry]:
    """The saved list in order; llm's logs.db alone where none is saved."""
    path = config_directory() / LIST_FILE
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        return [(str(entry["name"]), entry["path"]) for entry in saved["sources"]]
    except FileNotFoundError:
        return [(LLM, None)]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ListError(f"cannot read the list of sources {path}: {error}") from None


def _save(entries: list[Entry]) -> None:
    from convgraph.writing import written

    directory = config_directory()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ListError(f"cannot write in {directory}: {error.strerror}") from None
    listed = [{"name": name, "path": path} for name, path in entries]
    with written(directory / LIST_FILE) as file:
        file.write(json.dumps({"sources": listed}, indent=2).encode() + b"\n")


def add_source(path: str, name: str | None = None) -> str:
    """Add the file or folder at `path` (read once to check it is one convgraph
    reads) to the saved list as `name` (else one made from its file name);
    the name given back. Raises `ListError`, `DatabaseError`."""
    entries = saved_sources()
    whole = os.path.abspath(os.path.expanduser(path))
    for taken, listed in entries:
        if os.path.abspath(listed or default_database_path()) == whole:
            raise ListError(f"{path} is in the list already, as {taken}")
    names = [taken for taken, _ in entries]
    if name is None:
        name = source_name(whole, names)
    elif not NAME_FORM.fullmatch(name) or name in names:
        why = "is taken" if name in names else "is not letters, digits, . _ -"
        raise ListError(f"--name {name}: the name {why}")
    open_logs(whole).close()
    _save([*entries, (name, whole)])
    return name


def remove_source(given: str) -> str:
    """Take the source named `given` (or at that path) off the saved list; its
    name given back. Raises `ListError` where none is."""
    entries = saved_sources()
    whole = os.path.abspath(os.path.expanduser(given))
    for name, path in entries:
        if given == name or os.path.abspath(path or default_database_path()) == whole:
            _save([entry for entry in entries if entry[0] != name])
            return name
    raise ListError(f"{given}: no source of that name or path in the list")


def source_name(path: str, taken: Collection[str]) -> str:
    """A name for the source at `path` that `taken` lacks: its file name
    without the extension, a number after it where needed."""
    stem = Path(path).name.split(".")[0] or Path(path).name
    base = re.sub(r"[^\w.-]", "-", stem).lstrip(".-") or "source"
    name, number = base, 1
    while name in taken:
        number += 1
        name = f"{base}-{number}"
    return name


def named_paths(paths: Sequence[str]) -> dict[str, str]:
    """Each path of repeated `--db` options by the name `source_name` gives."""
    named: dict[str, str] = {}
    for path in paths:
        named[source_name(path, named)] = path
    return named


def listed_target() -> str | dict[str, str] | None:
    """What the saved list reads: None for llm's logs.db alone (no list), one
    path, or several by name; llm's logs.db is left out where it does not
    exist and others are listed."""
    entries = saved_sources()
    llm = str(default_database_path())
    found = {name: path or llm for name, path in entries}
    if len(found) > 1 and not os.path.exists(llm):
        found = {name: path for name, path in found.items() if path != llm}
    if not found or list(found.values()) == [llm]:
        return None
    return next(iter(found.values())) if len(found) == 1 else found


class SeveralSources(Source):
    """Sources read as one, by name: a tree is the union of its copies in
    them (`merging.merge_reads`), each node's `ORIGIN` the name it came from."""

    def __init__(self, paths: Mapping[str, str | os.PathLike[str]]):
        self.sources: dict[str, Source] = {}
        try:
            for name, given in paths.items():
                self.sources[name] = open_logs(given)
        except DatabaseError as error:
            self.close()
            raise DatabaseError(f"source {name}: {error}") from None
        except BaseException:
            self.close()
            raise
        wholes = "\0".join(sorted(os.path.abspath(path) for path in paths.values()))
        digest = hashlib.sha256(os.fsencode(wholes)).hexdigest()[:16]
        # A name, never a file: the search index of this set of sources.
        self.path = config_directory() / f"sources-{digest}"

    def close(self) -> None:
        for source in self.sources.values():
            source.close()

    @property
    def generations(self) -> list[str]:
        kinds = (
            kind for source in self.sources.values() for kind in source.generations
        )
        return list(dict.fromkeys(kinds))

    def tree_ids(self) -> list[str]:
        found = (tree for source in self.sources.values() for tree in source.tree_ids())
        return list(dict.fromkeys(found))

    def _answers(self, ask: Callable[[Source], str]) -> dict[str, str]:
        """Each source's answer, by name, where it has one."""
        found = {}
        for name, source in self.sources.items():
            with contextlib.suppress(UnknownNode, UnknownConversation):
                found[name] = ask(source)
        return found

    def _one(self, given: str, found: dict[str, str], missing: type[Exception]) -> str:
        if not found:
            raise missing(given)
        if len(set(found.values())) > 1:
            raise HeldBySeveral(given, list(found))
        return next(iter(found.values()))

    def tree_id_of_conversation(self, conversation_id: str) -> str:
        found = self._answers(lambda one: one.tree_id_of_conversation(conversation_id))
        return self._one(conversation_id, found, UnknownConversation)

    def tree_id_of_node(self, node_id: str) -> str:
        found = self._answers(lambda one: one.tree_id_of_node(node_id))
        return self._one(node_id, found, UnknownNode)

    def conversations_of(self, node_ids: list[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for source in self.sources.values():
            found.update(source.conversations_of(node_ids))
        return found

    def id_matches(self, given: str, limit: int) -> list[IdMatch]:
        found = (
            match
            for source in self.sources.values()
            for match in source.id_matches(given, limit)
        )
        return list(dict.fromkeys(found))

    def path_by_links(self, node_id: str) -> list[str] | None:
        found = self._answers(lambda one: one.tree_id_of_node(node_id))
        if len(found) != 1:
            return None
        return self.sources[next(iter(found))].path_by_links(node_id)

    def read_tree(self, tree_id: str) -> TreeRecords:
        held: dict[str, TreeRecords] = {}
        for name, source in self.sources.items():
            with contextlib.suppress(UnknownConversation):
                tree = source.read_tree(tree_id)
                if tree.records:
                    held[name] = tree
        if len(held) != 1:
            return self._merged_tree(tree_id, held)
        name, tree = next(iter(held.items()))
        for record in tree.records:
            record[ORIGIN] = name
        return tree

    def _merged_tree(self, tree_id: str, held: dict[str, TreeRecords]) -> TreeRecords:
        """The copies of one tree in several sources as one; `HeldBySeveral`
        where they are of different apps (different things under one id)."""
        if not held:
            return TreeRecords(tree_id, None, [])
        apps = {
            APPS.get(record["source"], record["source"])
            for tree in held.values()
            for record in tree.records
        }
        if len(apps) > 1:
            raise HeldBySeveral(tree_id, list(held))
        merged = self._merge(
            {name: self.sources[name].read(trees=[tree_id]) for name in held}
        )
        nodes = merged.nodes.astype(object)
        records = cast(
            "list[dict[str, Any]]", nodes.where(nodes.notna(), None).to_dict("records")
        )
        name = merged.names.get(tree_id)
        return TreeRecords(tree_id, name, records, merged.problems, merged.calls)

    def _merge(self, reads: dict[str, ForestRead]) -> ForestRead:
        from convgraph.sources.merging import merge_reads

        for name, read in reads.items():
            read.nodes[ORIGIN] = name
        merged = merge_reads(list(reads.values()))
        merged.nodes[ORIGIN] = merged.nodes[ORIGIN].astype("category")
        return merged

    def read_all(
        self, texts: bool | Collection[str], progress: ProgressCallback
    ) -> ForestRead:
        reads = {
            name: source.read(texts, progress=progress)
            for name, source in self.sources.items()
        }
        return self._merge(reads)

    def text_batches(
        self, progress: ProgressCallback | None = None
    ) -> Iterator[NodeTexts] | None:
        batches = [source.text_batches(progress) for source in self.sources.values()]
        if any(batch is None for batch in batches):
            return None
        return itertools.chain.from_iterable(b for b in batches if b is not None)

    def answers(self, node_ids: list[str]) -> dict[str, str | None]:
        found: dict[str, str | None] = {}
        for source in self.sources.values():
            found |= source.answers(node_ids)
        return found

    def table_stamps(
        self, since: dict[str, Any] | None = None
    ) -> dict[str, Any] | None:
        """Each source's stamp by name (its files' where it has no tables); with
        `since`, the trees logged since in any, `RENEWED` the sources otherwise changed."""
        stamps: dict[str, Any] = {}
        logged: set[str] = set()
        renewed: list[str] = []
        for name, source in self.sources.items():
            old = (since or {}).get(name)
            stamp = source.table_stamps(old) or {"files": _files_stamp(source.path)}
            news = stamp.pop(LOGGED_SINCE, None)
            renewed += [name] if stamp != old and news is None else []
            logged.update(news or ())
            stamps[name] = stamp
        if since is not None:
            stamps[LOGGED_SINCE], stamps[RENEWED] = sorted(logged), renewed
        return stamps

    def read_renewed(
        self,
        names: Collection[str],
        trees: Collection[str],
        progress: ProgressCallback | None = None,
    ) -> ForestRead:
        """The sources `names` read whole, merged with the others' copies of their
        trees and of `trees`: what changed where only those sources did."""
        from convgraph.sources.merging import stable_ulid

        reads = {name: self.sources[name].read(progress=progress) for name in names}
        wanted = set(trees).union(*(read.nodes["tree_id"] for read in reads.values()))
        for read in reads.values():
            roots = read.nodes[read.nodes["parent_id"].isna()]
            roots = roots.fillna({"datetime_utc": ""})
            # Each tree, and the tree `convgraph import` made of it in llm's file.
            for app, tree, time in roots[["source", "tree_id", "datetime_utc"]].values:
                wanted.add(stable_ulid(time or None, APPS.get(app, app), tree))
        others = {name: one for name, one in self.sources.items() if name not in reads}
        for name, source in others.items():
            if held := sorted(wanted.intersection(source.tree_ids())):
                # A file without tables finds one tree by reading from its start.
                whole = len(held) > 1 and source.conn is None
                read = source.read(trees=None if whole else held, progress=progress)
                read.nodes = read.nodes[read.nodes["tree_id"].isin(held)]
                reads[name] = read
        return self._merge(reads)


def _files_stamp(path: Path) -> list[list[Any]]:
    """Each file's name, size and time: what tells an export changed."""
    found = []
    for file in sorted(path.rglob("*")) if path.is_dir() else [path]:
        with contextlib.suppress(OSError):
            status = file.stat()
            found.append([os.fsdecode(file), status.st_size, status.st_mtime_ns])
    return found
