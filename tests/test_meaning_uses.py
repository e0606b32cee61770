"""What meaning answers beyond `similar` (`convgraph.meaning.uses`): ranks fused
with the text search, the spread of a tree's alternative answers, topics and
near-duplicate questions, on hand-made vectors and, end to end, on small files
embedded by WordLlama."""

from __future__ import annotations

import numpy as np
import pytest

from convgraph.meaning.uses import (
    alternatives_spread,
    fused_ranks,
    kmeans,
    near_pairs,
    telling_words,
)

UNIT = np.eye(4, dtype=np.float32)


def test_reciprocal_rank_fusion_of_two_known_rankings() -> None:
    fused = fused_ranks([["a", "b", "c"], ["c", "d", "a"]])
    assert [key for key, _ in fused] == ["a", "c", "b", "d"]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 63)
    assert fused[2][1] == pytest.approx(1 / 62)
    assert fused_ranks([]) == []


def test_spread_is_zero_for_identical_answers_and_one_for_orthogonal() -> None:
    matrix = np.stack([UNIT[0], UNIT[0], UNIT[0], UNIT[1], UNIT[2], UNIT[0], UNIT[3]])
    trees = ["t", "t", "t", "u", "u", "w", "x"]
    parents = ["r", "r", None, None, None, None, "q"]
    spread = alternatives_spread(trees, parents, matrix)
    assert spread == {"t": 0.0, "u": 1.0, "w": None, "x": None}


def test_spread_averages_over_branch_points() -> None:
    # Under "a": orthogonal answers (1); under "b": two identical and one
    # opposite: pairs 0, 2, 2 (mean 4/3); the tree's spread (1 + 4/3) / 2.
    matrix = np.stack([UNIT[0], UNIT[1], UNIT[2], UNIT[2], -UNIT[2]])
    spread = alternatives_spread(["t"] * 5, ["a", "a", "b", "b", "b"], matrix)
    assert spread == {"t": pytest.approx(7 / 6, abs=1e-6)}


def test_kmeans_is_seeded_and_finds_two_obvious_groups() -> None:
    rng = np.random.default_rng(1)
    rows = np.concatenate(
        [UNIT[0] + rng.normal(0, 0.05, (5, 4)), UNIT[1] + rng.normal(0, 0.05, (4, 4))]
    )
    rows = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    labels = kmeans(rows, 2)
    assert len(set(labels[:5])) == 1 and len(set(labels[5:])) == 1
    assert labels[0] != labels[5]
    assert (kmeans(rows, 2) == labels).all()


def test_telling_words_name_each_cluster() -> None:
    texts = [
        "boil the pasta",
        "salt the pasta water",
        "index the database",
        "database backup",
    ]
    named = telling_words(texts, [0, 0, 1, 1], count=2)
    assert named == {0: ["pasta", "boil"], 1: ["database", "backup"]}


def test_near_pairs_above_the_threshold_only() -> None:
    close = np.array([0.6, 0.8, 0, 0], dtype=np.float32)
    matrix = np.stack([UNIT[0], UNIT[1], close, UNIT[0]])
    assert near_pairs(["a", "b", "c", "d"], matrix, 0.8) == [
        ("a", "d", 1.0),
        ("b", "c", pytest.approx(0.8)),
    ]
    assert near_pairs(["a", "b"], UNIT[:2], 0.8) == []
