"""The `convgraph` command line: a thin click layer over the library.

Each module holds the commands of one area and registers them on `cli`; this
module imports them all so that `convgraph --help` lists every command. The
heavy libraries (pandas, networkx) are imported inside the commands that use
them, so start-up stays fast.
"""

import click

from convgraph.cli.options import ConvgraphCommand


class ConvgraphGroup(click.Group):
    command_class = ConvgraphCommand


@click.group(cls=ConvgraphGroup)
@click.version_option(package_name="convgraph")
def cli() -> None:
    """Explore, measure and export the branching conversations that llm logs."""


# Imported for their side effect: each module adds its commands to `cli`.
from convgraph.cli import diff, export, read, stats, write  # noqa: E402, F401
