"""The tantivy index `convgraph search` ranks with: one document a node
(`convgraph.search.documents`: its texts, depth and branch mark), kept as a cache and
brought up to date before each search."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convgraph.contract import ORIGIN
from convgraph.errors import DatabaseError, UnknownConversation
from convgraph.search.documents import (
    FIELDS,
    NodeColumns,
    RepeatedIds,
    add_documents,
    batched_documents,
    forest_documents,
)
from convgraph.search.stamps import changed_trees, content_stamp, quick_stamp, stored
from convgraph.search.text import analyzer
from convgraph.sources.several import RENEWED, SeveralSources
from convgraph.sources.source import Source, TextsWithForest

if TYPE_CHECKING:
    import tantivy

    from convgraph.sources.source import ProgressCallback

#: The layout of the index and its text rules: another is built again.
INDEX_VERSION = 2
#: The end of an index directory's name.
INDEX_SUFFIX = ".convgraph-search"
#: The file that says what the index was built from.
META_FILE = "convgraph-search.json"
#: The name the index's analyzer is registered under.
TOKENIZER = "convgraph"
#: The writer's memory for documents not yet written (tantivy's heap).
WRITER_HEAP = 200_000_000
#: How long one waits for another process to let go of the index (seconds;
#: `WAIT_VARIABLE` sets another bound), and after how long the wait is said.
LOCK_WAIT = 300.0
WAIT_VARIABLE = "CONVGRAPH_INDEX_WAIT"
SAY_AFTER = 0.5


def cache_directory() -> Path:
    """The directory of the search indexes in the user's cache."""
    cache = os.environ.get("XDG_CACHE_HOME") or ""
    base = Path(cache) if os.path.isabs(cache) else Path.home() / ".cache"
    return base / "convgraph" / "search"


def _identity(path: Path) -> tuple[int, int]:
    """The device and inode of the file (0, 0 where it cannot be seen)."""
    try:
        status = path.stat()
    except OSError:
        return (0, 0)
    return (status.st_dev, status.st_ino)


def _key(source_path: Path) -> str:
    """An index directory's name but its identity: the file's name, a hash
    of its path."""
    import hashlib

    digest = hashlib.sha256(os.fsencode(source_path)).hexdigest()[:16]
    name = re.sub(r"[^\w.-]", "_", source_path.name)[:60]
    return f"{name}-{digest}"


def index_path(
    source_path: str | os.PathLike[str], directory: str | os.PathLike[str] | None = None
) -> Path:
    """The index directory of the file at `source_path`, in `directory`
    (else the cache), named by the file's absolute path and identity."""
    source = Path(os.path.abspath(source_path))
    device, inode = _identity(source)
    base = Path(directory) if directory is not None else cache_directory()
    return base / f"{_key(source)}-{device:x}-{inode:x}{INDEX_SUFFIX}"


def _writable(directory: Path) -> bool:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(directory, os.W_OK | os.X_OK)


def schema() -> tantivy.Schema:
    """The documents: a node's texts (`FIELDS`), its id, tree, model, source
    and origin (exact terms), time, moment (for time filters), depth, branch."""
    import tantivy

    builder = tantivy.SchemaBuilder()
    for name in FIELDS:
        builder.add_text_field(name, stored=True, tokenizer_name=TOKENIZER)
    for name in ("id", "tree", "model", "source", ORIGIN):
        # The tree is a fast field too: a filter counts the trees of the
        # nodes it keeps by tantivy's terms aggregation over it.
        builder.add_text_field(
            name,
            stored=True,
            tokenizer_name="raw",
            index_option="basic",
            fast=name == "tree",
        )
    builder.add_bytes_field("time", stored=True)
    builder.add_integer_field("moment", indexed=True, fast=True)
    builder.add_unsigned_field("depth", stored=True)
    builder.add_unsigned_field("branch", stored=True, indexed=True)
    return builder.build()


@dataclass
class SearchIndex:
    """An index brought up to date with its file (`open_index`), held (a shared lock)
    until `close`: `models` every model name its nodes have held (for a filter's globs),
    `built` what the opening did: "" (it was current), "updated" or "built"."""

    index: tantivy.Index
    searcher: tantivy.Searcher
    path: Path
    models: list[str]
    built: str
    _lock: Any = None

    def close(self) -> None:
        """Let go of the index."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def __enter__(self) -> SearchIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def damage_errors() -> tuple[type[BaseException], ...]:
    """What a damaged index raises when opened or read: tantivy's errors,
    and pyo3's PanicException (a BaseException) for a Rust panic."""
    import tantivy

    errors: list[type[BaseException]] = [ValueError, OSError, RuntimeError]
    panic = getattr(tantivy, "PanicException", None)
    with contextlib.suppress(Exception):
        import pyo3_runtime  # type: ignore[import-not-found]

        panic = pyo3_runtime.PanicException
    if panic is not None:
        errors.append(panic)
    return tuple(errors)


def open_index(
    logs: Source,
    directory: str | os.PathLike[str] | None = None,
    progress: ProgressCallback | None = None,
    notice: Callable[[str], None] | None = None,
    rebuild: bool = False,
) -> SearchIndex:
    """The index of `logs` in `directory` (else the cache), built on first use and
    brought up to date with the file, held until closed; `rebuild` builds it anew
    whatever its stamps say. Raises `DatabaseError` (the index can be written neither
    where asked nor in the cache)."""
    say = notice or (lambda line: None)
    path = index_path(logs.path, directory)
    # tantivy writes beside an index it opens (its lock of the meta file), so
    # a place that cannot be written serves none: the cache does.
    if not _writable(path.parent) and directory is not None:
        say(f"cannot write in {path.parent}: the search index goes to the cache")
        path = index_path(logs.path)
    if not _writable(path.parent):
        raise DatabaseError(f"cannot write the search index in {path.parent}")
    for attempt in range(2):
        again = rebuild or attempt > 0
        try:
            opened = _open_current(logs, path, progress, say, rebuild=again)
            try:
                opened.searcher = opened.index.searcher()
                opened.searcher.num_docs  # noqa: B018 (reads the segments' meta)
            except damage_errors() as error:
                opened.close()
                raise _Damaged(str(error)) from None
        except _Damaged as error:
            if attempt:
                raise DatabaseError(
                    f"the search index {path} cannot be read: {error}"
                ) from None
            say(f"the search index {path} is damaged: building it again")
            continue
        if opened.built == "built":
            say(f"search index written to {path}")
        return opened
    raise AssertionError("unreachable")


class _Damaged(Exception):
    """The index's files could not be opened."""


def _lock(path: Path, exclusive: bool, say: Callable[[str], None]) -> Any:
    """The index's lock file, locked (shared or exclusive); closing it lets go. A wait
    is said after `SAY_AFTER` seconds; `DatabaseError` after `LOCK_WAIT`, or at once
    where every process holding the lock is stopped (it would wait for a user)."""
    try:
        handle = open(path.with_name(path.name + ".lock"), "a+b")  # noqa: SIM115
    except OSError as error:
        raise DatabaseError(
            f"cannot write the search index {path}: {error.strerror}"
        ) from None
    mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    bound = LOCK_WAIT
    with contextlib.suppress(ValueError):
        bound = min(LOCK_WAIT, float(os.environ.get(WAIT_VARIABLE) or LOCK_WAIT))
    started = time.monotonic()
    said = False
    try:
        while True:
            with contextlib.suppress(BlockingIOError):
                fcntl.flock(handle, mode | fcntl.LOCK_NB)
                return handle
            holders = _holders(os.fstat(handle.fileno()).st_ino)
            pids = " ".join(map(str, holders))
            named = f"process {pids}" if holders else "a process"
            waited = time.monotonic() - started
            if holders and all(holders.values()):
                raise DatabaseError(
                    f"the search index {path} is held by {named}, which is stopped:"
                    f" continue it (fg, or kill -CONT {pids}) and search again, or"
                    " search with --index DIR"
                )
            if waited > bound:
                raise DatabaseError(
                    f"the search index {path} is still held by {named} after"
                    f" {bound:g} s: search again when it is done, or with --index DIR"
                )
            if waited >= SAY_AFTER and not said:
                say(f"waiting for {named} to let go of the search index {path}")
                said = True
            time.sleep(0.05)
    except BaseException:
        handle.close()
        raise


def _holders(inode: int) -> dict[int, bool]:
    """The other processes holding a lock of the file of `inode`, each with whether
    it is stopped (Ctrl-Z, SIGSTOP): Linux's /proc, none known elsewhere."""
    found: dict[int, bool] = {}
    with contextlib.suppress(OSError, ValueError, IndexError):
        for fields in map(str.split, Path("/proc/locks").read_text().splitlines()):
            if fields[1:2] == ["FLOCK"] and fields[5].endswith(f":{inode}"):
                stat = Path(f"/proc/{fields[4]}/stat").read_text(errors="replace")
                found[int(fields[4])] = stat.rpartition(")")[2].split()[0] in "Tt"
    found.pop(os.getpid(), None)
    return found


def read_meta(path: Path) -> dict[str, Any]:
    try:
        meta = json.loads((path / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def _current_meta(path: Path, quick: list[Any]) -> dict[str, Any] | None:
    """The index's meta where the index is of this layout and its quick
    stamp holds, else None."""
    meta = read_meta(path)
    if meta.get("version") == INDEX_VERSION and meta.get("quick") == quick:
        return meta
    return None


def _open_current(
    logs: Source,
    path: Path,
    progress: ProgressCallback | None,
    say: Callable[[str], None],
    rebuild: bool,
) -> SearchIndex:
    """The index at `path`, current, under a shared lock; built or updated
    first (under the exclusive lock) where it is not."""
    quick = quick_stamp(logs)
    lock = _lock(path, False, say)
    try:
        meta = None if rebuild else _current_meta(path, quick)
        built = ""
        if meta is None:
            lock.close()
            lock = _lock(path, True, say)
            # Another process may have built it while this one waited.
            meta = None if rebuild else _current_meta(path, quick)
            if meta is None:
                meta, built = _brought_up_to_date(logs, path, progress, say, rebuild)
            fcntl.flock(lock, fcntl.LOCK_SH)
        try:
            index = _tantivy_index(path)
        except damage_errors() as error:
            raise _Damaged(str(error)) from None
        models = meta.get("models", [])
        return SearchIndex(index, None, path, models, built, lock)  # type: ignore[arg-type]
    except BaseException:
        lock.close()
        raise


def _tantivy_index(path: Path) -> tantivy.Index:
    import tantivy

    index = tantivy.Index.open(str(path))
    index.register_tokenizer(TOKENIZER, analyzer())
    # Opened after every update, so nothing to follow; the default policy's
    # thread would watch meta.json and take its lock in a removed index.
    index.config_reader("Manual")
    return index


def _brought_up_to_date(
    logs: Source,
    path: Path,
    progress: ProgressCallback | None,
    say: Callable[[str], None],
    rebuild: bool,
) -> tuple[dict[str, Any], str]:
    """Under the exclusive lock: the index updated where only new rows came,
    else built anew; its new meta, and "updated" or "built"."""
    # The stamps first: a commit during the read shows in the next ones.
    quick = quick_stamp(logs)
    meta = read_meta(path)
    counted = content_stamp(logs, meta.get("content") or None)
    content = stored(counted)
    if not rebuild and meta and meta.get("version") != INDEX_VERSION:
        say(f"the search index {path} is of another version: building it again")
    elif not rebuild and meta.get("version") == INDEX_VERSION:
        if meta.get("content") == content:
            meta["quick"] = quick  # written, but nothing indexed changed
            write_meta(path, meta)
            return meta, "updated"
        trees = changed_trees(logs, meta.get("content"), counted)
        if trees is not None:
            with contextlib.suppress(UnknownConversation):
                updated = _updated(logs, path, meta, trees, quick, counted, progress)
                return updated, "updated"
    elif not rebuild and path.exists():
        say(f"{path} is no search index of convgraph's: building it again")
    return _build(logs, path, quick, content, progress), "built"


def write_meta(path: Path, meta: dict[str, Any]) -> None:
    """The meta file replaced at once (a reader sees the old or the new)."""
    partial = path / f"{META_FILE}.{os.getpid()}.partial"
    try:
        partial.write_text(json.dumps(meta), encoding="utf-8")
        os.replace(partial, path / META_FILE)
    finally:
        partial.unlink(missing_ok=True)


def _add_every_node(
    logs: Source, writer: Any, progress: ProgressCallback | None
) -> set[str]:
    """Every node of `logs` added to `writer` as its document; the model names the nodes
    hold. Where the reader gives the texts apart (`Source.text_batches`), the forest is
    read without them first, and its structure kept in columns before the texts come,
    a batch at a time: the two reads' peaks never meet."""
    from convgraph.model.forest import Forest

    layout = schema()
    batches = logs.text_batches()
    if batches is not None:
        columns = NodeColumns(Forest.read(logs, text=False, progress=progress))
        try:
            add_documents(writer, batched_documents(columns, batches, progress), layout)
            return columns.models
        except (RepeatedIds, TextsWithForest):
            # Ids that are no key (the forest's rule decides which row is the
            # node), or turns of another shape. Nothing was committed: afresh.
            writer.rollback()
            del columns
    forest = Forest.read(logs, text=True, progress=progress)
    columns = NodeColumns(forest)
    add_documents(writer, forest_documents(forest, columns, progress), layout)
    return columns.models


def _writer(index: Any) -> Any:
    """A writer of the index: an indexing thread a core, at most four (the
    documents are made meanwhile; on two cores two threads beat one)."""
    threads = max(1, min(4, os.cpu_count() or 1))
    return index.writer(WRITER_HEAP, threads)


def _build(
    logs: Source,
    path: Path,
    quick: list[Any],
    content: dict[str, Any],
    progress: ProgressCallback | None,
) -> dict[str, Any]:
    """The whole index, written apart and moved into place; its meta."""
    import tantivy

    for stale in path.parent.glob(f"{path.name}.*.partial"):
        shutil.rmtree(stale, ignore_errors=True)  # a killed writer's
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    old = path.with_name(f"{path.name}.{os.getpid()}.old")
    try:
        partial.mkdir()
        index = tantivy.Index(schema(), path=str(partial), reuse=False)
        index.register_tokenizer(TOKENIZER, analyzer())
        writer = _writer(index)
        models = _add_every_node(logs, writer, progress)
        if progress:
            progress("writing the search index", 0, None)
        writer.commit()
        writer.wait_merging_threads()
        meta = {
            "version": INDEX_VERSION,
            "file": os.fsdecode(os.path.abspath(logs.path)),
            "quick": quick,
            "content": content,
            "models": sorted(models),
        }
        write_meta(partial, meta)
        if path.exists():
            os.replace(path, old)
        os.replace(partial, path)
        # Indexes of files that were at this path before (other identities).
        for other in path.parent.glob(f"{_key(Path(os.path.abspath(logs.path)))}-*"):
            if other.name.endswith(INDEX_SUFFIX) and other != path:
                shutil.rmtree(other, ignore_errors=True)
                other.with_name(other.name + ".lock").unlink(missing_ok=True)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    return meta


def _updated(
    logs: Source,
    path: Path,
    meta: dict[str, Any],
    trees: set[str],
    quick: list[Any],
    counted: dict[str, Any],
    progress: ProgressCallback | None = None,
) -> dict[str, Any]:
    """The documents of `trees` and of the trees the sources `counted` names `RENEWED`
    held or hold, read again in place of their old ones; the new meta. Raises
    `UnknownConversation` where a tree cannot be read by name (then it is built)."""
    import tantivy

    from convgraph.model.forest import Forest
    from convgraph.sources.notes import read_notes

    renewed = counted.get(RENEWED, [])
    if trees or renewed:
        index = _tantivy_index(path)
        if renewed and isinstance(logs, SeveralSources):
            held = tantivy.Query.term_set_query(index.schema, ORIGIN, renewed)
            trees |= set(trees_of(index.searcher(), held))
            r = logs.read_renewed(renewed, trees, progress)
            forest = Forest(r.nodes, r.names, r.problems, read_notes(logs), r.calls)
            trees |= set(forest.tree_ids)
        else:
            forest = Forest.read(
                logs, text=True, conversation_ids=sorted(trees), progress=progress
            )
        writer = _writer(index)
        # The ids too: a tree named anew leaves documents under the old name.
        for tree in trees:
            writer.delete_documents_by_term("tree", tree)
        for node_id in forest.nodes["id"].tolist():
            writer.delete_documents_by_term("id", str(node_id))
        columns = NodeColumns(forest)
        add_documents(writer, forest_documents(forest, columns), schema())
        models = columns.models
        # The meta says "not current" until the commit is made: a process
        # killed between the two builds again rather than trusting it.
        write_meta(path, {**meta, "quick": None, "content": None})
        writer.commit()
        writer.wait_merging_threads()
        meta["models"] = sorted(set(meta.get("models", [])) | models)
    meta.update(quick=quick, content=stored(counted))
    write_meta(path, meta)
    return meta


def trees_of(searcher: tantivy.Searcher, query: tantivy.Query) -> list[str]:
    """The trees of the documents `query` finds (tantivy's terms aggregation)."""
    size = max(1, searcher.num_docs)
    found = searcher.aggregate(
        query, {"trees": {"terms": {"field": "tree", "size": size}}}
    )
    return [str(bucket["key"]) for bucket in found["trees"]["buckets"]]
