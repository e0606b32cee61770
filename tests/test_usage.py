"""Usage over time (`convgraph.analysis.usage`, `convgraph stats --by`):
the figures against a plain-Python count over the same records, the costs
against genai-prices' own answer, the charts read back."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from genai_prices import Usage, calc_price
from lxml import etree

from convgraph.analysis.charts import terminal_chart
from convgraph.analysis.usage import usage_table
from tests.databases import add_response, legacy_database
from tests.helpers import read_forest, run

#: (id, conversation, parent, model, time, input tokens, output tokens): two
#: trees over two ISO weeks and two months and years (2026-12-31 is in
#: 2026-W53, as is 2027-01-01), a branch in each, a model genai-prices does
#: not know (echo), a tiered one past its tier (gemini-1.5-pro), a node
#: without tokens.
RECORDS = [
    ("a1", "a", None, "gpt-4o", "2026-12-28T09:00:00", 1000, 200),
    ("a2", "a", "a1", "gpt-4o", "2026-12-28T09:05:00", 1500, 300),
    ("a3", "a", "a1", "gpt-4o-mini", "2026-12-31T23:59:00", 2000, 100),
    ("a4", "a", "a3", "echo", "2027-01-01T00:01:00", 5, 5),
    ("b1", "b", None, "gemini-1.5-pro", "2027-01-04T10:00:00", 200_000, 1000),
    ("b2", "b", "b1", "gemini-1.5-pro", "2027-01-04T10:01:00", 1000, 50),
    ("b3", "b", "b1", "gpt-4o", "2027-01-05T08:00:00", None, None),
    ("b4", "b", "b3", "gpt-4o", "2027-01-05T08:01:00", 10, 20),
    ("b5", "b", "b3", "gpt-4o", "2027-01-05T08:02:00", 30, 40),
]


@pytest.fixture(scope="module")
def usage_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("usage") / "logs.db"
    conn = legacy_database(path)
    for node, conversation, parent, model, moment, tokens_in, tokens_out in RECORDS:
        add_response(
            conn,
            node,
            conversation,
            f"prompt {node}",
            parent=parent,
            model=model,
            datetime_utc=moment,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
        )
    conn.commit()
    conn.close()
    return path


# -- an independent count, in plain Python over the records -------------------


def key_of(record: tuple, key: str) -> str:
    moment = datetime.fromisoformat(record[4])
    if key == "day":
        return moment.strftime("%Y-%m-%d")
    if key == "month":
        return moment.strftime("%Y-%m")
    if key == "week":
        year, week, _ = moment.isocalendar()
        return f"{year}-W{week:02d}"
    return str(record[3])


def package_cost(record: tuple) -> Decimal | None:
    """genai-prices' own answer for one record: its model's price on its day."""
    _, _, _, model, moment, tokens_in, tokens_out = record
    if tokens_in is None and tokens_out is None:
        return None
    day = datetime.fromisoformat(moment).date()
    try:
        price = calc_price(
            Usage(input_tokens=tokens_in or 0, output_tokens=tokens_out or 0),
            model_ref=model,
            genai_request_timestamp=datetime(day.year, day.month, day.day, tzinfo=UTC),
        )
    except LookupError:
        return None
    return price.total_price


def expected(keys: list[str]) -> list[dict[str, Any]]:
    children: dict[str, list[str]] = defaultdict(list)
    for node, _, parent, *_ in RECORDS:
        if parent:
            children[parent].append(node)
    parent_of = {node: parent for node, _, parent, *_ in RECORDS}
    # The active path: the last logged node of each tree and its ancestors.
    active: set[str] = set()
    for conversation in {record[1] for record in RECORDS}:
        node: str | None = [r for r in RECORDS if r[1] == conversation][-1][0]
        while node:
            active.add(node)
            node = parent_of[node]
    groups: dict[tuple, list[tuple]] = defaultdict(list)
    for record in RECORDS:
        groups[tuple(key_of(record, key) for key in keys)].append(record)
    rows = []
    for group in sorted(groups):
        members = groups[group]
        costs = [package_cost(record) for record in members]
        known = [cost for cost in costs if cost is not None]
        tokens_in = [r[5] for r in members if r[5] is not None]
        tokens_out = [r[6] for r in members if r[6] is not None]
        # What the branches left spent: every node off the active path.
        left = [r for r in members if r[0] not in active]
        left_in = sum(r[5] or 0 for r in left)
        left_out = sum(r[6] or 0 for r in left)
        left_costs = [
            cost for r, cost in zip(members, costs, strict=True) if r in left and cost
        ]
        whole = sum(tokens_in) + sum(tokens_out)
        rows.append(
            {
                **dict(zip(keys, group, strict=True)),
                "conversations": len({r[1] for r in members}),
                "nodes": len(members),
                "branch_points": sum(len(children[r[0]]) > 1 for r in members),
                "abandoned_branches": sum(
                    not children[r[0]] and r[0] not in active for r in members
                ),
                "input_tokens": sum(tokens_in) if tokens_in else None,
                "output_tokens": sum(tokens_out) if tokens_out else None,
                "cost_usd": float(sum(known)) if known else None,
                "abandoned_input_tokens": left_in if tokens_in else None,
                "abandoned_output_tokens": left_out if tokens_out else None,
                "abandoned_cost_usd": float(sum(left_costs)) if known else None,
                "abandoned_share": (left_in + left_out) / whole if whole else None,
            }
        )
    return rows


@pytest.mark.parametrize(
    "by", ["day", "week", "month", "model", "week,model", "month,day"]
)
def test_usage_figures_match_an_independent_count(usage_db: Path, by: str):
    result = run("stats", "--db", usage_db, "--by", by, "--json")
    got = json.loads(result.stdout)
    want = expected(by.split(","))
    for column in ("cost_usd", "abandoned_cost_usd"):
        got_costs = [row[column] for row in got]
        want_costs = [row[column] for row in want]
        # A group of unknown models has no cost (None), the others agree to
        # the last digits (pytest 9.2's approx takes no None beside a
        # tolerance).
        assert [cost is None for cost in got_costs] == [
            cost is None for cost in want_costs
        ]
        assert [cost for cost in got_costs if cost is not None] == pytest.approx(
            [cost for cost in want_costs if cost is not None], rel=1e-12, abs=1e-15
        )
        for row in [*got, *want]:
            row.pop(column)
    assert got == want
    assert (
        result.stderr
        == "no price known for echo: their cost_usd is null, not guessed\n"
    )


def test_costs_are_the_packages_own_answer(usage_db: Path):
    rows = json.loads(run("stats", "--db", usage_db, "--by", "model", "--json").stdout)
    cost = {row["model"]: row["cost_usd"] for row in rows}
    assert cost["echo"] is None
    # Past its tier, every input token of gemini-1.5-pro's first node costs
    # the higher price: priced node by node.
    gemini = [package_cost(record) for record in RECORDS[4:6]]
    assert cost["gemini-1.5-pro"] == pytest.approx(float(sum(gemini)), rel=1e-12)
    assert (
        gemini[0]
        == calc_price(
            Usage(input_tokens=200_000, output_tokens=1000),
            model_ref="gemini-1.5-pro",
            genai_request_timestamp=datetime(2027, 1, 4, tzinfo=UTC),
        ).total_price
    )
    mini = calc_price(
        Usage(input_tokens=2000, output_tokens=100),
        model_ref="gpt-4o-mini",
        genai_request_timestamp=datetime(2026, 12, 31, tzinfo=UTC),
    ).total_price
    assert cost["gpt-4o-mini"] == pytest.approx(float(mini), rel=1e-12)


def test_week_is_iso_and_utc(usage_db: Path):
    rows = json.loads(run("stats", "--db", usage_db, "--by", "week", "--json").stdout)
    assert [(row["week"], row["nodes"]) for row in rows] == [
        ("2026-W53", 4),
        ("2027-W01", 5),
    ]


def test_usage_in_range_counts_only_the_matched_nodes(usage_db: Path):
    args = ("--since", "2027-01-01", "--by", "month", "--json")
    whole = json.loads(run("stats", "--db", usage_db, *args).stdout)
    # Tree a is in (a4 is in 2027) and counted whole, in both months.
    assert [(row["month"], row["nodes"]) for row in whole] == [
        ("2026-12", 3),
        ("2027-01", 6),
    ]
    matched = json.loads(
        run("stats", "--db", usage_db, *args, "--nodes-in-range").stdout
    )
    assert [(row["month"], row["nodes"]) for row in matched] == [("2027-01", 6)]


def test_stats_nodes_in_range(usage_db: Path):
    result = run(
        "stats",
        "--db",
        usage_db,
        "--model",
        "gpt-4o-mini",
        "--nodes-in-range",
        "--json",
    )
    (row,) = json.loads(result.stdout)
    assert row["tree_id"] == "a"
    assert (row["nodes"], row["roots"], row["leaves"]) == (1, 1, 2)
    assert (row["input_tokens"], row["output_tokens"], row["models"]) == (
        2000,
        100,
        ["gpt-4o-mini"],
    )
    assert row["first_datetime"] == row["last_datetime"] == "2026-12-31T23:59:00+00:00"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--by", "weak"),
            "--by weak: give one or more of day, week, month, model, project, source, topic, each once",
        ),
        (
            ("--by", "week,week"),
            "--by week,week: give one or more of day, week, month, model, project, source, topic, each once",
        ),
        (("--plot",), "--plot and --measure draw usage over time: give --by"),
        (
            ("--nodes-in-range",),
            "--nodes-in-range counts the nodes the filters match: give one",
        ),
        (
            ("--by", "week", "--measure", "bytes"),
            "--measure bytes: one of conversations, nodes, branch_points,"
            " abandoned_branches, input_tokens, output_tokens, cost_usd,"
            " abandoned_input_tokens, abandoned_output_tokens,"
            " abandoned_cost_usd, abandoned_share",
        ),
        (
            ("--by", "week", "--plot", "chart.gif"),
            "--plot chart.gif: a chart is written as .png or .svg",
        ),
    ],
)
def test_bad_usage_options_are_one_line(usage_db: Path, args: tuple, message: str):
    result = run("stats", "--db", usage_db, *args, expect=2)
    assert result.stderr == f"Error: {message}\n"


def test_without_the_extra_one_line_names_it(usage_db: Path):
    # genai-prices made unimportable in a real run of the command line.
    script = (
        "import sys; sys.modules['genai_prices'] = None\n"
        "from convgraph.cli import cli\n"
        f"cli(['stats', '--db', {str(usage_db)!r}, '--by', 'week'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert done.stderr == (
        "Error: convgraph stats --by needs genai-prices:"
        " pip install 'convgraph[usage]'\n"
    )


# -- charts ------------------------------------------------------------------------


def test_plot_writes_a_png(usage_db: Path, tmp_path: Path):
    chart = tmp_path / "usage.png"
    result = run("stats", "--db", usage_db, "--by", "week", "--plot", chart, "--json")
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(json.loads(result.stdout)) == 2


def test_plot_writes_an_svg_with_a_bar_per_group_and_series(
    usage_db: Path, tmp_path: Path
):
    chart = tmp_path / "usage.svg"
    run("stats", "--db", usage_db, "--by", "week,model", "--plot", chart)
    root = etree.parse(str(chart)).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    # The text stays text (not glyph paths): the title, the weeks, the models.
    texts = [text.strip() for text in root.itertext() if text.strip()]
    assert "nodes" in texts
    assert {"2026-W53", "2027-W01"} <= set(texts)
    assert {"echo", "gemini-1.5-pro", "gpt-4o", "gpt-4o-mini"} <= set(texts)


def test_terminal_chart_fits_a_fixed_width(usage_db: Path):
    forest = read_forest(usage_db, text=False)
    table = usage_table(forest, ["week", "model"])
    drawn = terminal_chart(table, "nodes", 72, 18, color=False)
    lines = drawn.splitlines()
    assert len(lines) == 18
    assert all(len(line) <= 72 for line in lines)
    assert lines[0].strip() == "nodes"
    assert "2026-W53" in lines[-1] and "2027-W01" in lines[-1]
    for model in ("echo", "gemini-1.5-pro", "gpt-4o", "gpt-4o-mini"):
        assert f"█ {model} " in drawn


def test_plot_in_the_terminal(usage_db: Path):
    result = run(
        "stats",
        "--db",
        usage_db,
        "--by",
        "month",
        "--plot",
        "--measure",
        "input_tokens",
        env={"COLUMNS": "64", "LINES": "20"},
    )
    lines = result.stdout.splitlines()
    assert lines[0].strip() == "input_tokens"
    assert len(lines) == 16
    assert all(len(line) <= 64 for line in lines)
    assert "2026-12" in lines[-1] and "2027-01" in lines[-1]


def test_by_day_counts_a_day_in_utc(usage_db: Path):
    rows = json.loads(run("stats", "--db", usage_db, "--by", "day", "--json").stdout)
    assert [(row["day"], row["nodes"]) for row in rows] == [
        ("2026-12-28", 2),
        ("2026-12-31", 1),
        ("2027-01-01", 1),
        ("2027-01-04", 2),
        ("2027-01-05", 3),
    ]


def test_the_notebook_shows_usage_over_time():
    import nbformat

    notebook = nbformat.read(
        Path(__file__).parent.parent / "notebooks" / "analysis.ipynb", as_version=4
    )
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    table = next(cell for cell in code if "usage_table(forest" in cell.source)
    html = "".join(
        output.get("data", {}).get("text/html", "") for output in table.outputs
    )
    assert "cost_usd" in html and "claude-3.5-sonnet" in html
    chart = code[code.index(table) + 1]
    assert any("image/png" in output.get("data", {}) for output in chart.outputs)


def test_usage_adds_up_to_the_conversation_table(seed_db: Path):
    # The four scenarios, two roots in one tree among them: the start of
    # that tree is a branch point in both tables.
    from convgraph.analysis.stats import conversation_table

    forest = read_forest(seed_db, text=False)
    usage = usage_table(forest, ["model"])
    trees = conversation_table(forest)
    for column in ("nodes", "branch_points", "abandoned_branches", "input_tokens"):
        assert usage[column].sum() == trees[column].sum()
    # branch 1, complex 3 (its root, b and e), multiple-roots its start.
    assert usage["branch_points"].sum() == 5
