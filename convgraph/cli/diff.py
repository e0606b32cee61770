"""Commands that compare branches: diff (two nodes) and compare (one node's children).
Both read one conversation; stored text passes `terminal_text` before it is styled."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import click

from convgraph.cli.options import (
    ANY_ID,
    NODE_ID,
    all_option,
    command,
    db_option,
    embedding_model_option,
    json_option,
    opened_logs,
    output_options,
)
from convgraph.cli.output import (
    aligned_lines,
    echo_json,
    echo_records,
    fitted,
    say,
    table_width,
    wrapped,
)
from convgraph.cli.user_input import Number
from convgraph.text import cell_width, counted
from convgraph.text import terminal_text as shown

if TYPE_CHECKING:
    import networkx as nx

    from convgraph.analysis.branch_diff import BranchDiff, Step
    from convgraph.analysis.compare import Comparison


@command("diff")
@click.argument("node_a", type=NODE_ID)
@click.argument("node_b", type=NODE_ID)
@db_option
@all_option
@json_option
@click.option(
    "--context",
    "-U",
    type=Number(0, 1_000_000),
    default=3,
    show_default=True,
    help="Lines of context around each change",
)
def diff_command(node_a: str, node_b: str, as_json: bool, context: int) -> None:
    """Show where the branches down to NODE_A and NODE_B split, and what differs.

    The fork point (the last node both share, or the start of the conversation when they
    grow from different roots), the path down to it, then the two branches below it step
    by step: a unified diff of each step's prompts and responses, and each branch's
    totals. With --json, an object with fork_point (null for the start), shared, a, b,
    steps and totals.
    """
    from convgraph.analysis.branch_diff import diff

    tree = opened_logs().tree_of_pair(node_a, node_b)
    result = diff(tree, node_a, node_b, context=context)
    if as_json:
        echo_json(result.to_dict())
        return
    click.echo("\n".join(generate_diff_lines(result, table_width())))


def generate_diff_lines(result: BranchDiff, width: int | None = None) -> Iterator[str]:
    """The human form of a branch diff, styled, wrapped at `width` cells (each
    changed line keeps its marker), its table cut there."""
    for line in _diff_lines(result, width):
        yield from _fit(line, width)


def _fit(line: str, width: int | None) -> list[str]:
    """A styled line wrapped at `width`: as is where it fits, else unstyled."""
    if width is None or cell_width(click.unstyle(line)) <= width:
        return [line]
    return wrapped(click.unstyle(line), width)


def _diff_lines(result: BranchDiff, width: int | None) -> Iterator[str]:
    node_a, node_b = shown(result.node_a), shown(result.node_b)
    yield click.style(f"diff {node_a} {node_b}", bold=True) + (
        f"  (conversation {shown(str(result.conversation_id))})"
    )
    if result.fork_point is None:
        # Two roots: alternatives at the start, with nothing shared.
        yield (
            f"fork point: {click.style('the start', bold=True)}  (nothing shared:"
            f" different roots, {shown(result.a[0])} and {shown(result.b[0])})"
        )
    else:
        shared = [shown(node) for node in result.shared]
        route = shared[0] if len(shared) == 1 else f"{shared[0]} ... {shared[-1]}"
        yield (
            f"fork point: {click.style(shown(result.fork_point), bold=True)}"
            f"  (shared path: {counted(len(shared), 'node')}, {route})"
        )
    for name, node, below in (("a", node_a, result.a), ("b", node_b, result.b)):
        if below and result.fork_point is None:
            yield f"{name}: {counted(len(below), 'node')} from the start, down to {node}"
        elif below:
            yield f"{name}: {counted(len(below), 'node')} after the fork point, down to {node}"
        elif result.node_a == result.node_b:
            yield f"{name}: nothing after the fork point (both nodes are {node})"
        else:
            other = node_b if name == "a" else node_a
            yield f"{name}: nothing after the fork point ({node} is an ancestor of {other})"
    for step in result.steps:
        yield ""
        yield from _step_lines(step, width)
    yield ""
    yield from fitted(_totals_lines(result), width)


def _step_lines(step: Step, width: int | None) -> Iterator[str]:
    sides = [
        f"{name}: -"
        if side is None
        else shown(f"{name}: {side.id}" + (f" ({side.model})" if side.model else ""))
        for name, side in (("a", step.a), ("b", step.b))
    ]
    yield click.style(f"step {step.step}", bold=True) + "  " + "   ".join(sides)
    if step.same_prompt:
        yield "prompt: same"
    else:
        yield "prompt:"
        yield from _styled_diff(step.prompt_diff, width)
    if step.same_response:
        yield "response: same"
    else:
        both = step.a is not None and step.b is not None
        similar = f" (similarity {step.response_similarity:.2f})" if both else ""
        yield f"response{similar}:"
        yield from _styled_diff(step.response_diff, width)


def _styled_diff(lines: list[str], width: int | None = None) -> Iterator[str]:
    """A unified diff's lines styled, wrapped at `width`, each piece marked."""
    for line in map(shown, lines):
        style: dict[str, object] = {}
        hang = None
        if line.startswith(("---", "+++")):
            style = {"bold": True}
        elif line.startswith("@@"):
            style = {"fg": "cyan"}
        elif line.startswith("-"):
            style, hang = {"fg": "red"}, "-"
        elif line.startswith("+"):
            style, hang = {"fg": "green"}, "+"
        elif line.startswith(" "):
            hang = " "
        for piece in wrapped(line, width, hang):
            yield click.style(piece, **style) if style else piece  # type: ignore[arg-type]


def _totals_lines(result: BranchDiff) -> Iterator[str]:
    rows = [
        [
            name,
            str(totals.nodes),
            _number(totals.input_tokens),
            _number(totals.output_tokens),
            _number(totals.duration_ms, " ms"),
            ", ".join(totals.models) or "-",
        ]
        for name, totals in result.totals.items()
    ]
    headers = ["", "nodes", "input tokens", "output tokens", "duration", "models"]
    yield from _table(headers, rows, left={0, 5})


def _table(headers: list[str], rows: list[list[str]], left: set[int]) -> Iterator[str]:
    lines = aligned_lines([headers, *rows], left=left)
    yield click.style(next(lines), bold=True)
    yield from lines


def _number(value: int | None, unit: str = "") -> str:
    return "-" if value is None else f"{value}{unit}"


@command("compare")
@click.argument("node_id", metavar="ID", type=ANY_ID)
@click.option("--meaning", "by_meaning", is_flag=True, help="Compare by meaning too")
@embedding_model_option
@db_option
@all_option
@output_options
def compare_command(
    node_id: str, by_meaning: bool, model: str | None, output_format: str | None
) -> None:
    """Compare the children of ID, a node: the alternatives tried from it. An ID that
    names a conversation tree instead (a conversation id, or any thread id of the tree)
    compares its roots: the alternatives at its start.

    For each child: model, tokens, duration, response length (characters), subtree size,
    and the similarity of its response to each sibling's (difflib's ratio over words, 0
    to 1). Without an output option, a report for reading; as records, one a child with
    id, those columns, and similarity (sibling id -> ratio; JSON text in CSV and TSV).

    --meaning adds the same pairs' similarity by meaning, the cosine of the responses'
    embeddings (WordLlama offline, or --embedding-model), -1 to 1: a second table, or as
    records meaning (sibling id -> cosine).
    """
    from dataclasses import fields

    from convgraph.analysis.compare import Alternative, compare

    tree, point = _tree_and_point(node_id)
    result = compare(tree, point)
    meaning = None
    if by_meaning or model is not None:
        from convgraph.meaning.uses import compared_by_meaning

        meaning = compared_by_meaning(result, tree, model)
    if output_format is not None:
        columns = [field.name for field in fields(Alternative)]
        records = result.to_dicts()
        if meaning is not None:
            columns.append("meaning")
            for record, alternative in zip(records, meaning.alternatives, strict=True):
                record["meaning"] = alternative.similarity
        echo_records(records, columns, output_format)
        return
    if not result.alternatives:
        say(f"{node_id} has no children")
        return
    lines = generate_compare_lines(result, tree.graph.get("tree_id"), table_width())
    click.echo("\n".join(lines))
    if meaning is not None and len(meaning.alternatives) > 1:
        heading = click.style("similarity of responses by meaning (cosine)", bold=True)
        click.echo("\n".join(["", heading, *_similarity_lines(meaning)]))


def _tree_and_point(id_: str) -> tuple[nx.DiGraph[str], str | None]:
    """The tree `id_` names and the node to compare at, or None (the start)
    where it names a conversation; a node id wins where it names both."""
    from convgraph.errors import UnknownConversation, UnknownNode

    logs = opened_logs()
    try:
        return logs.tree_of_node(id_), id_
    except UnknownNode as unknown:
        try:
            return logs.tree_of_conversation(id_), None
        except UnknownConversation:
            raise unknown from None


def generate_compare_lines(
    result: Comparison, tree_id: str | None = None, width: int | None = None
) -> Iterator[str]:
    """A comparison for a person: the children's table (or tree `tree_id`'s
    roots), then their similarities, fitted to `width` cells where given."""
    for line in _compare_lines(result, tree_id, width):
        yield from _fit(line, width)


def _compare_lines(
    result: Comparison, tree_id: str | None, width: int | None
) -> Iterator[str]:
    alternatives = result.alternatives
    where = (
        f"after {shown(result.node)}"
        if result.node is not None
        else f"at the start of {shown(str(tree_id))}"
    )
    yield click.style(f"{counted(len(alternatives), 'alternative')} {where}", bold=True)
    headers = ["#", "id", "model", "input", "output", "duration", "chars", "subtree"]
    id_length = None
    if width is not None:
        from convgraph.present.text_tree import unique_prefix_length

        longest = max((len(one.id) for one in alternatives), default=0)
        if longest + 56 > width:
            id_length = unique_prefix_length(one.id for one in alternatives)
    rows = [
        [
            str(number),
            # The user's preferred answer is starred (convgraph prefer).
            alternative.id[:id_length] + (" ★" if alternative.preferred else ""),
            alternative.model or "-",
            _number(alternative.input_tokens),
            _number(alternative.output_tokens),
            _number(alternative.duration_ms, " ms"),
            _number(alternative.response_length),
            str(alternative.subtree_size),
        ]
        for number, alternative in enumerate(alternatives, start=1)
    ]
    yield from fitted(_table(headers, rows, left={1, 2}), width)
    noted = [
        (number, alternative.note)
        for number, alternative in enumerate(alternatives, start=1)
        if alternative.note
    ]
    if noted:
        yield ""
        yield click.style("notes", bold=True)
        for number, text in noted:
            yield f"{number}  ✎ {shown(text)}"
    if len(alternatives) < 2:
        return
    yield ""
    yield click.style("similarity of responses (0 to 1, over words)", bold=True)
    yield from _similarity_lines(result)


def _similarity_lines(result: Comparison) -> Iterator[str]:
    """The similarity of every pair (or of neighbours), "-" where unmeasured."""
    ids = result.ids
    if result.neighbours is not None:
        yield from _neighbour_lines(result)
        return
    matrix = [
        [str(number)]
        + [
            "1.00"
            if other == alternative.id
            else f"{alternative.similarity[other]:.2f}"
            if other in alternative.similarity
            else "-"
            for other in ids
        ]
        for number, alternative in enumerate(result.alternatives, start=1)
    ]
    yield from _table(
        ["#", *(str(n) for n in range(1, len(ids) + 1))], matrix, left=set()
    )


def _neighbour_lines(result: Comparison) -> Iterator[str]:
    """The similarities of a bounded comparison, siblings by log offset."""
    reach = result.neighbours or 0
    yield (
        f"{len(result.ids)} children, too many to compare every pair: each"
        f" compared with {counted(reach, 'sibling')} on each side, in log order"
    )
    number = {child: index for index, child in enumerate(result.ids, start=1)}
    offsets = [*range(-reach, 0), *range(1, reach + 1)]
    rows = []
    for index, alternative in enumerate(result.alternatives, start=1):
        score = {number[key] - index: v for key, v in alternative.similarity.items()}
        rows.append(
            [str(index), *(f"{score[o]:.2f}" if o in score else "-" for o in offsets)]
        )
    yield from _table(["#", *(f"{offset:+d}" for offset in offsets)], rows, left=set())
