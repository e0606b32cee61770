"""JSON text, fast: every value convgraph writes as JSON goes through `dumps`.

orjson writes JSON ten times faster than the standard library (whose
indented form is pure Python), which a million nodes' export or 100,000
rows of statistics feel. Its answers differ from `json.dumps(value,
ensure_ascii=False, default=str)` only where json's are wrong or odd: NaN
is `null` (json writes `NaN`, which no JSON parser reads back), numpy's
numbers are numbers (json writes an int64 as its `str`), and a float's
exponent has no `+` (`1e16`, both valid). What orjson refuses (an int past
64 bits, a string holding a lone surrogate) is written by json itself.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

# Datetimes and dataclasses go to `default` (their `str`), as json sends
# them, so a value writes the same text by either encoder.
_OPTIONS = (
    orjson.OPT_NON_STR_KEYS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_SERIALIZE_NUMPY
)


def dumps(value: Any, indent: bool = False, strict: bool = False) -> str:
    """`value` as JSON text: compact (no spaces), or indented by two with
    `indent`; strings verbatim (no ASCII escapes); what JSON has no type for
    (a datetime, a path) as its `str`. `strict`: raise what orjson refuses
    (`orjson.JSONEncodeError`, a TypeError) instead of writing it with json.

    Examples
    --------
    >>> dumps({"id": "é", "n": [1, None]})
    '{"id":"é","n":[1,null]}'
    >>> print(dumps({"a": [1]}, indent=True))
    {
      "a": [
        1
      ]
    }
    >>> dumps(float("nan")), dumps(2**70)
    ('null', '1180591620717411303424')
    """
    options = _OPTIONS | orjson.OPT_INDENT_2 if indent else _OPTIONS
    try:
        return orjson.dumps(value, default=str, option=options).decode()
    except (orjson.JSONEncodeError, TypeError):
        if strict:
            raise
        if indent:
            return json.dumps(value, indent=2, ensure_ascii=False, default=str)
        return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))


def dumps_bytes(value: Any, indent: bool = False) -> bytes:
    """`value` as compact UTF-8 JSON by orjson alone (indented by two with
    `indent`): the bytes of `dumps` where orjson takes the value, for a
    writer that stays in bytes (the forest's node-link JSON, a batch of
    nodes a call; a batch of `stats --json` rows).

    Raises
    ------
    orjson.JSONEncodeError, TypeError
        Where orjson refuses a value, which `dumps` writes with json.

    Examples
    --------
    >>> dumps_bytes([{"id": "é"}, None])
    b'[{"id":"\\xc3\\xa9"},null]'
    """
    options = _OPTIONS | orjson.OPT_INDENT_2 if indent else _OPTIONS
    return orjson.dumps(value, default=str, option=options)
