"""Turning untrusted model text into checked data, and asking once for a repair."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from workbench.errors import WorkbenchError
from workbench.llm.errors import bound_message
from workbench.prompts.fencing import defuse

Validator = Callable[[dict[str, Any]], Any]

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


class OutputProblem(WorkbenchError, ValueError):
    """The model's answer is unusable; the message is written to be shown to the model.

    ``truncated``: the answer stopped at the token limit, so more room (not a repair note
    with the cut-off text echoed back) is what can fix it.
    """

    def __init__(self, message: str, *, truncated: bool = False):
        # A schema error quotes the offending value, which can be megabytes of model output.
        super().__init__(bound_message(message))
        self.truncated = truncated


def response_format(schema: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The OpenAI ``response_format`` that asks for JSON matching ``schema``."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "answer"
    return {"type": "json_schema", "json_schema": {"name": safe, "schema": dict(schema)}}


def parse_object(text: str, finish_reason: str | None = None) -> dict[str, Any]:
    """The JSON object in ``text`` (a code fence around it is tolerated).

    Raises OutputProblem when it is empty, cut off, not JSON, or not an object.
    """
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    if not stripped:
        raise OutputProblem("the reply was empty; it must be one JSON object")
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError as exc:
        if finish_reason == "length":
            raise OutputProblem(
                "the reply was cut off by the token limit before the JSON ended; "
                "answer with a shorter JSON object",
                truncated=True,
            ) from None
        raise OutputProblem(f"the reply is not valid JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(data, dict):
        raise OutputProblem(f"the reply must be a JSON object, not {type(data).__name__}")
    return data


def check_schema(data: dict[str, Any], schema: Mapping[str, Any]) -> None:
    """Raise OutputProblem naming the first place where ``data`` breaks ``schema``."""
    import jsonschema

    validator_cls = jsonschema.validators.validator_for(schema)
    errors = sorted(validator_cls(schema).iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "(top level)"
        more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
        raise OutputProblem(f"the JSON does not match the schema at {where}: {first.message}{more}")


def check(
    text: str,
    finish_reason: str | None,
    schema: Mapping[str, Any] | None,
    validate: Validator | None,
) -> tuple[dict[str, Any], Any]:
    """Parse, schema-check and semantically validate; raise OutputProblem on the first fault.
    Returns the object and what ``validate`` made of it (None without one)."""
    data = parse_object(text, finish_reason)
    if schema is not None:
        check_schema(data, schema)
    return data, checked(validate, data)


def checked(validate: Validator | None, answer: Any) -> Any:
    """``validate(answer)``, its ValueError turned into the OutputProblem a repair names."""
    if validate is None:
        return None
    try:
        return validate(answer)
    except OutputProblem:
        raise
    except ValueError as exc:
        raise OutputProblem(f"the answer is not acceptable: {exc}") from None


def repair_messages(
    messages: list[dict[str, Any]], bad_text: str, problem: str, *, structured: bool = True
) -> list[dict[str, Any]]:
    """The original conversation plus the bad answer and a note saying what was wrong."""
    what = "Reply again with only the corrected JSON object." if structured else "Reply again."
    # The bad answer and the problem (which may quote it) are model output, sent back as
    # data: defused like every prompt's values, so they cannot write a chat-template token.
    return [
        *messages,
        {"role": "assistant", "content": defuse(bad_text[:4000])},
        {"role": "user", "content": f"Your previous reply was not usable: {defuse(problem)}. {what}"},
    ]
