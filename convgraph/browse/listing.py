"""The browser's conversation list: at once from the file's small tables,
the figures needing the forest's rules later (`structure_figures`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, astuple, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from convgraph.logs import Logs
    from convgraph.model.filters import TreeFilter
    from convgraph.model.forest import Forest


@dataclass
class ConversationRow:
    """One line of the list; `counted` False while `nodes` is an upper bound."""

    tree_id: str
    name: str | None
    nodes: int
    last_datetime: str | None
    models: list[str] = field(default_factory=list)
    leaves: int | None = None
    max_depth: int | None = None
    abandoned_share: float | None = None
    counted: bool = True


@dataclass(frozen=True)
class TreeFigures:
    """A tree's figures by `convgraph stats`' rules: nodes, leaves, depth,
    abandoned share."""

    nodes: int
    leaves: int
    max_depth: int
    abandoned_share: float | None = None

    def on(self, row: ConversationRow) -> ConversationRow:
        return replace(row, **asdict(self), counted=True)

    @classmethod
    def of(cls, summary: dict[str, Any]) -> TreeFigures:
        return cls(*(summary[one.name] for one in fields(cls)))


def list_conversations(logs: Logs) -> list[ConversationRow]:
    """Every named tree, newest first, from the file's small tables."""
    return [
        ConversationRow(tree_id, name, 0, None, counted=False)
        for tree_id, name in logs.tree_names() or []
    ]


def count_conversations(logs: Logs) -> list[ConversationRow]:
    """Every tree with its last time and models, newest first; calls logged
    (not `counted`) where the file tells them without a read."""
    if (counts := logs.tree_counts()) is None:
        return _table_rows(logs.forest(text=False))
    rows = [
        ConversationRow(tree_id, name, calls, last, models, counted=False)
        for tree_id, name, calls, last, models in counts
    ]
    return _recent_first(rows)


def _recent_first(rows: Iterable[ConversationRow]) -> list[ConversationRow]:
    """The newest conversation first, as `llm logs` shows them; ties by id."""
    ordered = sorted(rows, key=lambda row: row.tree_id)
    return sorted(ordered, key=lambda row: row.last_datetime or "", reverse=True)


def _table_rows(forest: Forest) -> list[ConversationRow]:
    """Each tree's nodes, last time and models; a tree of 0 nodes too."""
    rows = {
        tree_id: ConversationRow(tree_id, name, 0, None, [])
        for tree_id, name in forest.names.items()
    }
    nodes = forest.nodes
    values = [
        nodes[name].astype(object).where(nodes[name].notna(), None).tolist()
        for name in ("tree_id", "datetime_utc", "model")
    ]
    for tree_id, time, model in zip(*values, strict=True):
        row = rows.setdefault(tree_id, ConversationRow(tree_id, None, 0, None, []))
        row.nodes += 1
        if time is not None and (row.last_datetime is None or time > row.last_datetime):
            row.last_datetime = time
        if model is not None and model not in row.models:
            row.models = sorted([*row.models, model])
    return _recent_first(rows.values())


def structure_figures(forest: Forest) -> dict[str, TreeFigures]:
    """Each tree's `TreeFigures` from a forest read without its texts."""
    from convgraph.analysis.stats import conversation_table

    table = conversation_table(forest)
    shares = (
        table["abandoned_share"]
        .astype(object)
        .where(table["abandoned_share"].notna(), None)
    )
    return {
        str(tree_id): TreeFigures(int(nodes), int(leaves), int(depth), share)
        for tree_id, nodes, leaves, depth, share in zip(
            *(table[name] for name in ("tree_id", "nodes", "leaves", "max_depth")),
            shares,
            strict=True,
        )
    }


def figures_from_json(text: str) -> dict[str, TreeFigures]:
    """`main`'s printed figures, read back: {tree id: [nodes, leaves, depth, share]}."""
    import json

    return {key: TreeFigures(*value) for key, value in json.loads(text).items()}


def trees_in(forest: Forest, where: TreeFilter) -> set[str]:
    """The trees of `forest` that `where` keeps (any node matches)."""
    from convgraph.model.filters import node_matches_table

    nodes = forest.nodes
    return set(nodes["tree_id"][node_matches_table(nodes, where)].astype(str).tolist())


#: Above this many nodes the shapes are read in a process of their own: the
#: forest's build holds the GIL for seconds, which would freeze the keys.
APART_ABOVE_NODES = 50_000


def main(arguments: list[str]) -> int:
    """`SHAPES_COMMAND`: the `structure_figures` of the files `arguments` as JSON,
    or a one-line error and status 2."""
    import json
    import sys

    from convgraph.logs import Logs

    try:
        with Logs(arguments[0] if len(arguments) == 1 else arguments) as logs:
            figures = structure_figures(logs.forest(text=False))
    except Exception as error:  # SQLite's own errors too: the browser shows the line
        print(str(error), file=sys.stderr)
        return 2
    json.dump({key: astuple(found) for key, found in figures.items()}, sys.stdout)
    return 0


SHAPES_COMMAND = "import sys; from convgraph.browse.listing import main; sys.exit(main(sys.argv[1:]))"
