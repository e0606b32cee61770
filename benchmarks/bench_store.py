"""The write-side benchmark: migration, the rules' cost, deletion.

On legacy databases of N responses in conversations of 20, with llm's search
index (`responses_fts` and its triggers) as llm 0.31 made them:

- `migrate`, `migrate --link-linear`, and a second run (which only reads);
  beside, the bare `ALTER TABLE` and the same linking UPDATE with llm's FTS
  update trigger left in place (what --link-linear avoids: re-indexing every
  prompt and response for a change to neither);
- the rules' price: 2,000 raw inserts of children, with convgraph's triggers
  and without them (the column alone); and one insert under a 100,000-deep
  chain, where the cycle check walks every ancestor;
- `delete --cascade` of a 10,001-node subtree, `delete --reparent` of a node
  with 5,000 children.

Each figure is the best of `--repeat` runs, each on a fresh copy of the file.
Run with ``python -m benchmarks.bench_store [--sizes 10000,100000,1000000]``.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from convgraph.store import delete_node, migrate

SCHEMA = (
    Path(__file__).resolve().parent.parent / "tests" / "data" / "llm-0.31-schema.sql"
)
CONVERSATION_LENGTH = 20


def build(path: Path, size: int) -> None:
    """A legacy logs.db of `size` responses, as llm 0.31 would have it."""
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA.read_text())
    conversations = max(1, size // CONVERSATION_LENGTH)
    conn.executemany(
        "insert into conversations (id, name, model) values (?, ?, 'echo')",
        ((f"c{i:07d}", f"conversation {i}") for i in range(conversations)),
    )
    conn.executemany(
        "insert into responses (id, conversation_id, prompt, response, model,"
        " datetime_utc, options_json) values (?, ?, ?, ?, 'echo', ?, '{}')",
        (
            (
                f"r{i:08d}",
                f"c{i // CONVERSATION_LENGTH:07d}",
                f"question {i} about trees and forests",
                f"answer {i} " * 20,
                f"2025-01-01T00:00:{i % 60:02d}.{i:08d}",
            )
            for i in range(size)
        ),
    )
    conn.commit()
    conn.close()


def best(
    repeat: int, setup: Callable[[], Path], action: Callable[[Path], object]
) -> float:
    """The best time of `action` over `repeat` fresh files from `setup`."""
    times = []
    for _ in range(repeat):
        path = setup()
        started = time.perf_counter()
        action(path)
        times.append(time.perf_counter() - started)
        path.unlink()
    return min(times)


def bare_alter(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("alter table responses add column parent_response_id text")
    conn.commit()
    conn.close()


def link_with_fts_trigger(path: Path) -> None:
    """The linking UPDATE as a naive migration would run it: llm's FTS
    trigger re-indexes every updated row."""
    conn = sqlite3.connect(path)
    conn.execute("alter table responses add column parent_response_id text")
    conn.execute(
        """
        with linear as (
          select id, lag(id) over (partition by conversation_id
                                   order by datetime_utc, id) as previous
          from responses
        )
        update responses set parent_response_id = linear.previous
        from linear where linear.id = responses.id and linear.previous is not null
        """
    )
    conn.commit()
    conn.close()


def inserts(path: Path, count: int = 2000) -> None:
    """`count` children of the last response of one conversation, raw."""
    conn = sqlite3.connect(path)
    parent = conn.execute(
        "select id from responses where conversation_id = 'c0000000'"
        " order by datetime_utc desc, id desc limit 1"
    ).fetchone()[0]
    conn.executemany(
        "insert into responses (id, conversation_id, parent_response_id, prompt)"
        " values (?, 'c0000000', ?, 'p')",
        ((f"new{i:06d}", parent) for i in range(count)),
    )
    conn.commit()
    conn.close()


def insert_at_the_tip(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute(
        "insert into responses (id, conversation_id, parent_response_id)"
        " values ('tip', 'deep', 'n0099999')"
    )
    conn.commit()
    conn.close()


def chain_database(path: Path, depth: int) -> None:
    """One conversation that is a single chain `depth` responses deep."""
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA.read_text())
    conn.execute(
        "insert into conversations (id, name, model) values ('deep', 'd', 'echo')"
    )
    conn.executemany(
        "insert into responses (id, conversation_id, prompt, datetime_utc)"
        " values (?, 'deep', 'p', ?)",
        ((f"n{i:07d}", f"2025-01-01T{i:012d}") for i in range(depth)),
    )
    conn.commit()
    conn.close()
    migrate(path, link_linear=True)


def star_database(path: Path, children: int) -> None:
    """A root with `children` children, each with one child of its own."""
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA.read_text())
    conn.close()
    migrate(path)
    conn = sqlite3.connect(path)
    conn.execute(
        "insert into conversations (id, name, model) values ('star', 's', 'e')"
    )
    rows = [("root", None, "2025-01-01T0")]
    for i in range(children):
        rows.append((f"k{i:06d}", "root", f"2025-01-01T1{i:06d}"))
        rows.append((f"g{i:06d}", f"k{i:06d}", f"2025-01-01T2{i:06d}"))
    conn.executemany(
        "insert into responses (id, conversation_id, parent_response_id, prompt,"
        " datetime_utc, options_json) values (?, 'star', ?, 'p', ?, '{}')",
        rows,
    )
    conn.commit()
    conn.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_store")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args(argv)
    sizes = [int(size.replace("_", "")) for size in options.sizes.split(",")]
    repeat = options.repeat
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)

        def copy_of(source: Path) -> Callable[[], Path]:
            def setup() -> Path:
                target = work / "copy.db"
                shutil.copyfile(source, target)
                return target

            return setup

        print(
            f"convgraph write side, python {sys.version.split()[0]},"
            f" sqlite {sqlite3.sqlite_version}, best of {repeat}"
        )
        print()
        header = (
            f"{'responses':>10} {'MB':>6} {'ALTER':>8} {'migrate':>8}"
            f" {'+linear':>8} {'naive':>8} {'again':>8}"
            f" {'insert+rules':>13} {'insert bare':>12}"
        )
        print(header)
        for size in sizes:
            source = work / f"legacy-{size}.db"
            build(source, size)
            megabytes = source.stat().st_size / 1e6
            alter = best(repeat, copy_of(source), bare_alter)
            plain = best(repeat, copy_of(source), migrate)
            linear = best(
                repeat, copy_of(source), lambda p: migrate(p, link_linear=True)
            )
            naive = best(repeat, copy_of(source), link_with_fts_trigger)
            migrated = work / f"migrated-{size}.db"
            shutil.copyfile(source, migrated)
            migrate(migrated, link_linear=True)
            again = best(repeat, copy_of(migrated), migrate)
            with_rules = best(repeat, copy_of(migrated), inserts)
            bare = work / f"bare-{size}.db"
            shutil.copyfile(source, bare)
            bare_alter(bare)
            without_rules = best(repeat, copy_of(bare), inserts)
            print(
                f"{size:>10,} {megabytes:>6.0f} {alter:>7.3f}s {plain:>7.3f}s"
                f" {linear:>7.3f}s {naive:>7.3f}s {again:>7.3f}s"
                f" {with_rules / 2000 * 1e6:>10.1f} us {without_rules / 2000 * 1e6:>9.1f} us"
            )
            for path in (source, migrated, bare):
                path.unlink()
        print()
        print("ALTER: bare ALTER TABLE ADD COLUMN; migrate: column, index, 5 triggers;")
        print(
            "+linear: migrate --link-linear; naive: ALTER + the same UPDATE with llm's"
        )
        print("FTS trigger in place; again: a second migrate (reads only); insert: per")
        print(
            "raw INSERT of a child, with convgraph's rules and with the column alone."
        )
        print()

        deep = work / "deep.db"
        chain_database(deep, 100_000)
        single = best(repeat, copy_of(deep), insert_at_the_tip)
        print(
            f"one insert under a 100,000-deep chain (cycle check): {single * 1000:.1f} ms"
        )

        star = work / "star.db"
        star_database(star, 5_000)
        cascade = best(
            repeat, copy_of(star), lambda p: delete_node("root", p, mode="cascade")
        )
        reparent = best(
            repeat, copy_of(star), lambda p: delete_node("root", p, mode="reparent")
        )
        print(f"delete --cascade of a 10,001-node subtree: {cascade:.3f} s")
        print(f"delete --reparent of a node with 5,000 children: {reparent:.3f} s")


if __name__ == "__main__":
    main()
