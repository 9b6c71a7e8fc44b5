"""Judged cases as Arize Phoenix span annotations.

The payload is the ``AnnotateSpansRequestBody`` of ``POST /v1/span_annotations`` (Phoenix's
REST API, ``schemas/openapi.json`` of arize-phoenix 20.x): ``{"data": [SpanAnnotationData]}``,
each ``{"span_id", "name", "annotator_kind", "result": {"label", "score", "explanation"},
"metadata", "identifier"}``; ``span_id`` (hex), ``name`` and ``annotator_kind`` (``LLM``,
``CODE`` or ``HUMAN``) are required. Per case one annotation ``skillcdg.compliance``: the
decision as the label, the calibrated probability of a violation as the score, the judge's
reason as the explanation, the SkillCDG facts as metadata; annotator ``LLM`` (the judge).
``identifier`` is ``skillcdg:<strategy>``: exporting again updates the annotation.

Phoenix annotates spans it holds: only cases imported from OpenTelemetry spans (their span
id kept) can be written; the others are counted and left out.

Pushing: ``PHOENIX_API_KEY`` (the name Phoenix's clients read) as a bearer token when set;
a Phoenix without authentication takes none.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from workbench.export._push import PushFailed, post_json, push_failed, with_path
from workbench.export._verdicts import EVALUATION_NAME, JudgedCase
from workbench.export.errors import ExportError

ANNOTATIONS_PATH = "/v1/span_annotations"
API_KEY = "PHOENIX_API_KEY"
BATCH = 500  # annotations per request


def span_annotation(case: JudgedCase) -> dict[str, Any]:
    """The SpanAnnotationData of one case linked to its span (``case.link`` is set)."""
    if case.link is None:
        raise ValueError(f"case {case.case_id} has no OpenTelemetry span to annotate")
    result: dict[str, Any] = {"label": case.label}
    if case.decided.probability is not None:
        result["score"] = float(case.decided.probability)
    if case.explanation:
        result["explanation"] = case.explanation
    return {"span_id": case.link.span_id, "name": EVALUATION_NAME, "annotator_kind": "LLM",
            "result": result, "metadata": case.metadata(), "identifier": f"skillcdg:{case.strategy}"}


def phoenix_payload(cases: Sequence[JudgedCase]) -> tuple[dict[str, Any], list[str]]:
    """``(AnnotateSpansRequestBody, ids of the cases left out: no span to annotate)``."""
    data, unlinked = [], []
    for case in cases:
        if case.link is None:
            unlinked.append(case.case_id)
        else:
            data.append(span_annotation(case))
    return {"data": data}, unlinked


def push_phoenix(payload: Mapping[str, Any], url: str, *, env: Mapping[str, str] | None = None,
                 timeout: float = 30.0) -> int:
    """Post the annotations to Phoenix at ``url`` (its base address, e.g.
    ``http://127.0.0.1:6006``, or the full ``/v1/span_annotations`` address), in batches;
    returns how many Phoenix acknowledged."""
    env = os.environ if env is None else env
    key = env.get(API_KEY)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    endpoint = with_path(url, ANNOTATIONS_PATH)
    data = list(payload.get("data", []))
    done = 0
    for start in range(0, len(data), BATCH):
        chunk = data[start:start + BATCH]
        try:
            answer = post_json(endpoint, {"data": chunk}, headers, timeout=timeout)
        except ExportError as exc:
            raise push_failed(exc, "span annotations", done, len(data)) from None
        inserted = answer.json.get("data") if isinstance(answer.json, dict) else None
        if not isinstance(inserted, list):
            raise PushFailed(f"{done} of {len(data)} span annotations delivered: Phoenix "
                             f"answered {answer.status} without the inserted annotations",
                             "check that the address is a Phoenix server (…/v1/span_annotations)",
                             delivered=done, total=len(data))
        done += len(chunk)
    return done
