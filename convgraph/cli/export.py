"""`convgraph export`: conversations in every format `convgraph.export.FORMATS`
names, and pictures through Graphviz. Output goes whole through `written`,
never onto the file being read nor, without --force, onto an SQLite file;
on a terminal, control characters show as symbols."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

import click

from convgraph.cli.filters import FILTER_HELP, filter_options, filtered_trees
from convgraph.cli.options import (
    CONVERSATION_ID,
    UserError,
    all_option,
    command,
    db_option,
    opened_logs,
)
from convgraph.cli.output import (
    Counted,
    filter_words,
    is_terminal,
    say,
    terminal_lines,
)
from convgraph.cli.progress import ProgressBar
from convgraph.cli.redacting import redact_option
from convgraph.cli.user_input import say_written
from convgraph.export import FORMATS
from convgraph.export.common import RANKDIRS
from convgraph.model.filters import TreeFilter
from convgraph.writing import STDOUT, written

if TYPE_CHECKING:
    import networkx as nx

RENDERINGS = ("svg", "png", "pdf")
#: Written from the whole `Forest`'s table, without a DiGraph a tree.
FOREST_FORMATS = frozenset({"json"})
#: Graphviz's drawings of the DOT export, made with --render.
PICTURES = ("svg", "png", "pdf", "jpg", "jpeg")

EXTENSIONS = {
    ".dot": "dot",
    ".gv": "dot",
    ".graphml": "graphml",
    ".json": "json",
    ".mmd": "mermaid",
    ".mermaid": "mermaid",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".jsonl": "chat-jsonl",
    ".parquet": "parquet",
}
ALSO_WRITES = {"json": frozenset({"tree-json"})}
#: Each format's first extension; a dataset is a folder.
EXTENSION_OF = {name: ext for ext, name in reversed(EXTENSIONS.items())} | {
    "tree-json": ".json",
    "parquet": "",
}
DEFAULT_FORMAT = "dot"


def chosen_format(
    output: str | None, format_name: str | None, render: str | None
) -> tuple[str, str | None]:
    """The format and the picture (or None) from --format, --render and -o's
    extension, which must agree. Raises UserError where they do not."""
    format_name = format_name.lower() if format_name is not None else None
    render = render.lower() if render is not None else None
    extension = ""
    if output is not None and output != "-":
        extension = os.path.splitext(output)[1].lower()
    picture = extension[1:] if extension[1:] in RENDERINGS else None
    named = EXTENSIONS.get(extension)
    if extension and named is None and picture is None and format_name is None:
        known = " ".join([*EXTENSIONS, *(f".{kind}" for kind in RENDERINGS)])
        raise UserError(
            f"-o {output}: {extension} is no extension convgraph writes ({known}):"
            " rename the file, or choose the format with --format"
        )
    if picture is not None:
        if render is not None and render != picture:
            raise UserError(
                f"--render {render} draws {render.upper()}, but -o {output}"
                f" names {picture.upper()}: give -o {_renamed(output, '.' + render)}"
            )
        if render is None and format_name is not None:
            raise UserError(
                f"-o {output} names a picture ({picture.upper()}), drawn from the"
                f" DOT export: leave out --format {format_name}, or give -o"
                f" {_renamed(output, EXTENSION_OF[format_name])}"
            )
        return DEFAULT_FORMAT, picture
    if named is not None:
        if render is not None:
            raise UserError(
                f"--render {render} draws a picture, but -o {output} names"
                f" {named}: give -o {_renamed(output, '.' + render)}"
            )
        if format_name is None:
            return named, None
        if format_name != named and format_name not in ALSO_WRITES.get(named, ()):
            raise UserError(
                f"--format {format_name} does not write {extension} files (-o"
                f" {output} names {named}): give -o"
                f" {_renamed(output, EXTENSION_OF[format_name])}, or leave out"
                " --format"
            )
    return format_name or DEFAULT_FORMAT, render


def _renamed(output: str | None, extension: str) -> str:
    """`output` with `extension` in place of its own."""
    return os.path.splitext(output or "")[0] + extension


class FormatChoice(click.Choice):  # type: ignore[type-arg]
    """`--format`'s choice, pointing a picture format to `--render`."""

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
    default=None,
    help="The file format [default: -o FILE's extension, else dot]",
)
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    default=None,
    help="Write FILE, its extension choosing the format (.dot, .graphml, .json,"
    " .mmd, .md, .html, .jsonl; .svg, .png and .pdf a picture); - for stdout"
    " [default: stdout]",
)
@click.option(
    "--render",
    type=click.Choice(RENDERINGS, case_sensitive=False),
    default=None,
    help="Draw the DOT with Graphviz into -o FILE [default: -o FILE's"
    " extension, where it is a picture's]",
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
@redact_option
@db_option
@all_option
@filter_options
def export(
    conversation_ids: tuple[str, ...],
    format_name: str | None,
    output: str | None,
    render: str | None,
    rankdir: str | None,
    force: bool,
    paths: str | None,
    reasoning: bool,
    full: bool,
    where: TreeFilter,
) -> None:
    """Export conversations; every conversation when no id is given.

    \b
    convgraph export --format dot | dot -Tsvg > forest.svg
    convgraph export CONVERSATION_ID --format graphml -o tree.graphml
    convgraph export CONVERSATION_ID -o tree.svg
    convgraph export --format parquet -o forest-dataset
    convgraph export CONVERSATION_ID -o conversation.md
    convgraph export --format chat-jsonl --paths leaves -o train.jsonl
    """
    if output not in (None, "-") and not os.path.isdir(output):
        # The file being read is named before any question of its format.
        refusal = opened_logs().overwrite_refusal(output, force)
        if refusal is not None:
            raise UserError(refusal)
    format_name, render = chosen_format(output, format_name, render)
    if output == "-" and render is None:
        output = None
    exporter = FORMATS[format_name]
    given = {
        "rankdir": rankdir,
        "paths": paths.lower() if paths is not None else None,
        "reasoning": reasoning or None,
        "full": full or None,
    }
    options: dict[str, Any] = {}
    for name, value in given.items():
        if value is not None:
            if name not in exporter.options:
                raise UserError(f"--{name} does not apply to --format {format_name}")
            options[name] = value
    if render is not None:
        if format_name != "dot":
            raise UserError("--render draws the DOT export: use it with --format dot")
        if output is None:
            raise UserError(f"--render {render} needs -o FILE to write the picture to")
    if exporter.tables:
        from convgraph.cli.options import needs_extra

        needs_extra("pyarrow", "parquet", f"convgraph export --format {format_name}")
        _write_dataset(exporter, format_name, conversation_ids, output, force, where)
        say_written(str(output))
        return
    if output is not None and os.path.isdir(output):
        raise UserError(f"cannot write {output}: it is a directory")
    dot_program = shutil.which("dot") if render is not None else None
    if render is not None and dot_program is None:
        raise UserError(NO_GRAPHVIZ)

    # Progress on stderr, but not while the export itself goes to a terminal.
    shown = None if output is not None or not is_terminal(sys.stdout) else False
    with ProgressBar(enabled=shown) as bar:
        if format_name == "html":
            options["progress"] = bar
        graphs: Any
        if format_name in FOREST_FORMATS and not conversation_ids:
            # The whole forest, written from its table (`forest_blocks`).
            graphs = _forest(where, bar)
            empty = graphs.nodes.empty
        else:
            graphs = Counted(filtered_trees(conversation_ids, where, progress=bar))
        if render is not None:
            assert output is not None and dot_program is not None
            _render(graphs, dot_program, render, output, options)
        elif output is not None:
            with written(output) as file:
                exporter.write(graphs, file, **options)
        else:
            _to_stdout(lambda stream: exporter.write(graphs, stream, **options))
    if output is not None:
        say_written(output)
    if isinstance(graphs, Counted):
        empty = graphs.count == 0
    if empty:
        said = f"no conversation matches {filter_words(where)}" if where else None
        say(f"nothing exported: {said or 'the file holds no conversations'}")


def _forest(where: TreeFilter, progress: Any) -> Any:
    """Every tree the filter keeps, as a `Forest`."""
    from convgraph.cli.memory import give_back_memory
    from convgraph.model.filters import select_trees

    forest = opened_logs().forest(progress=progress)
    give_back_memory()
    return select_trees(forest, where)


def _write_dataset(
    exporter: Any,
    format_name: str,
    ids: tuple[str, ...],
    output: str | None,
    force: bool,
    where: TreeFilter,
) -> None:
    """Write the forest's tables (all, or `ids`) into the folder `output`."""
    if output is None:
        raise UserError(f"--format {format_name} writes a directory: give -o DIR")
    target = os.path.realpath(output)
    logs = opened_logs()
    for read in logs.files():
        if os.path.commonpath([target, os.path.realpath(read)]) == target:
            raise UserError(
                f"refusing to write {output}: it holds the database being read;"
                " write the export to another directory"
            )
    exporter.write(logs.forest(trees=ids or None, where=where), output, force=force)


def _render(
    graphs: Iterator[nx.DiGraph[str]],
    dot_program: str,
    kind: str,
    output: str,
    options: dict[str, Any],
) -> None:
    """Stream the DOT into Graphviz's `dot` in a private folder, then the
    picture to `output` through `written`."""
    from convgraph.export import write_dot

    with tempfile.TemporaryDirectory(prefix="convgraph-render-") as folder:
        picture = os.path.join(folder, f"picture.{kind}")
        # dot's messages go to a file, not a pipe: a full pipe would stall
        # dot while it still reads the graph.
        with tempfile.TemporaryFile(dir=folder) as messages:
            process = subprocess.Popen(
                [dot_program, f"-T{kind}", "-o", picture],
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

            fix_svg_file(picture)
        with open(picture, "rb") as drawn, written(output) as file:
            shutil.copyfileobj(drawn, file, 1 << 20)


class _ForAPerson(io.TextIOBase):
    """A text stream onto a terminal, control characters shown as symbols."""

    encoding = "utf-8"

    def __init__(self, binary: IO[bytes]) -> None:
        self.binary = binary

    def write(self, text: str) -> int:
        self.binary.write(terminal_lines(text).encode("utf-8"))
        return len(text)

    def flush(self) -> None:
        self.binary.flush()


def _to_stdout(write: Any) -> None:
    """Write UTF-8 to stdout whatever the terminal's encoding, shown safely
    on a terminal; a closed pipe is the command class's to end."""
    with written(STDOUT) as stream:
        write(_ForAPerson(stream) if is_terminal(sys.stdout) else stream)
