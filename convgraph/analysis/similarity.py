"""Two texts compared: how much of them is the same (`similarity`), and what
changed (`text_diff`, as `diff -u` shows it)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

#: Lines of context around each change in the unified diffs, as `diff -u`.
DEFAULT_CONTEXT = 3

#: The units similarity counts: words and single punctuation marks.
_WORDS = re.compile(r"\w+|[^\w\s]")

#: Segment ends for the coarse alignment: line breaks and sentence ends.
_SEGMENT_ENDS = re.compile(r"(?<=[.!?])\s+|\n")

#: Shorter segments ("Yes.") occur in unrelated texts by chance: no anchors.
ANCHOR_WORDS = 4

#: Longer changed stretches are matched in bands of about this size.
BAND_WORDS = 2000


@dataclass(frozen=True)
class PreparedText:
    """A text cut once into segments of words, for a text compared with many."""

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
    """How much of two texts is the same, from 0.0 to 1.0: difflib's `ratio` over
    words and punctuation marks, whitespace ignored; None is an empty text.

    On characters, difflib's `autojunk` junks every letter of a long text and
    without it the match is quadratic, hence words. As `Differ` aligns lines
    before characters, segments (lines, sentences) are aligned first, those
    under `ANCHOR_WORDS` unable to anchor; stretches over `BAND_WORDS` are matched
    in bands, so the cost grows with the texts' length, not its square."""
    if first == second or (not first and not second):
        return 1.0
    return prepared_similarity(PreparedText.of(first), PreparedText.of(second))


def prepared_similarity(first: PreparedText, second: PreparedText) -> float:
    """`similarity` of two texts cut beforehand (`PreparedText.of`)."""
    total = first.count + second.count
    if total == 0:
        return 1.0
    matched = 0
    segments = difflib.SequenceMatcher(
        lambda segment: len(segment) < ANCHOR_WORDS, first.segments, second.segments
    )
    for tag, i1, i2, j1, j2 in segments.get_opcodes():
        if tag == "equal":
            matched += sum(len(words) for words in first.segments[i1:i2])
        elif tag == "replace":
            left = [word for words in first.segments[i1:i2] for word in words]
            right = [word for words in second.segments[j1:j2] for word in words]
            matched += _matched_words(left, right)
    return 2 * matched / total


def _matched_words(left: list[str], right: list[str]) -> int:
    """How many words of `left` difflib matches in `right`, in bands where long."""
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
    """The unified diff of two texts, a line per item (no line ends); empty when they
    are the same; None is an empty text. Raises ValueError for a negative `context`."""
    if context < 0:
        raise ValueError(f"context must be 0 or more lines, not {context}")
    a, b = (first or "").splitlines(), (second or "").splitlines()
    diff = difflib.unified_diff(a, b, first_label, second_label, n=context, lineterm="")
    return list(diff)
