"""The `convgraph` command line: a thin click layer over the library.

Each module holds the commands of one area as plain click commands; this
module adds them all to the `cli` group, so that `convgraph --help` lists
every command and no command module imports the group (the llm plugin adds
the same command objects to `llm`). The heavy libraries (pandas, networkx)
are imported inside the commands that use them, so start-up stays fast.
"""

import click

from convgraph.cli import (
    browse,
    diff,
    export,
    importing,
    notes,
    read,
    search,
    stats,
    transcripts,
    write,
)
from convgraph.cli.options import ConvgraphCommand

#: Every command, as `convgraph.cli` adds it to the group.
COMMANDS: tuple[click.Command, ...] = (
    read.conversations,
    read.tree,
    read.path,
    read.children,
    read.siblings,
    read.descendants,
    read.roots,
    read.leaves,
    read.check,
    stats.stats,
    diff.diff_command,
    diff.compare_command,
    export.export,
    write.migrate,
    write.delete,
    write.branch,
    write.regenerate,
    browse.browse,
    importing.import_command,
    transcripts.transcript,
    transcripts.pairs,
    notes.note,
    notes.prefer,
    search.search,
)


class ConvgraphGroup(click.Group):
    """convgraph's group: a command made with `@cli.command()` gets the
    error handling of `ConvgraphCommand` too."""

    command_class = ConvgraphCommand


@click.group(cls=ConvgraphGroup)
@click.version_option(package_name="convgraph")
def cli() -> None:
    """Explore, measure and export the branching conversations that llm logs."""


for _command in COMMANDS:
    cli.add_command(_command)
