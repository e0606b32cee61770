"""Run analysis.ipynb from top to bottom and save it with its outputs.

The notebook is committed with its outputs so that it reads as a report
without running it; after changing it, or convgraph, refresh them with
``python notebooks/execute.py`` (from anywhere). The test suite runs the same
notebook with nbclient but never writes it back.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
NOTEBOOK = HERE / "analysis.ipynb"


def execute(source: Path = NOTEBOOK, timeout: int = 300) -> nbformat.NotebookNode:
    """The notebook at `source`, executed in its own folder (so relative
    paths such as ../examples/logs.db resolve); the file is not changed."""
    notebook = nbformat.read(source, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(source.parent)}},
    )
    client.execute()
    return notebook


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else NOTEBOOK
    nbformat.write(execute(target), target)
    print(f"executed and saved {target}")
