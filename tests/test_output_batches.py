"""The output options write records a batch at a time: the same text as one
document of all of them, whatever the batch size."""

from __future__ import annotations

import csv
import io
import json

from convgraph.cli import output
from convgraph.cli.output import BATCH, echo_json_array, echo_records, json_text
from tests.helpers import printed

RECORDS = [
    {"id": f"n{index}", "models": ["a", "b"] if index % 3 else [], "text": "é\n\x1b"}
    for index in range(2 * BATCH + 7)
]


def test_a_json_array_in_batches_is_the_document_of_the_whole_list() -> None:
    for items in ([], RECORDS[:1], RECORDS):
        assert printed(echo_json_array, iter(items)) == json_text(items) + "\n"
    assert json.loads(printed(echo_json_array, RECORDS)) == RECORDS


def test_every_format_prints_what_one_batch_prints(monkeypatch) -> None:
    columns = ["id", "models", "text"]
    formats = ("json", "nl", "csv", "tsv", "table")
    batched = {name: printed(echo_records, RECORDS, columns, name) for name in formats}
    monkeypatch.setattr(output, "BATCH", len(RECORDS) + 1)
    whole = {name: printed(echo_records, RECORDS, columns, name) for name in formats}
    assert batched == whole
    assert batched["nl"].count("\n") == len(RECORDS)
    read_back = list(csv.reader(io.StringIO(batched["csv"])))
    assert read_back[0] == columns and len(read_back) == len(RECORDS) + 1
    assert read_back[2] == ["n1", "a,b", "é\n\x1b"]
