"""The operations the suite times, each beside the baseline it is compared to,
and the pyperf script that times one of them.

A task is a setup function, registered by name with `task`, that imports what
it needs and returns the operation to time; a timer task (``timer=True``)
returns instead a function of pyperf's loop count that times its calls itself
and returns the seconds (for a figure that is not a call's duration, or for
work done untimed between calls, such as a fresh copy of a file). Setup is
not timed: start-up is measured on its own, as whole commands. An operation
may report `figure`s beside its time (a size written, a similarity, the peak
memory of Dask's workers). Names say which side a task is on: ``convgraph.*``
is convgraph's public API; ``sqlite.*`` a bare sqlite3 fetch of the same rows
(the cost of reading the data at all); ``seed.*`` the helpers of the project's
original notes (`benchmarks.baselines`, docs/design.md#where-it-started); ``view.*`` llm's `message_tree` view. The groups
beyond the reads register theirs in `benchmarks.outputs`, `benchmarks.writes`
and `benchmarks.sources` (`load`).

``python -m benchmarks.tasks [PYPERF OPTIONS] TASK [KEY=VALUE ...]`` times one
task with `pyperf.Runner`: each worker is a fresh process, and pyperf records
the worker's peak resident memory (``mem_max_rss``) beside its timings.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

#: task name -> setup(**params) -> operation to time (or, for the names in
#: TIMERS, a function of the loop count that returns the seconds it timed)
TASKS: dict[str, Callable[..., Callable[..., Any]]] = {}
TIMERS: set[str] = set()
#: Figures this process's operations reported, the largest value of each;
#: a pyperf worker hands them to the suite (`main`).
FIGURES: dict[str, float] = {}

#: The columns convgraph reads of a legacy response (its node contract).
LEGACY_COLUMNS = (
    "id, conversation_id, parent_response_id, prompt, system, response, model,"
    " datetime_utc, input_tokens, output_tokens, duration_ms"
)


def task(name: str, timer: bool = False) -> Callable:
    """Register a setup function under `name` (see the module's docstring)."""

    def register(setup: Callable[..., Callable[..., Any]]) -> Callable:
        TASKS[name] = setup
        if timer:
            TIMERS.add(name)
        return setup

    return register


def load() -> dict[str, Callable[..., Callable[..., Any]]]:
    """Every task, the other groups' too (their modules register them)."""
    from benchmarks import (  # noqa: F401
        agents,
        datasette_pages,
        importing,
        meaning,
        merging,
        outputs,
        searching,
        sources,
        writes,
    )

    return TASKS


def figure(name: str, value: float) -> None:
    """Report a figure beside the time; the largest value of the calls and of
    the worker processes is kept."""
    FIGURES[name] = max(value, FIGURES.get(name, value))


def _status_mb(field: str) -> float:
    # Linux's own account of this process's memory, in kB.
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status: Linux only")


def peak_mb() -> float:
    """This process's peak resident memory (VmHWM), in MB."""
    return _status_mb("VmHWM")


def reset_peak() -> float:
    """Start this process's peak memory afresh from what it holds now (Linux
    4.0 and later) and return that, in MB. pyperf's peak (ru_maxrss) then
    counts from here too."""
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")
    return _status_mb("VmRSS")


def above_setup(operation: Callable[[], Any]) -> Callable[[], Any]:
    """`operation`, with the peak memory counted from the end of the setup:
    pyperf's peak is then the peak of the timed calls (what the setup built
    included, its passing peaks not), and the figure ``MB above setup`` the
    calls' own working memory (C allocations included)."""
    held = reset_peak()

    def run() -> Any:
        result = operation()
        figure("MB above setup", peak_mb() - held)
        return result

    return run


def _connect(db: str) -> sqlite3.Connection:
    # As convgraph opens it: read-only.
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True)


def _fetch(db: str, sql: str, params: tuple = ()) -> Callable[[], list]:
    def fetch() -> list:
        conn = _connect(db)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    return fetch


# -- bare fetches: the cost of reading the data ---------------------------------


@task("sqlite.structure")
def _sqlite_structure(db: str) -> Callable[[], list]:
    """Every response's id, parent and conversation."""
    return _fetch(db, "select id, parent_response_id, conversation_id from responses")


@task("sqlite.all")
def _sqlite_all(db: str) -> Callable[[], list]:
    """Every response, with the columns convgraph reads."""
    return _fetch(db, f"select {LEGACY_COLUMNS} from responses")


@task("sqlite.conversation")
def _sqlite_conversation(db: str, conversation: str) -> Callable[[], list]:
    """One conversation's responses, with the columns convgraph reads."""
    return _fetch(
        db,
        f"select {LEGACY_COLUMNS} from responses where conversation_id = ?",
        (conversation,),
    )


@task("sqlite.store_structure")
def _sqlite_store_structure(db: str) -> Callable[[], list]:
    """The message store's links: every turn's thread and messages, every
    message's parent, every thread's origin."""

    def fetch() -> list:
        conn = _connect(db)
        try:
            turns = conn.execute(
                "select id, thread_id, parent_message_hash, tip_message_hash from turns"
            ).fetchall()
            conn.execute("select hash, parent_hash, role from messages").fetchall()
            conn.execute("select id, forked_from from threads").fetchall()
            return turns
        finally:
            conn.close()

    return fetch


PATH_SQL = """
with recursive up(id, parent, depth) as (
    select id, parent_response_id, 0 from responses where id = ?
    union all
    select r.id, r.parent_response_id, up.depth + 1
    from responses r join up on r.id = up.parent
    where up.depth < 1000000
)
select id from up order by depth desc
"""


@task("sqlite.path_cte")
def _sqlite_path_cte(db: str, node: str) -> Callable[[], list]:
    """A node's path in one recursive query up the primary key: no scan."""
    return _fetch(db, PATH_SQL, (node,))


# -- convgraph -------------------------------------------------------------------


def read_forest(db: str, **options: Any) -> Any:
    """The forest of `db` as the public API reads it: opened, read, closed."""
    import convgraph

    with convgraph.open(db) as logs:
        return logs.forest(**options)


@task("convgraph.stats")
def _convgraph_stats(db: str) -> Callable[[], Any]:
    """Forest statistics: one row per conversation, from the structure only."""
    from convgraph.analysis.stats import conversation_table

    return lambda: conversation_table(read_forest(db, text=False))


@task("convgraph.stats_rows")
def _convgraph_stats_rows(db: str) -> Callable[[], Any]:
    """`convgraph.analysis.stats` read by the row readers (sqlite3 tuples), the
    columnar reader turned off: the cost it replaces, side by side."""
    from convgraph.analysis.stats import conversation_table
    from convgraph.sources.llm import columnar

    columnar.available = lambda: False
    return lambda: conversation_table(read_forest(db, text=False))


@task("convgraph.stats_tables")
def _convgraph_stats_tables(db: str) -> Callable[[], Any]:
    """Every table `convgraph stats` can print, from one read of the forest."""
    from convgraph.analysis import stats

    def tables() -> list:
        forest = read_forest(db, text=False)
        return [
            stats.conversation_table(forest),
            stats.node_table(forest),
            stats.edge_table(forest),
            stats.branch_table(forest),
        ]

    return tables


@task("convgraph.forest_structure")
def _convgraph_forest_structure(db: str) -> Callable[[], Any]:
    """The whole forest without its texts."""
    return lambda: read_forest(db, text=False)


@task("convgraph.forest")
def _convgraph_forest(db: str) -> Callable[[], Any]:
    """The whole forest with every text."""
    return lambda: read_forest(db)


@task("convgraph.load_tree")
def _convgraph_load_tree(db: str, conversation: str) -> Callable[[], Any]:
    """One conversation as a DiGraph."""
    from convgraph.model.loading import load_tree

    return lambda: load_tree(conversation, db)


@task("convgraph.path")
def _convgraph_path(db: str, node: str) -> Callable[[], list]:
    """A node's path from its root, as `convgraph path` finds it."""
    from convgraph.model.loading import load_path

    return lambda: load_path(node, db)


@task("convgraph.descendants")
def _convgraph_descendants(db: str, node: str) -> Callable[[], list]:
    """Every node below a node."""
    from convgraph.model import tree
    from convgraph.model.loading import load_tree_of_node

    return lambda: tree.descendants(load_tree_of_node(node, db), node)


@task("convgraph.leaves")
def _convgraph_leaves(db: str, conversation: str) -> Callable[[], list]:
    """The leaves of one conversation."""
    from convgraph.model import tree
    from convgraph.model.loading import load_tree

    return lambda: tree.leaves(load_tree(conversation, db))


# -- the seed's helpers and llm's view ---------------------------------------------


def _baseline(helper: str) -> Callable[..., Callable[[], Any]]:
    """A task that runs `benchmarks.baselines.<helper>(conn, key)` on a fresh
    read-only connection; `recursion` raises Python's recursion limit for the
    seed's recursive helpers on a deep chain."""

    def setup(db: str, recursion: str = "0", **key: str) -> Callable[[], Any]:
        from benchmarks import baselines

        function = getattr(baselines, helper)
        (value,) = key.values()

        def run() -> Any:
            conn = _connect(db)
            try:
                with baselines.deep_recursion(int(recursion)):
                    return function(conn, value)
            finally:
                conn.close()

        return run

    return setup


for _name, _helper in (
    ("seed.path", "get_path_to_root"),
    ("seed.descendants", "get_all_descendants"),
    ("seed.leaves", "get_leaf_nodes"),
    ("view.path", "view_path"),
    ("view.descendants", "view_descendants"),
    ("view.leaves", "view_leaves"),
):
    TASKS[_name] = _baseline(_helper)


# -- the pyperf script ----------------------------------------------------------------


def main() -> None:
    """Time one task with pyperf: the options are pyperf's (and
    ``--figures PATH``, where a worker appends its figures as a JSON line),
    then the task's name and its parameters as KEY=VALUE."""
    import pyperf  # type: ignore[import-untyped]

    load()

    def pass_task(command: list[str], args: Any) -> None:
        # Each worker is this script again: it needs the task too.
        figures = [f"--figures={args.figures}"] if args.figures else []
        command.extend([*figures, args.task, *args.params])

    runner = pyperf.Runner(
        program_args=("-m", "benchmarks.tasks"), add_cmdline_args=pass_task
    )
    runner.argparser.add_argument("--figures", help="append figures here")
    runner.argparser.add_argument("task", choices=sorted(TASKS))
    runner.argparser.add_argument("params", nargs="*", metavar="KEY=VALUE")
    args = runner.parse_args()
    params = dict(param.split("=", 1) for param in args.params)
    # Only a worker sets the task up: imported into the manager, pandas would
    # raise the peak memory of every worker it starts.
    operation = TASKS[args.task](**params) if args.worker else None
    if args.task in TIMERS:
        runner.bench_time_func(args.task, operation)
    else:
        runner.bench_func(args.task, operation)
    if args.worker and args.figures and FIGURES:
        with open(args.figures, "a", encoding="utf-8") as out:
            out.write(json.dumps(FIGURES) + "\n")


if __name__ == "__main__":
    # As the module the groups import, where their tasks are registered.
    from benchmarks import tasks

    tasks.main()
