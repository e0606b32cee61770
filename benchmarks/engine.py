"""The `engine` group (issue 28): whole commands as a user runs them, on every
shape of file, beside a bare fetch of the same rows in a fresh Python.

Rows, for each shape at 100,000 and 1,000,000 responses (turns): the whole
`convgraph stats --json` beside a bare fetch of the structure (legacy: `id,
conversation_id, parent_response_id`; message store: the structure columns
the `reads` group's store baseline fetches), and the whole `convgraph tree`
(every tree) and `convgraph export --format json` beside a bare fetch of the
columns with the texts they print (legacy: every column convgraph reads;
message store: the structure and every part's text). Every side is a whole
process started by pyperf (`python -m pyperf command`, output to /dev/null,
its peak RSS from the kernel), so start-up, imports and printing count, and
the baseline pays its interpreter's start-up too.

The shapes: the suite's legacy ``linear``, ``bushy`` and ``deep`` files;
``random``, a migrated legacy file with random branching
(`synthetic.build_random_legacy`: conversations of 1 to 20 responses, each
response's parent a random earlier one, the indexes and rules
`migrate --link-linear` leaves; 1,000,000 responses in some 95,000
conversations); ``imported``, the random file with its conversations'
times shuffled, as an imported history is stored (`datetime_utc` not in id
order: log order is a real sort); and ``forks``, the suite's linear message store, where about
one turn in eight is a retry logged in a thread forked from its parent.

Issue 28's targets (`report.TARGETS`, sections ``legacy`` and ``store``) are
judged at 1,000,000 (a `diagnosis` row beside each file's shows the bare
fetch of the columns the node contract makes `stats` read, against the
same baseline: the floor of any reader of that contract): `stats --json` at most 2.0x and 400 MB on legacy files,
1.5x and 800 MB on the message store, `tree` and `export` at most 3x; and
the growth from 100,000 to 1,000,000, at most 10x in time and in memory, per
command and shape. The multi-second commands need no more than one value a
process: run it as ``python -m benchmarks engine --values 1`` (2 processes x
1 value after a warm-up call); at 1,000,000 `tree` and `export` take one
call in one process (`suite.once`), up to a minute or two each. On this
2-core machine the whole group took 11 minutes under a load of 2 to 4 and 26
under a load of 5 to 6. ``--quick`` runs 100,000 only.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from benchmarks import suite, synthetic, tasks
from benchmarks.report import Row

#: The sizes at which `tree` and `export` are timed once (a call takes a
#: minute or more there).
ONCE_FROM = 1_000_000
#: The operations of every shape, as `report.TARGETS` names them.
STATS, TREE, EXPORT = (
    "convgraph stats --json",
    "convgraph tree",
    "convgraph export --format json",
)
#: Each command's arguments after `convgraph`.
ARGUMENTS = {
    STATS: ("stats", "--json"),
    TREE: ("tree",),
    EXPORT: ("export", "--format", "json"),
}

#: A bare fetch in a fresh Python: `python -c FETCH DB SQL...` runs each
#: query and keeps its rows as sqlite3 tuples, and does nothing more (one
#: line: pyperf keeps the command in its metadata, which takes no newline).
FETCH = (
    "import sys, sqlite3; "
    "conn = sqlite3.connect(f'file:{sys.argv[1]}?mode=ro', uri=True); "
    "fetched = [conn.execute(sql).fetchall() for sql in sys.argv[2:]]"
)
_STORE_STRUCTURE = (
    "select hash, parent_hash, role from messages",
    "select id, forked_from from threads",
)
#: The queries of each bare fetch: the rows a command needs.
FETCHES = {
    "fetch 3 columns": (
        "select id, conversation_id, parent_response_id from responses",
    ),
    "fetch with texts": (f"select {tasks.LEGACY_COLUMNS} from responses",),
    "fetch store structure": (
        "select id, thread_id, parent_message_hash, tip_message_hash from turns",
        *_STORE_STRUCTURE,
    ),
    # What the node contract makes `stats` read, without texts: the floor
    # of any reader of it (the `diagnosis` rows, beside the baselines).
    "fetch contract columns": (
        "select id, conversation_id, parent_response_id, model, datetime_utc,"
        " input_tokens, output_tokens, duration_ms from responses",
    ),
    "fetch store contract columns": (
        "select id, thread_id, parent_message_hash, tip_message_hash, model,"
        " datetime_utc, input_tokens, output_tokens, duration_ms from turns",
        *_STORE_STRUCTURE,
    ),
    "fetch store with texts": (
        "select id, thread_id, parent_message_hash, tip_message_hash, model,"
        " datetime_utc, input_tokens, output_tokens, duration_ms from turns",
        *_STORE_STRUCTURE,
        "select message_hash, position, type, text from parts",
    ),
}
#: The `diagnosis` row of each file: what the node contract makes `stats`
#: read, fetched bare, beside `stats`' own baseline.
FLOOR = "bare fetch of the contract's columns (stats' floor)"
FLOORS = {"legacy": "fetch contract columns", "store": "fetch store contract columns"}
#: Each kind's baseline for the structure and for the texts.
BASELINES = {
    "legacy": {
        STATS: "fetch 3 columns",
        TREE: "fetch with texts",
        EXPORT: "fetch with texts",
    },
    "store": {
        STATS: "fetch store structure",
        TREE: "fetch store with texts",
        EXPORT: "fetch store with texts",
    },
}


def random_legacy(size: int, data_dir: Path) -> Path:
    """The cached random-branching migrated legacy file of `size` responses."""
    name = f"legacy-random-{size}-v{suite.BUILD_VERSION}.db"
    return suite.cached(
        data_dir / name, lambda partial: synthetic.build_random_legacy(partial, size)
    )


def imported_legacy(size: int, data_dir: Path) -> Path:
    """The cached imported-history file of `size` responses: the random
    shape with its conversations' times shuffled (`datetime_utc` not in id
    order, `synthetic.build_imported_legacy`)."""
    name = f"legacy-imported-{size}-v{suite.BUILD_VERSION}.db"
    return suite.cached(
        data_dir / name, lambda partial: synthetic.build_imported_legacy(partial, size)
    )


def fetch(name: str, db: Path) -> suite.Task:
    """A bare fetch in a fresh Python, as a whole command."""
    return suite.command(name, sys.executable, "-c", FETCH, str(db), *FETCHES[name])


def command_rows(kind: str, shape: str, size: int, db: Path) -> list[Row]:
    """The three whole commands on one file, each beside its bare fetch."""
    convgraph = suite.convgraph_command()
    found = []
    for operation, argv in ARGUMENTS.items():
        ours = suite.command(operation, convgraph, *argv, "--db", str(db))
        if operation != STATS and size >= ONCE_FROM:
            ours = suite.once(ours)
        baseline = fetch(BASELINES[kind][operation], db)
        found.append(Row(kind, shape, size, operation, ours, baseline))
    # The floor of `stats`: the bare fetch of the columns the node contract
    # needs, beside the bare fetch the target is measured against.
    floor = fetch(FLOORS[kind], db)
    found.append(
        Row(
            "diagnosis",
            f"{kind} {shape}",
            size,
            FLOOR,
            floor,
            fetch(BASELINES[kind][STATS], db),
        )
    )
    return found


def engine_rows(sizes: list[int], options: suite.Options) -> list[Row]:
    """The `engine` group: for each size, the legacy shapes of the options
    (the suite's three), the random-branching migrated file, and the message
    store with forks (unless --no-store)."""
    found = []
    for size in sizes:
        for shape in options.shapes:
            db = suite.database("legacy", shape, size, options.data_dir)
            found += command_rows("legacy", shape, size, db)
        db = random_legacy(size, options.data_dir)
        found += command_rows("legacy", "random", size, db)
        db = imported_legacy(size, options.data_dir)
        found += command_rows("legacy", "imported", size, db)
        if options.store:
            db = suite.database("store", "linear", size, options.data_dir)
            found += command_rows("store", "forks", size, db)
    return found


#: The phases `phases` times: (module, function or Class.method). Nested ones
#: count inside their callers too.
PHASES = (
    ("convgraph.sources.llm.columnar", "read_forest"),
    ("convgraph.sources.llm.columnar.reader", "ArrowReader.table"),
    ("convgraph.sources.llm.columnar.message_store", "has_tool_calls"),
    ("convgraph.sources.llm.columnar.numbering", "numbered"),
    ("convgraph.sources.llm.turn_parents", "turn_parents_table"),
    ("convgraph.sources.llm.columnar.calls", "turn_calls"),
    ("convgraph.sources.source", "sort_log_order"),
    ("convgraph.sources.llm.pipeline", "run_on_table"),
    ("convgraph.model.forest", "Forest.__init__"),
    ("convgraph.analysis.stats", "conversation_table"),
    ("convgraph.times", "time_bounds"),
    ("convgraph.cli.tables", "print_conversations"),
)


def phases(argv: list[str]) -> None:
    """Run `convgraph ARGV` in this process and print, on stderr, each of
    `PHASES`' user and system CPU (every thread's), minor page faults and
    the peak RSS at its end: where a whole command's time goes, phase by
    phase, beside what `/usr/bin/time` gives for the whole."""
    import functools
    import importlib
    import resource

    spent: dict[str, list[float]] = {}

    def timed(name: str, function: Any) -> Any:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            before = resource.getrusage(resource.RUSAGE_SELF)
            try:
                return function(*args, **kwargs)
            finally:
                after = resource.getrusage(resource.RUSAGE_SELF)
                totals = spent.setdefault(name, [0.0, 0.0, 0.0, 0.0])
                totals[0] += after.ru_utime - before.ru_utime
                totals[1] += after.ru_stime - before.ru_stime
                totals[2] += after.ru_minflt - before.ru_minflt
                totals[3] = after.ru_maxrss / 1024

        return wrapper

    for module_name, path in PHASES:
        owner: Any = importlib.import_module(module_name)
        *outer, attribute = path.split(".")
        for part in outer:
            owner = getattr(owner, part)
        original = getattr(owner, attribute)
        wrapped = timed(path, original)
        setattr(owner, attribute, wrapped)
        # Modules that imported the function by name hold it too.
        for module in list(sys.modules.values()):
            if not outer and getattr(module, attribute, None) is original:
                setattr(module, attribute, wrapped)
    from convgraph.cli import cli

    cli(argv, prog_name="convgraph", standalone_mode=False)
    whole = resource.getrusage(resource.RUSAGE_SELF)
    print(
        f"whole: {whole.ru_utime:.2f} user + {whole.ru_stime:.2f} sys,"
        f" {whole.ru_minflt // 1000}k faults, peak {whole.ru_maxrss // 1024} MB",
        file=sys.stderr,
    )
    for name, (user, system, faults, peak) in spent.items():
        print(
            f"  {user + system:6.2f} s = {user:5.2f} user + {system:5.2f} sys"
            f"  {faults / 1000:6.0f}k faults  peak {peak:5.0f} MB  {name}",
            file=sys.stderr,
        )


if __name__ == "__main__":
    phases(sys.argv[1:])
