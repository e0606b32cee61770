"""The groups of what convgraph writes out: `export` (each format beside
networkx's writer for it), `html` (writing the page, and using it in
Chromium) and `diff` (branch diffs and comparisons of long answers beside
difflib).

Each group's planner (``*_rows``) lists the suite's rows; the tasks they name
are registered here and import what they measure only when set up. The
forests are synthetic legacy databases (`benchmarks.synthetic`) in
conversations of `PER_CONVERSATION`, read once in the setup; the texts of the
diffs are synthetic prose, words drawn from a 5,000-word vocabulary with
Zipf's frequencies (a few words common, as in English) in 80-character
lines, a retry being a copy with a share of its words replaced, dropped or
added, and a one-line case the same text with its line breaks made spaces
(leaving only sentences for `similarity` to align before it matches words).
"""

from __future__ import annotations

import atexit
import difflib
import functools
import itertools
import os
import random
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import suite, tasks
from benchmarks.report import Measurement, Row

PER_CONVERSATION = 100
#: Each format, and networkx's writers for it (it has none for Mermaid).
EXPORT_BASELINES = {
    "dot": ["to_pydot"],
    "graphml": ["write_graphml", "write_graphml_xml"],
    "json": ["node_link_data"],
    "tree-json": ["tree_data"],
    "mermaid": [],
}


def _trees(db: str) -> list:
    """Every conversation of `db` as a DiGraph, every attribute filled (as
    networkx's GraphML writer needs), the same graphs for both sides."""
    trees = list(tasks.read_forest(db).trees())
    for tree in trees:
        for attributes in [tree.graph, *(data for _, data in tree.nodes(data=True))]:
            attributes.update((k, "") for k, v in list(attributes.items()) if v is None)
    return trees


def _to_file(write: Callable[[str], object]) -> Callable[[], None]:
    """`write(path)` to a temporary file each call, reporting its size and
    the calls' own memory (`benchmarks.tasks.above_setup`)."""
    directory = tempfile.mkdtemp(prefix="convgraph-bench-")
    atexit.register(shutil.rmtree, directory, True)
    path = os.path.join(directory, "written")

    def run() -> None:
        write(path)
        tasks.figure("file MB", os.path.getsize(path) / 2**20)

    return tasks.above_setup(run)


@tasks.task("export.convgraph")
def _export_convgraph(db: str, format: str) -> Callable[[], None]:
    """Every tree of `db` written in `format` by `convgraph export`'s writer."""
    from convgraph.export import FORMATS

    trees, write = _trees(db), FORMATS[format].write
    return _to_file(lambda path: write(trees, path))


def _networkx(writer: str, db: str) -> Callable[[], None]:
    """The same trees written by networkx's `writer` (their union, for the
    writers that take one graph)."""
    import json

    import networkx as nx
    from networkx.drawing import nx_pydot

    trees = _trees(db)
    union = nx.union_all(trees)

    def text(make: Callable[[], str]) -> Callable[[str], object]:
        return lambda path: Path(path).write_text(make(), encoding="utf-8")

    def tree_data() -> str:
        def root(tree: Any) -> Any:
            return next(node for node, degree in tree.in_degree() if degree == 0)

        return "\n".join(json.dumps(nx.tree_data(t, root(t))) for t in trees)

    writers: dict[str, Callable[[str], Any]] = {
        "to_pydot": text(lambda: nx_pydot.to_pydot(union).to_string()),
        "write_graphml": lambda path: nx.write_graphml(union, path),  # lxml's
        "write_graphml_xml": lambda path: nx.write_graphml_xml(union, path),
        "node_link_data": text(
            lambda: json.dumps(nx.node_link_data(union, edges="edges"))
        ),
        "tree_data": text(tree_data),
    }
    return _to_file(writers[writer])


for _writer in itertools.chain(*EXPORT_BASELINES.values()):
    tasks.task(f"networkx.{_writer}")(functools.partial(_networkx, _writer))


@tasks.task("export.redact")
def _export_redacted(db: str, redact: str) -> Callable[[], None]:
    """The whole forest read through `Logs` and written as `export --format
    json` writes it; `redact=1` replaces secrets on the way (issue 48)."""
    from convgraph import Logs
    from convgraph.export import FORMATS

    if redact == "1":
        Logs(db, redact=True).close()  # detect-secrets imported untimed

    def write(path: str) -> None:
        with Logs(db, redact=redact == "1") as logs:
            FORMATS["json"].write(logs.forest(), path)

    return _to_file(write)


def export_rows(sizes: list[int], options: suite.Options) -> list[Row]:
    """The `export` group: each format, at each number of nodes."""
    found = []
    for size in sizes:
        db = suite.database(
            "legacy", "linear", size, options.data_dir, PER_CONVERSATION
        )
        for name, writers in EXPORT_BASELINES.items():
            ours = suite.task("export.convgraph", db=db, format=name)
            for writer in writers:
                theirs = suite.task(f"networkx.{writer}", db=db)
                if writer == "to_pydot":
                    theirs = suite.once(theirs)  # minutes at 100,000 nodes
                found.append(Row("export", name, size, f"write {name}", ours, theirs))
            if not writers:
                found.append(Row("export", name, size, f"write {name}", ours))
        plain, redacted = (
            suite.task("export.redact", db=db, redact=flag) for flag in "01"
        )
        operation = "read and write json --redact (without: the baseline)"
        found.append(Row("export", "json", size, operation, redacted, plain))
    found[0].notes.append(
        "MB: the peak of the calls, the trees in memory included; 'MB above"
        " setup': the writing's own"
    )
    return found


# -- html --------------------------------------------------------------------------

#: The pages used in Chromium: shape, responses, conversations. The last is
#: the 2,000-conversation page the explorer's search reads whole (issue 26).
PAGES = [
    ("bushy", 5_000, 1),
    ("deep", 5_000, 1),
    ("bushy", 50_000, 50),
    ("bushy", 50_000, 2_000),
]
#: What the search finds: the first search (which lower-cases every text of
#: the page once) and, as figures, a second one of other words over the same
#: texts and the hits it listed.
SEARCHES = ("prompt", "tree where")
#: What is done to a page, in order; each measured inside the page up to the
#: second animation frame after it, so that layout and paint are counted.
ACTIONS = ("expand all", "select", "search", "left-right")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
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
  return {ms: performance.now() - start, drawn: convgraph.drawnNodes(),
          hits: document.querySelectorAll("#hit-list button.hit").length,
          matches: parseInt(document.getElementById("search-status").textContent) || 0};
}"""


def _html_write(writer: str, db: str) -> Callable[[], None]:
    """Every tree of `db` as the HTML page (``convgraph.write_html``) or as
    the node-link JSON the page embeds (``convgraph.write_json``), into
    memory."""
    import io

    from convgraph.export import write_html, write_json

    trees = list(tasks.read_forest(db).trees())
    write = write_html if writer == "html" else write_json

    def run() -> None:
        buffer = io.StringIO()
        write(trees, buffer)
        tasks.figure("MB written", len(buffer.getvalue().encode("utf-8")) / 1e6)

    return tasks.above_setup(run)


for _writer in ("html", "json"):
    tasks.task(f"convgraph.write_{_writer}")(functools.partial(_html_write, _writer))


@tasks.task("html.browser", timer=True)
def _html_browser(page: str, action: str, node: str) -> Callable[[int], float]:
    """Milliseconds in Chromium (through Playwright), a fresh tab each call:
    ``open`` from navigation to the load event, else one of `ACTIONS` after
    the ones before it (untimed); figure ``drawn``, the nodes drawn then.
    ``search`` is the first search of the page, of `SEARCHES`' first words;
    its figures ``again ms`` (a second search, of the second words, the
    page's texts already lower-cased), ``matches`` (the nodes it found) and
    ``hits listed`` (the first of them the list shows)."""
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    atexit.register(playwright.stop)
    executable = shutil.which("chromium") or "/usr/bin/chromium"
    browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
    steps = [{"click": "#expand-all"}, {"select": node}, {"search": SEARCHES[0]}]
    steps.append({"click": "#orientation"})

    def time_it(loops: int) -> float:
        total = 0.0
        for _ in range(loops):
            tab = browser.new_page(viewport={"width": 1400, "height": 900})
            tab.goto(Path(page).resolve().as_uri())
            tab.wait_for_selector("html[data-ready='true']")
            done = {
                "ms": tab.evaluate(
                    "() => performance.getEntriesByType('navigation')[0].loadEventEnd"
                ),
                "drawn": tab.evaluate("() => convgraph.drawnNodes()"),
            }
            for name, step in zip(ACTIONS, steps, strict=True):
                if action == "open":
                    break
                done = tab.evaluate(TIMED, step)
                if name == action:
                    break
            if action == "search":
                again = tab.evaluate(TIMED, {"search": SEARCHES[1]})
                tasks.figure("again ms", again["ms"])
                tasks.figure("matches", again["matches"])
                tasks.figure("hits listed", again["hits"])
            tasks.figure("drawn", done["drawn"])
            tasks.figure("page MB", os.path.getsize(page) / 1e6)
            tab.close()
            total += done["ms"] / 1000
        return total

    return time_it


def _browser_missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed"
    if not os.access(shutil.which("chromium") or "/usr/bin/chromium", os.X_OK):
        return "Chromium is not installed"
    return None


def _page_version() -> str:
    """A digest of the page's template, script and style: a cached page is
    named by it, so a page built before they changed is built again."""
    import hashlib

    from convgraph.export import html

    digest = hashlib.sha256()
    for name in ("page.html", "view.js", "view.css"):
        digest.update(html._asset(name).encode("utf-8"))
    return digest.hexdigest()[:12]


def _page(path: Path, db: Path) -> None:
    from convgraph.export import write_html

    write_html(tasks.read_forest(db).trees(), path)


def html_rows(sizes: list[int], options: suite.Options) -> list[Row]:
    """The `html` group: writing every tree at each size, then `PAGES` in
    Chromium (the same pages whatever the sizes)."""
    found = []
    for size in sizes:
        db = suite.database("legacy", "bushy", size, options.data_dir, PER_CONVERSATION)
        ours = suite.task("convgraph.write_html", db=db)
        theirs = suite.task("convgraph.write_json", db=db)
        found.append(Row("html", "bushy", size, "write every tree", ours, theirs))
    found[0].notes.append("baseline: the node-link JSON that the page embeds")
    missing = _browser_missing()
    version = _page_version()
    for shape, size, conversations in PAGES:
        per = size // conversations
        db = suite.database("legacy", shape, size, options.data_dir, per)
        page = suite.cached(
            db.with_suffix(f".{version}.html"), functools.partial(_page, db=db)
        )
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        # The first conversation's last response: its deepest node.
        node = conn.execute("select id from responses where rowid = ?", [per])
        node = node.fetchone()[0]
        conn.close()
        for action in ("open", *ACTIONS):
            spec = suite.task("html.browser", page=page, action=action, node=node)
            label = f"{conversations} {shape}"  # conversations in the page
            found.append(Row("html page", label, size, action, spec))
            if missing:
                found[-1].measured = Measurement(spec.name, "skipped", note=missing)
    found[len(sizes)].notes.append("MB: the Python side's, not Chromium's")
    return found


# -- diff --------------------------------------------------------------------------

LETTERS = "abcdefghijklmnopqrstuvwxyz"
_RNG = random.Random(7)
WORDS = ["".join(_RNG.choices(LETTERS, k=_RNG.randint(1, 10))) for _ in range(5000)]
#: Zipf's frequencies, cumulated once (a draw is then a bisection).
CUMULATED = list(itertools.accumulate(1 / rank for rank in range(1, 5001)))
DIFF_CASES = [
    "retry, 5% of words changed",
    "unrelated answers",
    "identical answers",
    "one line each, retry",
    "one line each, unrelated",
]
COMPARE_CASES = [
    "10 siblings: 5 retries of one answer + 5 unrelated",
    "10 unrelated siblings",
    "10 retries, one line each",
]


def prose(seed: int, size: int, width: int = 80) -> str:
    """`size` characters of synthetic prose in lines of about `width`."""
    rng = random.Random(seed)
    lines: list[str] = []
    length = 0
    while length < size:
        line: list[str] = []
        while sum(map(len, line)) + len(line) < width:
            word = rng.choices(WORDS, cum_weights=CUMULATED)[0]
            line.append(word + ("." if rng.random() < 0.06 else ""))
        lines.append(" ".join(line))
        if rng.random() < 0.1:
            lines.append("")
        length += len(lines[-1]) + 1
    return "\n".join(lines)[:size]


def retry(text: str, seed: int, rate: float) -> str:
    """A copy of `text` with `rate` of its words replaced, dropped or followed
    by a new word (a third each)."""
    rng = random.Random(seed)
    lines = []
    for line in text.split("\n"):
        words: list[str] = []
        for word in line.split(" "):
            draw = rng.random()
            if draw < rate / 3:
                continue
            words.append(rng.choice(WORDS) if draw < 2 * rate / 3 else word)
            if 2 * rate / 3 <= draw < rate:
                words.append(rng.choice(WORDS))
        lines.append(" ".join(words))
    return "\n".join(lines)


def answers(kind: str, case: int, size: int) -> list[str]:
    """The answers of a case of `DIFF_CASES` (two) or `COMPARE_CASES` (ten),
    each of `size` characters."""
    base, other = prose(1, size), prose(3, size)

    def flat(texts: list[str]) -> list[str]:
        return [text.replace("\n", " ") for text in texts]

    if kind == "diff":
        near = retry(base, 2, 0.05)
        pairs = [[base, near], [base, other], [base, base]]
        return (pairs + [flat(pairs[0]), flat(pairs[1])])[case]
    rates = enumerate([0.02, 0.05, 0.1, 0.2], 10)
    retries = [base, *(retry(base, seed, rate) for seed, rate in rates)]
    if case == 0:
        return retries + [prose(seed, size) for seed in range(20, 25)]
    if case == 1:
        return [prose(seed, size) for seed in range(30, 40)]
    return flat(retries + retries[::-1])


def _alternatives(texts: list[str]) -> Any:
    """A tree of one question and one child per answer, as convgraph builds
    a tree it reads."""
    from convgraph import ConversationTree

    ids = ["question", *(f"answer-{n}" for n in range(1, len(texts) + 1))]
    same = {"conversation_id": "bench", "model": "echo", "duration_ms": 1000}
    same |= {"prompt": "Write at length about trees.", "input_tokens": 10}
    records = [
        {**same, "id": node, "response": text, "output_tokens": len(text) // 4}
        for node, text in zip(ids, ["", *texts], strict=True)
    ]
    parents = {node: None if node == "question" else "question" for node in ids}
    return ConversationTree.from_records(records, parents, tree_id="bench")


@tasks.task("convgraph.diff")
def _convgraph_diff(case: str, size: str) -> Callable[[], Any]:
    """`convgraph.diff` of two sibling answers; figure: their similarity."""
    from convgraph import diff

    tree = _alternatives(answers("diff", int(case), int(size)))
    found = diff(tree, "answer-1", "answer-2")
    tasks.figure("similarity", found.steps[0].response_similarity)
    return lambda: diff(tree, "answer-1", "answer-2")


@tasks.task("difflib.unified_diff")
def _unified_diff(case: str, size: str) -> Callable[[], list]:
    """A bare unified diff of the same two answers."""
    first, second = (
        text.splitlines() for text in answers("diff", int(case), int(size))
    )
    return lambda: list(difflib.unified_diff(first, second, lineterm=""))


@tasks.task("convgraph.compare")
def _convgraph_compare(case: str, size: str) -> Callable[[], Any]:
    """`convgraph.compare` of ten siblings (45 similarities)."""
    from convgraph import compare

    tree = _alternatives(answers("compare", int(case), int(size)))
    return lambda: compare(tree, "question")


@tasks.task("difflib.line_ratios")
def _line_ratios(case: str, size: str) -> Callable[[], list]:
    """The bare line-level `SequenceMatcher.ratio` of the same 45 pairs."""
    lines = [text.splitlines() for text in answers("compare", int(case), int(size))]
    pairs = list(itertools.combinations(lines, 2))
    return lambda: [difflib.SequenceMatcher(None, a, b).ratio() for a, b in pairs]


def diff_rows(sizes: list[int], options: suite.Options) -> list[Row]:
    """The `diff` group: every case at each size of an answer."""
    found = []
    for size in sizes:
        for kind, cases, baseline in (
            ("diff", DIFF_CASES, "difflib.unified_diff"),
            ("compare", COMPARE_CASES, "difflib.line_ratios"),
        ):
            for case, operation in enumerate(cases):
                ours = suite.task(f"convgraph.{kind}", case=case, size=size)
                theirs = suite.task(baseline, case=case, size=size)
                found.append(Row("diff", kind, size, operation, ours, theirs))
    return found
