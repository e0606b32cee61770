"""What every convgraph command shares: `--db`, the output options, and the
handling of errors.

The output options are one decorator, `output_options`, as sqlite-utils has
it: every command that prints records or ids takes `--table`, `--json`,
`--nl`, `--csv` and `--tsv`, so they are learnt once. Without one of them a
command prints its form for a person, terminal or not, so that what a script
reads does not change with where it runs: records as an aligned table, ids
one a line. `convgraph.cli.output` does the printing.

Errors a user can cause (a missing file, an unknown id, a locked database)
end as one line on stderr and exit status 2, never a traceback. The handling
lives on the command class, so the same commands behave the same way when the
llm plugin adds them to `llm`. A message may quote an id or a path from the
database: it is shown through `terminal_text`, and a line break in it shows
as a symbol, so it stays one line.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from convgraph.cli.memory import use_system_allocator
from convgraph.cli.way_out import way_out
from convgraph.errors import (
    AmbiguousId,
    ConversationNotNode,
    ConvgraphError,
    NodeNotConversation,
    UnknownConversation,
    UnknownNode,
)
from convgraph.text import terminal_text

if TYPE_CHECKING:
    from convgraph.logs import Logs

F = TypeVar("F", bound=Callable[..., Any])

#: The exit status of an error the user caused (click uses 2 for usage errors).
USER_ERROR = 2

#: The output options, each with its help; the flag is `--` and the name.
OUTPUT_FORMATS = {
    "table": "Aligned columns for reading (records print so by default)",
    "json": "A JSON array",
    "nl": "Newline-delimited JSON: one value a line",
    "csv": "CSV with a header row",
    "tsv": "Tab-separated values with a header row",
}


class UserError(click.ClickException):
    """A `ClickException` that exits with status 2, its message on one line
    with every control character shown as a symbol."""

    exit_code = USER_ERROR

    def format_message(self) -> str:
        return terminal_text(self.message)


class UserLines(UserError):
    """A `UserError` of several lines (a first line, then one a candidate),
    each line shown as `UserError` shows its one."""

    def __init__(self, lines: list[str]):
        super().__init__("\n".join(lines))
        self.lines = lines

    def format_message(self) -> str:
        return "\n".join(terminal_text(line) for line in self.lines)


class IdType(click.ParamType[str]):
    """An id as the user types it, whole or a unique prefix (as git takes
    one): `ConvgraphCommand` resolves it to the whole id once, before the
    command reads anything (`convgraph.sources.Source.resolve`). `kind` is
    what the command wants: a node, a conversation, or either (None)."""

    def __init__(self, kind: str | None, name: str):
        self.kind = kind
        self.name = name

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> str:
        return str(value)


#: The kinds `Source.resolve` tells apart (`convgraph.sources.source.NODE`
#: and `CONVERSATION`: spelt here so the command line imports no reader).
NODE_ID = IdType("node", "node_id")
CONVERSATION_ID = IdType("conversation", "conversation_id")
#: A node, or where it names none, a conversation (compare, transcript).
ANY_ID = IdType(None, "id")


class ConvgraphCommand(click.Command):
    """A click command that turns convgraph's errors, and the database errors
    that bad input or another program can cause, into one-line messages, and
    resolves the ids its arguments take (`IdType`) before it runs.

    It is also the one way out of every command (`convgraph.cli.way_out`):
    Ctrl-C is one line and exit status 130, SIGTERM one line and 143, a
    reader of stdout that went away ends the command quietly, and stdout
    that cannot be written (a full disk) is one line naming it."""

    def invoke(self, ctx: click.Context) -> Any:
        # The command's process is its own: Arrow's pool is chosen before
        # any read imports pyarrow (`convgraph.cli.memory`).
        use_system_allocator()
        with way_out():
            return self._checked(ctx)

    def _checked(self, ctx: click.Context) -> Any:
        try:
            check_default_database(ctx)
            if ctx.command.name in WRITES_A_DATABASE:
                check_writable(ctx.meta.get(DB_PATH))
            resolve_ids(ctx)
            if "db_path" in ctx.params:
                # A command that writes the file opens it itself: the ids
                # are resolved, and nothing of it is held open meanwhile.
                logs = ctx.meta.pop(LOGS, None)
                if logs is not None:
                    logs.close()
            return super().invoke(ctx)
        except AmbiguousId as error:
            raise UserLines(
                [f"{error.heading()}:", *(f"  {line}" for line in error.candidates)]
            ) from None
        except NodeNotConversation as error:
            # The command's own words, with the id it takes.
            raise UserError(
                f"{error.id} is a node of conversation {error.tree_id}:"
                f" {ctx.command_path} {error.tree_id}"
            ) from None
        except ConversationNotNode as error:
            raise UserError(
                f"{error.id} is a conversation, not a node:"
                f" {_command_line(ctx, 'leaves')} {error.tree_id} lists its"
                " branch tips"
            ) from None
        except (UnknownNode, UnknownConversation) as error:
            raise UserError(_unknown_id(error)) from None
        except ConvgraphError as error:
            raise UserError(str(error)) from None
        except click.ClickException:
            raise
        except Exception as error:
            # Only a database's own errors get here with a message to say.
            from convgraph.logs import database_failure

            message = database_failure(error)
            if message is None:
                raise
            raise UserError(message) from None


def _unknown_id(error: UnknownNode | UnknownConversation) -> str:
    """What an unknown id says: where it is shorter than a prefix may be,
    how long a prefix must be."""
    from convgraph.sources.source import MIN_PREFIX

    given = error.args[0] if error.args else None
    if isinstance(given, str) and 0 < len(given) < MIN_PREFIX:
        return (
            f"{error}: an id prefix needs at least {MIN_PREFIX} characters"
            f" ({given!r} has {len(given)})"
        )
    return str(error)


def _command_line(ctx: click.Context, name: str) -> str:
    """How the user types the command `name` from where this one runs:
    beside it (`convgraph leaves`), or in the `convgraph` group of llm's
    (`llm convgraph leaves`, where `llm path` ran)."""
    parent = ctx.parent
    group = parent.command if parent is not None else None
    if parent is None or not isinstance(group, click.Group):
        return f"convgraph {name}"
    if group.get_command(parent, name) is not None:
        return f"{parent.command_path} {name}"
    inner = group.get_command(parent, "convgraph")
    if isinstance(inner, click.Group) and inner.get_command(parent, name):
        return f"{parent.command_path} convgraph {name}"
    return f"convgraph {name}"


def resolve_ids(ctx: click.Context) -> None:
    """Put the whole id in place of each id or prefix the command was given
    (the arguments of an `IdType`), asking the command's `Logs`.

    A Parquet dataset names its trees itself, prefixes too, so its ids are
    left as they are.
    """
    given = [
        param
        for param in ctx.command.params
        if isinstance(param.type, IdType)
        and param.name is not None
        and ctx.params.get(param.name) not in (None, ())
    ]
    if not given or dataset_path() is not None:
        return
    logs = opened_logs()
    for param in given:
        assert isinstance(param.type, IdType) and param.name is not None
        kind = param.type.kind
        value = ctx.params[param.name]
        if isinstance(value, tuple):
            ctx.params[param.name] = tuple(logs.resolve(one, kind) for one in value)
        else:
            ctx.params[param.name] = logs.resolve(value, kind)


#: Where `--db` leaves the path given (None: llm's own), and where the
#: command's `Logs` is kept once open (click's context meta).
DB_PATH = "convgraph.db_path"
LOGS = "convgraph.logs"


def opened_logs() -> Logs:
    """The file `--db` names, opened once for the command that runs (and
    closed when it ends), branches hidden with `convgraph hide` kept where
    `--all` asked for them."""
    ctx = click.get_current_context()
    logs: Logs | None = ctx.meta.get(LOGS)
    if logs is None:
        from convgraph.logs import Logs

        logs = Logs(ctx.meta.get(DB_PATH), hidden=bool(ctx.meta.get(SHOW_HIDDEN)))
        ctx.meta[LOGS] = logs
        ctx.find_root().call_on_close(logs.close)
    return logs


def dataset_path() -> str | None:
    """The Parquet dataset `--db DIR` names (`convgraph export --format
    parquet` wrote it), which stats and check read; None for any other file."""
    ctx = click.get_current_context()
    path = ctx.meta.get(DB_PATH)
    if path is None:
        return None
    from convgraph.sources.parquet import is_parquet_dataset

    return path if is_parquet_dataset(path) else None


def db_option(function: F) -> F:
    """`-d/--db/--database PATH`: the file to read, which the command opens
    with `opened_logs`; llm's own logs.db by default. `--database` is how
    llm's own commands spell it.

    Click checks nothing about the path (a folder may hold a chat export): the
    reader says in one line what is wrong with it.
    """
    return _db_option(function, expose=False)


def db_path_option(function: F) -> F:
    """`db_option` for a command that writes: it receives the path as
    `db_path`."""
    return _db_option(function, expose=True)


def _db_option(function: F, expose: bool) -> F:
    def remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        ctx.meta[DB_PATH] = value
        return value

    return click.option(
        "-d",
        "--db",
        "--database",
        "db_path",
        type=click.Path(readable=False, path_type=str),
        default=None,
        expose_value=expose,
        callback=remember,
        help="The llm database or chat export to read (stats and check also read"
        " a Parquet dataset DIR) [default: llm's logs.db, as `llm logs path`"
        " prints]",
    )(function)


#: Where `--all` leaves its answer for the command that reads (click's
#: context meta, shared by the command's contexts).
SHOW_HIDDEN = "convgraph.show_hidden"


def all_option(function: F) -> F:
    """`--all`: also read the branches hidden with `convgraph hide` (every
    read leaves them out otherwise); the command asks `hidden_wanted`."""

    def remember(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
        ctx.meta[SHOW_HIDDEN] = value
        return value

    return click.option(
        "--all",
        "show_hidden",
        is_flag=True,
        expose_value=False,
        callback=remember,
        help="Show the branches hidden with `convgraph hide` too",
    )(function)


def hidden_wanted() -> bool:
    """Whether the command running was asked for hidden branches (`--all`)."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get(SHOW_HIDDEN))


def json_option(function: F) -> F:
    """`--json`: print JSON instead of text, for the commands whose answer is
    one document rather than records (`tree`, `diff`, `branch`)."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON")(function)


def output_options(function: F) -> F:
    """`--table`, `--json`, `--nl`, `--csv`, `--tsv`: how to print records.

    The command receives one keyword, `output_format`: the name of the flag
    given, or None for none (the command's form for a person). Two of them
    together are an error.
    """

    @functools.wraps(function)
    def with_output_format(*args: Any, **kwargs: Any) -> Any:
        chosen = [name for name in OUTPUT_FORMATS if kwargs.pop(f"output_{name}")]
        if len(chosen) > 1:
            flags = " and ".join(f"--{name}" for name in chosen)
            raise UserError(f"{flags} exclude each other: choose one")
        return function(*args, output_format=chosen[0] if chosen else None, **kwargs)

    decorated: Any = with_output_format
    for name, text in reversed(OUTPUT_FORMATS.items()):
        decorated = click.option(
            f"--{name}", f"output_{name}", is_flag=True, help=text
        )(decorated)
    return decorated  # type: ignore[no-any-return]


def command(name: str | None = None, **attrs: Any) -> Callable[[F], click.Command]:
    """`click.command` with convgraph's command class: its errors end as one
    line. Commands are made plain and `convgraph.cli` adds them to the group
    (and the llm plugin to llm's)."""
    return click.command(name, cls=ConvgraphCommand, **attrs)


#: The commands that make llm's database where there is none.
MAKES_A_DATABASE = frozenset({"import"})
#: The commands that write the file --db names (notes on an export go to a
#: file beside it, so note and prefer take one).
WRITES_A_DATABASE = frozenset({"migrate", "delete", "branch", "regenerate"})


def check_default_database(ctx: click.Context) -> None:
    """Without --db a command reads llm's own logs.db: where there is none
    (llm has logged nothing here, or $LLM_USER_PATH points elsewhere), say
    where it looked and how to name a file, rather than only that a file is
    missing.

    Raises
    ------
    UserError
        No --db was given and llm's logs.db does not exist.
    """
    if ctx.meta.get(DB_PATH, "") is not None or ctx.info_name in MAKES_A_DATABASE:
        return
    from convgraph.sources import default_database_path

    path = default_database_path()
    if path.exists():
        return
    where = "$LLM_USER_PATH" if os.environ.get("LLM_USER_PATH") else "llm's"
    raise UserError(
        f"no llm database at {path} ({where} logs.db, read when --db is not"
        " given): name one with --db PATH, or log a prompt with llm first"
    )


def check_writable(db_path: str | None) -> None:
    """Refuse, in words a newcomer has, to write a file convgraph only
    reads: a chat export (or an agent's sessions) is read-only, and its
    conversations reach llm's database through `convgraph import`.

    Raises
    ------
    UserError
        `db_path` is a file or folder convgraph reads as an export.
    """
    from convgraph.logs import is_export

    if db_path is None or not is_export(db_path):
        return
    raise UserError(
        f"{db_path} is an export, which convgraph reads but never writes:"
        f" bring it into llm's database with convgraph import {db_path}"
    )


#: How a library an extra brings is named to a person.
LIBRARIES = {
    "pyarrow": "pyarrow",
    "dask": "Dask",
    "distributed": "Dask's distributed",
    "textual": "Textual",
    # The import's name is not the package's: the line names what pip takes.
    "genai_prices": "genai-prices",
}
#: What reading a Parquet dataset is called where it needs pyarrow.
READING_A_DATASET = "reading a Parquet dataset (--db DIR)"


def needs_extra(module: str, extra: str, what: str) -> None:
    """Make sure `module`, which the optional `extra` brings, can be
    imported before `what` (a command, an option) uses it.

    Imported, not only looked for: a library whose own dependencies are
    missing fails here too, rather than as a traceback later.

    Raises
    ------
    UserError
        One line, as `convgraph browse` has always said it: "WHAT needs
        LIBRARY: pip install 'convgraph[EXTRA]'".
    """
    import importlib

    try:
        importlib.import_module(module)
    except ImportError:
        library = LIBRARIES.get(module.partition(".")[0], module)
        raise UserError(
            f"{what} needs {library}: pip install 'convgraph[{extra}]'"
        ) from None
