"""The search index's text rules, the same for texts and queries: NFKC, a script
without spaces cut into characters (a word of them is a phrase), tantivy's simple
tokenizer lower-cased and folded to ASCII; and the searchable text of a node's parts."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from convgraph import parts as kinds

if TYPE_CHECKING:
    import tantivy

#: Put on each side of a character of a script without spaces.
ZERO_WIDTH_SPACE = "\u200b"
#: Tokens longer than this (base64, hashes) are not indexed, nor searched.
LONGEST_TOKEN = 80

#: Scripts written without spaces: Thai, Lao, Myanmar, Khmer, Hangul, CJK
#: ideographs, kana (with the prolonged sound mark), the marks 々 〆 〇 〻.
_UNSPACED = re.compile(
    "([\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3005-\u3007\u303b\u303c"
    "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
    "\uf900-\ufaff\U00020000-\U0003134f])"
)
#: A lone surrogate: `surrogateescape`'s stand-in for a byte that was not
#: UTF-8 (U+DC80 to U+DCFF), or any other.
_SURROGATE = re.compile("[\ud800-\udfff]")


def normalized(text: str) -> str:
    """`text` as the index holds it: NFKC, a surrogate escape read as
    Latin-1, any other lone surrogate U+FFFD, `spaced`."""
    if text.isascii():
        return text
    if _SURROGATE.search(text):
        text = _SURROGATE.sub(_unescaped, text)
    return spaced(unicodedata.normalize("NFKC", text))


def _unescaped(match: re.Match[str]) -> str:
    code = ord(match[0])
    return chr(code - 0xDC00) if 0xDC80 <= code <= 0xDCFF else "\ufffd"


def spaced(text: str) -> str:
    """`text` with a zero-width space on each side of every character of a
    script written without spaces."""
    if text.isascii():
        return text
    return _UNSPACED.sub(ZERO_WIDTH_SPACE + "\\1" + ZERO_WIDTH_SPACE, text)


def parts_text(
    parts: Iterable[dict[str, Any]] | None, said: Sequence[str | None] = ()
) -> str | None:
    """The searchable text of a node's parts beyond its prompt and answer
    (reasoning, tool calls and results, code and its output, attachments'
    and fragments' names, a text none of `said` holds, as a compaction's
    summary), one a line; None where there is none."""
    lines: list[str] = []
    for part in parts or ():
        kind = part.get("type")
        if kind in (kinds.REASONING, kinds.CODE, kinds.CODE_OUTPUT):
            values = [part.get("text")]
        elif kind == kinds.TOOL_CALL:
            arguments = part.get("arguments")
            if arguments is not None and not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False, default=str)
            values = [part.get("name"), arguments]
        elif kind == kinds.TOOL_RESULT:
            values = [part.get("name"), part.get("output"), part.get("error")]
        elif kind in (kinds.ATTACHMENT, kinds.FRAGMENT):
            values = [part.get("name"), part.get("url")]
        elif kind == kinds.TEXT and all(
            str(part.get("text")) not in (s or "") for s in said
        ):
            values = [part.get("text")]
        else:
            continue
        words = " ".join(str(value) for value in values if value)
        if words:
            lines.append(words)
    return "\n".join(lines) or None


def analyzer() -> tantivy.TextAnalyzer:
    """The analyzer of texts and queries alike."""
    import tantivy

    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(LONGEST_TOKEN))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .build()
    )
