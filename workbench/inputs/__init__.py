"""One reading layer for every file a user hands the workbench (SKILL.md, ``skillcdg/1``
indexes, cases and traces JSONL, contract YAML, labels CSV, zip members).

Each reader **decodes** (UTF-8, with or without a BOM, the same for every format; UTF-16/32,
Latin-1/cp1252 and binary are reported, not guessed), **bounds** (file size, nesting depth,
integer digits, YAML alias expansion) and **validates** (duplicate JSON keys, NUL bytes, lone
surrogates) before any domain code sees the data. Every problem is an :class:`InputError`
naming ``file:line`` and what to do; nothing here raises anything else for bad input.
"""

from workbench.inputs.decode import (
    MAX_INPUT_BYTES,
    InputError,
    decode_text,
    open_regular,
    read_input_bytes,
    read_input_text,
    split_jsonl_lines,
)
from workbench.inputs.jsonio import (
    MAX_JSON_DEPTH,
    dumps_utf8,
    iter_jsonl,
    loads_json,
    nulls_for_nan,
    read_json,
)
from workbench.inputs.lines import MAX_LINE_BYTES, iter_bytes_lines, iter_input_lines
from workbench.inputs.yamlio import MAX_YAML_NODES, BoundedSafeLoader, load_yaml

__all__ = [
    "MAX_INPUT_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_LINE_BYTES",
    "MAX_YAML_NODES",
    "BoundedSafeLoader",
    "InputError",
    "decode_text",
    "dumps_utf8",
    "iter_bytes_lines",
    "iter_input_lines",
    "iter_jsonl",
    "load_yaml",
    "loads_json",
    "nulls_for_nan",
    "open_regular",
    "read_input_bytes",
    "read_input_text",
    "read_json",
    "split_jsonl_lines",
]
