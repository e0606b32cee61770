"""What meaning answers beyond `similar`: two searches' ranks fused, how far
apart a tree's alternative answers lie, conversations grouped into named
topics, and the same question asked again (unit rows: a dot is a cosine)."""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import networkx as nx
    import numpy as np
    import pandas as pd

    from convgraph.analysis.compare import Comparison
    from convgraph.logs import Logs
    from convgraph.meaning import NodeVectors
    from convgraph.sources.source import ProgressCallback

#: Reciprocal rank fusion's constant, as its authors chose it.
RRF_K = 60
#: One question asked again: on the tests' pairs WordLlama scores paraphrases
#: 0.81 or more, other questions on one subject (primary, foreign key) 0.79 at most.
DUPLICATE_COSINE = 0.8
DEFAULT_TOPICS = 8
#: Cosines computed at once by `near_duplicates` (float32: 64 MB).
COSINES = 1 << 24
_WORD = re.compile(r"[^\W\d_]{3,}")


def fused_ranks(
    rankings: Sequence[Sequence[str]], k: int = RRF_K
) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: each key scores the sum of 1 / (k + rank) over
    the rankings that hold it; best first, ties in the order first seen."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, 1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda item: -item[1])


def alternatives_spread(
    trees: Sequence[str], parents: Sequence[str | None], matrix: np.ndarray
) -> dict[str, float | None]:
    """Each tree's spread: at each branch point (the answers under one parent,
    or a tree's roots) the mean cosine distance over pairs of its answers,
    averaged over the tree's branch points; None for a tree without one.
    Row i is the answer of a node of tree `trees[i]` under `parents[i]`."""
    import numpy as np
    import pandas as pd

    frame = pd.DataFrame({"tree": trees, "parent": parents})
    codes, many = _with_siblings(frame)
    # The n(n-1) cosines of a branch point's pairs (both orders) add up to
    # |the sum of its unit vectors|^2 - n: only the rows with siblings are read.
    grouped = pd.DataFrame(unit_rows(matrix[many])).groupby(codes[many].to_numpy())
    sums, size = grouped.sum().to_numpy(np.float64), grouped.size().to_numpy()
    distance = 1 - (np.einsum("ij,ij->i", sums, sums) - size) / (size * (size - 1))
    tree = frame["tree"][many].groupby(codes[many].to_numpy()).first().to_numpy()
    per_tree = pd.Series(distance, index=tree).groupby(level=0).mean()
    spread: dict[str, float | None] = dict.fromkeys(frame["tree"].unique())
    for key, value in per_tree.items():
        spread[str(key)] = round(float(value), 6) + 0.0  # never -0.0
    return spread


def _with_siblings(frame: pd.DataFrame) -> tuple[pd.Series, np.ndarray]:
    """The branch point of each answer (`frame`'s tree and parent), numbered, and
    which answers have a sibling."""
    codes = frame.groupby(["tree", "parent"], dropna=False, sort=False).ngroup()
    return codes, (codes.map(codes.value_counts()) > 1).to_numpy()


def kmeans(matrix: np.ndarray, k: int, seed: int = 0, tries: int = 5) -> np.ndarray:
    """Each row's cluster (0 to k-1) by spherical k-means (at most 30 rounds),
    the best of `tries` starts by k-means++ drawn from `seed`: the same rows
    give the same clusters."""
    import numpy as np
    import pandas as pd

    rng, rows = np.random.default_rng(seed), pd.DataFrame(matrix)
    k, best, best_fit = min(k, len(matrix)), np.zeros(len(matrix), np.int64), -np.inf
    for _ in range(tries):
        centre = matrix[[rng.integers(len(matrix))]]
        while len(centre) < k:
            far = np.clip(1 - (matrix @ centre.T).max(axis=1), 0, None).astype(float)
            pick = rng.choice(len(matrix), p=far / far.sum()) if far.any() else 0
            centre = np.vstack([centre, matrix[pick]])
        labels = np.full(len(matrix), -1)
        for _ in range(30):
            cosines = matrix @ centre.T
            if (cosines.argmax(axis=1) == labels).all():
                break
            labels = cosines.argmax(axis=1)
            totals = rows.groupby(labels).sum()  # an emptied cluster keeps its centre
            centre[totals.index] = unit_rows(totals.to_numpy())
        if cosines.max(axis=1).sum() > best_fit + 1e-9:
            best, best_fit = labels, cosines.max(axis=1).sum()
    return best


def telling_words(
    texts: Iterable[str], labels: Sequence[int], count: int = 3
) -> dict[int, list[str]]:
    """Each cluster's `count` most telling words: a word's share p of the
    cluster's texts against its share q of all texts, scored p log(p / q);
    ties by the word."""
    everywhere, shares = Counter[str](), dict[int, Counter[str]]()
    sizes = Counter(labels)
    for label, text in zip(labels, texts, strict=True):  # no text's words kept
        words = set(_WORD.findall(text.lower()))
        everywhere.update(words)
        shares.setdefault(label, Counter()).update(words)
    named = {}
    for label, share in shares.items():
        size = sizes[label]
        score = {
            w: n / size * math.log(n / size * len(labels) / everywhere[w])
            for w, n in share.items()
        }
        named[label] = sorted(score, key=lambda word: (-score[word], word))[:count]
    return named


def _rows(vectors: NodeVectors, role: str) -> tuple[np.ndarray, np.ndarray]:
    """The rows of `vectors` whose role is `role`, and their trees (each
    list read whole: the store's strings decode fastest in one pass)."""
    import numpy as np

    rows = np.flatnonzero(np.asarray(list(vectors.roles), dtype=object) == role)
    return rows, np.asarray(list(vectors.tree_ids), dtype=object)[rows]


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """The rows as float32 of length 1 (or 0): the store keeps float16."""
    import numpy as np

    rows = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms > 0, norms, 1)


def near_duplicates(
    vectors: NodeVectors, threshold: float = DUPLICATE_COSINE
) -> list[tuple[str, str, float]]:
    """Conversations that ask an earlier one's question again: each tree whose
    first prompt has a cosine of `threshold` or more with an earlier tree's,
    once, beside the earlier tree closest to it (the earliest of a tie), as
    (earlier tree, tree, cosine), the closest first. A question asked n times
    is n - 1 pairs, not n(n - 1) / 2."""
    import numpy as np

    rows, trees = _rows(vectors, "prompt")
    first = np.sort(rows[np.unique(trees, return_index=True)[1]])
    matrix, keys = unit_rows(vectors.rows(first)), trees[np.searchsorted(rows, first)]
    found, block = [], max(1, COSINES // max(len(first), 1))
    for start in range(0, len(first), block):  # a block against the rows before
        stop = min(start + block, len(first))
        cosines = matrix[start:stop] @ matrix[:stop].T
        cosines[:, start:][np.triu_indices(stop - start)] = -np.inf  # not before
        best = cosines.argmax(axis=1)
        score = cosines[np.arange(stop - start), best]
        for row in np.flatnonzero(score >= threshold).tolist():
            pair = (str(keys[best[row]]), str(keys[start + row]))
            found.append((*pair, round(float(score[row]), 6)))
    return sorted(found, key=lambda pair: -pair[2])


def with_spread(
    table: Any, logs: Logs, model: str | None, progress: ProgressCallback | None
) -> Any:
    """`stats`' rows (records or a table) with each tree's
    `alternatives_spread`, its answers embedded by `model`."""
    import pandas as pd

    from convgraph.meaning import node_vectors

    vectors = node_vectors(logs, model, progress)
    parents = logs.forest(False, progress=progress).nodes.set_index("id")["parent_id"]
    rows, trees = _rows(vectors, "response")
    ids = list(vectors.ids)
    parent = parents.astype(object).reindex([ids[row] for row in rows.tolist()])
    above = parent.where(parent.notna(), None).to_numpy()
    # Only the answers with a sibling are read: a tree without is None anyway.
    many = _with_siblings(pd.DataFrame({"tree": trees, "parent": above}))[1]
    found = alternatives_spread(
        trees[many].tolist(), above[many].tolist(), vectors.rows(rows[many])
    )
    if isinstance(table, list):
        return [
            row | {"alternatives_spread": found.get(row["tree_id"])} for row in table
        ]
    column = table["tree_id"].astype(object).map(found).astype(object)
    return table.assign(alternatives_spread=column.where(column.notna(), None))


def conversation_topics(
    logs: Logs, k: int | None, model: str | None, progress: ProgressCallback | None
) -> list[dict[str, Any]]:
    """The conversations in `k` topics (by default the square root of half
    their number, at most `DEFAULT_TOPICS`) by k-means on each tree's mean
    prompt vector, largest first: records of topic (from 1), words (the
    `telling_words` of its prompts), name, conversations, tree_ids, titles."""
    import numpy as np
    import pandas as pd

    from convgraph.meaning import node_vectors

    vectors = node_vectors(logs, model, progress)
    rows, trees = _rows(vectors, "prompt")
    codes, seen = pd.factorize(trees)  # the trees in the order first seen
    sums = np.zeros((len(seen), vectors.matrix.shape[1]))
    for at, part in vectors.chunks(rows):  # a chunk of rows read at a time
        summed = pd.DataFrame(unit_rows(part)).groupby(codes[at]).sum()
        sums[summed.index] += summed.to_numpy()
    k = k or min(DEFAULT_TOPICS, max(1, round(math.sqrt(len(sums) / 2))))
    labels = kmeans(unit_rows(sums), k) if len(sums) else np.array([], int)
    forest, order = logs.forest(texts=("prompt",), progress=progress), list(seen)
    words = telling_words(_tree_prompts(forest.nodes, order), labels.tolist())
    found: list[dict[str, Any]] = []
    for label in np.argsort(-np.bincount(labels, minlength=k), kind="stable"):
        kept = [tree for tree, at in zip(order, labels, strict=True) if at == label]
        named = words.get(label, [])
        found += [{"topic": len(found) + 1, "words": named, "name": ", ".join(named)}]
        found[-1] |= {"conversations": len(kept), "tree_ids": kept}
        found[-1]["titles"] = [forest.names.get(tree) for tree in kept]
    return [topic for topic in found if topic["tree_ids"]]


def _tree_prompts(nodes: pd.DataFrame, order: list[str]) -> Iterator[str]:
    """Each tree's prompts joined, the trees in `order`, one at a time: all the
    joined texts at once would double the prompts' memory."""
    import numpy as np
    import pandas as pd

    place = pd.Index(order).get_indexer(pd.Index(nodes["tree_id"].astype(str)))
    prompts = nodes["prompt"].to_numpy(object)
    kept = np.flatnonzero(pd.notna(prompts) & (place >= 0))
    kept = kept[np.argsort(place[kept], kind="stable")]  # a tree's in their order
    bounds = np.searchsorted(place[kept], np.arange(len(order) + 1)).tolist()
    for first, last in itertools.pairwise(bounds):
        yield " ".join(prompts[kept[first:last]])


def meaning_search(
    logs: Logs, text: str | None, meaning: str, limit: int, **options: Any
) -> list[dict[str, Any]]:
    """The hits of `text` (the words search) and of `meaning` (the nodes whose
    prompt or answer is nearest it by the embedding `model` of `options`),
    ranked by `fused_ranks`, as `Hit` records with the fused score; the other
    `options` are `Logs.search`'s (`abandoned`, `where`, ...), for both."""
    from convgraph.meaning import embed_texts, nearest, node_vectors

    model, progress = options.pop("model", None), options.get("progress")
    pool, vectors = max(100, 3 * limit), node_vectors(logs, model, progress)
    roles: dict[str, str] = {}
    for row, _ in nearest(vectors, embed_texts([meaning], model)[0], pool):
        roles.setdefault(vectors.ids[row], vectors.roles[row])
    found = logs.search(text, limit=pool, **options) if text else []
    # The index gives the nearest nodes their place and snippet, and keeps
    # only those the filters keep.
    quoted = (re.sub(r'(["\\])', r"\\\1", node) for node in roles)
    asked = " OR ".join(f'id:"{node}"' for node in quoted)
    options["query_syntax"] = True
    near = logs.search(asked, limit=len(roles), **options) if roles else []
    hits = {hit.id: hit for hit in [*near, *found]}
    ranked = fused_ranks([[hit.id for hit in found], [n for n in roles if n in hits]])
    records = []
    for rank, (node, score) in enumerate(ranked[:limit], 1):
        record = hits[node].as_record() | {"rank": rank, "score": round(score, 6)}
        if node in roles and roles[node] not in record["fields"]:
            record["fields"].append(roles[node])
        records.append(record)
    return records


def compared_by_meaning(
    result: Comparison, tree: nx.DiGraph[str], model: str | None = None
) -> Comparison:
    """`result` with each similarity, of the same pairs, the cosine of the two
    responses' embeddings by `model`; pairs with a missing response left out."""
    from dataclasses import replace

    from convgraph.meaning import embed_texts

    answered = [node for node in result.ids if tree.nodes[node]["response"]]
    vectors = embed_texts([tree.nodes[node]["response"] for node in answered], model)
    cosines = dict(zip(answered, (vectors @ vectors.T).round(6).tolist(), strict=True))
    place = {node: index for index, node in enumerate(answered)}
    measured = [
        replace(
            one,
            similarity={
                o: cosines[one.id][place[o]]
                for o in one.similarity
                if one.id in place and o in place
            },
        )
        for one in result.alternatives
    ]
    return replace(result, alternatives=measured)
