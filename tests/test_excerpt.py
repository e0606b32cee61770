"""`convgraph.text.excerpt` flattens only the start of a long text: the same
line as flattening the whole text first, whatever lies past the window."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from wcwidth import wcwidth

from convgraph.text import excerpt


def whole_flattened(text: str, width: int) -> str:
    """The rule as written before: flatten all of it, then cut to `width`."""
    if not text or width <= 0:
        return ""
    flat = " ".join(text.split())
    cells = [1 if (cell := wcwidth(character)) < 0 else cell for character in flat]
    if sum(cells) <= width:
        return flat
    kept, used = 0, 0
    while kept < len(flat) and used + cells[kept] <= width - 1:
        used += cells[kept]
        kept += 1
    return flat[:kept] + "…"


PIECES = [
    "a",
    "bc",
    " ",
    "\n",
    "\t",
    "木",
    "🌳",
    "e\u0301",
    "\u0301",
    "\x1b",
    " " * 300,
]


@given(st.lists(st.sampled_from(PIECES), max_size=200), st.integers(0, 80))
def test_an_excerpt_is_the_whole_text_flattened_then_cut(pieces, width) -> None:
    text = "".join(pieces)
    assert excerpt(text, width) == whole_flattened(text, width)


def test_a_long_text_is_cut_where_its_start_runs_out() -> None:
    # The window's first flattening holds only spaces past "a": the excerpt
    # reads on into the rest of the text.
    text = "a" + " " * 1000 + "b " * 100
    assert excerpt(text, width=8) == "a b b b…"
    assert excerpt("木" * 10_000, width=5) == "木木…"
    assert excerpt("word " * 100_000, width=12) == "word word w…"
