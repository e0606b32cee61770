"""The alternatives at one point of a conversation, side by side.

`compare(tree, node)` takes the node's children as alternative answers to
one point of the conversation (regenerations, other models' answers), or
with `node` None the roots of the tree, the alternatives at its start (a
first prompt regenerated or edited: docs/design.md#depth-roots-and-branching),
and measures each: model, usage, response length, subtree size, the branch marks,
and the similarity of its response to each sibling's
(`convgraph.analysis.similarity`). The result is a dataclass with a
plain-dict form (`convgraph compare --json`) and pandas forms; pandas is
imported only when a frame is asked for.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from convgraph.analysis.similarity import PreparedText, prepared_similarity
from convgraph.contract import INTEGER_ATTRIBUTES
from convgraph.model.tree import alternatives, tree_size

if TYPE_CHECKING:
    import networkx as nx
    import pandas as pd


@dataclass(frozen=True)
class Alternative:
    """One child of the compared node (or one root, at the start), and how
    similar its response is to each of its siblings' (by id, in log order)."""

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
    """The children of `node`, side by side, in log order; the roots of the
    tree where `node` is None (the start)."""

    node: str | None
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
            frame[key] = frame[key].astype("Int64")
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


def compare(tree: nx.DiGraph[str], node: str | None) -> Comparison:
    """The node's children as alternative continuations of one point; with
    `node` None, the roots of the tree as the alternatives at its start
    (`convgraph.model.tree.alternatives`).

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
    >>> tree.add_node("again", response="a b c", model="m", input_tokens=None,
    ...     output_tokens=None, duration_ms=None)
    >>> compare(tree, None).ids  # the start: the roots
    ['q', 'again']
    """
    ids = alternatives(tree, node)
    texts = [PreparedText.of(tree.nodes[child]["response"]) for child in ids]
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
                score = prepared_similarity(texts[i], texts[j])
            scores[first][second] = scores[second][first] = score
    measured = []
    for child in ids:
        attributes = tree.nodes[child]
        response = attributes["response"]
        measured.append(
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
    return Comparison(node, measured, neighbours)
