"""The documentation's pages (docs/**/*.md) show what convgraph does, so
their examples run as written, as the README's do (tests/test_readme.py
holds the machinery): every ```python block (a doctest where it shows
output), and every `$ convgraph ...` of a ```console block with the output
it shows. Every page is in the site's table of contents, every link between
pages lands on a page (and a heading there), and the guide covers each
source and each task the README sends a reader to.

Sphinx builds the site with warnings as errors in `.ci/run` (`python -m
sphinx -W -n -b html docs docs/_build/html`), which checks the same links
again and the references the Python and command-line reference pages are
generated from.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.test_readme import (  # the fixtures too: examples run beside a clone
    ROOT,
    Block,
    beside_a_clone,  # noqa: F401
    broken_links,
    page_blocks,
    python_params,
    run_console_block,
    run_python_block,
    workspace,  # noqa: F401
)

DOCS = ROOT / "docs"

#: The pages of the site, in path order (the build's output left out).
PAGES = sorted(
    path for path in DOCS.rglob("*.md") if "_build" not in path.relative_to(DOCS).parts
)

TOCTREE = re.compile(r"^```\{toctree\}\n(.*?)^```$", re.S | re.M)


def blocks(kind: str) -> list[Block]:
    return [block for page in PAGES for block in page_blocks(page, kind)]


# `workspace` is test_readme's fixture, imported above (hence F811).
@pytest.mark.parametrize("block", python_params(blocks("python")))
def test_python_example_runs_as_written(block: Block, workspace: Path) -> None:  # noqa: F811
    run_python_block(block)


@pytest.mark.parametrize(
    "block", blocks("console"), ids=lambda block: f"{block.page.stem}:{block.line}"
)
def test_console_example_prints_what_it_shows(block: Block, workspace: Path) -> None:  # noqa: F811
    run_console_block(block, workspace)


def test_the_examples_are_found() -> None:
    """The pages hold examples of every kind, and the Python API's page
    runs as doctests."""
    python = blocks("python")
    assert len(python) >= 10
    assert len(blocks("console")) >= 10
    api = [block for block in python if block.page == DOCS / "guide" / "python.md"]
    assert api and all(block.is_doctest for block in api)


def toctree_entries() -> set[Path]:
    """The pages the index's tables of contents list."""
    text = (DOCS / "index.md").read_text(encoding="utf-8")
    entries = set()
    for body in TOCTREE.findall(text):
        for line in body.splitlines():
            if line and not line.startswith(":"):
                entries.add(DOCS / f"{line.strip()}.md")
    return entries


def test_every_page_is_in_the_contents() -> None:
    assert toctree_entries() == set(PAGES) - {DOCS / "index.md"}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(DOCS)))
def test_links_land(page: Path) -> None:
    assert broken_links(page) == []


def test_the_guide_has_a_page_per_source_and_task() -> None:
    guide = {path.stem for path in (DOCS / "guide").glob("*.md")}
    sources = {"llm", "chat-exports", "agents"}
    tasks = {
        "explore",
        "search",
        "measure",
        "export",
        "write",
        "import",
        "jupyter",
        "datasette",
    }
    assert sources | tasks <= guide


def test_the_cli_reference_is_generated_from_the_commands() -> None:
    """The command-line reference is the click group itself (sphinx-click),
    so a command added to `convgraph.cli` is documented with no edit."""
    text = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    assert ".. click:: convgraph.cli:cli" in text
    assert ":nested: full" in text
