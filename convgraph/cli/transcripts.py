"""`transcript` (one path as Markdown or chat messages) and `pairs` (the
preference pairs of alternative answers)."""

from __future__ import annotations

import sys
from typing import Any

import click

from convgraph.cli.filters import FILTER_HELP, filter_options, filtered_trees
from convgraph.cli.options import (
    ANY_ID,
    CONVERSATION_ID,
    all_option,
    command,
    db_option,
    json_option,
    opened_logs,
    output_options,
)
from convgraph.cli.output import (
    Counted,
    TableFit,
    echo_json,
    echo_markdown,
    echo_records,
    filter_words,
    is_terminal,
    json_text,
    say,
    table_width,
    terminal_lines,
)
from convgraph.cli.redacting import redact_option
from convgraph.model.filters import TreeFilter
from convgraph.text import counted, excerpt


@command()
@click.argument("node_id", type=ANY_ID)
@json_option
@click.option(
    "--format",
    "format_name",
    type=click.Choice(["markdown", "json"], case_sensitive=False),
    default=None,
    hidden=True,  # the spelling before --json: scripts that use it still work
)
@click.option(
    "--full",
    is_flag=True,
    help="Keep long tool outputs whole (they are cut at 2,000 characters,"
    " their size said)",
)
@redact_option
@db_option
@all_option
def transcript(
    node_id: str,
    as_json: bool,
    format_name: str | None,
    full: bool,
) -> None:
    """The conversation from its root down to NODE_ID, as one transcript.

    Given a conversation id instead, follows the conversation's active path
    (the branch last used). Markdown, or with --json a JSON array of chat
    messages (role, content).

    \b
    convgraph transcript NODE_ID > branch.md
    convgraph transcript CONVERSATION_ID --json
    convgraph transcript SESSION_ID --full --db ~/.claude/projects
    """
    if format_name is not None and format_name.lower() == "json":
        click.echo("Note: --format json is spelt --json now, as elsewhere", err=True)
        as_json = True
    found = opened_logs().transcript(node_id)
    if as_json:
        echo_json(found.messages())
    elif is_terminal(sys.stdout):
        echo_markdown(found.markdown(full=full, local_times=True))
    else:
        text = found.markdown(full=full, local_times=True)
        click.echo(terminal_lines(text), nl=False)


@command(epilog=FILTER_HELP)
@click.argument("conversation_ids", nargs=-1, type=CONVERSATION_ID)
@click.option(
    "--prefer",
    type=click.Choice(["notes", "active"], case_sensitive=False),
    default="notes",
    show_default=True,
    help="The chosen answer: the one marked preferred, else the one on the"
    " active path (notes); or only the active path's (active)",
)
@click.option(
    "--reasoning",
    is_flag=True,
    help="Keep the model's reasoning in the answers (reasoning_content)",
)
@redact_option
@db_option
@all_option
@output_options
@filter_options
def pairs(
    conversation_ids: tuple[str, ...],
    prefer: str,
    reasoning: bool,
    output_format: str | None,
    where: TreeFilter,
) -> None:
    """Preference pairs from alternative answers to one prompt; every
    conversation when no id is given.

    One record per chosen/rejected pair: prompt (the messages up to the
    prompt), chosen and rejected (the messages of each answer's run: one
    assistant message, or its tool calls and their results too),
    conversation_id, chosen_id, rejected_id. --nl writes the JSONL that
    TRL's DPO trainer reads; --csv and --tsv give the message lists as JSON.

    \b
    convgraph pairs --nl > preferences.jsonl
    """
    from convgraph.export.training import PAIR_COLUMNS
    from convgraph.export.training import pairs as find_pairs

    trees = Counted(filtered_trees(conversation_ids, where))
    records = list(find_pairs(trees, prefer.lower(), reasoning))
    if not records and not trees.count:
        say(
            f"no conversation matches {filter_words(where)}"
            if where
            else "no conversations"
        )
    elif not records:
        kept = counted(trees.count, "conversation", grouping=",")
        say(
            f"no preference pairs: no prompt in the {kept} has two answers with"
            " one of them chosen (convgraph prefer, or the active path)"
        )
    columns = list(PAIR_COLUMNS)
    if output_format in ("json", "nl"):
        echo_records(records, columns, output_format)
    elif output_format in ("csv", "tsv"):
        flat = [
            {
                key: json_text(value, indent=None) if isinstance(value, list) else value
                for key, value in record.items()
            }
            for record in records
        ]
        echo_records(flat, columns, output_format)
    else:
        _print_pairs(records, columns)


#: The cells of each text in the table of pairs off a terminal.
TEXT_CELLS = 30
PAIR_PRIORITY = ("prompt", "chosen", "rejected", "chosen_id", "rejected_id")


def _print_pairs(records: list[dict[str, Any]], columns: list[str]) -> None:
    """The pairs as a table for a person, fitted to a terminal."""
    width = table_width()
    cells, id_length, fit = TEXT_CELLS, None, None
    if width is not None and records:
        from convgraph.present.text_tree import unique_prefix_length

        ids = [r[key] for r in records for key in ("chosen_id", "rejected_id")]
        id_length = unique_prefix_length(ids)
        cells = max(12, (width - 2 * (id_length + 2) - 4) // 3)
        fit = TableFit(width, PAIR_PRIORITY)
    rows = [_row(record, cells, id_length) for record in records]
    echo_records(rows, columns, "table", fit=fit)


def _row(
    record: dict[str, Any], cells: int = TEXT_CELLS, id_length: int | None = None
) -> dict[str, Any]:
    """A pair as a table row: each text `cells` wide, ids `id_length` long."""
    return {
        **record,
        "prompt": excerpt(record["prompt"][-1]["content"], cells),
        "chosen": excerpt(_said(record["chosen"]), cells),
        "rejected": excerpt(_said(record["rejected"]), cells),
        **{key: record[key][:id_length] for key in ("chosen_id", "rejected_id")},
    }


def _said(messages: list[dict[str, Any]]) -> str:
    """What an answer's run said last, or the tools it called."""
    for message in reversed(messages):
        if message["role"] == "assistant" and message.get("content"):
            return str(message["content"])
    return ", ".join(
        f"{call['function']['name']}()"
        for message in messages
        for call in message.get("tool_calls", ())
    )
