"""The analysis notebook runs from top to bottom on the example database.

nbclient executes every cell in a real kernel and raises on the first cell
error. The committed notebook is read, never written: the executed copy goes
to a temporary folder.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.helpers import file_digest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "analysis.ipynb"


def outputs_of(cell: nbformat.NotebookNode) -> dict[str, str]:
    """Everything a cell showed, by MIME type (streams as text/plain)."""
    shown: dict[str, str] = {}
    for output in cell.get("outputs", []):
        if output["output_type"] == "stream":
            shown["text/plain"] = shown.get("text/plain", "") + output["text"]
        for mime, data in output.get("data", {}).items():
            shown[mime] = shown.get(mime, "") + data
    return shown


def code_cells(notebook: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def test_the_committed_notebook_holds_its_outputs() -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    cells = code_cells(notebook)
    assert all(cell.get("outputs") for cell in cells)
    assert not any(
        output["output_type"] == "error" for cell in cells for output in cell["outputs"]
    )
    kinds = {mime for cell in cells for mime in outputs_of(cell)}
    assert {"text/html", "image/png", "image/svg+xml"} <= kinds


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> nbformat.NotebookNode:
    # A copy in a temporary tree shaped like the repository, so the notebook's
    # relative path to ../examples/logs.db resolves and nothing committed is
    # touched.
    before = file_digest(NOTEBOOK), file_digest(ROOT / "examples" / "logs.db")
    root = tmp_path_factory.mktemp("repository")
    (root / "notebooks").mkdir()
    (root / "examples").mkdir()
    copy = root / "notebooks" / "analysis.ipynb"
    shutil.copyfile(NOTEBOOK, copy)
    shutil.copyfile(ROOT / "examples" / "logs.db", root / "examples" / "logs.db")
    notebook = nbformat.read(copy, as_version=4)
    for cell in code_cells(notebook):
        cell.outputs = []
    NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(copy.parent)}},
    ).execute()
    nbformat.write(notebook, copy)
    assert (file_digest(NOTEBOOK), file_digest(ROOT / "examples" / "logs.db")) == before
    return notebook


@pytest.mark.slow
def test_every_cell_runs(executed: nbformat.NotebookNode) -> None:
    cells = code_cells(executed)
    assert all(cell.execution_count is not None for cell in cells)
    assert not any(
        output["output_type"] == "error" for cell in cells for output in cell["outputs"]
    )


def test_the_notebook_shows_the_statistics_table(
    executed: nbformat.NotebookNode,
) -> None:
    first = outputs_of(code_cells(executed)[0])
    assert first["text/plain"] == "<Forest: 23 nodes in 4 conversations, 0 problems>"
    assert first["text/html"].startswith('<div class="convgraph-forest">')
    for name in (
        "Starting a sourdough starter",
        "Autumn haiku",
        "How hash maps work",
        "Good morning, translated",
    ):
        assert f"<td>{name}</td>" in first["text/html"]


def test_the_notebook_plots_and_draws(executed: nbformat.NotebookNode) -> None:
    by_source = {cell.source: outputs_of(cell) for cell in code_cells(executed)}
    histograms = next(
        shown for source, shown in by_source.items() if "plt.subplots" in source
    )
    assert "image/png" in histograms
    drawn = next(
        shown
        for source, shown in by_source.items()
        if source.rstrip().endswith("\nhash_maps")
    )
    if shutil.which("dot"):
        assert "<svg" in drawn["image/svg+xml"]
        assert "text/html" not in drawn
    else:
        assert "01jb2hm00root000000000000" in drawn["text/html"]


def test_the_notebook_compares_two_branches(executed: nbformat.NotebookNode) -> None:
    shown = [outputs_of(cell) for cell in code_cells(executed)]
    texts = "\n".join(output.get("text/plain", "") for output in shown)
    assert "fork point: 01jb1hk00root000000000000" in texts
    assert "-Leaves fall on my car" in texts
    assert "+Pumpkin spice returns" in texts


def test_the_notebook_finds_by_meaning(executed: nbformat.NotebookNode) -> None:
    found = outputs_of(code_cells(executed)[-1])["text/plain"].splitlines()
    rows = [line.split() for line in found if line[:1].isdigit()]
    # The hash map's own question and answer, then the abandoned tree answer.
    assert [row[2:5] for row in rows[:3]] == [
        ["01jb2hashmap0000000000000", "01jb2hm00root000000000000", "prompt"],
        ["01jb2hashmap0000000000000", "01jb2hm00root000000000000", "response"],
        ["01jb2hashmap0000000000000", "01jb2hm05f000000000000000", "response"],
    ]
