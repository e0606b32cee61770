"""Read a Parquet dataset that `convgraph export --format parquet` wrote.

A dataset is a folder with two tables, each a folder of Parquet files:
`nodes/` (the node table of `convgraph.analysis.stats.node_table`, with
`tree_name`) and `edges/`, cut by a hash bucket of the tree id so that every
tree lies whole in one file (`convgraph.export.parquet` writes it). This is
the read side: telling such a folder (`is_parquet_dataset`), naming its trees
(`tree_ids_of`) and reading its node table with pyarrow (`read_nodes`), which
`convgraph stats --db DIR` and `convgraph.analysis.datasets` use; each
node's `parts` come back from their JSON text as the lists they were
(`parts_from_json`). pyarrow is
imported only inside the functions, so that the command line starts without
it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convgraph.contract import PARTS
from convgraph.errors import ExportError, UnknownConversation

if TYPE_CHECKING:
    import pandas as pd

#: The dataset's two tables, each a folder of Parquet files.
NODES = "nodes"
EDGES = "edges"


def is_parquet_dataset(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a folder holding a `nodes/` folder of Parquet files
    (as `convgraph.export.parquet.write_parquet` writes it)."""
    nodes = Path(path) / NODES
    return nodes.is_dir() and any(nodes.glob("*.parquet"))


def read_nodes(
    directory: str | os.PathLike[str],
    tree_ids: Iterable[str] | None = None,
    columns: list[str] | None = None,
) -> pd.DataFrame:
    """A dataset's node table as one pandas DataFrame, read by pyarrow: every
    tree, or only those `tree_ids` names (the other files' rows are skipped
    by the Parquet statistics where they can be).

    Raises
    ------
    ExportError
        The files are not a Parquet dataset of this shape (the error of the
        export format, as the dataset is one).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    filters = None
    if tree_ids is not None:
        filters = [("tree_id", "in", list(tree_ids))]
    try:
        if columns is not None:
            # A dataset written before a column was added lacks it: the
            # statistics take it as missing (`node_table_of`).
            held = set(pq.read_schema(next(_files(directory))).names)
            columns = [column for column in columns if column in held]
        table = pq.read_table(Path(directory) / NODES, columns=columns, filters=filters)
    except (OSError, StopIteration, pa.ArrowException) as error:
        raise ExportError(
            f"cannot read the Parquet dataset {directory}: {error}"
        ) from None
    return parts_from_json(table.to_pandas())


def _files(directory: str | os.PathLike[str]) -> Iterator[Path]:
    return iter(sorted((Path(directory) / NODES).glob("*.parquet")))


def parts_from_json(nodes: pd.DataFrame) -> pd.DataFrame:
    """The node table with each node's `parts` read back from the JSON text
    the dataset holds (`convgraph.export.parquet.parts_as_json`) as the list
    it was; a text that is not a JSON list reads as None.

    Examples
    --------
    >>> import pandas as pd
    >>> parts_from_json(pd.DataFrame({"parts": [None, '[{"type": "text"}]']}))[
    ...     "parts"].tolist()
    [None, [{'type': 'text'}]]
    """
    if PARTS not in nodes.columns:
        return nodes
    parsed: Any = [_parts(text) for text in nodes[PARTS].astype(object).tolist()]
    nodes[PARTS] = parsed
    return nodes


def _parts(text: object) -> list | None:
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
    """The tree each id names, in the order named, each tree once: an id is a
    tree id, or a conversation (thread) id of one of the dataset's nodes.

    Raises
    ------
    UnknownConversation
        An id names no tree and no node's conversation.
    """
    import pyarrow.parquet as pq

    named = list(dict.fromkeys(conversation_ids))
    table = pq.read_table(
        Path(directory) / NODES,
        columns=["tree_id", "conversation_id"],
        filters=[[("tree_id", "in", named)], [("conversation_id", "in", named)]],
    ).to_pandas()
    trees = set(table["tree_id"].astype(str))
    tree_of_conversation = dict(
        zip(
            table["conversation_id"].astype(str),
            table["tree_id"].astype(str),
            strict=True,
        )
    )
    found: dict[str, None] = {}
    for conversation_id in named:
        if conversation_id in trees:
            found[conversation_id] = None
        elif conversation_id in tree_of_conversation:
            found[tree_of_conversation[conversation_id]] = None
        else:
            raise UnknownConversation(conversation_id)
    return list(found)
