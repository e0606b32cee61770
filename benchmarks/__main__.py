"""`python -m benchmarks [GROUP ...]`: run convgraph's benchmark suite (see
`suite.py`), the `reads` group unless told.

python -m benchmarks                          # reads: 1,000 to 1,000,000, three shapes
python -m benchmarks --quick                  # up to 100,000
python -m benchmarks export store --quick     # two other groups, small
python -m benchmarks all --json out.json      # every group at its own sizes
python -m benchmarks dask --sizes 1000000,10000000
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.suite import DATA_DIR, GROUPS, Options, main
from benchmarks.synthetic import SHAPES


def _sizes(text: str) -> list[int]:
    try:
        sizes = sorted({int(part.replace("_", "")) for part in text.split(",") if part})
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of sizes: {text!r}") from None
    if not sizes or sizes[0] < 1:
        raise argparse.ArgumentTypeError("sizes are positive numbers")
    return sizes


def _shapes(text: str) -> list[str]:
    shapes = [part for part in text.split(",") if part]
    if not shapes or any(shape not in SHAPES for shape in shapes):
        raise argparse.ArgumentTypeError(f"shapes are {', '.join(SHAPES)}")
    return shapes


def parse(argv: list[str] | None = None) -> Options:
    """The suite's options from the command line."""
    units = "; ".join(f"{name}: {group.unit}" for name, group in GROUPS.items())
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="convgraph beside its baselines, in groups of rows.",
    )
    add = parser.add_argument
    add("groups", nargs="*", help=f"{', '.join(GROUPS)} or all (reads unless told)")
    add("--quick", action="store_true", help="each group's small sizes")
    add("--sizes", type=_sizes, help=f"in each group's unit ({units})")
    add("--shapes", type=_shapes, default=list(SHAPES), help="reads: linear,bushy,deep")
    add("--json", type=Path, dest="json_path", help="also write the results here")
    add("--no-store", action="store_true", help="reads: skip the message store")
    add("--no-cli", action="store_true", help="reads: skip the whole-command timings")
    add("--no-core", action="store_true", help="reads: skip the largest size's extras")
    add("--row-readers", action="store_true", help="reads: stats without Arrow too")
    add("--processes", type=int, default=2, help="pyperf worker processes (2)")
    add("--values", type=int, default=2, help="timed calls per process (2)")
    add("--timeout", type=int, default=300, help="seconds a process may take (300)")
    add("--baseline-timeout", type=int, default=60, help="the same, baselines (60)")
    add("--data-dir", type=Path, default=DATA_DIR, help="where data is cached")
    args = parser.parse_args(argv)
    if unknown := set(args.groups) - {*GROUPS, "all"}:
        parser.error(
            f"no group {', '.join(sorted(unknown))}: choose {', '.join(GROUPS)}"
        )
    groups = list(GROUPS) if "all" in args.groups else args.groups or ["reads"]
    return Options(
        groups=list(dict.fromkeys(groups)),
        sizes=args.sizes,
        quick=args.quick,
        shapes=args.shapes,
        store=not args.no_store,
        cli=not args.no_cli,
        core=not args.no_core,
        processes=args.processes,
        values=args.values,
        timeout=args.timeout,
        baseline_timeout=args.baseline_timeout,
        data_dir=args.data_dir,
        json_path=args.json_path,
        row_readers=args.row_readers,
    )


if __name__ == "__main__":
    main(parse())
