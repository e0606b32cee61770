"""Stored text placed into Markdown without changing its structure: the one rule every
Markdown writer of convgraph follows, against forged turns, unclosed fences and HTML.
`markdown_block` keeps a text's own Markdown only where it is tame (fences paired, no
HTML, no script links, no reference definitions; possible headings escaped), else fences
it verbatim; `fenced`, `inline_text` and `inline_code` never let a backtick run or
markup escape."""

from __future__ import annotations

import html
import re

#: Where Markdown (CommonMark) ends a line.
LINE_END = re.compile(r"\r\n?|\n")

#: A line opening a code fence: three or more backticks or tildes after indentation.
_OPENER = re.compile(r"[ \t]*(?:(`{3,})([^`]*)|(~{3,})(.*))")

#: What may come before a block's start: indentation, quote and list markers.
_MARKERS = r"[ \t>*+\-0-9.)]*"

#: A fence after a quote or list marker: the text is not tame.
_STRAY_FENCE = re.compile(_MARKERS + r"(?:```|~~~)")

#: The `#` that could start a heading, at the start of any line.
_HEADING = re.compile(f"^({_MARKERS})#", re.MULTILINE)

#: A possible setext underline; group 1 is what comes before the first `=`/`-`.
_UNDERLINE = re.compile(
    r"^(?=[ \t>*+\-0-9.)=]*[=\-][ \t>*+\-0-9.)=]*$)([ \t>*+0-9.)]*)", re.MULTILINE
)

#: What could open HTML: a tag, comment, declaration, CDATA, PI or autolink.
_HTML = re.compile(r"<[A-Za-z/!?]")

#: A link that runs code when followed, in text decoded as a renderer decodes it.
_SCRIPT_LINK = re.compile(r"\]\(<?(?:javascript|vbscript|data|file):")

#: Markdown of a text's own: heading, list, quote, table, code, link, emphasis.
_MARKDOWN = re.compile(
    r"^[ ]{0,3}(?:\#{1,6}(?:[ \t]|$)|[-+*][ \t]|\d{1,9}[.)][ \t]|>|\|.*\|[ \t]*$"
    r"|```|~~~)"
    r"|`[^`\n]+`|\]\(|\*\*\S|\S\*\*|(?<![\w*])\*[^\s*][^*\n]*(?<=\S)\*(?![\w*])",
    re.MULTILINE,
)

#: What Markdown changes in plain text: joined lines, `_`, `\\`, entities.
_CHANGED = re.compile(
    r"\S[^\n]*\n[ \t]*\S|(?<!\w)__?[^\s_]|\\[!-/:-@\[-`{-~]|&[A-Za-z#][A-Za-z0-9]*;"
)

#: Characters a renderer drops or ignores inside a link's address.
_IGNORED = re.compile(r"[\x00-\x20\x7f-\x9f\\]")

#: What `inline_text` escapes, only where CommonMark or GitHub read markup.
_INLINE_MARKUP = re.compile(
    r"[`*\[\]<~$]"
    r"|\\(?=[!-/:-@\[-`{-~]|$)"
    r"|_(?![^\W_])|(?<![^\W_])_"
    r"|&(?=#?[0-9A-Za-z]+;)"
    r"|^[#>]"
    r"|(?<= )#(?=#*$)"
)

_RUN_OF_BACKTICKS = re.compile(r"`+")


def markdown_lines(text: str) -> list[str]:
    """`text` cut into lines where Markdown cuts them, without the line ends."""
    return LINE_END.split(text.rstrip("\r\n"))


def markdown_block(text: str) -> list[str]:
    """Stored text as Markdown lines that cannot change the document around
    them: its own Markdown where tame, else fenced verbatim."""
    lines = markdown_lines(text)
    tame = _tame(lines) if is_markdown("\n".join(lines)) else None
    return tame if tame is not None else _fence(lines, "")


def is_markdown(text: str) -> bool:
    """Whether `text` reads as Markdown: it holds Markdown of its own, or
    Markdown would show it unchanged (not joined lines, `__init__` as bold, a
    dropped backslash or a decoded entity)."""
    return _MARKDOWN.search(text) is not None or _CHANGED.search(text) is None


def _tame(lines: list[str]) -> list[str] | None:
    """The lines with possible headings escaped, or None where not tame."""
    text = "\n".join(lines)
    if "```" in text or "~~~" in text:
        return _tame_with_fences(lines)
    return None if "]:" in text or _reads_html(text) else _escaped(text).split("\n")


def _reads_html(text: str) -> bool:
    """Whether a renderer could read HTML or a link to a script in `text`."""
    if _HTML.search(text):
        return True
    if "](" in text:
        address = _IGNORED.sub("", html.unescape(text)).lower()
        return _SCRIPT_LINK.search(address) is not None
    return False


def fenced(text: str, info: str | None = None) -> list[str]:
    """`text` verbatim in a backtick fence longer than any run inside, `info`
    after it where it is one word of letters, digits and `+#.-_`."""
    return _fence(markdown_lines(text), _info(info))


def inline_text(text: object) -> str:
    """`text` as one Markdown line shown as written: white space folded, each
    character escaped only where it could be markup."""
    return _INLINE_MARKUP.sub(r"\\\g<0>", " ".join(str(text).split()))


def inline_code(text: object) -> str:
    """`text` as a one-line code span, line ends shown as ␍ and ␊."""
    value = str(text).replace("\r", "\u240d").replace("\n", "\u240a")
    fence = "`" * (_longest_run(value) + 1)
    if value.startswith(("`", " ")) or value.endswith(("`", " ")) or not value:
        value = f" {value} "
    return f"{fence}{value}{fence}"


def cut(text: str, limit: int) -> tuple[str, str | None]:
    """The first `limit` characters of `text`, and a line saying how much was
    left out (None where nothing was)."""
    if len(text) <= limit:
        return text, None
    said = f"*… cut: the first {limit:,} of {len(text):,} characters shown*"
    return text[:limit], said


def _tame_with_fences(lines: list[str]) -> list[str] | None:
    """`_tame` of a text with fence markers: only the marked lines are paired
    one by one, the rest go through the whole-text patterns."""
    # The lines that hold a fence marker: only they can open or close one.
    marked = [i for i, line in enumerate(lines) if "```" in line or "~~~" in line]
    blocks: list[tuple[int, int]] = []
    after = 0  # the first line not inside a fence found so far
    for position, index in enumerate(marked):
        if index < after:
            continue
        if (opener := _OPENER.fullmatch(lines[index])) is None:
            # Fences this reader cannot pair surely.
            if _STRAY_FENCE.match(lines[index]):
                return None
            continue
        if (end := _closing(lines, index, opener, marked[position + 1 :])) is None:
            return None
        blocks.append((index, end))
        after = end + 1
    shown: list[str] = []
    # All but the inside of fences indented under four columns, which are code
    # whatever holds them (deeper ones depend on the lists around).
    checked: list[str] = []
    start = 0
    for first, last in [*blocks, (len(lines), len(lines))]:
        between = "\n".join(lines[start:first])
        if "]:" in between:
            return None
        if first > start:
            checked.append(between)
            shown.extend(_escaped(between).split("\n"))
        fence = lines[first : last + 1]
        if fence and _indent(fence[0]) >= 4:
            checked.extend(fence)
        shown.extend(fence)
        start = last + 1
    return None if _reads_html("\n".join(checked)) else shown


def _closing(
    lines: list[str], start: int, opener: re.Match[str], marked: list[int]
) -> int | None:
    """The index of the line that closes the fence opened at `start` (among the `marked`
    ones), indented as the opener with nothing less indented between; None otherwise."""
    run = opener.group(1) or opener.group(3)
    depth = _indent(lines[start])
    for index in marked:
        bare = lines[index].strip(" \t")
        if len(bare) >= len(run) and bare.count(run[0]) == len(bare):
            if _indent(lines[index]) != depth:
                return None
            # An indented fence (in a list item) must not outlive the item.
            between = lines[start + 1 : index]
            if depth and any(s.strip(" \t") and _indent(s) < depth for s in between):
                return None
            return index
    return None


def _escaped(text: str) -> str:
    """Lines outside fences with a backslash before what could make a heading
    or an underline."""
    if "#" in text:
        text = _HEADING.sub(r"\1\\#", text)
    if "-" in text or "=" in text:
        text = _UNDERLINE.sub(r"\1\\", text)
    return text


def _indent(line: str) -> int:
    """A line's indentation in columns (tabs to the next multiple of four)."""
    bare = line.lstrip(" ")
    if not bare.startswith("\t"):
        return len(line) - len(bare)
    width = 0
    for character in line:
        if character == " ":
            width += 1
        elif character == "\t":
            width += 4 - width % 4
        else:
            break
    return width


def _longest_run(text: str) -> int:
    return max((len(run) for run in _RUN_OF_BACKTICKS.findall(text)), default=0)


def _fence(lines: list[str], info: str) -> list[str]:
    fence = "`" * max(3, _longest_run("\n".join(lines)) + 1)
    return [fence + info, *lines, fence]


_INFO = re.compile(r"[A-Za-z0-9_+#.\-]+")


def _info(info: str | None) -> str:
    """A fence's info string: a language name, or nothing."""
    return info if info and _INFO.fullmatch(info) else ""
