"""`convgraph export --format parquet`: the forest's node and edge tables as a
Parquet dataset, read back with pyarrow: exactly the rows of
`convgraph.analysis.stats`, every tree whole in one file, the edges of a tree in the
file of the same number; written whole or not at all, and never over what
the user keeps."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from convgraph.analysis.datasets import dataset_conversation_table
from convgraph.analysis.stats import CONVERSATION_COLUMNS, edge_table
from convgraph.contract import NODE_ATTRIBUTES, TEXT_ATTRIBUTES
from convgraph.errors import ExportError
from convgraph.export.parquet import dataset_nodes, tree_buckets, write_parquet
from convgraph.model.forest import Forest
from convgraph.sources.parquet import (
    checked_nodes,
    is_parquet_dataset,
    read_nodes,
    tree_ids_of,
)
from tests.databases import add_tree, legacy_database
from tests.helpers import file_digest, read_forest, run


def parts(folder: Path) -> dict[str, pd.DataFrame]:
    """Each Parquet file of a folder, read alone by pyarrow, by file name."""
    return {
        path.name: pq.read_table(path).to_pandas()
        for path in sorted(folder.glob("*.parquet"))
    }


def plain(frame: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    """A table in a form two reads of the same rows agree on: sorted by
    `key`, a fresh index, categories by their values (which a file's
    dictionary orders its own way), times in nanoseconds."""
    frame = frame.sort_values(key).reset_index(drop=True)
    for column in frame.columns:
        values = frame[column]
        if isinstance(values.dtype, pd.CategoricalDtype):
            frame[column] = values.astype(object).where(values.notna(), None)
        elif isinstance(values.dtype, pd.DatetimeTZDtype):
            frame[column] = values.astype("datetime64[ns, UTC]")
    return frame


def assert_dataset_holds(directory: Path, forest: Forest) -> None:
    """The dataset holds exactly the forest's node and edge tables, every
    tree whole in one file, and its edges in the file of the same name."""
    nodes = parts(directory / "nodes")
    edges = parts(directory / "edges")
    assert list(nodes) == list(edges)
    tree_files: dict[str, str] = {}
    for name, part in nodes.items():
        for tree_id in part["tree_id"].astype(str).unique():
            assert tree_id not in tree_files, f"{tree_id} in {name} and elsewhere"
            tree_files[tree_id] = name
        # A tree whole: every parent is in the same file.
        parents = set(part["parent_id"].dropna())
        assert parents <= set(part["id"])
    for name, part in edges.items():
        assert {tree_files[tree] for tree in part["tree_id"].astype(str)} <= {name}

    expected = dataset_nodes(forest)
    read_back = pq.read_table(directory / "nodes").to_pandas()
    pd.testing.assert_frame_equal(
        plain(read_back, ["id"]), plain(expected, ["id"]), check_dtype=False
    )
    # The dtypes pandas reads back are the node table's, but for times in
    # microseconds and texts in pandas' string dtype (or all None).
    texts = {
        column: "object" if read_back[column].isna().all() else "str"
        for column in TEXT_ATTRIBUTES
    }
    assert read_back.dtypes.astype(str).to_dict() == {
        **expected.dtypes.astype(str).to_dict(),
        "datetime_utc": "datetime64[us, UTC]",
        **texts,
    }
    pd.testing.assert_frame_equal(
        plain(pq.read_table(directory / "edges").to_pandas(), ["child"]),
        plain(edge_table(forest), ["child"]),
        check_dtype=False,
    )


def shapes_database(path: Path) -> Path:
    """Conversations of every shape: linear, bushy, deep, several roots,
    and one node alone; models and usage figures vary, some missing."""
    conn = legacy_database(path)
    add_tree(conn, "linear", [("l0", None), ("l1", "l0"), ("l2", "l1")])
    bushy = [("b0", None)] + [(f"b{i}", "b0") for i in range(1, 7)]
    bushy += [(f"b{i}x", f"b{i}") for i in range(1, 4)]
    add_tree(conn, "bushy", bushy, start=10)
    deep = [("d0", None)] + [(f"d{i}", f"d{i - 1}") for i in range(1, 150)]
    add_tree(conn, "deep", deep, start=30)
    add_tree(
        conn,
        "roots",
        [("r1", None), ("r1a", "r1"), ("r2", None), ("r2a", "r2"), ("r3", None)],
        start=200,
    )
    add_tree(conn, "alone", [("solo", None)], start=210)
    conn.execute("update responses set model = 'other' where id in ('b3', 'd7', 'r2')")
    conn.execute("update responses set input_tokens = null where id in ('l1', 'r3')")
    conn.execute(
        "update responses set output_tokens = null where conversation_id = 'alone'"
    )
    conn.execute("update responses set datetime_utc = null where id = 'b5'")
    conn.commit()
    conn.close()
    return path


@pytest.fixture
def shapes_db(tmp_path: Path) -> Path:
    return shapes_database(tmp_path / "shapes.db")


@pytest.mark.parametrize("partitions", [1, 3, 20])
def test_every_tree_whole_in_one_file_and_the_rows_exact(
    shapes_db: Path, tmp_path: Path, partitions: int
) -> None:
    forest = read_forest(shapes_db)
    write_parquet(forest, tmp_path / "dataset", partitions=partitions)
    assert_dataset_holds(tmp_path / "dataset", forest)
    files = sorted(path.name for path in (tmp_path / "dataset/nodes").iterdir())
    buckets = sorted(set(tree_buckets(forest.nodes["tree_id"], partitions).tolist()))
    assert files == [f"part-{bucket:05d}.parquet" for bucket in buckets]
    # One row group a file: no reader cuts a tree into two partitions.
    for path in (tmp_path / "dataset/nodes").iterdir():
        assert pq.ParquetFile(path).num_row_groups == 1


def test_rows_of_a_tree_keep_their_log_order(shapes_db: Path, tmp_path: Path) -> None:
    forest = read_forest(shapes_db)
    write_parquet(forest, tmp_path / "dataset", partitions=2)
    for part in parts(tmp_path / "dataset/nodes").values():
        for tree_id, rows in part.groupby("tree_id", observed=True, sort=False):
            logged = forest.nodes[forest.nodes["tree_id"] == tree_id]["id"]
            assert rows["id"].tolist() == logged.tolist()


def test_the_bucket_is_a_stable_hash_of_the_tree_id() -> None:
    assert tree_buckets(["linear", "bushy", "deep", "linear"], 8).tolist() == [
        1,
        3,
        7,
        1,
    ]
    # Another process, with another seed for Python's own string hash.
    code = (
        "from convgraph.export.parquet import tree_buckets;"
        "print(tree_buckets(['linear', 'bushy', 'deep', 'linear'], 8).tolist())"
    )
    environment = {**os.environ, "PYTHONHASHSEED": "12345"}
    printed = subprocess.run(
        [sys.executable, "-c", code],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert printed.strip() == "[1, 3, 7, 1]"


def test_the_cli_writes_a_database_llm_wrote(llm_fork_db: dict, tmp_path: Path) -> None:
    before = file_digest(llm_fork_db["path"])
    target = tmp_path / "forest"
    run("export", "--format", "parquet", "-o", target, "--db", llm_fork_db["path"])
    assert file_digest(llm_fork_db["path"]) == before
    forest = read_forest(llm_fork_db["path"])
    assert_dataset_holds(target, forest)
    nodes = read_nodes(target)
    assert len(nodes) == 5
    assert nodes["tree_id"].astype(str).unique().tolist() == [llm_fork_db["thread"]]
    assert nodes["prompt"].tolist() == [
        "What is a tree?",
        "And a forest?",
        "Give an example",
        "What is a graph, then?",
        "Is every tree a graph?",
    ]
    # The fork's thread id names its whole tree.
    assert tree_ids_of(target, [llm_fork_db["fork"]]) == [llm_fork_db["thread"]]


def test_the_cli_writes_the_trees_named(seed_db: Path, tmp_path: Path) -> None:
    target = tmp_path / "two"
    run(
        "export",
        "complex",
        "linear",
        "--format",
        "parquet",
        "-o",
        target,
        "-d",
        seed_db,
    )
    assert_dataset_holds(
        target, read_forest(seed_db, conversation_ids=["complex", "linear"])
    )
    assert sorted(read_nodes(target)["tree_id"].astype(str).unique()) == [
        "complex",
        "linear",
    ]


def test_an_empty_forest_is_a_dataset_with_its_columns(tmp_path: Path) -> None:
    legacy_database(tmp_path / "empty.db").close()
    run(
        "export",
        "--format",
        "parquet",
        "-o",
        tmp_path / "out",
        "-d",
        tmp_path / "empty.db",
    )
    assert is_parquet_dataset(tmp_path / "out")
    nodes = read_nodes(tmp_path / "out")
    assert len(nodes) == 0
    assert list(nodes.columns) == list(
        dataset_nodes(read_forest(tmp_path / "empty.db")).columns
    )


def test_an_empty_directory_is_written_and_a_full_one_only_with_force(
    seed_db: Path, tmp_path: Path
) -> None:
    target = tmp_path / "out"
    target.mkdir()
    export = ("export", "linear", "--format", "parquet", "-o", target, "-d", seed_db)
    run(*export)
    assert read_nodes(target)["tree_id"].astype(str).unique().tolist() == ["linear"]

    result = run(*export[:2], "branch", *export[2:], expect=2)
    assert result.stderr == (
        f"Error: refusing to write {target}: the directory is not empty"
        " (--force replaces it)\n"
    )
    (target / "mine.txt").write_text("kept")
    run(
        "export", "branch", "--format", "parquet", "-o", target, "-d", seed_db, expect=2
    )
    assert (target / "mine.txt").read_text() == "kept"

    run(
        "export",
        "branch",
        "--format",
        "parquet",
        "-o",
        target,
        "-d",
        seed_db,
        "--force",
    )
    assert sorted(path.name for path in target.iterdir()) == ["edges", "nodes"]
    assert read_nodes(target)["tree_id"].astype(str).unique().tolist() == ["branch"]
    # Nothing left beside it: neither the new one's nor the old one's folder.
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out", "seed.db"]


def test_refusals_are_one_line_and_status_2(seed_db: Path, tmp_path: Path) -> None:
    def error(*args: object) -> str:
        return run("export", "--format", "parquet", *args, expect=2).stderr

    assert error("-d", seed_db) == (
        "Error: --format parquet writes a directory: give -o DIR\n"
    )
    (tmp_path / "file").write_text("x")
    assert error("-o", tmp_path / "file", "-d", seed_db) == (
        f"Error: cannot write {tmp_path / 'file'}: it is a file, not a directory\n"
    )
    # Never over the database being read, --force or not.
    before = file_digest(seed_db)
    assert error("-o", tmp_path, "-d", seed_db, "--force") == (
        f"Error: refusing to write {tmp_path}: it holds the database being read;"
        " write the export to another directory\n"
    )
    assert file_digest(seed_db) == before
    assert error("-o", tmp_path / "x", "-d", seed_db, "--rankdir", "LR") == (
        "Error: --rankdir does not apply to --format parquet\n"
    )
    assert error("nope", "-o", tmp_path / "x", "-d", seed_db) == (
        "Error: no conversation with id 'nope'\n"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["file", "seed.db"]


def test_a_failed_write_leaves_nothing(tmp_path: Path) -> None:
    # A prompt that is not text fails in the middle of the write.
    nodes = pd.DataFrame(
        {
            "id": ["r", "a"],
            "tree_id": "t",
            "parent_id": [None, "r"],
            **dict.fromkeys(NODE_ATTRIBUTES),
            "prompt": ["text", {"not": "text"}],
        }
    )
    with pytest.raises(pa.ArrowException):
        write_parquet(Forest(nodes, {}), tmp_path / "out")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ExportError, match="cannot write .*: No such file or directory"):
        write_parquet(Forest(nodes, {}), tmp_path / "missing" / "out")
    assert list(tmp_path.iterdir()) == []


def test_stats_reads_the_dataset_with_pandas(seed_db: Path, tmp_path: Path) -> None:
    run("export", "--format", "parquet", "-o", tmp_path / "out", "-d", seed_db)
    from_database = run("stats", "--json", "-d", seed_db).stdout
    assert run("stats", "--json", "-d", tmp_path / "out").stdout == from_database
    named = run("stats", "complex", "linear", "--csv", "-d", tmp_path / "out").stdout
    assert [line.split(",")[0] for line in named.splitlines()] == [
        CONVERSATION_COLUMNS[0],
        "complex",
        "linear",
    ]
    assert run("stats", "nope", "-d", tmp_path / "out", expect=2).stderr == (
        "Error: no conversation with id 'nope'\n"
    )
    assert run("stats", "--dask", "local", "-d", seed_db, expect=2).stderr == (
        "Error: --dask computes on a Parquet dataset: give --db DIR, a directory"
        " written by convgraph export --format parquet\n"
    )


def test_a_database_in_a_folder_is_not_a_dataset(tmp_path: Path) -> None:
    (tmp_path / "nodes").mkdir()
    assert not is_parquet_dataset(tmp_path)
    sqlite3.connect(tmp_path / "logs.db").close()
    assert not is_parquet_dataset(tmp_path / "logs.db")


# -- a tampered dataset, read by the rules of every other source ---------------


def tampered(
    clean: Path, target: Path, change: Any, file: str = "part-00000.parquet"
) -> Path:
    """A copy of the dataset `clean` whose nodes file `file` is rewritten as
    `change` returns its table (pyarrow)."""
    shutil.copytree(clean, target)
    path = target / "nodes" / file
    table = change(pq.read_table(path).to_pandas())
    pq.write_table(pa.Table.from_pandas(table, preserve_index=False), path)
    return target


@pytest.fixture
def seed_dataset(seed_db: Path, tmp_path: Path) -> Path:
    """The seed's four conversations as a dataset of one file."""
    run("export", "--format", "parquet", "-o", tmp_path / "clean", "-d", seed_db)
    assert [path.name for path in (tmp_path / "clean/nodes").iterdir()] == [
        "part-00000.parquet"
    ]
    return tmp_path / "clean"


def stats_of(directory: Path) -> list[dict[str, Any]]:
    return json.loads(run("stats", "--json", "-d", directory).stdout)


def check_of(directory: Path) -> tuple[int, list[str]]:
    result = run("check", "-d", directory, expect=None)
    return result.exit_code, result.stdout.splitlines()


def test_a_duplicated_row_is_read_once_and_reported(seed_dataset, tmp_path):
    dataset = tampered(
        seed_dataset, tmp_path / "dup", lambda nodes: pd.concat([nodes, nodes[1:2]])
    )
    assert stats_of(dataset) == stats_of(seed_dataset)
    assert check_of(dataset) == (
        1,
        [
            "duplicate-id: linear-a is the id of 2 rows of part-00000.parquet:"
            " the first is read, the others left out"
        ],
    )
    assert check_of(seed_dataset) == (0, ["no problems found"])


def test_a_copied_file_counts_each_tree_once_and_is_reported(seed_dataset, tmp_path):
    dataset = tmp_path / "copied"
    shutil.copytree(seed_dataset, dataset)
    nodes = dataset / "nodes"
    shutil.copyfile(nodes / "part-00000.parquet", nodes / "part-00001.parquet")
    assert stats_of(dataset) == stats_of(seed_dataset)
    assert check_of(dataset) == (
        1,
        [
            f"split-tree: tree {tree} lies in part-00000.parquet and in"
            " part-00001.parquet: the rows in part-00001.parquet are left out"
            " (a dataset holds every tree whole in one file)"
            for tree in ("linear", "branch", "complex", "multiple-roots")
        ],
    )


def test_a_parent_cycle_is_dropped_and_reported_as_in_every_source(
    seed_dataset, tmp_path
):
    def cycle(nodes: pd.DataFrame) -> pd.DataFrame:
        nodes.loc[nodes["id"] == "linear-root", "parent_id"] = "linear-c"
        return nodes

    dataset = tampered(seed_dataset, tmp_path / "cycle", cycle)
    # The link that closes the cycle is dropped: the root is a root again.
    assert stats_of(dataset) == stats_of(seed_dataset)
    assert check_of(dataset) == (
        1,
        [
            "cycle: linear-root is on a cycle of 4 parent links: linear-root"
            " -> linear-c -> linear-b -> linear-a -> linear-root"
        ],
    )


def test_a_column_of_the_wrong_type_reads_as_missing(seed_dataset, tmp_path):
    def texts(nodes: pd.DataFrame) -> pd.DataFrame:
        nodes["input_tokens"] = nodes["input_tokens"].astype(str)
        nodes.loc[0, "input_tokens"] = "lots"
        return nodes

    dataset = tampered(seed_dataset, tmp_path / "texts", texts)
    table = dataset_conversation_table(dataset)
    clean = dataset_conversation_table(seed_dataset)
    assert table["input_tokens"].isna().all() and clean["input_tokens"].notna().all()
    # What is made of the input tokens goes with them: what retries spent
    # of them, and their share.
    assert table["abandoned_input_tokens"].isna().all()
    made_of_them = ["input_tokens", "abandoned_input_tokens", "abandoned_share"]
    pd.testing.assert_frame_equal(
        table.drop(columns=made_of_them), clean.drop(columns=made_of_them)
    )
    assert check_of(dataset) == (0, ["no problems found"])


def test_checked_nodes_reads_every_value_as_the_statistics_take_it():
    """Ids written as numbers read as their texts; a text, a fraction, a
    number past Int64 or a bool where a count belongs reads as missing, as
    does what is no text where a text belongs and no bool where a flag does;
    rows without an id or a tree leave out, reported."""
    nodes = pd.DataFrame(
        {
            "id": [1, 2.0, None, 4, 5],
            "tree_id": [7, 7, 7, None, 7],
            "parent_id": [None, 1, 1, 1, 2],
            "input_tokens": [3, "x", 1, 2, 1e300],
            "output_tokens": [2.5, True, 7, 1, None],
            "prompt": ["hi", 3, None, "a", b"bytes"],
            "active": [True, "yes", None, False, 1],
        },
        dtype=object,
    )
    checked, problems = checked_nodes(nodes, "part-00003.parquet")
    assert checked.to_dict("list") == {
        "id": ["1", "2", "5"],
        "tree_id": ["7", "7", "7"],
        "parent_id": [None, "1", "2"],
        "input_tokens": [3, None, None],
        "output_tokens": [None, None, None],
        "prompt": ["hi", None, None],
        "active": [True, None, None],
        "conversation_id": ["7", "7", "7"],
        "_parent_row": [-1, 0, 1],
    }
    assert str(checked["input_tokens"].dtype) == "Int64"
    assert [problem.message for problem in problems] == [
        "2 rows of part-00003.parquet have no id or no tree_id: left out"
    ]


def test_what_cannot_be_read_is_one_line(seed_dataset, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(seed_dataset, broken)
    (broken / "nodes" / "part-00000.parquet").write_bytes(b"PAR1 not really")
    for words in (["stats"], ["check"]):
        result = run(*words, "-d", broken, expect=2)
        assert result.stderr.startswith(
            "Error: cannot read the Parquet dataset file"
            f" {broken / 'nodes' / 'part-00000.parquet'}: "
        )
        assert result.stderr.count("\n") == 1

    idless = tampered(
        seed_dataset, tmp_path / "idless", lambda nodes: nodes.drop(columns="id")
    )
    for words in (["stats"], ["check"]):
        assert run(*words, "-d", idless, expect=2).stderr == (
            "Error: part-00000.parquet is not a node table convgraph wrote:"
            " it has no id column\n"
        )
    # The other commands read a database, and say so.
    for words in (["tree", "linear"], ["conversations"], ["export"]):
        assert run(*words, "-d", seed_dataset, expect=2).stderr == (
            f"Error: {seed_dataset} is a Parquet dataset: convgraph stats and"
            " convgraph check read one; the other commands read the database"
            " it was exported from\n"
        )
