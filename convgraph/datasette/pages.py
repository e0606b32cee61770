"""The plugin's two pages, as Datasette routes: `/-/convgraph/DATABASE`, every
tree's statistics sorted, paged and searched, and `/-/convgraph/DATABASE/ID`,
one tree in the HTML explorer. Both only for an actor who may view the
database, on a file convgraph reads as llm's; reads run off the event loop."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from datasette import Response
from datasette.utils import tilde_decode, tilde_encode
from datasette.utils.asgi import BadRequest, Forbidden, NotFound
from datasette.views.base import DatasetteError

from convgraph.datasette import files
from convgraph.errors import (
    LONGEST_ID,
    AmbiguousId,
    BadNumber,
    ConvgraphError,
    UnknownConversation,
    UnknownNode,
    echoed,
    number,
)
from convgraph.redaction import redact
from convgraph.times import shown_time

if TYPE_CHECKING:
    import pandas as pd
    from datasette.app import Datasette
    from datasette.database import Database
    from datasette.utils.asgi import Request

    from convgraph.search import Hit

PREFIX = "-/convgraph"
FOREST_TEMPLATE = "convgraph/forest.html"
#: The forest page's columns and headings; each sorts the table.
COLUMNS = (
    ("name", "Conversation"),
    ("nodes", "Nodes"),
    ("roots", "Roots"),
    ("leaves", "Leaves"),
    ("max_depth", "Depth"),
    ("branch_points", "Branch points"),
    ("abandoned_branches", "Abandoned"),
    ("active_path_length", "Active path"),
    ("models", "Models"),
    ("tool_calls", "Tool calls"),
    ("input_tokens", "Tokens in"),
    ("output_tokens", "Tokens out"),
    ("first_datetime", "First"),
    ("last_datetime", "Last"),
)
UNSORTED = frozenset({"models"})
DEFAULT_SORT = "last_datetime"
SEARCH_LIMIT = 50
#: Past any forest's pages: a page number is bounded before any read.
LAST_PAGE = 10**9
VIEW_LABEL = "View as conversation trees"


@dataclass(frozen=True)
class Served:
    """A database Datasette serves that convgraph reads as llm's."""

    name: str
    route: str
    path: Path


def file_of(database: Database | None) -> Path | None:
    if database is None or database.is_memory or not database.path:
        return None
    return Path(database.path)


async def llm_file(database: Database | None) -> Path | None:
    """The file behind `database` where convgraph reads it as llm's, else
    None (cached, else asked off the event loop)."""
    if (path := file_of(database)) is None:
        return None
    known = files.known_llm_file(path)
    if known is None:
        known = await asyncio.to_thread(files.is_llm_file, path)
    return path if known else None


def forest_url(datasette: Datasette, route: str) -> str:
    return str(datasette.urls.path(f"{PREFIX}/{tilde_encode(route)}"))


def tree_url(datasette: Datasette, route: str, tree_id: str) -> str:
    return f"{forest_url(datasette, route)}/{tilde_encode(tree_id)}"


async def served(datasette: Datasette, request: Request) -> Served:
    """The database the request's URL names, once the actor may view it.
    Raises `NotFound` (no such database, or not llm's) or `Forbidden`."""
    route = tilde_decode(request.url_vars["database"])
    try:
        database = datasette.get_database(route=route)
    except KeyError:
        raise NotFound(f"Database not found: {echoed(route)}") from None
    visible, _ = await datasette.check_visibility(
        request.actor, permissions=[("view-database", database.name), "view-instance"]
    )
    if not visible:
        raise Forbidden("You do not have permission to view this database")
    if not await may_read(datasette, request.actor, database):
        raise Forbidden(
            "You do not have permission to view the tables these conversations"
            " come from"
        )
    if (path := await llm_file(database)) is None:
        raise NotFound(f"{database.name} is not an llm database: no conversation trees")
    return Served(database.name, database.route, path)


async def may_read(datasette: Datasette, actor: Any, database: Database) -> bool:
    """Whether `actor` may see the texts of `database`, as Datasette's own
    pages decide: SQL allowed (`execute-sql`), or `view-table` on every
    table, since a tree or a hit may come from any of them."""
    name = database.name
    if await datasette.permission_allowed(actor, "execute-sql", name, default=True):
        return True
    try:
        for table in await database.table_names():
            await datasette.ensure_permissions(
                actor, [("view-table", (name, table)), ("view-database", name)]
            )
    except Forbidden:
        return False
    return True


def unreadable(error: ConvgraphError) -> DatasetteError:
    """Datasette's 500 page for a file that cannot be read now, in one line."""
    return DatasetteError(str(error), title="convgraph cannot read this database")


async def tree_view(datasette: Datasette, request: Request) -> Response:
    """`/-/convgraph/DATABASE/ID`: the tree's explorer, or a redirect to it."""
    database = await served(datasette, request)
    given = tilde_decode(request.url_vars["tree"])
    if len(given) > LONGEST_ID:
        raise NotFound(f"No conversation tree or node {echoed(given)}")
    try:
        found = await asyncio.to_thread(files.tree_or_move, database.path, given)
    except (UnknownNode, UnknownConversation):
        raise NotFound(
            f"No conversation tree or node {echoed(given)} in {database.name}"
        ) from None
    except AmbiguousId as error:
        raise BadRequest(str(error)) from None
    except ConvgraphError as error:
        raise unreadable(error) from None
    if isinstance(found, files.Moved):
        url = tree_url(datasette, database.route, found.tree_id)
        if found.node is not None:
            url += "#" + quote(found.node, safe="")
        return Response.redirect(url)

    try:
        tree = await asyncio.to_thread(redact, found) if redacting(datasette) else found
    except ConvgraphError as error:
        raise unreadable(error) from None

    def row_url(table: str, node: str) -> str:
        return str(datasette.urls.row(database.name, table, tilde_encode(node)))

    page = await asyncio.to_thread(
        files.tree_page,
        tree,
        row_url,
        forest_url(datasette, database.route),
        f"\u2190 {database.name}: every tree",
    )
    return Response.html(page)


@dataclass(frozen=True)
class Order:
    column: str
    descending: bool
    page: int

    @classmethod
    def of(cls, request: Request) -> Order:
        """The order a request's `_sort`, `_sort_desc` and `_page` ask for.
        Raises `BadRequest` for a column that does not sort or a bad page."""
        ascending = request.args.get("_sort")
        descending = request.args.get("_sort_desc")
        if ascending and descending:
            raise BadRequest("Cannot use _sort and _sort_desc at the same time")
        column = ascending or descending or DEFAULT_SORT
        if column not in dict(COLUMNS) or column in UNSORTED:
            raise BadRequest(f"Cannot sort the conversation trees by {echoed(column)}")
        try:
            page = number(request.args.get("_page") or "1", 1, LAST_PAGE, "_page")
        except BadNumber as error:
            raise BadRequest(str(error)) from None
        return cls(column, bool(descending) or not ascending, page)

    def query(self, **changes: Any) -> str:
        """The query string of this order with `changes`."""
        column = changes.get("column", self.column)
        descending = changes.get("descending", self.descending)
        page = changes.get("page", self.page)
        args = {"_sort_desc" if descending else "_sort": column}
        if page > 1:
            args["_page"] = str(page)
        return "?" + urlencode(args)


def forest_rows(
    table: pd.DataFrame, order: Order, size: int
) -> tuple[int, list[dict[str, Any]]]:
    """The number of trees, and the rows of the page `order` asks for."""
    sorted_table = table.sort_values(
        [order.column, "tree_id"],
        ascending=[not order.descending, True],
        na_position="last",
        kind="stable",
    )
    start = (order.page - 1) * size
    return len(table), files.plain_rows(sorted_table.iloc[start : start + size])


def shown(value: Any) -> str:
    """A statistic as the page shows it (None as nothing)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}".rstrip("0").rstrip(".")
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)
    return shown_time(str(value))


def names_of(table: pd.DataFrame, tree_ids: set[str]) -> dict[str, str | None]:
    found = table.loc[table["tree_id"].isin(tree_ids), ["tree_id", "name"]]
    return {
        str(tree_id): (name if isinstance(name, str) else None)
        for tree_id, name in zip(found["tree_id"], found["name"], strict=True)
    }


def snippet_pieces(hit: Hit) -> list[tuple[str, bool]]:
    """The hit's snippet as (text, is a found word) pieces."""
    pieces, at = [], 0
    for start, end in hit.marks:
        if start > at:
            pieces.append((hit.snippet[at:start], False))
        pieces.append((hit.snippet[start:end], True))
        at = end
    if at < len(hit.snippet):
        pieces.append((hit.snippet[at:], False))
    return pieces


def redacting(datasette: Datasette) -> bool:
    """Whether the pages replace secrets: the plugin's setting `redact`."""
    return bool((datasette.plugin_config("convgraph") or {}).get("redact"))


def forest_context(
    path: Path, order: Order, size: int, query: str, secret: bool = False
) -> dict[str, Any]:
    """The forest page's rows and hits, read off the event loop; `secret`
    replaces secrets (`convgraph.redaction`)."""
    table = redact(files.statistics(path)) if secret else files.statistics(path)
    total, rows = forest_rows(table, order, size)
    context: dict[str, Any] = {
        "total": total,
        "rows": rows,
        "hits": None,
        "search_error": None,
    }
    if query:
        try:
            hits = files.search(path, query, SEARCH_LIMIT)
            hits = redact(hits) if secret else hits
        except ConvgraphError as error:
            context["search_error"] = str(error)
        else:
            names = names_of(table, {hit.tree_id for hit in hits})
            context["hits"] = [
                {
                    "hit": hit,
                    "name": names.get(hit.tree_id),
                    "pieces": snippet_pieces(hit),
                }
                for hit in hits
            ]
    return context


async def forest_view(datasette: Datasette, request: Request) -> Response:
    """`/-/convgraph/DATABASE`: every tree's statistics, and a search's hits."""
    database = await served(datasette, request)
    order = Order.of(request)
    size = int(datasette.setting("default_page_size"))
    query = (request.args.get("q") or "").strip()
    try:
        context = await asyncio.to_thread(
            forest_context, database.path, order, size, query, redacting(datasette)
        )
    except ConvgraphError as error:
        raise unreadable(error) from None
    total = context["total"]
    pages = max(1, -(-total // size))
    if order.page > pages:
        raise NotFound(
            f"Page {order.page} of {pages}: {database.name} has {total} trees"
        )
    home = forest_url(datasette, database.route)
    for row in context["rows"]:
        row["url"] = tree_url(datasette, database.route, row["tree_id"])
        row["cells"] = [(column, shown(row.get(column))) for column, _ in COLUMNS[1:]]
    for found in context["hits"] or ():
        hit = found["hit"]
        found["tree_url"] = tree_url(datasette, database.route, hit.tree_id)
        found["node_url"] = found["tree_url"] + "#" + quote(hit.id, safe="")
    headings = []
    for column, label in COLUMNS:
        sorted_here = column == order.column
        heading = {"column": column, "label": label, "url": None, "sorted": None}
        if column not in UNSORTED:
            # A click sorts the way it is not sorted (figures largest first).
            descending = not order.descending if sorted_here else column != "name"
            heading["url"] = home + order.query(
                column=column, descending=descending, page=1
            )
            if sorted_here:
                heading["sorted"] = "descending" if order.descending else "ascending"
        headings.append(heading)
    first = (order.page - 1) * size
    context.update(
        {
            "database": database.name,
            "database_url": str(datasette.urls.database(database.name)),
            "forest_url": home,
            "query": query,
            "headings": headings,
            "first": first + 1 if total else 0,
            "last": first + len(context["rows"]),
            "page": order.page,
            "pages": pages,
            "previous_url": home + order.query(page=order.page - 1)
            if order.page > 1
            else None,
            "next_url": home + order.query(page=order.page + 1)
            if order.page < pages
            else None,
            "search_limit": SEARCH_LIMIT,
        }
    )
    return Response.html(
        await datasette.render_template(
            FOREST_TEMPLATE, context, request=request, view_name="convgraph-forest"
        )
    )
