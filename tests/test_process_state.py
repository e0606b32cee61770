"""The library leaves the process alone: no allocator, malloc or garbage
collector setting outside the command line's start-up (issue 35).

Two checks: no module outside `convgraph/cli` names a call that changes
process-wide state, and reading, measuring and exporting the example in
this process leaves the collector, its thresholds and Arrow's memory pool
as they were."""

from __future__ import annotations

import ast
import gc
from pathlib import Path

import pytest

from tests.helpers import ROOT

PACKAGE = ROOT / "convgraph"

#: Calls that change the whole process, by the name they are called as.
PROCESS_WIDE = {
    "gc.disable",
    "gc.enable",
    "gc.freeze",
    "gc.set_threshold",
    "set_memory_pool",
    "mallopt",
    "malloc_trim",
    "CDLL",
    "jemalloc_set_decay_ms",
}


def called_names(path: Path) -> set[str]:
    """Every call in a module, as the dotted name it is called by."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            function = node.func
            parts = []
            while isinstance(function, ast.Attribute):
                parts.append(function.attr)
                function = function.value
            if isinstance(function, ast.Name):
                parts.append(function.id)
            names.add(".".join(reversed(parts)))
    return names


def test_no_library_module_changes_the_process():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.is_relative_to(PACKAGE / "cli"):
            continue
        calls = {
            name
            for name in called_names(path)
            if name in PROCESS_WIDE or name.rpartition(".")[2] in PROCESS_WIDE
        }
        if calls:
            found[str(path.relative_to(ROOT))] = sorted(calls)
    assert found == {}


def test_the_check_sees_such_a_call(tmp_path: Path):
    module = tmp_path / "m.py"
    module.write_text(
        "import gc\ndef f():\n    gc.disable()\n    pa.set_memory_pool(p)\n"
    )
    assert {"gc.disable", "pa.set_memory_pool"} <= called_names(module)


def test_reading_and_measuring_leave_the_process_as_it_was():
    pa = pytest.importorskip("pyarrow")
    from convgraph.analysis.stats import conversation_table
    from convgraph.export import generate_json
    from tests.helpers import read_forest

    pool = pa.default_memory_pool().backend_name
    thresholds = gc.get_threshold()
    for text in (True, False):
        forest = read_forest(ROOT / "examples" / "logs.db", text=text)
        conversation_table(forest)
        "".join(generate_json(forest.trees()))
    assert gc.isenabled()
    assert gc.get_threshold() == thresholds
    assert pa.default_memory_pool().backend_name == pool
