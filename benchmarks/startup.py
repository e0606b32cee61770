"""The `startup` group: every read command on a small file, beside the time
to import what it must import (issue 28, target 3).

A person's first command is on a small file: the examples' `logs.db`
(286 KB), the examples' ChatGPT export (3 KB) and a Claude Code session
(tests/data). Each read command on each is timed whole, as a user runs it
(``python -m convgraph ...`` in a fresh process, pyperf's `command`),
beside ``python -c "import ..."`` of what its answer needs
(`MUST_IMPORT`: click for the command line, networkx where the answer is a
tree's graph, pandas where it is the whole forest's table, the export's
JSON parser or the agents' one), and `python -c pass` on its own row. The
target (`benchmarks.report.TARGETS`): a command at most 0.3 s over its
imports, so at most 0.3 s over `python -c pass` plus what it must import.
The files are copied under the data folder first: `search` writes its index
beside the file it reads.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from benchmarks import suite
from benchmarks.report import Row

#: The operation of every row but `python -c pass`: the target's.
OPERATION = "read command over its imports"
#: The small files: a name for the table, and the file in the repository.
FILES = {
    "llm logs.db": Path("examples/logs.db"),
    "ChatGPT export": Path("examples/chatgpt-export.zip"),
    "Claude Code session": Path("tests/data/agents/claude-code/sample_session.jsonl"),
}
#: What each kind of file needs to be parsed at all, beyond the standard
#: library (sqlite3 reads llm's database).
READERS = {
    "llm logs.db": (),
    "ChatGPT export": ("ijson",),
    "Claude Code session": ("orjson",),
}
#: What a command's answer needs: a tree's graph (networkx), the whole
#: forest's table (pandas, for `pairs` of every conversation), or only
#: SQLite (`search` on its index).
GRAPH = ("networkx",)
MUST_IMPORT = {
    "conversations": GRAPH,
    "stats": GRAPH,
    "tree": GRAPH,
    "path": GRAPH,
    "transcript": GRAPH,
    "export": GRAPH,
    "pairs": ("pandas", *GRAPH),
    "search": (),
    "diff": GRAPH,
}


def commands(tree_id: str, node: str, other: str) -> list[list[str]]:
    """Every read command of the issue, with ids of the file."""
    return [
        ["conversations", "--json"],
        ["tree", tree_id],
        ["stats", "--json"],
        ["path", node],
        ["transcript", node],
        *(["export", "--format", name, tree_id] for name in ("json", "dot")),
        *(["export", "--format", name, tree_id] for name in ("mermaid", "markdown")),
        ["pairs", "--nl"],
        ["search", "the"],
        ["diff", node, other],
    ]


def ids_of(path: Path) -> tuple[str, str, str]:
    """The file's first tree, and two leaves of it (its one leaf twice where
    it has one): the ids the commands are given."""
    from convgraph.model import tree as operations
    from convgraph.model.loading import read_tree
    from convgraph.sources import opened

    with opened(str(path)) as logs:
        tree_id = logs.tree_ids()[0]
        graph = read_tree(logs, tree_id)[0]
    leaves = sorted(operations.leaves(graph))
    return tree_id, leaves[0], leaves[-1]


def imports(modules: tuple[str, ...]) -> suite.Task:
    """``python -c "import click, ..."``: the start of a command that
    imports these and nothing else."""
    names = ", ".join(("click", *modules))
    return suite.command(f"import {names}", sys.executable, "-c", f"import {names}")


def startup_rows(sizes: list[int], options: suite.Options) -> list[Row]:
    """The `startup` group (see the module's docstring); the sizes are the
    files' own, so `sizes` is not used."""
    directory = options.data_dir / "startup"
    directory.mkdir(parents=True, exist_ok=True)
    found = [Row("startup", "", 0, "python -c pass", suite.BARE_PYTHON)]
    for label, source in FILES.items():
        path = directory / source.name
        shutil.copyfile(suite.ROOT / source, path)
        tree_id, node, other = ids_of(path)
        for words in commands(tree_id, node, other):
            needs = (*READERS[label], *MUST_IMPORT[words[0]])
            shown = " ".join(words[:3] if words[0] == "export" else words[:1])
            found.append(
                Row(
                    "startup",
                    f"{label}: {shown}",
                    path.stat().st_size,
                    OPERATION,
                    suite.command(
                        f"convgraph {shown}",
                        sys.executable,
                        "-m",
                        "convgraph",
                        *words,
                        "--db",
                        str(path),
                    ),
                    imports(needs),
                )
            )
    return found
