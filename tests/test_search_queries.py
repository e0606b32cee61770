"""Queries are text (issue 39, families 3 and 4): any string gives hits or
one line (NUL, lone surrogates, a byte that is not UTF-8 from the command
line, 100k characters, the engine's syntax errors), `-n` bounded, scripts
without spaces found inside a sentence (Japanese with 々 and half-width
katakana, Chinese, Thai, Korean), text made NFKC, and time bounds from year
1 to year 9999 comparing a node's time as every other command does
(`model.filters.tree_is_in`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from convgraph import parts
from convgraph.errors import ConvgraphError
from convgraph.model.filters import TreeFilter, tree_is_in
from convgraph.search.query import marked, query_words, search
from convgraph.search.text import normalized, parts_text, spaced
from convgraph.times import parse_bound
from tests.databases import add_response, legacy_database
from tests.helpers import read_forest, run

#: (tree, id, prompt, time): one conversation a node, so that a filter
#: keeps or leaves out each node's tree alone.
NODES = [
    ("jp", "jp", "時々東京タワーに行きます", "2024-05-01T10:00:00"),
    ("half", "half", "ﾀﾜｰの写真", "2024-05-02T10:00:00"),
    ("zh", "zh", "我们明天去北京大学", "2024-05-03T10:00:00"),
    ("th", "th", "สวัสดีครับ ผมชื่อสมชาย", "2024-05-04T10:00:00"),
    ("ko", "ko", "서울에서 만나요", "2024-05-05T10:00:00"),
    ("wide", "wide", "ＦＵＬＬ width ﬁsh", "2024-05-06T10:00:00"),
    ("cafe", "cafe", "a café au lait", "2024-05-07T10:00:00"),
    ("year1", "year1", "a zero time from Go", "0001-01-01T00:00:00"),
    ("y1677", "y1677", "an early time", "1677-06-01T00:00:00"),
    ("y2300", "y2300", "a late time", "2300-01-01T00:00:00"),
    ("y9999", "y9999", "the last time", "9999-12-31T23:59:59"),
    ("west", "west", "a time west of Greenwich", "2024-05-08T10:00:00-05:00"),
    ("none", "none", "no time at all", None),
]


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(directory))
    return directory


@pytest.fixture(scope="module")
def scripts_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scripts") / "logs.db"
    conn = legacy_database(path, with_parent=True)
    for tree, node, prompt, time in NODES:
        add_response(
            conn, node, tree, prompt, response="ok", datetime_utc=time, model="echo"
        )
    conn.commit()
    conn.close()
    return path


def ids(db: Path, query: str, **options: object) -> list[str]:
    return sorted(hit.id for hit in search(db, query, **options))  # type: ignore[arg-type]


# -- scripts without spaces, NFKC ----------------------------------------------


@pytest.mark.parametrize(
    "query, found",
    [
        ("時々", ["jp"]),
        ("東京", ["jp"]),
        ("タワー", ["half", "jp"]),
        ("ﾀﾜｰ", ["half", "jp"]),
        ("写真", ["half"]),
        ("北京", ["zh"]),
        ("大学", ["zh"]),
        ("京都", []),
        ("สวัสดี", ["th"]),
        ("สมชาย", ["th"]),
        ("서울", ["ko"]),
        ("full", ["wide"]),
        ("fish", ["wide"]),
        ("FULL", ["wide"]),
        ("cafe", ["cafe"]),
        ("CAFÉ", ["cafe"]),
    ],
)
def test_words_inside_sentences_are_found(scripts_db, query, found):
    assert ids(scripts_db, query) == found


def test_a_word_of_a_script_without_spaces_is_one_mark(scripts_db):
    (hit,) = search(scripts_db, "東京")
    assert hit.snippet == "時々東京タワーに行きます"
    assert hit.marks == [[2, 4]]
    (hit,) = search(scripts_db, "時々")
    assert hit.marks == [[0, 2]]


# -- any string ------------------------------------------------------------------


@pytest.mark.parametrize(
    "query, found",
    [
        ("zero\x00", ["year1"]),  # a NUL is no letter: the word is "zero"
        ("ze\x00ro", []),  # two tokens, "ze" then "ro": no such phrase
        ("caf\udce9", ["cafe"]),  # a Latin-1 byte, as Python escapes it
        ("caf\ud800", []),  # any other lone surrogate: U+FFFD, no letter
        ("x" * 200, []),  # longer than any token indexed: found nowhere
        ("💥 zero", ["year1"]),  # a word without letters is no word
    ],
)
def test_any_string_gives_hits_or_nothing(scripts_db, query, found):
    assert ids(scripts_db, query) == found


@pytest.mark.parametrize("query", ["", " ", "\x00", "💥", "\ud800", "-- ( ) *"])
def test_a_query_without_a_word_is_one_error(scripts_db, query):
    with pytest.raises(ConvgraphError, match="^nothing to search for"):
        search(scripts_db, query)


def test_a_query_of_a_hundred_thousand_characters(scripts_db):
    words = " ".join(f"word{index}" for index in range(14_000))
    assert len(words) > 100_000
    assert search(scripts_db, words) == []
    assert ids(scripts_db, "time " * 20_000) == [
        "none",
        "west",
        "y1677",
        "y2300",
        "y9999",
        "year1",
    ]
    assert len(query_words("東" * 100_000)) == 1
    assert search(scripts_db, "東" * 100_000) == []


def test_a_byte_that_is_not_utf8_on_the_command_line(scripts_db, cache):
    done = subprocess.run(
        [sys.executable, "-m", "convgraph", "search", "--db", str(scripts_db)]
        + [b"caf\xe9"],  # type: ignore[list-item]
        capture_output=True,
        env={**os.environ, "XDG_CACHE_HOME": str(cache), "LC_ALL": "C.UTF-8"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines()[1] == "   a café au lait"


@pytest.mark.parametrize(
    "query, error",
    [
        ('"unbalanced', 'Syntax Error: "unbalanced'),
        ("NEAR(", "Syntax Error: NEAR("),
        ("prompt:", "Syntax Error: prompt:"),
        ("nosuchfield:x", "Field does not exist: 'nosuchfield'"),
    ],
)
def test_query_syntax_errors_are_one_line(scripts_db, query, error):
    result = run("search", "--db", scripts_db, "--query-syntax", "--", query, expect=2)
    # Told before any index is built.
    assert result.stderr == (
        f"Error: not a query in the search engine's language: {error}\n"
    )


def test_query_syntax_takes_anything_else(scripts_db):
    assert len(search(scripts_db, "*", query_syntax=True)) == len(NODES)
    assert ids(scripts_db, "時々 OR 서울", query_syntax=True) == ["jp", "ko"]
    assert ids(scripts_db, "東京* OR ｆｕ*", query_syntax=True) == ["jp", "wide"]
    assert search(scripts_db, "zero\x00", query_syntax=True)[0].id == "year1"
    with pytest.raises(ConvgraphError, match="nothing to search for"):
        search(scripts_db, "\x00 ", query_syntax=True)


@pytest.mark.parametrize("limit", [str(2**64), "100001", "0", "-1"])
def test_the_number_of_hits_is_bounded_in_one_line(scripts_db, limit):
    result = run("search", "--db", scripts_db, "-n", limit, "time", expect=2)
    assert result.stderr.splitlines()[-1] == (
        f"Error: Invalid value for '-n' / '--limit': {limit!r} is not a whole"
        " number from 1 to 100000"
    )
    assert len(search(scripts_db, "time", limit=2**64)) == 6


# -- time bounds -------------------------------------------------------------------


@pytest.mark.parametrize(
    "since, until",
    [
        ("0001-01-01", None),
        (None, "9999-12-31"),
        (None, "2300-01-01"),
        (None, "1900-01-01"),
        ("1677-01-01", "1677-12-31"),
        ("2262-05-01", None),
        ("2024-05-08T14:00", "2024-05-08T15:00"),
        ("0001-01-01", "0001-01-01"),
    ],
)
def test_time_bounds_compare_as_every_command_does(scripts_db, since, until):
    where = TreeFilter(
        since=parse_bound(since) if since else None,
        until=parse_bound(until, end=True) if until else None,
    )
    # The rule every command that reads one tree applies (parse_time).
    forest = read_forest(scripts_db)
    expected = sorted(
        tree_id
        for tree_id in forest.tree_ids
        if tree_is_in(forest.tree(tree_id), where)
    )
    hits = search(scripts_db, "*", limit=100, query_syntax=True, where=where)
    assert sorted(hit.tree_id for hit in hits) == expected
    options = [
        *(["--since", since] if since else []),
        *(["--until", until] if until else []),
    ]
    result = run(
        "search",
        "--db",
        scripts_db,
        "--query-syntax",
        "*",
        "--nl",
        "-n",
        "100",
        *options,
    )
    assert result.stderr == ""
    assert len(result.stdout.splitlines()) == len(expected)


def test_the_text_rules_of_queries_and_snippets():
    assert query_words('say "Hi*" NEAR( -- 東京') == [
        ["say"],
        ["hi"],
        ["near"],
        ["東", "京"],
    ]
    assert normalized("ﾀﾜｰ") == spaced("タワー")
    assert spaced("東京 in May") == "\u200b東\u200b\u200b京\u200b in May"
    assert marked("a \ue000big\ue001\n cat") == ("a big cat", [[2, 5]])
    # Words that touch (a script without spaces) are one mark.
    assert marked("\ue000東\ue001\u200b\u200b\ue000京\ue001") == ("東京", [[0, 2]])
    tool_call = parts.tool_call("lookup", {"city": "Oslo"})
    assert parts_text([tool_call]) == 'lookup {"city": "Oslo"}'
