"""The search index's documents, one a node, and their adding to tantivy's writer."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from convgraph.contract import ORIGIN, PARTS
from convgraph.search.text import normalized, parts_text

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import tantivy

    from convgraph.model.forest import Forest
    from convgraph.sources.source import NodeTexts, ProgressCallback

#: A node's place on its tree, as the index keeps it (`branch` field).
ACTIVE, ABANDONED, SIDECHAIN = 0, 1, 2
#: The indexed texts of a node.
FIELDS = ("prompt", "response", "system", PARTS)
#: A document's fields, in the order `NodeColumns.documents` gives their values.
KEYS: tuple[str, ...] = ("id", "tree", "depth", "branch", "model", "source", ORIGIN)
KEYS += ("time", "moment", *FIELDS)
#: How many nodes of a forest read with its texts are made documents at a time.
CHUNK = 20_000

#: The texts the file's readers give as columns (the rest are the parts).
_COLUMNS = FIELDS[:3]


class RepeatedIds(Exception):
    """A batch of texts named a node twice: which of the file's rows the
    forest kept is the forest's rule, so its texts are read with it."""


class NodeColumns:
    """What the documents take of each node of a forest but its texts, in
    compact columns that outlive the forest, rows as in `forest.nodes`;
    `models` names every model the nodes hold."""

    def __init__(self, forest: Forest):
        import numpy as np

        from convgraph.analysis.abandoned import subagent_rows

        nodes = forest.nodes
        self.count = len(nodes)
        self.ids = _Strings(nodes["id"])
        self.times = _Strings(nodes["datetime_utc"])
        self.trees = _Codes(nodes["tree_id"])
        self._models = _Codes(nodes["model"])
        self.sources = _Codes(nodes["source"])
        self.origins = _Codes(nodes[ORIGIN]) if ORIGIN in nodes.columns else None
        self.models = set(self._models.names)
        self.depths = forest.depths
        active = nodes["active"].to_numpy(dtype=bool)
        self.branches = np.where(
            subagent_rows(nodes), SIDECHAIN, np.where(active, ACTIVE, ABANDONED)
        ).astype(np.uint8)
        self._row_of_id: dict[str | None, int] | None = None

    def __len__(self) -> int:
        return self.count

    @property
    def looked_up(self) -> bool:
        """Whether `rows_of` looks the ids up (they were not in the forest's order)."""
        return self._row_of_id is not None

    def documents(
        self, rows: np.ndarray, texts: dict[str, list[str | None]]
    ) -> Iterator[dict[str, Any]]:
        """The documents of the nodes at `rows`, with their `texts` (by field, aligned
        with `rows`, as the index holds them: a field missing or None is no text); only
        the values there are (tantivy takes no null)."""
        import pandas as pd

        times = self.times.at(rows)
        moments = moments_of(pd.Series(times, dtype=object), times)
        nothing = [None] * len(rows)
        prompts, responses, systems, parts = (
            texts.get(name) or nothing for name in FIELDS
        )
        # One comprehension a node (a million on a large file); a field the
        # node lacks is left out, not stored empty (tantivy takes no null).
        for values in zip(
            self.ids.at(rows),
            self.trees.at(rows),
            self.depths[rows].tolist(),
            self.branches[rows].tolist(),
            self._models.at(rows),
            self.sources.at(rows),
            self.origins.at(rows) if self.origins else nothing,
            times,
            moments,
            prompts,
            responses,
            systems,
            parts,
            strict=True,
        ):
            yield {k: v for k, v in zip(KEYS, values, strict=True) if v is not None}

    def rows_of(self, ids: list[str], start: int) -> np.ndarray:
        """The rows of the nodes named by `ids` (-1 for none): the forest's rows from
        `start` on where the ids are those in order (a file read in log order), else
        looked up by id."""
        import numpy as np

        if self._row_of_id is None:
            stop = start + len(ids)
            if stop <= self.count and self.ids.between(start, stop) == ids:
                return np.arange(start, stop)
            self._row_of_id = {
                node_id: row for row, node_id in enumerate(self.ids.between(0, None))
            }
        found = self._row_of_id
        return np.fromiter(
            (found.get(node_id, -1) for node_id in ids), dtype=np.int64, count=len(ids)
        )


class _Strings:
    """A column of strings, its values at some rows as str or None: Arrow's array,
    joined into one chunk once (a take from many chunks joins them at every take), where
    the table holds Arrow's strings; else plain values."""

    def __init__(self, column: pd.Series):
        import numpy as np

        self.arrow: Any = None
        if getattr(column.dtype, "storage", None) == "pyarrow":
            self.arrow = column.array.__arrow_array__().combine_chunks()
            self.plain = None
        else:
            self.plain = np.asarray(plain_values(column), dtype=object)

    def at(self, rows: np.ndarray) -> list[str | None]:
        if self.arrow is not None:
            found: list[str | None] = self.arrow.take(rows).to_pylist()
            return found
        assert self.plain is not None
        taken: list[str | None] = self.plain[rows].tolist()
        return taken

    def between(self, start: int, stop: int | None) -> list[str | None]:
        if self.arrow is not None:
            found: list[str | None] = self.arrow[start:stop].to_pylist()
            return found
        assert self.plain is not None
        taken: list[str | None] = self.plain[start:stop].tolist()
        return taken


class _Codes:
    """A column of few distinct values (trees, models, sources) as codes
    and the values' names (str; -1 for a missing value)."""

    def __init__(self, column: pd.Series):
        import pandas as pd

        codes, uniques = pd.factorize(column, sort=False)
        self.codes = codes
        self.names = [str(value) for value in uniques]

    def at(self, rows: np.ndarray) -> list[str | None]:
        names = self.names
        return [
            names[code] if code >= 0 else None for code in self.codes[rows].tolist()
        ]


def forest_documents(
    forest: Forest,
    columns: NodeColumns | None = None,
    progress: ProgressCallback | None = None,
) -> Iterator[dict[str, Any]]:
    """Each node of `forest`, read with its texts, as the index's document, made `CHUNK`
    nodes at a time; `columns` are the forest's where made already."""
    import numpy as np

    if columns is None:
        columns = NodeColumns(forest)
    nodes = forest.nodes
    total = len(nodes)
    report = progress or (lambda phase, done, total: None)
    for start in range(0, total, CHUNK):
        report("indexing nodes", start, total)
        part = nodes.iloc[start : start + CHUNK]
        texts = {
            name: _normalized(plain_values(part[name]))
            for name in _COLUMNS
            if name in part.columns
        }
        if PARTS in part.columns:
            said = zip(*(plain_values(part[n]) for n in _COLUMNS[:2]), strict=True)
            texts[PARTS] = _normalized(
                [
                    parts_text(value, both) if isinstance(value, list) else None
                    for value, both in zip(part[PARTS].tolist(), said, strict=True)
                ]
            )
        yield from columns.documents(np.arange(start, start + len(part)), texts)
    report("indexing nodes", total, total)


def batched_documents(
    columns: NodeColumns,
    batches: Iterable[NodeTexts],
    progress: ProgressCallback | None = None,
) -> Iterator[dict[str, Any]]:
    """Each node of the forest `columns` were made from (read without its texts) as the
    index's document, with its texts from `batches` (`Source.text_batches`); texts of
    nodes the forest does not hold (rows logged since it was read, hidden branches) are
    passed over. Raises `RepeatedIds` where a node is named twice (ids that are no
    key)."""
    import numpy as np

    report = progress or (lambda phase, done, total: None)
    total = len(columns)
    covered = np.zeros(total, dtype=bool)
    done = start = 0
    for batch in batches:
        report("indexing nodes", done, total)
        rows = columns.rows_of(batch.ids, start)
        start += len(rows)
        kept = rows >= 0
        if not kept.all():
            rows = rows[kept]
        # Rows in the forest's order are distinct; rows looked up by id may not be.
        looked_up = columns.looked_up and len(np.unique(rows)) < len(rows)
        if looked_up or covered[rows].any():
            raise RepeatedIds()
        covered[rows] = True
        done += len(rows)
        texts = {
            name: _normalized(_kept(values, kept))
            for name, values in batch.texts.items()
        }
        yield from columns.documents(rows, texts)
    left = np.flatnonzero(~covered)
    if len(left):
        yield from columns.documents(left, {})
    report("indexing nodes", total, total)


def _kept(values: list[str | None], kept: np.ndarray) -> list[str | None]:
    if kept.all():
        return values
    return [value for value, keep in zip(values, kept.tolist(), strict=True) if keep]


def _normalized(values: Sequence[str | None]) -> list[str | None]:
    """Each text as the index holds it; an empty one is none."""
    return [normalized(value) if value else None for value in values]


def plain_values(column: pd.Series) -> list[Any]:
    """A column's values as str or None (pandas' missing values None)."""
    values = column.astype(object)
    return [
        None if value is None else str(value)
        for value in values.where(column.notna(), None).tolist()
    ]


def moments_of(column: pd.Series, texts: list[str | None]) -> list[int | None]:
    """`moment` of each time of a column: pandas' parse (`parse_times`,
    the same rule) where it gives a time, `moment` of the text where it
    gives none (a year its clock cannot hold)."""
    from convgraph.times import parse_times

    parsed = parse_times(column.reset_index(drop=True))
    naive = parsed.dt.tz_convert("UTC").dt.tz_localize(None)
    # Microseconds, whatever unit the column holds (a year 1 to 9999 fits).
    values = naive.to_numpy("datetime64[us]").view("int64").tolist()
    missing = parsed.isna().tolist()
    return [
        (moment(text) if text is not None else None) if gone else value
        for value, gone, text in zip(values, missing, texts, strict=True)
    ]


def moment(text: str) -> int | None:
    """A stored time as microseconds since 1970 UTC, as `parse_time` reads
    it (every year from 1 to 9999), None where it is no time."""
    from datetime import UTC, datetime, timedelta

    from convgraph.times import parse_time

    parsed = parse_time(text)
    if parsed is None:
        return None
    return (parsed - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def add_documents(
    writer: Any, documents: Iterable[dict[str, Any]], layout: tantivy.Schema
) -> None:
    """The documents added to tantivy's `writer` of an index of schema `layout`, each as
    JSON (orjson's bytes, which tantivy parses faster than Python builds a Document); a
    document orjson refuses (a lone surrogate in an id) goes through a Document."""
    from binascii import b2a_base64

    import orjson
    import tantivy

    dumps, add = orjson.dumps, writer.add_json
    for document in documents:
        time = document.get("time")
        if time is not None:
            # A bytes field: base64 in JSON. Stored, never indexed.
            stored = time.encode("utf-8", "surrogatepass")
            document["time"] = b2a_base64(stored, newline=False).decode("ascii")
        try:
            add(dumps(document).decode("utf-8"))
        except orjson.JSONEncodeError:
            writer.add_document(tantivy.Document.from_dict(_safe(document), layout))


def _safe(document: dict[str, Any]) -> dict[str, Any]:
    """A document whose strings hold no lone surrogate (U+FFFD instead)."""
    return {
        key: value.encode("utf-8", "replace").decode("utf-8")
        if isinstance(value, str)
        else value
        for key, value in document.items()
    }
