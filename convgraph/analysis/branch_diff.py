"""Branch diffs: where two branches of a conversation part (their lowest common
ancestor, or the start where they grow from different roots), and what each
step below changed (`convgraph.analysis.similarity`). pandas only for frames."""

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
    """The n-th node below the fork point on each branch, and their diffs; a side
    is None where its branch is shorter (its texts then count as empty)."""

    step: int
    a: StepSide | None
    b: StepSide | None
    same_prompt: bool
    same_response: bool
    response_similarity: float
    prompt_diff: list[str]
    response_diff: list[str]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class BranchTotals:
    """What a run of nodes adds up to (`convgraph.model.tree.node_totals`)."""

    nodes: int
    input_tokens: int | None
    output_tokens: int | None
    duration_ms: int | None
    models: list[str]

    @classmethod
    def of(cls, tree: nx.DiGraph[str], ids: Sequence[str]) -> BranchTotals:
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
    """How the branches down to `node_a` and `node_b` differ.

    `fork_point` is None where they part at the start, `node_a` where it is
    `node_b`'s ancestor; `shared` the ids from the root down to it; `a` and `b`
    the ids below it; `steps` the two paths paired, the shorter padded with None;
    `totals` the `BranchTotals` of "shared", "a" and "b"."""

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
        """The diff as JSON-ready data: what `convgraph diff --json` prints."""
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
        """One row per step, indexed by step number: each side's id, model and usage,
        the sameness, the similarity and the two diffs as text."""
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
        columns += (
            "same_prompt same_response response_similarity"  # noqa: SIM905 (words)
            " prompt_diff response_diff".split()
        )
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
    """The branches down to `a` and `b` of one tree compared (the same node, an ancestor
    and its descendant, or nodes under two roots), with `context` lines around each
    change. Raises UnknownNode, ValueError for a negative `context`."""
    if context < 0:
        raise ValueError(f"context must be 0 or more lines, not {context}")
    path_a, path_b = path(tree, a), path(tree, b)
    # commonprefix compares any sequences item by item, lists of ids too.
    shared = list(os.path.commonprefix([path_a, path_b]))
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


#: `UnrelatedNodes` stays importable here for code that caught it.
__all__ = [
    "BranchDiff",
    "BranchTotals",
    "Step",
    "StepSide",
    "UnrelatedNodes",
    "diff",
]
