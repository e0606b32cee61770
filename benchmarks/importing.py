"""The `import` group: `convgraph import` of a ChatGPT export beside
conversation-tk's `ctk import` of the same export (issue 28: at least three
times faster, `report.TARGETS`).

The export is the `chat-exports` group's (`sources.write_export`: a synthetic
`conversations.json` of the size asked for, cached under the same name).
Each side is the whole command in a fresh process, as a user runs it, into
a fresh file in a fresh home directory (conversation-tk keeps its settings
there); its time is the command's wall time, its memory the child's own
peak resident memory (`os.wait4`). Both are run once a size: at 75 MB
conversation-tk takes about a minute. conversation-tk comes from the
`bench` extra (`pip install -e '.[bench]'`), or from the `ctk` named in
`CONVGRAPH_BENCH_CTK` (a venv of its own where its dependencies conflict).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

from benchmarks import sources, suite, tasks
from benchmarks.report import Row

#: Where to find conversation-tk's command when it is not beside Python.
CTK_ENV = "CONVGRAPH_BENCH_CTK"

#: The row the target names (report.TARGETS).
OPERATION = "convgraph import (ChatGPT export)"


def ctk_command() -> str:
    """conversation-tk's `ctk`: named in CONVGRAPH_BENCH_CTK, beside this
    Python (the `bench` extra), or on PATH; "" where there is none."""
    beside = Path(sys.executable).with_name("ctk")
    return (
        os.environ.get(CTK_ENV)
        or (str(beside) if beside.exists() else None)
        or shutil.which("ctk")
        or ""
    )


def _argv(tool: str, source: str, target: Path) -> list[str]:
    if tool == "convgraph":
        return [
            sys.executable,
            "-m",
            "convgraph",
            "import",
            source,
            "--db",
            str(target),
        ]
    if not tool:
        raise RuntimeError(
            "conversation-tk is not installed: pip install -e '.[bench]',"
            f" or name its ctk in {CTK_ENV}"
        )
    return [tool, "import", source, "--format", "openai", "--db", str(target)]


@tasks.task("import.command", timer=True)
def _import(tool: str, source: str) -> Callable[[int], float]:
    """Time the import of `source` by `tool` ("convgraph", or the path of
    conversation-tk's `ctk`: pyperf's workers do not inherit the
    environment that names it), each call into a fresh file; report the
    child's peak memory."""
    workdir = Path(tempfile.mkdtemp(prefix="convgraph-import-"))
    atexit.register(shutil.rmtree, workdir, True)
    calls = [0]

    def time_it(loops: int) -> float:
        total = 0.0
        for _ in range(loops):
            calls[0] += 1
            home = workdir / f"call-{calls[0]}"
            home.mkdir()
            argv = _argv(tool, source, home / "logs.db")
            env = {**os.environ, "HOME": str(home), "LLM_USER_PATH": str(home)}
            with open(home / "stderr.txt", "wb") as stderr:
                started = time.perf_counter()
                process = subprocess.Popen(
                    argv, cwd=home, env=env, stdout=subprocess.DEVNULL, stderr=stderr
                )
                _, status, usage = os.wait4(process.pid, 0)
                total += time.perf_counter() - started
            process.returncode = os.waitstatus_to_exitcode(status)
            if process.returncode:
                error = (home / "stderr.txt").read_text(errors="replace").strip()
                last = error.splitlines()[-1] if error else ""
                raise RuntimeError(f"{argv[0]} import failed: {last}")
            # ru_maxrss is in kB on Linux.
            tasks.figure("peak_mb", usage.ru_maxrss / 1024)
            shutil.rmtree(home, ignore_errors=True)
        return total

    return time_it


def import_rows(sizes: list[int], options: suite.Options) -> list[Row]:
    """The `import` group: each size's export, imported by convgraph and by
    conversation-tk, once each."""
    found = []
    for size in sizes:
        stem = (
            options.data_dir
            / f"chatgpt-{size}mb-v{suite.BUILD_VERSION}-e{sources.EXPORT_BUILD}"
        )
        source = stem.with_suffix(".json")

        def build(info: Path, source: Path = source, size: int = size) -> None:
            # As the chat-exports group builds it (its zip too): one cache.
            held = sources.write_export(source, size)
            with zipfile.ZipFile(source.with_suffix(".zip"), "w") as archive:
                archive.write(source, "conversations.json", zipfile.ZIP_DEFLATED)
            info.write_text(json.dumps(held))

        held = json.loads(suite.cached(stem.with_suffix(".info"), build).read_text())

        def side(tool: str, source: Path = source) -> suite.Task:
            return suite.once(suite.task("import.command", tool=tool, source=source))

        row = Row(
            "import", "json", size, OPERATION, side("convgraph"), side(ctk_command())
        )
        row.notes.append(
            f"{source.stat().st_size / 1e6:,.0f} MB: {held['conversations']:,}"
            f" conversations, {held['messages']:,} messages; baseline:"
            " conversation-tk's `ctk import --format openai`; the target:"
            " ratio at most 0.33 (3x faster)"
        )
        found.append(row)
    return found
