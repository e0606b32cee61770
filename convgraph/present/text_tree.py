"""A conversation tree as text, drawn with box-drawing characters.

The `print_tree` of docs/design.md#the-twelve-helpers: one line per node, its
id and an excerpt of its prompt, children under their parent in log order.
Indentation marks branching, not turns: a node that is its parent's only child
is drawn in its parent's column, so a linear run reads as a list and a
100,000-turn chain draws in 100,000 short lines (indenting every turn would
make the drawing quadratic in the depth). `indent_chains=True` indents every
child, as the original notes' `print_tree` did. The walk keeps its own stack,
so depth never touches the recursion limit.

A node is one step of the user's (docs/design.md#the-node-contract): the
tool calls and the code its run made are drawn beneath its line, one
`↳ name(arguments) → result` line each, cut to the width; reasoning is a
mark (`∴`) on the node's line. The roots of one tree are alternatives to each
other (docs/design.md#depth-roots-and-branching), so several roots hang from
one line for the conversation's start, as the children of a node hang from
it. Ids, prompts, arguments and results are shown through `terminal_text`: a
stored escape sequence prints as symbols, never as a command to the
terminal.

One walk (`_lines`) draws a DiGraph and a tree's rows alike: a whole forest
is drawn from its table a batch of trees at a time (`forest_drawings`, as
`convgraph tree` of every conversation does), without building a DiGraph
per tree; `tests/test_tree_from_table.py` holds the two to the same text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from convgraph.parts import (
    CODE,
    CODE_OUTPUT,
    REASONING,
    TOOL_CALL,
    TOOL_RESULT,
    Part,
)
from convgraph.text import EXCERPT_WIDTH, cell_width, counted, excerpt, terminal_text

if TYPE_CHECKING:
    import networkx as nx

    from convgraph.model.forest import Forest
    from convgraph.sources.source import ProgressCallback

#: What a line of the drawing shows: a node, a call of its run, or the start
#: of a conversation whose roots are alternatives.
NODE, CALL, START = "node", "call", "start"

#: The mark after a node whose run holds the model's reasoning.
REASONING_MARK = " ∴"


class DrawnLine(NamedTuple):
    """One line of the drawing: its text, the node it draws (for a call line,
    the node whose run made the call; None for the start) and its kind
    (`NODE`, `CALL` or `START`)."""

    text: str
    node: str | None
    kind: str


def generate_tree_lines(
    tree: nx.DiGraph[Any],
    start: str | None = None,
    width: int = EXCERPT_WIDTH,
    indent_chains: bool = False,
    marks: bool = False,
    active: bool = False,
    heading: str | None = None,
) -> Iterator[str]:
    """Yield the drawing line by line: every root's tree, or `start`'s subtree
    (see `drawing` for the lines and their nodes).

    With `marks` (as `convgraph tree` draws), a node the user marked
    preferred ends in ` ★`, and a node with a note in ` ✎` and the note's
    first words; with `active`, the nodes of the active path (the branch last
    used) end in ` ●`. Both are off by default for callers that mark nodes
    their own way (the browser).
    """
    for text, _, _ in _walk(tree, start, width, indent_chains, marks, active, heading):
        yield text


def drawing(
    tree: nx.DiGraph[Any],
    start: str | None = None,
    width: int = EXCERPT_WIDTH,
    indent_chains: bool = False,
    marks: bool = False,
    active: bool = False,
    heading: str | None = None,
) -> Iterator[DrawnLine]:
    """The drawing as `DrawnLine`s, in depth-first order, children in log
    order; the lines of a node's subtree follow its line without a gap.

    `heading` is the conversation's own line (`convgraph tree` gives its id
    and name): drawn first, with the roots beneath it. Without one, a tree
    with several roots starts with a line for the start, `start: N
    alternatives`, and its roots hang from it as a node's alternatives hang
    from the node; a tree with one root starts with its root.

    Under a node's line, its run's tool calls and code, each a line
    `↳ name(arguments) → result` (`run_lines`), indented under the node's
    text; none where `width` is 0.
    """
    for line in _walk(tree, start, width, indent_chains, marks, active, heading):
        yield DrawnLine._make(line)


def _walk(
    tree: nx.DiGraph[Any],
    start: str | None,
    width: int,
    indent_chains: bool,
    marks: bool,
    active: bool,
    heading: str | None,
) -> Iterator[tuple[str, str | None, str]]:
    """`drawing`'s lines as plain tuples (text, node, kind): the text tree of
    a 100,000-node conversation is 100,000 of them."""
    if start is not None:
        starts = [start]
    else:
        starts = [node for node, degree in tree.in_degree() if degree == 0]
    nodes = tree.nodes
    return _lines(
        starts,
        start is None and len(starts) > 1,
        tree.successors,
        lambda node: _fields(nodes[node]),
        _same,
        Style(width, indent_chains, marks, active),
        heading,
    )


def _same(node: Any) -> Any:
    return node


def _fields(data: Mapping[str, Any]) -> tuple[Any, ...]:
    """What the drawing shows of a node, in `DRAWN_COLUMNS`' order after the
    id: prompt, response, parts, active, preferred, note."""
    return (
        data.get("prompt"),
        data.get("response"),
        data.get("parts"),
        data.get("active"),
        data.get("preferred"),
        data.get("note"),
    )


class Style(NamedTuple):
    """How a drawing is drawn: `width` cells of text a line, `indent_chains`
    (indent an only child too), `marks` (preferred and notes) and `active`
    (the active path) shown.

    `fit`, where given, is the width of a whole line in cells (a terminal's):
    each line's text takes the room its indentation and id leave (never
    less than `MIN_TEXT`), the marks and the start of a note stay visible,
    and a line still too long (a deep branch) is cut at `fit`. `id_length`,
    where given, shows each id as its prefix of that many characters
    (`unique_prefix_length`), which every command takes as the id.
    """

    width: int = EXCERPT_WIDTH
    indent_chains: bool = False
    marks: bool = False
    active: bool = False
    fit: int | None = None
    id_length: int | None = None


#: The fewest cells of a prompt a fitted line keeps.
MIN_TEXT = 12
#: The fewest characters an id is cut to: ULIDs share their first
#: characters for hours (they begin with the time), so a shorter prefix
#: would often name several ids of the file.
MIN_ID_LENGTH = 8


def cut_line(line: str, width: int) -> str:
    """A line of a drawing or a table cut at `width` terminal cells, an
    ellipsis in its last: its spaces kept (an indentation, a column's
    padding), where `excerpt` would close them up.
    """
    if cell_width(line) <= width:
        return line
    taken = 0
    for index, character in enumerate(line):
        taken += cell_width(character)
        if taken > width - 1:
            return line[:index] + "…"
    return line


def unique_prefix_length(ids: Iterable[Any], floor: int = MIN_ID_LENGTH) -> int:
    """The fewest characters (at least `floor`) whose prefixes tell the
    distinct `ids` apart: what a drawing or a table may cut its ids to.
    """
    ordered = sorted({str(one) for one in ids})
    longest = 0
    for before, after in zip(ordered, ordered[1:], strict=False):
        shared = 0
        for a, b in zip(before, after, strict=False):
            if a != b:
                break
            shared += 1
        longest = max(longest, shared + 1)
    return max(floor, longest)


def _lines(
    starts: list[Any],
    below_start: bool,
    children_of: Callable[[Any], Iterable[Any]],
    fields_of: Callable[[Any], tuple[Any, ...]],
    id_of: Callable[[Any], Any],
    style: Style,
    heading: str | None,
) -> Iterator[tuple[str, str | None, str]]:
    """The one walk of the drawing, for a DiGraph and for a tree's rows
    alike: from the `starts` (drawn under a line for the start where
    `below_start`), each node's children by `children_of` in log order, what
    is shown of it by `fields_of` (`_fields`) and its id by `id_of`."""
    width, indent_chains, marks, active, fit, id_length = style
    if heading is not None or below_start:
        line = (
            heading
            if heading is not None
            else f"start: {counted(len(starts), 'alternative')}"
        )
        yield line, None, START
    # Each entry: the node, the text before its connector, and how it hangs
    # from the line above: ROOT, LAST or MIDDLE child, or ONLY child (drawn
    # in its parent's column unless chains are indented). Several roots are
    # the start's children.
    if below_start:
        stack = [
            (root, "", LAST if index == len(starts) - 1 else MIDDLE)
            for index, root in reversed(list(enumerate(starts)))
        ]
    else:
        stack = [(root, "", ROOT) for root in reversed(starts)]
    while stack:
        key, prefix, place = stack.pop()
        node = id_of(key)
        prompt, response, parts, is_active, preferred, note = fields_of(key)
        if place is ROOT or place is ONLY:
            lead = prefix
            below_prefix = prefix
        else:
            lead = prefix + ("└── " if place is LAST else "├── ")
            below_prefix = prefix + ("    " if place is LAST else "│   ")
        shown_id = node if id_length is None else str(node)[:id_length]
        tail = ""
        if parts and any(part.get("type") == REASONING for part in parts):
            tail += REASONING_MARK
        if active and is_active:
            tail += " ●"
        if marks and preferred:
            tail += " ★"
        room = width
        if fit is not None:
            # What the line's start, its id and its marks leave, the note
            # a share of it.
            room = fit - cell_width(lead) - cell_width(str(shown_id)) - 2
            room -= cell_width(tail)
        if marks and note:
            note_room = max(width // 2, 1) if fit is None else max(room // 3, 8)
            tail += " ✎ " + terminal_text(excerpt(note, note_room))
            if fit is not None:
                room -= note_room + 3
        if fit is not None:
            room = max(room, MIN_TEXT)
        label = _label(shown_id, prompt, response, room) + tail
        line = lead + label
        if fit is not None:
            line = cut_line(line, fit)
        yield line, node, NODE
        if parts:  # most nodes are only a prompt and a response
            call_room = width
            if fit is not None:
                call_room = max(fit - cell_width(below_prefix) - 2, MIN_TEXT)
            for call in run_lines({"parts": parts}, call_room):
                text = below_prefix + "  " + call
                yield (text if fit is None else cut_line(text, fit)), node, CALL
        below = list(children_of(key))
        if len(below) == 1 and not indent_chains:
            stack.append((below[0], below_prefix, ONLY))
            continue
        for index in range(len(below) - 1, -1, -1):
            place = LAST if index == len(below) - 1 else MIDDLE
            stack.append((below[index], below_prefix, place))


#: The columns of a forest's table the drawing reads (`forest_drawings`).
DRAWN_COLUMNS = ("id", "prompt", "response", "parts", "active", "preferred", "note")
#: The texts the drawing shows (`Forest.read`'s `texts`): a node's prompt;
#: its response only where the prompt is empty (`answers_missing`).
DRAWN_TEXTS = ("prompt",)


def answers_missing(forest: Forest) -> bool:
    """Whether some node of `forest` has an empty prompt and no response:
    its line shows its answer, so a forest read with `DRAWN_TEXTS` alone
    must be read again with its responses to be drawn."""
    nodes = forest.nodes
    empty = (nodes["prompt"] == "").fillna(False).to_numpy(dtype=bool)
    return bool((empty & nodes["response"].isna().to_numpy()).any())


def forest_drawings(
    forest: Forest,
    style: Style | None = None,
    progress: ProgressCallback | None = None,
    batch: int | None = None,
) -> Iterator[tuple[str, str]]:
    """Every tree of `forest` drawn as `convgraph tree` draws it, each as
    its heading line (`tree_heading`) and the lines beneath it joined: the
    text of `drawing(tree, heading=tree_heading(tree, width), ...)` for
    each tree of `forest.trees()`, in the same order, drawn from the
    table's rows (`Forest.tree_rows`) without building a DiGraph.

    `progress` is told the trees drawn, as `Forest.trees` tells them;
    `batch`, about how many rows are drawn at a time (`Forest.tree_rows`).
    """
    style = style or Style()
    keys = DRAWN_COLUMNS[1:]
    batched = {} if batch is None else {"batch": batch}
    for rows in forest.tree_rows(DRAWN_COLUMNS, progress, **batched):
        ids = rows.columns["id"]
        fields = list(zip(*(rows.columns[key] for key in keys), strict=True))
        children_of, roots = _children(rows.parents)
        root_at = 0
        for tree_id, name, end in zip(
            rows.tree_ids, rows.names, rows.ends, strict=True
        ):
            # Roots come in row order, so a tree's are the next ones below
            # its end.
            first = root_at
            while root_at < len(roots) and roots[root_at] < end:
                root_at += 1
            lines = _lines(
                roots[first:root_at],
                root_at - first > 1,
                children_of,
                fields.__getitem__,
                ids.__getitem__,
                style,
                heading_line(tree_id, name, _heading_room(style, tree_id)),
            )
            heading = next(lines)[0]
            yield heading, "\n".join([line[0] for line in lines])
        # Hold no batch while the next is made.
        del rows, ids, fields, children_of, roots


def _children(parents: list[int]) -> tuple[Callable[[int], list[int]], list[int]]:
    """Each row's children (in row order) from each row's parent (-1 for a
    root), and the roots in row order: one sort, not a list a row."""
    import numpy as np

    links = np.asarray(parents, dtype=np.int64)
    linked = np.flatnonzero(links >= 0)
    # Children sorted by parent, each parent's in row order (a stable sort).
    kids = linked[np.argsort(links[linked], kind="stable")].tolist()
    ends = np.cumsum(np.bincount(links[linked], minlength=len(links))).tolist()
    starts = [0, *ends[:-1]]
    roots = np.flatnonzero(links < 0).tolist()
    return lambda row: kids[starts[row] : ends[row]], roots


ROOT, ONLY, LAST, MIDDLE = "root", "only", "last", "middle"


def render_tree(
    tree: nx.DiGraph[Any],
    start: str | None = None,
    width: int = EXCERPT_WIDTH,
    indent_chains: bool = False,
    marks: bool = False,
    active: bool = False,
    heading: str | None = None,
) -> str:
    """The whole drawing as one string (see `generate_tree_lines`)."""
    return "\n".join(
        generate_tree_lines(tree, start, width, indent_chains, marks, active, heading)
    )


def tree_drawing(tree: nx.DiGraph[Any], style: Style | None = None) -> tuple[str, str]:
    """One tree drawn as `convgraph tree` draws it (`forest_drawings` draws
    every tree of a forest the same way): its heading line (`tree_heading`)
    and the lines beneath it, joined."""
    style = style or Style()
    nodes = tree.nodes
    starts = [node for node, degree in tree.in_degree() if degree == 0]
    lines = _lines(
        starts,
        len(starts) > 1,
        tree.successors,
        lambda node: _fields(nodes[node]),
        _same,
        style,
        tree_heading(tree, _heading_room(style, tree.graph.get("tree_id"))),
    )
    heading = next(lines)[0]
    return heading, "\n".join([line[0] for line in lines])


def _heading_room(style: Style, tree_id: Any) -> int:
    """The cells a conversation's name takes on its heading line."""
    if style.fit is None:
        return style.width
    return max(style.fit - cell_width(str(tree_id)) - 2, MIN_TEXT)


def tree_heading(tree: nx.DiGraph[Any], width: int = EXCERPT_WIDTH) -> str:
    """The line that names a conversation above its drawing: its tree id and
    an excerpt of its name, safe for a terminal.
    """
    return heading_line(tree.graph.get("tree_id"), tree.graph.get("name"), width)


def heading_line(tree_id: Any, name: Any, width: int = EXCERPT_WIDTH) -> str:
    """`tree_heading`'s line from a tree's id and name."""
    title = str(tree_id)
    if name:
        title += f"  {excerpt(name, width)}"
    return terminal_text(title)


def run_lines(data: Mapping[str, Any], width: int = EXCERPT_WIDTH) -> list[str]:
    """The lines that show a node's tool calls and code under its line, each
    `↳ ` and the call or the code, then ` → ` and what came back, together
    cut to `width` terminal cells (none for a width of 0, or a node without
    parts). A result is matched to its call by the call's id, else by its
    tool's name, else to the first call still waiting for one; an output to
    the code before it.
    """
    parts = data.get("parts")
    if not parts or width <= 0:
        return []
    return [
        "↳ " + terminal_text(_pair(said, answer, width))
        for said, answer in _calls_and_answers(parts)
    ]


def _calls_and_answers(parts: list[Part]) -> list[tuple[str, str | None]]:
    """Each call or piece of code with what came back (None while nothing
    did), in the order the run made them; a result no call asked for is an
    entry of its own.

    A result answers a call as the transcript's chat messages pair them
    (`convgraph.present.transcript`): the call with its id, else the first
    waiting call of its tool's name, else the first waiting call the source
    gave no id, else the first waiting call; an output answers the code
    before it."""
    entries: list[list[Any]] = []  # [said, answer, part type, call id, name]
    for part in parts:
        kind = part.get("type")
        if kind == TOOL_CALL:
            name = part.get("name")
            said = f"{name or '?'}({arguments_text(part.get('arguments'))})"
            call_id = part.get("id")
            entries.append([said, None, TOOL_CALL, call_id or None, name])
        elif kind == CODE:
            said = f"{part.get('language') or 'code'}: {part.get('text') or ''}"
            entries.append([said, None, CODE, None, None])
        elif kind == TOOL_RESULT:
            answer = _result_text(part)
            waiting = [e for e in entries if e[2] == TOOL_CALL and e[1] is None]
            found = _answered(waiting, part.get("id"), part.get("name"))
            if found is not None:
                found[1] = answer
            else:
                entries.append(
                    [part.get("name") or "?", answer, TOOL_RESULT, None, None]
                )
        elif kind == CODE_OUTPUT:
            waiting = [e for e in entries if e[2] == CODE and e[1] is None]
            if waiting:
                waiting[-1][1] = str(part.get("text") or "")
            else:
                entries.append(
                    ["output", str(part.get("text") or ""), CODE, None, None]
                )
    return [(entry[0], entry[1]) for entry in entries]


def _answered(waiting: list[list[Any]], call_id: Any, name: Any) -> list[Any] | None:
    """The waiting call a result answers (see `_calls_and_answers`)."""
    for entry in waiting:
        if call_id and entry[3] == call_id:
            return entry
    for entry in waiting:
        if name and entry[4] == name:
            return entry
    for entry in waiting:
        if entry[3] is None:
            return entry
    return waiting[0] if waiting else None


def arguments_text(arguments: Any) -> str:
    """A tool call's arguments as a call is written: `name=value` for each
    member of an object (values as JSON), any other value as its JSON; an
    object given as JSON text reads as the object.
    """
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            return arguments
        if not isinstance(parsed, dict):
            return arguments
        arguments = parsed
    if arguments is None:
        return ""
    if isinstance(arguments, dict):
        return ", ".join(f"{key}={_json(value)}" for key, value in arguments.items())
    return _json(arguments)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _result_text(part: Part) -> str:
    if part.get("error"):
        return f"error: {part['error']}"
    output = part.get("output")
    return output if isinstance(output, str) else _json(output)


def _pair(said: str, answer: str | None, width: int) -> str:
    """`said → answer` on one line in `width` cells, each cut where both do
    not fit: the shorter kept whole when it takes at most half the room."""
    if answer is None:
        return excerpt(said, width)
    room = max(width - 3, 2)  # " → " takes three cells
    said_cells = cell_width(excerpt(said, 10**9))
    answer_cells = cell_width(excerpt(answer, 10**9))
    if said_cells + answer_cells <= room:
        said_room, answer_room = said_cells, answer_cells
    elif said_cells <= room // 2:
        said_room, answer_room = said_cells, room - said_cells
    elif answer_cells <= room - room // 2:
        said_room, answer_room = room - answer_cells, answer_cells
    else:
        said_room, answer_room = room // 2, room - room // 2
    return f"{excerpt(said, said_room)} → {excerpt(answer, answer_room)}"


def _label(node: str, prompt: Any, response: Any, width: int) -> str:
    text = excerpt(prompt, width)
    if not text and prompt == "" and response:
        # llm logs the call that hands a tool's output back to the model with
        # an empty prompt: say so rather than draw a bare id.
        text = excerpt("(tool result given back) answer: " + response, width)
    return terminal_text(f"{node}  {text}" if text else str(node))
