"""What vectors of meaning answer beyond `similar`: ranks of two searches fused,
how far apart a tree's alternative answers lie, conversations grouped into
named topics, and the same question asked again. Rows of a matrix are unit
vectors, so a dot product is a cosine."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

#: Reciprocal rank fusion's constant: 60, as Cormack, Clarke and Büttcher
#: chose it, damps the weight of the very first ranks.
RRF_K = 60
#: First prompts this close are one question asked again: on the tests'
#: pairs WordLlama scores paraphrases 0.81 and above, different questions on
#: one subject ("a primary key", "a foreign key") 0.79 at most.
DUPLICATE_COSINE = 0.8
DEFAULT_TOPICS = 8
_WORD = re.compile(r"[^\W\d_]{3,}")
#: Words that tell nothing of a subject, left out of topics' names.
_PLAIN_WORDS = (
    "the and for with what how why when where which who whom are was were you your"
    " can could should would will does did have has had this that these those from"
    " into about there their them then than not but all any some its our out one"
    " also just like get use using make way best between"
)
_PLAIN = frozenset(_PLAIN_WORDS.split())


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
    codes = frame.groupby(["tree", "parent"], dropna=False, sort=False).ngroup()
    many = (codes.map(codes.value_counts()) > 1).to_numpy()
    # Only the rows with siblings: the sum of a group's pairwise cosines (both
    # orders) is |sum of its vectors|^2 less each vector's own square.
    first, group = np.unique(
        codes.to_numpy()[many], return_index=True, return_inverse=True
    )[1:]
    rows = matrix[many]
    sums = pd.DataFrame(rows).groupby(group).sum().to_numpy(dtype=np.float64)
    own = np.bincount(group, np.einsum("ij,ij->i", rows, rows))
    size = np.bincount(group)
    cosine = (np.einsum("ij,ij->i", sums, sums) - own) / (size * (size - 1))
    tree = frame["tree"].to_numpy()[many][first]
    per_tree = pd.Series(1.0 - cosine).groupby(tree).mean()
    spread: dict[str, float | None] = dict.fromkeys(frame["tree"].unique())
    for key, value in per_tree.items():
        spread[str(key)] = round(float(value), 6)
    return spread


def kmeans(matrix: np.ndarray, k: int, seed: int = 0, tries: int = 10) -> np.ndarray:
    """Each row's cluster (0 to k-1) by spherical k-means, the best of `tries`
    starts by k-means++ drawn from `seed`: the same rows give the same clusters."""
    import numpy as np

    rng = np.random.default_rng(seed)
    k = min(k, len(matrix))
    best, best_fit = np.zeros(len(matrix), dtype=np.int64), -np.inf
    for _ in range(tries):
        centres = [matrix[rng.integers(len(matrix))]]
        for _ in range(1, k):
            far = np.clip(1.0 - (matrix @ np.array(centres).T).max(axis=1), 0, None)
            total = far.sum()
            pick = rng.choice(len(matrix), p=far / total) if total > 0 else 0
            centres.append(matrix[pick])
        centre = np.array(centres, dtype=np.float64)
        labels = np.full(len(matrix), -1)
        for _ in range(100):
            cosines = matrix @ centre.T
            found = cosines.argmax(axis=1)
            if (found == labels).all():
                break
            labels = found
            for cluster in range(k):
                total = matrix[labels == cluster].sum(axis=0)
                norm = np.linalg.norm(total)
                if norm > 0:  # an emptied cluster keeps its centre
                    centre[cluster] = total / norm
        fit = float(cosines.max(axis=1).sum())
        if fit > best_fit + 1e-9:
            best, best_fit = labels, fit
    return best


def telling_words(
    texts: Sequence[str], labels: Sequence[int], count: int = 3
) -> dict[int, list[str]]:
    """Each cluster's `count` most telling words: the share of its texts that
    hold a word, times log(1 + texts / texts holding it anywhere): TF-IDF with
    clusters for documents; ties by the word."""
    held = [set(_WORD.findall(text.lower())) - _PLAIN for text in texts]
    everywhere = Counter(word for words in held for word in words)
    size = Counter(labels)
    within: dict[int, Counter[str]] = {}
    for label, words in zip(labels, held, strict=True):
        within.setdefault(label, Counter()).update(words)
    named = {}
    for label, counts in within.items():
        score = {
            word: n / size[label] * math.log(1 + len(texts) / everywhere[word])
            for word, n in counts.items()
        }
        ranked = sorted(score, key=lambda word: (-score[word], word))
        named[label] = ranked[:count]
    return named


def near_pairs(
    keys: Sequence[str], matrix: np.ndarray, threshold: float = DUPLICATE_COSINE
) -> list[tuple[str, str, float]]:
    """Every pair of rows whose cosine is `threshold` or more, as (key, key,
    cosine), the closest first: a block of rows against all at a time."""
    import numpy as np

    found: list[tuple[str, str, float]] = []
    block = 2048
    for start in range(0, len(matrix), block):
        cosines = matrix[start : start + block] @ matrix.T
        rows, columns = np.nonzero(cosines >= threshold)
        later = columns > rows + start
        for row, column in zip(rows[later], columns[later], strict=True):
            score = round(float(cosines[row, column]), 6)
            found.append((keys[start + row], keys[column], score))
    return sorted(found, key=lambda pair: -pair[2])
