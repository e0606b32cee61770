"""`python -m benchmarks`: run convgraph's benchmark suite (see `suite.py`).

python -m benchmarks                 # 1,000 to 1,000,000, three shapes
python -m benchmarks --quick         # up to 100,000
python -m benchmarks --sizes 1000,1000000 --shapes linear --json out.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.suite import DATA_DIR, QUICK_SIZES, SIZES, Options, main
from benchmarks.synthetic import SHAPES


def _sizes(text: str) -> list[int]:
    try:
        sizes = sorted({int(part.replace("_", "")) for part in text.split(",") if part})
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of sizes: {text!r}") from None
    if not sizes or sizes[0] < 10:
        raise argparse.ArgumentTypeError("sizes are numbers of responses, at least 10")
    return sizes


def _shapes(text: str) -> list[str]:
    shapes = [part for part in text.split(",") if part]
    if not shapes or any(shape not in SHAPES for shape in shapes):
        raise argparse.ArgumentTypeError(f"shapes are {', '.join(SHAPES)}")
    return shapes


def parse(argv: list[str] | None = None) -> Options:
    """The suite's options from the command line."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="convgraph beside its baselines on synthetic llm databases.",
    )
    add = parser.add_argument
    add("--quick", action="store_true", help="sizes up to 100,000")
    add("--sizes", type=_sizes, help="numbers of responses, e.g. 1000,100000")
    add("--shapes", type=_shapes, default=list(SHAPES), help="linear,bushy,deep")
    add("--json", type=Path, dest="json_path", help="also write the results here")
    add("--no-store", action="store_true", help="skip the message store")
    add("--no-cli", action="store_true", help="skip the whole-command timings")
    add("--no-core", action="store_true", help="skip the largest size's extra rows")
    add("--no-others", action="store_true", help="skip bench_export, _html, _diff")
    add("--processes", type=int, default=2, help="pyperf worker processes (2)")
    add("--values", type=int, default=2, help="timed calls per process (2)")
    add("--timeout", type=int, default=300, help="seconds a process may take (300)")
    add("--baseline-timeout", type=int, default=60, help="the same, baselines (60)")
    add("--data-dir", type=Path, default=DATA_DIR, help="where databases are cached")
    add("--row-readers", action="store_true", help="also time stats without Arrow")
    args = parser.parse_args(argv)
    return Options(
        sizes=args.sizes or (QUICK_SIZES if args.quick else SIZES),
        shapes=args.shapes,
        store=not args.no_store,
        cli=not args.no_cli,
        core=not args.no_core,
        others=not args.no_others,
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
