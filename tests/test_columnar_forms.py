"""The forms the columnar legacy read gives its columns, for the memory they
cost: the same values as the row readers' (tests/test_columnar.py holds
the tables equal), in Arrow arrays that hold each column once.

The ids, parent ids and times are one `large_string` array each (Arrow's
take from a column in chunks would join it again at every take), the texts
stay in the driver's chunks, each chunk cast alone, and a text column left
unread is one array of nulls over numpy's zeros (`arrays.null_strings`).
"""

from __future__ import annotations

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("adbc_driver_sqlite")

from benchmarks import synthetic  # noqa: E402
from convgraph.sources import open_logs  # noqa: E402
from convgraph.sources.llm import columnar  # noqa: E402
from convgraph.sources.llm.columnar import arrays, legacy, reader  # noqa: E402
from tests.test_columnar import fixed_chunks  # noqa: E402


def arrow(column):
    """The Arrow array under a column of the nodes table."""
    return column.array._pa_array


@pytest.mark.parametrize("count", [0, 1, 7, 8, 9, 1000])
def test_null_strings_are_arrows_nulls(count):
    nulls = arrays.null_strings(count)
    nulls.validate(full=True)
    assert nulls.type == pa.large_string()
    assert nulls.null_count == count
    assert nulls.to_pylist() == [None] * count
    assert nulls.equals(pa.chunked_array([pa.nulls(count, pa.large_string())]))


@pytest.mark.parametrize("with_parent", [True, False])
def test_legacy_columns_taken_from_are_one_array_and_texts_stay_in_chunks(
    tmp_path, monkeypatch, with_parent
):
    """Read in chunks of 40 rows in two ranges: the ids, parent ids and
    times come as one array each, the prompts in the chunks they were read
    in, and the texts not asked for are missing."""
    path = synthetic.build_legacy(
        tmp_path / "logs.db", 300, 7, "bushy", with_parent=with_parent
    )
    monkeypatch.setattr(reader, "READ_THREADS", 2)
    monkeypatch.setattr(reader, "ROWS_PER_RANGE", 1)
    fixed_chunks(monkeypatch, 40)
    with open_logs(path) as logs:
        found = columnar.read_forest(logs, text=("prompt",))
    assert found is not None
    nodes = found.nodes
    for name in legacy.TAKEN:
        column = arrow(nodes[name])
        assert column.type == pa.large_string(), name
        assert column.num_chunks == 1, name
    prompts = arrow(nodes["prompt"])
    assert prompts.type == pa.large_string()
    # 300 rows in two ranges of 150, each in chunks of 40: 4 chunks each.
    assert prompts.num_chunks == 8
    assert prompts.null_count == 0
    for name in ("system", "response"):
        assert nodes[name].isna().all(), name
        assert arrow(nodes[name]).type == pa.large_string(), name


def test_parts_and_tools_share_a_buffer_until_one_is_written(tmp_path):
    """A legacy file without tool calls: every node's parts and tools are
    None, in one buffer for both; writing one column leaves the other."""
    import numpy as np

    from tests.helpers import read_forest

    path = synthetic.build_legacy(tmp_path / "logs.db", 50, 3, "bushy")
    nodes = read_forest(path, text=False).nodes
    assert nodes["parts"].tolist() == [None] * 50
    assert nodes["tools"].tolist() == [None] * 50
    assert np.shares_memory(nodes["parts"].to_numpy(), nodes["tools"].to_numpy())
    nodes.loc[0, "parts"] = "written"
    nodes.at[1, "tools"] = ["a tool"]
    assert nodes["parts"].tolist() == ["written"] + [None] * 49
    assert nodes["tools"].tolist() == [None, ["a tool"]] + [None] * 48
