"""Several reads as one forest, by the rule docs/design.md#several-sources states:
repeated exports of one account merged (the newest copy's content wins, the nodes it
lacks kept marked `gone`, differences reported as `changed-node`), ids that clash across
sources read qualified (`id-clash`)."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from convgraph.contract import (
    CATEGORY_COLUMNS,
    CONTENT_ATTRIBUTES,
    GONE,
    PARENT_ROWS,
    SOURCE_ATTRIBUTES,
    SOURCE_COLUMNS,
)
from convgraph.links.integrity import (
    CHANGED_NODE,
    DUPLICATE_CONVERSATION,
    ID_CLASH,
    Problem,
)
from convgraph.sources.source import ForestRead, TreeRecords, sort_log_order
from convgraph.text import counted
from convgraph.times import parse_time

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

#: llm's two generations share ids: one app.
APPS = {"responses": "llm", "turns": "llm"}

#: The chat apps whose exports `convgraph import` writes into llm's file.
CHAT_APPS = ("chatgpt", "claude", "openwebui")

BASE32 = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", b"0123456789abcdefghjkmnpqrstvwxyz"
)

#: What a node's copies are compared on.
COMPARED = ("parent_id", *SOURCE_ATTRIBUTES)

#: Hashed to order copies equal in time, so that no read's place decides.
HASHED = ("id", "parent_id", "prompt", "system", "response", "model", "datetime_utc")


def merge_reads(reads: Sequence[ForestRead]) -> ForestRead:
    """The union of `reads`: their nodes (copies of one tree merged), names,
    problems (with the clashes and differences found) and calls."""
    import pandas as pd

    from convgraph.sources.tables import conform_nodes

    if len(reads) == 1:
        return reads[0]
    frames = []
    for number, read in enumerate(reads):
        nodes = read.nodes.drop(columns=[PARENT_ROWS], errors="ignore")
        kinds = {name: object for name in CATEGORY_COLUMNS if name in nodes.columns}
        frames.append(nodes.astype(kinds).assign(_read=number))
    if not frames or all(frame.empty for frame in frames):
        table = pd.DataFrame({name: [] for name in SOURCE_COLUMNS}, dtype=object)
        return ForestRead(conform_nodes(table), _names(reads), _problems(reads, []))
    table = pd.concat([frame for frame in frames if len(frame)], ignore_index=True)
    table["_app"] = [APPS.get(app, app) or "" for app in table["source"].tolist()]
    table["_tree"] = table["tree_id"]
    _as_imported(table)
    problems: list[Problem] = []
    renamed = _clashes(table, problems)
    table = _merge_copies(table, problems)
    calls: dict[str, str] = {}
    for number, read in enumerate(reads):
        own = renamed.get(number, {})
        calls.update((call, own.get(node, node)) for call, node in read.calls.items())
    names = _names(reads)
    for tree, bare, number in (
        table[["tree_id", "_tree", "_newest"]].drop_duplicates().to_numpy()
    ):
        names[str(tree)] = reads[int(number)].names.get(bare)
    table = table.drop(
        columns=["_read", "_app", "_key", "_tree", "_newest", "_imported"]
    )
    if GONE in table.columns and not table[GONE].any():
        table = table.drop(columns=[GONE])
    nodes = conform_nodes(sort_log_order(table))
    order = dict.fromkeys(nodes["tree_id"].astype(object).tolist())
    names = {tree: names.get(tree) for tree in order} | {
        tree: names[tree] for tree in sorted(names) if tree not in order
    }
    return ForestRead(nodes, names, _problems(reads, problems), calls)


def stable_ulid(moment: str | None, *key: str) -> str:
    """A ULID as llm makes them (lower case): its time the moment given (0 where
    unknown), its random bits a hash of `key`: the ids `convgraph import`
    gives, the same on each import, which tell its turns when read again."""
    # Without an offset, UTC: ids must not depend on where the import runs.
    parsed = parse_time(moment)
    milliseconds = 0
    if parsed is not None:
        try:
            milliseconds = max(0, int(parsed.timestamp() * 1000))
        except (OverflowError, OSError, ValueError):
            milliseconds = 0
    milliseconds = min(milliseconds, (1 << 48) - 1)
    digest = hashlib.blake2b("\0".join(key).encode("utf-8"), digest_size=10).digest()
    # Crockford's base32 of the 128 bits, as python-ulid writes them (lower
    # case), by the standard library's encoder: python-ulid's is slow.
    value = milliseconds << 80 | int.from_bytes(digest, "big")
    return base64.b32encode(value.to_bytes(20, "big"))[6:].translate(BASE32).decode()


def _as_imported(table: pd.DataFrame) -> None:
    """Read the turns `convgraph import` wrote from a conversation another
    read holds as that conversation's nodes, and the turns logged below them
    into its tree (all `_imported`): found by the import's ids."""
    table["_imported"] = False
    chat = table["_app"].isin(CHAT_APPS).to_numpy()
    llm = (table["_app"] == "llm").to_numpy()
    if not chat.any() or not llm.any():
        return
    columns = ["_app", "tree_id", "id", "parent_id", "datetime_utc"]
    copies = table.loc[chat, columns].astype(object)
    copies = copies.where(copies.notna(), None)
    roots = copies[copies["parent_id"].isna().to_numpy()].fillna({"datetime_utc": ""})
    roots = roots.sort_values(["datetime_utc", "id"]).drop_duplicates(
        ["_app", "tree_id"]
    )
    mains = {
        stable_ulid(time or None, app, tree): (app, tree)
        for app, tree, time in roots[["_app", "tree_id", "datetime_utc"]].to_numpy()
    }
    held = set(table.loc[llm, "tree_id"].tolist())
    found = {main: at for main, at in mains.items() if main in held}
    if not found:
        return
    wanted = set(found.values())
    nodes: dict[tuple[str, str], dict[str, tuple[str | None, str | None]]] = {}
    for app, tree, node, parent, time in copies.itertuples(index=False):
        if (app, tree) in wanted:
            nodes.setdefault((app, tree), {})[node] = (time, parent)
    turn_of: dict[str, str] = {}
    for (app, tree), mine in nodes.items():
        for node in mine:
            # A node without a time takes its parent's, as the import did.
            time, above = mine[node]
            while time is None and above in mine:
                time, above = mine[above]
            turn_of[stable_ulid(time, app, tree, node, "turn")] = node
    rows = llm & table["tree_id"].isin(list(found)).to_numpy()
    ids = table["id"][rows].astype(object)
    imported = ids.isin(list(turn_of)).to_numpy()
    at = [found[tree] for tree in table["tree_id"][rows].tolist()]
    table.loc[rows, "_app"] = [app for app, _ in at]
    table.loc[rows, "tree_id"] = [tree for _, tree in at]
    table.loc[rows, "id"] = [turn_of.get(node, node) for node in ids.tolist()]
    parents = table["parent_id"][rows].astype(object).tolist()
    table.loc[rows, "parent_id"] = [turn_of.get(node, node) for node in parents]
    # The whole copy in llm's file ranks below the exports (`_imported`).
    table.loc[rows, "_imported"] = True
    index = table.index[rows][imported]
    table.loc[index, "source"] = table.loc[index, "_app"]


def _clashes(table: pd.DataFrame, problems: list[Problem]) -> dict[int, dict[str, str]]:
    """Qualify the trees and nodes whose ids another app's tree holds too
    (`APP:TREE`, `TREE/NODE`), the first app in sorted order keeping the
    bare id; sets `_key`; the ids renamed, by read."""
    import numpy as np

    trees = table[["tree_id", "_app"]].drop_duplicates()
    shared = trees["tree_id"][trees["tree_id"].duplicated(keep=False)]
    if len(shared):
        first = trees[trees["tree_id"].isin(shared)].groupby("tree_id")["_app"].min()
        owner = table["tree_id"].map(first)
        moved = (owner.notna() & (owner != table["_app"])).to_numpy()
        for tree, app in (
            table.loc[moved, ["tree_id", "_app"]].drop_duplicates().to_numpy()
        ):
            said = f"{tree} names a conversation of {first[tree]} and one of {app}"
            problem = f"{said}: the second read as {app}:{tree}"
            problems.append(
                _problem(ID_CLASH, f"{app}:{tree}", f"{app}:{tree}", problem)
            )
        table.loc[moved, "tree_id"] = (
            table["_app"][moved] + ":" + table["tree_id"][moved]
        )
    table["_key"] = table["_app"] + "\x1f" + table["tree_id"].astype(str)
    held = table[["id", "_key"]].drop_duplicates()
    shared = held["id"][held["id"].duplicated(keep=False)]
    renamed: dict[int, dict[str, str]] = {}
    if not len(shared):
        return renamed
    first = held[held["id"].isin(shared)].groupby("id")["_key"].min()
    owner = table["id"].map(first)
    moved = (owner.notna() & (owner != table["_key"])).to_numpy()
    new_ids = table["tree_id"][moved] + "/" + table["id"][moved]
    for number, old, new in zip(
        table["_read"][moved].tolist(),
        table["id"][moved].tolist(),
        new_ids.tolist(),
        strict=True,
    ):
        renamed.setdefault(number, {})[old] = new
    # A parent is in its child's tree: renamed where that tree's copy is.
    old = zip(table["_key"][moved].tolist(), table["id"][moved].tolist(), strict=True)
    parents = dict(zip(old, new_ids.tolist(), strict=True))
    keys = zip(table["_key"].tolist(), table["parent_id"].tolist(), strict=True)
    table["parent_id"] = np.array(
        [parents.get(key, key[1]) for key in keys], dtype=object
    )
    table.loc[moved, "id"] = new_ids
    for tree, count in table.loc[moved, "tree_id"].value_counts(sort=False).items():
        said = f"{counted(int(count), 'node id')} of {tree} name other nodes"
        problem = f"{said} in another source too: read as {tree}/ID"
        problems.append(_problem(ID_CLASH, str(tree), str(tree), problem))
    return renamed


def _merge_copies(table: pd.DataFrame, problems: list[Problem]) -> pd.DataFrame:
    """Each tree's node once, from the newest copy holding it; the nodes the
    newest copy lacks marked `GONE`; differing copies reported."""
    import numpy as np
    import pandas as pd

    # An import's copy is never newer than the export it came from.
    times = table["datetime_utc"].fillna("").where(~table["_imported"], "")
    narrow = pd.DataFrame(
        {"_key": table["_key"], "_read": table["_read"], "id": table["id"], "_t": times}
    )
    latest = narrow.groupby(["_key", "_read"], sort=False)["_t"].max()
    copies = latest.rename("_tt").reset_index()
    copies["_rt"] = copies["_read"].map(narrow.groupby("_read")["_t"].max())
    copies["_h"] = np.uint64(0)
    tied = copies.duplicated(["_key", "_rt", "_tt"], keep=False)
    if tied.any():
        # Copies equal in time: their content orders them, not the reads' order.
        pairs = pd.MultiIndex.from_frame(copies.loc[tied, ["_key", "_read"]])
        rows = pd.MultiIndex.from_frame(narrow[["_key", "_read"]]).isin(pairs)
        hashed = pd.util.hash_pandas_object(
            table.loc[rows, list(HASHED)].astype(object), index=False
        )
        sums = hashed.groupby([narrow["_key"][rows], narrow["_read"][rows]]).sum()
        copies.loc[tied, "_h"] = [sums[key] for key in pairs]
    copies = copies.sort_values(
        ["_key", "_rt", "_tt", "_h", "_read"],
        ascending=[True, False, False, False, True],
    )
    # Copies numbered from 1, the newest, within each tree.
    copies["_rank"] = copies.groupby("_key", sort=False).cumcount() + 1
    copies["_n"] = copies.groupby("_key", sort=False)["_read"].transform("size")
    copies["_newest"] = copies["_read"].where(copies["_rank"] == 1).ffill().astype(int)
    narrow = narrow.merge(copies, on=["_key", "_read"], how="left")
    narrow["_row"] = np.arange(len(narrow))
    order = narrow.sort_values(["_key", "id", "_rank"], kind="stable")
    again = order.duplicated(["_key", "id"]).to_numpy()
    if again.any():
        compared = again & ~table["_imported"].to_numpy()[order["_row"].to_numpy()]
        _report_changes(table, order["_row"].to_numpy(), again, compared, problems)
    kept = order[~again]
    # A turn logged below an imported conversation is no export's to lose.
    source = table["source"].to_numpy(dtype=object)[kept["_row"].to_numpy()]
    own = ~pd.Series(source).isin(list(APPS)).to_numpy()
    gone = (kept["_n"].to_numpy() > 1) & (kept["_rank"].to_numpy() != 1) & own
    result = table.iloc[kept["_row"].to_numpy()].assign(
        _newest=kept["_newest"].to_numpy()
    )
    if gone.any():
        result[GONE] = gone
        if "active" in result.columns:
            result["active"] = result["active"].where(~gone, False)
    return result


def _report_changes(
    table: pd.DataFrame,
    rows: np.ndarray,
    again: np.ndarray,
    compared: np.ndarray,
    problems: list[Problem],
) -> None:
    """A `CHANGED_NODE` problem for each node whose older copies differ from
    the kept one: `rows` the table's rows sorted newest first within each
    node, `again` the copies after the first, `compared` those compared."""
    import numpy as np

    starts = np.flatnonzero(~again)
    older = np.flatnonzero(compared)
    lead = rows[starts[np.searchsorted(starts, older, side="right") - 1]]
    older = rows[older]
    differs: dict[int, list[str]] = {}
    for name in COMPARED:
        if name not in table.columns:
            continue
        column = table[name]
        old = column.take(older).reset_index(drop=True)
        new = column.take(lead).reset_index(drop=True)
        same = (old == new).fillna(False).to_numpy(dtype=bool) | (
            old.isna() & new.isna()
        ).to_numpy()
        for row in set(lead[~same].tolist()):
            differs.setdefault(row, []).append(name)
    for row, names in sorted(differs.items()):
        node, tree = str(table["id"].iat[row]), table["tree_id"].iat[row]
        said = f"{node} of {tree} differs between copies ({', '.join(names)})"
        problems.append(
            _problem(CHANGED_NODE, node, str(tree), f"{said}: the newest kept")
        )


def _names(reads: Sequence[ForestRead]) -> dict[str, Any]:
    """Every read's names (empty conversations too), a name before none."""
    names: dict[str, Any] = {}
    for read in reads:
        for tree, name in read.names.items():
            if names.get(tree) is None:
                names[tree] = name
    return names


def _problems(reads: Sequence[ForestRead], found: list[Problem]) -> list[Problem]:
    """Every read's problems once, then those the merge found, sorted."""
    every = dict.fromkeys(problem for read in reads for problem in read.problems)
    return sorted(
        [*every, *found],
        key=lambda p: (p.kind, p.conversation_id or "", p.node_id, p.message),
    )


def merge_trees(copies: Sequence[TreeRecords]) -> TreeRecords:
    """The copies of one conversation an export lists several times as one tree, as
    `merge_reads` merges them, with a `duplicate-conversation` problem naming it."""
    merged = merge_reads([_copy_read(copy) for copy in copies if copy.records])
    nodes = merged.nodes.astype(object)
    records: list[dict[str, Any]] = nodes.where(nodes.notna(), None).to_dict("records")  # type: ignore[assignment]
    first = copies[0]
    problems = [*merged.problems, _duplicate(first.tree_id, first.name, len(copies))]
    return TreeRecords(
        first.tree_id, merged.names.get(first.tree_id), records, problems, merged.calls
    )


def merge_read_copies(
    read: ForestRead, copies: Sequence[TreeRecords], texts: bool = True
) -> ForestRead:
    """`read` (an export's, each conversation's first copy) with the later
    copies of its repeated conversations merged in, each tree alone (a
    tree's own times tell its newest copy); `texts` False as `read` was."""
    import pandas as pd

    from convgraph.sources.tables import conform_nodes

    by_tree: dict[str, list[ForestRead]] = {}
    for copy in filter(lambda copy: copy.records, copies):
        if not texts:
            copy.records = [
                dict(r, **dict.fromkeys(CONTENT_ATTRIBUTES)) for r in copy.records
            ]
        by_tree.setdefault(copy.tree_id, []).append(_copy_read(copy))
    tree_ids = read.nodes["tree_id"].astype(object)
    parts = [read.nodes[~tree_ids.isin(list(by_tree)).to_numpy()]]
    problems = list(read.problems)
    names = dict(read.names)
    for tree, reads in by_tree.items():
        first = read.nodes[(tree_ids == tree).to_numpy()]
        merged = merge_reads([ForestRead(first, {tree: read.names.get(tree)}), *reads])
        parts.append(merged.nodes)
        problems += merged.problems
        problems.append(_duplicate(tree, names.get(tree), len(reads) + 1))
        names[tree] = merged.names.get(tree, names.get(tree))
    kinds = {name: object for name in CATEGORY_COLUMNS}
    nodes = pd.concat([part.astype(kinds) for part in parts], ignore_index=True)
    nodes = nodes.drop(columns=[PARENT_ROWS], errors="ignore")
    if GONE in nodes.columns:
        nodes[GONE] = nodes[GONE].fillna(False).astype(bool)
    unique = list(dict.fromkeys(problems))
    return ForestRead(conform_nodes(sort_log_order(nodes)), names, unique, read.calls)


def _copy_read(copy: TreeRecords) -> ForestRead:
    """One copy's records as a read of its own."""
    import pandas as pd

    from convgraph.sources.tables import conform_nodes

    frame = pd.DataFrame.from_records(copy.records, columns=list(copy.records[0]))
    names = {copy.tree_id: copy.name}
    return ForestRead(conform_nodes(frame), names, list(copy.problems), copy.calls)


def _duplicate(tree: str, name: str | None, count: int) -> Problem:
    said = f"{tree} ({name})" if name else tree
    problem = f"{said} is listed {count} times in the export: its copies read as one"
    return _problem(DUPLICATE_CONVERSATION, tree, tree, f"{problem}, every node once")


def _problem(kind: str, node: str, tree: str, message: str) -> Problem:
    return Problem(kind, node, None, tree, message)
