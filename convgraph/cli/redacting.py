"""`--redact` (secrets replaced in what a command reads, `convgraph.redaction`)
and `check --secrets` (where they are, never what)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from convgraph.cli.options import REDACT, meta_flag, opened_logs

F = TypeVar("F", bound=Callable[..., Any])


#: `--redact`: the handle the command reads through replaces secrets.
redact_option = meta_flag(
    "--redact",
    REDACT,
    "Replace secrets (keys, tokens, passwords, private keys, e-mail addresses)"
    " by [REDACTED kind] in everything written",
)


def report_secrets(output_format: str | None) -> None:
    """Print where the file's secrets are (tree, node, field, kind), one
    line each or as records; exit status 1 when there are any."""
    from convgraph.cli.options import dataset_path
    from convgraph.cli.output import echo_line, echo_records
    from convgraph.redaction import PLACE_COLUMNS, secret_places

    places = secret_places(dataset_path() or opened_logs().forest())
    if output_format is not None:
        echo_records(places, PLACE_COLUMNS, output_format)
    for place in places if output_format is None else ():
        node = f" node {place['node_id']}" if place["node_id"] else ""
        echo_line(f"{place['kind']}: tree {place['tree_id']}{node}, {place['field']}")
    if not places and output_format in (None, "table"):
        click.echo("no secrets found")
    if places:
        raise SystemExit(1)
