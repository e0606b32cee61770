"""What every exporter shares: taking one conversation or many, writing lines
to a path or an open file, and the characters no output format may carry.

The exporters take what `convgraph.model.forest` produces: one conversation DiGraph,
or any iterable of them (a forest, possibly a generator such as
`Forest.trees()`, consumed once). A format that writes one conversation
differently from several (DOT clusters, GraphML tree ids) looks ahead at most
one graph to know which case it is in, so a forest still streams. Nothing
here imports networkx: the command line imports this package to list the
formats, and stays fast.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import IO, TYPE_CHECKING, Any, cast

from convgraph.contract import NODE_ATTRIBUTES
from convgraph.errors import ExportError
from convgraph.text import control_picture
from convgraph.writing import written

if TYPE_CHECKING:
    import networkx as nx

    from convgraph.model.tree import ConversationTree


#: Graphviz's and Mermaid's directions (Mermaid writes TB as TB or TD).
RANKDIRS = ("TB", "LR", "BT", "RL")


def check_rankdir(rankdir: str) -> None:
    """Raise ExportError unless `rankdir` is one of `RANKDIRS`."""
    if rankdir not in RANKDIRS:
        raise ExportError(
            f"rankdir must be one of {', '.join(RANKDIRS)}, not {rankdir!r}"
        )


#: Where a file of several conversations records which one a node belongs to
#: (and its tree's name: `contract.TREE_NAME`, as a Parquet dataset's column).
TREE_ID = "tree_id"

#: Characters that XML 1.0 forbids (C0 controls but tab, newline and carriage
#: return; lone surrogates; U+FFFE and U+FFFF). No format writes them: an SVG
#: that Graphviz makes, a GraphML file, a web page showing Mermaid are XML or
#: HTML, and one such character makes the whole document unreadable.
FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

#: Controls to show as a symbol in drawn text (labels): the forbidden ones,
#: plus tab, carriage return and DEL, which a one-line label cannot show.
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


#: The symbol that stands in for an unwritable character: the one the
#: terminal output uses too (a control picture for C0 and DEL, else U+FFFD).
visible = control_picture


def _visible_match(match: re.Match[str]) -> str:
    return visible(match.group())


def without_forbidden(text: str) -> str:
    """`text` with the characters XML 1.0 forbids replaced by `visible`."""
    if FORBIDDEN.search(text) is None:
        return text
    return FORBIDDEN.sub(_visible_match, text)


def without_controls(text: str) -> str:
    """`text` with every control character replaced by `visible`."""
    if CONTROLS.search(text) is None:
        return text
    return CONTROLS.sub(_visible_match, text)


def as_graphs(
    graphs: nx.DiGraph[Any] | Iterable[nx.DiGraph[Any]],
) -> Iterator[nx.DiGraph[Any]]:
    """One graph or an iterable of graphs, as an iterator of graphs."""
    # A networkx graph is itself iterable (over its nodes): tell it apart by
    # the adjacency it has and an iterable of graphs does not.
    if hasattr(graphs, "adj") and hasattr(graphs, "graph"):
        return iter([cast("nx.DiGraph[Any]", graphs)])
    return iter(cast("Iterable[nx.DiGraph[Any]]", graphs))


def adjacency(graph: nx.DiGraph[Any]) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """A graph's successors and predecessors: networkx's own dicts, which an
    exporter reads for every node without building a view each time.
    """
    return graph._succ, graph._pred  # type: ignore[attr-defined]


def look_ahead(
    graphs: nx.DiGraph[Any] | Iterable[nx.DiGraph[Any]],
) -> tuple[Iterator[nx.DiGraph[Any]], bool]:
    """The graphs again, and whether there is more than one of them.

    Reads at most two graphs ahead of the caller, so a generator of
    conversations is still consumed one at a time.
    """
    iterator = as_graphs(graphs)
    ahead = list(itertools.islice(iterator, 2))
    return itertools.chain(ahead, iterator), len(ahead) > 1


class UniqueIds:
    """Remembers the node ids written so far, to refuse a forest in which two
    conversations share a node (a file with one id twice is invalid)."""

    def __init__(self) -> None:
        self.seen: set[Any] = set()

    def check(self, graph: nx.DiGraph[Any]) -> None:
        """Raise ExportError if `graph` has a node already written."""
        before = len(self.seen)
        self.seen.update(graph)
        if len(self.seen) != before + len(graph):
            repeated = next(node for node in graph if node in self.seen)
            raise ExportError(
                f"node {repeated!r} is in two of the conversations exported;"
                " export each conversation once"
            )


#: The node attribute that names the calls a node folds: the ids llm logged
#: for the calls inside a run (a tool chain is one node, named by its last
#: call: `convgraph.sources.llm.runs`), before the node's own id, in log
#: order; empty where the node is one call. The trees keep them as the
#: graph's `calls` (call id -> node id), the forest as `Forest.calls`: the
#: exports write them on the nodes, so that every id `llm logs` printed is
#: in the file, and the formats that read back give the graph's `calls`
#: again (`add_read_node`). Always a list, never null: every source knows
#: what a node folds, and a reader iterates it without a test.
CALLS = "calls"


def calls_by_node(calls: Mapping[Any, Any] | None) -> dict[Any, list[Any]]:
    """Each node's folded calls (`CALLS`) from a tree's or a forest's
    `calls` (call id -> node id), in the map's order, which is each run's
    log order; a node that folds nothing is not a key. The one rule every
    export of the folded calls follows, per tree and for a forest's table.
    """
    found: dict[Any, list[Any]] = {}
    for call, node in (calls or {}).items():
        found.setdefault(node, []).append(call)
    return found


def tree_calls(graph: nx.DiGraph[Any]) -> dict[Any, list[Any]]:
    """`calls_by_node` of one tree: its graph's `calls`."""
    return calls_by_node(graph.graph.get(CALLS))


PathOrFile = str | os.PathLike[str] | IO[str] | IO[bytes]

#: Lines are joined into chunks of this many before writing: one write per
#: line costs more than the text itself for short lines.
LINES_PER_WRITE = 512


def write_lines(lines: Iterable[str], path_or_file: PathOrFile) -> None:
    """Write `lines`, each ended by a newline, as UTF-8.

    Parameters
    ----------
    lines
        The text, one line per item, without line ends.
    path_or_file
        A path (the file is created or replaced), a binary file (UTF-8 bytes
        are written), or a text file (written as it is).
    """
    with _writer(path_or_file) as (write, binary):
        iterator = iter(lines)
        while chunk := list(itertools.islice(iterator, LINES_PER_WRITE)):
            chunk.append("")
            text = "\n".join(chunk)
            write(text.encode("utf-8") if binary else text)


def write_blocks(
    blocks: Iterable[bytes | memoryview], path_or_file: PathOrFile
) -> None:
    """Write `blocks` of UTF-8 text, each a run of whole lines with their
    ends: what `write_lines` writes, for a writer that makes its text as
    bytes a batch of lines at a time (a forest's JSON, thousands of nodes a
    block).
    """
    with _writer(path_or_file) as (write, binary):
        for block in blocks:
            write(block if binary else str(block, "utf-8"))


@contextlib.contextmanager
def _writer(path_or_file: PathOrFile) -> Iterator[tuple[Callable[[Any], Any], bool]]:
    """The write function of a path (opened here, binary) or an open file,
    and whether it takes bytes (a text file, a terminal's, takes str)."""
    if isinstance(path_or_file, str | os.PathLike):
        with written(path_or_file) as file:  # the one way out: convgraph.writing
            yield file.write, True
        return
    text = isinstance(path_or_file, io.TextIOBase) or hasattr(path_or_file, "encoding")
    yield path_or_file.write, not text


def block_lines(blocks: Iterable[bytes | memoryview]) -> Iterator[str]:
    """The lines of `blocks` (UTF-8, together whole lines with their ends),
    without their ends: a block writer's text as `generate_*` yields it.
    """
    pending = ""
    for block in blocks:
        *lines, pending = (pending + str(block, "utf-8")).split("\n")
        yield from lines


def read_text(path_or_file: PathOrFile) -> str:
    """The whole of a path or open file (text or UTF-8 bytes) as a string."""
    if isinstance(path_or_file, str | os.PathLike):
        with open(path_or_file, encoding="utf-8") as file:
            return file.read()
    content = path_or_file.read()
    return content.decode("utf-8") if isinstance(content, bytes) else content


def new_graph(tree_id: Any, name: Any) -> ConversationTree:
    """An empty conversation tree with the contract's graph attributes: what
    the `read_*` functions fill, the same class the readers of llm's files
    give.
    """
    from convgraph.model.tree import ConversationTree

    return ConversationTree(tree_id=tree_id, name=name)


def add_read_node(graph: nx.DiGraph[Any], node: Any, data: dict[str, Any]) -> None:
    """Add a node read back from a file to `graph`: its attributes as
    `contract_node` gives them, and the calls it folds (`CALLS`, taken out
    of its attributes) into the graph's `calls`, so that the tree reads as
    the one the file was written from (a call's id finds its node).

    Raises
    ------
    ExportError
        `calls` is not a list of strings.
    """
    calls = data.pop(CALLS, None)
    if calls is not None and (
        not isinstance(calls, list) or not all(isinstance(c, str) for c in calls)
    ):
        raise ExportError(f"the calls of node {node!r} are not a list of ids")
    graph.add_node(node, **contract_node(data))
    for call in calls or ():
        # A call two runs share (a run forked after it) names the first.
        graph.graph.setdefault(CALLS, {}).setdefault(call, node)


def contract_node(data: dict[str, Any]) -> dict[str, Any]:
    """A node's attributes as read back: every contract key present (None
    where the file had none), then any other attributes the file carried.
    """
    node = {key: data.pop(key, None) for key in NODE_ATTRIBUTES}
    node.update(data)
    return node
