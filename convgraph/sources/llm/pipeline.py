"""The llm read pipeline, declared once: the registered rules (`links.rules`)
that make one set of nodes of a file's generations, in order. The one-tree
read (`LogDatabase.read_tree`) runs each step's reference form on the
tree's records; both whole-file reads (by rows, `LogDatabase.read_all`,
and by columns, `columnar.read_forest`) each step's table form.

Before these steps each generation's reader links its own rows: old
writers' rows placed (`old_writers.place_records`), a turn's parent turn
(`turn_parents`). After them the model marks the branches (`mark_tree`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from convgraph.contract import PARENT_ROWS
from convgraph.links.integrity import Problem
from convgraph.sources.llm.generations import (
    CONTINUES,
    first_of_each_id,
    first_of_each_id_table,
    join_generations,
    join_generations_table,
)
from convgraph.sources.llm.legacy import SOURCE, link_as_chains, link_as_chains_table
from convgraph.sources.llm.runs import fold_runs, fold_runs_table

if TYPE_CHECKING:
    import pandas as pd

Records = list[dict[str, Any]]


@dataclass
class Read:
    """What the steps of one read share: which generations the file holds,
    whether its responses carry parents, whether the file's index keeps the
    ids unique, whether texts were read (and how legacy answers are read
    without them); what the steps find."""

    legacy: bool
    store: bool
    linked: bool
    unique: bool = False
    text: bool = True
    response_texts: Callable[[list[str]], dict[str, str | None]] | None = None
    problems: list[Problem] = field(default_factory=list)
    calls: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    """One rule of the pipeline: its registered name, when it applies, and
    its two forms as the pipeline calls them."""

    rule: str
    applies: Callable[[Read], bool]
    tree: Callable[[Records, Read], Records]
    table: Callable[[pd.DataFrame, Read], pd.DataFrame]


def _each_id_on_tree(records: Records, read: Read) -> Records:
    kept, repeated = first_of_each_id(records)
    read.problems += repeated
    return kept


def _each_id_on_table(nodes: pd.DataFrame, read: Read) -> pd.DataFrame:
    kept, repeated = first_of_each_id_table(nodes)
    read.problems += repeated
    return kept


def _chains_on_tree(records: Records, read: Read) -> Records:
    link_as_chains([record for record in records if record["source"] == SOURCE])
    return records


def _chains_on_table(nodes: pd.DataFrame, read: Read) -> pd.DataFrame:
    rows = link_as_chains_table(nodes)
    if not read.store:  # every row a legacy one: the forest need not hash ids
        nodes[PARENT_ROWS] = rows
    return nodes


def _join_on_tree(records: Records, read: Read) -> Records:
    if read.legacy:
        join_generations(records, linked=read.linked)
    return records


def _join_on_table(nodes: pd.DataFrame, read: Read) -> pd.DataFrame:
    if read.legacy and read.store:
        response_texts = None if read.text else read.response_texts
        join_generations_table(nodes, read.linked, response_texts)
    return nodes.drop(columns=CONTINUES, errors="ignore")


def _runs_on_tree(records: Records, read: Read) -> Records:
    nodes, calls = fold_runs(records)
    read.calls.update(calls)
    return nodes


def _runs_on_table(nodes: pd.DataFrame, read: Read) -> pd.DataFrame:
    folded, calls = fold_runs_table(nodes, read.text)
    read.calls.update(calls)
    return folded


#: The steps, in order. The join reads each call's own answer, so a tool
#: chain is folded after it.
PIPELINE = (
    Step(
        "first_of_each_id",
        lambda read: not read.unique,
        _each_id_on_tree,
        _each_id_on_table,
    ),
    Step(
        "link_as_chains",
        lambda read: read.legacy and not read.linked,
        _chains_on_tree,
        _chains_on_table,
    ),
    Step("join_generations", lambda read: True, _join_on_tree, _join_on_table),
    Step("fold_runs", lambda read: True, _runs_on_tree, _runs_on_table),
)


def run_on_tree(records: Records, read: Read) -> Records:
    """One tree's records (in log order) through every step that applies."""
    for step in PIPELINE:
        if step.applies(read):
            records = step.tree(records, read)
    return records


def run_on_table(nodes: pd.DataFrame, read: Read) -> pd.DataFrame:
    """The whole table (in log order) through every step that applies."""
    for step in PIPELINE:
        if step.applies(read):
            nodes = step.table(nodes, read)
    return nodes
