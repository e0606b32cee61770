"""The nearest rows by cosine, and `similar`: the nearest prompts and answers
of a node or a text across the forest."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from convgraph.errors import ConvgraphError
from convgraph.meaning.store import (
    NodeVectors,
    Rows,
    Strings,
    embed_texts,
    node_vectors,
)
from convgraph.sources.source import ProgressCallback, Source

if TYPE_CHECKING:
    import numpy as np

    from convgraph.logs import Logs

#: Rows scored at once: a chunk of float16 rows is made float32 for BLAS.
ROWS = 1 << 15
#: Rows the first pass keeps for each row asked, and at least.
CANDIDATES, FEWEST_CANDIDATES = 200, 4000
#: The fields of a `similar` record.
COLUMNS = ("rank", "score", "tree_id", "id", "role", "active", "snippet")


def scores(matrix: np.ndarray | Rows, query: np.ndarray) -> np.ndarray:
    """Every row's dot product with `query` (cosine, both normalised), float32;
    float16 rows and rows read from a file (`Rows`) a chunk at a time."""
    import numpy as np

    query = np.asarray(query, dtype=np.float32).ravel()
    found = np.empty(len(matrix), dtype=np.float32)
    # float32 rows in one BLAS call: each call wakes BLAS's threads, whose
    # spinning costs more than the product itself on a busy machine.
    whole = isinstance(matrix, np.ndarray) and matrix.dtype == np.float32
    step = max(len(matrix), 1) if whole else ROWS
    for start in range(0, len(matrix), step):
        chunk = np.asarray(matrix[start : start + step], dtype=np.float32)
        np.matmul(chunk, query, out=found[start : start + step])
    return found


def _best(found: np.ndarray, k: int) -> np.ndarray:
    """The positions of the `k` largest, largest first, ties by position."""
    import numpy as np

    k = min(k, len(found))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    top = np.argpartition(-found, k - 1)[:k]
    return top[np.lexsort((top, -found[top]))]


def nearest(vectors: NodeVectors, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The `k` rows nearest `query` (a normalised vector), as (row, cosine), best
    first, ties by row. Every row is scored exactly, but on forests with a
    `coarse` projection, whose nearest `CANDIDATES` * k rows by it are."""
    import numpy as np

    query = np.asarray(query, dtype=np.float32).ravel()
    if vectors.coarse is None or vectors.basis is None:
        found = scores(vectors.matrix, query)
        return [(int(row), float(found[row])) for row in _best(found, k)]
    wanted = max(CANDIDATES * k, FEWEST_CANDIDATES)
    rows = np.sort(_best(scores(vectors.coarse, query @ vectors.basis), wanted))
    found = scores(vectors.rows(rows), query)
    return [(int(rows[at]), float(found[at])) for at in _best(found, k)]


def similar(
    logs: Logs | Source,
    node_id: str | None = None,
    text: str | None = None,
    k: int = 10,
    model: str | None = None,
    progress: ProgressCallback | None = None,
) -> list[dict[str, Any]]:
    """The `k` prompts or answers nearest a node's prompt (its answer where it has
    none; its own rows left out) or a `text`, as records of `COLUMNS`. Raises
    UnknownNode, AmbiguousId, ConvgraphError (unknown model, missing extra)."""
    source = logs if isinstance(logs, Source) else logs.source
    vectors = node_vectors(logs, model, progress)
    ids, marks = vectors.ids, vectors.active
    if text is not None:
        query = embed_texts([text], model)[0]
        own: list[int] = []
    else:
        node = source.resolve_node(str(node_id))
        own = ids.rows_of(node) if isinstance(ids, Strings) else []
        if not own:
            raise ConvgraphError(f"node {node} has no text to compare")
        query = vectors.matrix[own[0]]
    hits = [hit for hit in nearest(vectors, query, k + len(own)) if hit[0] not in own]
    return [
        dict(zip(COLUMNS, (rank, round(score, 4), vectors.tree_ids[row], ids[row],
             vectors.roles[row], None if marks is None else bool(marks[row]),
             vectors.snippets[row]), strict=True))
        for rank, (row, score) in enumerate(hits[:k], 1)
    ]  # fmt: skip
