"""Conversation trees as one self-contained, interactive HTML page."""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import re
from collections.abc import Iterator, Mapping, Sized
from dataclasses import dataclass, field
from functools import cache
from html.parser import HTMLParser
from importlib import resources
from typing import TYPE_CHECKING, Any

from convgraph.errors import ExportError
from convgraph.export.common import (
    Graphs,
    PathOrFile,
    UniqueIds,
    as_graphs,
    read_text,
    without_controls,
    write_lines,
)
from convgraph.export.json import generate_json, read_json
from convgraph.sources.source import ProgressCallback, no_progress

if TYPE_CHECKING:
    import networkx as nx

    from convgraph.model.tree import ConversationTree

#: The folder beside this module with the page's template, script and style.
ASSETS = "html_assets"
#: The id of the JSON block that holds the trees.
DATA_ID = "convgraph-data"
#: The `format` field of that block, and the version this code writes.
FORMAT = "convgraph.html"
VERSION = 1
DEFAULT_TITLE = "Conversation forest"
#: How the page first draws the trees, by the rankdir names of dot and mermaid.
ORIENTATIONS = {"TB": "top-down", "LR": "left-right"}

# What could end the script block or confuse a parser, and lone surrogates;
# escaped as \uXXXX, the text stays valid JSON.
_UNSAFE_IN_SCRIPT = re.compile("[<>&\u2028\u2029\ud800-\udfff]")
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


def _escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def script_safe(json_text: str) -> str:
    """JSON text made safe inside `<script>`: ``<``, ``>``, ``&``, U+2028,
    U+2029 and lone surrogates as ``\\uXXXX`` escapes."""
    return _UNSAFE_IN_SCRIPT.sub(_escaped, json_text)


def script_json(value: Any) -> str:
    """`value` as compact JSON, valid UTF-8, that no string can close a
    `<script>` element in."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return script_safe(text)


@cache
def _asset(name: str) -> str:
    folder = resources.files("convgraph.export").joinpath(ASSETS)
    return folder.joinpath(name).read_text("utf-8")


def _csp_source(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


@cache
def _page_values() -> dict[str, str]:
    """The inlined script and style, and the policy that admits only them."""
    script, style = _asset("view.js"), _asset("view.css")
    # Inlined code must not be able to end its own element early.
    for name, text in [("view.js", script), ("view.css", style)]:
        if re.search(r"</(script|style)", text, re.IGNORECASE):
            raise AssertionError(f"{name} must not contain a closing tag")
    policy = "; ".join(
        [
            "default-src 'none'",
            f"script-src {_csp_source(script)}",
            f"style-src {_csp_source(style)}",
            "img-src data:",
            "base-uri 'none'",
            "form-action 'none'",
        ]
    )
    return {"csp": policy, "generator": _generator(), "style": style, "script": script}


def _generator() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"convgraph {version('convgraph')}"
    except PackageNotFoundError:
        return "convgraph"


def page_title(title: str) -> str:
    """The title on one line, white space folded, controls HTML cannot hold
    shown as visible symbols."""
    return without_controls(" ".join(title.split()))


def _page_lines(title: str) -> tuple[list[str], list[str]]:
    """The page's lines before and after the data, filled in one pass, so a
    title holding "{{...}}" stays as it is."""
    values = {**_page_values(), "title": html.escape(page_title(title), quote=True)}
    before, marker, after = _asset("page.html").partition("\n{{data}}\n")
    if not marker:
        raise AssertionError("page.html has no {{data}} line")

    def fill(text: str) -> list[str]:
        return _PLACEHOLDER.sub(lambda match: values[match.group(1)], text).split("\n")

    return fill(before), fill(after.removesuffix("\n"))


def conversation_line(tree: nx.DiGraph[Any]) -> str:
    """One conversation on one line: id, name, statistics and node-link JSON."""
    from convgraph.analysis.stats import summary

    head = script_json(
        {
            "id": tree.graph.get("tree_id"),
            "name": tree.graph.get("name"),
            "stats": summary(tree),
        }
    )
    return f'{head[:-1]},"graph":{script_safe("".join(generate_json(tree)))}}}'


@dataclass(frozen=True)
class PageLinks:
    """Where a served page links out: `nodes` maps a node id to its record's
    address (`node_label`), `home` is linked in the header (`home_label`). Only
    site paths ("/...") and http(s) addresses are followed."""

    nodes: Mapping[str, str] = field(default_factory=dict)
    node_label: str = "Record"
    home: str | None = None
    home_label: str = "Back"

    def as_record(self) -> dict[str, Any]:
        """The links as the page's data block holds them."""
        return {
            "nodes": dict(self.nodes),
            "nodeLabel": self.node_label,
            "home": self.home,
            "homeLabel": self.home_label,
        }


def generate_html(
    graphs: Graphs,
    *,
    title: str = DEFAULT_TITLE,
    rankdir: str = "TB",
    progress: ProgressCallback | None = None,
    links: PageLinks | None = None,
) -> Iterator[str]:
    """Yield the page that shows `graphs`, one line per conversation. Raises
    `ExportError` (an unknown `rankdir`, or one node id in two of the conversations)."""
    if (orientation := ORIENTATIONS.get(rankdir.upper())) is None:
        raise ExportError(f"the html page draws trees TB or LR, not {rankdir!r}")
    before, after = _page_lines(title)
    yield from before
    head: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "title": title,
        "orientation": orientation,
    }
    if links is not None:
        head["links"] = links.as_record()
    yield script_json(head)[:-1] + ',"conversations":['
    unique = UniqueIds()
    report = progress or no_progress
    total = len(graphs) if isinstance(graphs, Sized) and not _is_graph(graphs) else None
    every = max(1, (total or 0) // 200)
    written = 0
    for index, graph in enumerate(as_graphs(graphs)):
        if index % every == 0:
            report(WRITING, index, total)
        unique.check(graph)
        yield ("," if index else "") + conversation_line(graph)
        written = index + 1
    report(WRITING, written, written if total is None else total)
    yield "]}"
    yield from after


def write_html(
    graphs: Graphs,
    path_or_file: PathOrFile,
    *,
    title: str = DEFAULT_TITLE,
    rankdir: str = "TB",
    progress: ProgressCallback | None = None,
) -> None:
    """Write `generate_html(graphs)` to a path or an open file, as UTF-8."""
    lines = generate_html(graphs, title=title, rankdir=rankdir, progress=progress)
    write_lines(lines, path_or_file)


#: The phase of writing a page, counted in conversations.
WRITING = "writing page"


def _is_graph(value: object) -> bool:
    """Whether `value` is one graph (which has a length: its nodes)."""
    return hasattr(value, "adj") and hasattr(value, "graph")


class _DataFinder(HTMLParser):
    """Collects the text of the `convgraph-data` script element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.inside = False
        self.found = False
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script" and ("id", DATA_ID) in attrs and not self.found:
            self.inside = self.found = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self.inside = False

    def handle_data(self, data: str) -> None:
        if self.inside:
            self.parts.append(data)


def page_data(text: str) -> dict[str, Any]:
    """The data a convgraph page embeds (`format`, `version`, `title`, `orientation`,
    `conversations`); raises ExportError where there is none or it is not JSON."""
    finder = _DataFinder()
    finder.feed(text)
    finder.close()
    if not finder.found:
        raise ExportError("not a convgraph HTML page (no convgraph-data block)")
    try:
        data = json.loads("".join(finder.parts))
    except ValueError as error:
        raise ExportError(
            f"the page's convgraph-data block is not JSON: {error}"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ExportError("not a convgraph HTML page (unknown data format)")
    if not isinstance(data.get("version"), int) or not 1 <= data["version"] <= VERSION:
        raise ExportError(
            f"convgraph HTML version {data.get('version')!r} is not one this"
            f" convgraph reads (1 to {VERSION})"
        )
    return data


def parse_html(text: str) -> list[ConversationTree]:
    """The conversation trees of a page's text, as DiGraphs."""
    trees = []
    for record in page_data(text)["conversations"]:
        (tree,) = read_json(io.StringIO(json.dumps(record["graph"])))
        trees.append(tree)
    return trees


def read_html(path_or_file: PathOrFile) -> list[ConversationTree]:
    """The conversation trees of a page that `write_html` wrote."""
    return parse_html(read_text(path_or_file))
