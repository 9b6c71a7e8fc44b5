"""Verdicts out, where teams already look: OpenTelemetry ``gen_ai.evaluation.result`` events
(OTLP/JSON file or OTLP/HTTP), Langfuse scores (public ingestion API) and Arize Phoenix span
annotations (REST API). Each judged case is decided once (``judged_cases``, through
``workbench.decision.decide``) and written by the format's module. Pure Python; the
OpenTelemetry SDK is imported only by the OTLP functions.
"""

from workbench.export._verdicts import (
    EVALUATION_NAME,
    PROBABILITY_NAME,
    JudgedCase,
    OtelLink,
    Selection,
    judged_cases,
)
from workbench.export.errors import ExportError
from workbench.export.langfuse import langfuse_payload, push_langfuse
from workbench.export.otlp import otlp_json, otlp_request, push_otlp
from workbench.export.phoenix import phoenix_payload, push_phoenix

FORMATS = ("otlp", "langfuse", "phoenix")

__all__ = [
    "EVALUATION_NAME", "FORMATS", "PROBABILITY_NAME", "ExportError", "JudgedCase", "OtelLink",
    "Selection", "judged_cases", "langfuse_payload", "otlp_json", "otlp_request",
    "phoenix_payload", "push_langfuse", "push_otlp", "push_phoenix",
]
