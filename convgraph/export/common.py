"""What every exporter shares: one conversation or an iterable of them (consumed once,
looked ahead at most one graph), writing lines to a path or an open file, and the
characters no format may carry. No networkx import here: the command line lists the
formats and stays fast."""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import IO, TYPE_CHECKING, Any, TypeAlias, cast

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


#: Where a file of several conversations records a node's conversation.
TREE_ID = "tree_id"

#: Characters XML 1.0 forbids: one makes a whole SVG, GraphML or page unreadable.
FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

#: The forbidden ones plus tab, CR and DEL, which a one-line label cannot show.
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


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
    return text if CONTROLS.search(text) is None else CONTROLS.sub(_visible_match, text)


def as_graphs(graphs: Graphs) -> Iterator[nx.DiGraph[Any]]:
    """One graph or an iterable of graphs, as an iterator of graphs."""
    # A graph is itself iterable (over its nodes): its adjacency tells it apart.
    if hasattr(graphs, "adj") and hasattr(graphs, "graph"):
        return iter([cast("nx.DiGraph[Any]", graphs)])
    return iter(cast("Iterable[nx.DiGraph[Any]]", graphs))


def adjacency(graph: nx.DiGraph[Any]) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """A graph's successor and predecessor dicts, read without building views."""
    return graph._succ, graph._pred  # type: ignore[attr-defined]


def look_ahead(graphs: Graphs) -> tuple[Iterator[nx.DiGraph[Any]], bool]:
    """The graphs again (two read ahead at most), and whether there are several."""
    iterator = as_graphs(graphs)
    ahead = list(itertools.islice(iterator, 2))
    return itertools.chain(ahead, iterator), len(ahead) > 1


class UniqueIds:
    """Refuses a forest in which two conversations share a node id."""

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


#: The node attribute listing the ids of the calls a run's node folds, in log
#: order, so every id `llm logs` printed is in the file. Always a list, never null.
CALLS = "calls"


def calls_by_node(calls: Mapping[Any, Any] | None) -> dict[Any, list[Any]]:
    """Each node's folded calls from a `calls` map (call id -> node id), in
    the map's (log) order; a node that folds nothing is not a key."""
    found: dict[Any, list[Any]] = {}
    for call, node in (calls or {}).items():
        found.setdefault(node, []).append(call)
    return found


def tree_calls(graph: nx.DiGraph[Any]) -> dict[Any, list[Any]]:
    """`calls_by_node` of one tree: its graph's `calls`."""
    return calls_by_node(graph.graph.get(CALLS))


PathOrFile = str | os.PathLike[str] | IO[str] | IO[bytes]
#: One conversation tree, or an iterable of them: what the exporters take.
Graphs: TypeAlias = "nx.DiGraph[Any] | Iterable[nx.DiGraph[Any]]"

#: Lines joined per write: one write per short line costs more than its text.
LINES_PER_WRITE = 512


def write_lines(lines: Iterable[str], path_or_file: PathOrFile) -> None:
    """Write `lines` (without their ends), each ended by a newline, as UTF-8 to
    a path (created or replaced), a binary file or a text file."""
    with _writer(path_or_file) as (write, binary):
        iterator = iter(lines)
        while chunk := list(itertools.islice(iterator, LINES_PER_WRITE)):
            chunk.append("")
            text = "\n".join(chunk)
            write(text.encode("utf-8") if binary else text)


def write_blocks(
    blocks: Iterable[bytes | memoryview], path_or_file: PathOrFile
) -> None:
    """Write `blocks` of UTF-8 text, each whole lines with their ends."""
    with _writer(path_or_file) as (write, binary):
        for block in blocks:
            write(block if binary else str(block, "utf-8"))


@contextlib.contextmanager
def _writer(path_or_file: PathOrFile) -> Iterator[tuple[Callable[[Any], Any], bool]]:
    """The write function of a path or an open file, and whether it takes bytes."""
    if isinstance(path_or_file, str | os.PathLike):
        with written(path_or_file) as file:  # the one way out: convgraph.writing
            yield file.write, True
        return
    text = isinstance(path_or_file, io.TextIOBase) or hasattr(path_or_file, "encoding")
    yield path_or_file.write, not text


def block_lines(blocks: Iterable[bytes | memoryview]) -> Iterator[str]:
    """The lines of `blocks` without their ends, as `generate_*` yields them."""
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
    """An empty conversation tree, for the `read_*` functions to fill."""
    from convgraph.model.tree import ConversationTree

    return ConversationTree(tree_id=tree_id, name=name)


def add_read_node(graph: nx.DiGraph[Any], node: Any, data: dict[str, Any]) -> None:
    """Add a node read back from a file, its `CALLS` moved into the graph's
    `calls`; raises ExportError where they are not a list of strings."""
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
    """A node's attributes as read back: every contract key (None where
    missing), then any others the file carried."""
    node = {key: data.pop(key, None) for key in NODE_ATTRIBUTES}
    node.update(data)
    return node
