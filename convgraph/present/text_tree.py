"""A conversation tree as text, drawn with box-drawing characters."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from convgraph import parts as kinds
from convgraph.text import EXCERPT_WIDTH, cell_width, counted, excerpt, terminal_text

if TYPE_CHECKING:
    import networkx as nx

    from convgraph.model.forest import Forest
    from convgraph.sources.source import ProgressCallback

NODE, CALL, START = "node", "call", "start"

#: The mark after a node whose run holds the model's reasoning.
REASONING_MARK = " ∴"


class DrawnLine(NamedTuple):
    """One line of the drawing: its text, the node it draws (a call line's
    node; None for the start) and its kind (`NODE`, `CALL` or `START`)."""

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
    """Yield the drawing line by line: every root's tree, or `start`'s subtree.
    `marks` ends a preferred node in ` ★` and a noted one in ` ✎` and the note's
    first words; `active` ends the active path's nodes in ` ●`."""
    for line in drawing(tree, start, width, indent_chains, marks, active, heading):
        yield line.text


def drawing(
    tree: nx.DiGraph[Any],
    start: str | None = None,
    width: int = EXCERPT_WIDTH,
    indent_chains: bool = False,
    marks: bool = False,
    active: bool = False,
    heading: str | None = None,
) -> Iterator[DrawnLine]:
    """The drawing as `DrawnLine`s, depth first, children in log order."""
    starts = [start] if start is not None else _starts(tree)
    nodes = tree.nodes
    lines = _lines(
        starts,
        start is None and len(starts) > 1,
        tree.successors,
        lambda node: _fields(nodes[node]),
        _same,
        Style(width, indent_chains, marks, active),
        heading,
    )
    return map(DrawnLine._make, lines)


def _starts(tree: nx.DiGraph[Any]) -> list[Any]:
    return [node for node, degree in tree.in_degree() if degree == 0]


def _same(node: Any) -> Any:
    return node


def _fields(data: Mapping[str, Any]) -> tuple[Any, ...]:
    """What the drawing shows of a node, in `DRAWN_COLUMNS`' order after the id."""
    return (
        data.get("prompt"),
        data.get("response"),
        data.get("parts"),
        data.get("active"),
        data.get("preferred"),
        data.get("note"),
    )


class Style(NamedTuple):
    """How a drawing is drawn: `width` cells of text, `indent_chains`, `marks` and
    `active`."""

    width: int = EXCERPT_WIDTH
    indent_chains: bool = False
    marks: bool = False
    active: bool = False
    fit: int | None = None
    id_length: int | None = None


#: The fewest cells of a prompt a fitted line keeps.
MIN_TEXT = 12
#: ULIDs begin with the time: a shorter prefix would often name several ids.
MIN_ID_LENGTH = 8


def cut_line(line: str, width: int) -> str:
    """A line cut at `width` terminal cells, an ellipsis last, its spaces kept."""
    if cell_width(line) <= width:
        return line
    taken = 0
    for index, character in enumerate(line):
        taken += cell_width(character)
        if taken > width - 1:
            return line[:index] + "…"
    return line


def unique_prefix_length(ids: Iterable[Any], floor: int = MIN_ID_LENGTH) -> int:
    """The fewest characters (at least `floor`) whose prefixes tell the distinct
    `ids` apart."""
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
    """The one walk of the drawing, for a DiGraph and a tree's rows alike: from
    `starts` (under a start line where `below_start`), children by
    `children_of`, fields by `fields_of`, ids by `id_of`."""
    width, indent_chains, marks, active, fit, id_length = style
    if heading is not None or below_start:
        line = (
            heading
            if heading is not None
            else f"start: {counted(len(starts), 'alternative')}"
        )
        yield line, None, START
    # Each entry: node, text before its connector, and how it hangs (ROOT, LAST,
    # MIDDLE or ONLY child, the last in its parent's column).
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
        if parts and any(part.get("type") == kinds.REASONING for part in parts):
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
#: The texts the drawing reads: prompts; responses only where `answers_missing`.
DRAWN_TEXTS = ("prompt",)


def answers_missing(forest: Forest) -> bool:
    """Whether some node has an empty prompt and no response: its line shows its
    answer, so a forest read with `DRAWN_TEXTS` alone must be read again."""
    nodes = forest.nodes
    empty = (nodes["prompt"] == "").fillna(False).to_numpy(dtype=bool)
    return bool((empty & nodes["response"].isna().to_numpy()).any())


def forest_drawings(
    forest: Forest,
    style: Style | None = None,
    progress: ProgressCallback | None = None,
    batch: int | None = None,
) -> Iterator[tuple[str, str]]:
    """Every tree of `forest` drawn as `tree_drawing` draws it, in
    `forest.trees()` order, from the table's rows without a DiGraph; `progress`
    is told the trees drawn, `batch` is about how many rows a batch holds."""
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
            # Roots come in row order: a tree's are the next below its end.
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
            yield next(lines)[0], "\n".join([line[0] for line in lines])
        # Hold no batch while the next is made.
        del rows, ids, fields, children_of, roots


def _children(parents: list[int]) -> tuple[Callable[[int], list[int]], list[int]]:
    """Each row's children (in row order) from the parents (-1 for a root), and
    the roots: one sort, not a list a row."""
    import numpy as np

    links = np.asarray(parents, dtype=np.int64)
    linked = np.flatnonzero(links >= 0)
    # Children sorted by parent, each parent's in row order (a stable sort).
    kids = linked[np.argsort(links[linked], kind="stable")].tolist()
    ends = np.cumsum(np.bincount(links[linked], minlength=len(links))).tolist()
    starts = [0, *ends[:-1]]
    return lambda row: kids[starts[row] : ends[row]], np.flatnonzero(links < 0).tolist()


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
    """One tree as `convgraph tree` draws it: its heading line and the lines
    beneath, joined."""
    style = style or Style()
    nodes, tree_id = tree.nodes, tree.graph.get("tree_id")
    starts = _starts(tree)
    lines = _lines(
        starts,
        len(starts) > 1,
        tree.successors,
        lambda node: _fields(nodes[node]),
        _same,
        style,
        heading_line(tree_id, tree.graph.get("name"), _heading_room(style, tree_id)),
    )
    return next(lines)[0], "\n".join([line[0] for line in lines])


def _heading_room(style: Style, tree_id: Any) -> int:
    """The cells a conversation's name takes on its heading line."""
    if style.fit is None:
        return style.width
    return max(style.fit - cell_width(str(tree_id)) - 2, MIN_TEXT)


def heading_line(tree_id: Any, name: Any, width: int = EXCERPT_WIDTH) -> str:
    """The line naming a conversation above its drawing: id and name excerpt."""
    title = str(tree_id)
    if name:
        title += f"  {excerpt(name, width)}"
    return terminal_text(title)


def run_lines(data: Mapping[str, Any], width: int = EXCERPT_WIDTH) -> list[str]:
    """The lines showing a node's tool calls and code under it, each `↳ call →
    result` cut to `width` cells (none for 0 or no parts)."""
    parts = data.get("parts")
    if not parts or width <= 0:
        return []
    return [
        "↳ " + terminal_text(_pair(said, answer, width))
        for said, answer in _calls_and_answers(parts)
    ]


def _calls_and_answers(parts: list[kinds.Part]) -> list[tuple[str, str | None]]:
    """Each call or piece of code with what came back (None while nothing did),
    in run order; a result no call asked for stands alone. Results pair with calls
    as the transcript pairs them; an output answers the code before it."""
    entries: list[list[Any]] = []  # [said, answer, part type, call id, name]
    for part in parts:
        kind = part.get("type")
        if kind == kinds.TOOL_CALL:
            name = part.get("name")
            said = f"{name or '?'}({arguments_text(part.get('arguments'))})"
            entries.append([said, None, kinds.TOOL_CALL, part.get("id") or None, name])
        elif kind == kinds.CODE:
            said = f"{part.get('language') or 'code'}: {part.get('text') or ''}"
            entries.append([said, None, kinds.CODE, None, None])
        elif kind == kinds.TOOL_RESULT:
            answer = _result_text(part)
            waiting = [e for e in entries if e[2] == kinds.TOOL_CALL and e[1] is None]
            found = _answered(waiting, part.get("id"), part.get("name"))
            if found is not None:
                found[1] = answer
            else:
                entries.append(
                    [part.get("name") or "?", answer, kinds.TOOL_RESULT, None, None]
                )
        elif kind == kinds.CODE_OUTPUT:
            waiting = [e for e in entries if e[2] == kinds.CODE and e[1] is None]
            if waiting:
                waiting[-1][1] = str(part.get("text") or "")
            else:
                entries.append(
                    ["output", str(part.get("text") or ""), kinds.CODE, None, None]
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
    """A tool call's arguments as a call is written: `name=value` for an object's
    members (values as JSON), else the JSON; JSON text of an object reads as it."""
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


def _result_text(part: kinds.Part) -> str:
    if part.get("error"):
        return f"error: {part['error']}"
    output = part.get("output")
    return output if isinstance(output, str) else _json(output)


def _pair(said: str, answer: str | None, width: int) -> str:
    """`said → answer` in `width` cells, the shorter kept whole when it takes at
    most half."""
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
