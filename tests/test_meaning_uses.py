"""What meaning answers beyond `similar` (`convgraph.meaning.uses`): ranks fused
with the text search, the spread of a tree's alternative answers, topics and
near-duplicate questions, on hand-made vectors and, end to end, on small files
embedded by WordLlama."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from convgraph.meaning import NodeVectors, embed_texts
from convgraph.meaning.store import Rows
from convgraph.meaning.uses import (
    DUPLICATE_COSINE,
    _tree_prompts,
    alternatives_spread,
    fused_ranks,
    kmeans,
    near_duplicates,
    telling_words,
)
from tests.databases import add_response, legacy_database, timestamp
from tests.helpers import run

pytest.importorskip("wordllama")

#: Conversations (tree, first prompt): two about cooking, two about
#: databases; "again" asks "pasta"'s question in other words.
FIRST_PROMPTS = [
    ("pasta", "How long should I boil pasta?"),
    ("bread", "How do I make bread dough rise in the oven?"),
    ("index", "How do I create an index in a PostgreSQL database?"),
    ("keys", "What is a foreign key in an SQL database?"),
    ("again", "How long do I boil pasta for?"),
]
#: Under "pasta": two identical answers; under "index": two different ones.
SIBLINGS = [
    ("pasta", "p1", "And the sauce?", "Simmer tomatoes for twenty minutes."),
    ("pasta", "p2", "And the sauce?", "Simmer tomatoes for twenty minutes."),
    ("index", "i1", "Which kind of index?", "A B-tree index for ranges."),
    ("index", "i2", "Which kind of index?", "Bananas are a yellow fruit."),
]


@pytest.fixture(scope="module")
def topics_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("meaning") / "logs.db"
    conn = legacy_database(path)
    at = 0
    for tree, prompt in FIRST_PROMPTS:
        add_response(conn, f"{tree}0", tree, prompt, datetime_utc=timestamp(at))
        at += 1
    for tree, node, prompt, answer in SIBLINGS:
        parent = f"{tree}0"
        add_response(
            conn,
            node,
            tree,
            prompt,
            parent=parent,
            response=answer,
            datetime_utc=timestamp(at),
        )
        at += 1
    conn.commit()
    conn.close()
    return path


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


def test_each_trees_prompts_are_joined_in_the_order_asked() -> None:
    import pandas as pd

    nodes = pd.DataFrame(
        {
            "tree_id": pd.Categorical(["b", "a", "b", "c", "a", "b"]),
            "prompt": ["b1", "a1", None, "c1", "a2", "b3"],
        }
    )
    joined = _tree_prompts(nodes, ["a", "d", "b"])
    assert list(joined) == ["a1 a2", "", "b1 b3"]


def test_a_chunk_at_a_time_gives_the_rows_asked(tmp_path: Path) -> None:
    matrix = np.arange(3 * 70_000, dtype=np.float16).reshape(70_000, 3)
    asked = np.array([0, 5, 65_535, 65_536, 69_999])
    parts = list(NodeVectors([], [], [], matrix).chunks(asked))
    assert [which for which, _ in parts] == [slice(0, 3), slice(3, 5)]
    assert np.array_equal(np.concatenate([rows for _, rows in parts]), matrix[asked])
    # from a file: a few rows a read each, many the chunks that hold them
    matrix.tofile(tmp_path / "matrix.bin")
    file = Rows(tmp_path / "matrix.bin", 70_000)
    many = np.arange(1, 70_000, 7)
    assert np.array_equal(file[asked], matrix[asked])
    assert np.array_equal(file[many], matrix[many])


def test_near_duplicates_compare_each_trees_first_prompt() -> None:
    close = np.array([0.6, 0.8, 0, 0], dtype=np.float32)
    rows = [UNIT[0], UNIT[2], UNIT[1], UNIT[0], close, UNIT[3]]
    vectors = NodeVectors(
        ids=["a", "a", "b", "b2", "c", "d"],
        tree_ids=["A", "A", "B", "B", "C", "D"],
        roles=["prompt", "response", "prompt", "prompt", "prompt", "prompt"],
        matrix=np.stack(rows).astype(np.float16),
    )
    # B's second prompt (as A's) and A's answer (as D's) count for nothing.
    assert near_duplicates(vectors, 0.79) == [("B", "C", pytest.approx(0.8, abs=1e-3))]
    assert near_duplicates(vectors, 0.81) == []


@pytest.mark.parametrize("cosines", [1 << 24, 10])  # all at once; 2 rows a block
def test_a_question_asked_again_is_listed_once_beside_the_closest_earlier(
    cosines: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("convgraph.meaning.uses.COSINES", cosines)
    near = np.array([0.9, np.sqrt(1 - 0.81), 0, 0], dtype=np.float32)
    vectors = NodeVectors(
        ids=["a", "b", "c", "d", "e"],
        tree_ids=["A", "B", "C", "D", "E"],
        roles=["prompt"] * 5,
        matrix=np.stack([UNIT[0], UNIT[0], UNIT[1], UNIT[0], near]).astype(np.float16),
    )
    # D ties A and B: the earliest; E is nearest A, B and D alike.
    assert near_duplicates(vectors, 0.85) == [
        ("A", "B", pytest.approx(1.0, abs=1e-3)),
        ("A", "D", pytest.approx(1.0, abs=1e-3)),
        ("A", "E", pytest.approx(0.9, abs=1e-3)),
    ]


#: Questions asked again in other words, and different questions on one
#: subject: `DUPLICATE_COSINE` lies between the two.
PARAPHRASES = [
    ("How long should I boil pasta?", "How long do I boil pasta for?"),
    (
        "How do I create an index in PostgreSQL?",
        "How can I add an index to a PostgreSQL table?",
    ),
    ("What is a foreign key in SQL?", "Explain foreign keys in SQL"),
    ("How do I reverse a list in Python?", "What's the way to reverse a Python list?"),
    ("Why is my SQL query slow?", "Why does my SQL query run slowly?"),
    ("What is the capital of France?", "What's the capital city of France?"),
]
DIFFERENT = [
    ("How long should I boil pasta?", "How long should I boil eggs?"),
    ("How do I create an index in PostgreSQL?", "How do I create an index in MySQL?"),
    ("What is a foreign key in SQL?", "What is a primary key in SQL?"),
    ("How do I reverse a list in Python?", "How do I sort a list in Python?"),
    ("Write a haiku about autumn leaves", "Write a haiku about spring rain"),
    ("What is the capital of France?", "What is the capital of Germany?"),
]


def _cosines(pairs: list[tuple[str, str]]) -> list[float]:
    vectors = embed_texts([text for pair in pairs for text in pair])
    return [float(vectors[2 * n] @ vectors[2 * n + 1]) for n in range(len(pairs))]


def test_the_duplicate_threshold_parts_paraphrases_from_other_questions() -> None:
    assert min(_cosines(PARAPHRASES)) >= DUPLICATE_COSINE
    assert max(_cosines(DIFFERENT)) < DUPLICATE_COSINE


def test_check_duplicates_lists_the_question_asked_again(topics_db: Path) -> None:
    result = run("check", "--duplicates", "--json", "--db", topics_db, expect=1)
    [pair] = json.loads(result.stdout)
    assert (pair["tree_a"], pair["tree_b"]) == ("pasta", "again")
    assert pair["cosine"] > DUPLICATE_COSINE
    assert pair["name"] == "How long should I boil pasta?"
    result = run("check", "--duplicates", "--db", topics_db, expect=1)
    assert result.stdout.splitlines()[1].split()[:2] == ["pasta", "again"]
    # Plain check reads no vectors and finds nothing wrong.
    assert run("check", "--db", topics_db).stdout == "no problems found\n"


def test_check_duplicates_finds_a_question_asked_in_two_files(tmp_path: Path) -> None:
    # The merge of several sources joins trees by id; the same question asked
    # under other ids in another file is found by meaning.
    for name, tree, prompt, other in [
        ("a.db", "kept", PARAPHRASES[3][0], "Write a haiku about the sea"),
        ("b.db", "again", PARAPHRASES[3][1], "Convert 30 degrees Celsius"),
    ]:
        conn = legacy_database(tmp_path / name)
        add_response(conn, f"{tree}-1", tree, prompt, datetime_utc=timestamp(0))
        add_response(conn, f"{tree}-2", f"{tree}-other", other)
        conn.commit()
        conn.close()
    paths = ["--db", tmp_path / "a.db", "--db", tmp_path / "b.db"]
    result = run("check", "--duplicates", "--json", *paths, expect=1)
    [pair] = json.loads(result.stdout)
    assert {pair["tree_a"], pair["tree_b"]} == {"kept", "again"}


def test_topics_parts_cooking_from_databases(topics_db: Path) -> None:
    # Five conversations: two topics by default.
    result = run("topics", "--json", "--db", topics_db)
    found = json.loads(result.stdout)
    assert [(topic["topic"], topic["tree_ids"]) for topic in found] == [
        (1, ["pasta", "bread", "again"]),
        (2, ["index", "keys"]),
    ]
    assert "pasta" in found[0]["words"] and "database" in found[1]["words"]
    shown = run("topics", "-k", "2", "--db", topics_db).stdout.splitlines()
    assert shown[0].startswith("1. ") and shown[0].endswith("(3 conversations)")
    assert shown[1] == "   pasta  How long should I boil pasta?"
    by_topic = json.loads(
        run("stats", "--by", "topic", "--json", "--db", topics_db).stdout
    )
    assert sorted(row["conversations"] for row in by_topic) == [2, 3]


def test_stats_meaning_adds_each_trees_spread(topics_db: Path) -> None:
    rows = json.loads(run("stats", "--meaning", "--json", "--db", topics_db).stdout)
    spread = {row["tree_id"]: row["alternatives_spread"] for row in rows}
    answers = embed_texts(["A B-tree index for ranges.", "Bananas are a yellow fruit."])
    expected = round(1 - float(answers[0] @ answers[1]), 3)
    assert spread == {
        "pasta": 0.0,
        "bread": None,
        "index": pytest.approx(expected, abs=2e-3),
        "keys": None,
        "again": None,
    }
    plain = json.loads(run("stats", "--json", "--db", topics_db).stdout)
    assert "alternatives_spread" not in plain[0]
    chosen = ["--columns", "tree_id,alternatives_spread", "--tsv", "--db", topics_db]
    assert run("stats", "--meaning", *chosen).stdout.splitlines()[:2] == [
        "tree_id\talternatives_spread",
        "pasta\t0.0",
    ]


def test_compare_meaning_beside_the_text_measure(topics_db: Path) -> None:
    records = json.loads(
        run("compare", "pasta0", "--meaning", "--json", "--db", topics_db).stdout
    )
    assert [(r["id"], r["similarity"], r["meaning"]) for r in records] == [
        ("p1", {"p2": 1.0}, {"p2": 1.0}),
        ("p2", {"p1": 1.0}, {"p1": 1.0}),
    ]
    report = run("compare", "index0", "--meaning", "--db", topics_db).stdout
    assert "similarity of responses by meaning (cosine)" in report


def test_search_meaning_fuses_the_two_rankings(topics_db: Path) -> None:
    alone = json.loads(
        run(
            "search",
            "--meaning",
            "cooking spaghetti",
            "-n",
            "2",
            "--json",
            "--db",
            topics_db,
        ).stdout
    )
    assert [hit["id"] for hit in alone] == ["again0", "pasta0"]
    assert [hit["score"] for hit in alone] == [round(1 / 61, 6), round(1 / 62, 6)]
    fused = json.loads(
        run(
            "search", "index", "--meaning", "database keys", "--json", "--db", topics_db
        ).stdout
    )
    # By words: i1, index0, i2; by meaning: keys0, index0, i1, i2, ...
    assert [hit["id"] for hit in fused][:4] == ["i1", "index0", "i2", "keys0"]
    shown = run(
        "search", "pasta", "--meaning", "noodles", "-n", "1", "--db", topics_db
    ).stdout
    assert shown.splitlines()[0].startswith("1.  pasta  pasta0  depth 0  active")


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["search"], "give a QUERY, or --meaning TEXT, or both"),
        (["search", "--meaning", " "], "--meaning: give a text to compare with"),
        (["topics", "--embedding-model", "no-such-model"], "unknown embedding model"),
    ],
)
def test_bad_input_is_one_line(topics_db: Path, words: list[str], message: str) -> None:
    result = run(*words, "--db", topics_db, expect=2)
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_file_llm_wrote_has_its_branch_point_spread(llm_fork_db: dict) -> None:
    import convgraph

    first, second = llm_fork_db["turns"][0], llm_fork_db["turns"][1]
    with convgraph.open(llm_fork_db["path"]) as logs:
        tree = logs.tree_of_node(first)
        children = sorted(tree.successors(first))
        answers = [tree.nodes[child]["response"] for child in children]
    assert second in children and len(children) == 2
    vectors = embed_texts(answers)
    expected = round(1 - float(vectors[0] @ vectors[1]), 3)
    rows = json.loads(
        run("stats", "--meaning", "--json", "--db", llm_fork_db["path"]).stdout
    )
    assert [row["alternatives_spread"] for row in rows] == [
        pytest.approx(expected, abs=2e-3)
    ]


def test_a_narrow_terminal_keeps_the_spread_beside_the_branch_points() -> None:
    from convgraph.cli.output import TableFit
    from convgraph.cli.tables import PRIORITY

    columns = ["tree_id", "nodes", "branch_points", "models", "alternatives_spread"]
    shown = [[name, "x"] for name in columns]
    kept, _ = TableFit(50, PRIORITY).apply(columns, shown, set())
    assert [cells[0] for cells in kept] == [
        "tree_id",
        "nodes",
        "branch_points",
        "alternatives_spread",
    ]
