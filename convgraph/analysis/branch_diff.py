"""Branch diffs: where two branches of a conversation split, and what changed.

`diff(tree, a, b)` finds the fork point of two nodes (their lowest common
ancestor, or the start of the conversation where they grow from different
roots, which are alternatives to each other:
docs/design.md#depth-roots-and-branching), the path they share and the two
paths below it, pairs those paths step by step and diffs the prompts and
responses of each step (`convgraph.analysis.similarity`). The result is a dataclass with a
plain-dict form (the command line's `--json`) and a pandas form; pandas is
imported only when a frame is asked for.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from convgraph.analysis.similarity import DEFAULT_CONTEXT, similarity, text_diff
from convgraph.contract import INTEGER_ATTRIBUTES
from convgraph.errors import UnrelatedNodes
from convgraph.model.tree import node_totals, path

if TYPE_CHECKING:
    import networkx as nx
    import pandas as pd


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
    def of(cls, tree: nx.DiGraph[str], ids: Sequence[str]) -> BranchTotals:
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
        is `node_a` itself when `node_a` is an ancestor of `node_b`, and None
        when they grow from different roots: they part at the start of the
        conversation and differ from its first turn.
    shared
        The ids from the root down to the fork point (inclusive); empty when
        the fork point is the start.
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
    fork_point: str | None
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
        point, or the first turn where the fork point is the start): each side's id, model and usage, whether prompts and
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
                frame[column] = frame[column].astype("Int64")
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
            frame[key] = frame[key].astype("Int64")
        return frame


def diff(
    tree: nx.DiGraph[str], a: str, b: str, context: int = DEFAULT_CONTEXT
) -> BranchDiff:
    """Compare the branches down to nodes `a` and `b` of one conversation tree.

    Parameters
    ----------
    tree
        A conversation tree (from `load_tree`, `load_tree_of_node` or
        `Forest.tree`).
    a, b
        Node ids in `tree`; the same id, an ancestor and its descendant, or
        nodes under two different roots (alternatives at the start) are
        allowed.
    context
        Lines of context around each change in the unified diffs.

    Returns
    -------
    BranchDiff

    Raises
    ------
    UnknownNode
        `a` or `b` is not in the tree (nodes of two different trees are
        refused before, by `convgraph.model.loading.load_tree_of_pair`).

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
    >>> tree.add_edge("again", "y")
    >>> for node in ("again", "y"):
    ...     tree.nodes[node].update(prompt=node, response=node, model="m",
    ...         input_tokens=1, output_tokens=2, duration_ms=3)
    >>> across = diff(tree, "a", "y")  # two roots: alternatives at the start
    >>> across.fork_point, across.shared, across.a, across.b
    (None, [], ['root', 'x', 'a'], ['again', 'y'])
    """
    if context < 0:
        raise ValueError(f"context must be 0 or more lines, not {context}")
    path_a, path_b = path(tree, a), path(tree, b)
    # The fork point is the last node of the paths' common prefix: the two
    # paths from the root agree down to it and part below it. commonprefix
    # compares any sequences item by item, lists of ids as well as strings.
    shared = list(os.path.commonprefix([path_a, path_b]))
    # Under two roots nothing is shared: the branches part at the start of
    # the conversation (None, as `branch_points` names it) and each path,
    # from its root, is what differs.
    fork_point = shared[-1] if shared else None
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
    tree: nx.DiGraph[str], below_a: list[str], below_b: list[str], context: int
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


def _side(tree: nx.DiGraph[str], node: str | None) -> StepSide | None:
    if node is None:
        return None
    attributes = tree.nodes[node]
    return StepSide(
        node, attributes["model"], *(attributes[key] for key in INTEGER_ATTRIBUTES)
    )


#: `UnrelatedNodes` stays importable from here for code that caught it;
#: `diff` no longer raises it (nodes under different roots part at the start).
__all__ = [
    "BranchDiff",
    "BranchTotals",
    "Step",
    "StepSide",
    "UnrelatedNodes",
    "diff",
]
