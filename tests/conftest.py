import hashlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from databases import LlmLog, seed_database  # noqa: E402


@pytest.fixture
def seed_db(tmp_path: Path) -> Path:
    """The seed's four scenarios in a legacy database with parent_response_id."""
    return seed_database(tmp_path / "seed.db")


@pytest.fixture(scope="session")
def llm_fork_db(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A logs.db written by llm 0.36 itself: a conversation of three prompts
    (`llm -m echo`, then `--cid` twice) and a fork at its first answer,
    continued twice. Session-scoped: tests must only read it."""
    directory = tmp_path_factory.mktemp("llm")
    with LlmLog(directory) as log:
        first = log.prompt("What is a tree?")
        thread = log.thread_of(first)
        second = log.prompt("And a forest?", continue_conversation=thread)
        third = log.prompt("Give an example", continue_conversation=thread)
        fork, fork_first = log.fork(first, "What is a graph, then?")
        fork_second = log.prompt("Is every tree a graph?", continue_conversation=fork)
    return {
        "path": log.path,
        "thread": thread,
        "fork": fork,
        "turns": [first, second, third],
        "fork_turns": [fork_first, fork_second],
    }


def file_digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
