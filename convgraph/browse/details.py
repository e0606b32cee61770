"""The browser's details pane: the node under the cursor (header, prompts, run
and response), or a view (diff, comparison, keys, an error, an answer) until
the cursor moves. Stored text passes `terminal_text` line by line first."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len, chop_cells
from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.markdown import Markdown
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from convgraph import parts as kinds
from convgraph.contract import INTEGER_ATTRIBUTES
from convgraph.present.local_time import person_time
from convgraph.present.markdown_text import cut, fenced, inline_text
from convgraph.text import counted, excerpt, terminal_text

if TYPE_CHECKING:
    import networkx as nx

    from convgraph.analysis.branch_diff import BranchDiff
    from convgraph.analysis.compare import Comparison

MARKDOWN, PLAIN = "markdown", "plain"

#: A block of the pane's body: its kind and its text.
Block = tuple[str, str]

#: The characters of one part's text shown (a tool's output may be huge).
PART_TEXT_LIMIT = 20_000


class DetailsPane(VerticalScroll):
    """The header line and the body of what is shown: `title`, `source` (the
    blocks joined) and `reasoning_open`."""

    DEFAULT_CSS = """
    DetailsPane { padding: 0 1; }
    DetailsPane #details-title { text-style: bold; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.title = ""
        self.source = ""
        self.reasoning_open = False

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static(id="details-title", markup=False)
        # Rich's Markdown in one widget: Textual's widget per block lagged.
        yield Static(id="details-body")

    def show(self, title: str, body: str | Sequence[Block]) -> None:
        """Show a title line and a body, from the top."""
        blocks = [(MARKDOWN, body)] if isinstance(body, str) else list(body)
        self.title = title
        self.source = "\n\n".join(text for _, text in blocks)
        self.query_one("#details-title", Static).update(title)
        self.query_one("#details-body", Static).update(rendered(blocks))
        self.scroll_home(animate=False)

    def show_node(self, graph: nx.DiGraph[str], node: str) -> None:
        self.show(*node_view(graph, node, self.reasoning_open))


def rendered(blocks: Sequence[Block]) -> RenderableType:
    """The blocks as Rich renders them, a blank line between two."""
    shown: list[RenderableType] = []
    for kind, text in blocks:
        if shown:
            shown.append(Text(""))
        if kind == MARKDOWN:
            shown.append(Markdown(text, code_theme="ansi_dark", hyperlinks=False))
        else:
            shown.append(Lines(text))
    return Group(*shown)


class Lines:
    """Plain text as a Rich renderable: a line wider than the pane goes on in
    lines marked `CONTINUED`, so no piece reads as a line of its own."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __rich_console__(
        self, console: Console, options: ConsoleOptions
    ) -> Iterator[Segment]:
        width = max(options.max_width, len(CONTINUED) + 1)
        for line in self.text.split("\n"):
            first = chop_cells(line, width)[0] if line else ""
            yield Segment(first)
            yield Segment.line()
            rest = line[len(first) :]
            for piece in chop_cells(rest, width - len(CONTINUED)) if rest else []:
                yield Segment(CONTINUED, Style(dim=True))
                yield Segment(piece)
                yield Segment.line()

    def __rich_measure__(
        self, console: Console, options: ConsoleOptions
    ) -> Measurement:
        widest = max((cell_len(line) for line in self.text.split("\n")), default=0)
        return Measurement(min(widest, len(CONTINUED) + 1), widest)


CONTINUED = "↪ "


@cache
def _parser() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt().enable("strikethrough").enable("table")


#: Tokens only Markdown has: a text that holds one was written as Markdown.
_MARKDOWN_BLOCKS = frozenset(
    "heading_open fence bullet_list_open ordered_list_open blockquote_open"  # noqa: SIM905 (words)
    " table_open".split()
)
_MARKDOWN_INLINE = frozenset({"code_inline", "link_open", "s_open"})


def markdown_kind(text: str) -> str:
    """Whether `text` shows as Markdown (`MARKDOWN`) or as it is (`PLAIN`):
    text with Markdown of its own is Markdown; text without that Markdown
    would change (joined lines, `__init__` bold) is shown as it is."""
    kind = MARKDOWN
    for token in _parser().parse(text):
        if token.type in _MARKDOWN_BLOCKS:
            return MARKDOWN
        if token.type == "inline":
            children = token.children or []
            for child in children:
                if child.type in _MARKDOWN_INLINE or (
                    child.type in ("strong_open", "em_open")
                    and child.markup.startswith("*")
                ):
                    return MARKDOWN
            said = "".join(child.content for child in children)
            if any(child.type != "text" for child in children) or (
                said != token.content
            ):
                kind = PLAIN
        elif token.type not in ("paragraph_open", "paragraph_close"):
            kind = PLAIN
    return kind


def safe(text: str | None) -> str:
    """Stored text for the pane, line by line, so Markdown line breaks stay."""
    if not text:
        return ""
    return "\n".join(terminal_text(line) for line in text.expandtabs(4).split("\n"))


def transcript_view(markdown: str) -> str:
    """A Markdown transcript as the pane shows it: Rich drops HTML, so each
    `<details>` reasoning block becomes a ∴ line with its text quoted
    beneath (outside code fences only)."""
    shown: list[str] = []
    fence = ""  # the open fence's backticks or tildes, "" outside one
    quoting = False
    for line in markdown.split("\n"):
        bare = line.strip()
        if fence:
            if bare.startswith(fence) and not bare.strip(fence[0]):
                fence = ""
        elif bare[:3] in ("```", "~~~"):
            fence = bare[: len(bare) - len(bare.lstrip(bare[0]))]
        elif not quoting and line == "<details>":
            quoting = True
            continue
        elif quoting and line == "</details>":
            quoting = False
            while shown and shown[-1] in (">", ""):
                shown.pop()  # the blank line the HTML block needed
            continue
        elif quoting and line.startswith("<summary>") and line.endswith("</summary>"):
            summary = line[len("<summary>") : -len("</summary>")]
            shown.append(f"∴ *{summary[:1].lower()}{summary[1:]}*")
            shown.append("")
            continue
        if quoting and not line and shown[-1] == "":
            continue  # the blank line after the summary: it has its own
        if quoting:
            shown.append(f"> {line}" if line else ">")
        else:
            shown.append(line)
    return "\n".join(shown)


def node_view(
    graph: nx.DiGraph[str], node: str, reasoning_open: bool = False
) -> tuple[str, list[Block]]:
    """The title and the body's blocks that show one node."""
    data = graph.nodes[node]
    usage = ", ".join(
        f"{key.replace('_', ' ')} {data[key]}"
        for key in INTEGER_ATTRIBUTES
        if data.get(key) is not None
    )
    facts = [
        f"**model** {safe(data.get('model')) or '?'}",
        f"**time** {safe(person_time(data.get('datetime_utc'))) or '?'}",
    ]
    if usage:
        facts.append(usage)
    if data.get("preferred"):
        facts.append("★ preferred")
    if data.get("tool_calls"):
        facts.append(
            f"{counted(data['tool_calls'], 'tool call')}: {_literal(data.get('tools') or '?')}"
        )
    body: list[Block] = [(MARKDOWN, "  \n".join(facts))]
    if data.get("note"):
        body.append((MARKDOWN, f"**Note:** {safe(data['note'])}"))
    if data.get("system"):
        body += [(MARKDOWN, "### System"), _quoted(data["system"])]
    body += [(MARKDOWN, "### Prompt"), _quoted(data.get("prompt"))]
    if run := run_blocks(data.get("parts"), reasoning_open):
        body += [(MARKDOWN, "### Run"), *run]
    body.append((MARKDOWN, "### Response"))
    response = safe(data.get("response"))
    body.append((markdown_kind(response), response) if response else _NONE)
    return terminal_text(node), body


_NONE: Block = (MARKDOWN, "*(none)*")


def _quoted(text: str | None) -> Block:
    """A prompt as a block quote, or as it is where Markdown would change it."""
    if not text:
        return _NONE
    shown = safe(text)
    if markdown_kind(shown) == PLAIN:
        return PLAIN, shown
    return MARKDOWN, "\n".join("> " + line for line in shown.split("\n"))


def run_blocks(
    parts: list[kinds.Part] | None, reasoning_open: bool = False
) -> list[Block]:
    """The run of a node part by part: tool calls and results, code and
    output, attachments, words between calls, reasoning folded unless
    `reasoning_open`. Nothing for a node that is only prompt and response."""
    if not parts or all(part.get("type") == kinds.TEXT for part in parts):
        return []
    blocks: list[Block] = []
    for index, part in enumerate(parts):
        kind = part.get("type")
        name = _literal(part.get("name") or "?")
        if kind == kinds.TEXT and part.get("role") != kinds.USER:
            if any(later.get("type") != kinds.TEXT for later in parts[index + 1 :]):
                # Words between two calls: the answer's own are the response.
                said = _literal(excerpt(part.get("text"), 100))
                blocks.append((MARKDOWN, f"*said:* {said}"))
        elif kind == kinds.REASONING:
            blocks += _reasoning(part, reasoning_open)
        elif kind == kinds.TOOL_CALL:
            arguments = _fenced(_json(part.get("arguments")), "json")
            blocks.append((MARKDOWN, f"↳ **{name}** called with\n{arguments}"))
        elif kind == kinds.TOOL_RESULT:
            if part.get("error"):
                error = _literal(part["error"])
                blocks.append((MARKDOWN, f"← **{name}** failed: {error}"))
            output = part.get("output")
            if output or not part.get("error"):
                text = output if isinstance(output, str) else _json(output)
                blocks.append((MARKDOWN, f"← **{name}** gave back\n{_fenced(text)}"))
        elif kind == kinds.CODE:
            code = _fenced(part.get("text"), part.get("language"))
            language = part.get("language")
            said = f" ({_literal(language)})" if language else ""
            blocks.append((MARKDOWN, f"↳ **code** ran{said}\n{code}"))
        elif kind == kinds.CODE_OUTPUT:
            blocks.append((MARKDOWN, f"← **output**\n{_fenced(part.get('text'))}"))
        elif kind in (kinds.ATTACHMENT, kinds.FRAGMENT):
            blocks.append((MARKDOWN, _attached(part)))
    return blocks


def _reasoning(part: kinds.Part, opened: bool) -> list[Block]:
    """The model's reasoning: one folded line, or the line and the text."""
    thought = str(part.get("text") or "")
    if part.get("redacted") and not thought:
        return [(MARKDOWN, "▸ *reasoning, kept back by the provider*")]
    if not opened:
        size = counted(len(thought), "character")
        return [(MARKDOWN, f"▸ *reasoning, {size} (e: show)*")]
    shown = _cut(thought)
    if markdown_kind(shown) == PLAIN:
        return [(MARKDOWN, "▾ *reasoning (e: fold)*"), (PLAIN, shown)]
    quoted = "\n".join("> " + line for line in shown.split("\n"))
    return [(MARKDOWN, "▾ *reasoning (e: fold)*\n\n" + quoted)]


def _attached(part: kinds.Part) -> str:
    kind = "attachment" if part.get("type") == kinds.ATTACHMENT else "fragment"
    what = part.get("name") or part.get("url") or "?"
    about = [str(part["mime"])] if part.get("mime") else []
    if isinstance(part.get("size"), int):
        about.append(counted(part["size"], "byte"))
    extra = f" ({', '.join(about)})" if about else ""
    return f"*{kind}:* {_literal(excerpt(str(what), 100) + extra)}"


def _literal(value: object) -> str:
    """Stored text for a line of Markdown: safe, one line, not rendered."""
    return inline_text(safe(str(value)))


def _json(value: Any) -> str:
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        value = parsed
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def _cut(text: str) -> str:
    """Stored text made safe, cut to `PART_TEXT_LIMIT` characters with a line."""
    kept, rest = cut(text, PART_TEXT_LIMIT)
    return safe(kept) if rest is None else safe(kept) + "\n\n" + rest


def _fenced(text: str | None, language: object = None) -> str:
    """Text as a code block nothing in it can end, cut to `PART_TEXT_LIMIT`."""
    kept, rest = cut(text or "", PART_TEXT_LIMIT)
    block = "\n".join(fenced(safe(kept), str(language or "")))
    return block if rest is None else block + "\n\n" + rest


def diff_view(result: BranchDiff) -> tuple[str, str]:
    """The title and body of a branch diff."""
    title = f"diff {result.node_a} → {result.node_b}"
    fork = result.fork_point or "the start (they differ from the first turn)"
    body = [
        f"**fork point** {fork}  \n"
        f"**a** {' → '.join(result.a) or '(the fork point)'}  \n"
        f"**b** {' → '.join(result.b) or '(the fork point)'}"
    ]
    for step in result.steps:
        a = step.a.id if step.a else "(none)"
        b = step.b.id if step.b else "(none)"
        lines = [
            f"### Step {step.step}: {a} / {b}",
            f"same prompt: {'yes' if step.same_prompt else 'no'}, "
            f"response similarity {step.response_similarity:.2f}",
        ]
        if changes := step.prompt_diff + step.response_diff:
            lines.append("```diff\n" + safe("\n".join(changes)) + "\n```")
        body.append("\n\n".join(lines))
    return terminal_text(title), "\n\n".join(body)


def compare_view(result: Comparison) -> tuple[str, str]:
    """The title and body of the alternatives below one node."""
    title = (
        "compare the alternatives at the start"
        if result.node is None
        else f"compare the answers below {result.node}"
    )
    if not result.alternatives:
        return terminal_text(title), "*No alternatives: the node has no children.*"
    ids = result.ids
    header = "| id | model | out tokens | length | subtree | " + " | ".join(
        f"~{index + 1}" for index in range(len(ids))
    )
    rows = [header + " |", "|" + "---|" * (5 + len(ids))]
    for alternative in result.alternatives:
        cells = [
            alternative.id,
            safe(alternative.model) or "?",
            _number(alternative.output_tokens),
            _number(alternative.response_length),
            str(alternative.subtree_size),
        ]
        similar = {**alternative.similarity, alternative.id: 1.0}
        cells += [f"{similar[other]:.2f}" for other in ids]
        rows.append("| " + " | ".join(cells) + " |")
    legend = ", ".join(f"~{index + 1} = {node}" for index, node in enumerate(ids))
    return terminal_text(title), "\n".join(rows) + f"\n\nSimilarity columns: {legend}"


def _number(value: int | None) -> str:
    return "" if value is None else str(value)
