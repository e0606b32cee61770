"""How a `Forest` shows itself in Jupyter: its statistics table."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

import pandas as pd

from convgraph.analysis.stats import conversation_table

if TYPE_CHECKING:
    from convgraph.model.forest import Forest

FOREST_ROW_LIMIT = 60


def forest_html(forest: Forest, row_limit: int = FOREST_ROW_LIMIT) -> str:
    """A forest as HTML: its size, then its `conversation_table` (cut)."""
    table = conversation_table(forest)
    table["models"] = [", ".join(models) for models in table["models"]]
    heading = html.escape(repr(forest))
    with pd.option_context(
        "display.max_rows", row_limit, "display.min_rows", row_limit
    ):
        body = table.to_html(
            index=False, na_rep="", max_rows=row_limit, float_format="{:.2f}".format
        )
    return f'<div class="convgraph-forest"><p>{heading}</p>{body}</div>'
