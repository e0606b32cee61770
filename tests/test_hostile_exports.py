"""Hostile chat exports, round three (issue 24.1, 24.2, 24.3, 24.9 and its
Also): small files that would cost much, values past their type's range,
two conversations sharing message ids, a zip cut short, and any JSON value
in any field of each export format.

Each case is a file a user could be handed; each test asserts the exact
answer: one line on stderr and exit status 2 past a bound
(`convgraph.sources.chat.json_files`), the value missing where it is out of range,
every node kept where ids are shared. Nothing here times anything (the
figures are in the report of the change and the benchmarks); the big inputs
are `slow`.
"""

from __future__ import annotations

import copy
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convgraph.model.loading import load_tree, load_tree_of_node
from convgraph.sources import open_logs
from convgraph.sources.chat.json_files import MAX_DEPTH, MAX_VALUE_BYTES, READ_SIZE
from tests import chat_exports as build
from tests.helpers import examples, read_forest, run


def one_line_error(path: Path, *words: str) -> str:
    """The one line a command prints on stderr for `path`, exit status 2."""
    result = run(*words, "--db", path, expect=2)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def titled(value_json: str) -> str:
    """A ChatGPT export whose one conversation's title is `value_json`."""
    conversation = build.chatgpt_branches()
    conversation["title"] = "TITLE"
    return json.dumps([conversation]).replace('"TITLE"', value_json)


# -- 24.1: nesting and long values --------------------------------------------


def test_forty_thousand_nested_arrays_are_one_line(tmp_path: Path) -> None:
    # 81 KB that took 3.9 GB: ijson's prefixed events, quadratic in depth.
    path = tmp_path / "conversations.json"
    path.write_text(titled("[" * 40_000 + "]" * 40_000))
    assert path.stat().st_size < 100_000
    for words in (["conversations"], ["stats"], ["tree", "conv-monad"], ["check"]):
        assert one_line_error(path, *words) == (
            f"Error: cannot read {path}: a JSON value nests deeper than"
            f" {MAX_DEPTH} levels (convgraph reads none deeper)"
        )


def test_nesting_up_to_the_bound_reads(tmp_path: Path) -> None:
    # The top-level array and the conversation are two levels: a title
    # nested 98 deep reaches the bound, one more passes it.
    path = tmp_path / "conversations.json"
    path.write_text(titled("[" * (MAX_DEPTH - 2) + "]" * (MAX_DEPTH - 2)))
    with open_logs(path) as logs:
        tree = logs.read_tree("conv-monad")
    assert tree.name is None  # a title that is no text
    assert len(tree.records) == 4
    path.write_text(titled("[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)))
    assert "nests deeper than" in one_line_error(path, "conversations")


def test_a_long_value_under_the_bound_reads_whole(tmp_path: Path) -> None:
    title = "tide " * 400_000  # 2 MB, read by ijson in several pieces
    path = tmp_path / "conversations.json"
    path.write_text(titled(json.dumps(title)))
    with open_logs(path) as logs:
        assert logs.read_tree("conv-monad").name == title


@pytest.mark.slow
def test_a_value_past_the_bound_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    # The bound is checked as ijson reads, READ_SIZE bytes at a time.
    path.write_text(titled(json.dumps("x" * (MAX_VALUE_BYTES + READ_SIZE + 1))))
    assert one_line_error(path, "conversations") == (
        f"Error: cannot read {path}: a JSON value is longer than"
        f" {MAX_VALUE_BYTES // 2**20} MiB (convgraph reads none longer)"
    )


@pytest.mark.slow
def test_a_400_mb_string_zipped_small_stops_at_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "export.zip"
    head, tail = titled('"TAIL').split('"TAIL')
    with (
        zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive,
        archive.open("conversations.json", "w") as member,
    ):
        member.write(head.encode() + b'"')
        block = b"x" * 2**20
        for _ in range(400):
            member.write(block)
        member.write(b'"' + tail.encode())
    assert path.stat().st_size < 2_000_000
    assert one_line_error(path, "stats").endswith(
        f"a JSON value is longer than {MAX_VALUE_BYTES // 2**20} MiB"
        " (convgraph reads none longer)"
    )


@pytest.mark.parametrize("app", ["claude", "openwebui"])
def test_four_thousand_messages_sharing_one_uuid_each_keep_a_node(
    tmp_path: Path, app: str
) -> None:
    # The '+' loop took 13 s: now one look-up per message.
    count = 4000
    if app == "claude":
        messages = [
            {
                "uuid": "same",
                "sender": "human" if index % 2 == 0 else "assistant",
                "text": f"m{index}",
                "created_at": build.iso(index).replace("+00:00", "Z"),
            }
            for index in range(count)
        ]
        export: Any = [{"uuid": "c1", "name": "Echo", "chat_messages": messages}]
    else:
        messages = [
            {
                "id": "same",
                "role": "user" if index % 2 == 0 else "assistant",
                "content": f"m{index}",
                "timestamp": build.EPOCH + index,
            }
            for index in range(count)
        ]
        export = [{"id": "c1", "title": "Echo", "chat": {"messages": messages}}]
    path = build.write_json(tmp_path / "conversations.json", export)
    forest = read_forest(path)
    # The answers end the nodes: messages 1, 3, ... named same+2, same+4, ...
    assert forest.nodes["id"].tolist() == [f"same+{n}" for n in range(2, count + 1, 2)]
    assert forest.nodes["response"].tolist() == [f"m{n}" for n in range(1, count, 2)]
    assert int(forest.depths.max()) == count // 2 - 1


# -- 24.2: values past their type's range ---------------------------------------


def test_a_time_past_year_9999_in_utc_is_missing(tmp_path: Path) -> None:
    export = build.claude_export()
    # The prompt and its first answer: the node's time is the answer's, or
    # else the prompt's.
    for message in export[0]["chat_messages"][:2]:
        message["created_at"] = "9999-12-31T23:00:00-05:00"
    path = build.write_json(tmp_path / "conversations.json", export)
    with open_logs(path) as logs:
        records = logs.read_tree("claude-primes").records
    assert {r["id"]: r["datetime_utc"] for r in records}["as1"] is None
    for words in (["conversations"], ["stats"], ["tree", "claude-primes"]):
        run(*words, "--db", path)
    run("export", "claude-primes", "--format", "json", "--db", path)


def test_usage_past_int64_is_missing(tmp_path: Path) -> None:
    export = build.webui_export()
    answer = export[0]["chat"]["history"]["messages"]["m2"]
    answer["info"].update(total_duration=1e300, eval_count=2**70)
    export[0]["chat"]["history"]["messages"]["m2b"]["usage"] = {
        "prompt_tokens": "MINUS_INFINITY",  # -1e400: a float past its range
        "completion_tokens": 3,
    }
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(export).replace('"MINUS_INFINITY"', "-1e400"))
    with open_logs(path) as logs:
        records = logs.read_tree("chat-greet").records
    usage = {
        r["id"]: (r["input_tokens"], r["output_tokens"], r["duration_ms"])
        for r in records
    }
    assert usage == {
        "m2": (5, None, None),
        "m2b": (None, 3, None),
        "m4": (None, None, None),
    }
    run("stats", "--db", path)


# -- 24.3: message ids shared by two conversations ------------------------------


@pytest.fixture
def copied(tmp_path: Path) -> Path:
    """conv-monad, and a copy made by "Branch in new chat": the same
    messages, ids and all, then a turn of its own; and a third conversation
    sharing one id with the first."""
    original = build.chatgpt_branches()
    copy_of = copy.deepcopy(original)
    copy_of["id"] = copy_of["conversation_id"] = "conv-copy"
    copy_of["title"] = "Monads (branch)"
    message = build.gpt_message
    mapping = copy_of["mapping"]
    mapping["a2e"]["children"].append("u3")
    mapping["u3"] = {
        "id": "u3",
        "parent": "a2e",
        "children": ["a3"],
        "message": message("u3", "user", "In Haskell?", at=70),
    }
    mapping["a3"] = {
        "id": "a3",
        "parent": "u3",
        "children": [],
        "message": message("a3", "assistant", "Maybe a.", at=80),
    }
    copy_of["current_node"] = "a3"
    one = build.gpt_conversation(
        "conv-one",
        "One shared",
        [
            ("p1", None, message("p1", "user", "Again?", at=90)),
            ("a2", "p1", message("a2", "assistant", "Again.", at=91)),
        ],
        current_node="a2",
    )
    return build.write_json(tmp_path / "conversations.json", [original, copy_of, one])


COPY_IDS = ["conv-copy/a1", "conv-copy/a1b", "conv-copy/a2", "conv-copy/a2e", "a3"]


def test_a_copied_conversation_keeps_every_node(copied: Path) -> None:
    forest = read_forest(copied)
    by_tree = forest.nodes.groupby("tree_id", observed=True)["id"].apply(list)
    assert by_tree.to_dict() == {
        "conv-monad": ["a1", "a1b", "a2", "a2e"],
        "conv-copy": COPY_IDS,
        "conv-one": ["conv-one/a2"],
    }
    copy_tree = forest.tree("conv-copy")
    assert sorted(copy_tree.edges) == [
        ("conv-copy/a1b", "conv-copy/a2"),
        ("conv-copy/a1b", "conv-copy/a2e"),
        ("conv-copy/a2e", "a3"),
    ]
    for tree_id in ("conv-monad", "conv-copy", "conv-one"):
        alone = load_tree(tree_id, copied)
        assert dict(alone.nodes(data=True)) == dict(
            forest.tree(tree_id).nodes(data=True)
        )
        assert list(alone.edges) == list(forest.tree(tree_id).edges)
    # Each id names one node: the original's plain, the copy's qualified.
    assert load_tree_of_node("a2e", copied).graph["tree_id"] == "conv-monad"
    assert load_tree_of_node("conv-copy/a2e", copied).graph["tree_id"] == "conv-copy"
    assert [(p.kind, p.conversation_id) for p in forest.problems] == [
        ("shared-ids", "conv-copy"),
        ("shared-ids", "conv-one"),
    ]


def test_commands_show_both_conversations_and_check_says_why(copied: Path) -> None:
    listed = run("conversations", "--db", copied, "--json").stdout
    assert [(row["tree_id"], row["nodes"]) for row in json.loads(listed)] == [
        ("conv-monad", 4),
        ("conv-copy", 5),
        ("conv-one", 1),
    ]
    assert run("check", "--db", copied, expect=1).stdout.splitlines() == [
        # The placeholder root (root-m) is shared too, and is no message.
        "shared-ids: conv-copy holds 8 message ids an earlier conversation"
        " holds too (a copy?): read as conv-copy/ID",
        "shared-ids: conv-one holds 1 message id an earlier conversation"
        " holds too (a copy?): read as conv-one/ID",
    ]
    exported = json.loads(run("export", "--format", "json", "--db", copied).stdout)
    ids = [node["id"] for node in exported["nodes"]]
    assert len(ids) == len(set(ids)) == 10
    lines = run("export", "--format", "chat-jsonl", "--db", copied).stdout
    # One example per branch, each copy's and the third conversation's.
    assert [json.loads(line)["leaf_id"] for line in lines.splitlines()] == [
        "a1",
        "a2",
        "a2e",
        "conv-copy/a1",
        "conv-copy/a2",
        "a3",
        "conv-one/a2",
    ]
    drawn = run("tree", "conv-copy", "--db", copied).stdout
    assert "conv-copy/a2e" in drawn and "a3" in drawn


# -- 39, family 7: the app's own scaffolding is no problem ------------------------

#: The id ChatGPT gives the placeholder root of every conversation.
CLIENT_ROOT = "client-created-root"


def with_client_root(conversation: dict[str, Any]) -> dict[str, Any]:
    """A ChatGPT conversation whose placeholder root (a root without a
    message) is `client-created-root`, as in every conversation of a
    current export."""
    conversation = copy.deepcopy(conversation)
    mapping = conversation["mapping"]
    (root,) = [
        node_id
        for node_id, node in mapping.items()
        if node["parent"] is None and node["message"] is None
    ]
    renamed = {}
    for node_id, node in mapping.items():
        node_id = CLIENT_ROOT if node_id == root else node_id
        node["id"] = node_id
        if node["parent"] == root:
            node["parent"] = CLIENT_ROOT
        renamed[node_id] = node
    conversation["mapping"] = renamed
    return conversation


def test_a_normal_export_reports_no_problem(tmp_path: Path) -> None:
    conversations = [with_client_root(item) for item in build.chatgpt_export()]
    path = build.write_zip(
        tmp_path / "export.zip", {"conversations.json": conversations}
    )
    result = run("check", "--db", path)
    assert result.stdout == "no problems found\n"
    forest = read_forest(path, text=False)
    assert forest.problems == []
    # Every conversation keeps its nodes, none renamed: the root is no node.
    sizes = forest.nodes.groupby("tree_id", observed=True).size().to_dict()
    assert sizes == {"conv-monad": 4, "conv-tools": 2, "conv-chain": 2000}
    assert not forest.nodes["id"].str.contains("/").any()


def test_the_example_export_with_client_roots_reports_no_problem(
    tmp_path: Path,
) -> None:
    example = Path(__file__).parent.parent / "examples" / "chatgpt-export.zip"
    assert run("check", "--db", example).stdout == "no problems found\n"
    with zipfile.ZipFile(example) as archive:
        members: dict[str, Any] = {
            name: archive.read(name) for name in archive.namelist()
        }
    original = read_forest(example, text=False)
    members["conversations.json"] = [
        with_client_root(item) for item in json.loads(members["conversations.json"])
    ]
    path = build.write_zip(tmp_path / "chatgpt-export.zip", members)
    assert run("check", "--db", path).stdout == "no problems found\n"
    forest = read_forest(path, text=False)
    assert forest.nodes["id"].tolist() == original.nodes["id"].tolist()


def test_a_copy_with_client_roots_still_names_its_messages(tmp_path: Path) -> None:
    original = with_client_root(build.chatgpt_branches())
    copied = copy.deepcopy(original)
    copied["id"] = copied["conversation_id"] = "conv-copy"
    path = build.write_json(tmp_path / "conversations.json", [original, copied])
    assert run("check", "--db", path, expect=1).stdout.splitlines() == [
        "shared-ids: conv-copy holds 8 message ids an earlier conversation"
        " holds too (a copy?): read as conv-copy/ID",
    ]


# -- 24.9: a zip cut short --------------------------------------------------------


def test_a_truncated_zip_is_named_as_one(tmp_path: Path) -> None:
    whole = build.write_zip(
        tmp_path / "export.zip", {"conversations.json": build.chatgpt_export()}
    )
    cut = tmp_path / "cut.zip"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    assert one_line_error(cut, "stats").startswith(
        f"Error: {cut} is a zip file that is truncated or damaged ("
    )
    # A member whose compressed bytes are damaged, the archive's end whole.
    data = bytearray(whole.read_bytes())
    with zipfile.ZipFile(whole) as archive:
        info = archive.infolist()[0]
    start = info.header_offset + 30 + len(info.filename) + 100
    data[start : start + 64] = bytes(64)
    damaged = tmp_path / "damaged.zip"
    damaged.write_bytes(bytes(data))
    line = one_line_error(damaged, "conversations")
    assert line.startswith(f"Error: cannot read {damaged}:conversations.json: the zip")
    assert "truncated or damaged" in line


# -- the Also: any JSON value in any field ----------------------------------------

#: Any JSON value, kept small: the property tries many.
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)

#: One conversation of each app, with every kind of field it holds.
BASES = {
    "chatgpt": build.chatgpt_tools,
    "claude": lambda: build.claude_export()[0],
    "openwebui": lambda: build.webui_export()[0],
}


def field_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in `value` a JSON value may be put: each key and index
    at any depth."""
    found = [path] if path else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += field_paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += field_paths(item, (*path, index))
    return found


PATHS = {app: field_paths(make()) for app, make in BASES.items()}


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    value = copy.deepcopy(value)
    place = value
    for step in path[:-1]:
        place = place[step]
    place[path[-1]] = new
    return value


def commands_answer_in_one_line(path: Path, tree_id: str) -> None:
    for words in (
        ["conversations"],
        ["stats"],
        ["tree", tree_id],
        ["check"],
        ["export", "--format", "json"],
    ):
        result = run(*words, "--db", path, expect=None)
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            words,
            result.exception,
        )
        assert result.exit_code in (0, 1, 2), (words, result.exit_code)
        assert len(result.stderr.strip().splitlines()) <= 1, (words, result.stderr)


def _any_value_case(data: st.DataObject, tmp_path: Path) -> None:
    app = data.draw(st.sampled_from(sorted(BASES)))
    base = BASES[app]()
    path_in = data.draw(st.sampled_from(PATHS[app]))
    value = data.draw(JSON_VALUES)
    export = replaced(base, path_in, value)
    path = tmp_path / f"{app}.json"
    path.write_text(json.dumps([export]))
    tree_id = {"chatgpt": "conv-tools", "claude": "claude-primes"}.get(
        app, "chat-greet"
    )
    commands_answer_in_one_line(path, tree_id)


@settings(
    max_examples=examples(40),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_any_value_in_any_field_gives_an_answer_never_a_traceback(
    data: st.DataObject, tmp_path: Path
) -> None:
    _any_value_case(data, tmp_path)


@pytest.mark.slow
@settings(
    max_examples=examples(400),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_any_value_in_any_field_many_times(data: st.DataObject, tmp_path: Path) -> None:
    _any_value_case(data, tmp_path)
