"""The contract's names of the coding agents' sessions agree with their readers."""

from convgraph import contract
from convgraph.sources.agents import files
from convgraph.sources.agents.sessions import FORMATS


def test_agent_names_agree_with_the_readers() -> None:
    assert contract.SIDECHAIN == files.SIDECHAIN
    assert tuple(module.SOURCE for module in FORMATS) == contract.AGENT_SOURCES
