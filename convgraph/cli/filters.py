"""The filters every reading command shares: `--since`, `--until`, `--model`
and `--source` (`filter_options`), given as one `where`, a `TreeFilter`; the
library selects (`convgraph.model.filters`). No pandas import here."""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import click

from convgraph.cli.options import UserError, read_names
from convgraph.model.filters import TreeFilter, tree_is_in
from convgraph.times import parse_bound

if TYPE_CHECKING:
    import networkx as nx

    from convgraph.sources.source import ProgressCallback

F = TypeVar("F", bound=Callable[..., Any])

FILTER_HELP = (
    "A tree is in when any of its nodes matches --since, --until, --model and"
    " --source, and is shown whole."
)

#: Every reader's `SOURCE`, named rather than imported (readers import pandas;
#: tests/test_filters.py checks the two agree).
SOURCES = tuple(
    "responses turns chatgpt claude openwebui"  # noqa: SIM905 (words)
    " claude-code codex gemini-cli copilot-cli".split()
)

BOUND_FORMS = "a date (2026-11-01), a time (2026-11-01T14:00, UTC) or a span back from now (12h, 7d, 2w)"


def filter_options(function: F) -> F:
    """`--since`, `--until`, `--model` (glob), `--source`: given as `where`."""

    @functools.wraps(function)
    def with_filter(*args: Any, **kwargs: Any) -> Any:
        where = make_filter(
            kwargs.pop("filter_since"),
            kwargs.pop("filter_until"),
            kwargs.pop("filter_models"),
            kwargs.pop("filter_sources"),
            names=read_names(),
        )
        return function(*args, where=where, **kwargs)

    decorated: Any = with_filter
    options = [
        click.option(
            "--since",
            "filter_since",
            metavar="WHEN",
            default=None,
            help="Trees with a node logged at or after WHEN: a date, a time"
            " (UTC unless it says) or a span back from now (12h, 7d, 2w)",
        ),
        click.option(
            "--until",
            "filter_until",
            metavar="WHEN",
            default=None,
            help="Trees with a node logged at or before WHEN (a date: the"
            " whole of that day)",
        ),
        click.option(
            "--model",
            "filter_models",
            metavar="GLOB",
            multiple=True,
            help="Trees with a node answered by a model matching GLOB"
            " (gpt-4*; repeatable)",
        ),
        click.option(
            "--source",
            "filter_sources",
            metavar="SOURCE",
            multiple=True,
            help=f"Trees with a node from SOURCE ({', '.join(SOURCES)}), or"
            " read from the source of that name where several are read"
            " (repeatable)",
        ),
    ]
    for option in reversed(options):
        decorated = option(decorated)
    return decorated  # type: ignore[no-any-return]


def make_filter(
    since: str | None,
    until: str | None,
    models: Iterable[str] = (),
    sources: Iterable[str] = (),
    now: datetime | None = None,
    names: Collection[str] = (),
) -> TreeFilter:
    """The `TreeFilter` of the options; a span counts back from `now` (UTC);
    `names`: the sources read, by name. Raises UserError for a bad bound or
    order, or an unknown source."""
    named = tuple(
        source.lower() if source.lower() in SOURCES else source for source in sources
    )
    for source in named:
        if source not in SOURCES and source not in names:
            known = ", ".join([*SOURCES, *names])
            raise UserError(f"--source {source}: no such source; one of {known}")
    first = _bound("--since", since, now, end=False)
    last = _bound("--until", until, now, end=True)
    if first is not None and last is not None and first > last:
        raise UserError(f"--since {since} is after --until {until}: nothing is in")
    return TreeFilter(first, last, tuple(models), named)


def _bound(
    option: str, value: str | None, now: datetime | None, end: bool
) -> datetime | None:
    if value is None:
        return None
    if (moment := parse_bound(value, now, end=end)) is None:
        raise UserError(f"{option} {value}: not {BOUND_FORMS}")
    return moment


def kept(
    trees: Iterable[nx.DiGraph[str]], where: TreeFilter
) -> Iterator[nx.DiGraph[str]]:
    """The trees that are in (all of them for an empty filter)."""
    for graph in trees:
        if not where or tree_is_in(graph, where):
            yield graph


def filtered_trees(
    conversation_ids: Iterable[str],
    where: TreeFilter,
    progress: ProgressCallback | None = None,
) -> Iterator[nx.DiGraph[str]]:
    """The trees the ids name, or every tree, that are in."""
    from convgraph.cli.options import opened_logs

    named = list(conversation_ids)
    logs = opened_logs()
    if named:
        return kept(logs.trees(named), where)
    return logs.forest(progress=progress, where=where).trees()
