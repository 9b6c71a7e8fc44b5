"""OTLP/JSON building blocks: ``AnyValue`` s, attribute lists, and a file of JSON documents
one after another (a single export, the collector's JSONL, or the SDK console exporter's
pretty-printed spans back to back)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from workbench.audit.importers.common import fail
from workbench.inputs import InputError, loads_json

_SCALARS = ("stringValue", "boolValue", "doubleValue")
FIX_VALUE = 'write an OTLP AnyValue such as {"stringValue": "..."} or a plain JSON value'


def any_value(value: Any, where: str) -> Any:
    """An OTLP ``AnyValue`` as plain data (``intValue`` is a string in OTLP/JSON)."""
    if not isinstance(value, dict) or len(value) != 1:
        return value  # already plain (SDK JSON), or an empty AnyValue ({} reads as None)
    (kind, inner), = value.items()
    if kind in _SCALARS:
        return inner
    if kind == "intValue":
        try:
            return int(inner)
        except (TypeError, ValueError):
            raise fail(where, f"intValue {inner!r} is not an integer", FIX_VALUE) from None
    if kind == "arrayValue":
        items = inner.get("values", []) if isinstance(inner, dict) else None
        if not isinstance(items, list):
            raise fail(where, "arrayValue needs a 'values' list", FIX_VALUE)
        return [any_value(v, where) for v in items]
    if kind == "kvlistValue":
        return attribute_map(inner.get("values", []) if isinstance(inner, dict) else None, where)
    if kind == "bytesValue":
        return "[bytes]"
    return value  # a plain one-key object (an SDK attribute that is a dict)


def attribute_map(raw: Any, where: str) -> dict[str, Any]:
    """Attributes as a dict: OTLP's ``[{"key", "value": AnyValue}]`` or the SDK's dict."""
    if isinstance(raw, dict):
        return dict(raw)
    if not isinstance(raw, list):
        raise fail(where, "attributes must be a list of {key, value} or an object", FIX_VALUE)
    out: dict[str, Any] = {}
    for i, kv in enumerate(raw):
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
            raise fail(f"{where}[{i}]", "an attribute needs a string 'key'",
                       'write {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}')
        out[kv["key"]] = any_value(kv.get("value"), f"{where}[{i}] ({kv['key']})")
    return out


def documents(text: str, origin: str) -> Iterator[tuple[int, Any]]:
    """``(first line, value)`` of each JSON document in ``text``, read by the input layer
    (duplicate keys, depth, huge numbers are its errors, with their line)."""
    decoder = json.JSONDecoder()
    at, n = 0, len(text)
    while True:
        while at < n and text[at] in " \t\r\n":
            at += 1
        if at >= n:
            return
        line = text.count("\n", 0, at) + 1
        try:
            _, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            raise InputError(origin, f"not valid JSON: {exc.msg}", exc.lineno,
                             "fix the JSON syntax") from None
        except (RecursionError, ValueError):
            end = n  # let the input layer name the problem (depth, long integers)
        yield line, loads_json(text[at:end], origin, line)
        at = end
