"""The alternatives at one point of a conversation, side by side: a node's
children, or the roots at the start, each measured and compared with its
siblings (`convgraph.analysis.similarity`). pandas only for the frames."""

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
    """One alternative, and its response's similarity to each sibling's (by id)."""

    id: str
    model: str | None
    input_tokens: int | None
    output_tokens: int | None
    duration_ms: int | None
    response_length: int | None
    subtree_size: int
    similarity: dict[str, float]
    active: bool = False
    preferred: bool = False
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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
    """The alternatives at `node` (None: the start), in log order."""

    node: str | None
    alternatives: list[Alternative]
    #: None where every pair was compared, else the neighbours on each side.
    neighbours: int | None = None

    @property
    def ids(self) -> list[str]:
        return [alternative.id for alternative in self.alternatives]

    def to_dicts(self) -> list[dict[str, Any]]:
        """One dict per child: what `convgraph compare --json` prints."""
        return [alternative.to_dict() for alternative in self.alternatives]

    def to_frame(self) -> pd.DataFrame:
        """One row per alternative, indexed by id, with `COMPARE_COLUMNS`."""
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
        """Every pair's similarity as a square frame by id (NaN for pairs not compared)."""
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
#: Beyond, each with this many neighbours a side: all pairs are quadratic,
#: and siblings logged next to each other are the retries a user compares.
NEIGHBOURS = 1


def compare(tree: nx.DiGraph[str], node: str | None) -> Comparison:
    """The alternatives at `node` (its children; the roots where None), each with
    its figures, subtree size and similarity to each sibling (symmetric). Over
    `ALL_PAIRS_UP_TO` alternatives, only `NEIGHBOURS` on each side are compared
    (`Comparison.neighbours`). Raises UnknownNode."""
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
