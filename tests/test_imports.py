"""No import cycle among convgraph's modules, lazy imports included, and no
import from a higher layer into a lower one.

Every module's imports are read with `ast`, those inside functions too (an
import that runs only when a function is called still ties the two modules
together), and only the ones under `if TYPE_CHECKING:` left out (they never
run). The modules and their imports make a directed graph that must be
acyclic. Importing a submodule also runs its package's `__init__`; that edge
is left out, since a package's `__init__` importing its own submodules is
how packages are made.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

import convgraph

PACKAGE = Path(convgraph.__file__).parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement that can run, wherever it stands."""
    found = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def imported_modules(name: str, path: Path) -> set[str]:
    """The convgraph modules that module `name` imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for statement in runtime_imports(ast.parse(path.read_text("utf-8"))):
        if isinstance(statement, ast.Import):
            targets.update(alias.name for alias in statement.names)
            continue
        base = statement.module or ""
        if statement.level:
            anchor = package.split(".")
            anchor = anchor[: len(anchor) - statement.level + 1]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in statement.names:
            # `from package import submodule` imports the submodule.
            submodule = f"{base}.{alias.name}"
            targets.add(submodule if submodule in MODULES else base)
    return {target for target in targets if target in MODULES and target != name}


#: Upward imports known and allowed (see `LAYERS` below), each with its
#: reason. None: the display registers itself with IPython by the classes'
#: names (`convgraph.jupyter`), so the model imports no display code, even
#: inside a function.
UPWARD_ALLOWED: set[tuple[str, str]] = set()

#: Cycles known and left alone, as the edges that close them: add one only
#: with the reason it cannot be broken.
KNOWN_CYCLE_EDGES: set[tuple[str, str]] = set()


def import_graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(MODULES)
    for name, path in MODULES.items():
        graph.add_edges_from((name, target) for target in imported_modules(name, path))
    return graph


def test_the_import_graph_is_read_as_python_runs_it() -> None:
    graph = import_graph()
    # Module level, inside a function, and `from package import submodule`.
    assert graph.has_edge("convgraph.model.forest", "convgraph.links.pointer_jumping")
    assert graph.has_edge("convgraph.model.loading", "convgraph.model.tree")
    assert graph.has_edge("convgraph.jupyter", "convgraph.jupyter.tree_view")
    # The package's registration of the display, under `if` at module level.
    assert graph.has_edge("convgraph", "convgraph.jupyter")
    assert graph.has_edge("convgraph.cli.read", "convgraph.model.tree")
    # Imports for type checkers only are not edges.
    assert not graph.has_edge("convgraph.jupyter.tree_view", "convgraph.model.forest")


def test_no_import_cycle_among_convgraph_modules() -> None:
    graph = import_graph()
    graph.remove_edges_from(KNOWN_CYCLE_EDGES)
    cycles = sorted(sorted(cycle) for cycle in nx.simple_cycles(graph))
    assert cycles == []
    assert nx.is_directed_acyclic_graph(graph)


#: The layers, lowest first: a module imports only from its own layer or
#: lower ones, so the package reads in the order data flows through it.
LAYERS = [
    [
        "convgraph.contract",
        "convgraph.encoding",
        "convgraph.errors",
        "convgraph.parts",
        "convgraph.text",
        "convgraph.times",
        "convgraph.writing",
    ],
    ["convgraph.links"],
    ["convgraph.sources"],
    ["convgraph.model"],
    ["convgraph.analysis", "convgraph.present"],
    ["convgraph.export", "convgraph.search", "convgraph.meaning"],
    ["convgraph.store", "convgraph.logs", "convgraph.redaction"],
    [
        "convgraph.cli",
        "convgraph.browse",
        "convgraph.jupyter",
        "convgraph.datasette",
        "convgraph.llm_plugin",
        "convgraph.__main__",
    ],
]


def layer_of(module: str) -> int | None:
    for rank, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    return None


def test_every_module_has_a_layer() -> None:
    unplaced = [m for m in MODULES if m != "convgraph" and layer_of(m) is None]
    assert unplaced == []


def test_no_module_imports_from_a_higher_layer() -> None:
    graph = import_graph()
    upward = sorted(
        (source, target)
        for source, target in graph.edges
        if source != "convgraph"  # the flat names, on first use
        and (source, target) not in UPWARD_ALLOWED
        and layer_of(target) > layer_of(source)
    )
    assert upward == []
    # The allowed ones are real (a stale entry would hide a new one).
    assert set(graph.edges) >= UPWARD_ALLOWED
