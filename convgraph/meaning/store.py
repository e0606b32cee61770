"""Vectors stored once: by (model, content hash) in an SQLite file of the cache,
so no text is embedded twice, and per source file its node vectors ready, stamped
as the search index is and made again from the store when the file changes."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from convgraph.search.index import cache_directory, index_path
from convgraph.search.stamps import content_stamp, quick_stamp, stored
from convgraph.sources.source import ProgressCallback, Source

if TYPE_CHECKING:
    import numpy as np

    from convgraph.logs import Logs

#: The layout of the ready vectors: another is made again.
VERSION = 1
#: The texts of a node that are embedded, each a row.
ROLES = ("prompt", "response")
#: Texts embedded between two commits of the store; hashes asked at once.
CHUNK = 8192
ASKED = 900
EMBEDDING = "embedding texts"


def meaning_directory() -> Path:
    """Where the vectors live: beside the search indexes in convgraph's cache."""
    return cache_directory().parent / "meaning"


def _name(model_id: str) -> str:
    return re.sub(r"[^\w.-]", "_", model_id)


@dataclass
class NodeVectors:
    """A forest's texts as rows: row i is the prompt or the response (`roles[i]`)
    of node `ids[i]` in tree `tree_ids[i]`, for every node with that text (the
    same two roles on every source); `matrix` float16, rows L2-normalised."""

    ids: list[str]
    tree_ids: list[str]
    roles: list[str]
    matrix: np.ndarray


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


def _digest(text: str) -> bytes:
    return hashlib.blake2b(
        text.encode("utf-8", "surrogatepass"), digest_size=16
    ).digest()


def stored_vectors(
    model: Any, texts: Sequence[str], progress: ProgressCallback | None = None
) -> np.ndarray:
    """The texts' vectors (float16, normalised) from `model`'s store; only the
    texts it lacks are embedded, and then kept."""
    import numpy as np

    keys = [_digest(text) for text in texts]
    first: dict[bytes, int] = {}
    for row, key in enumerate(keys):
        first.setdefault(key, row)
    directory = meaning_directory()
    directory.mkdir(parents=True, exist_ok=True)
    found: dict[bytes, bytes] = {}
    with sqlite3.connect(directory / f"{_name(model.model_id)}.db", timeout=60) as db:
        db.execute(
            "CREATE TABLE IF NOT EXISTS vectors"
            " (hash BLOB PRIMARY KEY, vector BLOB NOT NULL) WITHOUT ROWID"
        )
        unique = list(first)
        for start in range(0, len(unique), ASKED):
            asked = unique[start : start + ASKED]
            marks = ",".join("?" * len(asked))
            sql = f"SELECT hash, vector FROM vectors WHERE hash IN ({marks})"
            found.update(db.execute(sql, asked))
        missing = [key for key in unique if key not in found]
        for start in range(0, len(missing), CHUNK):
            if progress:
                progress(EMBEDDING, start, len(missing))
            chunk = missing[start : start + CHUNK]
            made = _embedded(model, [texts[first[key]] for key in chunk])
            pairs = list(zip(chunk, map(bytes, made.astype(np.float16)), strict=True))
            db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", pairs)
            db.commit()
            found.update(pairs)
    db.close()
    if not keys:
        return np.zeros((0, 0), dtype=np.float16)
    joined = b"".join(found[key] for key in keys)
    return np.frombuffer(joined, dtype=np.float16).reshape(len(keys), -1)


def embed_texts(texts: Sequence[str], model: str | None = None) -> np.ndarray:
    """The texts' vectors, float32 of shape (n, d), rows L2-normalised, through
    the store of `model` (an llm embedding model; WordLlama when None). Raises
    ConvgraphError for an unknown model or a missing extra."""
    from convgraph.meaning.model import embedding_model

    return _normalised(stored_vectors(embedding_model(model), texts))


def node_vectors(
    logs: Logs | Source,
    model: str | None = None,
    progress: ProgressCallback | None = None,
) -> NodeVectors:
    """Every node text of the forest as a row (`NodeVectors`), hidden nodes left
    out unless the `Logs` keeps them; made from the store and kept ready per file
    until its stamps change."""
    from convgraph.meaning.model import embedding_model

    source = logs if isinstance(logs, Source) else logs.source
    hidden = not isinstance(logs, Source) and logs.hidden
    chosen = embedding_model(model)
    ready = index_path(source.path, meaning_directory())
    ready = ready.with_suffix(f".{_name(chosen.model_id)}{'.hidden' * hidden}")
    meta = _meta(ready)
    quick = quick_stamp(source)
    if meta.get("version") == VERSION and meta.get("quick") == quick:
        return _load(ready)
    content = stored(content_stamp(source, meta.get("content") or None))
    if meta.get("version") == VERSION and meta.get("content") == content:
        _write_meta(ready, {**meta, "quick": quick})
        return _load(ready)
    vectors = _made(source, hidden, chosen, progress)
    _write(ready, vectors, {"version": VERSION, "quick": quick, "content": content})
    return _load(ready)


def _made(
    source: Source, hidden: bool, model: Any, progress: ProgressCallback | None
) -> NodeVectors:
    """The node vectors of the file read now."""
    import numpy as np

    from convgraph.model.forest import Forest

    forest = Forest.read(source, progress=progress, texts=ROLES, hidden=hidden)
    nodes = forest.nodes
    texts = np.stack(
        [nodes[role].to_numpy(dtype=object, na_value="") for role in ROLES], axis=1
    ).ravel()
    keep = np.fromiter((bool(text and not text.isspace()) for text in texts), bool)
    count = len(nodes)
    ids = np.repeat(nodes["id"].to_numpy(dtype=object), 2)[keep]
    trees = np.repeat(nodes["tree_id"].astype(str).to_numpy(dtype=object), 2)[keep]
    roles = np.tile(np.array(ROLES, dtype=object), count)[keep]
    del forest, nodes
    matrix = stored_vectors(model, texts[keep].tolist(), progress)
    return NodeVectors(ids.tolist(), trees.tolist(), roles.tolist(), matrix)


def _meta(ready: Path) -> dict[str, Any]:
    try:
        meta = json.loads((ready / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def _write_meta(ready: Path, meta: dict[str, Any]) -> None:
    partial = ready / f"meta.json.{os.getpid()}.partial"
    partial.write_text(json.dumps(meta), encoding="utf-8")
    os.replace(partial, ready / "meta.json")


def _write(ready: Path, vectors: NodeVectors, meta: dict[str, Any]) -> None:
    """The ready vectors written apart and moved into place at once."""
    import numpy as np

    partial = ready.with_name(f"{ready.name}.{os.getpid()}.partial")
    old = ready.with_name(f"{ready.name}.{os.getpid()}.old")
    try:
        partial.mkdir(parents=True)
        rows = [vectors.ids, vectors.tree_ids, vectors.roles]
        (partial / "rows.json").write_bytes(orjson.dumps(rows))
        np.save(partial / "matrix.npy", vectors.matrix)
        _write_meta(partial, meta)
        if ready.exists():
            os.replace(ready, old)
        os.replace(partial, ready)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)


def _load(ready: Path) -> NodeVectors:
    import numpy as np

    ids, trees, roles = orjson.loads((ready / "rows.json").read_bytes())
    return NodeVectors(ids, trees, roles, np.load(ready / "matrix.npy", mmap_mode="r"))
