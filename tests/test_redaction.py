"""`--redact` and `check --secrets` (issue 48, section 2): real-shaped keys of
every kind planted in every field of an llm file written by llm, a ChatGPT
export and a Claude Code session; every output format read back by its own
parser holds none of them, and a marker naming each kind."""

from __future__ import annotations

import base64
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("detect_secrets")
pytest.importorskip("pyarrow")

import convgraph  # noqa: E402
from convgraph.redaction import Redactor  # noqa: E402
from tests.chat_exports import (  # noqa: E402
    claude_message,
    gpt_conversation,
    gpt_message,
    webui_chat,
    webui_message,
    write_json,
)
from tests.databases import LlmLog, add_response, legacy_database  # noqa: E402
from tests.helpers import run  # noqa: E402


def _jwt() -> str:
    def part(value: dict[str, str]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part({'sub': 'ada'})}.c2lnbmF0dXJlT2ZBZGE"


#: Each kind's planted secret, and the piece of it no output may hold.
SECRETS = {
    "aws-access-key": ("AKIAZ7Q4XKJ3M2N8P5LW", "Z7Q4XKJ3M2N8"),
    "github-token": ("ghp_R8mK2pX9vL4qT7nW1cY6bH3jD5fG0sA2eU8i", "R8mK2pX9vL4q"),
    "slack-token": ("xoxb-2841907654-7391045821-ab3de5fg7hj9kl1mn3", "7391045821-ab3"),
    "stripe-access-key": ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWD"),
    "sendgrid-api-key": ("SG.K9fLmQ2vR7tY3wZ8pN4aB1." + "c" * 43, "K9fLmQ2vR7tY"),
    "private-key": (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx3Vq9\n"
        "Zm4Tn8Lw2Pk5Rj7Hc1Yd\n-----END RSA PRIVATE KEY-----",
        "Zm4Tn8Lw2Pk5",
    ),
    "json-web-token": (_jwt(), "c2lnbmF0dXJlT2ZBZGE"),
    "basic-auth-credentials": (
        "https://deploy:Tr0ub4dor3xQ@git.example.com/r.git",
        "Tr0ub4dor3xQ",
    ),
    "secret-keyword": ('password = "Zq8wLm3xVtRp"', "Zq8wLm3xVtRp"),
    "email-address": ("ada.lovelace@example.org", "ada.lovelace@"),
}
#: The other plugins' kinds: each secret, its piece, and what "see SECRET
#: here." becomes ({} the marker).
MORE = {
    "artifactory-credentials": ("AKCp8jQ7Xn2Vb5Kd9Lm3", "p8jQ7Xn2Vb5K", ""),
    "azure-storage-account-access-key": (
        "AccountKey=Kx7Qm2Vw9Rt4Ly8Pn3Bd6Hs1Gf5Jc0Ze" + "a1B2c3D4e5" * 5 + "Xy9/Wv8+",
        "Kx7Qm2Vw9Rt4",
        "",
    ),
    "cloudant-credentials": (
        'cloudant_password: "qwrtzpsdfghjklyxcvbnmqwe"',
        "qwrtzpsdfghj",
        'see cloudant_password: "{}" here.',
    ),
    "discord-bot-token": (
        "NzkxMjM0NTY3ODkwMTIzNDU2.Gh7Kx2.Qm9Rt4Ly8Pn3Bd6Hs1Gf5Jc0ZeAb7",
        "Qm9Rt4Ly8Pn3",
        "",
    ),
    "gitlab-token": ("glpat-Xq7Lm2Rv9Tb4Wn8Kc3Hd", "Xq7Lm2Rv9Tb4", ""),
    "ibm-cloud-iam-key": (
        'ibm_cloud_iam_key: "Vb3Nm8Qw2Er7Ty6Ui1Op5As4Df9Gh0Jk3Lz8Xc2Cv7Bn"',
        "Vb3Nm8Qw2Er7",
        'see ibm_cloud_iam_key: "{}" here.',
    ),
    "ibm-cos-hmac-credentials": (
        f'cos_hmac_secret_access_key: "{"4d7e1f9a2b6c8d3e" * 3}"',
        "4d7e1f9a2b6c",
        'see cos_hmac_secret_access_key: "{}" here.',
    ),
    "mailchimp-access-key": (
        "7c4e9a2f5b8d1e6a3c0f7b4d9e2a5c8f-us12",
        "7c4e9a2f5b8d",
        "",
    ),
    # npm's pattern takes the rest of the line
    "npm-tokens": (
        "//registry.npmjs.org/:_authToken=npm_Hq8Wm3Zx7Rc2Vn5Lk9Pt4Gy6Bs1Df0Ja2Ue",
        "Hq8Wm3Zx7Rc2",
        "see //registry.npmjs.org/:{}",
    ),
    "openai-token": (
        "sk-proj-Rt5Yu8Io2Pa6Sd9Fg3HjT3BlbkFJKl7Zx4Cv1Bn8Mq5Wr2Ex",
        "Rt5Yu8Io2Pa6",
        "",
    ),
    "pypi-token": (
        "pypi-AgEIcHlwaS5vcmc" + "Nq4Wx8Ez2Rc6Tv0Yb3Un7Im1Ok5Pl9" * 3,
        "Nq4Wx8Ez2Rc6",
        "",
    ),
    "softlayer-credentials": (
        "https://api.softlayer.com/soap/v3/" + "k3m8p2r7t1w6y4z9" * 4,
        "k3m8p2r7t1w6",
        "see https:{} here.",
    ),
    "square-oauth-secret": (
        "sq0csp-Jd8Kf3Lg7Mh2Nj6Pk1Ql5Rm9Sn4Tp0Uq8Vr3Ws7Xtzq",
        "Jd8Kf3Lg7Mh2",
        "",
    ),
    "telegram-bot-token": (
        "5829104736:AAHk7Jm2Np9Qr4St8Uv3Wx6Yz1Ab5Cd0EfGh",
        "AAHk7Jm2Np9Q",
        "",
    ),
    "twilio-api-key": ("ACe4f8a2c6b0d9e3f7a1c5b8d2e6f0a4c7", "e4f8a2c6b0d9", ""),
}
KINDS = [*SECRETS, *MORE]
# Eight characters: a title cut from a prompt may hold a key's start alone.
LEAKS = [leak[:8] for _, leak, *_ in [*SECRETS.values(), *MORE.values()]]
PAYLOAD = "\n".join(
    f"{kind}: {secret}" for kind, (secret, *_) in [*SECRETS.items(), *MORE.items()]
)
#: One line, for titles and names: the kinds that fit on one line.
LINE = "deploy AKIAZ7Q4XKJ3M2N8P5LW for ada.lovelace@example.org"
NODE_ID = "u-ghp_R8mK2pX9vL4qT7nW1cY6bH3jD5fG0sA2eU8i"
CONVERSATION = "conv ada.lovelace@example.org"  # a tree's id, a category
FOLDER, BRANCH = f"/home/{LINE}", "ada.lovelace@example.org-AKIAZ7Q4XKJ3M2N8P5LW"
ECHO = "def echo(text: str) -> str:\n    return text\n"


def marker(kind: str) -> str:
    return f"[REDACTED {kind}]"


def test_each_kind_is_replaced_by_its_marker() -> None:
    redactor = Redactor()
    texts = [f"see {secret} here." for secret, _ in SECRETS.values()]
    found = redactor.scan(texts)
    # A password in a URL or an assignment goes, what names it stays.
    kept = {"basic-auth-credentials", "secret-keyword"}
    assert [found[text] for text in texts] == [
        (text.replace(leak if kind in kept else secret, marker(kind)), (kind,))
        for text, (kind, (secret, leak)) in zip(texts, SECRETS.items(), strict=True)
    ]
    more = {kind: f"see {secret} here." for kind, (secret, _, _) in MORE.items()}
    found = redactor.scan(more.values())
    assert {kind: found[text] for kind, text in more.items()} == {
        kind: ((shown or "see {} here.").format(marker(kind)), (kind,))
        for kind, (_, _, shown) in MORE.items()
    }
    assert sorted(redactor.scan([PAYLOAD])[PAYLOAD][1]) == sorted(KINDS)
    plain = "A plain answer with https://example.com and version 1.2.3..."
    # A key's token may take in an address's domain: the name goes too.
    assert redactor.scan([BRANCH])[BRANCH][0] == "".join(
        marker(kind) for kind in ("email-address", "aws-access-key")
    )
    # A text cut short: its last word goes where, completed, it is a key.
    cut = ["Lunch at noon…", "AKIA12…", "key ghp_R8mK2pX9…"]
    assert redactor.scan([plain, *cut]) == {
        "AKIA12…": (f"{marker('aws-access-key')}…", ("aws-access-key",)),
        "key ghp_R8mK2pX9…": (f"key {marker('github-token')}…", ("github-token",)),
    }


def llm_file(directory: Path) -> Path:
    with LlmLog(directory) as log:
        log.cli("-m", "echo", "-s", PAYLOAD, PAYLOAD)
        log.tool_chain(
            PAYLOAD, [{"name": "echo", "arguments": {"text": PAYLOAD}}], functions=ECHO
        )
        return log.path


def chatgpt_file(directory: Path) -> Path:
    nodes = [
        ("root", None, None),
        ("sys", "root", gpt_message("sys", "system", PAYLOAD, at=1)),
        (
            NODE_ID,
            "sys",
            gpt_message(
                NODE_ID, "user", PAYLOAD, at=2, attachments=[{"id": "f1", "name": LINE}]
            ),
        ),
        (
            "code",
            NODE_ID,
            gpt_message(
                "code",
                "assistant",
                at=3,
                model="gpt-4o",
                recipient="python",
                content={"content_type": "code", "language": "python", "text": PAYLOAD},
            ),
        ),
        (
            "out",
            "code",
            gpt_message(
                "out",
                "tool",
                at=4,
                name="python",
                content={"content_type": "execution_output", "text": PAYLOAD},
            ),
        ),
        ("a1", "out", gpt_message("a1", "assistant", PAYLOAD, at=5, model="gpt-4o")),
        (
            "a2",
            "out",
            gpt_message("a2", "assistant", "Another answer.", at=6, model="gpt-4o"),
        ),
    ]
    conversation = gpt_conversation(CONVERSATION, LINE, nodes, current_node="a1")
    path = write_json(directory / "conversations.json", [conversation])
    run("note", "a1", PAYLOAD, "--db", path)  # convgraph's own file, beside
    return path


def claude_code_folder(directory: Path) -> Path:
    project = directory / "projects" / "-home-ada-deploy"
    project.mkdir(parents=True)
    common = {
        "isSidechain": False,
        "userType": "external",
        "cwd": FOLDER,
        "sessionId": "s1",
        "version": "1.0.83",
        "gitBranch": BRANCH,
    }
    usage = {"input_tokens": 10, "output_tokens": 3}

    def assistant(
        uuid: str, parent: str, content: list[dict[str, Any]], at: int
    ) -> dict[str, Any]:
        message = {
            "role": "assistant",
            "content": content,
            "id": f"msg_{uuid}",
            "type": "message",
            "model": "claude-sonnet-4-20250514",
            "usage": usage,
        }
        return {
            **common,
            "parentUuid": parent,
            "type": "assistant",
            "message": message,
            "uuid": uuid,
            "timestamp": f"2025-06-01T10:0{at}:00.000Z",
        }

    def user(uuid: str, parent: str | None, content: Any, at: int) -> dict[str, Any]:
        return {
            **common,
            "parentUuid": parent,
            "type": "user",
            "message": {"role": "user", "content": content},
            "uuid": uuid,
            "timestamp": f"2025-06-01T10:0{at}:00.000Z",
        }

    lines = [
        {"type": "summary", "summary": LINE, "leafUuid": "a2"},
        user(NODE_ID, None, PAYLOAD, 0),
        assistant(
            "a1",
            NODE_ID,
            [
                {"type": "thinking", "thinking": PAYLOAD, "signature": "x"},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "Bash",
                    "input": {"command": PAYLOAD},
                },
            ],
            1,
        ),
        user(
            "r1",
            "a1",
            [{"type": "tool_result", "tool_use_id": "toolu_1", "content": PAYLOAD}],
            2,
        ),
        assistant("a2", "r1", [{"type": "text", "text": PAYLOAD}], 3),
    ]
    (project / "s1.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines)
    )
    return directory / "projects"


def claude_ai_file(directory: Path) -> Path:
    blocks = [
        {"type": "thinking", "thinking": PAYLOAD},
        {"type": "tool_use", "id": "t1", "name": "fetch", "input": {"url": PAYLOAD}},
        {
            "type": "tool_result",
            "tool_use_id": "t1",
            "name": "fetch",
            "content": [{"type": "text", "text": PAYLOAD}],
        },
        {"type": "text", "text": PAYLOAD},
    ]
    upload = {"file_name": LINE, "file_type": "txt", "extracted_content": PAYLOAD}
    messages = [
        claude_message(
            NODE_ID, "human", PAYLOAD, 0, attachments=[upload], files=[upload]
        ),
        claude_message("a1", "assistant", "", 10, NODE_ID, blocks=blocks),
    ]
    conversation = {
        "uuid": CONVERSATION,
        "name": LINE,
        "summary": PAYLOAD,
        "created_at": "2025-06-01T10:00:00Z",
        "updated_at": "2025-06-01T10:01:00Z",
        "chat_messages": messages,
    }
    return write_json(directory / "conversations.json", [conversation])


def webui_file(directory: Path) -> Path:
    files = [{"type": "file", "name": LINE, "url": f"/api/v1/files/{LINE}"}]
    messages = {
        NODE_ID: webui_message(NODE_ID, "user", PAYLOAD, 0, None, ["a1"], files=files),
        "a1": webui_message(
            "a1", "assistant", PAYLOAD, 5, NODE_ID, [], model="llama3", files=files
        ),
    }
    chat = {
        "title": LINE,
        "params": {"system": PAYLOAD},
        "history": {"messages": messages, "currentId": "a1"},
        "messages": list(messages.values()),
    }
    return write_json(directory / "export.json", [webui_chat(CONVERSATION, LINE, chat)])


def codex_home(directory: Path) -> Path:
    folder = directory / ".codex" / "sessions" / "2025" / "09" / "01"
    folder.mkdir(parents=True)

    def item(kind: str, **payload: Any) -> dict[str, Any]:
        stamp = "2025-09-01T08:00:00.000Z"
        return {"timestamp": stamp, "type": kind, "payload": payload}

    def said(role: str, kind: str) -> dict[str, Any]:
        content = [{"type": kind, "text": PAYLOAD}]
        return item("response_item", type="message", role=role, content=content)

    call = json.dumps({"command": ["sh", "-c", PAYLOAD]})
    lines = [
        item(
            "session_meta",
            id=CONVERSATION,
            cwd=FOLDER,
            instructions=PAYLOAD,
            git={"branch": BRANCH},
        ),
        said("user", "input_text"),
        item("turn_context", cwd=FOLDER, model="gpt-5-codex"),
        item(
            "response_item",
            type="reasoning",
            summary=[{"type": "summary_text", "text": PAYLOAD}],
        ),
        item(
            "response_item",
            type="function_call",
            name="shell",
            arguments=call,
            call_id="call_1",
        ),
        item(
            "response_item",
            type="function_call_output",
            call_id="call_1",
            output=json.dumps({"output": PAYLOAD, "metadata": {"exit_code": 0}}),
        ),
        said("assistant", "output_text"),
    ]
    name = "rollout-2025-09-01T08-00-00-s1.jsonl"
    (folder / name).write_text("".join(json.dumps(line) + "\n" for line in lines))
    return directory


def gemini_home(directory: Path) -> Path:
    folder = directory / ".gemini" / "tmp" / "0a1b2c" / "chats"
    folder.mkdir(parents=True)
    stamp = "2025-10-01T12:00:00.000Z"
    result = {"functionResponse": {"id": "t1", "name": "run_shell_command"}}
    result["functionResponse"]["response"] = {"output": PAYLOAD}
    call = {
        "id": "t1",
        "name": "run_shell_command",
        "args": {"command": PAYLOAD},
        "result": [result],
        "status": "success",
        "timestamp": stamp,
    }
    answer = {
        "id": "m2",
        "timestamp": stamp,
        "type": "gemini",
        "content": PAYLOAD,
        "thoughts": [{"subject": LINE, "description": PAYLOAD, "timestamp": stamp}],
        "toolCalls": [call],
        "model": "gemini-2.5-pro",
    }
    session = {
        "sessionId": CONVERSATION,
        "projectHash": "0a1b2c",
        "startTime": stamp,
        "lastUpdated": stamp,
        "messages": [
            {"id": NODE_ID, "timestamp": stamp, "type": "user", "content": PAYLOAD},
            answer,
        ],
    }
    write_json(folder / "session-2025-10-01T12-00-g1.json", session)
    return directory


def copilot_home(directory: Path) -> Path:
    folder = directory / ".copilot" / "session-state" / "s1"
    folder.mkdir(parents=True)
    events: list[dict[str, Any]] = []

    def event(kind: str, **data: Any) -> None:
        at = f"2026-03-26T17:50:{len(events):02d}.000Z"
        parent = events[-1]["id"] if events else None
        number = NODE_ID if kind == "user.message" else f"e{len(events)}"
        events.append(
            {"type": kind, "data": data, "id": number, "timestamp": at}
            | {"parentId": parent}
        )

    request = {"toolCallId": "c1", "name": "bash", "arguments": {"command": PAYLOAD}}
    context = {"cwd": FOLDER, "branch": BRANCH}
    event("session.start", sessionId=CONVERSATION, context=context)
    attachment = {"type": "file", "path": f"/home/ada/{LINE}", "displayName": LINE}
    event("user.message", content=PAYLOAD, attachments=[attachment])
    event("assistant.reasoning", content=PAYLOAD)
    event("assistant.message", content="", toolRequests=[request], model="gpt-5")
    event("tool.execution_complete", toolCallId="c1", result={"content": PAYLOAD})
    event("assistant.message", content=PAYLOAD, reasoningText=PAYLOAD)
    lines = "".join(json.dumps(line) + "\n" for line in events)
    (folder / "events.jsonl").write_text(lines)
    return directory


def legacy_file(directory: Path) -> Path:
    conn = legacy_database(directory / "logs.db")
    add_response(
        conn, "r1", CONVERSATION, PAYLOAD, system=PAYLOAD, response="", name=LINE
    )
    add_response(conn, NODE_ID, CONVERSATION, "", parent="r1", response=PAYLOAD)
    conn.execute(
        "insert into tool_calls (response_id, name, arguments, tool_call_id)"
        " values ('r1', 'echo', ?, 'c1')",
        [json.dumps({"text": PAYLOAD})],
    )
    conn.execute(
        "insert into tool_results (id, response_id, name, output, tool_call_id)"
        " values (1, ?, 'echo', ?, 'c1')",
        [NODE_ID, PAYLOAD],
    )
    conn.execute(
        "insert into attachments (id, type, path) values ('a', 'text/plain', ?)",
        [f"/home/ada/{LINE}"],
    )
    conn.execute("insert into prompt_attachments values ('r1', 'a', 0)")
    conn.execute(
        "insert into fragments (id, hash, content, source) values (1, 'h', ?, ?)",
        [PAYLOAD, LINE],
    )
    conn.execute("insert into prompt_fragments values ('r1', 1, 0)")
    conn.commit()
    conn.close()
    return directory / "logs.db"


def store_file(directory: Path) -> Path:
    """A message store with reasoning (echo's own, made the payload) and a
    file attached and one given as a fragment, each named by a secret."""
    from tests.test_parts_llm import png

    (directory / f"{LINE}.png").write_bytes(png())
    (directory / f"{LINE}.txt").write_text(PAYLOAD)
    prompt = json.dumps({"prompt": PAYLOAD, "raw": PAYLOAD})
    with LlmLog(directory) as log:
        picture, text = (str(directory / f"{LINE}.{end}") for end in ("png", "txt"))
        log.cli("-m", "echo", "-o", "thinking", "1", "-a", picture, prompt)
        log.cli("-m", "echo", "-f", text, "-s", PAYLOAD, PAYLOAD)
    conn = sqlite3.connect(log.path)
    conn.execute("update parts set text = ? where type = 'reasoning'", [PAYLOAD])
    conn.commit()
    conn.close()
    return log.path


def parquet_dataset(directory: Path) -> Path:
    """The richest export's dataset, written unredacted: redacted when read."""
    output = directory / "dataset"
    run("export", "--db", chatgpt_file(directory), "--format", "parquet", "-o", output)
    return output


BUILD = {
    "llm": llm_file,
    "chatgpt": chatgpt_file,
    "claude-code": claude_code_folder,
    "claude-ai": claude_ai_file,
    "openwebui": webui_file,
    "codex": codex_home,
    "gemini": gemini_home,
    "copilot": copilot_home,
    "legacy": legacy_file,
    "store": store_file,
}


@pytest.fixture(scope="module", params=list(BUILD))
def source(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    return BUILD[request.param](tmp_path_factory.mktemp(request.param))


def clean(text: str, kinds: list[str] = KINDS) -> None:
    """Assert `text` holds no planted secret and a marker of each kind."""
    assert [leak for leak in LEAKS if leak in text] == []
    assert [kind for kind in kinds if marker(kind) not in text] == []


def read_back(format_name: str, path: Path) -> str:
    """The file `path` as its format's own parser reads it, as text."""
    if format_name == "graphml":
        import networkx as nx

        graph = nx.read_graphml(path)
        return json.dumps([list(graph.nodes(data=True)), graph.graph], default=str)
    if format_name == "dot":
        import pydot

        return "\n".join(
            graph.to_string() for graph in pydot.graph_from_dot_file(str(path))
        )
    if format_name == "parquet":
        import pyarrow.dataset as ds

        tables = [
            ds.dataset(path / name, format="parquet").to_table()
            for name in ("nodes", "edges")
        ]
        return json.dumps([table.to_pylist() for table in tables], default=str)
    if format_name in ("json", "tree-json"):
        return json.dumps(json.loads(path.read_text("utf-8")), ensure_ascii=False)
    if format_name == "chat-jsonl":
        lines = path.read_text("utf-8").splitlines()
        return json.dumps([json.loads(line) for line in lines], ensure_ascii=False)
    return path.read_text("utf-8")  # html, markdown, mermaid: text as written


#: The drawings cut their labels: they show some markers only.
FULL = ("json", "tree-json", "graphml", "parquet", "markdown", "html")


@pytest.mark.parametrize(
    "words",
    [
        *FULL,
        "dot",
        "mermaid",
        "chat-jsonl",
        "markdown --full",
        "chat-jsonl --reasoning",
    ],
)
def test_every_format_leaves_out_every_secret(
    source: Path, words: str, tmp_path: Path
) -> None:
    output = tmp_path / "out"
    format_name, *options = words.split()
    run(
        "export",
        "--db",
        source,
        "--format",
        format_name,
        "-o",
        output,
        *options,
        "--redact",
    )
    text = read_back(format_name, output)
    clean(text, KINDS if format_name in FULL or format_name == "chat-jsonl" else [])
    assert "[REDACTED" in text


@pytest.mark.parametrize("format_name", ["html", "graphml"])
def test_one_conversation_leaves_out_every_secret(
    source: Path, format_name: str, tmp_path: Path
) -> None:
    """A page or graph of one tree, named by its id as stored."""
    with convgraph.open(source) as logs:
        tree_id = logs.tree_ids()[-1]
    output = tmp_path / "out"
    run(
        "export",
        tree_id,
        "--db",
        source,
        "--format",
        format_name,
        "-o",
        output,
        "--redact",
    )
    text = read_back(format_name, output)
    assert [leak for leak in LEAKS if leak in text] == []
    assert "[REDACTED" in text


def test_the_planted_secrets_are_there_without_redact(source: Path) -> None:
    text = run("export", "--db", source, "--format", "json").stdout
    assert [leak for leak in LEAKS if leak not in text] == []


def test_transcripts_and_pairs_leave_out_every_secret(source: Path) -> None:
    with convgraph.open(source) as logs:
        tree_id = logs.tree_ids()[0]
    clean(run("transcript", tree_id, "--db", source, "--redact", "--full").stdout)
    clean(run("transcript", tree_id, "--db", source, "--redact", "--json").stdout)
    pairs = run("pairs", "--db", source, "--redact", "--nl").stdout
    assert [leak for leak in LEAKS if leak in pairs] == []


def test_the_handle_redacts_titles_ids_and_parts(source: Path) -> None:
    with convgraph.open(source, redact=True) as logs:
        tree = next(iter(logs.trees()))
        forest = logs.forest()
    shown = json.dumps([list(tree.nodes(data=True)), tree.graph], default=str)
    clean(shown)
    table = json.dumps(forest.nodes.astype(object).to_dict("records"), default=str)
    clean(table + json.dumps(forest.names))


def test_check_secrets_says_where_without_saying_what(tmp_path: Path) -> None:
    said = run("check", "--secrets", "--db", chatgpt_file(tmp_path), expect=1).stdout
    assert [leak for leak in LEAKS if leak in said] == []
    # One line a record, as --json gives them (each source's, below).
    assert len(said.splitlines()) == len(places(PLACES["chatgpt"]))
    assert said.splitlines()[:3] == [
        "aws-access-key: tree conv [REDACTED email-address], name",
        "email-address: tree conv [REDACTED email-address], name",
        "email-address: tree conv [REDACTED email-address] node a1, tree_id",
    ]


#: Each source's `check --secrets` records, as clauses "tree node fields kinds":
#: C the planted conversation's id (redacted), G the planted node id
#: (redacted), #i the i-th generated id, - no node; kinds E every one, A aws,
#: M e-mail, AM both, G github.
PLACES = {
    "chatgpt": "C - name AM; C a1 tree_id conversation_id M; C a1 prompt system"
    " response parts[0].text E; C a1 parts[1].name AM; C a1 parts[2].text"
    " parts[3].text parts[4].text E; C a2 tree_id conversation_id M; C a2"
    " prompt system parts[0].text E; C a2 parts[1].name AM; C a2 parts[2].text"
    " parts[3].text E; C a1 note E",
    "llm": "#0 - name A; #0 #1 prompt system response E; #2 #3 prompt response"
    " parts[0].text parts[1].text parts[2].arguments parts[3].output"
    " parts[4].text E",
    "claude-code": "s1 - name AM; s1 a2 prompt response parts[0].text"
    " parts[1].text parts[2].arguments parts[3].output parts[4].text E;"
    " s1 a2 project git_branch AM",
    # an upload's name twice: as an attachment and as a file
    "claude-ai": "C - name AM; C a1 tree_id conversation_id M; C a1 prompt"
    " response parts[0].text E; C a1 parts[1].name parts[2].name AM; C a1"
    " parts[3].text parts[4].arguments parts[5].output parts[6].text E",
    "openwebui": "C - name AM; C a1 tree_id conversation_id M; C a1 prompt"
    " system response parts[0].text E; C a1 parts[1].name parts[1].url AM;"
    " C a1 parts[2].text E; C a1 parts[3].name parts[3].url AM",
    "codex": "C - name A; C C:6 id tree_id conversation_id M; C C:6 prompt"
    " response parts[0].text parts[1].text parts[2].arguments parts[3].output"
    " parts[4].text E; C C:6 project git_branch AM",
    "gemini": "C - name A; C m2 tree_id conversation_id M; C m2 prompt response"
    " parts[0].text parts[1].text parts[2].text parts[3].arguments"
    " parts[4].output E",
    "copilot": "C - name A; C e5 tree_id conversation_id M; C e5 prompt response"
    " parts[0].text E; C e5 parts[1].name AM; C e5 parts[2].text"
    " parts[3].arguments parts[4].output parts[5].text parts[6].text E;"
    " C e5 project git_branch AM",
    # the fragment's name, then the attachment's
    "legacy": "C - name AM; C G id G; C G tree_id conversation_id M; C G prompt"
    " system response E; C G parts[0].name AM; C G parts[1].text E; C G"
    " parts[2].name AM; C G parts[3].arguments parts[4].output parts[5].text E",
    # a title cut before the key ("AKI…") holds none
    "store": "#0 #1 prompt response parts[0].text E; #0 #1 parts[1].name AM;"
    " #0 #1 parts[2].text parts[3].text E; #2 - name A; #2 #3 prompt system"
    " response E; #2 #3 parts[0].name parts[1].name AM; #2 #3 parts[2].text"
    " parts[3].text E",
}
CODES = {
    "E": KINDS,
    "A": ["aws-access-key"],
    "M": ["email-address"],
    "AM": ["aws-access-key", "email-address"],
    "G": ["github-token"],
}


def places(spec: str) -> list[tuple[Any, ...]]:
    ids = {"C": "conv [REDACTED email-address]", "G": "[REDACTED github-token]"}
    ids |= {"C:6": f"{ids['C']}:6", "-": None}
    found = []
    for clause in spec.split("; "):
        tree, node, *fields, code = clause.split()
        found += [
            (ids.get(tree, tree), ids.get(node, node), field, kind)
            for field in fields
            for kind in CODES[code]
        ]
    return sorted(found, key=str)


def test_check_secrets_lists_every_place_of_every_source(
    source: Path, request: pytest.FixtureRequest
) -> None:
    said = run("check", "--secrets", "--db", source, "--json", expect=1).stdout
    assert [leak for leak in LEAKS if leak in said] == []
    generated: dict[str, str] = {}  # llm's ids, named in order

    def shown(value: str | None) -> str | None:
        if value is None or len(value) < 26 or "[REDACTED" in value:
            return value
        return generated.setdefault(value, f"#{len(generated)}")

    found = [
        (shown(p["tree_id"]), shown(p["node_id"]), p["field"], p["kind"])
        for p in json.loads(said)
    ]
    assert sorted(found, key=str) == places(
        PLACES[request.node.callspec.params["source"]]
    )


def test_a_parquet_dataset_is_redacted_when_read_back(tmp_path: Path) -> None:
    """A dataset written unredacted: `check --secrets` reads it as it reads
    its source, and its tables read back and redacted hold no secret."""
    from convgraph.analysis.datasets import dataset_conversation_table
    from convgraph.model.forest import Forest
    from convgraph.redaction import redact
    from convgraph.sources.parquet import read_nodes

    dataset = parquet_dataset(tmp_path)
    said = run("check", "--secrets", "--db", dataset, "--json", expect=1).stdout
    found = [tuple(place.values()) for place in json.loads(said)]
    assert sorted(found, key=str) == places(PLACES["chatgpt"])
    nodes = read_nodes(dataset)
    names = dict(zip(nodes["tree_id"], nodes.pop("tree_name"), strict=True))
    forest = redact(Forest(nodes, names))
    stats = redact(dataset_conversation_table(dataset))
    shown = [forest.nodes.astype(object).to_dict("records"), forest.names]
    clean(json.dumps([*shown, stats.astype(object).to_dict("records")], default=str))


def test_check_secrets_on_a_clean_file() -> None:
    examples = Path(__file__).parent.parent / "examples" / "logs.db"
    assert run("check", "--secrets", "--db", examples).stdout == "no secrets found\n"


def test_redact_without_its_extra_is_one_line(tmp_path: Path) -> None:
    path = chatgpt_file(tmp_path)
    # detect-secrets made unimportable, as where it is not installed.
    code = "import sys; sys.modules['detect_secrets'] = None; from convgraph.cli import cli; cli()"
    for words in (["export", "--redact"], ["check", "--secrets"]):
        done = subprocess.run(
            [sys.executable, "-c", code, *words, "--db", str(path)],
            capture_output=True,
            text=True,
        )
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr == (
            "Error: finding secrets needs detect-secrets and pyarrow:"
            " pip install 'convgraph[redact]'\n"
        )


def test_datasette_pages_redact_with_the_plugin_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("datasette")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the index
    from tests.test_datasette import get, served

    path = llm_file(tmp_path)
    with convgraph.open(path) as logs:
        tree_id = logs.tree_ids()[0]
    redacting = {"plugins": {"convgraph": {"redact": True}}}
    pages = (f"/-/convgraph/logs/{tree_id}", "/-/convgraph/logs?q=aws")
    for page in pages:
        shown = get(served(path, metadata=redacting), page)
        assert shown.status_code == 200
        assert [leak for leak in LEAKS if leak in shown.text] == []
        assert "[REDACTED aws-access-key]" in shown.text
        plain = get(served(path), page).text
        assert "Z7Q4XKJ3" in plain
