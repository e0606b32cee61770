"""The `datasette` group: the Datasette plugin's pages (`convgraph.datasette`)
on the suite's linear forests (ten responses a conversation, so a million
responses are 100,000 trees), legacy and message store, asked through
Datasette's own client in the worker's process.

Rows, for each kind of file and size: the forest page as a first request
(the statistics table read without texts, sorted, its first page drawn),
beside `convgraph.stats` alone (the read, without the page); the forest
page asked again, sorted by another column, on its second page (the table
kept from the first request: a sort and a page drawn); and one tree's page
(the HTML explorer of a ten-node conversation), beside `load_tree` of the
same conversation (the read alone).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from benchmarks import suite, tasks
from benchmarks.report import Row

#: The shape measured: the common one, with an occasional retry.
SHAPE = "linear"


def _client(db: str) -> tuple[Callable[[str], int], str]:
    """A function that asks Datasette serving `db` for a path and gives the
    status; and the plugin's forest page of `db`."""
    from datasette.app import Datasette

    datasette = Datasette([db])
    loop = asyncio.new_event_loop()
    route = datasette.get_database().route

    def get(path: str) -> int:
        return loop.run_until_complete(datasette.client.get(path)).status_code

    return get, f"/-/convgraph/{route}"


@tasks.task("datasette.forest", timer=True)
def _forest(db: str, again: str) -> Callable[[int], float]:
    """The forest page: a first request (nothing kept from an earlier one),
    or `again` sorted by nodes on its second page (the table kept)."""
    from convgraph.datasette import files

    get, forest = _client(db)
    first = again != "1"
    path = forest if first else forest + "?_sort=nodes&_page=2"
    if not first:
        get(forest)

    def time_it(loops: int) -> float:
        total = 0.0
        for _ in range(loops):
            if first:
                files.forget()
            started = time.perf_counter()
            status = get(path)
            total += time.perf_counter() - started
            if status != 200:
                raise RuntimeError(f"{path}: HTTP {status}")
        return total

    return time_it


@tasks.task("datasette.tree")
def _tree(db: str, conversation: str) -> Callable[[], int]:
    """One tree's page (the explorer of one conversation)."""
    get, forest = _client(db)
    path = f"{forest}/{conversation}"
    return lambda: get(path)


def datasette_rows(sizes: list[int], options: suite.Options) -> list[Row]:
    """The `datasette` group: every row above, legacy and message store."""
    found = []
    for size in sizes:
        for kind in ("legacy", "store"):
            db = suite.database(kind, SHAPE, size, options.data_dir)
            at = suite.pick(kind, SHAPE, size, db)
            label = f"{kind} {SHAPE}"
            stats = suite.task("convgraph.stats", db=db)
            first = suite.task("datasette.forest", db=db, again=0)
            again = suite.task("datasette.forest", db=db, again=1)
            tree = suite.task("datasette.tree", db=db, conversation=at.conversation)
            load = suite.task(
                "convgraph.load_tree", db=db, conversation=at.conversation
            )
            found += [
                Row(
                    "datasette", label, size, "forest page, first request", first, stats
                ),
                Row("datasette", label, size, "forest page, sorted, page 2", again),
                Row("datasette", label, size, "tree page", tree, load),
            ]
    found[0].notes.append("baseline: convgraph.stats (the read the page makes)")
    found[2].notes.append("baseline: load_tree (the read the page makes)")
    return found
