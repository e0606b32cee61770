"""README.md shows what convgraph does, so its examples run as written: every
```python block, and every `$ convgraph ...` of a ```console block with the
output it shows. The README stays short (at most `README_LINES` lines), its
Quickstart is the two commands CI runs, and every link in it lands on a file
of the repository (and a heading there). References to the design
(`docs/design.md#...`) anywhere land on a heading of docs/design.md, and
nothing points at a document the repository does not hold.

The machinery here runs any Markdown page's examples; tests/test_docs.py runs
the documentation's pages with it. Each example runs in a temporary
directory holding what the README's own commands would have made beside a
clone: `examples/` (its `logs.db` and ChatGPT export), `logs.db` (a copy,
standing for the reader's own file) and `forest/` (the Parquet dataset of
`convgraph export --format parquet -o forest/`, where pyarrow is
installed). llm's user directory and the cache directory (where the search
index goes) are there too, so no example touches the reader's own logs,
keys or cache. A ```python block with `>>>` prompts is a doctest (its shown
output checked); any other block runs as a script. A block that needs a
package of an optional extra (dask, pyspark, llm-echo's offline model) is
skipped where it is missing.
"""

from __future__ import annotations

import ast
import doctest
import io
import json
import re
import shlex
import shutil
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import pytest

from tests.helpers import run

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DESIGN = ROOT / "docs" / "design.md"

#: The README is read in two minutes: the rest is in docs/.
README_LINES = 150

FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.S | re.M)
HEADING = re.compile(r"^#+ (.+)$", re.M)
#: A Markdown link or image: its target, without a title.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")

#: What a block needs beyond the packages it imports: the Parquet dataset is
#: written with pyarrow, and a fan-out is asked of llm-echo's offline model.
NEEDED_FOR = {"forest/": "pyarrow", "fan_out(": "llm_echo"}

#: Packages whose examples start something heavy (a Spark session, about
#: half a minute): those examples are `slow`.
HEAVY = {"pyspark"}

#: The paths of the reader's own machine that outputs show (llm's user
#: directory, the cache directory), by the folder of the workspace that
#: stands for each.
SHOWN_PATHS = {"readme": "/tmp/readme", "cache": "~/.cache"}

#: Doctest's comparison: a page may wrap a long value over several lines,
#: and "..." stands for text it leaves out.
CHECKS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@dataclass(frozen=True)
class Block:
    """One fenced code block of a Markdown page."""

    page: Path
    kind: str  # "python", "console", "bash", ...
    line: int  # the line of its first code line
    heading: str  # the section it is in
    text: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line} ({self.heading})"

    @property
    def is_doctest(self) -> bool:
        return any(line.startswith(">>>") for line in self.text.splitlines())

    def code(self) -> str:
        """The Python the block runs (a doctest's examples, joined)."""
        if not self.is_doctest:
            return self.text
        examples = doctest.DocTestParser().get_examples(self.text)
        return "".join(example.source for example in examples)

    def needs(self) -> list[str]:
        """The packages outside convgraph the block needs, in name order."""
        modules = set()
        for node in ast.walk(ast.parse(self.code())):
            if isinstance(node, ast.Import):
                modules.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                modules.add(node.module.split(".")[0])
        modules.update(
            module for word, module in NEEDED_FOR.items() if word in self.text
        )
        modules.discard("convgraph")
        return sorted(modules)


def page_blocks(page: Path, kind: str) -> list[Block]:
    """A page's blocks of one kind, in order."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        if match.group(1) != kind:
            continue
        before = text[: match.start()]
        headings = HEADING.findall(FENCE.sub("", before))
        found.append(
            Block(
                page,
                kind,
                before.count("\n") + 2,
                headings[-1] if headings else "top",
                match.group(2),
            )
        )
    return found


def readme_blocks(kind: str) -> list[Block]:
    """The README's blocks of one kind, in order."""
    return page_blocks(README, kind)


def skip_unless_installed(block: Block) -> None:
    missing = [module for module in block.needs() if find_spec(module) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")


@pytest.fixture(scope="module")
def beside_a_clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory as the README's commands leave it, built once."""
    directory = tmp_path_factory.mktemp("clone")
    shutil.copytree(ROOT / "examples", directory / "examples")
    shutil.copy(ROOT / "examples" / "logs.db", directory / "logs.db")
    if find_spec("pyarrow") is not None:
        run("export", "--format", "parquet", "-o", directory / "forest", "-d",
            directory / "examples" / "logs.db")  # fmt: skip
    return directory


@pytest.fixture
def workspace(
    beside_a_clone: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A fresh copy to run one example in (examples write files), with
    llm's user directory and the cache directory inside it."""
    directory = tmp_path / "work"
    shutil.copytree(beside_a_clone, directory)
    monkeypatch.chdir(directory)
    monkeypatch.setenv("LLM_USER_PATH", str(directory / "readme"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(directory / "cache"))
    return directory


# -- running a page's examples ---------------------------------------------------


def python_params(blocks: list[Block]) -> list:
    """Test parameters for python blocks, heavy ones marked slow."""
    return [
        pytest.param(
            block,
            id=f"{block.page.stem}:{block.line}",
            marks=[pytest.mark.slow] if HEAVY & set(block.needs()) else [],
        )
        for block in blocks
    ]


def run_python_block(block: Block) -> None:
    """Run a python block as written: a doctest where it shows output, else
    a script."""
    skip_unless_installed(block)
    scope: dict = {"__name__": "readme"}
    try:
        if block.is_doctest:
            test = doctest.DocTestParser().get_doctest(
                block.text, scope, block.name, str(block.page), block.line - 1
            )
            runner = doctest.DocTestRunner(optionflags=CHECKS)
            report = io.StringIO()
            runner.run(test, out=report.write, clear_globs=False)
            assert runner.failures == 0, report.getvalue()
        else:
            exec(compile(block.text, block.name, "exec"), scope)
    finally:
        # The Spark example leaves its session running, as a notebook would.
        session = scope.get("spark")
        if session is not None and hasattr(session, "stop"):
            session.stop()


def console_commands(block: Block) -> list[tuple[str, str]]:
    """Each `$ command` of a console block with the output shown under it
    (trailing blank lines left out)."""
    commands: list[tuple[str, list[str]]] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        elif commands:
            commands[-1][1].append(line)
    return [(command, "\n".join(shown).rstrip("\n")) for command, shown in commands]


def run_console_block(block: Block, workspace: Path) -> None:
    """Run every `$ convgraph ...` of a console block, in order, and compare
    what it prints (stdout and stderr, as a terminal shows them) with what
    the block shows under it."""
    checker = doctest.OutputChecker()
    ran = 0
    for command, shown in console_commands(block):
        words = shlex.split(command)
        if words[0] != "convgraph":
            # `llm -c` asks a real model: the page shows it, not its answer.
            continue
        result = run(*words[1:])
        printed = result.output
        for folder, shown_path in SHOWN_PATHS.items():
            printed = printed.replace(str(workspace / folder), shown_path)
        assert checker.check_output(shown + "\n", printed, CHECKS), (
            f"{block.name}: $ {command}\n--- the page shows ---\n{shown}\n"
            f"--- convgraph printed ---\n{printed}"
        )
        ran += 1
    assert ran, f"{block.name} runs no convgraph command"


def broken_links(page: Path) -> list[str]:
    """The links of a page that point at no file of the repository, or at
    no heading of the Markdown page they name (web addresses are not
    followed)."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, fragment = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(target)
        elif fragment and linked.suffix == ".md":
            headings = HEADING.findall(FENCE.sub("", linked.read_text("utf-8")))
            if fragment not in {anchor(heading) for heading in headings}:
                broken.append(target)
    return broken


# -- the README --------------------------------------------------------------------


def test_the_readme_is_read_in_two_minutes() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_LINES


@pytest.mark.parametrize("block", python_params(readme_blocks("python")))
def test_python_example_runs_as_written(block: Block, workspace: Path) -> None:
    run_python_block(block)


@pytest.mark.parametrize(
    "block", readme_blocks("console"), ids=lambda block: f"line{block.line}"
)
def test_console_example_prints_what_it_shows(block: Block, workspace: Path) -> None:
    run_console_block(block, workspace)


def test_the_readme_shows_the_everyday_commands() -> None:
    """The six commands a newcomer uses first, each with an example."""
    shown = "\n".join(
        block.text for kind in ("console", "bash") for block in readme_blocks(kind)
    )
    for command in (
        "convgraph tree",
        "convgraph browse",
        "convgraph search",
        "convgraph stats --by week --plot",
        "convgraph export --format html",
        "convgraph import",
        "convgraph transcript",
        "convgraph diff",
        "--format dot",
    ):
        assert command in shown, command


def test_the_quickstart_installs_and_draws_every_conversation(
    beside_a_clone: Path,
) -> None:
    """The two commands a newcomer types first: install everything and draw
    the examples; install the test extra and run the suite (`.ci/run` runs
    this second command)."""
    draw, test = (block.text for block in readme_blocks("bash")[:2])
    assert draw == "pip install -e '.[all]' && convgraph tree --db examples/logs.db\n"
    assert test == "pip install -e '.[test]' && python -m pytest\n"
    db = beside_a_clone / "examples" / "logs.db"
    conversations = json.loads(run("conversations", "--json", "--db", db).stdout)
    tree_ids = {conversation["tree_id"] for conversation in conversations}
    drawn = run("tree", "--db", db).stdout.splitlines()
    assert [line for line in drawn if line.split("  ")[0] in tree_ids] == [
        f"{conversation['tree_id']}  {conversation['name']}"
        for conversation in conversations
    ]
    assert len(conversations) == 4


def test_the_readme_links_land() -> None:
    assert broken_links(README) == []


# -- the design the code points at ----------------------------------------------


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading (and MyST, as docs/conf.py sets it):
    lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def repository_texts() -> list[Path]:
    """The files whose words a reader of the repository meets."""
    found = [README]
    for folder, pattern in [
        ("convgraph", "*.py"),
        ("tests", "*.py"),
        ("benchmarks", "*.py"),
        ("examples", "*.py"),
        ("docs", "*.md"),
        ("notes", "*.md"),
        ("notebooks", "*.ipynb"),
    ]:
        found.extend(
            path
            for path in sorted((ROOT / folder).rglob(pattern))
            if "_build" not in path.parts
        )
    return found


def test_links_into_the_design_land_on_a_heading() -> None:
    text = FENCE.sub("", DESIGN.read_text(encoding="utf-8"))
    anchors = {anchor(heading) for heading in HEADING.findall(text)}
    pointed = re.compile(r"design\.md#([\w-]+)")
    broken = [
        f"{path.relative_to(ROOT)}: #{name}"
        for path in repository_texts()
        for name in pointed.findall(path.read_text(encoding="utf-8"))
        if name not in anchors
    ]
    assert broken == []
    assert {"the-node-contract", "the-same-conversation-rule"} <= anchors


def test_nothing_points_outside_the_repository() -> None:
    """The design notes the project began from, and the design document kept
    beside the repository while it was built, are in docs/design.md now."""
    outside = re.compile(r"\.\./shared|DESIGN\.md|tree_notes\.md|seed's Option A")
    this_file = Path(__file__).resolve()
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in repository_texts()
        if path != this_file
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if outside.search(line)
    ]
    assert found == []
