"""``workbench export-verdicts``: judged cases where teams already look — OpenTelemetry
evaluation events (OTLP), Langfuse scores, Phoenix span annotations (``workbench.export``)."""

from __future__ import annotations

import argparse

from workbench.commands._common import action
from workbench.commands._output import add_force_option

DESCRIPTION = (
    "Write each judged case of a traces file as an OpenTelemetry gen_ai.evaluation.result "
    "event (otlp: OTLP/JSON file, or OTLP/HTTP with --push), a Langfuse score (langfuse: the "
    "public ingestion API's payload) or an Arize Phoenix span annotation (phoenix: the "
    "span_annotations payload). The decision of each case is the saved decision setting's "
    "(--threshold) or the default (0.5 on the judge's probability). Cases imported from "
    "OpenTelemetry GenAI spans (--cases, with --cases-format otel or converted) are linked to "
    "the span they came from. Keys for --push come from the environment only: "
    "OTEL_EXPORTER_OTLP_HEADERS (or OTEL_EXPORTER_OTLP_LOGS_HEADERS), LANGFUSE_PUBLIC_KEY + "
    "LANGFUSE_SECRET_KEY, PHOENIX_API_KEY; an address carrying a credential is refused."
)


def register(sub: argparse._SubParsersAction) -> None:
    p = action(sub, "export-verdicts", _export,
               help="judged cases as OpenTelemetry evaluation events, Langfuse scores or "
               "Phoenix annotations", description=DESCRIPTION)
    p.add_argument("traces", help="traces JSONL from `workbench audit` (the newest trace per "
                   "case and strategy is exported)")
    p.add_argument("--cases", default=None,
                   help="the cases the traces judged: their origin (OpenTelemetry trace and span "
                   "ids) links each verdict to what it judges")
    p.add_argument("--cases-format", dest="cases_format", default=None,
                   choices=("cases", "openai", "tau2", "otel"),
                   help="how --cases is written (default: the workbench's case schema); otel "
                   "reads the OpenTelemetry span export the cases were imported from")
    p.add_argument("--format", dest="export_format", required=True,
                   choices=("otlp", "langfuse", "phoenix"),
                   help="otlp: gen_ai.evaluation.result log records (OTLP/JSON); langfuse: "
                   "scores (POST /api/public/ingestion); phoenix: span annotations "
                   "(POST /v1/span_annotations)")
    p.add_argument("--out", default=None, metavar="FILE",
                   help="write the payload here (JSON, one document on one line); an existing "
                   "file is replaced only with --force")
    add_force_option(p)
    p.add_argument("--push", default=None, metavar="URL",
                   help="also send it: an OTLP/HTTP collector (…:4318, /v1/logs added), a "
                   "Langfuse host or a Phoenix server; the key comes from the environment")
    p.add_argument("--threshold", default=None, metavar="P|dataset:NAME|policy:NAME",
                   help="the decision setting: a probability from 0 to 1, or the setting saved "
                   "for a dataset or policy (`workbench calibrate --save`); default 0.5")
    p.add_argument("--timeout", type=float, default=30.0,
                   help="seconds one push request may take in all (connect, send, answer)")


def _export(args) -> int:
    import json
    import sys
    from pathlib import Path

    from workbench.audit.trace import latest_per_case, trace_key
    from workbench.audit.trace_file import no_valid_trace, read_traces
    from workbench.commands._common import CliError, activation_scores_beside, default_beside
    from workbench.export import judged_cases

    if not args.out and not args.push:
        raise CliError("nothing to do: give --out FILE, --push URL or both")
    if args.out:
        from workbench.commands._output import check_output

        check_output(args.out, force=args.force)  # before any work
    if args.push:
        from workbench.export._push import checked_url

        # Before any work: a key in the address, an internal address (unless allowed) are refused.
        checked_url(args.push, resolve=True)
    if not Path(args.traces).exists():
        raise CliError(f"{args.traces}: no such traces file")
    traces, problems = read_traces(args.traces)
    for problem in problems[:5]:
        print(f"note: skipped {problem}", file=sys.stderr)
    if not traces:
        raise CliError(no_valid_trace(args.traces, problems))
    traces = latest_per_case(traces, key=trace_key)
    cases = _cases(args) if args.cases else []
    setting = _setting(args.threshold)
    stored = _stored(args.threshold)
    if setting is None and (found := default_beside([args.traces])) is not None:
        setting = found[1]  # the built-in scorer: the run's activations are beside it
        stored.setdefault("setting_version", found[0])
    selection = judged_cases(traces, cases, setting,
                            activation_scores_beside(setting, [args.traces], traces), **stored)
    for note in selection.notes():
        print(f"note: {note}", file=sys.stderr)
    if not selection.cases:
        raise CliError(f"{args.traces}: no trace holds a verdict (every case ended in an error)",
                       "audit the cases again, then export")
    payload, what = _payload(args.export_format, selection.cases)
    if args.out:
        from workbench.commands._output import write_output

        done = write_output(args.out, json.dumps(payload, ensure_ascii=False) + "\n",
                            force=args.force)
        print(f"wrote {what} to {args.out}"
              + (" (the file that was there is replaced)" if done == "replaced" else ""))
    if args.push:
        sent = _push(args.export_format, selection.cases, payload, args.push, args.timeout)
        from workbench.llm.redact import redact_url

        print(f"sent {sent} to {redact_url(args.push)}")
    return 0


def _cases(args):
    from workbench.commands._case_formats import read_cases_arg

    return read_cases_arg(args, args.cases)


def _payload(fmt: str, cases) -> tuple[dict, str]:
    from workbench.commands._common import CliError
    from workbench.words import plural

    linked = sum(c.link is not None for c in cases)
    if fmt == "otlp":
        from workbench.export import otlp_json, otlp_request

        return (otlp_json(otlp_request(cases)),
                f"{plural(len(cases), 'evaluation event')} ({linked} linked to their span)")
    if fmt == "langfuse":
        from workbench.export import langfuse_payload

        payload = langfuse_payload(cases)
        return payload, (f"{plural(len(payload['batch']), 'score')} of "
                         f"{plural(len(cases), 'case')} ({linked} on their OTel trace, the "
                         f"others on the trace named by the case id)")
    from workbench.export import phoenix_payload

    payload, unlinked = phoenix_payload(cases)
    if not payload["data"]:
        raise CliError("Phoenix annotates spans, and none of these cases came from an "
                       "OpenTelemetry span (no trace/span ids)",
                       "pass the span export the cases were imported from: --cases FILE "
                       "--cases-format otel (or the cases imported from it)")
    if unlinked:
        import sys

        print(f"note: {plural(len(unlinked), 'case')} without an OpenTelemetry span left out: "
              f"{', '.join(unlinked[:5])}", file=sys.stderr)
    return payload, plural(len(payload["data"]), "span annotation")


def _push(fmt: str, cases, payload: dict, url: str, timeout: float) -> str:
    from workbench.words import plural

    if fmt == "otlp":
        from workbench.export import push_otlp

        return plural(push_otlp(cases, url, timeout=timeout), "evaluation event")
    if fmt == "langfuse":
        from workbench.export import push_langfuse

        return plural(push_langfuse(payload, url, timeout=timeout), "score")
    from workbench.export import push_phoenix

    return plural(push_phoenix(payload, url, timeout=timeout), "span annotation")


def _stored(value: str | None) -> dict:
    """With ``--threshold dataset:NAME``: that dataset's setting version, the rules found for
    its score-decided verdicts and its review decisions (``store``), so the file says what the
    pages say of the same traces."""
    if not value or not value.startswith("dataset:"):
        return {}
    from store.db import make_engine
    from store.explanations import explanations_for
    from store.review import decisions_for
    from store.verdicts import saved_setting

    engine, name = make_engine(), value.partition(":")[2]
    found = saved_setting(engine, name)
    return {"setting_version": found[0] if found else None,
            "explanations": {(cid, s): e for (_r, cid, s), e in
                             explanations_for(engine, name).items()},
            "decisions": decisions_for(engine, name)}


def _setting(value: str | None):
    """``--threshold``: None (the default setting), a bare probability, or the newest saved
    setting of ``dataset:NAME`` / ``policy:NAME`` (``_common.threshold_arg``)."""
    from workbench.commands._common import threshold_arg
    from workbench.decision import DecisionSetting

    found = threshold_arg(value)
    return DecisionSetting(threshold=found) if isinstance(found, float) else found


