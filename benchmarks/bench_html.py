"""The HTML export's benchmark: writing the page, and using it.

Writing: `write_html` of every tree of a synthetic legacy database
(`benchmarks.synthetic`, bushy conversations of 100 responses) of 1,000,
10,000 and 100,000 responses, beside `write_json` of the same trees (the
node-link JSON that the page embeds, so the difference is the page's own
cost: statistics, escaping, template). Trees are built once, before timing.

Using: in Debian's Chromium through Playwright (skipped, and said so, where
either is missing), a page of one 5,000-node conversation in each shape, and
one of 50,000 nodes in 50 conversations: the time from navigation until the
page is drawn, how many nodes it draws at first, and the time to expand every
node, select one, search, and switch to a drawing left to right, each
measured inside the page up to the second animation frame after the action
(so layout and paint are counted).

Run with ``python -m benchmarks.bench_html [--repeat N]``; each writing figure
is the best of N runs in this process.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.synthetic import build_legacy
from convgraph.export.html import write_html
from convgraph.export.json import write_json
from convgraph.model.forest import Forest

WRITE_SIZES = (1_000, 10_000, 100_000)
PER_CONVERSATION = 100
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# Runs in the page: do one action, then wait two animation frames.
TIMED = """async (action) => {
  const frames = () => new Promise(done =>
      requestAnimationFrame(() => requestAnimationFrame(done)));
  const start = performance.now();
  if (action.click) document.querySelector(action.click).click();
  if (action.select) convgraph.select(action.select);
  if (action.search) {
    const box = document.getElementById("search");
    box.value = action.search;
    box.dispatchEvent(new KeyboardEvent("keydown", {key: "Enter", bubbles: true}));
  }
  await frames();
  return {ms: performance.now() - start, drawn: convgraph.drawnNodes()};
}"""


def best(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def timed_write(
    writer: Callable[..., None], trees: list, repeat: int
) -> tuple[float, int]:
    """Best seconds of `writer(trees, file)` to memory, and the bytes written."""
    written = 0

    def run() -> None:
        nonlocal written
        buffer = io.StringIO()
        writer(trees, buffer)
        written = len(buffer.getvalue().encode("utf-8"))

    return best(run, repeat), written


def bench_writing(directory: Path, repeat: int) -> None:
    print(f"writing: seconds (best of {repeat}) and size, all trees of the database")
    print(
        f"{'responses':>10} {'write_json':>11} {'write_html':>11} {'ratio':>6} "
        f"{'json MB':>8} {'html MB':>8}"
    )
    for size in WRITE_SIZES:
        db = build_legacy(
            directory / f"write-{size}.db", size, size // PER_CONVERSATION, "bushy"
        )
        trees = list(Forest.read(db).trees())
        json_seconds, json_bytes = timed_write(write_json, trees, repeat)
        html_seconds, html_bytes = timed_write(write_html, trees, repeat)
        sizes = {"json": json_bytes, "html": html_bytes}
        print(
            f"{size:>10,} {json_seconds:>10.3f}s {html_seconds:>10.3f}s "
            f"{html_seconds / json_seconds:>5.2f}x {sizes['json'] / 1e6:>8.2f} "
            f"{sizes['html'] / 1e6:>8.2f}"
        )


def bench_browser(directory: Path) -> None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("browser: skipped (Playwright for Python is not installed)")
        return
    executable = shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(executable, os.X_OK):
        print("browser: skipped (Chromium is not installed)")
        return
    pages = []
    for label, size, conversations, shape in [
        ("5,000 bushy, 1 conversation", 5_000, 1, "bushy"),
        ("5,000 deep, 1 conversation", 5_000, 1, "deep"),
        ("50,000 bushy, 50 conversations", 50_000, 50, "bushy"),
    ]:
        db = build_legacy(
            directory / f"page-{size}-{shape}.db", size, conversations, shape
        )
        forest = Forest.read(db)
        out = directory / f"page-{size}-{shape}.html"
        write_html(forest.trees(), out)
        first = forest.tree(forest.tree_ids[0])
        deepest = list(first)[-1]
        pages.append((label, out, deepest, os.path.getsize(out)))

    print("\nbrowser: milliseconds in Chromium, to the second frame after each action")
    print(
        f"{'page':<32} {'MB':>5} {'open':>7} {'drawn':>6} {'expand all':>11} "
        f"{'drawn':>6} {'select':>7} {'search':>7} {'left-right':>11}"
    )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, args=CHROMIUM_ARGS
        )
        for label, out, deepest, size in pages:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(out.resolve().as_uri())
            page.wait_for_selector("html[data-ready='true']")
            opened = page.evaluate(
                "() => performance.getEntriesByType('navigation')[0].loadEventEnd"
            )
            drawn = page.evaluate("() => convgraph.drawnNodes()")
            expand = page.evaluate(TIMED, {"click": "#expand-all"})
            select = page.evaluate(TIMED, {"select": deepest})
            search = page.evaluate(TIMED, {"search": "prompt"})
            turn = page.evaluate(TIMED, {"click": "#orientation"})
            print(
                f"{label:<32} {size / 1e6:>5.1f} {opened:>7.0f} {drawn:>6} "
                f"{expand['ms']:>11.0f} {expand['drawn']:>6} {select['ms']:>7.0f} "
                f"{search['ms']:>7.0f} {turn['ms']:>11.0f}"
            )
            page.close()
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-html-") as name:
        directory = Path(name)
        bench_writing(directory, options.repeat)
        bench_browser(directory)


if __name__ == "__main__":
    main()
