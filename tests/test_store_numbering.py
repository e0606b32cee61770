"""Message hashes numbered by their bytes with guesses: the same numbers as
the strings give.

`columnar.message_store.guessed_numbers` first looks for each reference
where llm's order puts it (`numbering.KeyBytes.rows` with a guess: a
message's parent just before it, a turn's tip its own answer, its input
that answer's parent) and looks up only the misses. Whatever the guesses,
right, wrong or out of range, the numbers must be `numbering.numbered`'s,
exactly; a hash that names no message, or two that mix alike, give None
(then the strings number them, as before).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow")

from convgraph.sources.llm.columnar import numbering  # noqa: E402
from convgraph.sources.llm.columnar.calls import OTHER, USER  # noqa: E402
from convgraph.sources.llm.columnar.message_store import (  # noqa: E402
    guessed_numbers,
    message_numbers,
)
from tests.helpers import examples  # noqa: E402


def digest(number: int) -> str:
    """A message hash as llm 0.32+ writes one: "b2:" and 32 hex digits."""
    return "b2:" + hashlib.blake2b(str(number).encode(), digest_size=16).hexdigest()


def chunked(values: list[str | None], size: int) -> pa.ChunkedArray:
    """`values` in chunks of `size`, as the driver hands over a column."""
    return pa.chunked_array(
        [values[start : start + size] for start in range(0, len(values), size)] or [[]],
        pa.string(),
    )


def strings_numbers(*columns: pa.ChunkedArray) -> list[list[int]]:
    count, found = numbering.numbered(*columns)
    assert count == len(columns[0])  # every reference is a key here
    return [codes.tolist() for codes in found]


def store(size: int) -> dict[str, list]:
    """A store's hashes as llm logs them: threads of a question and an
    answer a turn, every third thread forked from the middle of the one
    before (its first message's parent far above it), and one retry that
    gave an answer already logged (its tip an older message)."""
    hashes: list[str] = []
    parents: list[str | None] = []
    roles: list[int] = []
    starts: list[str] = []
    tips: list[str] = []
    thread_rows: list[int] = []
    for turn in range(size):
        if turn % 4 == 0:
            # A new thread, or a fork of the last one from its middle.
            parent = (
                hashes[thread_rows[len(thread_rows) // 2]]
                if turn % 12 == 0 and thread_rows
                else None
            )
            thread_rows = []
        else:
            parent = hashes[-1]
        question, answer = digest(2 * turn), digest(2 * turn + 1)
        hashes += [question, answer]
        parents += [parent, question]
        roles += [USER, OTHER]
        thread_rows += [len(hashes) - 2, len(hashes) - 1]
        starts.append(question)
        tips.append(answer)
    if size > 2:
        starts.append(hashes[-4])
        tips.append(hashes[-3])  # a retry ending at an answer logged before
    return {
        "hashes": hashes,
        "parents": parents,
        "roles": roles,
        "starts": starts,
        "tips": tips,
    }


@pytest.mark.parametrize("size", [1, 2, 3, 40])
@pytest.mark.parametrize("chunk", [1, 7, 1000])
def test_a_store_logged_in_order_is_numbered_as_strings_are(size, chunk):
    files = store(size)
    keys, parents, starts, tips = (
        chunked(files[name], chunk) for name in ("hashes", "parents", "starts", "tips")
    )
    parts = chunked(files["hashes"], chunk)  # one part a message
    calls = chunked([None, *files["hashes"][1:]], chunk)
    roles = np.array(files["roles"])
    hashes = [keys, parents, starts, tips, parts, calls]
    found = guessed_numbers(hashes, roles)
    assert [codes.tolist() for codes in found] == strings_numbers(
        keys, parents, starts, tips, parts, calls
    )
    # Every column numbered is let go; the keys are strings again.
    assert hashes[1:] == [None] * 5
    assert hashes[0].to_pylist() == files["hashes"]
    # The first parent of each thread is none; the fork's is far above.
    assert found[0][0] == -1
    if size == 40:
        assert found[0][24] == 20  # turn 12 forks from turns 8-11 at their 5th message
        assert found[1][-1] == 2 * size - 4 and found[2][-1] == 2 * size - 3


def test_turns_without_an_answer_each_are_looked_up():
    """Fewer answers than turns: no guess for the tips, the same numbers."""
    files = store(8)
    roles = np.array(files["roles"])
    roles[1] = USER
    columns = [
        chunked(files[name], 3) for name in ("hashes", "parents", "starts", "tips")
    ]
    found = guessed_numbers(list(columns), roles)
    assert [codes.tolist() for codes in found] == strings_numbers(*columns)


@given(
    st.integers(1, 30).flatmap(
        lambda size: st.tuples(
            st.lists(st.one_of(st.none(), st.integers(0, size - 1)), max_size=40),
            st.lists(st.integers(-3, size + 3), min_size=40, max_size=40),
            st.integers(1, 9),
            st.just(size),
        )
    )
)
@settings(max_examples=examples(200), deadline=None)
def test_any_guess_gives_the_strings_numbers(drawn):
    """Right, wrong, missing or out-of-range guesses: the key rows."""
    references, guesses, chunk, size = drawn
    keys = chunked([digest(key) for key in range(size)], chunk)
    values = chunked(
        [None if value is None else digest(value) for value in references], chunk
    )
    by_bytes = numbering.KeyBytes(keys, 35)
    expected = [-1 if value is None else value for value in references]
    guess = np.array(guesses[: len(references)], np.int64)
    assert by_bytes.rows(values, guess).tolist() == expected
    assert by_bytes.rows(values).tolist() == expected


@pytest.mark.parametrize("guess", [None, [0, 1, 2]])
def test_a_hash_that_names_no_message_is_left_to_the_strings(guess):
    keys = chunked([digest(0), digest(1), digest(2)], 2)
    values = chunked([digest(1), digest(9), None], 2)
    rows = None if guess is None else np.array(guess)
    assert numbering.KeyBytes(keys, 35).rows(values, rows) is None
    # The message store's numbers then come from the strings: the hash past
    # the messages, a message of its own with no parent.
    messages = {"hash": keys, "parent_hash": chunked([None, digest(0), digest(9)], 2)}
    turns = {"start": chunked([digest(0)], 2), "tip": chunked([digest(2)], 2)}
    parents, starts, tips = message_numbers(messages, turns)
    assert parents.tolist() == [-1, 0, 3, -1]
    assert (starts.tolist(), tips.tolist()) == ([0], [2])


def test_hashes_that_mix_alike_are_left_to_the_strings(monkeypatch):
    """The few references not guessed are looked up by their integers:
    a key that mixes as one of them but is another string is found out."""
    keys = chunked([digest(0), digest(1), digest(2), digest(3)], 4)
    values = chunked([digest(1)], 4)
    by_bytes = numbering.KeyBytes(keys, 35)
    assert by_bytes.rows(values).tolist() == [1]
    # Every key the integer 0 but the last, as the one reference is.
    monkeypatch.setattr(
        numbering,
        "mix",
        lambda strings: (
            np.zeros(len(strings), np.uint64)
            if len(strings) != 4
            else np.array([1, 2, 3, 0], np.uint64)
        ),
    )
    assert numbering.KeyBytes(keys, 35).rows(values) is None


def test_a_null_holding_characters_is_left_out():
    """Arrow lets a NULL slot hold bytes; the driver writes none, but where
    one does, the strings are not end to end and are copied first."""
    a, b = digest(0), digest(1)
    data = (a + "x" * 35 + b).encode()
    offsets = np.array([0, 35, 70, 105], np.int32)
    validity = pa.array([True, False, True]).buffers()[1]
    holding = pa.Array.from_buffers(
        pa.string(), 3, [validity, pa.py_buffer(offsets), pa.py_buffer(data)], 1
    )
    keys = chunked([a, b], 5)
    rows = numbering.KeyBytes(keys, 35).rows(pa.chunked_array([holding]))
    assert rows.tolist() == [0, -1, 1]


def test_columns_left_to_the_strings_get_the_numbers_all_together_would():
    """Parents found by their bytes, inputs and tips naming messages that
    are not there (two, first seen in the tips' order otherwise): the
    strings number what is left as they would number every column."""
    files = store(6)
    lost, gone = digest(1000), digest(1001)
    starts = [*files["starts"][:-2], gone, lost]
    tips = [*files["tips"][:-2], lost, gone]
    keys, parents = chunked(files["hashes"], 5), chunked(files["parents"], 5)
    columns = [keys, parents, chunked(starts, 5), chunked(tips, 5)]
    messages = {"hash": columns[0], "parent_hash": columns[1]}
    turns = {"start": columns[2], "tip": columns[3]}
    found = message_numbers(messages, turns, roles=np.array(files["roles"]))
    count, expected = numbering.numbered(*columns)
    assert count == len(files["hashes"]) + 2
    expected[0] = np.concatenate([expected[0], [-1, -1]])
    assert [codes.tolist() for codes in found] == [codes.tolist() for codes in expected]
    assert found[1][-2:].tolist() == [count - 2, count - 1]  # gone, then lost
