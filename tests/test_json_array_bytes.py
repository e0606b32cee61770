"""`echo_json_array` writes orjson's bytes and looks for the characters a
terminal would act on among their non-ASCII bytes (and DEL) alone: the same
text as `json_text` of the whole list, whatever the strings hold."""

from __future__ import annotations

import contextlib
import io

from hypothesis import given
from hypothesis import strategies as st

from convgraph.cli.output import echo_json_array, json_text
from tests.helpers import printed

#: Each end of every run `_JSON_UNSAFE` escapes, the characters just
#: outside them, and others beyond ASCII that are written as they are.
CHARACTERS = (
    "\x7e\x7f\x80\x9f\xa0"
    "\u061b\u061c\u061d\u200d\u200e\u200f\u2010\u2026"
    "\u2027\u2028\u202e\u202f\u2065\u2066\u2069\u206a"
    "\ufffd\ufffe\uffff\U0001f600é\x1b\n"
)


def test_every_character_to_escape_and_its_neighbours() -> None:
    for character in CHARACTERS:
        items = [{"name": f"a{character}b", "models": [character]}, {"n": 1}]
        assert printed(echo_json_array, items) == json_text(items) + "\n"
    escaped = printed(echo_json_array, [{"name": "\u202e\x85…\ud800"}])
    assert escaped == '[\n  {\n    "name": "\\u202e\\u0085…\\ud800"\n  }\n]\n'


def test_a_stdout_that_takes_only_text_is_given_text() -> None:
    items = [{"name": "a…b"}, {"n": 1}]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        echo_json_array(items)
    assert out.getvalue() == json_text(items) + "\n"


@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["tree_id", "name", "models"]),
            st.one_of(st.text(), st.lists(st.text(), max_size=3), st.integers()),
        ),
        max_size=5,
    )
)
def test_any_strings_print_as_the_whole_lists_json(items: list[dict]) -> None:
    assert printed(echo_json_array, items) == json_text(items) + "\n"
