"""JSON by orjson, json's answer where orjson refuses a value (an int past 64
bits, a lone surrogate): every value convgraph writes as JSON goes here."""

from __future__ import annotations

import json
from typing import Any

import orjson

# Datetimes and dataclasses go to `default` (their `str`), as json sends them.
_OPTIONS = (
    orjson.OPT_NON_STR_KEYS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_SERIALIZE_NUMPY
)


def dumps(value: Any, indent: bool = False, strict: bool = False) -> str:
    """`value` as compact JSON text (indented by two with `indent`); `strict`
    raises what orjson refuses instead of writing it with json."""
    try:
        return dumps_bytes(value, indent).decode()
    except (orjson.JSONEncodeError, TypeError):
        if strict:
            raise
        if indent:
            return json.dumps(value, indent=2, ensure_ascii=False, default=str)
        return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))


def dumps_bytes(value: Any, indent: bool = False) -> bytes:
    """`dumps`' UTF-8 bytes by orjson alone; raises what orjson refuses
    (`orjson.JSONEncodeError`, TypeError)."""
    options = _OPTIONS | orjson.OPT_INDENT_2 if indent else _OPTIONS
    return orjson.dumps(value, default=str, option=options)
