"""The browser's conversation list, read with a few aggregate queries.

`convgraph browse` must show its list at once, even on a million-response
`logs.db`, so the list is not read through the forest: one `group by` query
per storage generation gives each conversation's last time and models, and
the threads table tells which thread belongs to which tree. The figures that
need the forest's rules (the nodes, since a tool chain's calls are one node;
leaves, depth) come later from `structure_figures`, which reads the
structure of the forest without its texts and counts as `convgraph stats`
does (`conversation_table`), and from each tree the user opens. Nothing
here writes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from convgraph.sources import LogDatabase

if TYPE_CHECKING:
    from convgraph.model.filters import TreeFilter
    from convgraph.sources import Source


@dataclass
class ConversationRow:
    """One line of the conversation list.

    `tree_id` is the id that names the conversation tree (what `load_tree`
    takes); `leaves` and `max_depth` are None until the structure is read;
    `counted` is False while `nodes` is not the node count yet, which the
    list shows as not known: 0 while only the names are read, then for an
    llm database the calls logged (an upper bound, what the background read
    of the figures is sized by) until `TreeFigures` give the count by the
    rule of `convgraph stats`. A conversation of 0 nodes counted says so.
    """

    tree_id: str
    name: str | None
    nodes: int
    last_datetime: str | None
    models: list[str] = field(default_factory=list)
    leaves: int | None = None
    max_depth: int | None = None
    #: The share of the tree's tokens spent on abandoned branches (what its
    #: retries cost, `convgraph stats`' `abandoned_share`), None until read
    #: or where no node has tokens.
    abandoned_share: float | None = None
    counted: bool = True


@dataclass(frozen=True)
class TreeFigures:
    """A tree's figures by the rules of `convgraph stats`
    (`convgraph.analysis.stats.conversation_table`, or `summary` for a tree
    read whole): its nodes (a tool chain's calls are one node), leaves and
    maximum depth, and the share of its tokens spent on abandoned branches
    (None where no node has tokens)."""

    nodes: int
    leaves: int
    max_depth: int
    abandoned_share: float | None = None

    def on(self, row: ConversationRow) -> ConversationRow:
        """`row` with these figures, its nodes counted.

        Examples
        --------
        >>> row = ConversationRow("c1", None, 5, None, counted=False)
        >>> TreeFigures(3, 1, 2, 0.5).on(row)  # doctest: +NORMALIZE_WHITESPACE
        ConversationRow(tree_id='c1', name=None, nodes=3, last_datetime=None,
            models=[], leaves=1, max_depth=2, abandoned_share=0.5, counted=True)
        """
        return replace(
            row,
            nodes=self.nodes,
            leaves=self.leaves,
            max_depth=self.max_depth,
            abandoned_share=self.abandoned_share,
            counted=True,
        )

    @classmethod
    def of(cls, summary: dict[str, Any]) -> TreeFigures:
        """The figures of one tree's `convgraph.analysis.stats.summary`."""
        return cls(
            summary["nodes"],
            summary["leaves"],
            summary["max_depth"],
            summary["abandoned_share"],
        )


#: One row per legacy conversation: a response logged outside any
#: conversation is a conversation of its own, as the legacy reader has it.
_LEGACY_SQL = """
select coalesce(conversation_id, id) as cid, count(*) as nodes,
       max(datetime_utc) as last, group_concat(distinct model) as models
from responses{skip}
group by cid
"""

#: One row per message-store thread that made a call.
_TURNS_SQL = """
select thread_id, count(*) as nodes, max(datetime_utc) as last,
       group_concat(distinct model) as models
from turns group by thread_id
"""


def list_conversations(logs: Source) -> list[ConversationRow]:
    """Every named conversation tree of an open llm database, newest first,
    from the small `conversations` and `threads` tables only: the list the
    browser shows at once. The figures (`nodes` 0, no time, no models) come
    from `count_conversations`; a chat export, which has no table to ask,
    gives no rows here.

    Examples
    --------
    >>> from convgraph.sources import open_logs
    >>> with open_logs("examples/logs.db") as logs:
    ...     rows = list_conversations(logs)
    >>> [row.name for row in rows][:2]
    ['Starting a sourdough starter', 'Good morning, translated']
    """
    if not isinstance(logs, LogDatabase):
        return []
    rows: dict[str, ConversationRow] = {}
    thread_roots: dict[str, str] = {}
    if logs.store is not None:
        threads, thread_roots = _threads(logs)
        # Newest first: llm adds a thread when it is made.
        for tree_id in reversed(threads):
            if thread_roots.get(tree_id, tree_id) == tree_id:
                rows[tree_id] = ConversationRow(
                    tree_id, threads[tree_id][0], 0, None, counted=False
                )
    if logs.legacy is not None and logs.legacy.has_conversations:
        for cid, name in logs.conn.execute(
            "select id, name from conversations order by rowid desc"
        ):
            tree_id = thread_roots.get(cid, cid)
            if tree_id not in rows:
                rows[tree_id] = ConversationRow(tree_id, name, 0, None, counted=False)
            elif cid == tree_id and name:
                # llm's own name for the conversation, not the one of the
                # thread llm 0.32+ went on with it in (named by a later prompt).
                rows[tree_id].name = name
            else:
                rows[tree_id].name = rows[tree_id].name or name
    return list(rows.values())


def count_conversations(logs: Source) -> list[ConversationRow]:
    """Every conversation tree with its last time and models, newest first,
    and its node count where it can be told without the forest.

    An llm database is read with one aggregate query over `responses` and
    one over `turns` (and the small `threads` and `conversations` tables): a
    scan of the file, seconds on a million responses, which the browser runs
    after showing `list_conversations`. It counts calls, not nodes (the
    calls of a tool chain are one node): its rows are not `counted`, their
    `nodes` the calls logged, until `structure_figures` gives the nodes. A
    chat export is parsed conversation by conversation, an agent's sessions
    read as a table, each node counted. `leaves` and `max_depth` are left
    None for `structure_figures` to fill.

    Examples
    --------
    >>> from convgraph.sources import open_logs
    >>> with open_logs("examples/logs.db") as logs:
    ...     rows = count_conversations(logs)
    >>> [(row.name, row.nodes, row.counted, row.models) for row in rows][:1]
    [('Starting a sourdough starter', 7, False, ['gpt-4o-mini', 'llama3.2'])]
    """
    if not isinstance(logs, LogDatabase):
        return _export_rows(logs)
    rows: dict[str, ConversationRow] = {}
    thread_roots: dict[str, str] = {}
    if logs.store is not None:
        threads, thread_roots = _threads(logs)
        for thread_id, nodes, last, models in logs.conn.execute(_TURNS_SQL):
            tree_id = thread_roots.get(thread_id, thread_id)
            name = threads.get(tree_id, (None, None))[0]
            _add(rows, tree_id, name, nodes, last, models)
    if logs.legacy is not None:
        names: dict[str, Any] = {}
        if logs.legacy.has_conversations:
            names = dict(logs.conn.execute("select id, name from conversations"))
        skip = (
            " where id not in (select id from turns)"
            if logs.legacy.skip_ids_in_turns
            else ""
        )
        for cid, nodes, last, models in logs.conn.execute(
            _LEGACY_SQL.format(skip=skip)
        ):
            # llm continues a legacy conversation in a thread of the same id.
            tree_id = thread_roots.get(cid, cid)
            _add(rows, tree_id, names.get(cid), nodes, last, models)
            if cid == tree_id and names.get(cid):
                rows[tree_id].name = names[cid]  # llm's name, as in the list
    for row in rows.values():
        row.counted = False  # calls, not nodes: `structure_figures` counts
    return _recent_first(rows.values())


def _threads(
    logs: LogDatabase,
) -> tuple[dict[str, tuple[str | None, str | None]], dict[str, str]]:
    """Every thread's name and origin, and the tree each thread belongs to
    (the message-store reader's own walk of the forks)."""
    from convgraph.sources.llm.message_store import _thread_roots

    threads = {
        row[0]: (row[1], row[2])
        for row in logs.conn.execute(
            "select id, name, forked_from from threads order by rowid"
        )
    }
    roots = _thread_roots({tid: forked for tid, (_, forked) in threads.items()})[0]
    return threads, roots


def _add(
    rows: dict[str, ConversationRow],
    tree_id: str,
    name: str | None,
    nodes: int,
    last: str | None,
    models: str | None,
) -> None:
    """Fold one group's figures into its tree's row."""
    found = (models or "").split(",") if models else []
    row = rows.get(tree_id)
    if row is None:
        rows[tree_id] = ConversationRow(tree_id, name, nodes, last, sorted(found))
        return
    row.name = row.name or name
    row.nodes += nodes
    if last is not None and (row.last_datetime is None or last > row.last_datetime):
        row.last_datetime = last
    row.models = sorted(set(row.models) | set(found))


def _recent_first(rows: Any) -> list[ConversationRow]:
    """The newest conversation first, as `llm logs` shows them; ties by id."""
    ordered = sorted(rows, key=lambda row: row.tree_id)
    return sorted(ordered, key=lambda row: row.last_datetime or "", reverse=True)


def _export_rows(logs: Source) -> list[ConversationRow]:
    """A chat export's conversations, each parsed once (no SQL is behind an
    export). A conversation without a prompt or an answer is listed with 0
    nodes, as `convgraph conversations` lists it, not left out."""
    from convgraph.sources.chat.exports import conversation_records

    if not hasattr(logs, "conversations"):
        return _table_rows(logs)
    rows: dict[str, ConversationRow] = {}
    for conversation in logs.conversations():  # type: ignore[attr-defined]
        records = conversation_records(conversation, logs.format)  # type: ignore[attr-defined]
        if conversation.id in rows:
            continue
        times = [record["datetime_utc"] for record in records if record["datetime_utc"]]
        models = {record["model"] for record in records if record["model"]}
        rows[conversation.id] = ConversationRow(
            conversation.id,
            conversation.name,
            len(records),
            max(times) if times else None,
            sorted(models),
        )
    return _recent_first(rows.values())


def _table_rows(logs: Source) -> list[ConversationRow]:
    """The trees of a source that is neither SQL nor an export (a coding
    agent's sessions), from its whole table without texts."""
    read = logs.read(texts=False)
    nodes, names = read.nodes, read.names
    rows: dict[str, ConversationRow] = {
        tree_id: ConversationRow(tree_id, name, 0, None, [])
        for tree_id, name in names.items()
    }
    values = [
        nodes[name].astype(object).where(nodes[name].notna(), None).tolist()
        for name in ("tree_id", "datetime_utc", "model")
    ]
    for tree_id, time, model in zip(*values, strict=True):
        _add(rows, tree_id, None, 1, time, model)
    return _recent_first(rows.values())


def structure_figures(
    db: str | os.PathLike[str] | None,
) -> dict[str, TreeFigures]:
    """Each tree's nodes, leaves, maximum depth and share of tokens spent on
    abandoned branches, read from the forest's
    structure without its texts by the rules of `convgraph stats` (its
    `conversation_table`): the list's slow columns, read after it shows.

    Examples
    --------
    >>> figures = structure_figures("examples/logs.db")
    >>> figures["01jb2hashmap0000000000000"]  # doctest: +ELLIPSIS
    TreeFigures(nodes=7, leaves=4, max_depth=2, abandoned_share=0.52...)
    """
    from convgraph.analysis.stats import conversation_table
    from convgraph.model.forest import Forest

    table = conversation_table(Forest.read(db, text=False))
    shares = (
        table["abandoned_share"]
        .astype(object)
        .where(table["abandoned_share"].notna(), None)
    )
    return {
        str(tree_id): TreeFigures(int(nodes), int(leaves), int(depth), share)
        for tree_id, nodes, leaves, depth, share in zip(
            table["tree_id"],
            table["nodes"],
            table["leaves"],
            table["max_depth"],
            shares,
            strict=True,
        )
    }


def figures_from_json(text: str) -> dict[str, TreeFigures]:
    """The figures `main` prints ({tree id: [nodes, leaves, depth,
    abandoned share]}), read back by the browser from the process it ran.

    Examples
    --------
    >>> figures_from_json('{"c1": [3, 1, 2, null]}')
    {'c1': TreeFigures(nodes=3, leaves=1, max_depth=2, abandoned_share=None)}
    """
    import json

    return {key: TreeFigures(*value) for key, value in json.loads(text).items()}


def trees_in(db: str | os.PathLike[str] | None, where: TreeFilter) -> set[str]:
    """The trees a time, model or source filter keeps (any of their nodes
    matches: `convgraph.model.filters.node_matches_table`), read from the
    forest's table without its texts: the conversations the list shows
    under `convgraph browse --since/--until/--model/--source`.

    Examples
    --------
    >>> from convgraph.model.filters import TreeFilter
    >>> sorted(trees_in("examples/logs.db", TreeFilter(models=("claude*",))))
    ['01jb1haiku000000000000000', '01jb2hashmap0000000000000']
    """
    from convgraph.model.filters import node_matches_table
    from convgraph.model.forest import Forest

    nodes = Forest.read(db, text=False).nodes
    return set(nodes["tree_id"][node_matches_table(nodes, where)].astype(str).tolist())


#: Above this many nodes the shape figures are read in a process of their
#: own: building the forest's tables holds Python's interpreter lock for
#: seconds, and in a thread the interface would stop answering keys.
APART_ABOVE_NODES = 50_000


def main(arguments: list[str]) -> int:
    """`structure_figures` of `arguments[0]`, run as `SHAPES_COMMAND`, as
    JSON on stdout ({tree id: [nodes, leaves, depth, abandoned share]},
    `figures_from_json`),
    or the one-line error on stderr and exit status 2; the browser runs it
    in a process of its own."""
    import json
    import sqlite3
    import sys

    from convgraph.errors import ConvgraphError

    try:
        figures = structure_figures(arguments[0])
    except (ConvgraphError, sqlite3.Error) as error:
        print(str(error), file=sys.stderr)
        return 2
    json.dump(
        {
            tree_id: [found.nodes, found.leaves, found.max_depth, found.abandoned_share]
            for tree_id, found in figures.items()
        },
        sys.stdout,
    )
    return 0


#: The Python code that runs `main` in a process of its own (the database's
#: path follows it as an argument).
SHAPES_COMMAND = "import sys; from convgraph.browse.listing import main; sys.exit(main(sys.argv[1:]))"
