"""`convgraph export`: conversations as DOT, GraphML, JSON or Mermaid, and
pictures through Graphviz.

The command parses its options and hands the trees to the writer that
`convgraph.export.FORMATS` names, so every format the registry holds is a
`--format` here. Output goes to stdout, or to a file that appears whole or
not at all (it is written beside its final name and moved there at the end).
That file is never the one being read (compared by identity, so a link or
another spelling of the path is caught), and an SQLite file is replaced only
with --force: an export must never cost the user their llm history. Printed
on a terminal, an export shows stored control characters as symbols (an
escape sequence in a prompt must not set the window's title or the
clipboard); to a file or a pipe it is exact.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

import click

from convgraph.cli.filters import FILTER_HELP, filter_options, filtered_trees
from convgraph.cli.options import CONVERSATION_ID, UserError, command, db_option
from convgraph.cli.output import is_terminal, terminal_lines
from convgraph.cli.progress import ProgressBar
from convgraph.export import FORMATS
from convgraph.export.common import RANKDIRS
from convgraph.model.filters import TreeFilter

if TYPE_CHECKING:
    import networkx as nx

RENDERINGS = ("svg", "png")
#: The formats whose writer takes a whole `Forest` and writes it from its
#: table, without a DiGraph a tree (the same text).
FOREST_FORMATS = frozenset({"json"})
#: Picture formats someone may give to --format: a picture is Graphviz's
#: drawing of the DOT export, made with --render.
PICTURES = ("svg", "png", "pdf", "jpg", "jpeg")


class FormatChoice(click.Choice):  # type: ignore[type-arg]
    """`--format`'s choice, which points a picture format to `--render` in
    one line instead of listing the file formats."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, str) and value.lower() in PICTURES:
            kind = value.lower() if value.lower() in RENDERINGS else "svg"
            raise UserError(
                f"--format {value}: a picture is drawn with --render"
                f" ({'|'.join(RENDERINGS)}): convgraph export --render {kind} -o"
                f" tree.{kind}"
            )
        return super().convert(value, param, ctx)


NO_GRAPHVIZ = (
    "--render needs Graphviz's `dot` program, which is not installed here"
    " (Debian and Ubuntu: apt-get install graphviz; macOS: brew install graphviz);"
    " without --render, --format dot writes the text to draw elsewhere"
)


@command(epilog=FILTER_HELP)
@click.argument("conversation_ids", nargs=-1, type=CONVERSATION_ID)
@click.option(
    "--format",
    "format_name",
    type=FormatChoice(list(FORMATS), case_sensitive=False),
    default="dot",
    show_default=True,
    help="The file format",
)
@click.option(
    "-o", "--output", metavar="FILE", default=None, help="Write FILE [default: stdout]"
)
@click.option(
    "--render",
    type=click.Choice(RENDERINGS, case_sensitive=False),
    default=None,
    help="Draw the DOT with Graphviz into -o FILE",
)
@click.option(
    "--rankdir",
    type=click.Choice(RANKDIRS, case_sensitive=False),
    metavar=f"[{'|'.join(RANKDIRS)}]",
    default=None,
    help="Direction of dot and mermaid drawings, and of the html page (TB or LR)"
    " [default: TB]",
)
@click.option(
    "--force",
    is_flag=True,
    help="Let -o replace an SQLite file, or a directory that is not empty with"
    " --format parquet (never the database being read)",
)
@click.option(
    "--paths",
    type=click.Choice(["leaves", "active"], case_sensitive=False),
    default=None,
    help="chat-jsonl: one example per root-to-leaf path, or per conversation"
    " along its active path [default: leaves]",
)
@click.option(
    "--reasoning",
    is_flag=True,
    help="chat-jsonl: keep the model's reasoning (reasoning_content), which is"
    " left out by default",
)
@click.option(
    "--full",
    is_flag=True,
    help="markdown: keep long tool outputs whole (they are cut at 2,000"
    " characters, their size said)",
)
@db_option
@filter_options
def export(
    conversation_ids: tuple[str, ...],
    format_name: str,
    output: str | None,
    render: str | None,
    rankdir: str | None,
    force: bool,
    paths: str | None,
    reasoning: bool,
    full: bool,
    db_path: str | None,
    where: TreeFilter,
) -> None:
    """Export conversations; every conversation when no id is given.

    \b
    convgraph export --format dot | dot -Tsvg > forest.svg
    convgraph export CONVERSATION_ID --format graphml -o tree.graphml
    convgraph export CONVERSATION_ID --render svg -o tree.svg
    convgraph export --format parquet -o forest-dataset
    convgraph export CONVERSATION_ID --format markdown -o conversation.md
    convgraph export --format chat-jsonl --paths leaves -o train.jsonl
    """
    exporter = FORMATS[format_name]
    options: dict[str, Any] = {}
    if rankdir is not None:
        if "rankdir" not in exporter.options:
            raise UserError(f"--rankdir does not apply to --format {format_name}")
        options["rankdir"] = rankdir
    if paths is not None:
        if "paths" not in exporter.options:
            raise UserError(f"--paths does not apply to --format {format_name}")
        options["paths"] = paths.lower()
    if reasoning:
        if "reasoning" not in exporter.options:
            raise UserError(f"--reasoning does not apply to --format {format_name}")
        options["reasoning"] = True
    if full:
        if "full" not in exporter.options:
            raise UserError(f"--full does not apply to --format {format_name}")
        options["full"] = True
    if render is not None:
        if format_name != "dot":
            raise UserError("--render draws the DOT export: use it with --format dot")
        if output is None:
            raise UserError(f"--render {render} needs -o FILE to write the picture to")
    if exporter.tables:
        from convgraph.cli.options import needs_extra

        needs_extra("pyarrow", "parquet", f"convgraph export --format {format_name}")
        _write_dataset(
            exporter, format_name, conversation_ids, output, db_path, force, where
        )
        return
    if output is not None and os.path.isdir(output):
        raise UserError(f"cannot write {output}: it is a directory")
    if output is not None:
        refuse_overwrite(output, db_path, force=force)
    dot_program = shutil.which("dot") if render is not None else None
    if render is not None and dot_program is None:
        raise UserError(NO_GRAPHVIZ)

    # The read shows its progress, and the page its conversations written;
    # not while the export itself goes to the terminal.
    shown = None if output is not None or not is_terminal(sys.stdout) else False
    with ProgressBar(enabled=shown) as bar:
        if format_name == "html":
            options["progress"] = bar
        graphs: Any
        if format_name in FOREST_FORMATS and not conversation_ids:
            # The whole forest, written from its table (`forest_blocks`).
            graphs = _forest(db_path, where, bar)
        else:
            graphs = filtered_trees(conversation_ids, db_path, where, progress=bar)
        if render is not None:
            assert output is not None and dot_program is not None
            with _replaced(output) as (_, partial):
                _render(graphs, dot_program, render, partial, options)
        elif output is not None:
            with _replaced(output) as (file, _):
                exporter.write(graphs, file, **options)
        else:
            _to_stdout(lambda stream: exporter.write(graphs, stream, **options))


def _forest(db_path: str | None, where: TreeFilter, progress: Any) -> Any:
    """Every tree the filter keeps, as a `Forest` (its read told to
    `progress`), for a format that writes the whole forest from its table."""
    from convgraph.model.filters import select_trees
    from convgraph.model.forest import Forest

    return select_trees(Forest.read(db_path, progress=progress), where)


def _write_dataset(
    exporter: Any,
    format_name: str,
    ids: tuple[str, ...],
    output: str | None,
    db_path: str | None,
    force: bool,
    where: TreeFilter,
) -> None:
    """Write the forest's tables (every tree, or those `ids` name) into the
    folder `output`, which must not hold the database being read."""
    from convgraph.model.forest import Forest

    if output is None:
        raise UserError(f"--format {format_name} writes a directory: give -o DIR")
    target = os.path.realpath(output)
    for read in _files_read(db_path):
        if os.path.commonpath([target, os.path.realpath(read)]) == target:
            raise UserError(
                f"refusing to write {output}: it holds the database being read;"
                " write the export to another directory"
            )
    from convgraph.model.filters import select_trees

    forest = select_trees(Forest.read(db_path, conversation_ids=ids), where)
    exporter.write(forest, output, force=force)


def refuse_overwrite(output: str, db_path: str | None, force: bool = False) -> None:
    """Refuse to write `output` where that would destroy what the user keeps.

    Parameters
    ----------
    output:
        The file the command is about to write (replace).
    db_path:
        What the command reads: an llm database, a chat export file or a
        folder of one (the files directly in it count); llm's own logs.db
        when None.
    force:
        Whether the user allowed replacing an SQLite file that is not being
        read.

    Raises
    ------
    UserError
        `output` is the file being read, whatever the path says (same device
        and inode: a hard link, a symbolic link, a relative path), or it is
        an SQLite database (by its header) and `force` is false.
    """
    from convgraph.sources.llm.files import is_sqlite_file

    try:
        target = os.stat(output)
    except OSError:
        return  # nothing there to lose; the write itself says what fails
    if any(_same_file(target, read) for read in _files_read(db_path)):
        raise UserError(
            f"refusing to write {output}: it is the file being read;"
            " write the export to another file"
        )
    # Only a regular file is opened to look: reading /dev/stdout or a FIFO
    # would wait for input.
    if not force and stat.S_ISREG(target.st_mode) and is_sqlite_file(output):
        raise UserError(
            f"refusing to write {output}: it is an SQLite database"
            " (--force replaces it)"
        )


def _files_read(db_path: str | None) -> Iterator[str]:
    """The paths a command reading `db_path` reads from."""
    if db_path is None:
        from convgraph.sources import default_database_path

        yield str(default_database_path())
        return
    yield db_path
    if os.path.isdir(db_path):
        with contextlib.suppress(OSError), os.scandir(db_path) as entries:
            yield from (entry.path for entry in entries)


def _same_file(target: os.stat_result, path: str) -> bool:
    try:
        read = os.stat(path)
    except OSError:
        return False
    return (read.st_dev, read.st_ino) == (target.st_dev, target.st_ino)


@contextlib.contextmanager
def _replaced(path: str) -> Iterator[tuple[IO[bytes], str]]:
    """A binary file beside `path` (and its name) that replaces `path` when
    the block ends without an error, and is removed when it does not."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        handle, partial = tempfile.mkstemp(
            dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".partial"
        )
    except OSError as error:
        raise UserError(f"cannot write {path}: {error.strerror}") from None
    try:
        with open(handle, "wb") as file:
            yield file, partial
        # mkstemp makes the file private; give it the mode a new file gets
        # under the user's umask.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(partial, 0o666 & ~umask)
        os.replace(partial, path)
    except OSError as error:
        _remove(partial)
        raise UserError(f"cannot write {path}: {error.strerror}") from None
    except BaseException:
        _remove(partial)
        raise


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _render(
    graphs: Iterator[nx.DiGraph],
    dot_program: str,
    kind: str,
    path: str,
    options: dict[str, Any],
) -> None:
    """Stream the DOT into Graphviz's `dot`, which writes the picture."""
    from convgraph.export import write_dot

    # dot's messages go to a file, not a pipe: a full pipe would stall dot
    # while it still reads the graph.
    with tempfile.TemporaryFile() as messages:
        process = subprocess.Popen(
            [dot_program, f"-T{kind}", "-o", path],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=messages,
        )
        assert process.stdin is not None
        try:
            with process.stdin:
                write_dot(graphs, process.stdin, **options)
        except BrokenPipeError:
            pass
        except BaseException:
            process.kill()
            process.wait()
            raise
        status = process.wait()
        messages.seek(0)
        said = messages.read().decode("utf-8", "replace").strip()
    if status != 0:
        first = said.splitlines()[0] if said else f"exit status {status}"
        raise UserError(f"Graphviz's dot could not draw the graph: {first}")
    if kind == "svg":
        from convgraph.export.dot import fix_svg_file

        fix_svg_file(path)


class _ForAPerson(io.TextIOBase):
    """A text stream onto a terminal: what an export writes there shows its
    control characters as symbols (`terminal_lines`), as every other human
    output does; written to a file or a pipe, the text stays exact."""

    encoding = "utf-8"

    def __init__(self, binary: IO[bytes]) -> None:
        self.binary = binary

    def write(self, text: str) -> int:
        # `write_lines` writes whole lines at a time.
        self.binary.write(terminal_lines(text).encode("utf-8"))
        return len(text)

    def flush(self) -> None:
        self.binary.flush()


def _to_stdout(write: Any) -> None:
    """Write UTF-8 to stdout whatever the terminal's encoding, shown safely
    where stdout is a terminal; a reader that stops early (`| head`) ends
    the command quietly."""
    stream = click.open_file("-", "wb")
    try:
        write(_ForAPerson(stream) if is_terminal(sys.stdout) else stream)
        stream.flush()
    except BrokenPipeError:
        # Point stdout at nothing, so that Python's own flush at exit does
        # not fail again on the closed pipe.
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)
