"""Read a Parquet dataset that `convgraph export --format parquet` wrote.

A dataset holds `nodes/` and `edges/` folders of Parquet files, every tree
whole in one file. It is read like any source: an unreadable file or a node
table without ids is one `DatabaseError`; bad values read as missing, rows
without an id or with a repeated one, broken parent links and the rows of a
tree an earlier file holds are left out and reported. pyarrow is imported
inside the functions, so that the command line starts without it."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convgraph.contract import (
    BOOLEAN_ATTRIBUTES,
    INTEGER_COLUMNS,
    ORIGIN,
    PARENT_ROWS,
    PARTS,
    TEXT_ATTRIBUTES,
    TOOLS,
    TREE_NAME,
)
from convgraph.errors import DatabaseError, UnknownConversation
from convgraph.links.integrity import DUPLICATE_ID, NO_ID, Problem, check_links_table
from convgraph.sources.source import CONVERSATION, MIN_PREFIX, IdMatch, ambiguous_id
from convgraph.text import counted

if TYPE_CHECKING:
    import pandas as pd

#: The dataset's two tables, each a folder of Parquet files.
NODES = "nodes"
EDGES = "edges"

#: Rows of a tree that an earlier file holds: left out and reported.
SPLIT_TREE = "split-tree"

REQUIRED = ("id", "tree_id", "parent_id")
ID_COLUMNS = ("id", "parent_id", "tree_id", "conversation_id")
TEXT_COLUMNS = (*TEXT_ATTRIBUTES, "model", "source", TOOLS, "note", TREE_NAME)


def is_parquet_dataset(path: str | os.PathLike[str]) -> bool:
    """Whether `path` holds a `nodes/` folder of Parquet files."""
    nodes = Path(path) / NODES
    return nodes.is_dir() and bool(_node_files(nodes))


def _node_files(nodes: Path) -> list[Path]:
    # Several sources exported as one are a folder each (`origin=NAME`).
    return sorted([*nodes.glob("*.parquet"), *nodes.glob(f"{ORIGIN}=*/*.parquet")])


def dataset_files(directory: str | os.PathLike[str]) -> list[Path]:
    """The node table's files sorted by name (Dask's partition order);
    `DatabaseError` if there are none."""
    files = _node_files(Path(directory) / NODES)
    if not files:
        raise DatabaseError(
            f"{directory} is not a Parquet dataset: no {NODES}/*.parquet files"
        )
    return files


def read_nodes(
    directory: str | os.PathLike[str],
    tree_ids: Iterable[str] | None = None,
    columns: list[str] | None = None,
) -> pd.DataFrame:
    """The checked node table of every tree, or of `tree_ids` (`read_dataset`)."""
    return read_dataset(directory, tree_ids, columns)[0].drop(columns=PARENT_ROWS)


def read_dataset(
    directory: str | os.PathLike[str],
    tree_ids: Iterable[str] | None = None,
    columns: list[str] | None = None,
) -> tuple[pd.DataFrame, list[Problem]]:
    """The checked node table (`checked_nodes` per file, `PARENT_ROWS` of the
    whole table) and its problems. Raises `DatabaseError` as `read_file` and
    `checked_nodes` do."""
    import numpy as np
    import pandas as pd

    named = None if tree_ids is None else list(tree_ids)
    first_file: dict[str, str] = {}
    tables, problems = [], []
    rows = 0
    for path in dataset_files(directory):
        raw = read_file(path, columns, named)
        held = trees_held(raw)
        earlier = {tree: first_file[tree] for tree in held if tree in first_file}
        nodes, found = checked_nodes(raw, path.name, earlier)
        for tree in held:
            first_file.setdefault(tree, path.name)
        parent_rows = nodes[PARENT_ROWS].to_numpy()
        nodes[PARENT_ROWS] = np.where(parent_rows >= 0, parent_rows + rows, -1)
        rows += len(nodes)
        tables.append(nodes)
        problems.extend(found)
    return pd.concat(tables, ignore_index=True), problems


def trees_held(nodes: pd.DataFrame) -> list[str]:
    """The trees a raw node table holds rows of (with an id), each once."""
    if not {"id", "tree_id"} <= set(nodes.columns):
        return []
    tree_ids = _ids(nodes["tree_id"])
    named = (_ids(nodes["id"]).notna() & tree_ids.notna()).to_numpy()
    return [str(tree) for tree in tree_ids[named].unique().tolist()]


def read_file(
    path: Path,
    columns: list[str] | None = None,
    tree_ids: list[str] | None = None,
    *,
    empty: bool = False,
) -> pd.DataFrame:
    """One unchecked node table file: the `columns` it has of those asked,
    only `tree_ids`' rows if given, no rows with `empty`. `DatabaseError` if
    pyarrow cannot read it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    # A partition folder's name is its rows' source (`export.parquet`).
    origin = path.parent.name.partition(f"{ORIGIN}=")[2] or None
    if columns is not None and ORIGIN not in columns:
        origin = None
    try:
        held = pq.read_schema(path).names
        if columns is not None:
            # Older datasets lack newer columns: read as missing.
            columns = [column for column in columns if column in held]
        if empty:
            schema = pq.read_schema(path)
            names = held if columns is None else columns
            table = pa.schema([schema.field(name) for name in names]).empty_table()
            empty_nodes = parts_from_json(table.to_pandas())
            return empty_nodes.assign(**{ORIGIN: []}) if origin else empty_nodes
        filters = None
        if tree_ids is not None and "tree_id" in held:
            filters = [("tree_id", "in", tree_ids)]
        try:
            table = pq.read_table(path, columns=columns, filters=filters)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError):
            # Tree ids of another type than text (a file made by hand):
            # read whole, and the ids compared as texts below.
            table = pq.read_table(path, columns=columns)
    except (OSError, pa.ArrowException) as error:
        raise DatabaseError(
            f"cannot read the Parquet dataset file {path}: {error}"
        ) from None
    nodes = parts_from_json(table.to_pandas())
    if origin:
        nodes[ORIGIN] = origin
    if tree_ids is not None and "tree_id" in nodes.columns:
        nodes = nodes[_ids(nodes["tree_id"]).isin(tree_ids).to_numpy()]
    return nodes


def checked_nodes(
    nodes: pd.DataFrame, table: str = NODES, earlier: Mapping[str, str] | None = None
) -> tuple[pd.DataFrame, list[Problem]]:
    """One file's (or partition's) node table, typed and checked, and its problems:
    values of the wrong type read as missing; nameless and repeated rows and trees
    `earlier` names (tree -> file) are left out; broken parent links dropped,
    `PARENT_ROWS` set. `DatabaseError` if `REQUIRED` columns are missing."""
    import numpy as np
    import pandas as pd

    if missing := [column for column in REQUIRED if column not in nodes.columns]:
        raise DatabaseError(
            f"{table} is not a node table convgraph wrote: it has no"
            f" {', '.join(missing)} column"
        )
    nodes = nodes.copy(deep=False)
    if "conversation_id" not in nodes.columns:
        nodes["conversation_id"] = nodes["tree_id"]
    conversions: list[tuple[Iterable[str], Callable[[pd.Series], pd.Series]]] = [
        (ID_COLUMNS, _ids),
        (TEXT_COLUMNS, _texts),
        (INTEGER_COLUMNS, _integers),
        (BOOLEAN_ATTRIBUTES, _booleans),
        (["datetime_utc"], _times),
    ]
    for names, typed in conversions:
        for column in names:
            if column in nodes.columns:
                nodes[column] = typed(nodes[column])

    problems: list[Problem] = []
    nameless = (nodes["id"].isna() | nodes["tree_id"].isna()).to_numpy()
    if nameless.any():
        count = int(nameless.sum())
        said = f"{counted(count, 'row')} of {table} {'have' if count != 1 else 'has'}"
        message = f"{said} no id or no tree_id: left out"
        problems.append(Problem(NO_ID, "", None, None, message))
    repeated = nodes["id"].duplicated(keep="first").to_numpy() & ~nameless
    if repeated.any():
        extra = nodes["id"][repeated].value_counts(sort=False)
        for node_id in nodes["id"][repeated].unique().tolist():
            said = f"{node_id} is the id of {int(extra[node_id]) + 1} rows of {table}"
            message = f"{said}: the first is read, the others left out"
            problems.append(Problem(DUPLICATE_ID, node_id, None, None, message))
    split = np.zeros(len(nodes), dtype=bool)
    if earlier:
        split = nodes["tree_id"].isin(list(earlier)).to_numpy() & ~nameless & ~repeated
        for tree in nodes["tree_id"][split].unique().tolist():
            said = f"tree {tree} lies in {earlier[tree]} and in {table}: the rows in"
            whole = "(a dataset holds every tree whole in one file)"
            message = f"{said} {table} are left out {whole}"
            problems.append(Problem(SPLIT_TREE, tree, None, tree, message))
    nodes = nodes[~(nameless | repeated | split)]

    parent_rows, link_problems = check_links_table(nodes)
    problems.extend(link_problems)
    ids = nodes["id"].to_numpy(dtype=object)
    parents = np.where(parent_rows >= 0, ids[np.maximum(parent_rows, 0)], None)
    nodes["parent_id"] = pd.Series(parents, index=nodes.index, dtype=object)
    nodes[PARENT_ROWS] = parent_rows
    return nodes, problems


def _ids(values: pd.Series) -> pd.Series:
    """Ids as str or None; a number as its text (hand-made files)."""
    if _all_texts(values):
        return values
    import pandas as pd

    def as_id(value: Any) -> str | None:
        if value is None or value is pd.NA or value != value:  # NaN
            return None
        if isinstance(value, str):
            return value
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return str(value) if isinstance(value, int | float) else None

    return values.astype(object).map(as_id).astype(object)


def _texts(values: pd.Series) -> pd.Series:
    if _all_texts(values):
        return values
    objects = values.astype(object)
    return objects.where(objects.map(lambda value: isinstance(value, str)), None)


def _all_texts(values: pd.Series) -> bool:
    import numpy as np
    import pandas as pd

    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return pd.api.types.infer_dtype(dtype.categories, skipna=True) in (
            "string",
            "empty",
        )
    if pd.api.types.is_string_dtype(dtype) and dtype is not np.dtype(object):
        return True
    if dtype is np.dtype(object):
        return pd.api.types.infer_dtype(values, skipna=True) in ("string", "empty")
    return False


def _integers(values: pd.Series) -> pd.Series:
    """Counts as Int64; anything not a whole number within range is missing."""
    import numpy as np
    import pandas as pd

    if pd.api.types.is_integer_dtype(values.dtype):
        return values.astype("Int64")
    if pd.api.types.is_bool_dtype(values.dtype):
        return pd.Series(pd.NA, index=values.index, dtype="Int64")
    if pd.api.types.is_numeric_dtype(values.dtype):
        numbers = values.astype("float64")
    else:
        objects = values.astype(object)
        numeric = objects.map(
            lambda value: isinstance(value, int | float) and not isinstance(value, bool)
        )
        numbers = pd.to_numeric(objects.where(numeric, None), errors="coerce").astype(
            "float64"
        )
    whole = numbers.notna() & np.isfinite(numbers) & (numbers == np.floor(numbers))
    # Within int64 (2**63 itself is past it; a float cannot hold 2**63 - 1).
    whole &= numbers.abs() < 2.0**63
    result = pd.Series(pd.NA, index=values.index, dtype="Int64")
    result[whole] = numbers[whole].astype("int64")
    return result


def _booleans(values: pd.Series) -> pd.Series:
    """Flags as bool, or objects with None for what is no bool."""
    import pandas as pd

    if pd.api.types.is_bool_dtype(values.dtype):
        return values
    objects = values.astype(object)
    return objects.where(objects.map(lambda value: isinstance(value, bool)), None)


def _times(values: pd.Series) -> pd.Series:
    """A timestamp column as it is, else texts (others missing)."""
    import pandas as pd

    if isinstance(values.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(
        values.dtype
    ):
        return values
    return _texts(values)


def parts_from_json(nodes: pd.DataFrame) -> pd.DataFrame:
    """`parts` read back from JSON text as lists (None if not a list)."""
    if PARTS not in nodes.columns:
        return nodes
    parsed: Any = [_parts(text) for text in nodes[PARTS].astype(object).tolist()]
    nodes[PARTS] = parsed
    return nodes


def _parts(text: object) -> list[Any] | None:
    if not isinstance(text, str):
        return None
    try:
        found = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    return found if isinstance(found, list) else None


def tree_ids_of(
    directory: str | os.PathLike[str], conversation_ids: Iterable[str]
) -> list[str]:
    """The tree each id names (a tree or conversation id, or a unique prefix
    of one), in order, each once; one pass over the files. Raises
    `UnknownConversation`, `AmbiguousId`, `DatabaseError`."""
    import pandas as pd

    named = list(dict.fromkeys(conversation_ids))
    wanted = set(named)
    trees: set[str] = set()
    tree_of_conversation: dict[str, str] = {}
    # Per prefix given: each id it begins -> that id's tree.
    begun: dict[str, dict[str, str]] = {
        given: {} for given in named if len(given) >= MIN_PREFIX
    }
    for path in dataset_files(directory):
        table = read_file(path, ["tree_id", "conversation_id"])
        if "tree_id" not in table.columns:
            raise DatabaseError(
                f"{path.name} is not a node table convgraph wrote: it has no"
                " tree_id column"
            )
        tree_ids = _ids(table["tree_id"])
        conversations = (
            _ids(table["conversation_id"])
            if "conversation_id" in table.columns
            else tree_ids
        )
        trees.update(set(pd.unique(tree_ids.dropna())) & wanted)
        for conversation, tree in zip(
            conversations.tolist(), tree_ids.tolist(), strict=True
        ):
            if conversation in wanted and tree is not None:
                tree_of_conversation.setdefault(conversation, tree)
        for given, found_trees in begun.items():
            for column in (tree_ids, conversations):
                begins = column.str.startswith(given, na=False).to_numpy(bool)
                for name, tree in zip(
                    column[begins].tolist(), tree_ids[begins].tolist(), strict=True
                ):
                    if tree is not None:
                        found_trees.setdefault(name, tree)
    found: dict[str, None] = {}
    for conversation_id in named:
        if conversation_id in trees:
            found[conversation_id] = None
        elif conversation_id in tree_of_conversation:
            found[tree_of_conversation[conversation_id]] = None
        elif len(set(begun.get(conversation_id, {}).values())) == 1:
            found[next(iter(begun[conversation_id].values()))] = None
        elif begun.get(conversation_id):
            matches = [
                IdMatch(CONVERSATION, name, tree)
                for name, tree in sorted(begun[conversation_id].items())
            ]
            raise ambiguous_id(conversation_id, matches)
        else:
            raise UnknownConversation(conversation_id)
    return list(found)
