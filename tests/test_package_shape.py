"""The package's shape, as issue 43 set it: no module over 600 lines, the
whole at most 36,000 lines, docstrings and comments at most a fifth of them,
and nothing above the sources that reads a file itself (no `sqlite3`, no
family module of the sources)."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "convgraph"
MODULES = sorted(PACKAGE.rglob("*.py"))

#: Where reading a user's file is allowed: the sources and the write side.
FILE_LAYERS = ("sources", "store")
#: convgraph's own files in SQLite, never a user's: the vectors kept by meaning.
OWN_FILES = {"meaning/store.py": {"sqlite3"}}
FAMILIES = (
    "convgraph.sources.llm",
    "convgraph.sources.chat",
    "convgraph.sources.agents",
)


def words_lines(source: str) -> set[int]:
    """The lines of `source` that are docstrings or comments."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(
            node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
        ):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(
                    range(first.lineno, (first.end_lineno or first.lineno) + 1)
                )
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            lines.add(token.start[0])
    return lines


def test_words_lines_counts_docstrings_and_comments() -> None:
    source = '"""One.\n\nTwo."""\n\n\ndef f():\n    # why\n    return 1  # and\n'
    assert words_lines(source) == {1, 2, 3, 7, 8}


def test_no_module_over_600_lines() -> None:
    long = {
        str(path.relative_to(PACKAGE)): count
        for path in MODULES
        if (count := path.read_text().count("\n")) > 600
    }
    assert long == {}


def test_the_package_is_at_most_36000_lines_a_fifth_of_them_words() -> None:
    total = words = 0
    for path in MODULES:
        source = path.read_text()
        total += source.count("\n")
        words += len(words_lines(source))
    assert total <= 36_000
    assert words / total <= 0.20


def imported_names(path: Path) -> set[str]:
    """Every module `path` imports, by its full name."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_only_the_sources_and_the_store_read_a_file() -> None:
    above = [
        path
        for path in MODULES
        if path.relative_to(PACKAGE).parts[0] not in FILE_LAYERS
    ]
    readers = {
        str(path.relative_to(PACKAGE)): sorted(
            name
            for name in imported_names(path)
            if name == "sqlite3"
            or name.startswith(FAMILIES)
            or (name.startswith("convgraph.sources.") and "._" in name)
        )
        for path in above
    }
    left = {
        path: set(names) - OWN_FILES.get(path, set()) for path, names in readers.items()
    }
    assert {path: names for path, names in left.items() if names} == {}
