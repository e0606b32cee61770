"""convgraph.meaning: the store embeds each text once, WordLlama finds
paraphrases, `similar` answers on every source, bad input is one line."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path

import llm
import pytest
from llm.models import EmbeddingModel

import convgraph
from convgraph.meaning import NodeVectors, embed_texts, nearest, node_vectors
from convgraph.meaning.store import SNIPPET
from convgraph.text import excerpt
from tests.chat_exports import chatgpt_branches, write_json
from tests.databases import LlmLog, add_response, legacy_database, timestamp
from tests.helpers import run

AGENT_SESSION = (
    Path(__file__).parent / "data" / "agents" / "claude-code" / "sample_session.jsonl"
)


class Counting(EmbeddingModel):
    """Letters counted: a real llm embedding model that notes every text it embeds."""

    model_id = "counting"
    batch_size = 3

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def embed_batch(
        self, items: Iterable[str | bytes], *, key: str | None = None
    ) -> Iterator[list[float]]:
        for item in items:
            text = str(item)
            self.embedded.append(text)
            yield [float(text.lower().count(letter)) for letter in "aeiost "]


class CountingPlugin:
    def __init__(self, model: Counting) -> None:
        self.model = model

    @llm.hookimpl
    def register_embedding_models(self, register: object) -> None:
        register(self.model)  # type: ignore[operator]


@pytest.fixture
def counting() -> Iterator[Counting]:
    model = Counting()
    plugin = CountingPlugin(model)
    llm.plugins.pm.register(plugin, name="convgraph-counting-test")
    try:
        yield model
    finally:
        llm.plugins.pm.unregister(plugin)


def texts_of(path: Path) -> set[str]:
    with convgraph.open(path) as logs:
        nodes = logs.forest().nodes
    return {
        t for role in ("prompt", "response") for t in nodes[role].dropna() if t.strip()
    }


def test_the_store_never_embeds_a_text_twice(
    tmp_path: Path, counting: Counting
) -> None:
    with LlmLog(tmp_path) as log:
        first = log.prompt("What is a tree?")
        log.prompt("And a forest?", continue_conversation=log.thread_of(first))
        asked = ["similar", "--db", log.path, "--embedding-model", "counting"]
        before = texts_of(log.path)
        assert len(before) == 4
        run(*asked, first, "--json")
        assert sorted(counting.embedded) == sorted(before)
        counting.embedded.clear()
        run(*asked, first)
        run(*asked, "--text", "What is a tree?")  # a text the store holds
        assert counting.embedded == []
        log.prompt("Where do roots grow?")
        run(*asked, first)
        assert sorted(counting.embedded) == sorted(texts_of(log.path) - before)
        assert len(counting.embedded) == 2
        counting.embedded.clear()
        # Another file of the same texts: none embedded again.
        copy = tmp_path / "copy.db"
        copy.write_bytes(log.path.read_bytes())
        run("similar", "--db", copy, "--embedding-model", "counting", first)
        assert counting.embedded == []


def test_a_store_of_another_shape_gives_its_texts_with_the_forest(
    tmp_path: Path, counting: Counting
) -> None:
    # A turn of two user messages: the batches refuse at the first, the forest
    # gives the texts instead.
    with LlmLog(tmp_path) as log:
        first = log.prompt("Tell me about narwhals")
        log.prompt("And their tusks?", continue_conversation=log.thread_of(first))
    with sqlite3.connect(log.path) as conn:
        conn.execute(
            "update turns set parent_message_hash = (select hash from messages"
            " where rowid = 3) where rowid = 1"
        )
    conn.close()
    with convgraph.open(log.path) as logs:
        nodes = logs.forest().nodes
        vectors = node_vectors(logs, "counting")
    cells = [t for r in ("prompt", "response") for t in nodes[r].dropna() if t.strip()]
    assert sorted(counting.embedded) == sorted(set(cells))
    assert sorted(vectors.snippets) == sorted(excerpt(text, SNIPPET) for text in cells)


def test_an_update_keeps_the_other_trees_rows_and_embeds_only_the_new(
    tmp_path: Path, counting: Counting
) -> None:
    path = tmp_path / "logs.db"
    conn = legacy_database(path)
    calls = [("a1", "ta", None), ("b1", "tb", None), ("a2", "ta", "a1")]
    calls += [("c1", "tc", None), ("b2", "tb", "b1")]
    for index, (node, tree, parent) in enumerate(calls):
        add_response(
            conn,
            node,
            tree,
            f"prompt {node}",
            parent=parent,
            datetime_utc=timestamp(index),
        )
    conn.commit()

    def rows(vectors: NodeVectors) -> list[tuple[object, ...]]:
        return [
            (vectors.ids[row], vectors.tree_ids[row], vectors.roles[row],
             bool(vectors.active[row]), vectors.snippets[row],
             bytes(vectors.matrix[row]))
            for row in range(len(vectors.ids))
        ]  # fmt: skip

    with convgraph.open(path) as logs:
        before = rows(node_vectors(logs, "counting"))
    assert len(before) == 10 and len(counting.embedded) == 10
    counting.embedded.clear()
    add_response(conn, "a3", "ta", "prompt a3", parent="a2", datetime_utc=timestamp(9))
    conn.commit()
    conn.close()
    with convgraph.open(path) as logs:
        after = rows(node_vectors(logs, "counting"))
    assert sorted(counting.embedded) == ["answer to prompt a3", "prompt a3"]
    # The other trees' rows as they were, in their order; then tree ta's.
    others = [row for row in before if row[1] != "ta"]
    assert after[:6] == others and len(others) == 6
    assert after[6:10] == [row for row in before if row[1] == "ta"]
    assert [row[:5] for row in after[10:]] == [
        ("a3", "ta", "prompt", True, "prompt a3"),
        ("a3", "ta", "response", True, "answer to prompt a3"),
    ]


def test_a_hidden_branch_leaves_the_vectors_and_comes_back(tmp_path: Path) -> None:
    path = tmp_path / "logs.db"
    conn = legacy_database(path)
    for index, (node, parent) in enumerate([("r", None), ("a", "r"), ("b", "r")]):
        add_response(
            conn,
            node,
            "t",
            f"prompt {node}",
            parent=parent,
            datetime_utc=timestamp(index),
        )
    conn.commit()
    conn.close()
    with convgraph.open(path) as logs:
        assert logs.embeddings()[0] == ["r", "r", "a", "a", "b", "b"]
    run("hide", "--db", path, "a")
    with convgraph.open(path) as logs:
        ids, matrix = logs.embeddings()
    assert ids == ["r", "r", "b", "b"]
    assert matrix.shape == (4, 256)
    with convgraph.open(path, hidden=True) as logs:
        assert logs.embeddings()[0] == ["r", "r", "a", "a", "b", "b"]
    run("unhide", "--db", path, "a")
    conn = sqlite3.connect(path)
    add_response(conn, "u", "other", "prompt u", datetime_utc=timestamp(9))
    conn.commit()
    conn.close()
    with convgraph.open(path) as logs:
        ids, matrix = logs.embeddings()
    # The trees changed since are read again, after the rows of the others.
    assert sorted(ids) == ["a", "a", "b", "b", "r", "r", "u", "u"]
    assert matrix.shape == (8, 256)


#: Each prompt and its paraphrase, planted in different trees among others.
PARAPHRASES = [
    (
        "How do I reverse a list in Python?",
        "What is the way to invert the order of a Python list?",
    ),
    ("What is the capital city of France?", "Which city is the capital of France?"),
    (
        "Give me a recipe for chocolate chip cookies",
        "How do I bake chocolate chip cookies at home?",
    ),
    ("How can I sleep better at night?", "Tips for improving my sleep at night"),
    (
        "Explain how photosynthesis works in plants",
        "How do plants make energy from sunlight by photosynthesis?",
    ),
    (
        "What are the symptoms of the flu?",
        "How do I know if I have influenza symptoms?",
    ),
]
OTHERS = [
    "Write a haiku about the sea",
    "Convert 30 degrees Celsius to Fahrenheit",
    "Who won the football world cup in 2010?",
    "Translate good morning into Spanish",
    "Summarise the plot of Hamlet",
    "What is the best way to learn the guitar?",
]


def test_wordllama_finds_each_paraphrase_in_its_top_three(tmp_path: Path) -> None:
    path = tmp_path / "logs.db"
    conn = legacy_database(path)
    prompts = [one for pair in PARAPHRASES for one in pair] + OTHERS
    order = prompts[0::2] + prompts[1::2]  # a pair's two prompts in trees apart
    for index, prompt in enumerate(order):
        add_response(
            conn,
            f"n{prompts.index(prompt)}",
            f"tree{index % 5}",
            prompt,
            response=f"Reply {index}.",
            datetime_utc=timestamp(index),
        )
    conn.commit()
    conn.close()
    with convgraph.open(path) as logs:
        for index, _ in enumerate(PARAPHRASES):
            one, other = f"n{2 * index}", f"n{2 * index + 1}"
            for node, wanted in ((one, other), (other, one)):
                found = logs.similar(node, k=3)
                assert wanted in [record["id"] for record in found], (node, found)
                trees = {
                    logs.tree_of_node(node).graph["tree_id"],
                    logs.tree_of_node(wanted).graph["tree_id"],
                }
                assert len(trees) == 2


def test_nearest_is_exact_and_vectors_are_normalised(seed_db: Path) -> None:
    vectors = node_vectors(convgraph.open(seed_db))
    assert len(vectors.ids) == 40 and vectors.roles[:2] == ["prompt", "response"]
    query = embed_texts(["prompt complex-e"])
    assert query.dtype.name == "float32" and query.shape == (1, 256)
    assert abs(float((query * query).sum()) - 1) < 1e-5
    row, score = nearest(vectors, query[0], 1)[0]
    assert (vectors.ids[row], vectors.roles[row]) == ("complex-e", "prompt")
    assert score == pytest.approx(1, abs=1e-3)
    assert nearest(vectors, query[0], 0) == []


@pytest.mark.parametrize("kind", ["llm", "chatgpt", "claude-code"])
def test_similar_on_every_source(tmp_path: Path, kind: str, seed_db: Path) -> None:
    if kind == "chatgpt":
        path = write_json(tmp_path / "conversations.json", [chatgpt_branches()])
    else:
        path = seed_db if kind == "llm" else AGENT_SESSION
    with convgraph.open(path) as logs:
        nodes = logs.forest().nodes
        node = nodes[nodes["prompt"].fillna("").str.len() > 10].iloc[-1]
        found = logs.similar(text=node["prompt"], k=2)
        by_node = logs.similar(node["id"], k=2)
    assert [found[0][key] for key in ("id", "role", "tree_id", "active")] == [
        node["id"],
        "prompt",
        node["tree_id"],
        bool(node["active"]),
    ]
    assert found[0]["score"] == pytest.approx(1, abs=1e-3)
    assert node["id"] not in [record["id"] for record in by_node]
    shown = run("similar", "--db", path, "--text", node["prompt"], "-n", "1").stdout
    heading, line = shown.splitlines()
    assert heading.split() == [
        "rank",
        "score",
        "tree_id",
        "id",
        "role",
        "active",
        "snippet",
    ]
    assert line.split()[:5] == ["1", "1.00", node["tree_id"], node["id"], "prompt"]


def test_bad_input_is_one_line(seed_db: Path) -> None:
    cases = [
        (["nope"], "Error: no node with id 'nope'\n"),
        (
            ["complex-c", "--embedding-model", "nope"],
            "Error: unknown embedding model 'nope': `llm embed-models` lists them\n",
        ),
        ([], "Error: give a NODE_ID or --text, one of them\n"),
    ]
    for words, said in cases:
        result = run("similar", "--db", seed_db, *words, expect=2)
        assert result.stderr == said


def test_llm_embeds_with_wordllama_offline(tmp_path: Path) -> None:
    from llm.cli import cli

    with LlmLog(tmp_path):
        vector = json.loads(
            run("embed", "-m", "wordllama", "-c", "hello", cli=cli).stdout
        )
    assert len(vector) == 256
    assert sum(value * value for value in vector) > 0


def test_the_two_step_search_finds_what_the_exact_one_does(tmp_path: Path) -> None:
    import numpy as np

    from convgraph.meaning.store import NodeVectors, Rows, _save_coarse

    rows = np.random.default_rng(7).standard_normal((5000, 256)).astype(np.float32)
    rows = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float16)
    _save_coarse(tmp_path, rows)
    coarse = np.fromfile(tmp_path / "coarse.bin", np.float32).reshape(5000, -1)
    basis = np.load(tmp_path / "basis.npy")
    assert coarse.shape == (5000, 64) and basis.shape == (256, 64)
    exact = NodeVectors([], [], [], rows)
    two_step = NodeVectors([], [], [], rows, coarse=coarse, basis=basis)
    # as `similar` reads them: from the files, a chunk or a row at a time
    rows.tofile(tmp_path / "matrix.bin")
    from_files = NodeVectors(
        [], [], [], rows, coarse=Rows(tmp_path / "coarse.bin", 5000, "float32"),
        basis=basis, file=Rows(tmp_path / "matrix.bin", 5000),
    )  # fmt: skip
    assert from_files.coarse is not None
    assert np.array_equal(from_files.coarse[4090:4100], coarse[4090:4100])
    assert np.array_equal(from_files.rows(np.array([3, 4999, 7])), rows[[3, 4999, 7]])
    for row in (0, 1234, 4999):
        query = rows[row].astype(np.float32)
        assert nearest(two_step, query, 1)[0][0] == row
        assert [hit for hit, _ in nearest(two_step, query, 5)] == [
            hit for hit, _ in nearest(exact, query, 5)
        ]
        assert nearest(from_files, query, 5) == nearest(two_step, query, 5)


def test_a_secret_is_redacted_in_what_similar_shows(tmp_path: Path) -> None:
    path = tmp_path / "logs.db"
    conn = legacy_database(path)
    add_response(
        conn,
        "r",
        "t",
        "deploy AKIAZ7Q4XKJ3M2N8P5LW to production",
        datetime_utc=timestamp(0),
    )
    conn.commit()
    conn.close()
    with convgraph.open(path, redact=True) as logs:
        (found,) = [
            r for r in logs.similar(text="deploy", k=2) if r["role"] == "prompt"
        ]
    assert "AKIAZ7Q4XKJ3M2N8P5LW" not in found["snippet"]
    assert found["snippet"].startswith("deploy [REDACTED")


def test_without_wordllama_the_error_names_the_extra(seed_db: Path) -> None:
    import subprocess
    import sys

    # A process where `import wordllama` fails, as on a machine without it.
    script = (
        "import sys; sys.modules['wordllama'] = None\n"
        "from convgraph.cli import cli\n"
        f"cli(['similar', '--db', {str(seed_db)!r}, '--text', 'trees'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr == (
        "Error: embedding with WordLlama needs wordllama:"
        " pip install 'convgraph[meaning]'\n"
    )
