"""Stored text placed into a Markdown document without changing its
structure: the one rule every Markdown writer of convgraph follows (the
transcript, `export --format markdown`).

A prompt, an answer, a tool's output or a conversation's name is whatever
someone stored: it may hold `## 2. User` to forge a turn, open a code fence
and never close it (swallowing every turn after it), or carry `<script>` and
`<img onerror=...>` into a file that viewers render as HTML. The rule
(docs/design.md#the-node-contract, "never lets stored text change the
structure of the document it writes"):

- **Text shown as Markdown** (`markdown_block`) keeps its Markdown (lists,
  emphasis, links, code blocks) only where it reads as Markdown
  (`is_markdown`: code or verse without a fence, which Markdown would join
  into one line, is not) and is tame: every code fence it
  opens it closes (a fence is paired when its closing line is the first line
  that could close it, at the opener's own indentation, with nothing less
  indented between them), no other line starts a fence, it holds no `<` that
  could open HTML (a tag, a comment, a declaration, an autolink) outside its
  shallow fences, no link to a `javascript:`, `vbscript:`, `data:` or `file:`
  address (entities and escapes decoded first), and no link reference
  definition. A line that could be a heading (a `#` after nothing but
  indentation, quote and list markers) or a setext underline (`===`,
  `---`) gets a backslash before that character: it reads as written, never
  as a heading. Any other text is shown verbatim in a code fence.
- **Text shown verbatim** (`fenced`): in a fence of backticks longer than any
  run of backticks inside it, so no line of it can close the fence; code,
  tool arguments and outputs are always shown so.
- **Text inside a line** (`inline_text`: a name, a model, a note; and
  `inline_code`: an id) is one line, each character escaped where
  Markdown could read it as markup and only there, or in a code span
  longer than any run of backticks inside it.

Lines are cut where Markdown cuts them (`\\r\\n`, `\\r`, `\\n`), so a carriage
return cannot end a line that the writer thought it was still quoting.
Callers put a blank line before and after every block. Everything here is a
few passes over the text: linear in its length.
"""

from __future__ import annotations

import html
import re

#: Where Markdown (CommonMark) ends a line.
LINE_END = re.compile(r"\r\n?|\n")

#: A line that opens a code fence, with only indentation before it: a run of
#: three or more backticks (whose info string holds no backtick) or tildes.
_OPENER = re.compile(r"[ \t]*(?:(`{3,})([^`]*)|(~{3,})(.*))")

#: The characters that may come before a block's own start on a line: the
#: indentation, quote markers and list markers ("-", "+", "*", "1.", "1)").
_MARKERS = r"[ \t>*+\-0-9.)]*"

#: A fence anywhere but at the start of a line after its indentation (after a
#: quote or list marker): the text is not tame.
_STRAY_FENCE = re.compile(_MARKERS + r"(?:```|~~~)")

#: The `#` that could start a heading, at the start of any line.
_HEADING = re.compile(f"^({_MARKERS})#", re.MULTILINE)

#: A line that could be a setext underline (or a thematic break under a
#: paragraph): only markers, `=` and `-`; group 1 is what comes before the
#: first `=` or `-`.
_UNDERLINE = re.compile(
    r"^(?=[ \t>*+\-0-9.)=]*[=\-][ \t>*+\-0-9.)=]*$)([ \t>*+0-9.)]*)",
    re.MULTILINE,
)

#: What could open HTML: a tag or closing tag, a comment, a declaration,
#: CDATA, a processing instruction, or an autolink (`<scheme:...>`).
_HTML = re.compile(r"<[A-Za-z/!?]")

#: A link to an address that runs code when followed, in text decoded as a
#: renderer decodes a link's destination (entities, escapes, no whitespace).
_SCRIPT_LINK = re.compile(r"\]\(<?(?:javascript|vbscript|data|file):")

#: Markdown of a text's own: a heading, a list item, a quote, a table row,
#: a code fence or span, a link or picture, emphasis with asterisks.
_MARKDOWN = re.compile(
    r"^[ ]{0,3}(?:\#{1,6}(?:[ \t]|$)|[-+*][ \t]|\d{1,9}[.)][ \t]|>|\|.*\|[ \t]*$"
    r"|```|~~~)"
    r"|`[^`\n]+`|\]\(|\*\*\S|\S\*\*|(?<![\w*])\*[^\s*][^*\n]*(?<=\S)\*(?![\w*])",
    re.MULTILINE,
)

#: What Markdown changes in a text without Markdown of its own: two lines
#: in a row (joined into one), an underscore it may read as emphasis, a
#: backslash before punctuation (dropped), an entity (decoded).
_CHANGED = re.compile(
    r"\S[^\n]*\n[ \t]*\S|(?<!\w)__?[^\s_]|\\[!-/:-@\[-`{-~]|&[A-Za-z#][A-Za-z0-9]*;"
)

#: Characters a renderer drops or ignores inside a link's address.
_IGNORED = re.compile(r"[\x00-\x20\x7f-\x9f\\]")

#: The characters escaped in a line of text (`inline_text`), each only
#: where CommonMark (and GitHub's additions: strikethrough, math) could read
#: it as markup: always the code, emphasis, link, HTML, strikethrough and
#: math characters; a backslash before punctuation or at the end; `_` at
#: a word's edge (inside a word it makes no emphasis); `&` that begins an
#: entity; `#` and `>` at the start, and a heading's closing `#`s at the
#: end. Parentheses, `!`, `|` and the rest read as themselves there.
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
    """`text` cut into lines where Markdown cuts them, without the line ends
    that close it.
    """
    return LINE_END.split(text.rstrip("\r\n"))


def markdown_block(text: str) -> list[str]:
    """Stored text as lines of Markdown that cannot change the structure of
    the document around them: the text's own Markdown where it is tame (its
    possible headings escaped), else the text verbatim in a fence (see the
    module's rule). Put a blank line before and after it.
    """
    lines = markdown_lines(text)
    tame = _tame(lines) if is_markdown("\n".join(lines)) else None
    return tame if tame is not None else _fence(lines, "")


def is_markdown(text: str) -> bool:
    """Whether `text` reads as Markdown: it holds Markdown of its own (a
    heading, a list, a quote, a table, a code fence or span, a link,
    emphasis with asterisks), or Markdown would show it as it is. Text
    without Markdown of its own that Markdown would change (join its lines,
    as code or verse without a fence; read `__init__` as bold; drop a
    backslash; decode an entity) is not: it is shown verbatim.
    """
    return _MARKDOWN.search(text) is not None or _CHANGED.search(text) is None


def _tame(lines: list[str]) -> list[str] | None:
    """The lines with their possible headings escaped, or None where the
    text is not tame (the module's rule)."""
    text = "\n".join(lines)
    if "```" in text or "~~~" in text:
        return _tame_with_fences(lines)
    # No fence: the whole text through the patterns at once.
    if "]:" in text or _reads_html(text):
        return None
    return _escaped(text).split("\n")


def _reads_html(text: str) -> bool:
    """Whether a renderer could read HTML or a link to a script in `text`."""
    if _HTML.search(text):
        return True
    if "](" in text:
        address = _IGNORED.sub("", html.unescape(text)).lower()
        return _SCRIPT_LINK.search(address) is not None
    return False


def fenced(text: str, info: str | None = None) -> list[str]:
    """`text` verbatim in a code fence of backticks longer than any run of
    backticks inside it, with `info` (a language: kept only if it is one
    word of letters, digits and `+#.-_`) after the opening fence.
    """
    return _fence(markdown_lines(text), _info(info))


def inline_text(text: object) -> str:
    """`text` as one line of Markdown that shows it as written: white space
    runs as one space, every character escaped where it could be markup
    (`_INLINE_MARKUP`), and only there, so that a heading reads `count()`
    rather than `count\\(\\)`.
    """
    return _INLINE_MARKUP.sub(r"\\\g<0>", " ".join(str(text).split()))


def inline_code(text: object) -> str:
    """`text` as a code span on one line: backticks around it longer than
    any run inside it, line ends shown as the symbols ␍ and ␊.
    """
    value = str(text).replace("\r", "\u240d").replace("\n", "\u240a")
    fence = "`" * (_longest_run(value) + 1)
    if value.startswith(("`", " ")) or value.endswith(("`", " ")) or not value:
        value = f" {value} "
    return f"{fence}{value}{fence}"


def cut(text: str, limit: int) -> tuple[str, str | None]:
    """The first `limit` characters of `text`, and a line saying how much was
    left out (None where nothing was).
    """
    if len(text) <= limit:
        return text, None
    return text[
        :limit
    ], f"*… cut: the first {limit:,} of {len(text):,} characters shown*"


# -- the rule ------------------------------------------------------------------


def _tame_with_fences(lines: list[str]) -> list[str] | None:
    """`_tame` of a text that holds fence markers: only the lines that hold
    one are looked at one by one (to pair the fences); the lines between
    fences go through the whole-text patterns."""
    # The lines that hold a fence marker: only they can open or close one.
    marked = [i for i, line in enumerate(lines) if "```" in line or "~~~" in line]
    # Each fence as the range of its lines, opener to closer.
    blocks: list[tuple[int, int]] = []
    after = 0  # the first line not inside a fence found so far
    for position, index in enumerate(marked):
        if index < after:
            continue
        opener = _OPENER.fullmatch(lines[index])
        if opener is None:
            # A fence marker after a quote or list marker, or a closer
            # with nothing open: fences this reader cannot pair surely.
            if _STRAY_FENCE.match(lines[index]):
                return None
            continue
        end = _closing(lines, index, opener, marked[position + 1 :])
        if end is None:
            return None
        blocks.append((index, end))
        after = end + 1
    shown: list[str] = []
    # The text in which HTML and links could be read: all of it but the
    # inside of fences indented less than four columns, which are code
    # whatever holds them (deeper fences may be an indented code block or
    # a paragraph's continuation instead, depending on the lists around).
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
    """The index of the line that closes the fence opened at `start`: the
    first line after it that could close it (of the `marked` ones, which
    hold a fence marker), which must be indented as the opener is, with no
    line less indented between them; None otherwise."""
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
    """Lines outside fences with a backslash before what could make one a
    heading: its first `#` after markers, or the first `=` or `-` of a line
    of nothing else (an underline)."""
    if "#" in text:
        text = _HEADING.sub(r"\1\\#", text)
    if "-" in text or "=" in text:
        text = _UNDERLINE.sub(r"\1\\", text)
    return text


def _indent(line: str) -> int:
    """The columns of a line's indentation (a tab to the next multiple of
    four, as CommonMark counts it)."""
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
    if info and _INFO.fullmatch(info):
        return info
    return ""
