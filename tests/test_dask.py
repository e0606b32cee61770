"""The statistics of a Parquet dataset on a real Dask cluster (two worker
processes) equal the pandas tables of the same forest, column for column:
on forests of every shape, hand-made and written by llm itself, cut into one
partition and into many small ones. The same per-partition function runs
under Spark's `groupBy("tree_id").applyInPandas` where pyspark is installed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from distributed import Client, LocalCluster

from convgraph.analysis import datasets as on_dask
from convgraph.analysis import stats
from convgraph.contract import NODE_ATTRIBUTES
from convgraph.export.parquet import write_parquet
from convgraph.model.forest import Forest
from tests.databases import seed_database
from tests.helpers import read_forest, run
from tests.test_export_parquet import plain, shapes_database

#: Every test here starts a Dask (or Spark) cluster.
pytestmark = pytest.mark.slow

#: The column of `conversation_table` that names each row's tree.
TREE = stats.CONVERSATION_COLUMNS[0]

#: Each table, and the columns that name one of its rows.
TABLES = {
    "conversation_table": [TREE],
    "node_table": ["id"],
    "branch_table": ["leaf_id"],
}
#: Each table's pandas function of a node table holding whole trees.
PANDAS_FORMS = {
    "conversation_table": "summary_table",
    "node_table": "node_table_of",
    "branch_table": "branch_table_of",
}


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    """A cluster of two worker processes, one thread each, for the module."""
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=40,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def random_forest(trees: int = 40, seed: int = 5) -> Forest:
    """Random trees of 1 to 40 nodes: each node's parent is any earlier node
    of its tree (one in twenty starts another root), models and usage
    figures drawn, some missing."""
    rng = np.random.default_rng(seed)
    rows = []
    for tree in range(trees):
        for k in range(int(rng.integers(1, 41))):
            parent = None
            if k and rng.random() > 0.05:
                parent = f"t{tree}-{rng.integers(0, k)}"
            rows.append(
                {
                    "id": f"t{tree}-{k}",
                    "tree_id": f"t{tree}",
                    "parent_id": parent,
                    **dict.fromkeys(NODE_ATTRIBUTES),
                    "conversation_id": f"t{tree}",
                    "model": rng.choice(["a", "b", "c", ""]),
                    "datetime_utc": f"2025-10-01T{len(rows) // 3600 % 24:02d}:"
                    f"{len(rows) // 60 % 60:02d}:{len(rows) % 60:02d}+00:00",
                    "input_tokens": None if rng.random() < 0.1 else len(rows),
                    "output_tokens": 2 * k,
                    "source": "responses",
                }
            )
    names = {f"t{tree}": f"tree {tree}" for tree in range(0, trees, 2)}
    return Forest(pd.DataFrame(rows), names)


@pytest.fixture(scope="module")
def forests(tmp_path_factory: pytest.TempPathFactory, llm_fork_db: dict) -> dict:
    """The forests to compare on, by name."""
    directory = tmp_path_factory.mktemp("forests")
    return {
        "shapes": read_forest(shapes_database(directory / "shapes.db"), text=False),
        "seed": read_forest(seed_database(directory / "seed.db")),
        "llm": read_forest(llm_fork_db["path"]),
        "random": random_forest(),
    }


def assert_same_table(computed: pd.DataFrame, expected: pd.DataFrame, key) -> None:
    """Equal column for column, whatever the order of rows and categories."""
    assert list(computed.columns) == list(expected.columns)
    assert (
        computed.dtypes.astype(str).to_dict() == expected.dtypes.astype(str).to_dict()
    )
    pd.testing.assert_frame_equal(plain(computed, key), plain(expected, key))


@pytest.mark.parametrize("partitions", [1, 16])
@pytest.mark.parametrize("name", ["shapes", "seed", "llm", "random"])
def test_dask_tables_equal_the_pandas_tables(
    client: Client, forests: dict, tmp_path: Path, name: str, partitions: int
) -> None:
    forest = forests[name]
    write_parquet(forest, tmp_path / "dataset", partitions=partitions)
    nodes = on_dask.read_nodes(tmp_path / "dataset")
    files = len(list((tmp_path / "dataset/nodes").iterdir()))
    assert nodes.npartitions == files
    if partitions > 1 and name in ("shapes", "random"):
        assert files > 1
    for table, key in TABLES.items():
        lazy = getattr(on_dask, table)(nodes)
        computed = lazy.compute()
        assert_same_table(computed, getattr(stats, table)(forest), key)
        # What Dask was told to expect is what came.
        assert list(lazy.columns) == list(computed.columns)


def test_the_start_counts_on_dask(
    client: Client, forests: dict, tmp_path: Path
) -> None:
    # Each partition counts a tree's start as the pandas table does: the
    # seed's multiple-roots tree has one branch point, its two roots.
    write_parquet(forests["seed"], tmp_path / "dataset", partitions=4)
    nodes = on_dask.read_nodes(tmp_path / "dataset")
    table = on_dask.conversation_table(nodes).compute().set_index(TREE)
    columns = ["roots", "branch_points", "branching_factor_avg", "branching_factor_max"]
    assert table.loc["multiple-roots", columns].tolist() == [2, 1, 6 / 5, 2]
    assert table.loc["complex", columns].tolist() == [1, 3, 2.0, 2]


def test_read_parquet_as_the_user_calls_it(
    client: Client, forests: dict, tmp_path: Path
) -> None:
    forest = forests["random"]
    write_parquet(forest, tmp_path / "dataset", partitions=5)
    nodes = dd.read_parquet(tmp_path / "dataset" / "nodes")
    computed = on_dask.conversation_table(nodes).compute()
    assert_same_table(computed, stats.conversation_table(forest), [TREE])
    # The names came with the nodes.
    assert computed.set_index(TREE).loc["t2", "name"] == "tree 2"
    assert computed.set_index(TREE).loc["t1", "name"] is None


def test_the_cli_computes_on_the_cluster(
    client: Client, tmp_path: Path, llm_fork_db: dict
) -> None:
    seed_db = seed_database(tmp_path / "seed.db")
    run("export", "--format", "parquet", "-o", tmp_path / "seed", "-d", seed_db)
    on_cluster = ("--dask", client.scheduler.address)
    expected = run("stats", "--json", "-d", seed_db).stdout
    assert (
        run("stats", "--json", *on_cluster, "-d", tmp_path / "seed").stdout == expected
    )
    named = run("stats", "complex", "linear", "--json", "-d", seed_db).stdout
    assert (
        run(
            "stats", "complex", "linear", "--json", *on_cluster, "-d", tmp_path / "seed"
        ).stdout
        == named
    )

    db = llm_fork_db["path"]
    run("export", "--format", "parquet", "-o", tmp_path / "llm", "-d", db)
    by_fork = run(
        "stats", llm_fork_db["fork"], "--json", *on_cluster, "-d", tmp_path / "llm"
    )
    [row] = json.loads(by_fork.stdout)
    assert row == json.loads(run("stats", "--json", "-d", db).stdout)[0]
    assert row[TREE] == llm_fork_db["thread"]
    assert row["nodes"] == 5


def test_an_unusable_scheduler_is_one_line(tmp_path: Path) -> None:
    seed_db = seed_database(tmp_path / "seed.db")
    run("export", "--format", "parquet", "-o", tmp_path / "seed", "-d", seed_db)
    result = run("stats", "--dask", "nope://host:1", "-d", tmp_path / "seed", expect=2)
    assert result.stderr.startswith(
        "Error: cannot reach the Dask scheduler at nope://host:1: unknown address scheme"
    )
    assert len(result.stderr.splitlines()) == 1


#: `conversation_table`'s columns in Spark's types.
SPARK_SCHEMA = (
    f"{TREE} string, name string, nodes long, roots long, leaves long,"
    " max_depth long, branch_points long, branching_factor_avg double,"
    " branching_factor_max long, first_datetime timestamp, last_datetime timestamp,"
    " models array<string>, input_tokens long, output_tokens long, duration_ms long,"
    " tool_calls long, tools array<string>,"
    " active_path_length long, abandoned_branches long"
)


@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas")
@pytest.mark.filterwarnings("ignore:The copy keyword is deprecated")
def test_the_same_function_under_spark(forests: dict, tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    forest = forests["random"]
    write_parquet(forest, tmp_path / "dataset", partitions=4)
    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    try:
        nodes = spark.read.parquet(str(tmp_path / "dataset" / "nodes"))
        table = (
            nodes.groupBy("tree_id")
            .applyInPandas(
                # Spark counts the arguments: one, the group's rows.
                lambda part: stats.summary_table(part),
                SPARK_SCHEMA,
            )
            .toPandas()
        )
    finally:
        spark.stop()
    expected = stats.conversation_table(forest)
    # Spark's own types back as the table's: naive UTC times, plain lists,
    # nullable integers.
    for column in ("first_datetime", "last_datetime"):
        table[column] = pd.to_datetime(table[column]).dt.tz_localize("UTC")
    table["models"] = table["models"].map(list)
    table["name"] = table["name"].astype(object).where(table["name"].notna(), None)
    table = table.astype(expected.dtypes.to_dict())
    assert_same_table(table, expected, [TREE])


# -- a tampered dataset: the same answers as pandas ---------------------------


def tampered_datasets(seed_db: Path, tmp_path: Path) -> dict[str, Path]:
    """The seed's dataset (in four files) with a repeated row, a parent
    cycle, a column of the wrong type, a file copied beside itself and a
    file whose ids are numbers."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    clean = tmp_path / "clean"
    write_parquet(read_forest(seed_db), clean, partitions=4)
    files = sorted(path.name for path in (clean / "nodes").iterdir())
    assert len(files) > 1

    def tampered(name: str, change) -> Path:
        target = tmp_path / name
        shutil.copytree(clean, target)
        path = target / "nodes" / files[0]
        table = change(pq.read_table(path).to_pandas())
        pq.write_table(pa.Table.from_pandas(table, preserve_index=False), path)
        return target

    def cycle(nodes: pd.DataFrame) -> pd.DataFrame:
        nodes.loc[0, "parent_id"] = nodes["id"].iloc[-1]
        return nodes

    def texts(nodes: pd.DataFrame) -> pd.DataFrame:
        nodes["output_tokens"] = nodes["output_tokens"].astype(str)
        return nodes

    def numbered(nodes: pd.DataFrame) -> pd.DataFrame:
        numbers = {node: index for index, node in enumerate(nodes["id"])}
        nodes["id"] = nodes["id"].map(numbers).astype("int64")
        nodes["parent_id"] = nodes["parent_id"].map(numbers).astype("Int64")
        return nodes

    copied = tmp_path / "copied"
    shutil.copytree(clean, copied)
    shutil.copyfile(
        copied / "nodes" / files[0], copied / "nodes" / "part-99999.parquet"
    )
    return {
        "clean": clean,
        "repeated": tampered("repeated", lambda nodes: pd.concat([nodes, nodes[:2]])),
        "cycle": tampered("cycle", cycle),
        "texts": tampered("texts", texts),
        "numbered": tampered("numbered", numbered),
        "copied": copied,
    }


def test_a_tampered_dataset_reads_the_same_on_dask_as_on_pandas(
    client: Client, tmp_path: Path
) -> None:
    from convgraph.sources import parquet

    seed_db = seed_database(tmp_path / "seed.db")
    for name, dataset in tampered_datasets(seed_db, tmp_path).items():
        expected = parquet.read_nodes(dataset)
        lazy = on_dask.read_nodes(dataset)
        for table, key in TABLES.items():
            computed = getattr(on_dask, table)(lazy).compute()
            pandas_table = getattr(stats, PANDAS_FORMS[table])(expected)
            assert_same_table(computed, pandas_table, key)
        on_cluster = run(
            "stats", "--json", "--dask", client.scheduler.address, "-d", dataset
        ).stdout
        assert on_cluster == run("stats", "--json", "-d", dataset).stdout, name
