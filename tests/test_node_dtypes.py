"""The nodes table's strings are Arrow's (contract.STRING_COLUMNS).

Ids, parents, times and texts are pandas' `string[pyarrow]` columns
(`pd.StringDtype("pyarrow")`, Arrow's `large_string` underneath) on
every path that builds a forest where pyarrow is installed: the columnar
reader (legacy files, message stores without texts), the row readers (a
message store's texts, a machine without the ADBC driver) and a chat export
(`conform_nodes`). A missing value is pd.NA in the table and None in every
tree and record built from it; a table costs its strings' bytes, not a
Python object a value; pandas' string methods give pandas' answers; without
pyarrow the columns are object columns of str and None.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

pa = pytest.importorskip("pyarrow")

from convgraph import Forest  # noqa: E402
from convgraph.contract import STRING_COLUMNS  # noqa: E402
from convgraph.sources import tables  # noqa: E402
from convgraph.sources.llm import columnar  # noqa: E402
from tests import chat_exports as build  # noqa: E402
from tests.helpers import plain, read_forest  # noqa: E402

ARROW_STRINGS = pd.StringDtype("pyarrow")


def string_dtypes(forest: Forest) -> dict[str, object]:
    return {name: forest.nodes[name].dtype for name in STRING_COLUMNS}


@pytest.mark.parametrize("text", [False, True])
@pytest.mark.parametrize("fast", [True, False])
def test_a_legacy_files_strings_are_arrows(seed_db, monkeypatch, text, fast):
    if not fast:
        monkeypatch.setattr(columnar, "available", lambda: False)
    forest = read_forest(seed_db, text=text)
    assert string_dtypes(forest) == dict.fromkeys(STRING_COLUMNS, ARROW_STRINGS)
    # Missing stays missing: a root's parent, a text=False read's texts.
    assert plain(forest.nodes["parent_id"])[:4] == [
        None,
        "linear-root",
        "linear-a",
        "linear-b",
    ]
    assert forest.nodes["parent_id"].isna().sum() == 5
    if not text:
        assert forest.nodes["prompt"].isna().all()


@pytest.mark.parametrize("text", [False, True])
def test_a_message_stores_strings_are_arrows(llm_fork_db, text):
    # text=False is read by columns, text=True by rows.
    forest = read_forest(llm_fork_db["path"], text=text)
    assert string_dtypes(forest) == dict.fromkeys(STRING_COLUMNS, ARROW_STRINGS)
    first, second, third = llm_fork_db["turns"]
    parents = dict(
        zip(forest.nodes["id"], plain(forest.nodes["parent_id"]), strict=True)
    )
    assert {node: parents[node] for node in (first, second, third)} == {
        first: None,
        second: first,
        third: second,
    }


def test_a_chat_exports_strings_are_arrows(tmp_path: Path):
    path = build.write_json(tmp_path / "conversations.json", build.chatgpt_export())
    forest = read_forest(path)
    assert string_dtypes(forest) == dict.fromkeys(STRING_COLUMNS, ARROW_STRINGS)


def test_trees_and_records_see_none_where_the_table_has_na(seed_db):
    forest = read_forest(seed_db, text=False)
    tree = forest.tree("linear")
    assert tree.nodes["linear-root"]["prompt"] is None
    assert [node for node in tree if not list(tree.predecessors(node))] == [
        "linear-root"
    ]
    built = {graph.graph["tree_id"]: graph for graph in forest.trees()}
    assert built["linear"].nodes["linear-a"]["response"] is None
    assert isinstance(built["linear"].nodes["linear-a"]["datetime_utc"], str)


def test_the_table_costs_its_strings_bytes(seed_db):
    """Each string column holds its UTF-8 bytes, eight bytes of offset a row
    (`large_string`) and a bit of validity a row (and one offset and byte
    per chunk), where an object column would hold a Python str of 50 bytes
    and more each."""
    nodes = read_forest(seed_db, text=True).nodes
    for name in STRING_COLUMNS:
        values = plain(nodes[name])
        text_bytes = sum(len(value.encode()) for value in values if value is not None)
        chunks = pa.chunked_array(nodes[name].array.__arrow_array__()).num_chunks
        most = (
            text_bytes + 8 * len(values) + chunks * (8 + 1) + math.ceil(len(values) / 8)
        )
        used = nodes[name].memory_usage(deep=True, index=False)
        assert text_bytes <= used <= most, name


def test_without_pyarrow_the_strings_are_object_columns(seed_db, monkeypatch):
    monkeypatch.setattr(columnar, "available", lambda: False)
    monkeypatch.setattr(tables, "string_dtype", lambda: object)
    forest = read_forest(seed_db, text=False)
    assert {str(dtype) for dtype in string_dtypes(forest).values()} == {"object"}
    assert forest.nodes["parent_id"].tolist()[:2] == [None, "linear-root"]
    assert forest.nodes["prompt"].tolist()[:2] == [None, None]


def test_values_that_are_not_text_stay_as_they_are():
    column = tables.string_column(pd.Series(["a", {"not": "text"}, None]))
    assert column.tolist() == ["a", {"not": "text"}, None]
    column = tables.string_column(pd.Series(["a", float("nan"), None]))
    assert column.dtype == ARROW_STRINGS
    assert plain(pd.Series(column)) == ["a", None, None]


def test_parent_rows_are_found_alike_on_arrows_strings_and_objects():
    from convgraph.links.pointer_jumping import ids_at_rows, parent_rows_of

    ids = ["r", "a", "b", "c"]
    parents = [None, "r", "a", "gone"]
    arrow_ids = pd.Series(ids, dtype=ARROW_STRINGS)
    expected = [-1, 0, 1, -1]
    assert parent_rows_of(ids, parents).tolist() == expected
    assert parent_rows_of(arrow_ids, parents).tolist() == expected
    assert parent_rows_of(
        arrow_ids, pd.Series(parents, dtype=ARROW_STRINGS)
    ).tolist() == (expected)
    assert parent_rows_of(arrow_ids, [None, "r", 7, "b"]).tolist() == [-1, 0, -1, 2]
    taken = ids_at_rows(arrow_ids, parent_rows_of(arrow_ids, parents))
    assert taken.dtype == ARROW_STRINGS
    assert plain(pd.Series(taken)) == [None, "r", "a", None]


def test_pandas_string_idioms_give_pandas_answers(seed_db):
    # A notebook's idioms: on an ArrowDtype column the split gave Arrow
    # lists, which `.str[0]` refused.
    nodes = read_forest(seed_db, text=False).nodes
    firsts = nodes["id"].str.split("-").str[0]
    assert firsts.tolist()[:5] == ["linear"] * 4 + ["branch"]
    assert nodes["parent_id"].str.len().tolist()[:2] == [pd.NA, 11]
    assert nodes["id"].str.startswith("linear").sum() == 4


def test_arrows_own_strings_become_pandas_strings():
    for arrow in (
        pa.array(["a", None], pa.string()),
        pa.chunked_array([pa.array(["a", None], pa.large_string())]),
        pa.nulls(2, pa.string()),
    ):
        column = tables.string_column(arrow)
        assert isinstance(column, pd.arrays.ArrowStringArray)
        assert column.dtype == ARROW_STRINGS
    column = tables.string_column(pd.Series(["a", None], dtype=ARROW_STRINGS))
    assert tables.string_column(column) is column
    # pandas 3's default "str" (NaN for missing) becomes NA for missing.
    column = tables.string_column(pd.Series(["a", None], dtype="str"))
    assert column.dtype == ARROW_STRINGS
    assert column.isna().tolist() == [False, True]
