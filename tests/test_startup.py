"""The command line starts without the heavy libraries.

Library modules whose job is tables import pandas, numpy and networkx at
their top; the command line imports them inside the commands that need them,
so listing the commands, a command's help and the one-tree paths start fast.
Each case runs in a fresh interpreter and reads `sys.modules` after it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

#: What no start-up may import: the table, graph, Arrow and terminal-UI
#: libraries.
HEAVY = ("pandas", "numpy", "networkx", "pyarrow", "textual")


def imported_after(code: str) -> list[str]:
    """The heavy libraries in `sys.modules` after `code` ran in a new
    interpreter (a command's `SystemExit` is caught)."""
    script = (
        "import sys\n"
        "try:\n"
        + "".join(f"    {line}\n" for line in code.splitlines())
        + "except SystemExit as stop:\n"
        "    assert stop.code in (0, None), stop.code\n"
        f"print(sorted(set({HEAVY!r}) & set(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return ast.literal_eval(done.stderr.strip().splitlines()[-1])


def test_importing_the_command_line_imports_no_heavy_library() -> None:
    assert imported_after("import convgraph.cli") == []


@pytest.mark.parametrize(
    "words",
    [["--help"], ["export", "--help"], ["stats", "--help"], ["browse", "--help"]],
)
def test_help_imports_no_heavy_library(words: list[str]) -> None:
    assert imported_after(f"from convgraph.cli import cli\ncli({words!r})") == []


def test_the_export_formats_are_listed_without_an_exporter() -> None:
    code = (
        "from convgraph.export import FORMATS\n"
        "assert 'graphml' in FORMATS and FORMATS['parquet'].tables\n"
        "assert not [m for m in sys.modules if m.startswith('convgraph.export.')]\n"
    )
    assert imported_after(code) == []


def test_a_path_reads_the_links_alone(seed_db: Path) -> None:
    # `load_path` walks the stored links: no graph, no table.
    code = f"from convgraph.cli import cli\ncli(['path', 'complex-g', '--db', {str(seed_db)!r}])"
    assert imported_after(code) == []


def test_one_tree_is_a_graph_without_tables(seed_db: Path) -> None:
    code = f"from convgraph.cli import cli\ncli(['tree', 'complex', '--db', {str(seed_db)!r}])"
    assert imported_after(code) == ["networkx"]


def test_the_packages_flat_names_are_spelled_out_in_all() -> None:
    import convgraph
    from convgraph import errors

    offered = {name for name in dir(errors) if name in convgraph.__all__}
    assert set(convgraph.__all__) == offered | set(convgraph._LAZY)
    assert convgraph.open.__module__ == "convgraph.logs"


def test_the_flat_names_of_exporters_are_the_formats_functions() -> None:
    import convgraph.export as export

    assert set(export.__all__) == {"FORMATS", "ExportError", "ExportFormat"} | set(
        export._LAZY
    )
    assert export.FORMATS["dot"].write is export.write_dot
    assert export.FORMATS["graphml"].read is export.read_graphml
    assert export.FORMATS["parquet"].generate is None
    assert export.FORMATS["dot"].read is None
