"""Branch diffs: where two branches of a conversation split, and what changed.

`diff(tree, a, b)` finds the fork point of two nodes (their lowest common
ancestor), the path they share and the two paths below it, pairs those paths
step by step and diffs the prompts and responses of each step with difflib.
`compare(tree, node)` takes the node's children as alternative answers to
one point of the conversation and measures each against its siblings. Both
results are dataclasses with a plain-dict form (the command line's `--json`)
and a pandas form; pandas is imported only when a frame is asked for.

Similarity is difflib's `SequenceMatcher.ratio` over words and punctuation
marks (whitespace ignored), computed the way difflib's own `Differ` compares
text: lines and sentences are aligned first, then the words of each changed
stretch. Its cost grows with the length of the texts, not its square; see
`similarity`.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from convgraph.contract import INTEGER_ATTRIBUTES
from convgraph.errors import DifferentConversations, UnrelatedNodes
from convgraph.model.tree import children, node_totals, path, tree_size

if TYPE_CHECKING:
    import networkx as nx
    import pandas as pd


#: Lines of context around each change in the unified diffs, as `diff -u`.
DEFAULT_CONTEXT = 3

#: Words (runs of letters, digits and underscores) and single punctuation
#: marks: the units that similarity counts.
_WORDS = re.compile(r"\w+|[^\w\s]")


# -- similarity -------------------------------------------------------------

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
class _Prepared:
    """A text cut once into segments of words, so that a response compared
    with many siblings is cut only once."""

    segments: list[tuple[str, ...]]
    count: int

    @classmethod
    def of(cls, text: str | None) -> _Prepared:
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
    return _similarity(_Prepared.of(first), _Prepared.of(second))


def _too_short(segment: tuple[str, ...]) -> bool:
    return len(segment) < ANCHOR_WORDS


def _similarity(first: _Prepared, second: _Prepared) -> float:
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


# -- diff of two branches ---------------------------------------------------


@dataclass(frozen=True)
class StepSide:
    """One node of a step: its id, model and usage."""

    id: str
    model: str | None
    input_tokens: int | None
    output_tokens: int | None
    duration_ms: int | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Step:
    """The n-th node after the fork point on each branch, and their diffs.

    `a` or `b` is None where that branch is shorter; its texts then count as
    empty, so the diff shows the other node's texts as added or removed.
    """

    step: int
    a: StepSide | None
    b: StepSide | None
    same_prompt: bool
    same_response: bool
    response_similarity: float
    prompt_diff: list[str]
    response_diff: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "a": self.a.to_dict() if self.a else None,
            "b": self.b.to_dict() if self.b else None,
            "same_prompt": self.same_prompt,
            "same_response": self.same_response,
            "response_similarity": self.response_similarity,
            "prompt_diff": self.prompt_diff,
            "response_diff": self.response_diff,
        }


@dataclass(frozen=True)
class BranchTotals:
    """What a run of nodes adds up to.

    A usage total is the sum over the nodes that report it; None when the run
    has nodes and none of them reports it (0 for a run without nodes).
    """

    nodes: int
    input_tokens: int | None
    output_tokens: int | None
    duration_ms: int | None
    models: list[str]

    @classmethod
    def of(cls, tree: nx.DiGraph, ids: Sequence[str]) -> BranchTotals:
        """The totals of the nodes `ids` of `tree` (see
        `convgraph.model.tree.node_totals`).

        Examples
        --------
        >>> from convgraph.model.tree import ConversationTree
        >>> tree = ConversationTree.from_edges([("r", "a")], {
        ...     "r": {"model": "m", "input_tokens": 2},
        ...     "a": {"model": "m", "input_tokens": 3}})
        >>> BranchTotals.of(tree, ["r", "a"])
        BranchTotals(nodes=2, input_tokens=5, output_tokens=None, duration_ms=None, models=['m'])
        """
        totals = node_totals(tree, ids)
        return cls(
            totals["nodes"],
            models=totals["models"],
            **{key: totals[key] for key in INTEGER_ATTRIBUTES},
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class BranchDiff:
    """How the branches down to two nodes differ.

    Attributes
    ----------
    node_a, node_b
        The two nodes compared.
    conversation_id
        The conversation tree that holds both.
    fork_point
        Their lowest common ancestor: the last node both branches share. It
        is `node_a` itself when `node_a` is an ancestor of `node_b`.
    shared
        The ids from the root down to the fork point (inclusive).
    a, b
        The ids after the fork point down to `node_a` and to `node_b`; one is
        empty when one node is an ancestor of the other.
    steps
        The two paths paired step by step, the shorter padded with None.
    totals
        `BranchTotals` of "shared", "a" and "b".
    context
        Lines of context in the unified diffs.
    """

    node_a: str
    node_b: str
    conversation_id: str | None
    fork_point: str
    shared: list[str]
    a: list[str]
    b: list[str]
    steps: list[Step]
    totals: dict[str, BranchTotals] = field(default_factory=dict)
    context: int = DEFAULT_CONTEXT

    def to_dict(self) -> dict[str, Any]:
        """The diff as plain JSON-ready data: what `convgraph diff --json`
        prints."""
        return {
            "node_a": self.node_a,
            "node_b": self.node_b,
            # The tree both branches are in: `tree_id` in every output.
            "tree_id": self.conversation_id,
            "fork_point": self.fork_point,
            "shared": list(self.shared),
            "a": list(self.a),
            "b": list(self.b),
            "context": self.context,
            "steps": [step.to_dict() for step in self.steps],
            "totals": {name: totals.to_dict() for name, totals in self.totals.items()},
        }

    def to_frame(self) -> pd.DataFrame:
        """One row per step, indexed by step number (1 is just below the fork
        point): each side's id, model and usage, whether prompts and
        responses are the same, the responses' similarity, and the two diffs
        as text."""
        import pandas as pd

        rows = []
        for step in self.steps:
            row: dict[str, Any] = {"step": step.step}
            for name, side in (("a", step.a), ("b", step.b)):
                row[name] = side.id if side else None
                row[f"{name}_model"] = side.model if side else None
                for key in INTEGER_ATTRIBUTES:
                    row[f"{name}_{key}"] = getattr(side, key) if side else None
            row["same_prompt"] = step.same_prompt
            row["same_response"] = step.same_response
            row["response_similarity"] = step.response_similarity
            row["prompt_diff"] = "\n".join(step.prompt_diff)
            row["response_diff"] = "\n".join(step.response_diff)
            rows.append(row)
        columns = ["step"]
        for name in ("a", "b"):
            columns += [
                name,
                f"{name}_model",
                *(f"{name}_{key}" for key in INTEGER_ATTRIBUTES),
            ]
        columns += [
            "same_prompt",
            "same_response",
            "response_similarity",
            "prompt_diff",
            "response_diff",
        ]
        frame = pd.DataFrame(rows, columns=columns)
        for name in ("a", "b"):
            for key in INTEGER_ATTRIBUTES:
                column = f"{name}_{key}"
                frame[column] = pd.array(frame[column], dtype="Int64")
        frame["response_similarity"] = frame["response_similarity"].astype(float)
        return frame.set_index("step")

    def totals_frame(self) -> pd.DataFrame:
        """The totals, one row each for "shared", "a" and "b"."""
        import pandas as pd

        frame = pd.DataFrame.from_dict(
            {name: totals.to_dict() for name, totals in self.totals.items()},
            orient="index",
        )
        for key in INTEGER_ATTRIBUTES:
            frame[key] = pd.array(frame[key], dtype="Int64")
        return frame


def diff(
    tree: nx.DiGraph, a: str, b: str, context: int = DEFAULT_CONTEXT
) -> BranchDiff:
    """Compare the branches down to nodes `a` and `b` of one conversation tree.

    Parameters
    ----------
    tree
        A conversation tree (from `load_tree`, `load_tree_of_node` or
        `Forest.tree`).
    a, b
        Node ids in `tree`; the same id, or an ancestor and its descendant,
        are allowed.
    context
        Lines of context around each change in the unified diffs.

    Returns
    -------
    BranchDiff

    Raises
    ------
    UnknownNode
        `a` or `b` is not in the tree.
    UnrelatedNodes
        `a` and `b` grow from different roots of the tree.

    Examples
    --------
    >>> import networkx as nx
    >>> tree = nx.DiGraph([("root", "x"), ("x", "a"), ("root", "b")])
    >>> for node in tree:
    ...     tree.nodes[node].update(prompt=node, response=node, model="m",
    ...         input_tokens=1, output_tokens=2, duration_ms=3)
    >>> result = diff(tree, "a", "b")
    >>> result.fork_point, result.shared, result.a, result.b
    ('root', ['root'], ['x', 'a'], ['b'])
    >>> [(step.a.id, step.b.id if step.b else None) for step in result.steps]
    [('x', 'b'), ('a', None)]
    """
    if context < 0:
        raise ValueError(f"context must be 0 or more lines, not {context}")
    path_a, path_b = path(tree, a), path(tree, b)
    # The fork point is the last node of the paths' common prefix: the two
    # paths from the root agree down to it and part below it. commonprefix
    # compares any sequences item by item, lists of ids as well as strings.
    shared = os.path.commonprefix([path_a, path_b])
    if not shared:
        raise UnrelatedNodes(
            f"{a!r} and {b!r} have no common ancestor: they grow from different"
            f" roots ({path_a[0]!r} and {path_b[0]!r}) of conversation"
            f" {tree.graph.get('tree_id')!r}"
        )
    fork_point = shared[-1]
    below_a, below_b = path_a[len(shared) :], path_b[len(shared) :]
    return BranchDiff(
        node_a=a,
        node_b=b,
        conversation_id=tree.graph.get("tree_id"),
        fork_point=fork_point,
        shared=shared,
        a=below_a,
        b=below_b,
        steps=list(_steps(tree, below_a, below_b, context)),
        totals={
            "shared": BranchTotals.of(tree, shared),
            "a": BranchTotals.of(tree, below_a),
            "b": BranchTotals.of(tree, below_b),
        },
        context=context,
    )


def _steps(
    tree: nx.DiGraph, below_a: list[str], below_b: list[str], context: int
) -> Iterator[Step]:
    for index in range(max(len(below_a), len(below_b))):
        id_a = below_a[index] if index < len(below_a) else None
        id_b = below_b[index] if index < len(below_b) else None
        node_a = tree.nodes[id_a] if id_a is not None else {}
        node_b = tree.nodes[id_b] if id_b is not None else {}
        label_a = f"a/{id_a}" if id_a is not None else "(none)"
        label_b = f"b/{id_b}" if id_b is not None else "(none)"
        prompt_a, prompt_b = node_a.get("prompt"), node_b.get("prompt")
        response_a, response_b = node_a.get("response"), node_b.get("response")
        yield Step(
            step=index + 1,
            a=_side(tree, id_a),
            b=_side(tree, id_b),
            same_prompt=(prompt_a or "") == (prompt_b or ""),
            same_response=(response_a or "") == (response_b or ""),
            response_similarity=similarity(response_a, response_b),
            prompt_diff=text_diff(prompt_a, prompt_b, label_a, label_b, context),
            response_diff=text_diff(response_a, response_b, label_a, label_b, context),
        )


def _side(tree: nx.DiGraph, node: str | None) -> StepSide | None:
    if node is None:
        return None
    attributes = tree.nodes[node]
    return StepSide(
        node, attributes["model"], *(attributes[key] for key in INTEGER_ATTRIBUTES)
    )


# -- the alternatives below one node ----------------------------------------


@dataclass(frozen=True)
class Alternative:
    """One child of the compared node, and how similar its response is to
    each of its siblings' (by id, in log order)."""

    id: str
    model: str | None
    input_tokens: int | None
    output_tokens: int | None
    duration_ms: int | None
    response_length: int | None
    subtree_size: int
    similarity: dict[str, float]
    #: The branch attributes: on the active path (the branch last used),
    #: marked preferred, the user's note.
    active: bool = False
    preferred: bool = False
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: The columns of `Comparison.to_frame`, after the `id` index.
COMPARE_COLUMNS = [
    "model",
    *INTEGER_ATTRIBUTES,
    "response_length",
    "subtree_size",
    "active",
    "preferred",
    "note",
]


@dataclass(frozen=True)
class Comparison:
    """The children of `node`, side by side, in log order."""

    node: str
    alternatives: list[Alternative]
    #: None when every pair of children was compared; else how many
    #: neighbours on each side, in log order, each child was compared with
    #: (more than `ALL_PAIRS_UP_TO` children: see `compare`).
    neighbours: int | None = None

    @property
    def ids(self) -> list[str]:
        return [alternative.id for alternative in self.alternatives]

    def to_dicts(self) -> list[dict[str, Any]]:
        """One dict per child: what `convgraph compare --json` prints."""
        return [alternative.to_dict() for alternative in self.alternatives]

    def to_frame(self) -> pd.DataFrame:
        """One row per child, indexed by id, with the columns of
        `COMPARE_COLUMNS` (response length in characters, None where the
        response is missing)."""
        import pandas as pd

        frame = pd.DataFrame(
            [alternative.to_dict() for alternative in self.alternatives],
            columns=["id", *COMPARE_COLUMNS],
        ).set_index("id")
        for key in (*INTEGER_ATTRIBUTES, "response_length"):
            frame[key] = pd.array(frame[key], dtype="Int64")
        frame["subtree_size"] = frame["subtree_size"].astype("int64")
        return frame

    def similarity_frame(self) -> pd.DataFrame:
        """The similarity of every child's response to every other's, as a
        square frame indexed both ways by child id (1.0 on the diagonal; NaN
        for pairs not compared, when `neighbours` bounds the comparison)."""
        import pandas as pd

        ids = self.ids
        return pd.DataFrame(
            [
                [
                    1.0 if other == alt.id else alt.similarity.get(other, float("nan"))
                    for other in ids
                ]
                for alt in self.alternatives
            ],
            index=pd.Index(ids, name="id"),
            columns=ids,
            dtype=float,
        )


#: Up to this many children, every pair of them is compared.
ALL_PAIRS_UP_TO = 50
#: With more children, each is compared with this many neighbours on each
#: side in log order: pairwise similarity is quadratic (a thousand siblings
#: took 20 s), and the siblings logged next to each other are the retries a
#: user compares.
NEIGHBOURS = 1


def compare(tree: nx.DiGraph, node: str) -> Comparison:
    """The node's children as alternative continuations of one point.

    For each child: its model, tokens, duration, response length, the size of
    its subtree (itself included), and the similarity of its response to
    each sibling's (see `similarity`; each pair is computed once, so the
    values are symmetric). A node without children gives no alternatives.
    With more than `ALL_PAIRS_UP_TO` children, each child's similarity is
    given only to its `NEIGHBOURS` nearest siblings on each side in log
    order, and `Comparison.neighbours` says so: linear, not quadratic, in
    the number of children.

    Raises
    ------
    UnknownNode
        `node` is not in the tree.

    Examples
    --------
    >>> import networkx as nx
    >>> tree = nx.DiGraph([("q", "x"), ("q", "y")])
    >>> for child, text in [("q", ""), ("x", "a b c d"), ("y", "a b c e")]:
    ...     tree.nodes[child].update(response=text, model="m",
    ...         input_tokens=None, output_tokens=None, duration_ms=None)
    >>> compare(tree, "q").to_dicts()[0]["similarity"]
    {'y': 0.75}
    """
    ids = children(tree, node)
    texts = [_Prepared.of(tree.nodes[child]["response"]) for child in ids]
    responses = [tree.nodes[child]["response"] for child in ids]
    scores: dict[str, dict[str, float]] = {child: {} for child in ids}
    neighbours = None if len(ids) <= ALL_PAIRS_UP_TO else NEIGHBOURS
    for i, first in enumerate(ids):
        last = len(ids) if neighbours is None else min(len(ids), i + 1 + neighbours)
        for j in range(i + 1, last):
            second = ids[j]
            if (responses[i] or "") == (responses[j] or ""):
                score = 1.0
            else:
                score = _similarity(texts[i], texts[j])
            scores[first][second] = scores[second][first] = score
    alternatives = []
    for child in ids:
        attributes = tree.nodes[child]
        response = attributes["response"]
        alternatives.append(
            Alternative(
                id=child,
                model=attributes["model"],
                **{key: attributes[key] for key in INTEGER_ATTRIBUTES},
                response_length=len(response) if response is not None else None,
                subtree_size=tree_size(tree, child),
                similarity=scores[child]
                if neighbours is not None
                else {other: scores[child][other] for other in ids if other != child},
                active=bool(attributes.get("active")),
                preferred=bool(attributes.get("preferred")),
                note=attributes.get("note"),
            )
        )
    return Comparison(node, alternatives, neighbours)


__all__ = [
    "Alternative",
    "BranchDiff",
    "BranchTotals",
    "Comparison",
    "DifferentConversations",
    "Step",
    "StepSide",
    "UnrelatedNodes",
    "compare",
    "diff",
    "similarity",
    "text_diff",
]
