"""What every judging mode shares: the citable items of a context, call records, the checks
on a verdict that model output must pass before anyone sees it, and the one more ask when
its evidence is not in the reply."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.audit.cases import AuditCase
from workbench.audit.evidence import EvidenceNotInReply, locate_quotes
from workbench.audit.trace import ModelCall, Verdict
from workbench.llm.structured import repair_messages

REASON_MAX = 300
MAX_IDS_SHOWN = 30  # in a repair request; the prompt itself lists every id
ID_MAX = 80  # the longest id a verdict's schema accepts
_BRACKETED = re.compile(r"\[([^\[\]\s]{1,80})\]")


@dataclass(frozen=True)
class ContextUnit:
    """One citable item of a judge context: its id, the text the judge reads for it, and
    where it comes from (SKILL and character spans of its source), for highlighting."""

    id: str
    text: str
    skill: str = ""
    spans: tuple[tuple[int, int], ...] = ()


@dataclass
class Judged:
    """What one judging of a context gives: the verdict, the calls made (in order, failed
    ones included by the caller), and the messages of the main call (for ``keep_prompts``)."""

    verdict: Verdict
    calls: list[ModelCall] = field(default_factory=list)
    messages: list[dict[str, str]] = field(default_factory=list)


def strip_id(rid: str) -> str:
    return rid.strip().strip("[]").strip()


def cited_ids(reason: str, known: Sequence[str]) -> list[str]:
    """Ids of ``known`` that ``reason`` mentions (bracketed or bare), in order of mention."""
    found = sorted((at, rid) for rid in known if (at := reason.find(rid)) != -1)
    return [rid for _, rid in found]


def reason_cites(reason: str, violated: Sequence[str], known_ids: Sequence[str]) -> bool:
    """Whether the reason names a violated id (or, for a compliant verdict, any id or none
    is needed: True)."""
    if not violated:
        return True
    return any(rid in reason for rid in violated) or bool(cited_ids(reason, known_ids))


def unknown_ids(cited: Sequence[str], reason: str, known: set[str]) -> list[str]:
    """Ids cited (in the list or bracketed in the reason) that the context does not hold."""
    unknown = [i for i in cited if i not in known]
    for rid in _BRACKETED.findall(reason):
        rid = strip_id(rid)
        if rid and rid not in known and rid not in unknown and not rid.isdigit():
            unknown.append(rid)
    return unknown


def call_record(step: str, result: Any) -> ModelCall:
    u = result.usage
    return ModelCall(
        step=step,
        role=u.role,
        prompt_tokens=u.prompt_tokens,
        completion_tokens=u.completion_tokens,
        latency_ms=round(u.latency_ms, 3),
        cached=u.cached,
        attempts=u.attempts,
        key=result.key,
    )


def failed_record(step: str, exc: BaseException) -> ModelCall | None:
    """The record of a call that failed for good, from the usage its ModelCallError carries."""
    u = getattr(exc, "usage", None)
    if u is None:
        return None
    return ModelCall(step, u.role, u.prompt_tokens, u.completion_tokens, round(u.latency_ms, 3),
                     u.cached, u.attempts, "", u.error or "failed")


def check_reason(data: dict[str, Any]) -> None:
    if not str(data.get("reason") or "").strip():
        raise ValueError("reason is empty; say in one short sentence why the reply complies or "
                         "which item it breaks")


def check_citations(violation: bool, cited: Sequence[Any], known_ids: Sequence[str]) -> None:
    """A violation cites at least one id of the context; a compliant verdict cites none."""
    if violation and not cited:
        raise ValueError(
            "violation is true but violated_rules is empty; list the ids of the violated items")
    if not violation and cited:
        raise ValueError("violation is false but violated_rules is not empty")
    known = set(known_ids)
    ids = [strip_id(str(r)) for r in cited]
    if violation and known and not any(r in known for r in ids):
        shown = ", ".join(repr(r[:40]) for r in ids[:6])
        # Name the ids the repair may use: a small model otherwise repeats its guess (on
        # CompliBench the 1.5B judge cited the old prompt's example id [R12] twice in a row).
        ordered = list(dict.fromkeys(known_ids))
        # Whole ids: a cut one (CompliBench's "request_special_assistance_services.w0.p3" at
        # 40 characters) is an id the repair could never cite. ID_MAX bounds a pathological one.
        valid = ", ".join(f"[{r[:ID_MAX]}]" for r in ordered[:MAX_IDS_SHOWN])
        more = f" and {len(ordered) - MAX_IDS_SHOWN} more" if len(ordered) > MAX_IDS_SHOWN else ""
        raise ValueError(
            f"invalid citation: violated_rules names only ids that are not in the context "
            f"({shown}); cite the bracketed ids of the violated items: the context's ids are "
            f"{valid}{more}"
        )


@dataclass
class Evidence:
    """The reply spans a verdict's quotes were found at, and the quotes that were not there
    (refused: never shown; the judge is asked once more)."""

    spans: list[dict[str, Any]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def find_evidence(case: AuditCase, quotes: Sequence[Any]) -> Evidence:
    """Each quote located in the reply on its own, so one bad quote does not lose the good."""
    found = Evidence()
    for quote in quotes or []:
        try:
            found.spans.extend(locate_quotes(case.model_response, [quote]))
        except EvidenceNotInReply:
            found.refused.append(str(quote)[:200])
    found.spans = locate_unique(found.spans)
    return found


def locate_unique(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[tuple[int, int]] = set()
    out = []
    for s in sorted(spans, key=lambda s: (s["start"], s["end"])):
        if (s["start"], s["end"]) not in seen:
            seen.add((s["start"], s["end"]))
            out.append(s)
    return out


def evidence_problem(refused: Sequence[str]) -> str:
    shown = "; ".join(repr(q[:80]) for q in refused[:3])
    return (f"these evidence quotes are not in the REPLY: {shown}. Copy the exact words of the "
            "REPLY that break the rule, or give an empty evidence list")


@dataclass
class Answered:
    """A judge's answer once its evidence is checked: the result that stands, the evidence
    found in the reply, the quotes refused over both asks, and the records of the calls."""

    result: Any
    evidence: Evidence
    refused: int
    calls: list[ModelCall]


def ask_checking_evidence(ask: Callable[[list[dict[str, str]], str], Any],
                          messages: list[dict[str, str]], step: str) -> Answered:
    """``ask(messages, step)`` once; when a quote of the answer (its ``checked`` Evidence) is
    not in the reply, once more with the quote named (``{step}:evidence``), and the retry's
    answer stands. Raises what ``ask`` raises."""
    result = ask(messages, step)
    calls = [call_record("judge", result)]
    found: Evidence = result.checked
    refused = len(found.refused)
    if found.refused:
        retry = repair_messages(messages, result.text, evidence_problem(found.refused))
        result = ask(retry, f"{step}:evidence")
        calls.append(call_record("judge:evidence", result))
        found = result.checked
        refused += len(found.refused)
    return Answered(result, found, refused, calls)


Validator = Callable[[dict[str, Any]], Any]
