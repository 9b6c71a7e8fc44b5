"""The CI gate of ``workbench audit --fail-on violation[=P] --junit FILE``: which audited
cases fail, the exit code, and a JUnit XML report CI systems show natively.

A case **fails** when its decided record (``workbench.decision.decided_verdict``, what every
page shows) is a violation — or is to review because its score decided violation and no rule
stands behind it yet: the gate does not pass what a person must still check. The record is
read under ``=P`` (a threshold on the judge's probability, ``Verdict.probability``) when the
gate names one, else under the dataset's saved setting when the caller gives one (``audit
--store DATASET``, with the dataset's stored explanations of score-decided violations), else
under the default (0.5 on that probability); a verdict without a probability is decided by
its bare violation flag. A trace scored only (no judge's answer) is decided by its activation
score when the setting has one, else it was not judged. The failure's rules, evidence and
reason are the record's, never the judge's words read again.
A case whose audit ended in an error (no route, a model that failed, ...) was not checked: it is an **error**,
not a pass. Exit codes: 0 every case passed; 1 a case failed; 3 none failed but some could
not be judged (the gate cannot say the run is clean). 2 stays the CLI's usage/input error.

The report follows the JUnit XML that Jenkins, GitLab, GitHub Actions reporters and Azure
DevOps read (validated against the Jenkins xUnit plugin's ``junit-10.xsd``): one
``<testsuite>`` for the run, one ``<testcase>`` per case, a ``<failure>`` naming the
violated rules with their source spans, an ``<error>`` for a case that could not be judged.
"""

from __future__ import annotations

import re
import socket
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from workbench.audit.trace import AuditTrace
from workbench.clock import utcnow
from workbench.decision import DecidedVerdict, DecisionSetting, Explanation, decided_verdict
from workbench.errors import WorkbenchError
from workbench.vocabulary import ErrorKind

EXIT_PASS, EXIT_FAIL, EXIT_UNJUDGED = 0, 1, 3
QUOTE_MAX = 400  # characters of a rule's source text quoted in a failure
_XML_BAD = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


Saved = tuple[int | None, DecisionSetting]  # a setting and its version (None: not a saved one)
Key = tuple[str, str, str]  # (run, case, strategy)


class GateSpecError(WorkbenchError, ValueError):
    """``--fail-on`` is not ``violation`` or ``violation=P``."""


@dataclass(frozen=True)
class FailOn:
    """``violation`` (threshold None: the verdict decides) or ``violation=P``."""

    threshold: float | None = None

    @classmethod
    def parse(cls, spec: str) -> FailOn:
        word, sep, value = spec.strip().partition("=")
        if word.strip() != "violation":
            raise GateSpecError(f"--fail-on {spec!r}: the gate fails on 'violation'",
                                "write --fail-on violation or --fail-on violation=0.8")
        if not sep:
            return cls()
        try:
            p = float(value)
        except ValueError:
            p = -1.0
        if not 0.0 < p <= 1.0:
            raise GateSpecError(f"--fail-on {spec!r}: the probability must be a number in (0, 1]",
                                "write e.g. --fail-on violation=0.8")
        return cls(p)

    def __str__(self) -> str:
        return "violation" if self.threshold is None else f"violation={self.threshold:g}"


@dataclass(frozen=True)
class Outcome:
    case_id: str
    status: str  # "passed" | "failed" | "error"
    message: str  # one line: why
    trace: AuditTrace | None = None
    record: DecidedVerdict | None = None  # the decided record the status rests on


def probability_of(trace: AuditTrace) -> float | None:
    p = getattr(trace.verdict, "probability", None) if trace.verdict is not None else None
    return float(p) if isinstance(p, int | float) and not isinstance(p, bool) else None


def outcome(case_id: str, trace: AuditTrace | None, rule: FailOn, saved: Saved | None = None,
            explanations: Mapping[Key, Explanation] | None = None, run: str = "") -> Outcome:
    """What the gate makes of one case's newest trace (None: the case was not audited), under
    the gate's own threshold or ``saved`` (a dataset's setting with its case scores), with
    ``explanations`` (stored, by (run, case, strategy)) for a trace stored in ``run``."""
    if trace is None:
        return Outcome(case_id, "error", "not audited: no trace for this case")
    if trace.error is not None:
        return Outcome(case_id, "error", f"{trace.error.kind}: {trace.error.message}", trace)
    gate = rule.threshold is not None and probability_of(trace) is not None
    if rule.threshold is not None:
        saved = (None, DecisionSetting(rule.threshold))  # the gate's own: no saved version
    if trace.verdict is None and saved is None:
        return Outcome(case_id, "error", "not judged (the audit ran without a judge)", trace)
    found = (explanations or {}).get((run, trace.id, trace.strategy))
    record = decided_verdict(trace, run=run, saved=saved, explanation=found)
    if record.decided is None:  # neither an answer nor an activation score under the setting
        return Outcome(case_id, "error", f"{record.doubt}", trace, record)
    p = record.score
    shown = "" if p is None else f" (P(violation) = {p:.3f})"
    why = ""
    if gate:
        why = f", {'at or above' if record.outcome_violation else 'below'} the gate's {rule.threshold:g}"
    if record.violation:
        return Outcome(case_id, "failed", f"violation of {', '.join(record.rules)}{shown}{why}",
                       trace, record)
    if record.outcome_violation:
        return Outcome(case_id, "failed", f"likely violation, to review (no rule found yet)"
                       f"{shown}{why}", trace, record)
    return Outcome(case_id, "passed", f"{record.label}{shown}{why}", trace, record)


def outcomes(case_ids: Iterable[str], traces: Mapping[str, AuditTrace], rule: FailOn,
             saved: Saved | None = None, explanations: Mapping[Key, Explanation] | None = None,
             run: str = "") -> list[Outcome]:
    return [outcome(cid, traces.get(cid), rule, saved, explanations, run)
            for cid in dict.fromkeys(case_ids)]


def exit_code(results: list[Outcome]) -> int:
    if any(o.status == "failed" for o in results):
        return EXIT_FAIL
    if any(o.status == "error" for o in results):
        return EXIT_UNJUDGED
    return EXIT_PASS


def summary_line(results: list[Outcome], rule: FailOn) -> str:
    n = {s: sum(o.status == s for o in results) for s in ("passed", "failed", "error")}
    return (f"[gate] --fail-on {rule}: {n['failed']} failed, {n['error']} could not be judged, "
            f"{n['passed']} passed of {len(results)} cases")


def clean(text: str) -> str:
    """Text XML 1.0 can hold: control characters and lone surrogates become U+FFFD."""
    return _XML_BAD.sub("\ufffd", text)


def _rule_lines(trace: AuditTrace, record: DecidedVerdict, sources: Mapping[str, str]) -> list[str]:
    """Each rule behind the record with where its text stands in its SKILL, and the text
    itself; then the ids the judge named that are not behind the label."""
    lines = []
    for rid in record.rules:
        where = trace.unit_spans.get(rid) or {}
        skill, spans = where.get("skill", ""), where.get("spans") or []
        source = sources.get(skill, "")
        parts = []
        for start, end in spans:
            line = source.count("\n", 0, start) + 1 if source else None
            quote = " ".join(source[start:end].split()) if source else ""
            if len(quote) > QUOTE_MAX:
                quote = quote[:QUOTE_MAX] + "..."
            at = f"{skill} characters {start}-{end}" + (f" (line {line})" if line else "")
            parts.append(f"    {at}: \"{quote}\"" if quote else f"    {at}")
        lines.append(f"  {rid}" + ("" if parts else " (no source span recorded)"))
        lines += parts
    unknown = [r for r in record.judge_rules if r not in record.rules]
    if unknown:
        lines.append(f"  named by the judge but not in the judged closure: {', '.join(unknown)}")
    return lines


# Who wrote the reason the record gives (``DecidedVerdict.reason_by``).
_REASON_BY = {"judge": "Judge's reason", "explain": "Reason found for the rule",
              "workbench": "Reason"}


def _reason_line(record: DecidedVerdict) -> str:
    if record.doubt:
        return f"To review: {record.doubt}"
    return f"{_REASON_BY.get(record.reason_by, 'Reason')}: {record.reason or '-'}"


def failure_text(o: Outcome, sources: Mapping[str, str], reply: str = "") -> str:
    """The body of a failure: readable by a person in the CI log as much as by the CI. The
    rules, evidence and reason are the decided record's (a trace without a judge's answer,
    scored only, has no words of the judge to show)."""
    t = o.trace
    if t is None:
        return clean(f"Case {o.case_id}: {o.message}.")
    record = o.record or decided_verdict(t)
    head = ("Violated rules and where the policy says so:" if record.rules
            else "No rule of the judged closure stands behind this yet:")
    out = [f"Case {o.case_id}: {o.message}.", "", head, *_rule_lines(t, record, sources),
           "", _reason_line(record)]
    if record.evidence:
        out += ["", "Words of the reply it rests on:",
                *(f"  [{e['start']}:{e['end']}] \"{e['quote']}\"" for e in record.evidence)]
    if reply:
        out += ["", f"Audited reply: {reply[:2000]}"]
    out += ["", f"Strategy {t.strategy}, judge mode {t.judge_mode}, SKILLs {', '.join(t.skills) or '-'}; "
            f"judged rules: {', '.join(t.closure_ids) or '-'}"]
    return clean("\n".join(out))


def junit_xml(results: list[Outcome], *, suite: str, properties: Mapping[str, Any],
              sources: Mapping[str, str], replies: Mapping[str, str] | None = None) -> str:
    """The JUnit XML report of one gated run (UTF-8 text, declaration included)."""
    replies = replies or {}
    failures = sum(o.status == "failed" for o in results)
    errors = sum(o.status == "error" for o in results)
    seconds = sum((o.trace.timings_ms.get("total", 0.0) if o.trace else 0.0) for o in results) / 1000
    root = ET.Element("testsuites", name="workbench audit", tests=str(len(results)),
                      failures=str(failures), errors=str(errors), time=f"{seconds:.3f}")
    ts = ET.SubElement(root, "testsuite", name=clean(suite), tests=str(len(results)),
                       failures=str(failures), errors=str(errors), skipped="0",
                       time=f"{seconds:.3f}", timestamp=utcnow().strftime("%Y-%m-%dT%H:%M:%S"),
                       hostname=clean(socket.gethostname() or "localhost"))
    props = ET.SubElement(ts, "properties")
    for key, value in properties.items():
        ET.SubElement(props, "property", name=clean(str(key)), value=clean(str(value)))
    for o in results:
        t = o.trace
        skill = (t.skills[0] if t and t.skills else "unrouted").replace(".", "_")
        case = ET.SubElement(ts, "testcase", name=clean(o.case_id), classname=clean(f"audit.{skill}"),
                             time=f"{(t.timings_ms.get('total', 0.0) if t else 0.0) / 1000:.3f}")
        if o.status == "failed":
            f = ET.SubElement(case, "failure", type="violation", message=clean(o.message))
            f.text = failure_text(o, sources, replies.get(o.case_id, ""))
        elif o.status == "error":
            kind = t.error.kind if t is not None and t.error is not None else ErrorKind.NOT_JUDGED
            e = ET.SubElement(case, "error", type=clean(kind), message=clean(o.message))
            e.text = clean(f"Case {o.case_id} could not be judged: {o.message}")
        if o.record is not None and o.record.decided is not None:
            out = ET.SubElement(case, "system-out")
            out.text = clean(f"{o.message}\n{_reason_line(o.record)}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
