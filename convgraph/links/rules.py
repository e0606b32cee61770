"""The registry of rules that have two forms: a reference form for one tree
(plain Python, no numpy or pandas) and at most one table form beside it for
the whole forest, named after it with `TABLE` added.

`@rule(kind)` registers the per-tree form; `@table_form(reference)` the
table form. `kind` says which input both forms take (`KINDS`).
tests/test_rule_agreement.py holds every registered pair to one answer and
fails on a pair of the naming scheme left unregistered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

#: The name a table form has: its reference form's, with this added.
TABLE = "_table"

#: The input of each kind: one tree's records (dicts of the node contract,
#: in log order) or the nodes table; one tree's graph or the checked table
#: with its parent rows; one node or the table's rows; a message store's
#: turns turn by turn or on arrays.
RECORDS = "records"
TREE = "tree"
NODE = "node"
TURNS = "turns"
KINDS = (RECORDS, TREE, NODE, TURNS)

Function = TypeVar("Function", bound=Callable[..., Any])


@dataclass
class Rule:
    """One rule: its reference form and its table form (None until
    registered)."""

    name: str
    kind: str
    reference: Callable[..., Any]
    table: Callable[..., Any] | None = None


#: Every rule registered so far, by its reference form's name.
RULES: dict[str, Rule] = {}


def rule(kind: str) -> Callable[[Function], Function]:
    """Register the decorated function as a rule's per-tree form."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind of rule: {kind}")

    def register(function: Function) -> Function:
        name = function.__name__
        known = RULES.get(name)
        if known is not None and known.reference.__module__ != function.__module__:
            raise ValueError(f"two rules named {name}")
        RULES[name] = Rule(name, kind, function)
        return function

    return register


def table_form(of: Callable[..., Any]) -> Callable[[Function], Function]:
    """Register the decorated function as the table form of the rule whose
    reference form is `of`, named `of`'s name with `TABLE` added."""

    def register(function: Function) -> Function:
        rule = RULES.get(of.__name__)
        if rule is None or rule.reference is not of:
            raise ValueError(f"{of.__name__} is no registered reference form")
        if function.__name__ != of.__name__ + TABLE:
            raise ValueError(
                f"the table form of {of.__name__} is named {of.__name__}{TABLE}"
            )
        rule.table = function
        return function

    return register
