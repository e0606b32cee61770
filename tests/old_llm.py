"""Older llm releases, each in a virtual environment of its own, for tests
that need a logs.db grown by several generations of llm.

A long-time user's file was written by llm before 0.32 (the legacy
`responses` table) and then continued by llm 0.32 and later (the message
store). The tests write such files with the real programs: `OldLlm` runs an
older llm's command line in a subprocess, sharing `LLM_USER_PATH` with the
llm installed in the test environment (0.36), which then continues the same
conversations.

Each environment is built once and kept under the user's cache directory
(`$XDG_CACHE_HOME/convgraph-tests/venvs`, else `~/.cache/...`), keyed by the
versions, and reused by every later run; a file lock makes parallel runs
wait for one build instead of racing. When pip cannot install the versions
(offline, no index), `old_llm` raises `OldLlmUnavailable`, which fixtures
turn into a skip with pip's last line as the reason.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

#: llm 0.19-0.22 work offline with llm-echo 0.2 (0.26-0.31 with 0.4); llm
#: 0.13-0.31 need httpx, which today's openai no longer brings.
DEFAULT_LLM = "0.19"
DEFAULT_ECHO = "0.2"


class OldLlmUnavailable(RuntimeError):
    """pip could not install the older llm (the reason is the message)."""


#: The user's cache, as it was before the suite gave each run a cache of its
#: own (tests/conftest.py): the environments are kept across runs.
USER_CACHE = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")


def cache_directory() -> Path:
    """Where the environments are kept, outside any checkout."""
    return Path(USER_CACHE) / "convgraph-tests" / "venvs"


@dataclass(frozen=True)
class OldLlm:
    """The command line of one older llm release, in its own environment."""

    version: str
    executable: Path

    def run(self, user_path: Path, *args: str) -> str:
        """`llm ARGS` with `LLM_USER_PATH=user_path`; returns its output.

        Raises `subprocess.CalledProcessError` (with llm's stderr) when llm
        fails, so a test sees why.
        """
        env = dict(os.environ, LLM_USER_PATH=str(user_path))
        # The environment's own plugins only: never the test environment's.
        env.pop("LLM_LOAD_PLUGINS", None)
        env.pop("PYTHONPATH", None)
        done = subprocess.run(
            [str(self.executable), *args],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode:
            raise subprocess.CalledProcessError(
                done.returncode, done.args, done.stdout, done.stderr
            )
        return done.stdout


def old_llm(version: str = DEFAULT_LLM, echo: str = DEFAULT_ECHO) -> OldLlm:
    """llm `version` with llm-echo `echo`, built once and then reused.

    Raises
    ------
    OldLlmUnavailable
        pip could not install them.
    """
    root = cache_directory()
    root.mkdir(parents=True, exist_ok=True)
    name = f"llm-{version}-echo-{echo}-py{sys.version_info[0]}{sys.version_info[1]}"
    target = root / name
    executable = target / "bin" / "llm"
    ready = target / ".ready"
    if ready.exists():
        return OldLlm(version, executable)
    with open(root / f"{name}.lock", "w") as lock:
        # Another run may be building the same one: wait for it, then reuse.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ready.exists():
            _build(target, version, echo)
    return OldLlm(version, executable)


def _build(target: Path, version: str, echo: str) -> None:
    """Create the environment at `target` (under the caller's lock); the
    `.ready` mark is written last, so a failed or interrupted build is never
    reused but built again."""
    shutil.rmtree(target, ignore_errors=True)
    venv.EnvBuilder(with_pip=True).create(target)
    done = subprocess.run(
        [
            str(target / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            f"llm=={version}",
            f"llm-echo=={echo}",
            "httpx",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        shutil.rmtree(target, ignore_errors=True)
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise OldLlmUnavailable(
            f"pip could not install llm=={version} llm-echo=={echo}: "
            + (lines[-1] if lines else f"exit status {done.returncode}")
        )
    (target / ".ready").write_text(f"llm=={version} llm-echo=={echo}\n")
