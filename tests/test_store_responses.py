"""Writing responses: ids in llm's form, and llm where llm must write
(`convgraph.store.responses`)."""

from __future__ import annotations

import re
import sys
import time

import pytest
from ulid import ULID

from convgraph.errors import BranchError, ImportRefused
from convgraph.store.branch import NEEDS_LLM
from convgraph.store.responses import new_response_id, require_llm

#: llm's ids: a ULID in lower case, Crockford's base 32 (no i, l, o, u).
LLM_ID = re.compile("[0-9abcdefghjkmnpqrstvwxyz]{26}")


def test_new_ids_are_llms_form_and_carry_the_time_they_were_made():
    before = time.time_ns() // 1_000_000
    ids = [new_response_id() for _ in range(100)]
    after = time.time_ns() // 1_000_000
    assert all(LLM_ID.fullmatch(node_id) for node_id in ids)
    # The first ten characters are the millisecond of making, as python-ulid
    # reads it back (an ordering of three clock readings, not a duration).
    moments = [ULID.from_str(node_id.upper()).milliseconds for node_id in ids]
    assert before <= moments[0] and moments == sorted(moments) and moments[-1] <= after
    assert ids == sorted(ids) and len(set(ids)) == len(ids)


def test_without_llm_a_write_that_needs_it_says_so_in_one_line(monkeypatch):
    # Python's import finds None in sys.modules as a module that is missing.
    monkeypatch.setitem(sys.modules, "llm", None)
    with pytest.raises(BranchError) as error:
        require_llm(NEEDS_LLM, BranchError)
    assert str(error.value) == (
        "branching calls a model through llm, which is not installed: pip install llm"
    )
    with pytest.raises(ImportRefused):
        require_llm("importing writes llm's database", ImportRefused)


def test_with_llm_it_is_the_llm_package():
    import llm

    assert require_llm(NEEDS_LLM, BranchError) is llm
