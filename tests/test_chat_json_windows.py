"""The export's elements read whole by json's scanner from windows of the file
(`json_files.array_values`) are those ijson builds (`stream_values`), wherever
a window cuts; what the scanner leaves (a lone surrogate, broken JSON, a
value nested past the bound) is read or refused by ijson, as before."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convgraph.errors import DatabaseError
from convgraph.sources.chat import json_files
from convgraph.sources.chat.json_files import (
    file_on_disk,
    file_values,
    stream_values,
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=12,
)


def read_both(path: Path) -> tuple[list[object], list[object]]:
    with open(path, "rb") as stream:
        reference = list(stream_values(io.BufferedReader(stream)))
    return list(file_values(file_on_disk(path))), reference


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    elements=st.lists(values, max_size=6),
    window=st.integers(1, 40),
    ascii_only=st.booleans(),
)
def test_every_window_reads_what_ijson_builds(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    elements: list[object],
    window: int,
    ascii_only: bool,
) -> None:
    monkeypatch.setattr(json_files, "READ_SIZE", window)
    monkeypatch.setattr(json_files, "WINDOW", window)
    path = tmp_path / "conversations.json"
    path.write_text(
        " [\n"
        + ",  ".join(json.dumps(e, ensure_ascii=ascii_only) for e in elements)
        + " ]\n"
    )
    found, reference = read_both(path)
    assert found == reference


def test_ijson_reads_on_after_the_scanner_stops(tmp_path: Path) -> None:
    # A lone surrogate: ijson's "?", from the element on, none read twice.
    path = tmp_path / "conversations.json"
    path.write_text(r'[{"a": "\ud83d\ude00"}, "\ud800x", 3]')
    assert list(file_values(file_on_disk(path))) == [{"a": "\U0001f600"}, "?x", 3]
    path.write_text('[1, "two", {"three": 3]')
    found = []
    with pytest.raises(DatabaseError, match="the JSON is cut short or malformed"):
        found.extend(file_values(file_on_disk(path)))
    assert found == [1, "two"]


def nesting(value: object) -> int:
    """How many levels of containers `value` holds (itself one)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        inner, level = stack.pop()
        if isinstance(inner, dict | list):
            deepest = max(deepest, level)
            stack += [
                (item, level + 1)
                for item in (inner.values() if isinstance(inner, dict) else inner)
            ]
    return deepest


@given(value=values)
def test_the_depth_check_counts_every_level(value: object) -> None:
    # As json's scanner builds it: a dict of scalars is not tracked by gc.
    built = json.loads(json.dumps(value))
    deepest = nesting(built)
    assert json_files._within(built, deepest)
    assert deepest == 0 or not json_files._within(built, deepest - 1)


def test_objects_nested_100_000_deep_are_one_error(tmp_path: Path) -> None:
    # orjson before 3.9.15 crashes on this; json's scanner and ijson refuse it.
    path = tmp_path / "conversations.json"
    path.write_text("[" + '{"a": ' * 100_000 + "1" + "}" * 100_000 + "]")
    with pytest.raises(DatabaseError, match="nests deeper than 100 levels"):
        list(file_values(file_on_disk(path)))
