"""`convgraph sources add|list|remove`: the saved list of sources that every
reading command reads as one forest when it is given no `--db`."""

from __future__ import annotations

import click

from convgraph.cli.options import ConvgraphCommand, output_options
from convgraph.cli.output import say


@click.group("sources")
def sources() -> None:
    """The sources read as one forest when no --db is given: llm's logs.db
    (named llm) unless removed, and those added. Kept in $CONVGRAPH_CONFIG_DIR,
    else $XDG_CONFIG_HOME/convgraph or ~/.config/convgraph."""


@sources.command("add", cls=ConvgraphCommand)
@click.argument("path", type=click.Path(readable=False, path_type=str))
@click.option("--name", default=None, help="Its name [default: its file name]")
def add(path: str, name: str | None) -> None:
    """Add the llm database, chat export or agents' folder at PATH."""
    from convgraph.sources.several import add_source

    say(f"added {path} as {add_source(path, name)}")


@sources.command("list", cls=ConvgraphCommand)
@output_options
def list_sources(output_format: str | None) -> None:
    """The saved sources, by name, in the order they are read."""
    from convgraph.cli.output import echo_records
    from convgraph.sources import default_database_path
    from convgraph.sources.several import saved_sources

    rows = [
        {"name": name, "path": path or str(default_database_path())}
        for name, path in saved_sources()
    ]
    echo_records(rows, ["name", "path"], output_format or "table")


@sources.command("remove", cls=ConvgraphCommand)
@click.argument("given", metavar="NAME|PATH")
def remove(given: str) -> None:
    """Take a source off the list (its file stays as it is)."""
    from convgraph.sources.several import remove_source

    say(f"removed {remove_source(given)}")
