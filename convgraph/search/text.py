"""The text rules of the search index, the same for what is indexed and
what is searched: text made NFKC (half-width katakana, ligatures and
full-width Latin read as their plain forms; a byte that was not UTF-8, as
Python escapes it from the command line, read as Latin-1), every character
of a script written without spaces (Chinese, Japanese with its iteration
marks, Korean's syllables, Thai and its neighbours) put between zero-width
spaces so that it is a token of its own and a word of them is a phrase of
its characters, and tantivy's `simple` tokenizer (runs of letters and
digits), lower-cased and folded to ASCII ("cafe" finds "café"); and the
searchable text of a node's parts (`parts_text`).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from convgraph.parts import (
    ATTACHMENT,
    CODE,
    CODE_OUTPUT,
    FRAGMENT,
    REASONING,
    TOOL_CALL,
    TOOL_RESULT,
)

if TYPE_CHECKING:
    import tantivy

#: Put on each side of a character of a script without spaces: a separator
#: to the tokenizer, invisible where it shows.
ZERO_WIDTH_SPACE = "\u200b"
#: Tokens longer than this (base64, hashes) are not indexed, nor searched.
LONGEST_TOKEN = 80

#: Characters of scripts written without spaces between words: Thai, Lao,
#: Myanmar, Khmer, Hangul syllables, CJK ideographs and their extensions,
#: kana (with the prolonged sound mark), the iteration marks 々 〆 〇 〻.
_UNSPACED = re.compile(
    "([\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3005-\u3007\u303b\u303c"
    "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
    "\uf900-\ufaff\U00020000-\U0003134f])"
)
#: A lone surrogate: `surrogateescape`'s stand-in for a byte that was not
#: UTF-8 (U+DC80 to U+DCFF), or any other that no UTF-8 text can hold.
_SURROGATE = re.compile("[\ud800-\udfff]")


def normalized(text: str) -> str:
    """`text` as the index holds it: NFKC, a byte that was not UTF-8 (a
    surrogate escape, as Python reads the command line) read as Latin-1,
    any other lone surrogate U+FFFD, and every character of a script
    without spaces between zero-width spaces (`spaced`)."""
    if text.isascii():
        return text  # most text: nothing to do
    if _SURROGATE.search(text):
        text = _SURROGATE.sub(_unescaped, text)
    return spaced(unicodedata.normalize("NFKC", text))


def _unescaped(match: re.Match[str]) -> str:
    code = ord(match[0])
    return chr(code - 0xDC00) if 0xDC80 <= code <= 0xDCFF else "\ufffd"


def spaced(text: str) -> str:
    """`text` with a zero-width space on each side of every character of a
    script written without spaces, so that each is a token of its own."""
    if text.isascii():
        return text
    return _UNSPACED.sub(ZERO_WIDTH_SPACE + "\\1" + ZERO_WIDTH_SPACE, text)


def parts_text(parts: Iterable[dict[str, Any]] | None) -> str | None:
    """The searchable text of a node's parts beyond its prompt and answer:
    reasoning, each tool call's name and arguments, each result's output
    and error, code and what it printed, attachments' and fragments' names,
    one a line; None where there is none."""
    lines: list[str] = []
    for part in parts or ():
        kind = part.get("type")
        if kind in (REASONING, CODE, CODE_OUTPUT):
            values = [part.get("text")]
        elif kind == TOOL_CALL:
            arguments = part.get("arguments")
            if arguments is not None and not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False, default=str)
            values = [part.get("name"), arguments]
        elif kind == TOOL_RESULT:
            values = [part.get("name"), part.get("output"), part.get("error")]
        elif kind in (ATTACHMENT, FRAGMENT):
            values = [part.get("name"), part.get("url")]
        else:
            continue  # text parts are the prompt and the response already
        words = " ".join(str(value) for value in values if value)
        if words:
            lines.append(words)
    return "\n".join(lines) or None


def analyzer() -> tantivy.TextAnalyzer:
    """The analyzer of the texts, in the index and in a query alike: runs of
    letters and digits, long ones dropped, lower-cased, folded to ASCII."""
    import tantivy

    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(LONGEST_TOKEN))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .build()
    )
