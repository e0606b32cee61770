"""What every convgraph command shares: `--db`, `--json`, and error handling.

Errors a user can cause (a missing file, an unknown id, a locked database)
end as one line on stderr and exit status 2, never a traceback. The handling
lives on the command class, so the same commands behave the same way when the
llm plugin adds them to `llm`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

import click

from convgraph.errors import ConvgraphError

F = TypeVar("F", bound=Callable[..., Any])

#: The exit status of an error the user caused (click uses 2 for usage errors).
USER_ERROR = 2


class UserError(click.ClickException):
    """A `ClickException` that exits with status 2."""

    exit_code = USER_ERROR


class ConvgraphCommand(click.Command):
    """A click command that turns convgraph's errors into one-line messages."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ConvgraphError as error:
            raise UserError(str(error)) from None
        except sqlite3.IntegrityError as error:
            raise UserError(f"the database refused the change: {error}") from None
        except sqlite3.DatabaseError as error:
            raise UserError(f"database error: {error}") from None


def db_option(function: F) -> F:
    """`--db PATH`: the database to read; llm's own logs.db by default."""
    return click.option(
        "--db",
        "db_path",
        type=click.Path(dir_okay=False, path_type=str),
        default=None,
        help="The llm database [default: llm's logs.db, as `llm logs path` prints]",
    )(function)


def json_option(function: F) -> F:
    """`--json`: print JSON instead of text."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON")(function)


def echo_json(value: Any) -> None:
    """Print `value` as indented JSON, text kept verbatim (no ASCII escapes)."""
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def echo_ids(ids: list[str], as_json: bool) -> None:
    """Print a list of node ids: one a line, or a JSON array."""
    if as_json:
        echo_json(ids)
    else:
        for node_id in ids:
            click.echo(node_id)
