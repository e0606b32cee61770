"""`python -m benchmarks`: run convgraph's benchmark suite (see `suite.py`).

python -m benchmarks                 # 1,000 to 1,000,000, three shapes (~30 min)
python -m benchmarks --quick         # up to 100,000 (a few minutes)
python -m benchmarks --sizes 1000,1000000 --shapes linear --json out.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks import cache
from benchmarks.suite import QUICK_SIZES, SIZES, Options, main
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
    unknown = [shape for shape in shapes if shape not in SHAPES]
    if unknown or not shapes:
        raise argparse.ArgumentTypeError(f"shapes are {', '.join(SHAPES)}")
    return shapes


def parse(argv: list[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="convgraph beside its baselines on synthetic llm databases.",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="sizes up to 100,000 (the default: to 1,000,000)",
    )
    parser.add_argument(
        "--sizes",
        type=_sizes,
        help="comma-separated numbers of responses, e.g. 1000,100000",
    )
    parser.add_argument(
        "--shapes",
        type=_shapes,
        default=list(SHAPES),
        help="linear,bushy,deep (default: all)",
    )
    parser.add_argument(
        "--json", type=Path, dest="json_path", help="also write the results here"
    )
    parser.add_argument(
        "--no-store", action="store_true", help="skip the message store"
    )
    parser.add_argument(
        "--no-cli", action="store_true", help="skip the command-line timings"
    )
    parser.add_argument(
        "--no-core", action="store_true", help="skip the core benchmark"
    )
    parser.add_argument(
        "--no-others",
        action="store_true",
        help="skip bench_export, bench_stats, bench_diff",
    )
    parser.add_argument(
        "--repeat", type=int, default=5, help="runs per measurement, at most"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="seconds before a baseline is given up",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=cache.DATA_DIR,
        help="where built databases are cached",
    )
    args = parser.parse_args(argv)
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    return Options(
        sizes=sizes,
        shapes=args.shapes,
        store=not args.no_store,
        cli=not args.no_cli,
        core=not args.no_core,
        others=not args.no_others,
        repeat=args.repeat,
        baseline_timeout=args.timeout,
        data_dir=args.data_dir,
        json_path=args.json_path,
        quick=args.quick,
    )


if __name__ == "__main__":
    main(parse())
