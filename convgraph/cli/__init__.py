"""The `convgraph` command line: a thin click layer over the library; heavy
libraries are imported inside the commands that use them."""

import click

from convgraph.cli import (
    browse,
    diff,
    export,
    importing,
    meaning,
    notes,
    read,
    search,
    sources,
    stats,
    transcripts,
    write,
)
from convgraph.cli.options import ConvgraphCommand

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
    notes.hide,
    notes.unhide,
    search.search,
    meaning.similar,
    sources.sources,
    meaning.topics,
)


#: Each command's one-line summary: click would cut a longer first sentence.
SUMMARIES = {
    "conversations": "List every conversation tree",
    "tree": "Draw conversation trees",
    "path": "The ids from the root down to a node",
    "children": "The direct children of a node",
    "siblings": "The alternatives of a node",
    "descendants": "Every node below a node, breadth first",
    "roots": "The roots of a conversation",
    "leaves": "The leaves (branch tips) of a conversation",
    "check": "Report broken parent links",
    "stats": "Statistics of every conversation tree",
    "diff": "Where two branches split, and how they differ",
    "compare": "Compare the alternative answers below a node",
    "export": "Export conversations to a file or a picture",
    "migrate": "Add parent links and indexes to a database",
    "delete": "Delete a legacy response (try --dry-run)",
    "branch": "Continue a conversation from any node",
    "regenerate": "Ask a node's prompt again, as a sibling",
    "browse": "Browse the conversations in the terminal",
    "import": "Import a ChatGPT, Claude or Open WebUI export",
    "transcript": "A branch as Markdown or chat messages",
    "pairs": "Preference pairs from alternative answers",
    "note": "Record why a branch was made, on its node",
    "prefer": "Mark a node as the preferred answer",
    "hide": "Hide a branch from every output",
    "unhide": "Show a hidden branch again",
    "search": "Find text in any branch",
    "similar": "The prompts and answers nearest by meaning",
    "sources": "The sources read when no --db is given",
    "topics": "Conversations grouped by meaning into topics",
}


class ConvgraphGroup(click.Group):
    """convgraph's group: `@cli.command()` gets `ConvgraphCommand` too."""

    command_class = ConvgraphCommand


@click.group(
    cls=ConvgraphGroup,
    # -h as git's and llm's users type it; the commands inherit it.
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(package_name="convgraph")
def cli() -> None:
    """Explore, measure and export the branching conversations that llm logs."""


for _command in COMMANDS:
    if _command.short_help is None:
        _command.short_help = SUMMARIES.get(_command.name or "")
    cli.add_command(_command)
