"""Any CSV or JSONL file, with a column mapping: ``--map reply=output,history=messages``.

One row (CSV) or line (JSONL) is one case. Fields of the mapping (``field=column``):

- ``reply`` (required): the agent reply to audit;
- ``history``: the conversation before it: a JSON list of chat messages (``{"role",
  "content"}``, OpenAI tool calls included) or plain text (kept as a transcript);
- ``id`` (default: file name and line), ``session``, ``label`` (``violation``/``compliant``
  or ``negative``/``positive``), ``skills`` or ``policy`` (a SKILL name, or a JSON list of
  them), ``state`` (the environment state: JSON or text).

In JSONL a column may be a dotted path (``reply=response.text``). CSV files are read by
their extension (``.csv``, ``.tsv``), with a header row; a history or state cell holding
JSON is read as JSON. Columns not mapped are kept with the case (``extra["columns"]``).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from pathlib import PurePath
from typing import Any

from workbench.audit.cases import AuditCase, Turn
from workbench.audit.importers.common import (
    HistoryBound,
    ImportFormatError,
    Notes,
    PolicyNames,
    check_reply,
    fail,
    input_failed,
    label_of,
    origin_stem,
)
from workbench.audit.importers.openai_chat import chat_messages
from workbench.inputs import InputError, iter_jsonl

FIELDS = ("reply", "history", "id", "session", "label", "skills", "policy", "state")
FIX_MAP = "write --map reply=COLUMN[,history=COLUMN,id=COLUMN,session=...,label=...,skills=...,state=...]"
CSV_CELL_LIMIT = 64 * 1024 * 1024  # a history cell can be long; the file size is bounded anyway


def parse_mapping(spec: str | None) -> dict[str, str]:
    """``reply=output,history=messages`` -> ``{"reply": "output", "history": "messages"}``."""
    if not spec or not spec.strip():
        raise ImportFormatError("--format map needs --map (which column holds the reply)", FIX_MAP)
    out: dict[str, str] = {}
    for item in spec.split(","):
        name, sep, column = (s.strip() for s in item.partition("="))
        if not sep or not name or not column:
            raise ImportFormatError(f"--map {item.strip()!r}: not FIELD=COLUMN", FIX_MAP)
        if name not in FIELDS:
            raise ImportFormatError(f"--map: {name!r} is not a case field",
                                    f"map any of {', '.join(FIELDS)}")
        if name in out:
            raise ImportFormatError(f"--map: {name!r} is mapped twice", "map each field once")
        out[name] = column
    if "reply" not in out:
        raise ImportFormatError("--map does not say which column holds the reply", FIX_MAP)
    if "skills" in out and "policy" in out:
        raise ImportFormatError("--map: map 'skills' or 'policy', not both", "they mean the same")
    return out


def is_csv(origin: str) -> bool:
    return PurePath(origin).suffix.lower() in (".csv", ".tsv")


def read_mapped(text: str | Iterable[str], origin: str, mapping: dict[str, str],
                policies: PolicyNames, notes: Notes,
                history: HistoryBound | None = None) -> Iterator[AuditCase]:
    """A case per row, a row at a time: ``text`` is the whole text or its lines (endings
    kept) as they are read, so a million-row file is never held whole."""
    rows = _csv_rows(text, origin, mapping) if is_csv(origin) else _jsonl_rows(text, origin)
    bound = history or HistoryBound()
    seen: dict[str, int] = {}  # ids only: what telling a repeated id needs
    for line, row in rows:
        where = f"{origin}:{line}"
        case = _case(row, where, line, origin, mapping, policies, notes, is_csv(origin), bound)
        if case.id in seen:
            raise fail(where, f"duplicate case id {case.id!r} (first on line {seen[case.id]})",
                       "ids must be unique: map 'id' to a column that is")
        seen[case.id] = line
        yield case


def _csv_rows(text: str | Iterable[str], origin: str,
              mapping: dict[str, str]) -> Iterator[tuple[int, dict[str, str]]]:
    csv.field_size_limit(max(csv.field_size_limit(), CSV_CELL_LIMIT))
    delimiter = "\t" if PurePath(origin).suffix.lower() == ".tsv" else ","
    lines = text.splitlines(keepends=True) if isinstance(text, str) else text
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    try:
        header = next(reader, None)
        if not header:
            raise fail(f"{origin}:1", "no header row", "the first row must name the columns")
        if len(set(header)) != len(header):
            twice = sorted({h for h in header if header.count(h) > 1})
            raise fail(f"{origin}:1", f"column(s) {', '.join(map(repr, twice))} appear twice",
                       "give every column its own name")
        for name in mapping.values():
            if name not in header:
                raise fail(f"{origin}:1", f"no column {name!r} (the mapping names it)",
                           f"the columns are {', '.join(map(repr, header))}")
        start = reader.line_num + 1
        for cells in reader:
            if cells and any(c.strip() for c in cells):
                if len(cells) != len(header):
                    raise fail(f"{origin}:{start}", f"{len(cells)} cells for {len(header)} columns",
                               "quote cells that hold the delimiter or line breaks")
                yield start, dict(zip(header, cells, strict=True))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise fail(f"{origin}:{reader.line_num}", f"not valid CSV ({exc})",
                   "fix the quoting of that row") from None
    except InputError as exc:  # a line the input layer refused (encoding, NUL, length)
        raise input_failed(exc) from None


def _jsonl_rows(text: str | Iterable[str], origin: str) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        for number, record in iter_jsonl(text, origin):
            if not isinstance(record, dict):
                raise fail(f"{origin}:{number}", "a line must be a JSON object",
                           "write one object per line")
            yield number, record
    except InputError as exc:
        raise input_failed(exc) from None


_MISSING = object()


def _get(row: dict[str, Any], column: str, flat: bool) -> Any:
    if flat or column in row:
        return row.get(column, _MISSING)
    value: Any = row
    for key in column.split("."):
        if not isinstance(value, dict) or key not in value:
            return _MISSING
        value = value[key]
    return value


def _json_cell(value: Any) -> Any:
    """A CSV cell that holds JSON (a message list, a state object) as that JSON."""
    if isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _case(row: dict[str, Any], where: str, line: int, origin: str, mapping: dict[str, str],
          policies: PolicyNames, notes: Notes, flat: bool, bound: HistoryBound) -> AuditCase:
    got = {name: _get(row, column, flat) for name, column in mapping.items()}
    reply = got["reply"]
    if reply is _MISSING:
        raise fail(where, f"no {mapping['reply']!r} (the reply column)", "give every row a reply")
    if not isinstance(reply, str):
        raise fail(where, f"{mapping['reply']!r} (the reply) must be text", "map the reply to a text column")
    check_reply(reply, where)
    cid = got.get("id", _MISSING)
    if isinstance(cid, int) and not isinstance(cid, bool):
        cid = str(cid)
    if cid is _MISSING or cid == "":
        cid = f"{origin_stem(origin)}-l{line}"
    elif not isinstance(cid, str):
        raise fail(where, f"{mapping['id']!r} (the id) must be text or a number", "map id to a text column")
    session = got.get("session", "")
    session = "" if session is _MISSING or session is None else str(session)
    label = got.get("label", None)
    label = label_of(None if label is _MISSING else label, f"{where}: {mapping.get('label')}")
    history, cut = _history(got.get("history", _MISSING), where, mapping.get("history", ""), bound)
    state = got.get("state", _MISSING)
    state = None if state is _MISSING or state == "" else _json_cell(state) if flat else state
    if state is not None and not isinstance(state, str | dict | list):
        state = json.dumps(state)
    if isinstance(state, str):
        check_reply(state, where, "state")
    named = got.get("skills", got.get("policy", _MISSING))
    skills = _skills(None if named is _MISSING else _json_cell(named) if flat else named,
                     where, policies)
    used = set(mapping.values()) if flat else {c.split(".")[0] for c in mapping.values()}
    rest = {k: v for k, v in row.items() if k not in used}
    return AuditCase(id=cid, model_response=reply, session=session, label=label, skills=skills,
                     context=history, background=state,
                     extra={"source": {"format": "map", "line": line},
                            **({"columns": rest} if rest else {}),
                            **({"history_cut": cut} if cut else {})})


def _history(value: Any, where: str, column: str,
             bound: HistoryBound) -> tuple[list[Turn] | str, dict[str, int] | None]:
    """The row's history within ``bound`` (the latest turns, or the end of a transcript),
    and what was cut."""
    if value is _MISSING or value is None or value == "":
        return [], None
    value = _json_cell(value)
    if isinstance(value, str):
        text, cut = bound.cut_text(value)
        return text, ({"turns_left_out": 0, "characters_left_out": cut} if cut else None)
    if not isinstance(value, list):
        raise fail(where, f"{column!r} (the history) must be a message list or text",
                   'write [{"role": "user", "content": "..."}, ...] or the transcript as text')
    messages = chat_messages(_roles_defaulted(value), f"{where}: {column}")
    return bound.bound([Turn(m.role, m.text) for m in messages
                        if m.role not in ("system", "developer")])


def _roles_defaulted(value: list) -> list:
    """Plain ``{role, content}`` turns with a role our chat reader does not know (``agent``,
    ``customer``) keep it: they are a transcript's speakers, not OpenAI roles."""
    from workbench.audit.importers.openai_chat import ROLES

    return [m if not isinstance(m, dict) or m.get("role") in ROLES or "tool_calls" in m
            else {**m, "role": "user" if m.get("role") in ("customer", "human") else "assistant"
                  if m.get("role") in ("agent", "ai", "bot") else m.get("role")}
            for m in value]


def _skills(value: Any, where: str, policies: PolicyNames) -> list[str] | None:
    """A SKILL column names SKILLs itself (a name or a JSON list); ``--policy FROM=TO``
    still renames them and ``--policy NAME`` overrides them."""
    if policies.skills:
        return list(policies.skills)
    if value is None or value == "":
        return None
    names = [value.strip()] if isinstance(value, str) else value
    if isinstance(names, list) and names and all(isinstance(s, str) and s for s in names):
        return [policies.mapping.get(s, s) for s in names]
    raise fail(where, "the SKILL column must hold a name or a JSON list of names",
               'write airline-policy or ["airline-policy"]')
