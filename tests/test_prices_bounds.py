"""Usage and prices at the edge (issue 39, family 5): numbers from files
summed without wrapping, a count no request has reported by `check` and
priced at nothing, names from data shown as a terminal shows data, chart
labels drawn as text and a chart of nothing drawn as nothing.

The files are llm's own (`llm -m echo`), their figures then set to what a
damaged or hostile file holds; the prices are genai-prices' own answers
(`calc_price`), asked independently here.
"""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price

from convgraph.analysis.prices import MOST_TOKENS
from convgraph.text import cell_width, terminal_text
from tests.databases import LlmLog
from tests.helpers import run, run_on_a_terminal

BIG = 2**63 - 1


def logged(directory: Path, figures: list[tuple[str, object, object]]) -> Path:
    """A file of one prompt per entry of `figures` (model, input tokens,
    output tokens: each stored as given, a REAL or text included), all on
    2025-06-02."""
    with LlmLog(directory) as log:
        turns = [log.prompt(f"prompt {index}") for index in range(len(figures))]
    conn = sqlite3.connect(log.path)
    with conn:
        for turn, (model, tokens_in, tokens_out) in zip(turns, figures, strict=True):
            conn.execute(
                "update turns set model = ?, input_tokens = ?, output_tokens = ?,"
                " datetime_utc = '2025-06-02T10:00:00+00:00' where id = ?",
                [model, tokens_in, tokens_out, turn],
            )
    conn.close()
    return log.path


def price(model: str, tokens_in: int, tokens_out: int) -> float:
    """genai-prices' own price of one request on the files' day."""
    usage = Usage(input_tokens=tokens_in, output_tokens=tokens_out)
    moment = datetime(2025, 6, 2, tzinfo=UTC)
    return float(calc_price(usage, model, genai_request_timestamp=moment).total_price)


def by_model(db: Path) -> list[dict]:
    return json.loads(run("stats", "--db", db, "--by", "model", "--json").stdout)


def test_sums_past_64_bits_are_exact(tmp_path: Path) -> None:
    db = logged(tmp_path, [("gpt-4o", BIG, 10), ("gpt-4o", 1, 20)])
    (row,) = by_model(db)
    assert row["input_tokens"] == 2**63
    assert row["output_tokens"] == 30
    # The impossible count has no cost; the other request has its own.
    assert row["cost_usd"] == pytest.approx(price("gpt-4o", 1, 20), rel=1e-12)
    table = run("stats", "--db", db, "--by", "model").stdout
    assert "9223372036854775808" in table and "-9223372036854775808" not in table
    trees = json.loads(run("stats", "--db", db, "--json").stdout)
    assert sorted(tree["input_tokens"] for tree in trees) == [1, BIG]
    # The table's path (a filter) sums the same as the small file's.
    kept = json.loads(run("stats", "--db", db, "--json", "--model", "gpt*").stdout)
    assert sorted(tree["input_tokens"] for tree in kept) == [1, BIG]


def test_a_real_past_64_bits_beside_the_largest_integer(tmp_path: Path) -> None:
    db = logged(tmp_path, [("gpt-4o", BIG, 10), ("gpt-4o", 1e19, 20)])
    (row,) = by_model(db)
    # A REAL is no token count: the reader leaves it out.
    assert row["input_tokens"] == BIG
    assert row["output_tokens"] == 30
    assert row["cost_usd"] == pytest.approx(price("gpt-4o", 0, 20), rel=1e-12)


def test_negative_and_impossible_counts_are_problems_without_cost(
    tmp_path: Path,
) -> None:
    # gemini-1.5-pro's prices are tiered: a negative count was a ValueError.
    db = logged(
        tmp_path,
        [
            ("gemini-1.5-pro", -5, 10),
            ("gemini-1.5-pro", 1000, 100),
            ("gpt-4o", MOST_TOKENS + 1, 1),
            ("gpt-4o", 100, -1),
        ],
    )
    rows = {row["model"]: row for row in by_model(db)}
    assert rows["gemini-1.5-pro"]["input_tokens"] == 995
    assert rows["gemini-1.5-pro"]["cost_usd"] == pytest.approx(
        price("gemini-1.5-pro", 1000, 100), rel=1e-12
    )
    assert rows["gpt-4o"]["cost_usd"] is None
    checked = run("check", "--db", db, expect=1)
    lines = checked.stdout.splitlines()
    assert len(lines) == 3
    assert all(line.startswith("impossible-count: ") for line in lines)
    assert [line.split(" counts ")[1] for line in lines] == [
        "input_tokens -5: no request does; it has no cost",
        f"input_tokens {MOST_TOKENS + 1}: no request does; it has no cost",
        "output_tokens -1: no request does; it has no cost",
    ]
    records = json.loads(run("check", "--db", db, "--json", expect=1).stdout)
    assert {record["kind"] for record in records} == {"impossible-count"}


def test_an_unknown_models_name_reaches_the_terminal_made_safe(tmp_path: Path) -> None:
    hostile = "evil\x1b]0;pwned\x07\x9b2J"
    db = logged(tmp_path, [(hostile, 5, 5)])
    result = run("stats", "--db", db, "--by", "model")
    assert result.stderr == (
        f"no price known for {terminal_text(hostile)}: their cost_usd is null,"
        " not guessed\n"
    )
    assert result.stderr.startswith("no price known for evil␛]0;pwned␇")
    for control in ("\x1b", "\x07", "\x9b"):
        assert control not in result.stderr and control not in result.stdout


def test_a_chart_draws_a_models_name_as_text(tmp_path: Path) -> None:
    name = "my$\\frac{$model"
    db = logged(tmp_path, [(name, 5, 5), ("gpt-4o", 5, 5)])
    chart = tmp_path / "usage.svg"
    run("stats", "--db", db, "--by", "day,model", "--plot", chart)
    drawn = chart.read_text()
    assert name in drawn
    png = tmp_path / "usage.png"
    run("stats", "--db", db, "--by", "model", "--plot", png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_chart_of_nothing(tmp_path: Path) -> None:
    db = logged(tmp_path, [("gpt-4o", 5, 5)])
    chart = tmp_path / "nothing.svg"
    nothing = ("--since", "2030-01-01")
    result = run("stats", "--db", db, "--by", "week", "--plot", chart, *nothing)
    assert "<svg" in chart.read_text()
    assert result.stdout == ""
    drawn = run("stats", "--db", db, "--by", "week", "--plot", *nothing)
    assert drawn.stdout == "nodes: no usage to draw\n"


def test_stats_by_week_fits_80_columns(tmp_path: Path) -> None:
    db = logged(tmp_path, [("gpt-4o", 1000, 100), ("claude-3-5-sonnet-latest", 5, 5)])
    env = {**os.environ, "COLUMNS": "80", "LINES": "24"}
    for keys in ("week", "week,model", "model"):
        shown = run_on_a_terminal(
            "stats", "--db", db, "--by", keys, size=(24, 80), env=env
        )
        assert shown.status == 0
        lines = shown.shown.decode().splitlines()
        assert lines and all(cell_width(line) <= 80 for line in lines), lines
        assert lines[0].split()[: len(keys.split(","))] == keys.split(",")
        assert "cost_usd" in lines[0] and "abandoned_share" in lines[0]
