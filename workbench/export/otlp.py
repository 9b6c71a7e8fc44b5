"""Judged cases as OpenTelemetry ``gen_ai.evaluation.result`` events (log records).

The event and its attributes follow the GenAI semantic conventions (``model/gen-ai/events.yaml``
of open-telemetry/semantic-conventions, now semantic-conventions-genai; the attribute names
are those of ``opentelemetry-semantic-conventions`` 0.66b2): ``gen_ai.evaluation.name``
(required), ``gen_ai.evaluation.score.value`` and ``.score.label`` (when applicable),
``gen_ai.evaluation.explanation``, ``gen_ai.response.id``. The event "SHOULD be parented to
the GenAI operation span being evaluated": a case imported from OTel spans carries that
span's trace and span ids. Our own facts are namespaced ``skillcdg.*``.

The records are made by the OpenTelemetry SDK (``LoggerProvider``) and encoded by its OTLP
encoder, so the file and the wire carry the same ``ExportLogsServiceRequest``:

- :func:`otlp_json` — OTLP/JSON (the protobuf JSON mapping with the OTLP rules: trace and
  span ids as hex, enums as integers), what a collector's file exporter or
  ``otlp/http`` with ``application/json`` reads;
- :func:`push_otlp` — OTLP/HTTP protobuf, posted by the workbench's one outbound client
  (``workbench.alerts.outbound``: checked destination, no redirects, a total deadline);
  headers (an API key) come from ``OTEL_EXPORTER_OTLP_LOGS_HEADERS`` /
  ``OTEL_EXPORTER_OTLP_HEADERS``, read as the SDK's exporter reads them.

Needs ``opentelemetry-sdk`` and ``opentelemetry-exporter-otlp-proto-http`` (in the lock; its
encoder makes the protobuf).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping, Sequence
from typing import Any

from workbench.export._push import PushFailed, checked_url, post_bytes, push_failed, with_path
from workbench.export._verdicts import EVALUATION_NAME, JudgedCase
from workbench.export.errors import ExportError

EVENT_NAME = "gen_ai.evaluation.result"
SCOPE = "skillcdg.workbench.export"
SERVICE = "skillcdg-workbench"
LOGS_PATH = "/v1/logs"


def attributes(case: JudgedCase) -> dict[str, Any]:
    """The event's attributes: the semantic conventions' first, then ``skillcdg.*``."""
    d = case.decided
    out: dict[str, Any] = {"gen_ai.evaluation.name": EVALUATION_NAME,
                           "gen_ai.evaluation.score.label": case.label}
    if d.probability is not None:
        out["gen_ai.evaluation.score.value"] = float(d.probability)
    if case.explanation:
        out["gen_ai.evaluation.explanation"] = case.explanation
    if case.response_id:
        out["gen_ai.response.id"] = case.response_id
    out.update({
        "skillcdg.case_id": case.case_id,
        "skillcdg.strategy": case.strategy,
        "skillcdg.skill": list(case.skills),
        "skillcdg.violated_rules": list(case.violated_rules),
        "skillcdg.source_span": list(case.source_spans),
        "skillcdg.decision": case.label,
        "skillcdg.decision.automatic": d.automatic,
        "skillcdg.decision.source": str(d.source),
        "skillcdg.decision.calibrated": d.calibrated,
        "skillcdg.decision.threshold": float(case.setting.threshold),
    })
    if case.judge_violation is not None:  # None: scored only, the judge gave no answer
        out["skillcdg.judge.violation"] = case.judge_violation
    if d.confidence is not None:
        out["skillcdg.decision.confidence"] = float(d.confidence)
    for key, value in case.guarantee.items():  # alpha, delta, level, coverage, bound, ...
        if isinstance(value, bool | int | float | str):
            out[f"skillcdg.decision.guarantee.{key}"] = value
    if case.session:
        out["session.id"] = case.session
    return out


def log_records(cases: Sequence[JudgedCase], *, time_ns: int | None = None) -> list[Any]:
    """The SDK's ``ReadableLogRecord`` of each case, emitted in the context of the span it
    judges (so the record carries that trace and span id) where the case has one."""
    import time

    from opentelemetry._logs import SeverityNumber
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

    records: list[Any] = []
    provider = LoggerProvider(resource=Resource.create({"service.name": SERVICE}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(_Collect(records)))
    logger = provider.get_logger(SCOPE, _version())
    now = time_ns if time_ns is not None else time.time_ns()
    try:
        for case in cases:
            context = None
            if case.link is not None:
                ids = int(case.link.trace_id, 16), int(case.link.span_id, 16)
                span = NonRecordingSpan(SpanContext(*ids, is_remote=True,
                                                    trace_flags=TraceFlags(TraceFlags.SAMPLED)))
                context = set_span_in_context(span)
            warn = case.decided.violation
            logger.emit(timestamp=now, observed_timestamp=now, context=context, event_name=EVENT_NAME,
                        severity_number=SeverityNumber.WARN if warn else SeverityNumber.INFO,
                        severity_text="WARN" if warn else "INFO", attributes=attributes(case))
    finally:
        provider.shutdown()
    return records


def otlp_request(cases: Sequence[JudgedCase], *, time_ns: int | None = None) -> Any:
    """The ``ExportLogsServiceRequest`` (protobuf message) of ``cases``."""
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs

    return encode_logs(log_records(cases, time_ns=time_ns))


def otlp_json(request: Any) -> dict[str, Any]:
    """OTLP/JSON of a request: the protobuf JSON mapping (lowerCamelCase keys, 64-bit
    integers as strings) with the OTLP specification's two differences — ``traceId`` and
    ``spanId`` are hex strings, not base64, and enums are integers."""
    from google.protobuf.json_format import MessageToDict

    data = MessageToDict(request, use_integers_for_enums=True)
    for resource in data.get("resourceLogs", []):
        for scope in resource.get("scopeLogs", []):
            for record in scope.get("logRecords", []):
                for key in ("traceId", "spanId"):
                    if key in record:
                        record[key] = base64.b64decode(record[key]).hex()
    return data


def push_otlp(cases: Sequence[JudgedCase], url: str, *, timeout: float = 30.0,
              env: Mapping[str, str] | None = None) -> int:
    """Send the events to an OTLP/HTTP endpoint (``url``: the collector's base address, or
    its ``/v1/logs`` address) as protobuf, in one request through the workbench's outbound
    client (no redirect followed, ``timeout`` for the whole request); returns how many the
    collector accepted. Headers (an API key) come from ``OTEL_EXPORTER_OTLP_LOGS_HEADERS``,
    else ``OTEL_EXPORTER_OTLP_HEADERS`` (``key=value,key=value``, values URL-encoded).
    Raises :class:`ExportError` when the endpoint refuses them or rejects some."""
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
    from opentelemetry.util.re import parse_env_headers

    endpoint = logs_endpoint(url)
    records = log_records(cases)
    env = os.environ if env is None else env
    raw = env.get("OTEL_EXPORTER_OTLP_LOGS_HEADERS") or env.get("OTEL_EXPORTER_OTLP_HEADERS") or ""
    headers = {**parse_env_headers(raw, liberal=True), "Content-Type": "application/x-protobuf"}
    try:
        answer = post_bytes(endpoint, encode_logs(records).SerializeToString(), headers,
                            timeout=timeout)
    except ExportError as exc:
        raise push_failed(exc, "evaluation events", 0, len(records)) from None
    rejected = 0
    if answer.content:
        try:
            reply = ExportLogsServiceResponse.FromString(answer.content)
            rejected = int(reply.partial_success.rejected_log_records)
        except Exception:  # noqa: BLE001 (an answer that is not the protobuf: nothing rejected)
            rejected = 0
    if rejected:
        raise PushFailed(f"{len(records) - rejected} of {len(records)} evaluation events "
                         f"delivered: the OTLP endpoint {checked_url(url, redact=True)} rejected "
                         f"{rejected}", "check the collector's log for why",
                         delivered=len(records) - rejected, total=len(records))
    return len(records)


def logs_endpoint(url: str) -> str:
    """The OTLP/HTTP logs address of ``url``: kept when it ends in ``/v1/logs``, else the
    signal path is appended (as ``OTEL_EXPORTER_OTLP_ENDPOINT`` is read)."""
    return with_path(checked_url(url), LOGS_PATH)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("skillcdg-workbench")
    except PackageNotFoundError:
        return "0"


class _Collect:
    """A log record exporter that keeps what it is given (the SDK's processor calls it)."""

    def __init__(self, into: list[Any]) -> None:
        self._into = into

    def export(self, batch: Sequence[Any]) -> Any:
        from opentelemetry.sdk._logs.export import LogRecordExportResult

        self._into.extend(batch)
        return LogRecordExportResult.SUCCESS

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
