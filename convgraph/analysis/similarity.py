"""Two texts compared: how much of them is the same, and what changed.

`similarity` is difflib's `SequenceMatcher.ratio` over words and punctuation
marks (whitespace ignored), computed the way difflib's own `Differ` compares
text: lines and sentences are aligned first, then the words of each changed
stretch. Its cost grows with the length of the texts, not its square.
`text_diff` is the unified diff of two texts, as `diff -u` shows it. The
branch diff (`convgraph.analysis.branch_diff`) and the comparison of
alternatives (`convgraph.analysis.compare`) measure every pair of texts here.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

#: Lines of context around each change in the unified diffs, as `diff -u`.
DEFAULT_CONTEXT = 3

#: Words (runs of letters, digits and underscores) and single punctuation
#: marks: the units that similarity counts.
_WORDS = re.compile(r"\w+|[^\w\s]")

#: Where a text is cut into segments for the first, coarse alignment: line
#: breaks, and the spaces after a full stop, question or exclamation mark.
_SEGMENT_ENDS = re.compile(r"(?<=[.!?])\s+|\n")

#: Segments of fewer words and marks than this (a "Yes." or a lone "```")
#: occur in unrelated texts by chance, so they may extend an alignment but
#: not anchor one.
ANCHOR_WORDS = 4

#: A changed stretch longer than this many words on both sides is matched
#: in proportional bands of about this size, which keeps the cost linear in
#: the length of the texts.
BAND_WORDS = 2000


@dataclass(frozen=True)
class PreparedText:
    """A text cut once into segments of words, so that a response compared
    with many siblings is cut only once."""

    segments: list[tuple[str, ...]]
    count: int

    @classmethod
    def of(cls, text: str | None) -> PreparedText:
        """`text` cut into segments (None as an empty text)."""
        segments = [
            words
            for piece in _SEGMENT_ENDS.split(text or "")
            if (words := tuple(_WORDS.findall(piece)))
        ]
        return cls(segments, sum(len(words) for words in segments))


def similarity(first: str | None, second: str | None) -> float:
    """How much of two texts is the same, from 0.0 (nothing) to 1.0.

    Twice the number of matching words and punctuation marks over the number
    of both texts' words and marks: difflib's `ratio`, on words rather than
    characters, with whitespace ignored. None counts as an empty text; two
    empty texts are the same (1.0).

    How, and why. On characters, difflib's `autojunk` heuristic finds every
    letter of a long text too common to anchor a match (two 100 KB texts
    that differ in one line in twenty score about 0.01), and without it the
    match is quadratic (seconds for 20 KB). On words, `autojunk` only keeps
    the commonest words (over 1% of a long text) from anchoring a match;
    they still extend one. The texts are first aligned by lines and
    sentences, as difflib's `Differ` aligns lines before characters, so
    that words are matched only where segments changed; segments under
    `ANCHOR_WORDS` words cannot anchor that alignment (a "Yes." in two
    unrelated answers is no evidence that they correspond). Changed
    stretches longer than `BAND_WORDS` words on both sides are matched band
    by band, so that the cost grows with the length of the texts, not its
    square; on the texts of the benchmark this stays within 0.025 of
    difflib's ratio over the whole word sequences. `quick_ratio` is not
    used: it is only an upper bound, and a loose one on natural language
    (two unrelated 100 KB texts of Python's documentation have a word
    `quick_ratio` of 0.75 and a ratio of 0.13).

    Examples
    --------
    >>> similarity("one two three four", "one two three five")
    0.75
    >>> similarity("Yes", "Yes.")
    0.6666666666666666
    """
    if first == second or (not first and not second):
        return 1.0
    return prepared_similarity(PreparedText.of(first), PreparedText.of(second))


def _too_short(segment: tuple[str, ...]) -> bool:
    return len(segment) < ANCHOR_WORDS


def prepared_similarity(first: PreparedText, second: PreparedText) -> float:
    """`similarity` of two texts cut once beforehand (`PreparedText.of`),
    for a text compared with many others.

    Examples
    --------
    >>> prepared_similarity(PreparedText.of("a b"), PreparedText.of("a c"))
    0.5
    """
    total = first.count + second.count
    if total == 0:
        return 1.0
    matched = 0
    segments = difflib.SequenceMatcher(_too_short, first.segments, second.segments)
    for tag, i1, i2, j1, j2 in segments.get_opcodes():
        if tag == "equal":
            matched += sum(len(words) for words in first.segments[i1:i2])
        elif tag == "replace":
            left = [word for words in first.segments[i1:i2] for word in words]
            right = [word for words in second.segments[j1:j2] for word in words]
            matched += _matched_words(left, right)
    return 2 * matched / total


def _matched_words(left: list[str], right: list[str]) -> int:
    """How many words of `left` difflib matches in `right`: at once for
    ordinary lengths, in proportional bands for very long stretches."""
    bands = max(1, min(len(left), len(right)) // BAND_WORDS)
    matched = 0
    for band in range(bands):
        words = difflib.SequenceMatcher(
            None,
            left[len(left) * band // bands : len(left) * (band + 1) // bands],
            right[len(right) * band // bands : len(right) * (band + 1) // bands],
        )
        matched += sum(block.size for block in words.get_matching_blocks())
    return matched


def text_diff(
    first: str | None,
    second: str | None,
    first_label: str = "a",
    second_label: str = "b",
    context: int = DEFAULT_CONTEXT,
) -> list[str]:
    """The unified diff of two texts, one line per item (no line ends).

    Empty when the texts are the same. None counts as an empty text.

    Examples
    --------
    >>> for line in text_diff("one\\ntwo", "one\\nthree", context=1):
    ...     print(line)
    --- a
    +++ b
    @@ -1,2 +1,2 @@
     one
    -two
    +three
    """
    if context < 0:
        raise ValueError(f"context must be 0 or more lines, not {context}")
    return list(
        difflib.unified_diff(
            (first or "").splitlines(),
            (second or "").splitlines(),
            first_label,
            second_label,
            n=context,
            lineterm="",
        )
    )
