"""Exact nearest rows by cosine, and `similar`: the nearest prompts and answers
of a node or a text across the forest."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from convgraph.errors import ConvgraphError
from convgraph.meaning.store import ROLES, NodeVectors, embed_texts, node_vectors
from convgraph.sources.source import ProgressCallback, Source
from convgraph.text import excerpt

if TYPE_CHECKING:
    import numpy as np

    from convgraph.logs import Logs

#: Rows scored at once: a chunk of float16 rows is made float32 for BLAS.
ROWS = 1 << 15
#: The fields of a `similar` record.
COLUMNS = ("rank", "score", "tree_id", "id", "role", "active", "snippet")


def scores(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Every row's dot product with `query` (cosine, both normalised), float32."""
    import numpy as np

    query = np.asarray(query, dtype=np.float32).ravel()
    found = np.empty(len(matrix), dtype=np.float32)
    for start in range(0, len(matrix), ROWS):
        chunk = np.asarray(matrix[start : start + ROWS], dtype=np.float32)
        np.matmul(chunk, query, out=found[start : start + ROWS])
    return found


def nearest(vectors: NodeVectors, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The `k` rows nearest `query` (a normalised vector), as (row, cosine), best
    first, ties by row: an exact search of every row."""
    import numpy as np

    found = scores(vectors.matrix, query)
    k = min(k, len(found))
    if k <= 0:
        return []
    top = np.argpartition(-found, k - 1)[:k]
    top = top[np.lexsort((top, -found[top]))]
    return [(int(row), float(found[row])) for row in top]


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
    if text is not None:
        query = embed_texts([text], model)[0]
        own: set[int] = set()
    else:
        node = source.resolve_node(str(node_id))
        own = {row for row, one in enumerate(vectors.ids) if one == node}
        if not own:
            raise ConvgraphError(f"node {node} has no text to compare")
        query = vectors.matrix[min(own)]
    hits = [hit for hit in nearest(vectors, query, k + len(own)) if hit[0] not in own]
    return _records(logs, vectors, hits[:k])


def _records(
    logs: Logs | Source, vectors: NodeVectors, hits: list[tuple[int, float]]
) -> list[dict[str, Any]]:
    """The hits with their branch mark and a snippet, from their trees read."""
    trees = sorted({vectors.tree_ids[row] for row, _ in hits})
    if isinstance(logs, Source):
        from convgraph.model.forest import Forest

        forest = Forest.read(logs, conversation_ids=trees, texts=ROLES)
    else:  # hidden branches and redaction as the handle says
        forest = logs.forest(trees=trees, texts=ROLES)
    nodes = forest.nodes.set_index("id")
    records = []
    for rank, (row, score) in enumerate(hits, 1):
        node, role = vectors.ids[row], vectors.roles[row]
        known = node in nodes.index
        records.append(
            {
                "rank": rank,
                "score": round(score, 4),
                "tree_id": vectors.tree_ids[row],
                "id": node,
                "role": role,
                "active": bool(nodes.at[node, "active"]) if known else None,
                "snippet": excerpt(str(nodes.at[node, role]), 200) if known else "",
            }
        )
    return records
