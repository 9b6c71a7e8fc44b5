"""JSON and JSONL: duplicate keys, depth, integer size and lone surrogates checked, with lines."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from workbench.inputs.decode import (
    MAX_INPUT_BYTES,
    InputError,
    line_of_offset,
    read_input_text,
    split_jsonl_lines,
)

# Deeper data is refused: no file the workbench reads nests past ~6 levels, while every
# later recursive step (validation, json.dumps, the store) would hit Python's recursion limit.
MAX_JSON_DEPTH = 100

_SURROGATE = re.compile("[\ud800-\udfff]")
# A \uXXXX escape of a surrogate; pairs are matched as one so only lone ones are reported.
_SURROGATE_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
)
_LONG_INT = re.compile(r"\d{4300,}")


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _find_line(text: str, pattern: re.Pattern[str] | str, nth: int = 0) -> int | None:
    found = [m.start() for m in re.finditer(pattern, text)]
    if len(found) > nth:
        return line_of_offset(text, found[nth])
    return None


def _lone_surrogate_line(text: str) -> int | None:
    for m in _SURROGATE_ESCAPE.finditer(text):
        if len(m.group(0)) == 6:
            return line_of_offset(text, m.start())
    return None


def _check_tree(data: Any, origin: str, text: str, first_line: int, surrogates: bool) -> None:
    """Depth and lone surrogates, walked without recursion (deep data must not crash us)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if surrogates:
            strings: tuple[str, ...] = ()
        elif isinstance(node, str):
            strings = (node,)
        elif isinstance(node, dict):
            strings = tuple(node)
        else:
            strings = ()
        for s in strings:
            if _SURROGATE.search(s):
                line = _lone_surrogate_line(text)
                raise InputError(
                    origin, "a string holds a lone surrogate escape (such as \\udc80), which is "
                    "not a Unicode character", None if line is None else line + first_line - 1,
                    "remove the escape or complete the surrogate pair")
        if isinstance(node, dict | list):
            if depth > MAX_JSON_DEPTH:
                raise InputError(origin, f"data nested more than {MAX_JSON_DEPTH} levels deep",
                                 first_line if first_line > 1 else None,
                                 "flatten the structure; no workbench file nests this deep")
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children)


def loads_json(text: str, origin: str, first_line: int = 1, *, allow_surrogates: bool = False) -> Any:
    """Parse one JSON document (``first_line``: its line in the file, for JSONL).

    Raises InputError for invalid JSON, a key repeated within one object, nesting deeper than
    :data:`MAX_JSON_DEPTH`, integers longer than Python converts (4,300 digits) and strings
    with lone surrogates (they cannot be written as UTF-8 again). ``allow_surrogates`` is
    for the workbench's own traces, which write such text as escapes and must read back
    equal.
    """
    at = first_line - 1
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        raise InputError(origin, f"not valid JSON: {exc.msg} (column {exc.colno})",
                         exc.lineno + at, "fix the JSON syntax") from None
    except _DuplicateKey as exc:
        line = _find_line(text, re.escape(json.dumps(exc.key)) + r"\s*:", 1)
        raise InputError(origin, f"key {exc.key!r} appears twice in one object",
                         None if line is None else line + at,
                         "keep one (JSON readers disagree on which one wins)") from None
    except RecursionError:
        raise InputError(origin, f"data nested more than {MAX_JSON_DEPTH} levels deep",
                         first_line, "flatten the structure") from None
    except ValueError:  # int() refuses more than sys.get_int_max_str_digits() digits
        line = _find_line(text, _LONG_INT)
        raise InputError(origin, f"a number has more than {sys.get_int_max_str_digits()} digits",
                         None if line is None else line + at,
                         "store long identifiers as strings") from None
    _check_tree(data, origin, text, first_line, allow_surrogates)
    return data


def read_json(path: str | Path, what: str = "JSON file", max_bytes: int = MAX_INPUT_BYTES) -> Any:
    """Read, decode, parse and check a JSON file; every problem is an InputError."""
    return loads_json(read_input_text(path, what, max_bytes), str(path))


def dumps_utf8(value: Any) -> str:
    """``value`` as JSON text that can be written as UTF-8 (a file line, a SQLite column):
    characters as they are, unless text that is not valid Unicode (a lone surrogate, which
    ``loads_json(..., allow_surrogates=True)`` keeps) needs the ``\\uXXXX`` escapes."""
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, ensure_ascii=True)
    return text


def nulls_for_nan(value: Any, *, infinities: bool) -> Any:
    """``value`` with each float NaN as ``None``, through dicts, lists and tuples (tuples
    become lists); with ``infinities`` also ``inf`` and ``-inf``, for strict JSON, which has
    neither. Without it infinities stay, for ``json.dump``'s ``Infinity``."""
    if isinstance(value, float) and (math.isnan(value) or (infinities and math.isinf(value))):
        return None
    if isinstance(value, dict):
        return {k: nulls_for_nan(v, infinities=infinities) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [nulls_for_nan(v, infinities=infinities) for v in value]
    return value


def iter_jsonl(text: str | Iterable[str], origin: str) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each non-blank line; the first bad line raises InputError.
    ``text`` is the whole text, or its lines as they are read (``iter_input_lines``): then
    only one line is held at a time."""
    lines = (split_jsonl_lines(text) if isinstance(text, str)
             else (line.removesuffix("\n").removesuffix("\r") for line in text))
    for number, line in enumerate(lines, 1):
        if line.strip():
            yield number, loads_json(line, origin, number)
