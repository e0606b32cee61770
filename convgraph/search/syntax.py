"""The query language of `--query-syntax` (docs/guide/search.md): tantivy's, every term
required, and `word*` a prefix. tantivy's parser reads `word*` as `word` (a prefix only
ends a phrase), so each `word*` outside quotes is written as a regular expression on the
terms before it parses; no other regular expression is let through."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from convgraph.errors import ConvgraphError
from convgraph.search.text import analyzer, normalized

if TYPE_CHECKING:
    import tantivy

#: A quoted phrase: kept as it is (its own `"..."*` is tantivy's).
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
#: A term ending in `*`: after the start, a space, `(`, `+` or `-`, a field
#: before it or not, before the end, a space, `)` or a boost.
_PREFIX = re.compile(
    r"(?<![^\s(+-])(?:(?P<field>\w+):)?"
    r"(?P<word>[^\s\"()\[\]{}:^~*+\-/\\][^\s\"()\[\]{}:^~*/\\]*)\*(?=$|[\s)^])"
)
#: A word as the index's tokenizer cuts it.
_WORD = re.compile(r"[^\W_]+")


def syntax_query(
    index: tantivy.Index, query: str, fields: Sequence[str]
) -> tuple[tantivy.Query, list[str]]:
    """`query` in the language over `fields`, and the prefixes its `word*`
    asked for (as the index's terms). Raises `ConvgraphError`, one line,
    where the query is not in the language."""
    text = normalized(query).replace("\x00", " ")
    if not text.strip():
        raise ConvgraphError("nothing to search for: the query is empty")
    try:
        parsed = index.parse_query(text, list(fields), conjunction_by_default=True)
        written, prefixes = prefixed(text, fields)
        if prefixes:
            parsed = index.parse_query(
                written, list(fields), conjunction_by_default=True, allow_regexes=True
            )
    except ValueError as error:
        reason = " ".join(str(error).split())
        raise ConvgraphError(
            f"not a query in the search engine's language: {reason[:200]}"
        ) from None
    return parsed, prefixes


def prefixed(text: str, fields: Sequence[str]) -> tuple[str, list[str]]:
    """`text` with each `word*` outside quotes written as tantivy parses a
    prefix, and the prefixes. A word that is several terms (`e-mai*`,
    `東京*`) becomes the phrase of them with its last a prefix."""
    prefixes: list[str] = []
    tokenize = analyzer().analyze

    def written(match: re.Match[str]) -> str:
        field = match["field"]
        tokens = tokenize(match["word"])
        if (field is not None and field not in fields) or not tokens:
            return match[0]  # the parser's own answer
        prefixes.append(tokens[-1])
        before = f"{field}:" if field else ""
        if len(tokens) > 1:
            return f'{before}"{" ".join(tokens)}"*'
        pattern = re.escape(tokens[0]) + ".*"
        names = [field] if field else list(fields)
        either = " OR ".join(f"{name}:/{pattern}/" for name in names)
        return either if len(names) == 1 else f"({either})"

    pieces: list[str] = []
    at = 0
    for quoted in _QUOTED.finditer(text):
        pieces += [_PREFIX.sub(written, text[at : quoted.start()]), quoted[0]]
        at = quoted.end()
    pieces.append(_PREFIX.sub(written, text[at:]))
    return "".join(pieces), prefixes


def prefix_spans(text: str, prefixes: Sequence[str]) -> Iterator[list[int]]:
    """The `[start, end)` of each word of `text` that begins with one of
    `prefixes`, the word folded as the index folds it."""
    if not prefixes:
        return
    wanted = tuple(prefixes)
    tokenize = analyzer().analyze
    for word in _WORD.finditer(text):
        folded = word[0].lower() if word[0].isascii() else "".join(tokenize(word[0]))
        if folded.startswith(wanted):
            yield [word.start(), word.end()]
