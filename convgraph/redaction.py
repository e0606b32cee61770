"""Secrets replaced by a marker naming their kind (`[REDACTED aws-access-key]`)
before any output renders a text: detect-secrets' plugins, offline, and
e-mail addresses. `Logs(redact=True)` applies `redact` to what it hands out
(trees, forests, transcripts, hits), ids and titles included, so that no
format shows what another hides; `secret_places` says where secrets are,
without them. Raises ConvgraphError where the `redact` extra is missing."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from convgraph.contract import PARTS, TREE_NAME
from convgraph.errors import ConvgraphError

if TYPE_CHECKING:
    import pandas as pd

    from convgraph.model.forest import Forest

NEEDS = (
    "finding secrets needs detect-secrets and pyarrow: pip install 'convgraph[redact]'"
)
EMAIL, PRIVATE_KEY = "email-address", "private-key"
#: Left out: entropy fires on every hash and id, a public IP is no secret.
LEFT_OUT = {"Base64 High Entropy String", "Hex High Entropy String", "Public IP (ipv4)"}
_EMAIL = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
# The plugin finds a key's first line; the whole block goes, to its END line.
_KEY_BLOCK = re.compile(
    r"(?:-----)?(?:BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?|PuTTY-User-Key-File-2)"
    r".*?(?:END [A-Z0-9 ]*-----|Private-MAC: *\S+|\Z)",
    re.S,
)
# Lines, also inside JSON text (a tool's arguments, a logged request, once or
# twice encoded): detect-secrets' patterns read one line at a time.
_LINES = re.compile(r"(\r?\n|(?:\\+r)?\\+n)")
# The token around a plugin's value (which may be its regex's group alone),
# reaching back a bounded way; a sentence's full stop stays.
_AROUND = r"[\w\-+/=.]{0,200}%s[\w\-+/=]*(?:\.[\w\-+/=]+)*"
# A text cut short (a title cut from a prompt) may end in half a key.
_CUT = re.compile(r"([\w\-+/=.]+)(" "\u2026" r"|\.\.\.)\Z")  # RE2 reads no \u
#: What a scan gives: the text redacted, and the kinds found in it.
Scan = tuple[str, tuple[str, ...]]


def marker(kind: str) -> str:
    return f"[REDACTED {kind}]"


def _re2(pattern: re.Pattern[str]) -> str:
    """A pattern for RE2 matching at least what Python's matches: without lookarounds,
    repetitions unbounded and at most 8 required (a smaller automaton: faster)."""
    text = re.sub(r"\(\?<?[=!][^()]*\)", "", pattern.pattern)
    at_least = re.sub(r"\{(\d+)(,\d*)?\}", lambda m: f"{{{min(int(m[1]), 8)},}}", text)
    return f"(?i:{at_least})" if pattern.flags & re.I else f"(?:{at_least})"


class Redactor:
    """Finds and replaces secrets in texts, many at a time: they are sifted
    together by one RE2 pattern of every plugin's (pyarrow, compiled at each
    call) before any plugin runs, since secrets are rare."""

    def __init__(self) -> None:
        try:
            import pyarrow
            import pyarrow.compute
            from detect_secrets.core.plugins.util import (
                get_mapping_from_secret_type_to_class as plugin_classes,
            )
            from detect_secrets.plugins import keyword
        except ImportError:
            raise ConvgraphError(NEEDS) from None
        self._arrow = pyarrow
        self.plugins: list[tuple[str, Any]] = []
        patterns = [_EMAIL, f"(?i:{keyword.DENYLIST_REGEX})", _CUT.pattern]
        for secret_type, plugin in dict[str, Any](plugin_classes()).items():
            if secret_type not in LEFT_OUT:
                kind = "-".join(re.findall(r"[a-z0-9]+", secret_type.lower()))
                self.plugins.append((kind, plugin()))
                patterns += [_re2(p) for p in getattr(plugin, "denylist", ())]
        self.sieve = "|".join(patterns).replace(r"\Z", "$")
        # Or its name alone, where a key's token took its domain (`a@b.org-KEY`).
        self._email = re.compile(_EMAIL + r"|[A-Za-z0-9._%+-]+@(?=\[REDACTED )")
        self._known: dict[str, Scan] = {}

    def candidates(self, texts: Any) -> list[bool]:
        """Which texts (strings or None, a list or an Arrow array) may hold
        a secret: those the sieve keeps."""
        arrow = self._arrow
        if not isinstance(texts, (arrow.Array, arrow.ChunkedArray)):
            texts = arrow.array(texts, type=arrow.large_string())
        kept = arrow.compute.match_substring_regex(texts, self.sieve)
        return [bool(keep) for keep in kept.fill_null(False).to_pylist()]

    def scan(self, texts: Iterable[Any], sifted: bool = False) -> dict[str, Scan]:
        """Each distinct text holding a secret: redacted, and its kinds in
        order; `sifted`: the texts are candidates already."""
        distinct = [t for t in dict.fromkeys(texts) if isinstance(t, str)]
        if not sifted:
            keep = zip(distinct, self.candidates(distinct), strict=True)
            distinct = [text for text, kept in keep if kept]
        pieces = {}
        for text in (t for t in distinct if t not in self._known):
            kinds = [PRIVATE_KEY] if _KEY_BLOCK.search(text) else []
            split = _LINES.split(_KEY_BLOCK.sub(marker(PRIVATE_KEY), text))
            pieces[text] = (split, kinds)
        lines = [line for split, _ in pieces.values() for line in split[::2]]
        sifted_lines = iter(self.candidates(lines) if lines else ())
        for text, (split, kinds) in pieces.items():
            for number in range(0, len(split), 2):
                if next(sifted_lines):
                    split[number] = self._line(split[number], kinds)
            redacted = "".join(split)
            if cut := _CUT.search(redacted):  # completed, is it a secret?
                completed: list[str] = []
                self._line(cut[1] + "0" * 100, completed)
                if completed:
                    kinds.append(completed[0])
                    redacted = redacted[: cut.start()] + marker(completed[0]) + cut[2]
            self._known[text] = (redacted, tuple(dict.fromkeys(kinds)))
        return {t: self._known[t] for t in distinct if self._known[t][1]}

    def _line(self, line: str, kinds: list[str]) -> str:
        view = re.sub(r'\\+"', '"', line)  # a JSON string's quotes, as written
        for kind, plugin in self.plugins:
            for value in list(plugin.analyze_string(view)):
                value = value.strip().strip("'\"=:")
                if value and value in line:
                    line = re.sub(_AROUND % re.escape(value), marker(kind), line)
                    kinds.append(kind)
        if self._email.search(line):
            line = self._email.sub(marker(EMAIL), line)
            kinds.append(EMAIL)
        return line


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, keys too."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, list):
            stack += item


def _value(value: Any, changed: dict[str, Scan]) -> Any:
    """A JSON value with each string in `changed` replaced, keys too (a copy).
    A quoted JSON string is matched whole, never across two strings."""
    if isinstance(value, str) or not isinstance(value, (list, dict)):
        return changed.get(value, (value,))[0] if isinstance(value, str) else value
    found = sorted({text for text in strings(value) if text in changed}, key=len)
    if not found:
        return value
    text = json.dumps(value, ensure_ascii=False)
    for old in reversed(found):
        text = text.replace(
            json.dumps(old, ensure_ascii=False),
            json.dumps(changed[old][0], ensure_ascii=False),
        )
    return json.loads(text)


def redact(found: Any, redactor: Redactor | None = None) -> Any:
    """`found` with its secrets replaced: a tree (a copy where an id holds
    one), a `Forest` (in place), a `Transcript`, a `(tree, problems)` pair,
    search hits (a changed snippet loses its marks), records (a copy), or a
    statistics table's `tree_id` and `name` (a copy)."""
    import networkx as nx

    from convgraph.model.forest import Forest

    redactor = redactor or Redactor()
    if isinstance(found, nx.DiGraph):
        return _tree(found, redactor)[0]
    if isinstance(found, Forest):
        for name in found.nodes.columns:
            _column(found.nodes, name, redactor)
        kept = [found.names, found.calls, found.hidden]
        changed = redactor.scan(strings([[*d.keys(), *d.values()] for d in kept]))
        found.names, found.calls, found.hidden = _value(kept, changed)
        return found
    if isinstance(found, tuple):
        return (redact(found[0], redactor), *found[1:])
    if isinstance(found, list) and found and isinstance(found[0], dict):
        return _value(found, redactor.scan(strings(found)))
    if isinstance(found, list):
        changed = redactor.scan(t for h in found for t in (h.snippet, h.tree_id, h.id))
        return [_hit(hit, changed) for hit in found]
    if hasattr(found, "path") and hasattr(found, "tree"):
        tree, changed = _tree(found.tree, redactor)
        return replace(found, tree=tree, path=_value(found.path, changed))
    found = found.copy()
    for column in ("tree_id", "name"):
        _column(found, column, redactor)
    return found


def _tree(tree: Any, redactor: Redactor) -> tuple[Any, dict[str, Scan]]:
    everything = [*tree, *strings([*tree.graph.values()])]
    for _, data in tree.nodes(data=True):
        everything += strings([*data.values()])
    changed = redactor.scan(everything)
    if not changed:
        return tree, changed
    for _, data in tree.nodes(data=True):
        data.update({key: _value(value, changed) for key, value in data.items()})
    tree.graph.update({k: _value(v, changed) for k, v in tree.graph.items()})
    renamed = {node: changed[node][0] for node in tree if node in changed}
    if not renamed:
        return tree, changed
    import networkx as nx

    return nx.relabel_nodes(tree, renamed, copy=True), changed


def _hit(hit: Any, changed: dict[str, Scan]) -> Any:
    snippet, tree_id, node = _value([hit.snippet, hit.tree_id, hit.id], changed)
    marks = hit.marks if snippet == hit.snippet else []
    return replace(hit, tree_id=tree_id, id=node, snippet=snippet, marks=marks)


def _changes(column: pd.Series, redactor: Redactor) -> dict[str, Scan]:
    """The column's texts holding a secret, Arrow's strings sifted as they are."""
    if column.name == PARTS:
        return redactor.scan(strings(column.tolist()))
    if column.dtype == "category":
        return redactor.scan(column.cat.categories.astype(str))
    if column.dtype.kind not in "OU" and str(column.dtype) != "string":
        return {}
    texts = getattr(column.array, "_pa_array", None)
    if texts is None:
        texts = [value if isinstance(value, str) else None for value in column]
    return redactor.scan(column[redactor.candidates(texts)].tolist(), sifted=True)


def _column(nodes: pd.DataFrame, name: str, redactor: Redactor) -> None:
    """A column redacted in place, per distinct text that may hold a secret."""
    changed = _changes(nodes[name], redactor)
    if changed and name == PARTS:
        nodes[name] = [_value(parts, changed) for parts in nodes[name]]
    elif changed:
        new = nodes[name].astype(object).map(lambda v: changed.get(v, (v,))[0])
        kept = nodes[name].dtype  # a category's own categories would lose the new
        nodes[name] = new.astype("category" if kept == "category" else kept)


#: `secret_places`' columns.
PLACE_COLUMNS = ("tree_id", "node_id", "field", "kind")


def secret_places(
    forest: Forest | str | os.PathLike[str], redactor: Redactor | None = None
) -> list[dict[str, Any]]:
    """Where the forest's (or a Parquet dataset's, given its directory) secrets are: one
    record per tree, node, field and kind, in log order, the ids redacted; a tree's
    title is field `name` (node_id None), a part's field `parts[i].key`."""
    redactor = redactor or Redactor()
    if isinstance(forest, (str, os.PathLike)):
        from convgraph.sources.parquet import read_nodes

        nodes = read_nodes(forest)
        titles = nodes.pop(TREE_NAME) if TREE_NAME in nodes.columns else ()
        names = dict(zip(nodes["tree_id"], titles, strict=False))
    else:
        nodes, names = forest.nodes, forest.names
    changed = redactor.scan(strings(list(names.values())))
    for name in nodes.columns:
        changed.update(_changes(nodes[name], redactor))
    found: list[tuple[Any, Any, str, str]] = []

    def look(tree: Any, node: Any, field: str, value: Any) -> None:
        kinds = (k for t in strings(value) if t in changed for k in changed[t][1])
        found.extend((tree, node, field, kind) for kind in dict.fromkeys(kinds))

    seen: set[Any] = set()
    columns = [nodes[name].tolist() for name in ("tree_id", "id", *nodes.columns)]
    for tree, node, *values in zip(*columns, strict=True) if changed else ():
        if tree not in seen:
            seen.add(tree)
            look(tree, None, "name", names.get(tree))
        for name, value in zip(nodes.columns, values, strict=True):
            for i, part in enumerate(value or () if name == PARTS else ()):
                for key, inner in part.items():
                    look(tree, node, f"parts[{i}].{key}", inner)
            if name != PARTS:
                look(tree, node, name, value)
    shown = redactor.scan(text for place in found for text in place[:2])
    places = [
        (*_value([tree, node], shown), field, kind) for tree, node, field, kind in found
    ]
    return [dict(zip(PLACE_COLUMNS, place, strict=True)) for place in places]
