"""What every command shares: `--db` opened once as a `Logs`, the output
options, and user errors as one line on stderr with status 2, never a
traceback (on the command class, so llm's plugin commands behave the same)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from convgraph.cli.memory import use_system_allocator
from convgraph.cli.user_input import error_lines
from convgraph.cli.way_out import way_out
from convgraph.errors import (
    AmbiguousId,
    ConversationNotNode,
    ConvgraphError,
    NodeNotConversation,
    UnknownConversation,
    UnknownNode,
)

if TYPE_CHECKING:
    from convgraph.logs import Logs

F = TypeVar("F", bound=Callable[..., Any])

USER_ERROR = 2

OUTPUT_FORMATS = {
    "table": "Aligned columns for reading (records print so by default)",
    "json": "A JSON array",
    "nl": "Newline-delimited JSON: one value a line",
    "csv": "CSV with a header row",
    "tsv": "Tab-separated values with a header row",
}


class UserError(click.ClickException):
    """A `ClickException` with status 2, one line, control characters shown."""

    exit_code = USER_ERROR

    def format_message(self) -> str:
        return error_lines([self.message])


class UserLines(UserError):
    """A `UserError` of several lines, each shown as `UserError` shows one."""

    def __init__(self, lines: list[str]):
        super().__init__("\n".join(lines))
        self.lines = lines

    def format_message(self) -> str:
        return error_lines(self.lines)


class IdType(click.ParamType[str]):
    """An id as typed, whole or a unique prefix, resolved by `ConvgraphCommand`
    before the command runs; `kind`: node, conversation or either (None)."""

    def __init__(self, kind: str | None, name: str):
        self.kind = kind
        self.name = name

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> str:
        return str(value)


NODE_ID = IdType("node", "node_id")
CONVERSATION_ID = IdType("conversation", "conversation_id")
ANY_ID = IdType(None, "id")


class ConvgraphCommand(click.Command):
    """A click command whose errors are one-line messages, its ids resolved
    before it runs, and its way out `convgraph.cli.way_out`'s."""

    def invoke(self, ctx: click.Context) -> Any:
        # Before any read imports pyarrow: the process is the command's.
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
                # A writing command opens the file itself: nothing held open.
                logs = ctx.meta.pop(LOGS, None)
                if logs is not None:
                    logs.close()
            return super().invoke(ctx)
        except AmbiguousId as error:
            raise UserLines(
                [f"{error.heading()}:", *(f"  {line}" for line in error.candidates)]
            ) from None
        except NodeNotConversation as error:
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
            from convgraph.sources import database_failure

            if (message := database_failure(error)) is None:
                raise
            raise UserError(message) from None


def _unknown_id(error: UnknownNode | UnknownConversation) -> str:
    """What an unknown id says, with the prefix length needed if short."""
    from convgraph.sources.source import MIN_PREFIX

    given = error.args[0] if error.args else None
    if isinstance(given, str) and 0 < len(given) < MIN_PREFIX:
        return (
            f"{error}: an id prefix needs at least {MIN_PREFIX} characters"
            f" ({given!r} has {len(given)})"
        )
    if isinstance(given, str) and os.path.exists(given):
        return f"{error}: {given} is a path; to read it, give it with --db {given}"
    return str(error)


def _command_line(ctx: click.Context, name: str) -> str:
    """How the user types command `name` here (`llm convgraph leaves` in llm)."""
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
    """Put the whole id in place of each `IdType` argument's id or prefix."""
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


DB_PATH = "convgraph.db_path"
#: Every `--db` of a reading command (which takes several).
DB_PATHS = "convgraph.db_paths"
LOGS = "convgraph.logs"
REDACT = "convgraph.redact"  # --redact (`convgraph.cli.redacting`)


def read_target(ctx: click.Context) -> str | dict[str, str] | None:
    """What the command reads: one path, several by name, or None for llm's
    logs.db; without `--db`, the saved list (`convgraph sources`)."""
    if (paths := ctx.meta.get(DB_PATHS)) is None:
        return ctx.meta.get(DB_PATH)
    from convgraph.sources import several

    if not paths:
        return several.listed_target()
    return paths[0] if len(paths) == 1 else several.named_paths(paths)


def read_names() -> list[str]:
    """The names of the sources the running command reads, where several."""
    target = read_target(click.get_current_context())
    return list(target) if isinstance(target, dict) else []


def opened_logs() -> Logs:
    """The sources `--db` names, opened once for the running command."""
    ctx = click.get_current_context()
    logs: Logs | None = ctx.meta.get(LOGS)
    if logs is None:
        from convgraph.logs import Logs

        logs = Logs(
            read_target(ctx),
            hidden=bool(ctx.meta.get(SHOW_HIDDEN)),
            redact=bool(ctx.meta.get(REDACT)),
        )
        ctx.meta[LOGS] = logs
        ctx.find_root().call_on_close(logs.close)
    return logs


def dataset_path() -> str | None:
    """The Parquet dataset `--db DIR` names (stats and check read one), or None."""
    if (path := click.get_current_context().meta.get(DB_PATH)) is None:
        return None
    from convgraph.sources.parquet import is_parquet_dataset

    return path if is_parquet_dataset(path) else None


def db_option(function: F) -> F:
    """`-d/--db/--database PATH`, llm's logs.db by default; the reader, not
    click, says what is wrong with a path."""
    return _db_option(function, expose=False)


def db_path_option(function: F) -> F:
    """`db_option` for a command that writes, given the path as `db_path`."""
    return _db_option(function, expose=True)


def _db_option(function: F, expose: bool) -> F:
    def remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if expose:
            ctx.meta[DB_PATH] = value
        else:
            ctx.meta[DB_PATHS] = value
            ctx.meta[DB_PATH] = value[0] if len(value) == 1 else None
        return value

    several = (
        "The llm database, chat export or agents' folder to read; repeated, all"
        " as one forest (stats and check also read a Parquet dataset DIR)"
        " [default: the saved list, `convgraph sources list`]"
    )
    return click.option(
        "-d",
        "--db",
        "--database",
        "db_path",
        type=click.Path(readable=False, path_type=str),
        default=None,
        multiple=not expose,
        expose_value=expose,
        callback=remember,
        help=several
        if not expose
        else "The llm database or chat export to read (stats and check also"
        " read a Parquet dataset DIR) [default: llm's logs.db, as `llm logs"
        " path` prints]",
    )(function)


SHOW_HIDDEN = "convgraph.show_hidden"


def meta_flag(flag: str, key: str, help: str) -> Callable[[F], F]:
    """A flag the command does not take: it sets `ctx.meta[key]`, which the
    handle opened for the command reads."""

    def remember(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
        ctx.meta[key] = value
        return value

    return click.option(
        flag, is_flag=True, expose_value=False, callback=remember, help=help
    )


all_option = meta_flag(
    "--all", SHOW_HIDDEN, "Show the branches hidden with `convgraph hide` too"
)


def json_option(function: F) -> F:
    """`--json`, for commands whose answer is one document, not records."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON")(function)


#: `--embedding-model NAME`, for every command that asks for meaning.
embedding_model_option = click.option(
    "--embedding-model",
    "model",
    metavar="NAME",
    help="An llm embedding model (`llm embed-models`; default: wordllama, offline)",
)


def output_options(function: F) -> F:
    """`--table`, `--json`, `--nl`, `--csv`, `--tsv`, given as `output_format`
    (None: the form for a person); two together are an error."""

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
    """`click.command` with `ConvgraphCommand`."""
    return click.command(name, cls=ConvgraphCommand, **attrs)


MAKES_A_DATABASE = frozenset({"import"})
#: Notes on an export go beside it, so note and prefer take one too.
WRITES_A_DATABASE = frozenset({"migrate", "delete", "branch", "regenerate"})


def check_default_database(ctx: click.Context) -> None:
    """Without --db and without llm's logs.db, raise a `UserError`."""
    if DB_PATH not in ctx.meta or ctx.info_name in MAKES_A_DATABASE:
        return
    if read_target(ctx) is not None:
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
    """Raise a `UserError` where `db_path` is an export (read, never written)."""
    from convgraph.logs import is_export

    if db_path is None or not is_export(db_path):
        return
    raise UserError(
        f"{db_path} is an export, which convgraph reads but never writes:"
        f" bring it into llm's database with convgraph import {db_path}"
    )


LIBRARIES = {
    "pyarrow": "pyarrow",
    "dask": "Dask",
    "distributed": "Dask's distributed",
    "textual": "Textual",
    # The import's name is not the package's: the line names what pip takes.
    "genai_prices": "genai-prices",
}
READING_A_DATASET = "reading a Parquet dataset (--db DIR)"


def needs_extra(module: str, extra: str, what: str) -> None:
    """Import `module`, which the optional `extra` brings, before `what` uses
    it; else raise "WHAT needs LIBRARY: pip install 'convgraph[EXTRA]'"."""
    import importlib

    try:
        importlib.import_module(module)
    except ImportError:
        library = LIBRARIES.get(module.partition(".")[0], module)
        raise UserError(
            f"{what} needs {library}: pip install 'convgraph[{extra}]'"
        ) from None
