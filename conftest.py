"""What pytest needs to know at the repository's root: the doctests that
need an optional extra skip where that extra is missing.

`--doctest-modules` (in pyproject's addopts) imports every module of
`convgraph/` to find its examples. A module that imports an optional
dependency at its top (Textual for the browser, llm for the plugin that runs
inside llm) cannot be imported where that dependency is not installed, and
pytest would count that as an error of the suite. Here such a module is
tried first: if it is missing one of `OPTIONAL`, its doctests are one
skipped item that names the extra to install; any other import error is
left for pytest to report. A module that imports, but whose examples import
a missing extra (`import dask.dataframe as dd`), has those examples skipped
the same way.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

#: The optional dependencies a module of convgraph may import at its top,
#: with what installs each.
OPTIONAL = {
    "textual": "pip install 'convgraph[browse]'",
    "pyarrow": "pip install 'convgraph[parquet]'",
    "adbc_driver_manager": "pip install 'convgraph[fast]'",
    "adbc_driver_sqlite": "pip install 'convgraph[fast]'",
    "dask": "pip install 'convgraph[dask]'",
    "distributed": "pip install 'convgraph[dask]'",
    "pyspark": "pip install 'convgraph[spark]'",
    "llm": "pip install llm (the plugin runs inside llm)",
    "datasette": "pip install 'convgraph[datasette]'",
}

PACKAGE = Path(__file__).resolve().parent / "convgraph"


class MissingExtra(pytest.File):
    """A module of convgraph that cannot be imported here: its doctests are
    one item, skipped with `reason`."""

    reason = ""

    def collect(self):
        pytest.skip(self.reason)


def missing_dependency(path: Path) -> str | None:
    """The optional dependency that keeps the module at `path` (a file of
    the convgraph package) from being imported, or None: it imports, or it
    fails for another reason, which pytest reports when it imports it."""
    parts = path.resolve().relative_to(PACKAGE.parent).with_suffix("").parts
    name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as error:
        top = (error.name or "").partition(".")[0]
        return top if top in OPTIONAL else None
    except Exception:  # pytest's own import reports it
        return None
    return None


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    collectors = yield
    if (
        collectors
        and file_path.suffix == ".py"
        and file_path.resolve().is_relative_to(PACKAGE)
    ):
        missing = missing_dependency(file_path)
        if missing is not None:
            item = MissingExtra.from_parent(parent, path=file_path)
            where = file_path.resolve().relative_to(PACKAGE.parent)
            item.reason = f"{where} imports {missing}: {OPTIONAL[missing]}"
            return [item]
    return collectors


def imported_modules(source: str) -> set[str]:
    """The top-level names of the modules that Python source imports."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a doctest line that is not a whole statement
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.partition(".")[0])
    return names


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip a doctest whose examples import an optional dependency that is
    not installed."""
    test = getattr(item, "dtest", None)  # the examples of a doctest item
    if test is None:
        return
    for example in test.examples:
        for name in sorted(imported_modules(example.source) & OPTIONAL.keys()):
            if importlib.util.find_spec(name) is None:
                pytest.skip(
                    f"{item.name}: its examples import {name}: {OPTIONAL[name]}"
                )
