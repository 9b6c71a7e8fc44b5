"""Judged cases as Langfuse scores, in Langfuse's public ingestion format.

The payload is an ``IngestionRequest`` of ``POST /api/public/ingestion`` (Langfuse's server API,
``fern/apis/server/definition/ingestion.yml``): ``{"batch": [event, ...]}``, each event
``{"id", "timestamp", "type": "score-create", "body": ScoreBody}``. A ScoreBody needs ``name``
and ``value`` (a string for ``CATEGORICAL``, a number for ``NUMERIC``); ``traceId``,
``observationId``, ``comment``, ``metadata``, ``dataType`` are optional. Per case:

- ``skillcdg.compliance`` — CATEGORICAL, ``violation`` or ``compliant`` (the decision), the
  judge's reason as the comment, the SkillCDG facts (rules, spans, guarantee) as metadata;
- ``skillcdg.violation_probability`` — NUMERIC, the calibrated probability, where known.

The trace: Langfuse keeps an OpenTelemetry trace under its hex trace id and each span as an
observation under its hex span id, so a case imported from OTel is scored on that trace and
observation. Other cases are scored on the trace whose id is the case id (a score may come
before its trace). Score ids are derived from case and strategy: exporting again updates
the scores instead of adding new ones (the body id upserts).

Pushing: HTTP Basic auth with ``LANGFUSE_PUBLIC_KEY`` and ``LANGFUSE_SECRET_KEY`` (the names
Langfuse's own clients read), batches under the documented 3.5 MB; the server answers 207
with ``successes`` and ``errors``, and an error is reported.
"""

from __future__ import annotations

import base64
import json
import os
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from workbench.export._push import PushFailed, post_json, push_failed, with_path
from workbench.export._verdicts import EVALUATION_NAME, PROBABILITY_NAME, JudgedCase
from workbench.export.errors import ExportError

INGESTION_PATH = "/api/public/ingestion"
PUBLIC_KEY = "LANGFUSE_PUBLIC_KEY"
SECRET_KEY = "LANGFUSE_SECRET_KEY"
MAX_BATCH_BYTES = 3_000_000  # Langfuse: "Batch sizes are limited to 3.5 MB in total"
_NAMESPACE = uuid.UUID("6f1d2a5e-3b7c-4e0a-9d51-5c6b7a8e9f10")  # score ids of this workbench


def score_bodies(case: JudgedCase) -> list[dict[str, Any]]:
    """The ScoreBody objects of one case."""
    target: dict[str, Any] = {"traceId": case.link.trace_id if case.link else case.case_id}
    if case.link is not None:
        target["observationId"] = case.link.span_id
    bodies = [{
        "id": _score_id(case, EVALUATION_NAME), **target, "name": EVALUATION_NAME,
        "value": case.label, "dataType": "CATEGORICAL", "metadata": case.metadata(),
        **({"comment": case.explanation} if case.explanation else {}),
    }]
    if case.decided.probability is not None:
        bodies.append({"id": _score_id(case, PROBABILITY_NAME), **target, "name": PROBABILITY_NAME,
                       "value": float(case.decided.probability), "dataType": "NUMERIC",
                       "metadata": {"case_id": case.case_id, "strategy": case.strategy,
                                    "calibrated": case.decided.calibrated}})
    return bodies


def langfuse_payload(cases: Sequence[JudgedCase], *, now: datetime | None = None) -> dict[str, Any]:
    """The ``IngestionRequest`` of ``cases`` (one file to post)."""
    from workbench.clock import utcnow

    stamp = _iso(now or utcnow())
    batch = []
    for case in cases:
        for body in score_bodies(case):
            # The envelope id deduplicates deliveries; the body id is the score (upserts).
            event_id = str(uuid.uuid5(_NAMESPACE, f"{body['id']}@{stamp}"))
            batch.append({"id": event_id, "timestamp": stamp, "type": "score-create", "body": body})
    return {"batch": batch}


def push_langfuse(payload: Mapping[str, Any], url: str, *, env: Mapping[str, str] | None = None,
                  timeout: float = 30.0) -> int:
    """Post the payload's events to Langfuse at ``url`` (the host, e.g.
    ``https://cloud.langfuse.com``, or the full ingestion address) in batches under 3.5 MB;
    returns how many were accepted. Raises :class:`ExportError` when keys are missing or
    Langfuse reports an event as refused."""
    env = os.environ if env is None else env
    public, secret = env.get(PUBLIC_KEY), env.get(SECRET_KEY)
    if not public or not secret:
        raise ExportError(f"pushing to Langfuse needs {PUBLIC_KEY} and {SECRET_KEY}",
                          "set both in the environment (the project's API keys); never on "
                          "the command line")
    auth = base64.b64encode(f"{public}:{secret}".encode()).decode("ascii")
    endpoint = with_path(url, INGESTION_PATH)
    events = list(payload.get("batch", []))
    accepted = 0
    for batch in _batches(events):
        try:
            answer = post_json(endpoint, {"batch": batch}, {"Authorization": f"Basic {auth}"},
                               timeout=timeout)
        except ExportError as exc:
            raise push_failed(exc, "scores", accepted, len(events)) from None
        body = answer.json if isinstance(answer.json, dict) else {}
        errors = body.get("errors") or []
        if errors:
            first = errors[0] if isinstance(errors[0], dict) else {}
            accepted += len(batch) - len(errors)
            raise PushFailed(f"{accepted} of {len(events)} scores delivered: Langfuse refused "
                             f"{len(errors)} of {len(batch)} in a batch (the first: "
                             f"{first.get('status')} {str(first.get('message', ''))[:300]})",
                             "write the payload with --out and check it against the ingestion API",
                             delivered=accepted, total=len(events))
        accepted += len(body.get("successes") or batch)
    return accepted


def _batches(events: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    out: list[list[dict[str, Any]]] = []
    size = 0
    for event in events:
        n = len(json.dumps(event, ensure_ascii=False).encode("utf-8")) + 2
        if not out or size + n > MAX_BATCH_BYTES:
            out.append([])
            size = 0
        out[-1].append(event)
        size += n
    return out


def _score_id(case: JudgedCase, name: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"{case.case_id}\x1f{case.strategy}\x1f{name}"))


def _iso(moment: datetime) -> str:
    # ISO 8601 with milliseconds ("Resolution: milliseconds (required)") in UTC.
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
