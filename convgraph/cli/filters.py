"""The filters every reading command shares: `--since`, `--until`, `--model`
and `--source`, one decorator (`filter_options`) as `output_options` is one.

The command receives one keyword, `where`: a `TreeFilter`, empty (false)
when no option was given. A tree is in when any of its nodes matches, and
is shown whole. The library does the selecting (`convgraph.model.filters`):
`select_trees` for a command that reads the forest, `tree_is_in` for one
that reads trees one at a time; `kept` below is the second for a list of
trees. A bound that is no date, time or span is one line and exit status 2.
Nothing here imports pandas: `convgraph.model.filters` imports it only
inside the functions that work on tables.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import click

from convgraph.cli.options import UserError
from convgraph.model.filters import TreeFilter, tree_is_in
from convgraph.times import parse_bound

if TYPE_CHECKING:
    import networkx as nx

    from convgraph.sources.source import ProgressCallback

F = TypeVar("F", bound=Callable[..., Any])

#: The help every filtered command shows once, after its options' own.
FILTER_HELP = (
    "A tree is in when any of its nodes matches --since, --until, --model and"
    " --source, and is shown whole."
)

#: Every source a node may come from: each reader's `SOURCE` (llm's two
#: generations, the chat exports, the agents' sessions), named here rather
#: than imported, since the readers import pandas (tests/test_filters.py
#: checks the two agree).
SOURCES = (
    "responses",
    "turns",
    "chatgpt",
    "claude",
    "openwebui",
    "claude-code",
    "codex",
    "gemini-cli",
    "copilot-cli",
)

#: What a bound may be, for the help and the error.
BOUND_FORMS = "a date (2026-11-01), a time (2026-11-01T14:00, UTC) or a span back from now (12h, 7d, 2w)"


def filter_options(function: F) -> F:
    """`--since`, `--until`, `--model` (repeatable glob), `--source`
    (repeatable): the command receives `where`, a `TreeFilter`."""

    @functools.wraps(function)
    def with_filter(*args: Any, **kwargs: Any) -> Any:
        where = make_filter(
            kwargs.pop("filter_since"),
            kwargs.pop("filter_until"),
            kwargs.pop("filter_models"),
            kwargs.pop("filter_sources"),
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
            help=f"Trees with a node from SOURCE ({', '.join(SOURCES)};"
            " repeatable), where a file mixes them",
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
) -> TreeFilter:
    """The `TreeFilter` of the options as typed; `now` (UTC) is the moment
    a span counts back from (the present when None).

    Raises
    ------
    UserError
        A bound is no date, time or span, `--since` is after `--until`, or
        a source is none of `SOURCES`.
    """
    named = tuple(source.lower() for source in sources)
    for source in named:
        if source not in SOURCES:
            raise UserError(
                f"--source {source}: no such source; one of {', '.join(SOURCES)}"
            )
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
    moment = parse_bound(value, now, end=end)
    if moment is None:
        raise UserError(f"{option} {value}: not {BOUND_FORMS}")
    return moment


def kept(
    trees: Iterable[nx.DiGraph[str]], where: TreeFilter
) -> Iterator[nx.DiGraph[str]]:
    """The trees that are in, one at a time (all of them for an empty filter)."""
    for graph in trees:
        if not where or tree_is_in(graph, where):
            yield graph


def filtered_trees(
    conversation_ids: Iterable[str],
    where: TreeFilter,
    progress: ProgressCallback | None = None,
) -> Iterator[nx.DiGraph[str]]:
    """The trees the ids name (`load_trees`), or every tree, that are in:
    named trees checked one by one, the whole forest selected on its table
    (its read told to `progress`)."""
    from convgraph.cli.options import opened_logs

    named = list(conversation_ids)
    logs = opened_logs()
    if named:
        return kept(logs.trees(named), where)
    # Every tree: what `Logs.trees` reads too, here with its progress.
    return logs.forest(progress=progress, where=where).trees()
