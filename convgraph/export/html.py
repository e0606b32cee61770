"""Conversation trees as one self-contained, interactive HTML page.

The page is a template (`html_assets/page.html`) with its stylesheet and script
inlined and the trees embedded as JSON in a `<script type="application/json">`
block: one file that opens offline, that anyone can attach to a bug report.
A Content-Security-Policy that admits only the page's own script and style
(by hash) and no connection at all backs up the two real defences: the JSON
is escaped so that no text can close its script block, and the script puts
text into the page only as text. `generate_html` yields the page piece by
piece, one conversation at a time; `write_html` writes it; `read_html` and
`parse_html` read the trees back out of a page.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import os
import re
from collections.abc import Iterable, Iterator
from functools import cache
from html.parser import HTMLParser
from importlib import resources
from typing import TYPE_CHECKING, Any, TextIO

from convgraph.errors import ConvgraphError
from convgraph.export.common import UniqueIds, as_graphs

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "generate_html",
    "write_html",
    "read_html",
    "parse_html",
    "page_data",
    "script_json",
    "HtmlExportError",
]

#: The folder beside this module that holds the page's template, script and style.
ASSETS = "html_assets"
#: The id of the JSON block that holds the trees.
DATA_ID = "convgraph-data"
DEFAULT_TITLE = "Conversation forest"

# Characters that would let text end the script block or confuse an HTML or
# JavaScript parser, and lone surrogates (which UTF-8 cannot encode). Outside
# strings JSON has none of them, so escaping them as \uXXXX is always valid.
_UNSAFE_IN_SCRIPT = re.compile("[<>&\u2028\u2029\ud800-\udfff]")
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


class HtmlExportError(ConvgraphError):
    """The file is not a page that convgraph exported."""


def script_json(value: Any) -> str:
    """`value` as JSON that is safe inside an HTML `<script>` element.

    ``<``, ``>``, ``&``, U+2028, U+2029 and lone surrogates become ``\\uXXXX``
    escapes, so no string can close the element or open a comment, and the
    result is both valid JSON and valid UTF-8.

    >>> script_json({"prompt": "</script><b>"})
    '{"prompt":"\\\\u003c/script\\\\u003e\\\\u003cb\\\\u003e"}'
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return _UNSAFE_IN_SCRIPT.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


@cache
def _asset(name: str) -> str:
    folder = resources.files("convgraph.export").joinpath(ASSETS)
    return folder.joinpath(name).read_text("utf-8")


def _csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


@cache
def _page_values() -> dict[str, str]:
    """The inlined script and style, and the policy that admits only them."""
    script, style = _asset("view.js"), _asset("view.css")
    # The inlined code must not be able to end its own element early.
    for name, text in [("view.js", script), ("view.css", style)]:
        if re.search(r"</(script|style)", text, re.IGNORECASE):
            raise AssertionError(f"{name} must not contain a closing tag")
    csp = "; ".join(
        [
            "default-src 'none'",
            f"script-src {_csp_hash(script)}",
            f"style-src {_csp_hash(style)}",
            "img-src data:",
            "base-uri 'none'",
            "form-action 'none'",
        ]
    )
    return {"csp": csp, "generator": _generator(), "style": style, "script": script}


def _page_parts(title: str) -> tuple[str, str]:
    """The page before and after its JSON block, everything else filled in.

    One pass over the template: what is filled in is never scanned again, so
    a title or a script that happens to hold "{{...}}" stays as it is.
    """
    values = {**_page_values(), "title": html.escape(title, quote=True)}
    before, marker, after = _asset("page.html").partition("{{data}}")
    if not marker:
        raise AssertionError("page.html has no {{data}} placeholder")

    def fill(text: str) -> str:
        return _PLACEHOLDER.sub(lambda match: values[match.group(1)], text)

    return fill(before), fill(after)


def _generator() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"convgraph {version('convgraph')}"
    except PackageNotFoundError:
        return "convgraph"


def conversation_record(tree: nx.DiGraph) -> dict[str, Any]:
    """What the page knows of one conversation: its id, name, statistics, and
    the tree as node-link JSON."""
    from convgraph.tree import summary

    stats = summary(tree)
    for key in ("input_tokens", "output_tokens", "duration_ms"):
        values = [value for _, value in tree.nodes(data=key) if value is not None]
        stats[key] = sum(values) if values else None
    times = [value for _, value in tree.nodes(data="datetime_utc") if value]
    stats["first_datetime"] = min(times, default=None)
    stats["last_datetime"] = max(times, default=None)
    return {
        "id": tree.graph.get("conversation_id"),
        "name": tree.graph.get("name"),
        "stats": stats,
        "graph": _node_link(tree),
    }


def _node_link(tree: nx.DiGraph) -> dict[str, Any]:
    import networkx as nx

    return nx.node_link_data(tree, edges="links")


def generate_html(
    trees: nx.DiGraph | Iterable[nx.DiGraph], *, title: str = DEFAULT_TITLE
) -> Iterator[str]:
    """Yield the page that shows `trees`, in pieces: the page's head, then one
    piece per conversation, then its end.

    Parameters
    ----------
    trees
        One conversation tree as `convgraph.forest` builds it, or an iterable
        of them, read one at a time: a generator is never held whole.
    title
        The page's title.

    Raises
    ------
    ExportError
        When two of the conversations share a node id.
    """
    before, after = _page_parts(title)
    yield before
    header = {"format": "convgraph-html", "version": 1, "title": title}
    yield script_json(header)[:-1] + ',"conversations":['
    unique = UniqueIds()
    for index, tree in enumerate(as_graphs(trees)):
        unique.check(tree)
        yield ("," if index else "") + script_json(conversation_record(tree))
    yield "]}"
    yield after


def write_html(
    trees: nx.DiGraph | Iterable[nx.DiGraph],
    path: str | os.PathLike[str] | TextIO,
    *,
    title: str = DEFAULT_TITLE,
) -> None:
    """Write the page that shows `trees` to a path or an open text file."""
    if hasattr(path, "write"):
        path.writelines(generate_html(trees, title=title))
        return
    with open(path, "w", encoding="utf-8", newline="\n") as file:
        file.writelines(generate_html(trees, title=title))


class _DataFinder(HTMLParser):
    """Collects the text of the `<script id="convgraph-data">` element."""

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
    """The JSON that a convgraph page embeds, parsed as a browser would find it.

    Raises
    ------
    HtmlExportError
        When the text holds no convgraph data block, or the block is not JSON.
    """
    finder = _DataFinder()
    finder.feed(text)
    finder.close()
    if not finder.found:
        raise HtmlExportError("not a convgraph HTML export: no convgraph-data block")
    try:
        data = json.loads("".join(finder.parts))
    except ValueError as error:
        raise HtmlExportError(
            f"the convgraph-data block is not JSON: {error}"
        ) from None
    if not isinstance(data, dict) or data.get("format") != "convgraph-html":
        raise HtmlExportError("not a convgraph HTML export: unknown data format")
    return data


def parse_html(text: str) -> list[nx.DiGraph]:
    """The conversation trees of a page's text, as DiGraphs."""
    import networkx as nx

    trees = []
    for record in page_data(text)["conversations"]:
        tree = nx.node_link_graph(record["graph"], edges="links")
        tree.graph["conversation_id"] = record["id"]
        tree.graph["name"] = record["name"]
        trees.append(tree)
    return trees


def read_html(path: str | os.PathLike[str] | TextIO) -> list[nx.DiGraph]:
    """The conversation trees of a page that `write_html` wrote."""
    if isinstance(path, io.TextIOBase) or hasattr(path, "read"):
        return parse_html(path.read())
    with open(path, encoding="utf-8") as file:
        return parse_html(file.read())
