"""The `agents` group: a year of one heavy user's Claude Code sessions,
generated to the documented format, read by `convgraph stats` beside
reading the same bytes as JSON lines with the standard library.

`write_year` writes `~/.claude/projects`' shape: projects of sessions, each
session a file of records linked by `uuid` and `parentUuid` (prompts, the
assistant's thinking, text and tool calls a block a record with the API
message's usage repeated, tool results of a few KB, an error now and then),
with a rewind in one session in five, a subagent's file in one in four and a
resumed session in one in ten. Sizes are in MB of session files.

Rows, at each size: `convgraph stats --json --db PROJECTS` as a whole
command beside `json.loads` of every line of every file (the cost of reading
the bytes at all: issue 27's bound is 1.5 times it, `report.TARGETS` says
whether it is met), and the same read in process (`Forest.read` without
texts and the conversation table) beside the same baseline, judged by the
same bound. The sizes (200 MB and 1 GB by default) are where start-up is
not the story; memory independent of the number of sessions is read from
the peaks at the two sizes (the growth table's memory factor per 10x), and
the in-process read's own working memory is the figure ``MB above setup``.

Then a table of the real session files under `tests/data/agents`
(`tests/data/agents/README.md`): for each file, what convgraph reads
(prompts, tool calls and results) beside what an independent reader written
from the formats counts (`tests/agents_reference.py`), printed by
`real_files_table`.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import report, suite, tasks
from benchmarks.report import Row

#: Bumped whenever `write_year` changes what it writes.
AGENTS_BUILD = 1
#: Turns (user prompts) a session holds, at most.
TURNS = 12
#: Projects the sessions are spread over.
PROJECTS = 40
#: The tools the generated assistant calls.
TOOLS = ("Bash", "Read", "Edit", "Grep", "Write", "TodoWrite")
WORDS = [
    "tree",
    "branch",
    "node",
    "parser",
    "session",
    "rewind",
    "agent",
    "tool",
    "result",
    "token",
    "cache",
    "project",
    "commit",
    "test",
    "file",
    "line",
    "error",
    "function",
    "module",
    "import",
    "value",
]


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


class _Session:
    """One session file being written: its records and where the chain is."""

    def __init__(self, rng: random.Random, session: str, project: str, day: int):
        self.rng, self.session, self.project = rng, session, project
        self.records: list[dict[str, Any]] = []
        self.count = 0
        self.clock = day * 86_400 + rng.randrange(8 * 3600, 20 * 3600)

    def record(self, kind: str, parent: str | None, content: Any, **extra: Any) -> str:
        self.count += 1
        self.clock += self.rng.randrange(1, 40)
        uuid = f"{self.session}-{self.count:05d}"
        stamp = time.strftime(
            "%Y-%m-%dT%H:%M:%S", time.gmtime(1_735_689_600 + self.clock)
        )
        record = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.project,
            "sessionId": self.session,
            "version": "1.0.83",
            "gitBranch": "main",
            "type": kind,
            "message": {"role": kind, "content": content},
            "uuid": uuid,
            "timestamp": f"{stamp}.000Z",
        }
        record.update(extra)
        self.records.append(record)
        return uuid

    def assistant(self, parent: str, blocks: list[dict[str, Any]], **extra: Any) -> str:
        """One API message, a block a record, its usage on each."""
        usage = {
            "input_tokens": self.rng.randrange(5, 50),
            "cache_creation_input_tokens": self.rng.randrange(0, 2000),
            "cache_read_input_tokens": self.rng.randrange(1000, 60_000),
            "output_tokens": self.rng.randrange(20, 800),
        }
        message_id = f"msg_{self.session}_{self.count}"
        for block in blocks:
            parent = self.record("assistant", parent, [block], **extra)
            self.records[-1]["message"].update(
                {"id": message_id, "model": "claude-sonnet-4-20250514", "usage": usage}
            )
            self.records[-1]["requestId"] = "req_" + message_id
        return parent

    def turn(self, parent: str | None, **extra: Any) -> str:
        """A prompt and the run that answers it: tool calls and results."""
        rng = self.rng
        tip = self.record("user", parent, _text(rng, rng.randrange(5, 60)), **extra)
        for _ in range(rng.randrange(0, 6)):
            call = f"toolu_{self.session}_{self.count}"
            blocks = [
                {"type": "thinking", "thinking": _text(rng, 40), "signature": "s"}
            ]
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call,
                    "name": rng.choice(TOOLS),
                    "input": {"command": _text(rng, 8)},
                }
            )
            tip = self.assistant(tip, blocks, **extra)
            output = _text(rng, rng.randrange(50, 900))
            result = {"type": "tool_result", "tool_use_id": call, "content": output}
            if rng.random() < 0.05:
                result["is_error"] = True
            tip = self.record(
                "user", tip, [result], toolUseResult={"stdout": output}, **extra
            )
        text = {"type": "text", "text": _text(rng, rng.randrange(20, 300))}
        return self.assistant(tip, [text], **extra)


def write_year(folder: Path, megabytes: int, seed: int = 27) -> dict[str, int]:
    """A `projects` folder of about `megabytes` MB of sessions; what it
    holds, counted."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    written = sessions = files = 0
    leaves: list[tuple[Path, str, str]] = []
    while written < megabytes * 1_000_000:
        number = sessions
        sessions += 1
        project = f"/home/ada/project-{rng.randrange(PROJECTS)}"
        where = folder / project.replace("/", "-")
        where.mkdir(exist_ok=True)
        session = f"{number:08x}-0000-4000-8000-{rng.getrandbits(48):012x}"
        writer = _Session(rng, session, project, day=number * 365 // 4000)
        tip: str | None = None
        if leaves and rng.random() < 0.1:
            # A resumed session: continues an earlier one's leaf.
            _, _, tip = rng.choice(leaves)
        turns = rng.randrange(1, TURNS)
        for index in range(turns):
            before = tip
            tip = writer.turn(tip)
            if index == 1 and rng.random() < 0.2:
                tip = writer.turn(before)  # a rewind: the prompt edited
        if rng.random() < 0.25:
            files += _subagent(rng, where, writer)
        name = where / f"{session}.jsonl"
        data = "".join(json.dumps(record) + "\n" for record in writer.records)
        name.write_text(data)
        written += len(data)
        files += 1
        if tip is not None:
            leaves.append((name, session, tip))
    return {"sessions": sessions, "files": files, "bytes": written}


def _subagent(rng: random.Random, where: Path, writer: _Session) -> int:
    """A Task call in the session's last run, and its subagent's file."""
    agent = f"{rng.getrandbits(32):08x}"
    prompt = _text(rng, 20)
    call = f"toolu_task_{writer.session}"
    tip = writer.records[-1]["uuid"]
    tip = writer.assistant(
        tip,
        [{"type": "tool_use", "id": call, "name": "Task", "input": {"prompt": prompt}}],
    )
    side = _Session(rng, writer.session, writer.project, 0)
    side.clock = writer.clock
    side.session = writer.session
    side.count = 50_000
    extra = {"isSidechain": True, "agentId": agent}
    side.turn(None, **extra)
    side.records[0]["message"]["content"] = prompt
    (where / f"agent-{agent}.jsonl").write_text(
        "".join(json.dumps(record) + "\n" for record in side.records)
    )
    writer.record(
        "user",
        tip,
        [{"type": "tool_result", "tool_use_id": call, "content": "done"}],
        toolUseResult={"agentId": agent},
    )
    return 1


@tasks.task("stdlib.json_lines")
def _json_lines(folder: str) -> Callable[[], int]:
    """Every line of every session file through `json.loads`."""
    files = sorted(Path(folder).rglob("*.jsonl"))

    def read() -> int:
        count = 0
        loads = json.loads
        for file in files:
            with open(file, "rb") as stream:
                for line in stream:
                    loads(line)
                    count += 1
        return count

    return read


@tasks.task("convgraph.agent_stats")
def _agent_stats(folder: str) -> Callable[[], object]:
    """`Forest.read` without texts and the conversation table, in process;
    its working memory above the imports a figure."""
    import pandas  # noqa: F401  (imported here: not the read's memory)

    from convgraph.analysis.stats import conversation_table

    return tasks.above_setup(
        lambda: conversation_table(tasks.read_forest(folder, text=False))
    )


#: The file beside the projects that says what `write_year` wrote.
HELD = "held.json"


def _build(folder: Path, size: int) -> None:
    held = write_year(folder, size)
    (folder / HELD).write_text(json.dumps(held))


def agent_rows(sizes: list[int], options: suite.Options) -> list[Row]:
    """The `agents` group at each size in MB; first, the table of the real
    files (`real_files_table`), printed."""
    print("\n".join(real_files_table()), flush=True)
    found = []
    for size in sizes:
        stem = suite.cached(
            options.data_dir / f"claude-projects-{size}mb-a{AGENTS_BUILD}",
            lambda partial, size=size: _build(partial, size),
        )
        held = json.loads((stem / HELD).read_text())
        baseline = suite.task("stdlib.json_lines", folder=stem)
        stats = suite.command(
            "convgraph stats",
            suite.convgraph_command(),
            "stats",
            "--json",
            "--db",
            str(stem),
        )
        found.append(
            Row("agents", "claude-code", size, report.AGENTS_STATS, stats, baseline)
        )
        found.append(
            Row(
                "agents",
                "claude-code",
                size,
                "Forest.read + conversation table",
                suite.task("convgraph.agent_stats", folder=stem),
                baseline,
            )
        )
        found[-1].notes.append(
            f"{held['bytes'] / 1e6:,.0f} MB: {held['sessions']:,} sessions,"
            f" {held['files']:,} files"
        )
    return found


#: The real files' counts, as the table shows them (convgraph / independent).
COUNTED = ("prompts", "tool calls", "tool results")


def real_files_table() -> list[str]:
    """The real session files of `tests/data/agents`, each read alone:
    convgraph's prompts, tool calls and tool results beside the counts of
    `tests/agents_reference.py` (written from the formats), as lines of a
    table."""
    from tests.agents_reference import count
    from tests.test_agents_real import DATA, FILES, convgraph_counts

    header = ["file", "read", *(f"{name} (ours/theirs)" for name in COUNTED)]
    rows = []
    equal = 0
    for path in FILES:
        try:
            ours, read = convgraph_counts(path), "yes"
        except Exception as error:  # noqa: BLE001 (the table says what failed)
            ours, read = (0, 0, 0), f"no: {error}"
        theirs = count(path).triple()
        equal += ours == theirs and read == "yes"
        name = str(path.relative_to(DATA))
        rows.append(
            [
                name if len(name) <= 60 else name[:28] + "…" + name[-31:],
                read[:60],
                *(f"{a}/{b}" for a, b in zip(ours, theirs, strict=True)),
            ]
        )
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["", "agents: the real session files, each read alone"]
    for row in [header, ["-" * width for width in widths], *rows]:
        lines.append(
            "  ".join(
                cell.ljust(width) for cell, width in zip(row, widths, strict=True)
            )
        )
    lines.append(f"{len(rows)} files, {equal} read with every count equal")
    return lines
