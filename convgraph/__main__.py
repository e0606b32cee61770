"""`python -m convgraph`: the same command line as the `convgraph` script."""

from convgraph.cli import cli

cli(prog_name="convgraph")
