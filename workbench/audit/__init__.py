"""The online audit of SkillCDG: cases -> keywords -> routed SKILLs -> seeds -> closure ->
rendered context -> judge verdict, every step kept in an :class:`AuditTrace`.

    from workbench.audit import AuditIndex, AuditOptions, audit_case, load_cases
    index = AuditIndex(PolicyIndex.load("index.json"))      # once per policy
    trace = audit_case(case, index, "cdg", gateway, AuditOptions(judge_mode="per-rule"))
    trace.verdict, trace.closure, trace.context, trace.usage

Strategies (same judge, same prompt skeleton): ``cdg``, ``raw``, ``bm25``, ``dense``,
``no-closure``, ``no-keywords``. Batch runs: :func:`run_audit`, writing through a sink
(:class:`JsonlFileSink`, :class:`StdoutSink`); traces back from JSONL: :func:`read_traces`.

Metrics over traces (``metrics``), CompliBench's import (``importers.complibench``) and edit
impact (``impact``) are part of this package. The studies of the audit (coverage curves, the
length sweep, the injection probe) are the research lab's sibling package
``workbench.evaluate``: they use this package, never the other way round, so an audit does
not load them. The LightRAG/GraphRAG strategies (``baselines``) are the lab's too:
``strategies`` names them by module path only.
"""

from workbench.audit.cases import (
    AuditCase,
    CaseFormatError,
    Turn,
    case_from_dict,
    dump_cases,
    load_cases,
    pseudonymise,
)
from workbench.audit.pipeline import JUDGE_MODES, AuditOptions, audit_case
from workbench.audit.policy import AuditIndex
from workbench.audit.policy_context import ContextOptions, ContextUnavailable, PolicyContext
from workbench.audit.runner import RunAborted, RunSummary, arun_audit, run_audit
from workbench.audit.sinks import JsonlFileSink, StdoutSink, TeeSink, TraceSink
from workbench.audit.strategies import STRATEGIES, get_strategy
from workbench.audit.trace import (
    AuditError,
    AuditTrace,
    JudgedPart,
    ModelCall,
    TraceFormatError,
    Verdict,
    WindowFit,
    latest_per_case,
)
from workbench.audit.trace_file import read_traces
from workbench.audit.window import JudgeWindow, judge_window

__all__ = [
    "JudgeWindow",
    "JudgedPart",
    "WindowFit",
    "judge_window",
    "JUDGE_MODES",
    "STRATEGIES",
    "AuditCase",
    "AuditError",
    "AuditIndex",
    "AuditOptions",
    "AuditTrace",
    "JsonlFileSink",
    "StdoutSink",
    "TeeSink",
    "TraceFormatError",
    "TraceSink",
    "CaseFormatError",
    "ContextOptions",
    "ContextUnavailable",
    "ModelCall",
    "PolicyContext",
    "RunAborted",
    "RunSummary",
    "Turn",
    "Verdict",
    "arun_audit",
    "audit_case",
    "case_from_dict",
    "dump_cases",
    "get_strategy",
    "latest_per_case",
    "load_cases",
    "pseudonymise",
    "read_traces",
    "run_audit",
]
