"""convgraph's commands inside llm, added by llm's `register_commands` hook."""

from __future__ import annotations

from collections.abc import Callable

import click
import llm
from llm.models import EmbeddingModel

LLM_COMMANDS = ("tree", "leaves", "path", "branch")
GROUP = "convgraph"


@llm.hookimpl
def register_commands(cli: click.Group) -> None:
    """Add convgraph's commands and group (`llm convgraph`) where names are free."""
    from convgraph.cli.read import leaves, path, tree
    from convgraph.cli.write import branch

    commands = {"tree": tree, "leaves": leaves, "path": path, "branch": branch}
    for name in LLM_COMMANDS:
        if name not in cli.commands:
            cli.add_command(commands[name], name)
    if GROUP not in cli.commands:
        # The rest under one name: none can shadow a command of llm's.
        from convgraph.cli import cli as convgraph_cli

        cli.add_command(convgraph_cli, GROUP)


@llm.hookimpl
def register_embedding_models(register: Callable[[EmbeddingModel], None]) -> None:
    """WordLlama, offline (`llm embed -m wordllama`)."""
    from convgraph.meaning.model import WordLlama

    register(WordLlama())
