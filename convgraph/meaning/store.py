"""Vectors stored once: by (model, content hash) in an SQLite file of the cache,
so no text is embedded twice, and per source file its node vectors ready (memory
mapped), stamped as the search index is and made again from the store when the
file changes."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import compress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convgraph.errors import UnknownConversation
from convgraph.search.index import cache_directory, index_path, read_meta, write_meta
from convgraph.search.stamps import changed_trees, content_stamp, quick_stamp, stored
from convgraph.sources.several import RENEWED
from convgraph.sources.source import ProgressCallback, Source
from convgraph.text import excerpt

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from convgraph.logs import Logs

#: The layout of the ready vectors: another is made again.
VERSION = 2
#: The texts of a node that are embedded, each a row.
ROLES = ("prompt", "response")
#: Texts embedded between two commits of the store; hashes asked at once;
#: nodes read from the table at once; a snippet's width.
CHUNK = 8192
ASKED = 900
NODES = 1 << 16
SNIPPET = 120
#: Above this many rows the search is in two steps (`coarse`): float16 rows
#: are made float32 for BLAS, the most of an exact scan's time.
EXACT_ROWS = 50_000
COARSE_DIMENSIONS = 64
EMBEDDING = "embedding texts"
STRINGS = ("ids", "tree_ids", "roles", "snippets")


def meaning_directory() -> Path:
    """Where the vectors live: beside the search indexes in convgraph's cache."""
    return cache_directory().parent / "meaning"


def _name(model_id: str) -> str:
    return re.sub(r"[^\w.-]", "_", model_id)


class Strings(Sequence[str]):
    """Strings kept as one UTF-8 blob and their ends, read one at a time."""

    def __init__(self, blob: Any, ends: np.ndarray) -> None:
        self.blob, self.ends = blob, ends

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, row: Any) -> Any:
        row = range(len(self))[row]
        if isinstance(row, range):
            return [self[one] for one in row]
        start = int(self.ends[row - 1]) if row else 0
        return bytes(self.blob[start : int(self.ends[row])]).decode()

    def rows_of(self, value: str) -> list[int]:
        """The rows that hold `value`, found in the blob."""
        import numpy as np

        whole, wanted, found = bytes(self.blob), value.encode(), []
        at = whole.find(wanted)
        while at >= 0:
            row = int(np.searchsorted(self.ends, at + len(wanted)))
            if row < len(self) and self[row] == value:
                found.append(row)
            at = whole.find(wanted, at + 1)
        return found

    def __iter__(self) -> Iterator[str]:
        whole, start = bytes(self.blob), 0
        for end in self.ends.tolist():
            yield whole[start:end].decode()
            start = end


@dataclass
class NodeVectors:
    """A forest's texts as rows: row i is the prompt or the response (`roles[i]`)
    of node `ids[i]` in tree `tree_ids[i]`, for every node with that text (the
    same two roles on every source); `matrix` float16, rows L2-normalised;
    `active` each row's branch mark, `snippets` its text on one line; `coarse`
    and `basis` the rows projected for a first pass, on large forests only."""

    ids: Sequence[str]
    tree_ids: Sequence[str]
    roles: Sequence[str]
    matrix: np.ndarray
    active: np.ndarray | None = None
    snippets: Sequence[str] = ()
    coarse: np.ndarray | None = None
    basis: np.ndarray | None = None


def _normalised(vectors: np.ndarray) -> np.ndarray:
    import numpy as np

    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1)


def _embedded(model: Any, texts: list[str]) -> np.ndarray:
    """The texts through `model`: WordLlama's arrays as they are, any other
    llm model through its batches."""
    import numpy as np

    from convgraph.meaning.model import WordLlama, wordllama_vectors

    if isinstance(model, WordLlama):
        return _normalised(wordllama_vectors(texts))
    return _normalised(np.array(list(model.embed_multi(texts)), dtype=np.float32))


def digest(text: str) -> bytes:
    """The store's key of a text."""
    encoded = text.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(encoded, digest_size=16).digest()


def _store(model: Any) -> sqlite3.Connection:
    """The store of `model`'s vectors, opened (made where missing)."""
    meaning_directory().mkdir(parents=True, exist_ok=True)
    path = meaning_directory() / f"{_name(model.model_id)}.db"
    db = sqlite3.connect(path, timeout=60)
    db.execute("PRAGMA journal_mode = WAL")  # readers never wait for a writer
    db.execute(
        "CREATE TABLE IF NOT EXISTS vectors (hash BLOB PRIMARY KEY, vector BLOB)"
    )
    return db


def _first_rows(keys: Sequence[bytes]) -> dict[bytes, int]:
    """Each key's first row."""
    return dict(zip(reversed(keys), reversed(range(len(keys))), strict=True))


def embed_missing(
    model: Any,
    keys: Sequence[bytes],
    texts: Callable[[list[int]], list[str]],
    progress: ProgressCallback | None = None,
) -> None:
    """The texts whose `keys` `model`'s store lacks embedded and kept; `texts`
    gives the texts of rows."""
    import numpy as np

    first = _first_rows(keys)
    with contextlib.closing(_store(model)) as db:
        held = {found for (found,) in _asked(db, "hash", list(first))}
        missing = [key for key in first if key not in held]
        del held
        for start in range(0, len(missing), CHUNK):
            if progress:
                progress(EMBEDDING, start, len(missing))
            chunk = missing[start : start + CHUNK]
            made = _embedded(model, texts([first[key] for key in chunk]))
            pairs = zip(chunk, map(bytes, made.astype(np.float16)), strict=True)
            db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", pairs)
            db.commit()


def stored_vectors(model: Any, keys: Sequence[bytes]) -> np.ndarray:
    """The vectors (float16, normalised) of the texts whose `keys` are given, from
    `model`'s store (`embed_missing` first)."""
    import numpy as np

    first, matrix = _first_rows(keys), None
    with contextlib.closing(_store(model)) as db:
        for key, blob in _asked(db, "hash, vector", list(first)):
            vector = np.frombuffer(blob, dtype=np.float16)
            if matrix is None:
                matrix = np.zeros((len(keys), len(vector)), dtype=np.float16)
            matrix[first[key]] = vector
    if matrix is None:
        return np.zeros((len(keys), 0), dtype=np.float16)
    rows = np.fromiter((first[key] for key in keys), dtype=np.int64, count=len(keys))
    again = np.flatnonzero(rows != np.arange(len(keys)))
    matrix[again] = matrix[rows[again]]  # a text met again: its first row's vector
    return matrix


def _asked(db: sqlite3.Connection, columns: str, keys: list[bytes]) -> Iterator[Any]:
    """The store's rows of `keys`, `ASKED` keys a statement."""
    for start in range(0, len(keys), ASKED):
        asked = keys[start : start + ASKED]
        marks = ",".join("?" * len(asked))
        yield from db.execute(
            f"SELECT {columns} FROM vectors WHERE hash IN ({marks})", asked
        )


def embed_texts(texts: Sequence[str], model: str | None = None) -> np.ndarray:
    """The texts' vectors, float32 of shape (n, d), rows L2-normalised, through
    the store of `model` (an llm embedding model; WordLlama when None). Raises
    ConvgraphError for an unknown model or a missing extra."""
    from convgraph.meaning.model import embedding_model

    keys, chosen = [digest(text) for text in texts], embedding_model(model)
    embed_missing(chosen, keys, lambda rows: [texts[row] for row in rows])
    return _normalised(stored_vectors(chosen, keys))


def node_vectors(
    logs: Logs | Source,
    model: str | None = None,
    progress: ProgressCallback | None = None,
) -> NodeVectors:
    """Every node text of the forest as a row (`NodeVectors`), hidden nodes left
    out unless the `Logs` keeps them; made from the store and kept ready per file
    until its stamps change. Raises ConvgraphError (unknown model, missing extra)."""
    from convgraph.meaning.model import embedding_model

    source = logs if isinstance(logs, Source) else logs.source
    hidden = not isinstance(logs, Source) and logs.hidden
    chosen = embedding_model(model)
    ready = index_path(source.path, meaning_directory())
    ready = ready.with_suffix(f".{_name(chosen.model_id)}{'.hidden' * hidden}")
    meta = read_meta(ready)
    quick = quick_stamp(source)
    if meta.get("version") == VERSION and meta.get("quick") == quick:
        return _load(ready)
    counted = content_stamp(source, meta.get("content") or None)
    content, meta = stored(counted), {**meta, "quick": quick}
    current = meta.get("version") == VERSION and not counted.get(RENEWED)
    trees = changed_trees(source, meta.get("content"), counted) if current else None
    if current and (trees == set() or meta.get("content") == content):
        write_meta(ready, {**meta, "content": content})  # nothing they hold changed
        return _load(ready)
    try:
        made = _made(source, hidden, chosen, progress, trees)
    except UnknownConversation:  # a tree gone: all read again
        made, trees = _made(source, hidden, chosen, progress), None
    if trees is not None:  # the trees logged in or hidden since, read again
        made = _joined(_load(ready), made, trees)
    _write(ready, made, {**meta, "version": VERSION, "content": content})
    return _load(ready)


def _texts_at(nodes: pd.DataFrame, at: list[int], rows: list[int]) -> list[str]:
    """The texts of `rows`, each at `at[row]`: a node's row twice, and its role."""
    import numpy as np

    places = np.array([at[row] for row in rows])
    found = np.empty(len(rows), dtype=object)
    for number, role in enumerate(ROLES):
        mine = places % 2 == number
        found[mine] = nodes[role].take(places[mine] // 2).tolist()
    return list(found)


def _joined(old: NodeVectors, new: NodeVectors, trees: set[str]) -> NodeVectors:
    """`old`'s rows of the trees not in `trees`, then `new`'s."""
    import numpy as np

    keep = np.fromiter((tree not in trees for tree in old.tree_ids), bool)
    lists = [
        [*compress(getattr(old, name), keep), *getattr(new, name)] for name in STRINGS
    ]
    matrix = np.concatenate([old.matrix[keep], new.matrix])
    active = np.concatenate([np.asarray(old.active)[keep], np.asarray(new.active)])
    ids, tree_ids, roles, snippets = lists
    return NodeVectors(ids, tree_ids, roles, matrix, active, snippets)


def _made(
    source: Source,
    hidden: bool,
    model: Any,
    progress: ProgressCallback | None,
    only: set[str] | None = None,
) -> NodeVectors:
    """The node vectors of the file (or of the trees `only` names) read now; its
    texts held as Arrow's, a chunk at a time in Python, until embedded."""
    import numpy as np

    from convgraph.model.forest import Forest

    named = sorted(only) if only is not None else None
    nodes = Forest.read(source, True, named, progress, ROLES, hidden).nodes
    nodes = nodes[["id", "tree_id", "active", *ROLES]]
    columns = [nodes["id"], nodes["tree_id"].astype(str), *(nodes[r] for r in ROLES)]
    ids, trees, roles, snippets, keys, at = [], [], [], [], [], []
    for start in range(0, len(nodes), NODES):
        chunk = [column.iloc[start : start + NODES].tolist() for column in columns]
        for row, (node, tree, *texts) in enumerate(zip(*chunk, strict=True)):
            for number, text in enumerate(texts):
                if isinstance(text, str) and text and not text.isspace():
                    ids.append(node)
                    trees.append(tree)
                    roles.append(ROLES[number])
                    snippets.append(excerpt(text, SNIPPET))
                    keys.append(digest(text))
                    at.append((start + row) * 2 + number)

    embed_missing(model, keys, functools.partial(_texts_at, nodes, at), progress)
    active = nodes["active"].to_numpy(dtype=bool)[np.array(at, dtype=np.int64) // 2]
    del nodes, at  # the texts, before the matrix is made
    return NodeVectors(ids, trees, roles, stored_vectors(model, keys), active, snippets)


def _write(ready: Path, vectors: NodeVectors, meta: dict[str, Any]) -> None:
    """The ready vectors written apart and moved into place at once."""
    import numpy as np

    partial = ready.with_name(f"{ready.name}.{os.getpid()}.partial")
    old = ready.with_name(f"{ready.name}.{os.getpid()}.old")
    try:
        partial.mkdir(parents=True)
        for name in STRINGS:
            encoded = [text.encode() for text in getattr(vectors, name)]
            (partial / f"{name}.bin").write_bytes(b"".join(encoded))
            ends = np.cumsum([len(one) for one in encoded], dtype=np.int64)
            np.save(partial / f"{name}.npy", ends)
        np.save(partial / "matrix.npy", vectors.matrix)
        np.save(partial / "active.npy", np.asarray(vectors.active, dtype=bool))
        if len(vectors.matrix) > EXACT_ROWS:
            _save_coarse(partial, vectors.matrix)
        write_meta(partial, meta)
        if ready.exists():
            os.replace(ready, old)
        os.replace(partial, ready)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)


def _save_coarse(directory: Path, matrix: np.ndarray) -> None:
    """The rows projected on their `COARSE_DIMENSIONS` main directions (of a
    sample), float32: the first pass of `nearest`."""
    import numpy as np

    count = min(len(matrix), 50_000)
    sample = np.random.default_rng(0).choice(len(matrix), count, replace=False)
    picked = matrix[np.sort(sample)].astype(np.float32)
    basis = np.linalg.eigh(picked.T @ picked)[1][:, ::-1][:, :COARSE_DIMENSIONS]
    basis = np.ascontiguousarray(basis, dtype=np.float32)
    coarse = np.lib.format.open_memmap(
        directory / "coarse.npy", "w+", np.float32, (len(matrix), len(basis.T))
    )
    for start in range(0, len(matrix), NODES):
        coarse[start : start + NODES] = (
            matrix[start : start + NODES].astype(np.float32) @ basis
        )
    coarse.flush()
    np.save(directory / "basis.npy", basis)


def _load(ready: Path) -> NodeVectors:
    import numpy as np

    def array(name: str) -> Any:
        path = ready / f"{name}.npy"
        return np.load(path, mmap_mode="r") if path.exists() else None

    def strings(name: str) -> Strings:
        blob = ready / f"{name}.bin"
        return Strings(
            np.memmap(blob, mode="r") if blob.stat().st_size else b"", array(name)
        )

    ids, trees, roles, snippets = map(strings, STRINGS)
    matrix, active, coarse, basis = map(array, ("matrix", "active", "coarse", "basis"))
    return NodeVectors(ids, trees, roles, matrix, active, snippets, coarse, basis)
