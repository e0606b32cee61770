"""Vectors stored once: by (model, content hash) in an SQLite file of the cache,
so no text is embedded twice, and per source file its node vectors ready (files
mapped or read), stamped as the search index is: written a batch of texts at a
time, and when llm logs more, the other trees' rows copied and the changed trees'
appended."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import mmap
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
from convgraph.sources.source import (
    NodeTexts,
    ProgressCallback,
    Source,
    TextsWithForest,
)
from convgraph.text import excerpt

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from convgraph.logs import Logs

#: The layout of the ready vectors: another is made again.
VERSION = 3
#: The texts of a node that are embedded, each a row.
ROLES = ("prompt", "response")
#: Texts embedded between two commits of the store; hashes asked at once;
#: nodes read from the table at once; a snippet's width.
CHUNK = 8192
ASKED = 900
NODES = 1 << 16
SNIPPET = 120
#: Rows asked of a file are read one at a time when fewer than one in this many.
SCATTERED = 64
#: Above this many rows the search is in two steps (`coarse`): float16 rows
#: are made float32 for BLAS, the most of an exact scan's time.
EXACT_ROWS = 50_000
COARSE_DIMENSIONS = 64
EMBEDDING = "embedding texts"
#: The ready files: strings (bytes and ends), a row's small columns (their
#: types after the strings' ends), the files appended to.
STRINGS, COLUMNS = ("ids", "snippets"), ("trees", "roles", "active")
KINDS = ("int64", "int64", "int32", "int8", "bool")
BLOBS = (*STRINGS, "matrix", "coarse")


def meaning_directory() -> Path:
    """Where the vectors live: beside the search indexes in convgraph's cache."""
    return cache_directory().parent / "meaning"


def _name(model_id: str) -> str:
    return re.sub(r"[^\w.-]", "_", model_id)


class Strings(Sequence[str]):
    """Strings kept as one UTF-8 blob (bytes or a mapped file) and their ends,
    read one at a time."""

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

        wanted, found = value.encode(), []
        at = self.blob.find(wanted) if wanted else -1
        while at >= 0:
            row = int(np.searchsorted(self.ends, at + len(wanted)))
            if row < len(self) and self[row] == value:
                found.append(row)
            at = self.blob.find(wanted, at + 1)
        return found

    def __iter__(self) -> Iterator[str]:
        whole, start = bytes(self.blob[:]), 0
        for end in self.ends.tolist():
            yield whole[start:end].decode()
            start = end


class Coded(Sequence[str]):
    """Strings of few values (trees, roles): a code a row, and the `names`."""

    def __init__(self, codes: np.ndarray, names: Sequence[str]) -> None:
        self.codes, self.names = codes, names

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, row: Any) -> Any:
        if isinstance(row, slice):
            return [self.names[code] for code in self.codes[row].tolist()]
        return self.names[int(self.codes[row])]

    def __iter__(self) -> Iterator[str]:
        names = list(self.names)
        return iter([names[code] for code in self.codes.tolist()])


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
    coarse: np.ndarray | Rows | None = None
    basis: np.ndarray | None = None
    #: `matrix`'s file, whose few rows a query wants are read, not mapped.
    file: Rows | None = None

    def rows(self, positions: np.ndarray) -> np.ndarray:
        """The rows of `matrix` at `positions` (increasing), read from its file
        if it has one."""
        return (self.matrix if self.file is None else self.file)[positions]

    def chunks(self, positions: np.ndarray) -> Iterator[tuple[slice, np.ndarray]]:
        """`rows(positions)` a chunk at a time (see `in_chunks`)."""
        return in_chunks(self.matrix if self.file is None else self.file, positions)


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


def stored_vectors(
    model: Any,
    keys: Sequence[bytes],
    texts: Sequence[str],
    progress: ProgressCallback | None = None,
) -> np.ndarray:
    """The vectors (float16, normalised) of `texts` (their `keys`) from `model`'s
    store, those it lacks embedded and kept first."""
    import numpy as np

    wanted = dict(zip(keys, texts, strict=True))
    with contextlib.closing(_store(model)) as db:
        found = dict(_asked(db, "hash, vector", list(wanted)))
        missing = [key for key in wanted if key not in found]
        for start in range(0, len(missing), CHUNK):
            if progress:
                progress(EMBEDDING, start, len(missing))
            chunk = missing[start : start + CHUNK]
            made = _embedded(model, [wanted[key] for key in chunk]).astype(np.float16)
            pairs = list(zip(chunk, map(bytes, made), strict=True))
            db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", pairs)
            db.commit()
            found.update(pairs)
    width = len(next(iter(found.values()), b"")) // 2
    joined = b"".join(found[key] for key in keys)
    return np.frombuffer(joined, np.float16).reshape(len(keys), width)


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
    return _normalised(stored_vectors(chosen, keys, texts))


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
    meta = {**meta, "version": VERSION, "content": content}
    fill = functools.partial(_fill, source=source, hidden=hidden, model=chosen)
    try:  # the trees logged in or hidden since read again, after the others' rows
        _write(ready, meta, functools.partial(fill, progress=progress, only=trees))
    except UnknownConversation:  # a tree gone: all read again
        _write(ready, meta, functools.partial(fill, progress=progress))
    return _load(ready)


class _Repeated(Exception):
    """A batch named a node twice: the forest's read decides which row it is."""


def _fill(
    into: _Ready,
    old: Path,
    apart: bool,
    source: Source,
    hidden: bool,
    model: Any,
    progress: ProgressCallback | None,
    only: set[str] | None = None,
) -> None:
    """`old`'s rows of the trees not in `only` copied `into` the new files, then
    those of the trees `only` names (all when None) read a batch at a time: from
    `text_batches` when `apart` and the reader gives them, else with the forest."""
    import numpy as np
    import pandas as pd

    from convgraph.model.forest import Forest

    if only is not None:
        held = list(_strings(old, "tree_names"))
        changed = into.names(held)[[name in only for name in held]]
        _copy(old, into, ~np.isin(np.load(old / "trees.npy"), changed))
    batches = source.text_batches(progress) if apart and only is None else None
    named = None if only is None else sorted(only)
    nodes = Forest.read(source, batches is None, named, progress, ROLES, hidden).nodes
    codes, names = pd.factorize(nodes["tree_id"].astype(str))
    trees, active = into.names(list(names))[codes], nodes["active"].to_numpy(bool)
    if batches is None:
        parts = (nodes.iloc[at : at + NODES] for at in range(0, len(nodes), NODES))
        batches = (NodeTexts(part["id"].tolist(), {r: part[r].tolist() for r in ROLES})
                   for part in parts)  # fmt: skip
    for done, (rows, ids, texts) in _placed(nodes["id"], batches):
        if progress:
            progress(EMBEDDING, done, len(codes))
        found = [
            (place, role, text)
            for place, pair in enumerate(zip(*(texts[r] for r in ROLES), strict=True))
            for role, text in enumerate(pair)
            if isinstance(text, str) and text and not text.isspace()
        ]
        at, roles, said = map(list, zip(*found, strict=True)) if found else ([], [], [])
        placed = rows[np.array(at, dtype=np.int64)]
        into.add(
            {"ids": _encoded([ids[n] for n in at]),
             "snippets": _encoded([excerpt(text, SNIPPET) for text in said])},
            {"trees": trees[placed], "roles": np.array(roles, np.int8),
             "active": active[placed]},
            stored_vectors(model, [digest(text) for text in said], said),
        )  # fmt: skip


def _placed(ids: pd.Series, batches: Iterator[NodeTexts]) -> Iterator[Any]:
    """Each batch's nodes at their forest rows (by position while in its order,
    else by id; those it lacks left out), after how many. Raises `_Repeated`."""
    import numpy as np

    covered, start, row_of = np.zeros(len(ids), dtype=bool), 0, None
    for batch in batches:
        stop = start + len(batch.ids)
        if row_of is None and ids.iloc[start:stop].tolist() == batch.ids:
            rows = np.arange(start, stop)
        else:
            row_of = row_of or dict(zip(ids.tolist(), range(len(ids)), strict=True))
            rows = np.array([row_of.get(node, -1) for node in batch.ids], np.int64)
        kept, done, start = rows >= 0, start, stop
        rows = rows[kept]
        if covered[rows].any() or len(np.unique(rows)) < len(rows):
            raise _Repeated()
        covered[rows] = True
        texts = {r: list(compress(batch.texts.get(r) or [None] * len(kept), kept))
                 for r in ROLES}  # fmt: skip
        yield done, (rows, list(compress(batch.ids, kept)), texts)


def _encoded(texts: Sequence[str]) -> tuple[bytes, np.ndarray]:
    import numpy as np

    encoded = [text.encode() for text in texts]
    return b"".join(encoded), np.array([len(one) for one in encoded], np.int64)


class _Ready:
    """The ready files of `directory` a batch of rows at a time: bytes appended
    to their files, the small columns kept until `finish`, coarse rows once `basis`."""

    def __init__(self, directory: Path) -> None:
        self.directory, self.trees = directory, dict[str, int]()
        self.basis: np.ndarray | None = None
        self.files = {name: (directory / f"{name}.bin").open("wb") for name in BLOBS}
        self.parts: dict[str, list[Any]] = {name: [] for name in (*STRINGS, *COLUMNS)}

    def close(self) -> None:
        for file in self.files.values():
            file.close()

    def names(self, names: Sequence[str]) -> np.ndarray:
        """The trees' codes, new names added."""
        import numpy as np

        codes = [self.trees.setdefault(name, len(self.trees)) for name in names]
        return np.array(codes, np.int32)

    def add(
        self,
        strings: dict[str, tuple[bytes, np.ndarray]],
        columns: dict[str, np.ndarray],
        matrix: np.ndarray,
        coarse: np.ndarray | None = None,
    ) -> None:
        import numpy as np

        for name, (data, lengths) in strings.items():
            self.files[name].write(data)
            self.parts[name].append(lengths)
        for name, values in columns.items():
            self.parts[name].append(values)
        self.files["matrix"].write(np.ascontiguousarray(matrix, np.float16).data)
        if self.basis is not None:
            if coarse is None:
                coarse = np.asarray(matrix, np.float32) @ self.basis
            self.files["coarse"].write(np.ascontiguousarray(coarse, np.float32).data)

    def finish(self) -> None:
        """The small columns, the tree names, and the coarse rows where due."""
        import numpy as np

        self.close()
        for name, kind in zip((*STRINGS, *COLUMNS), KINDS, strict=True):
            values = np.concatenate([np.zeros(0, kind), *self.parts[name]])
            ends = np.cumsum(values) if name in STRINGS else values
            np.save(self.directory / f"{name}.npy", ends)
        data, lengths = _encoded(list(self.trees))
        (self.directory / "tree_names.bin").write_bytes(data)
        np.save(self.directory / "tree_names.npy", np.cumsum(lengths))
        rows = len(np.load(self.directory / "trees.npy"))
        if rows <= EXACT_ROWS:
            (self.directory / "coarse.bin").unlink()
        elif self.basis is None:
            _save_coarse(self.directory, Rows(self.directory / "matrix.bin", rows))
        else:
            np.save(self.directory / "basis.npy", self.basis)


class Rows:
    """A file of `rows` rows of floats, read a range or some rows at a time: read,
    not mapped, since mapped pages count as the process's memory, and a file
    just written comes mapped in large blocks (folios) around each row asked."""

    def __init__(self, path: Path, rows: int, kind: str = "float16") -> None:
        import numpy as np

        self.path, self.rows, self.dtype = path, rows, np.dtype(kind)
        self.width = path.stat().st_size // self.dtype.itemsize // max(rows, 1)

    def __len__(self) -> int:
        return self.rows

    def __getitem__(self, rows: slice | np.ndarray) -> np.ndarray:
        import numpy as np

        size = self.width * self.dtype.itemsize
        if isinstance(rows, slice):
            start, stop, _ = rows.indices(self.rows)
            count = max(stop - start, 0)
            found = np.fromfile(
                self.path, self.dtype, count * self.width, offset=start * size
            )
            return found.reshape(count, self.width)
        if len(rows) * SCATTERED > self.rows:  # many: the chunks that hold them
            return np.concatenate([part for _, part in in_chunks(self, rows)])
        with self.path.open("rb") as file:  # few: a read a row
            read = functools.partial(os.pread, file.fileno(), size)
            data = b"".join([read(row * size) for row in np.asarray(rows).tolist()])
        return np.frombuffer(data, self.dtype).reshape(-1, self.width)


def in_chunks(matrix: Any, positions: np.ndarray) -> Iterator[tuple[slice, np.ndarray]]:
    """The rows of `matrix` (an array, or `Rows`) at `positions` (increasing),
    `NODES` rows of it at a time: (which of `positions`, their rows)."""
    import numpy as np

    starts = range(0, len(matrix), NODES)
    bounds = np.searchsorted(positions, [*starts, len(matrix)]).tolist()
    for start, first, last in zip(starts, bounds, bounds[1:], strict=False):
        if last > first:
            rows = matrix[start : start + NODES]
            yield slice(first, last), rows[positions[first:last] - start]


def _copy(old: Path, into: _Ready, keep: np.ndarray) -> None:
    """`old`'s rows where `keep`, `NODES` rows at a time, `into` the new files."""
    import numpy as np

    ends = {name: np.load(old / f"{name}.npy") for name in STRINGS}
    columns = {name: np.load(old / f"{name}.npy") for name in COLUMNS}
    matrix, coarse = Rows(old / "matrix.bin", len(keep)), None
    if (old / "basis.npy").exists():
        into.basis = np.load(old / "basis.npy")
        coarse = Rows(old / "coarse.bin", len(keep), "float32")
    for start in range(0, len(keep), NODES):
        stop = min(start + NODES, len(keep))
        kept, strings = keep[start:stop], {}
        for name, end in ends.items():
            first = int(end[start - 1]) if start else 0
            size = int(end[stop - 1]) - first
            lengths = np.diff(end[start:stop], prepend=first)
            data = np.fromfile(old / f"{name}.bin", np.uint8, size, offset=first)
            strings[name] = (data[np.repeat(kept, lengths)].tobytes(), lengths[kept])
        into.add(
            strings,
            {name: values[start:stop][kept] for name, values in columns.items()},
            matrix[start:stop][kept],
            None if coarse is None else coarse[start:stop][kept],
        )


def _write(ready: Path, meta: dict[str, Any], fill: Callable[..., None]) -> None:
    """The ready files written apart by `fill`, then moved into place at once."""
    partial = ready.with_name(f"{ready.name}.{os.getpid()}.partial")
    old = ready.with_name(f"{ready.name}.{os.getpid()}.old")
    try:
        for apart in (True, False):  # texts apart from the forest if they can be
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir(parents=True)
            with (
                contextlib.closing(_Ready(partial)) as into,
                contextlib.suppress(_Repeated, TextsWithForest),
            ):
                fill(into, ready, apart)
                break
        into.finish()
        write_meta(partial, meta)
        if ready.exists():
            os.replace(ready, old)
        os.replace(partial, ready)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)


def _save_coarse(directory: Path, matrix: Any) -> None:
    """The rows (an array, or `Rows`) on their `COARSE_DIMENSIONS` main directions
    (of every n-th row): `coarse.bin` (float32) for `nearest`, and `basis.npy`."""
    import numpy as np

    step, starts = max(1, len(matrix) // 50_000), range(0, len(matrix), NODES)
    picked = np.concatenate(
        [
            matrix[at : at + NODES][-at % step :: step].astype(np.float32)
            for at in starts
        ]
    )  # copies, so that no chunk read stays held
    basis = np.linalg.eigh(picked.T @ picked)[1][:, ::-1][:, :COARSE_DIMENSIONS]
    del picked
    basis = np.ascontiguousarray(basis, dtype=np.float32)
    with (directory / "coarse.bin").open("wb") as coarse:
        for start in range(0, len(matrix), NODES):
            rows = np.asarray(matrix[start : start + NODES], np.float32)
            coarse.write(np.ascontiguousarray(rows @ basis, np.float32).data)
    np.save(directory / "basis.npy", basis)


def _strings(directory: Path, name: str) -> Strings:
    """The strings `name` of the ready files, mapped."""
    import numpy as np

    ends = np.load(directory / f"{name}.npy", mmap_mode="r")
    if not (directory / f"{name}.bin").stat().st_size:
        return Strings(b"", ends)
    with (directory / f"{name}.bin").open("rb") as file:
        return Strings(mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ), ends)


def _load(ready: Path) -> NodeVectors:
    import numpy as np

    def array(name: str) -> Any:
        path = ready / f"{name}.npy"
        return np.load(path, mmap_mode="r") if path.exists() else None

    ids, snippets = map(functools.partial(_strings, ready), STRINGS)
    trees = Coded(array("trees"), _strings(ready, "tree_names"))
    file = Rows(ready / "matrix.bin", len(ids))
    shape = (file.rows, file.width)
    matrix: np.ndarray = np.zeros(shape, np.float16)  # np.memmap refuses no rows
    if all(shape):
        matrix = np.memmap(file.path, np.float16, "r", shape=shape)
    coarse = None
    if (ready / "coarse.bin").exists():  # scanned whole: read, not mapped
        coarse = Rows(ready / "coarse.bin", len(ids), "float32")
    return NodeVectors(
        ids, trees, Coded(array("roles"), ROLES), matrix, array("active"),
        snippets, coarse, array("basis"), file,
    )  # fmt: skip
