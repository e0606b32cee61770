"""The branch-diff benchmark: diffs and comparisons of 100 KB answers.

`convgraph.analysis.diff.diff` of two branches whose answers are 100 KB each (the
unified diffs of prompts and responses, and the responses' similarity), beside
a bare `difflib.unified_diff` of the same two responses; and
`convgraph.analysis.diff.compare` of ten 100 KB siblings (45 similarities), beside the
bare line-level `SequenceMatcher.ratio` of the same pairs. The texts are
synthetic prose: words drawn from a 5,000-word vocabulary with Zipf's
frequencies (so a few words are common, as in English), 80-character lines,
sentences and paragraphs; a retry is a copy with a share of its words
replaced, dropped or added. The one-line cases are the same texts with their
line breaks turned into spaces, leaving only sentences for `similarity` to
align before it matches words. The last compare row is the same mix at 10 KB
an answer, a more usual length.

Run with ``python -m benchmarks.bench_diff [--repeat N]``; each figure is the
best of N runs in this process.
"""

from __future__ import annotations

import argparse
import difflib
import random
import time
from collections.abc import Callable
from typing import Any

import networkx as nx

from convgraph.analysis.diff import compare, diff

TEXT_SIZE = 100_000
SIBLINGS = 10
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _vocabulary(size: int = 5000, seed: int = 7) -> tuple[list[str], list[float]]:
    rng = random.Random(seed)
    words = ["".join(rng.choices(LETTERS, k=rng.randint(1, 10))) for _ in range(size)]
    return words, [1 / rank for rank in range(1, size + 1)]


WORDS, WEIGHTS = _vocabulary()


def prose(seed: int, size: int = TEXT_SIZE, width: int = 80) -> str:
    """`size` characters of synthetic prose in lines of about `width`."""
    rng = random.Random(seed)
    lines: list[str] = []
    length = 0
    while length < size:
        line: list[str] = []
        while sum(map(len, line)) + len(line) < width:
            word = rng.choices(WORDS, WEIGHTS)[0]
            line.append(word + ("." if rng.random() < 0.06 else ""))
        lines.append(" ".join(line))
        if rng.random() < 0.1:
            lines.append("")
        length += len(lines[-1]) + 1
    return "\n".join(lines)[:size]


def retry(text: str, seed: int, rate: float) -> str:
    """A copy of `text` with `rate` of its words replaced, dropped or followed
    by a new word (a third each)."""
    rng = random.Random(seed)
    lines = []
    for line in text.split("\n"):
        words: list[str] = []
        for word in line.split(" "):
            draw = rng.random()
            if draw < rate / 3:
                continue
            if draw < 2 * rate / 3:
                words.append(rng.choice(WORDS))
                continue
            words.append(word)
            if draw < rate:
                words.append(rng.choice(WORDS))
        lines.append(" ".join(words))
    return "\n".join(lines)


def one_line(text: str) -> str:
    return text.replace("\n", " ")


def alternatives(responses: list[str]) -> nx.DiGraph:
    """A tree of one question and one child per response, with the node
    attributes of convgraph's contract."""
    tree = nx.DiGraph(tree_id="bench", name=None)
    ids = ["question", *(f"answer-{n}" for n in range(1, len(responses) + 1))]
    texts = ["", *responses]
    for node, response in zip(ids, texts, strict=True):
        tree.add_node(
            node,
            conversation_id="bench",
            prompt="Write at length about trees." if node != "question" else "Begin",
            system=None,
            response=response,
            model="echo",
            datetime_utc=None,
            input_tokens=10,
            output_tokens=len(response) // 4,
            duration_ms=1000,
            source="responses",
        )
    tree.add_edges_from(("question", node) for node in ids[1:])
    return tree


def best(function: Callable[[], Any], repeat: int) -> float:
    """The best wall-clock time of `repeat` calls, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def bare_unified_diff(first: str, second: str) -> list[str]:
    return list(
        difflib.unified_diff(first.splitlines(), second.splitlines(), lineterm="")
    )


def bare_line_ratios(texts: list[str]) -> list[float]:
    lines = [text.splitlines() for text in texts]
    return [
        difflib.SequenceMatcher(None, lines[i], lines[j]).ratio()
        for i in range(len(lines))
        for j in range(i + 1, len(lines))
    ]


def diff_cases() -> list[tuple[str, str, str]]:
    base = prose(1)
    near = retry(base, 2, 0.05)
    other = prose(3)
    return [
        ("retry, 5% of words changed", base, near),
        ("unrelated answers", base, other),
        ("identical answers", base, base),
        ("one line each, retry", one_line(base), one_line(near)),
        ("one line each, unrelated", one_line(base), one_line(other)),
    ]


def compare_cases() -> list[tuple[str, list[str]]]:
    def mixed(size: int) -> list[str]:
        base = prose(1, size)
        rates = enumerate([0.02, 0.05, 0.1, 0.2], 10)
        retries = [retry(base, seed, rate) for seed, rate in rates]
        return [base, *retries, *(prose(seed, size) for seed in range(20, 25))]

    retries = mixed(TEXT_SIZE)[:5]
    return [
        ("5 retries of one answer + 5 unrelated", mixed(TEXT_SIZE)),
        ("10 unrelated answers", [prose(seed) for seed in range(30, 40)]),
        ("10 retries, one line each", [one_line(t) for t in retries + retries[::-1]]),
        ("the first row's mix at 10 KB an answer", mixed(10_000)),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_diff")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure")
    args = parser.parse_args(argv)

    print(f"convgraph.diff benchmark: best of {args.repeat} runs, seconds")
    print()
    print(f"diff(tree, a, b) of two {TEXT_SIZE // 1000} KB responses")
    print(f"  {'case':<30} {'diff':>8} {'similarity':>11} {'bare udiff':>11}")
    for name, first, second in diff_cases():
        tree = alternatives([first, second])
        seconds = best(
            lambda tree=tree: diff(tree, "answer-1", "answer-2"), args.repeat
        )
        bare = best(lambda a=first, b=second: bare_unified_diff(a, b), args.repeat)
        score = diff(tree, "answer-1", "answer-2").steps[0].response_similarity
        print(f"  {name:<30} {seconds:>8.3f} {score:>11.3f} {bare:>11.3f}")
    print()
    pairs = SIBLINGS * (SIBLINGS - 1) // 2
    print(
        f"compare(tree, node) of {SIBLINGS} siblings of {TEXT_SIZE // 1000} KB ({pairs} pairs)"
    )
    print(f"  {'case':<38} {'compare':>8} {'bare line ratios':>17}")
    for name, texts in compare_cases():
        tree = alternatives(texts)
        seconds = best(lambda tree=tree: compare(tree, "question"), args.repeat)
        bare = best(lambda texts=texts: bare_line_ratios(texts), args.repeat)
        print(f"  {name:<38} {seconds:>8.3f} {bare:>17.3f}")


if __name__ == "__main__":
    main()
