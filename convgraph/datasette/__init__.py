"""convgraph inside Datasette, read-only, on llm's databases: the tree and
forest pages (`pages`) and links to them from Datasette's own pages. The
hooks run for every page, so they import no pandas or networkx."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from datasette import hookimpl as datasette_hook
from datasette.utils import tilde_encode
from markupsafe import Markup, escape

from convgraph.datasette import files
from convgraph.datasette.pages import (
    PREFIX,
    VIEW_LABEL,
    file_of,
    forest_url,
    forest_view,
    llm_file,
    may_read,
    tree_url,
    tree_view,
)

if TYPE_CHECKING:
    from datasette.app import Datasette

Hook = TypeVar("Hook", bound=Callable[..., Any])


def hookimpl(function: Hook) -> Hook:
    """Datasette's `hookimpl`, typed."""
    return cast(Hook, datasette_hook(function))


#: The foreign-key cells that name a conversation: the row's link stays
#: beside the tree's.
OTHER_ROWS = {
    ("responses", "conversation_id"): "conversations",
    ("turns", "thread_id"): "threads",
}
#: The (table, column) cells that name a node or conversation (a table page
#: draws its primary key without `render_cell`).
TREE_CELLS = frozenset(
    {(table, "id") for table in ("responses", "turns", "threads", "conversations")}
).union(OTHER_ROWS)
TREE_TABLES = frozenset(table for table, _ in TREE_CELLS)
CELL_TITLE = "View in its conversation tree"


@hookimpl
def register_routes(datasette: Datasette) -> list[tuple[str, Callable[..., Any]]]:
    """The plugin's pages: one tree, and the forest of a database."""
    return [
        (rf"^/{PREFIX}/(?P<database>[^/]+)/(?P<tree>[^/]+)$", tree_view),
        (rf"^/{PREFIX}/(?P<database>[^/]+)$", forest_view),
    ]


def _cell(
    datasette: Datasette,
    database: str,
    table: str,
    column: str,
    value: str,
    label: str | None,
) -> Markup:
    """A cell's id linked to its tree; a foreign key keeps its row link."""
    route = datasette.databases[database].route
    if (other := OTHER_ROWS.get((table, column))) is None:
        shown = escape(value)
    else:
        row = datasette.urls.row(database, other, tilde_encode(value))
        if label and label != value:
            shown = Markup('<a href="{}">{}</a>&nbsp;<em>{}</em>').format(
                row, label, value
            )
        else:
            shown = Markup('<a href="{}">{}</a>').format(row, value)
    return Markup('{} <a class="convgraph-tree" href="{}" title="{}">tree</a>').format(
        shown, tree_url(datasette, route, value), CELL_TITLE
    )


@hookimpl
def render_cell(
    row: Any,
    value: Any,
    column: str,
    table: str | None,
    database: str,
    datasette: Datasette,
) -> Markup | Callable[[], Awaitable[Markup | None]] | None:
    """An id cell of `TREE_CELLS` with a link to its tree (a coroutine where it
    is not yet known whether the file is llm's)."""
    if (table, column) not in TREE_CELLS:
        return None
    label = None
    if isinstance(value, dict):
        value, label = value.get("value"), value.get("label")
        label = str(label) if label is not None else None
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        return None
    text = str(value)
    found = datasette.databases.get(database)
    path = file_of(found)
    if path is None or table is None:
        return None
    if (known := files.known_llm_file(path)) is not None:
        return _cell(datasette, database, table, column, text, label) if known else None

    async def later() -> Markup | None:
        if table is None or await llm_file(found) is None:
            return None
        return _cell(datasette, database, table, column, text, label)

    return later


async def _view_links(
    datasette: Datasette, actor: Any, database: str
) -> list[dict[str, str]]:
    """The link to the forest page, for an actor who may view llm's database."""
    found = datasette.databases.get(database)
    if found is None or await llm_file(found) is None:
        return []
    visible, _ = await datasette.check_visibility(
        actor, permissions=[("view-database", database), "view-instance"]
    )
    if not visible or not await may_read(datasette, actor, found):
        return []
    return [{"href": forest_url(datasette, found.route), "label": VIEW_LABEL}]


@hookimpl
def table_actions(
    datasette: Datasette, actor: Any, database: str, table: str, request: Any
) -> Callable[[], Awaitable[list[dict[str, str]]]] | None:
    """The action "View as conversation trees" on llm's node and conversation tables."""
    if table not in TREE_TABLES:
        return None
    return functools.partial(_view_links, datasette, actor, database)


@hookimpl
def database_actions(
    datasette: Datasette, actor: Any, database: str, request: Any
) -> Callable[[], Awaitable[list[dict[str, str]]]]:
    """The action "View as conversation trees" on an llm database's page."""
    return functools.partial(_view_links, datasette, actor, database)
