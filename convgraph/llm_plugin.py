"""convgraph inside llm: `llm tree`, `llm leaves`, `llm path`, `llm branch`,
and every command as `llm convgraph COMMAND`.

Installed in llm's environment, convgraph's entry point in the `llm` group
makes llm load this module, and llm's `register_commands` hook adds the design
notes' recommended commands to `llm` itself, and convgraph's whole group as
`llm convgraph`. They are convgraph's own command objects, so they share
every line of code and default to llm's database.
"""

from __future__ import annotations

import click
import llm

#: The convgraph commands that llm gets, under the same names.
LLM_COMMANDS = ("tree", "leaves", "path", "branch")
#: The name of convgraph's whole group inside llm.
GROUP = "convgraph"


@llm.hookimpl
def register_commands(cli: click.Group) -> None:
    """Add convgraph's commands to llm's group, under the same names, and
    convgraph's whole group as `llm convgraph`.

    A name llm (or another plugin) already uses is left alone: convgraph
    never replaces a command. The commands' `--db` defaults to llm's own
    logs.db, found the way `llm logs path` finds it.
    """
    from convgraph.cli.read import leaves, path, tree
    from convgraph.cli.write import branch

    commands = {"tree": tree, "leaves": leaves, "path": path, "branch": branch}
    for name in LLM_COMMANDS:
        if name not in cli.commands:
            cli.add_command(commands[name], name)
    if GROUP not in cli.commands:
        # The rest (stats, transcript, note, regenerate, export, ...) under
        # one name of their own: none can shadow a command of llm's.
        from convgraph.cli import cli as convgraph_cli

        cli.add_command(convgraph_cli, GROUP)
