"""Search every node of every tree: hits ranked by BM25, each with a snippet
around the words found, where it lies (tree, node, depth) and whether it is
on the active path, on an abandoned branch, or in a coding agent's subagent
(a sidechain: neither).

The ranking and the snippets are tantivy's (BM25 over the four texts,
weighted alike; its snippet generator) over the index of
`convgraph.search.index`, which is brought up to date before each
search; the depths and branch marks are the model's (`model.marks`, pointer
jumping), kept in the index beside each node's texts. A query reads the
index alone: its cost grows with its matches, not with the file.

A query is text (`text_query`): any string, made NFKC as the texts were,
split at white space; every word must occur in the node, in any of its
texts, as the phrase of its tokens (so `"`, `*`, `NEAR(`, `AND`, `-`, `:`
and `^` are words to find, or nothing where they hold no letter or digit,
never operators). Building it takes time linear in the query's length.
`query_syntax=True` hands the query to tantivy's query language instead
(`AND`, `OR`, `NOT`, `-word`, `"phrases"`, `field:word`), whose errors are
one line.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from convgraph.errors import ConvgraphError, DatabaseError
from convgraph.model.filters import TreeFilter
from convgraph.search.index import (
    ABANDONED,
    FIELDS,
    SIDECHAIN,
    damage_errors,
    open_index,
)
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
#: The characters put around each word found while a snippet is made,
#: taken out again (`Hit.marks` says where they were): private-use code
#: points.
_OPEN, _CLOSE = "\ue000", "\ue001"
#: A word holds a letter or a digit; anything else is no word to search for.
_WORD = re.compile(r"\w")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Hit:
    """One node that matched, as `search` gives it.

    `snippet` is one line of the node's best-matching text around the
    words found (white space runs made one space, `ELLIPSIS` where cut;
    the text as the index holds it, NFKC); `marks` the words found in it,
    as ``[start, end)`` offsets in characters (code points) of `snippet`;
    `fields` the node's texts that match (`prompt`, `response`, `system`,
    `parts`: tool calls and their results, reasoning, code); `score` the
    BM25 relevance (higher is better); `rank` the place, from 1; `depth`
    (0 for a root) and `active` (on the path to the branch last used;
    False: an abandoned branch, or a subagent's node) as the model gives
    them; `sidechain` True for a subagent's node
    (`convgraph.analysis.abandoned`), off the active path but no branch the
    user left.
    """

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
    """The words of a text query as the index's tokens, each word once: a
    word is a phrase of its tokens (one token for most words; a character a
    token in scripts without spaces). A word whose tokens are all too long
    to be indexed is an empty list (it matches nothing).

    Raises
    ------
    ConvgraphError
        The query holds no letter or digit.

    Examples
    --------
    >>> query_words('say "Hi*" NEAR( -- 東京')
    [['say'], ['hi'], ['near'], ['東', '京']]
    """
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
    """The tantivy query that finds `query` as text: every word required,
    in any of the node's texts, as the phrase of its tokens.

    Raises
    ------
    ConvgraphError
        The query holds no letter or digit.
    """
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
    if len(clauses) == 1:
        return clauses[0][1]
    return tantivy.Query.boolean_query(clauses)


def syntax_query(index: tantivy.Index, query: str) -> tantivy.Query:
    """`query` in tantivy's query language over the four texts (every term
    required unless `OR` says otherwise).

    Raises
    ------
    ConvgraphError
        The query is not in the language: one line naming the problem.
    """
    text = normalized(query).replace("\x00", " ")
    if not text.strip():
        raise ConvgraphError("nothing to search for: the query is empty")
    try:
        return index.parse_query(text, list(FIELDS), conjunction_by_default=True)
    except ValueError as error:
        reason = " ".join(str(error).split())
        raise ConvgraphError(
            f"not a query in the search engine's language: {reason[:200]}"
        ) from None


def marked(snippet: str) -> tuple[str, list[list[int]]]:
    """A snippet with its words found between `_OPEN` and `_CLOSE` as plain
    one-line text (zero-width spaces out, white space runs one space) and
    the offsets of the words found; words that touch are one mark (a word
    of a script without spaces).

    Examples
    --------
    >>> marked("a \\ue000big\\ue001\\n cat")
    ('a big cat', [[2, 5]])
    >>> marked("\\ue000東\\ue001\\u200b\\u200b\\ue000京\\ue001")
    ('東京', [[0, 2]])
    """
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
    """The nodes that match `query`, best first.

    Parameters
    ----------
    db
        llm's database, a chat export or an agents' folder (a path or an
        open `Source`), or None for llm's own `logs.db`. Its index is built
        or brought up to date first (`convgraph.search.index`).
    query
        Text: every word must occur (see the module's docstring); with
        `query_syntax`, tantivy's query language.
    limit
        At most this many hits (at most `MAX_LIMIT`; 0 or less: none).
    abandoned
        Only hits that lie off the active path, on abandoned branches (not
        in a subagent).
    query_syntax, fts
        Take `query` in the engine's query language (`fts`: the old name).
    where
        Only hits in the trees this filter keeps (a tree is in when any of
        its nodes matches: `convgraph.model.filters`).
    index_directory
        Where the index lies (`--index DIR`); the cache directory if None.
    progress, notice
        Told how far a build has come, and what the user should know
        (`search_index.open_index`).

    Returns
    -------
    list[Hit]
        Ranked by BM25 over the node's prompt, response, system prompt and
        parts.

    Raises
    ------
    ConvgraphError
        The query holds no word, or is not in the engine's language.
    DatabaseError
        The file cannot be read, or its index cannot be written.
    """
    query_syntax = query_syntax or fts
    # A query that is no query fails before any build: a text query without
    # words, or one the engine's parser refuses (tried on an empty index
    # in memory, of the same schema and analyzer).
    if query_syntax:
        syntax_query(_empty_index(), query)
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
                found = syntax_query if query_syntax else text_query
                wanted = _restricted(index, found(index.index, query), abandoned, where)
                return _hits(index, wanted, limit)
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
    if len(clauses) == 1:
        return query
    return tantivy.Query.boolean_query(clauses)


def _kept_trees(index: Any, where: TreeFilter) -> list[str]:
    """The trees any of whose nodes match `where`: the nodes found by a
    query on the index (model, source, moment), their trees counted by
    tantivy's terms aggregation."""
    import tantivy

    from convgraph.search.documents import moment

    layout = index.index.schema
    conditions = []
    if where.sources:
        conditions.append(
            tantivy.Query.term_set_query(layout, "source", list(where.sources))
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
    searcher = index.searcher
    size = max(1, searcher.num_docs)
    found = searcher.aggregate(
        nodes, {"trees": {"terms": {"field": "tree", "size": size}}}
    )
    return [str(bucket["key"]) for bucket in found["trees"]["buckets"]]


def _hits(index: Any, query: tantivy.Query, limit: int) -> list[Hit]:
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
        hits.append(_hit(rank, score, document, snippets))
    return hits


def _hit(rank: int, score: float, document: Any, snippets: dict[str, Any]) -> Hit:
    fields = []
    best: tuple[int, str, list[list[int]]] | None = None
    for name in FIELDS:
        text = document.get_first(name)
        if not text:
            continue
        snippet = snippets[name].snippet_from_doc(document)
        highlighted = snippet.highlighted()
        if not highlighted:
            continue
        fields.append(name)
        shown, marks = _snippet(text, snippet)
        if best is None or len(marks) > best[0]:
            best = (len(marks), shown, marks)
    if best is None:
        shown, marks = _opening(document)
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


def _opening(document: Any) -> tuple[str, list[list[int]]]:
    """Where no text holds a word of the query (a query of the engine's
    language that only excludes), the start of the node's first text."""
    for name in FIELDS:
        text = document.get_first(name)
        if text:
            plain, _ = marked(text[: SNIPPET_CHARACTERS * 2])
            if len(plain) > SNIPPET_CHARACTERS:
                plain = plain[:SNIPPET_CHARACTERS].rstrip() + ELLIPSIS
            return plain.strip(), []
    return "", []
