"""Search every node of every tree: hits ranked by tantivy's BM25 on the index of
`convgraph.search.index`, each with a snippet, its place and its branch marks."""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from convgraph.contract import ORIGIN
from convgraph.errors import ConvgraphError, DatabaseError
from convgraph.model.filters import TreeFilter
from convgraph.search.documents import ABANDONED, FIELDS, SIDECHAIN
from convgraph.search.index import damage_errors, open_index, trees_of
from convgraph.search.syntax import prefix_spans, syntax_query
from convgraph.search.text import ZERO_WIDTH_SPACE, analyzer, normalized
from convgraph.sources import Source, opened

if TYPE_CHECKING:
    from collections.abc import Callable

    import tantivy

    from convgraph.sources.source import ProgressCallback

#: How many hits a search gives unless told.
DEFAULT_LIMIT = 20
#: The most hits one search gives (a larger limit is one line in the CLI).
MAX_LIMIT = 100_000
#: The characters of text around the words found that a snippet shows.
SNIPPET_CHARACTERS = 120
#: Where a snippet is cut: an ellipsis.
ELLIPSIS = "…"
#: Private-use code points around each word found while a snippet is made.
_OPEN, _CLOSE = "\ue000", "\ue001"
#: A word holds a letter or a digit; anything else is no word to search for.
_WORD = re.compile(r"\w")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Hit:
    """One node that matched (`search`): its `rank` (from 1) and BM25 `score`; its place
    (`depth`, 0 for a root; `active`: on the path to the branch last used; `sidechain`:
    a subagent's node, off that path but no branch the user left); `fields`, its texts
    that match (`prompt`, `response`, `system`, `parts`); `snippet`, one line of its
    best text around the words found (NFKC, `ELLIPSIS` where cut), and `marks`, those
    words as `[start, end)` character offsets in it."""

    rank: int
    score: float
    tree_id: str
    id: str
    depth: int | None
    active: bool | None
    sidechain: bool
    model: str | None
    datetime_utc: str | None
    source: str | None
    fields: list[str]
    snippet: str
    marks: list[list[int]]

    def as_record(self) -> dict[str, Any]:
        """The hit as a dict of plain JSON values."""
        return asdict(self)


def query_words(query: str) -> list[list[str]]:
    """The words of a text query as the index's tokens, each word once: a word is a
    phrase of its tokens (one token for most words; a character a token in scripts
    without spaces). Raises `ConvgraphError` where the query holds no letter or
    digit."""
    text = normalized(query)
    tokenize = analyzer().analyze
    words: list[list[str]] = []
    seen: set[str] = set()
    found: set[tuple[str, ...]] = set()
    for word in text.split():
        if word in seen or not _WORD.search(word.replace(ZERO_WIDTH_SPACE, "")):
            continue
        seen.add(word)
        tokens = tokenize(word)
        if tuple(tokens) not in found:
            found.add(tuple(tokens))
            words.append(tokens)
    if not words:
        shown = query if len(query) <= 60 else query[:59] + ELLIPSIS
        raise ConvgraphError(
            f"nothing to search for in {shown!r}: give a word with a letter or digit"
        )
    return words


def text_query(index: tantivy.Index, query: str) -> tantivy.Query:
    """The tantivy query that finds `query` as text: every word required, in any of the
    node's texts, as the phrase of its tokens (raises as `query_words`)."""
    import tantivy

    layout = index.schema
    words = query_words(query)
    clauses = []
    for tokens in words:
        if not tokens:
            return tantivy.Query.empty_query()  # a word no node can hold
        if len(tokens) == 1:
            each = [tantivy.Query.term_query(layout, f, tokens[0]) for f in FIELDS]
        else:
            phrase: list[str | tuple[int, str]] = list(tokens)
            each = [tantivy.Query.phrase_query(layout, f, phrase) for f in FIELDS]
        either = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, field_query) for field_query in each]
        )
        clauses.append((tantivy.Occur.Must, either))
    return clauses[0][1] if len(clauses) == 1 else tantivy.Query.boolean_query(clauses)


def marked(snippet: str) -> tuple[str, list[list[int]]]:
    """A snippet with its words found between `_OPEN` and `_CLOSE` as plain one-line
    text (zero-width spaces out, white space runs one space) and the offsets of the
    words found; words that touch are one mark (a word of a script without spaces)."""
    text = _SPACES.sub(" ", snippet.replace(ZERO_WIDTH_SPACE, ""))
    plain: list[str] = []
    marks: list[list[int]] = []
    length = 0
    start = None
    for piece in re.split(f"([{_OPEN}{_CLOSE}])", text):
        if piece == _OPEN:
            start = length
        elif piece == _CLOSE:
            if start is not None and marks and marks[-1][1] == start:
                marks[-1][1] = length
            elif start is not None and length > start:
                marks.append([start, length])
            start = None
        else:
            plain.append(piece)
            length += len(piece)
    return "".join(plain), marks


def search(
    db: str | os.PathLike[str] | Source | None,
    query: str,
    limit: int = DEFAULT_LIMIT,
    abandoned: bool = False,
    query_syntax: bool = False,
    where: TreeFilter | None = None,
    index_directory: str | os.PathLike[str] | None = None,
    progress: ProgressCallback | None = None,
    notice: Callable[[str], None] | None = None,
    fts: bool = False,
) -> list[Hit]:
    """The nodes that match `query`, best first (BM25 over the node's texts), at most
    `limit` (at most `MAX_LIMIT`). `db` is llm's database, a chat export or an agents'
    folder (None: llm's own `logs.db`); `query` is text, every word required, or with
    `query_syntax` the engine's language; `abandoned` keeps only nodes on abandoned
    branches, `where` only the trees it keeps. Raises `ConvgraphError` (the query holds
    no word, or is not in the engine's language); `DatabaseError` (the file cannot be
    read, or its index cannot be written)."""
    query_syntax = query_syntax or fts
    # A query that is no query fails before any build (the engine's parser is
    # tried on an empty in-memory index of the same schema and analyzer).
    if query_syntax:
        syntax_query(_empty_index(), query, FIELDS)
    else:
        query_words(query)
    if limit <= 0:
        return []
    limit = min(limit, MAX_LIMIT)
    say = notice or (lambda line: None)
    with opened(db) as logs:
        for attempt in range(2):
            index = open_index(logs, index_directory, progress, say, attempt > 0)
            try:
                prefixes: list[str] = []
                if query_syntax:
                    asked, prefixes = syntax_query(index.index, query, FIELDS)
                else:
                    asked = text_query(index.index, query)
                wanted = _restricted(index, asked, abandoned, where)
                return _hits(index, wanted, limit, prefixes)
            except damage_errors() as error:
                if attempt:
                    raise DatabaseError(
                        f"the search index {index.path} cannot be read: {error}"
                    ) from None
                say(f"the search index {index.path} is damaged: building it again")
            finally:
                index.close()
    raise AssertionError("unreachable")


def _empty_index() -> tantivy.Index:
    import tantivy

    from convgraph.search.index import TOKENIZER, schema

    index = tantivy.Index(schema())
    index.register_tokenizer(TOKENIZER, analyzer())
    return index


def _restricted(
    index: Any, query: tantivy.Query, abandoned: bool, where: TreeFilter | None
) -> tantivy.Query:
    """`query` kept to the abandoned nodes and the trees `where` keeps."""
    import tantivy

    layout = index.index.schema
    clauses = [(tantivy.Occur.Must, query)]
    if abandoned:
        only = tantivy.Query.term_query(layout, "branch", ABANDONED)
        clauses.append((tantivy.Occur.Must, only))
    if where:
        trees = _kept_trees(index, where)
        clauses.append(
            (tantivy.Occur.Must, tantivy.Query.term_set_query(layout, "tree", trees))
        )
    return query if len(clauses) == 1 else tantivy.Query.boolean_query(clauses)


def _kept_trees(index: Any, where: TreeFilter) -> list[str]:
    """The trees any of whose nodes match `where`, by a query on the index
    and tantivy's terms aggregation of the trees."""
    import tantivy

    from convgraph.search.documents import moment

    layout = index.index.schema
    conditions = []
    if where.sources:
        either = [
            tantivy.Query.term_set_query(layout, key, list(where.sources))
            for key in ("source", ORIGIN)
        ]
        conditions.append(
            tantivy.Query.boolean_query([(tantivy.Occur.Should, q) for q in either])
        )
    if where.models:
        passing = [name for name in index.models if where.model_matches(name)]
        conditions.append(tantivy.Query.term_set_query(layout, "model", passing))
    if where.timed:
        lower = upper = None
        if where.since is not None:
            lower = moment(where.since.isoformat())
        if where.until is not None:
            upper = moment(where.until.isoformat())
        if lower is None and upper is None:
            conditions.append(tantivy.Query.exists_query("moment"))
        else:
            conditions.append(
                tantivy.Query.range_query(
                    layout, "moment", tantivy.FieldType.Integer, lower, upper
                )
            )
    nodes = (
        conditions[0]
        if len(conditions) == 1
        else tantivy.Query.boolean_query([(tantivy.Occur.Must, c) for c in conditions])
    )
    return trees_of(index.searcher, nodes)


def _hits(
    index: Any, query: tantivy.Query, limit: int, prefixes: list[str]
) -> list[Hit]:
    import tantivy

    searcher = index.searcher
    limit = min(limit, max(1, searcher.num_docs))
    found = searcher.search(query, limit, count=False).hits
    if not found:
        return []
    layout = index.index.schema
    snippets = {}
    for name in FIELDS:
        generator = tantivy.SnippetGenerator.create(searcher, query, layout, name)
        generator.set_max_num_chars(SNIPPET_CHARACTERS)
        snippets[name] = generator
    hits = []
    for rank, (score, address) in enumerate(found, 1):
        document = searcher.doc(address)
        hits.append(_hit(rank, score, document, snippets, prefixes))
    return hits


def _hit(
    rank: int,
    score: float,
    document: Any,
    snippets: dict[str, Any],
    prefixes: list[str],
) -> Hit:
    """The hit of `document`; the words `prefixes` find are marked too, as
    tantivy's snippets mark only whole terms."""
    fields = []
    best: tuple[int, str, list[list[int]]] | None = None
    for name in FIELDS:
        text = document.get_first(name)
        if not text:
            continue
        snippet = snippets[name].snippet_from_doc(document)
        if snippet.highlighted():
            shown, marks = _snippet(text, snippet)
            marks = _joined(marks, list(prefix_spans(shown, prefixes)))
        elif prefixes:
            shown, marks = _window(text, prefixes)
            if not marks:
                continue
        else:
            continue
        fields.append(name)
        if best is None or len(marks) > best[0]:
            best = (len(marks), shown, marks)
    if best is None:
        # A query that only excludes: the start of the node's first text.
        first = next(filter(None, map(document.get_first, FIELDS)), "")
        shown, marks = _window(first, [])
    else:
        shown, marks = best[1], best[2]
    time = document.get_first("time")
    branch = document.get_first("branch")
    return Hit(
        rank=rank,
        score=round(float(score), 6),
        tree_id=document.get_first("tree"),
        id=document.get_first("id"),
        depth=document.get_first("depth"),
        active=None if branch is None else branch not in (ABANDONED, SIDECHAIN),
        sidechain=branch == SIDECHAIN,
        model=document.get_first("model"),
        datetime_utc=None if time is None else bytes(time).decode("utf-8", "replace"),
        source=document.get_first("source"),
        fields=fields,
        snippet=shown,
        marks=marks,
    )


def _joined(marks: list[list[int]], more: list[list[int]]) -> list[list[int]]:
    """Two lists of marks as one, in order, those that meet made one."""
    if not more:
        return marks
    joined: list[list[int]] = []
    for start, end in sorted(marks + more):
        if joined and start <= joined[-1][1]:
            joined[-1][1] = max(joined[-1][1], end)
        else:
            joined.append([start, end])
    return joined


def _snippet(text: str, snippet: Any) -> tuple[str, list[list[int]]]:
    """The snippet tantivy chose, as plain text with its marks: its byte
    ranges made characters, stretched to the text's start or end where only
    signs lie beyond (so "park?" keeps its "?"), an ellipsis where cut."""
    whole = text.encode("utf-8")
    span = snippet.fragment_range()
    start, end = span.start, span.end
    fragment = whole[start:end]
    pieces = []
    at = 0
    for piece in sorted(snippet.highlighted(), key=lambda found: found.start):
        pieces.append(fragment[at : piece.start].decode("utf-8", "replace"))
        word = fragment[piece.start : piece.end].decode("utf-8", "replace")
        pieces.append(f"{_OPEN}{word}{_CLOSE}")
        at = piece.end
    pieces.append(fragment[at:].decode("utf-8", "replace"))
    before = whole[:start].decode("utf-8", "replace")
    after = whole[end:].decode("utf-8", "replace")
    head = before if not _WORD.search(before) else ELLIPSIS
    tail = after if not _WORD.search(after) else ELLIPSIS
    plain, marks = marked(head + "".join(pieces) + tail)
    stripped = plain.lstrip()
    cut = len(plain) - len(stripped)
    marks = [[begin - cut, finish - cut] for begin, finish in marks]
    return stripped.rstrip(), marks


def _window(text: str, prefixes: list[str]) -> tuple[str, list[list[int]]]:
    """`text` on one line, cut to `SNIPPET_CHARACTERS` from the word a
    little before the first word a prefix finds (from the start where
    none), an ellipsis where cut, and the words the prefixes find marked."""
    plain, _ = marked(text if prefixes else text[: SNIPPET_CHARACTERS * 2])
    plain = plain.strip()
    first = next(prefix_spans(plain, prefixes), None)
    start = 0
    if first is not None and first[0] > SNIPPET_CHARACTERS // 4:
        start = plain.rfind(" ", 0, first[0] - SNIPPET_CHARACTERS // 4) + 1
    end = start + SNIPPET_CHARACTERS
    head = ELLIPSIS if start else ""
    tail = ELLIPSIS if end < len(plain) else ""
    shown = head + plain[start:end].strip() + tail
    return shown, list(prefix_spans(shown, prefixes))
