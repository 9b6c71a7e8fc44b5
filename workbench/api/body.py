"""What a request body may hold, checked as the command line's readers check a file, and
how a problem with it is answered without sending the body back.

- :func:`strict_json`: UTF-8 only, then ``workbench.inputs.loads_json`` (invalid JSON,
  repeated keys, nesting depth, 4,300-digit integers), then every string and number walked
  with its place: a lone surrogate (it cannot be stored as UTF-8, and reading the stored
  trace back failed) and NaN or Infinity (JSON has neither; ``json.loads`` takes them) are
  refused naming the field, e.g. ``conversation[2].content``;
- :class:`StrictJsonRoute`: FastAPI routes whose JSON body goes through :func:`strict_json`;
- :func:`validation_problem`: pydantic's errors as field and problem, never the input;
- :func:`excerpt`: the most of a user's value any answer quotes;
- :class:`SafeJSONResponse`: answers a stored trace even if it holds text or numbers that
  strict JSON cannot carry (rows stored before these checks), instead of a 500.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute

from workbench.inputs import InputError, loads_json, nulls_for_nan

EXCERPT_CHARS = 80
MESSAGE_CHARS = 600
MAX_LISTED_ERRORS = 10
ORIGIN = "request body"


class BodyProblem(HTTPException):
    """A body refused before validation: 422 with ``message`` and ``hint`` (an
    HTTPException, so FastAPI's body reading lets it through to the API's handler)."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(422, message)
        self.hint = hint


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out; text that is not
    valid Unicode (a lone surrogate) is shown with backslash escapes."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit:,} more characters)"


# A quoted value inside a message (Python's repr of a string, or JSON's).
_QUOTED = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")


def shorten_message(text: str, limit: int = MESSAGE_CHARS) -> str:
    """A message for an answer: each quoted value in it cut to :data:`EXCERPT_CHARS`
    (``key 'zzz...' appears twice`` quotes the key sent), then the whole to ``limit``."""

    def cut(m: re.Match[str]) -> str:
        quoted = m.group(0)
        if len(quoted) <= EXCERPT_CHARS + 2:
            return quoted
        left = len(quoted) - EXCERPT_CHARS - 2
        return f"{quoted[:EXCERPT_CHARS + 1]}...{quoted[0]} ({left:,} more characters)"

    return excerpt(_QUOTED.sub(cut, text), limit)


def _place(path: tuple[str | int, ...]) -> str:
    out = ""
    for step in path:
        if isinstance(step, int):
            out += f"[{step}]"
        else:
            name = step if step.isidentifier() and len(step) <= 40 else repr(excerpt(step, 40))
            out += f".{name}" if out else name
    return out or "the body"


def _unstorable(value: Any) -> str | None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return ("holds a lone surrogate (such as \\udc80), which is not a Unicode character "
                    "and cannot be stored")
    elif isinstance(value, float) and not math.isfinite(value):
        word = "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"
        return f"is {word}, which JSON has no number for (and nothing can be computed from)"
    return None


def check_values(data: Any) -> None:
    """Raise :class:`BodyProblem` at the first string that is not valid Unicode or number
    that is not finite, naming where it is. Walked without recursion (depth is bounded
    by ``loads_json`` already)."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if (problem := _unstorable(key)) is not None:
                    raise BodyProblem(f"a key in {_place(path)} {problem}",
                                      "remove the escape or complete the surrogate pair")
                stack.append((value, (*path, key)))
        elif isinstance(node, list):
            stack.extend((value, (*path, i)) for i, value in enumerate(node))
        elif (problem := _unstorable(node)) is not None:
            hint = ("send a number, a string or null" if isinstance(node, float)
                    else "remove the escape or complete the surrogate pair")
            raise BodyProblem(f"field {_place(path)} {problem}", hint)


def strict_json(body: bytes) -> Any:
    """The request body as JSON, checked as ``workbench.inputs`` checks a file."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BodyProblem(f"the request body is not UTF-8 (byte {exc.start})",
                          "send JSON encoded as UTF-8") from None
    try:
        data = loads_json(text.removeprefix("\ufeff"), ORIGIN, allow_surrogates=True)
    except InputError as exc:
        raise BodyProblem(f"{exc.problem}", exc.fix or "send one JSON object") from None
    check_values(data)
    return data


class StrictJsonRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = strict_json(await self.body())
        return self._json


class StrictJsonRoute(APIRoute):
    """An APIRoute whose JSON body is read by :func:`strict_json` (FastAPI's own reading
    takes NaN and lone surrogates)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            return await handler(StrictJsonRequest(request.scope, request.receive))

        return strict_handler


def _field(loc: tuple[Any, ...]) -> str:
    path = tuple(x for x in loc[1:] if isinstance(x, str | int)) if loc[:1] == ("body",) else loc
    return _place(tuple(x if isinstance(x, int) else str(x) for x in path))


def validation_problem(exc: RequestValidationError) -> dict[str, Any]:
    """A 422 body for pydantic's errors: each field and what is wrong with it, at most
    :data:`MAX_LISTED_ERRORS`, never the value sent (``input`` is left out)."""
    errors = list(exc.errors())
    fields = [{"field": _field(tuple(e.get("loc", ()))), "problem": excerpt(str(e.get("msg", "")), 200)}
              for e in errors[:MAX_LISTED_ERRORS]]
    listed = "; ".join(f"{f['field']}: {f['problem']}" for f in fields)
    more = f" (and {len(errors) - len(fields)} more)" if len(errors) > len(fields) else ""
    return {"error": "invalid_request", "message": excerpt(listed + more, MESSAGE_CHARS),
            "hint": "see the request schema at /openapi.json", "fields": fields}


class SafeJSONResponse(JSONResponse):
    """JSON as UTF-8; text that is not valid Unicode as ``\\uXXXX`` escapes and numbers
    strict JSON lacks as null, rather than failing the answer."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except ValueError:  # NaN/Infinity (allow_nan=False) or a lone surrogate (encode)
            return json.dumps(nulls_for_nan(content, infinities=True), ensure_ascii=True,
                              allow_nan=False, separators=(",", ":")).encode("ascii")
