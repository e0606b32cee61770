"""Rules with two forms: `@rule(kind)` on the per-tree reference (plain
Python), `@table_form(reference)` on its table form; tests/test_rule_agreement.py
holds every registered pair to one answer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

TABLE = "_table"

#: What both forms take: one tree's records or the nodes table; one tree's
#: graph or the checked table; one node or the rows; a store's turns.
RECORDS = "records"
TREE = "tree"
NODE = "node"
TURNS = "turns"
KINDS = (RECORDS, TREE, NODE, TURNS)

Function = TypeVar("Function", bound=Callable[..., Any])


@dataclass
class Rule:
    """A rule's two forms (`table` None until registered)."""

    name: str
    kind: str
    reference: Callable[..., Any]
    table: Callable[..., Any] | None = None


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
    """Register the decorated function, named `of`'s name + `TABLE`, as the
    table form of the rule `of`."""

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
