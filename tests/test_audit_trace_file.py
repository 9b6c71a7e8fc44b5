"""One trace path (issue 17): the validating reader ``AuditTrace.from_dict``, the one JSONL
reader returning ``(traces, problems)``, the one ``latest_per_case``, and the sinks a batch
run writes through and resumes from (JSONL file, standard output, store)."""

from __future__ import annotations

import io
import json
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from store import audit_repo
from store.audit_repo import StoreSink, run_traces
from tests.audit_data import AUDIT_FIXTURES, DEMO, merchant_cases, merchant_index
from workbench.audit import AuditOptions, load_cases, run_audit
from workbench.audit.sinks import JsonlFileSink, StdoutSink, TeeSink, sink_done_keys
from workbench.audit.trace import (
    AuditError,
    AuditTrace,
    TraceFormatError,
    Verdict,
    latest_per_case,
    trace_key,
)
from workbench.audit.trace_file import encode_trace, read_traces
from workbench.cli import main
from workbench.identity.roles import COMMAND_LINE

DEMO_TRACES = DEMO / "traces_cdg.jsonl"
NO_JUDGE = AuditOptions(judge_mode="none")


# -- the validating reader -------------------------------------------------------------------

def test_from_dict_names_the_wrong_typed_field_and_where():
    good = {"id": "c1", "strategy": "cdg", "context_tokens": 12}
    assert AuditTrace.from_dict(good).context_tokens == 12
    with pytest.raises(TraceFormatError, match=r"up\.jsonl:4: .*'context_tokens' has the wrong type"):
        AuditTrace.from_dict(dict(good, context_tokens="12"), "up.jsonl:4")
    with pytest.raises(TraceFormatError, match=r"'verdict\.violation' has the wrong type"):
        AuditTrace.from_dict(dict(good, verdict={"violation": "yes", "reason": "",
                                                 "violated_rules": []}))
    with pytest.raises(TraceFormatError, match="'window' must be an object"):
        AuditTrace.from_dict(dict(good, window=[1, 2]))
    with pytest.raises(TraceFormatError, match="not a JSON object"):
        AuditTrace.from_dict(["c1", "cdg"])


def test_old_traces_without_newer_fields_load_and_numeric_ids_become_strings():
    # A trace from before windows, parts, unit spans and prompt versions existed.
    old = {"id": 7, "strategy": "cdg", "verdict": {"violation": True, "reason": "r",
                                                   "violated_rules": ["R1"]},
           "some_future_field": {"kept": "out"}}
    t = AuditTrace.from_dict(old)
    assert (t.id, t.window, t.parts, t.unit_spans, t.verdict.unknown_rule_ids) == ("7", None, [], {}, [])


def _held(old, again):
    """``again`` cut down to the keys ``old`` has, at every depth: fields added since the old
    line was written (a verdict's probability, say) may appear, none it held may change."""
    if isinstance(old, dict) and isinstance(again, dict):
        return {k: _held(old[k], again[k]) if k in again else None for k in old}
    if isinstance(old, list) and isinstance(again, list) and len(old) == len(again):
        return [_held(o, a) for o, a in zip(old, again, strict=True)]
    return again


def test_the_json_on_disk_keeps_its_form():
    """The demo traces (written before windows and parts existed) read back with every field
    they hold unchanged; a trace written now reads and writes back as the very same line."""
    lines = DEMO_TRACES.read_text(encoding="utf-8").splitlines()
    traces, problems = read_traces(DEMO_TRACES)
    assert problems == [] and len(traces) == len(lines) > 0
    for line, trace in zip(lines, traces, strict=True):
        old, again = json.loads(line), json.loads(encode_trace(trace))
        assert _held(old, again) == old
        assert [k for k in again if k in old] == list(old)  # in the same order
        assert encode_trace(AuditTrace.from_dict(again)) == encode_trace(trace)


# -- the one JSONL reader --------------------------------------------------------------------

def test_reader_reports_each_bad_line_by_file_and_line_and_keeps_the_good_ones(tmp_path):
    good = AuditTrace("a", "cdg", verdict=Verdict(True, "r", ["R1"]))
    text = "\n".join([
        encode_trace(good),
        "not json",
        json.dumps({"strategy": "cdg"}),
        "",
        json.dumps({"id": "b", "strategy": "cdg", "verdict": {"violation": True}}),
        encode_trace(AuditTrace("c", "raw")),
    ])
    path = tmp_path / "t.jsonl"
    path.write_bytes(text.encode() + b'\n{"id": "caf\xc3')  # and a write torn mid-character
    traces, problems = read_traces(path)
    assert [t.id for t in traces] == ["a", "c"] and traces[0] == good
    assert [p.split(": ")[0] for p in problems] == [f"{path}:{n}" for n in (2, 3, 5, 7)]
    assert "'id' must be a non-empty string" in problems[1]
    assert "'verdict' lacks 'reason'" in problems[2]
    assert "not UTF-8" in problems[3]
    # The same text given as an upload names its origin instead of a path.
    _, from_text = read_traces(text=text, origin="upload.jsonl")
    assert [p.split(": ")[0] for p in from_text] == ["upload.jsonl:2", "upload.jsonl:3", "upload.jsonl:5"]
    assert read_traces(tmp_path / "missing.jsonl") == ([], [])


# -- latest per case -------------------------------------------------------------------------

def test_latest_per_case_picks_the_newest_in_first_seen_order():
    old_a, b, new_a = AuditTrace("a", "cdg", context_tokens=1), AuditTrace("b", "cdg"), \
        AuditTrace("a", "cdg", context_tokens=2)
    raw_a = AuditTrace("a", "raw")
    assert latest_per_case([old_a, b, raw_a, new_a]) == [new_a, b, raw_a]
    assert latest_per_case([old_a, b, raw_a, new_a], key=lambda t: t.id) == [new_a, b]
    records = [("r1", old_a), ("r2", new_a)]
    assert latest_per_case(records, key=lambda r: r[1].id) == [("r2", new_a)]


# -- sinks and resume ------------------------------------------------------------------------

@pytest.fixture
def index():
    return merchant_index()


@pytest.fixture
def cases():
    return merchant_cases()


def _fail(sink, case_id: str, kind: str = "ModelCallError") -> None:
    """A newer trace of ``case_id`` that failed (as a timed-out judge call leaves it)."""
    sink.write(AuditTrace(case_id, "cdg", judge_mode="none",
                          error=AuditError(kind, "boom", "timeout")))


def _resume_through(sink, index, cases) -> None:
    first = run_audit(cases, index, "cdg", sink, options=NO_JUDGE)
    assert (first.done, first.skipped) == (4, 0)
    _fail(sink, cases[0].id)
    _fail(sink, cases[1].id, "EmptySeed")  # follows from the case: retrying says the same
    done, held = sink_done_keys(sink)
    assert len(held) == 4 and (cases[0].id, "cdg", "none", "lexical") not in done
    kept = run_audit(cases, index, "cdg", sink, options=NO_JUDGE, retry_failed=False)
    assert (kept.done, kept.skipped) == (0, 4)  # --no-retry-failed: the failure stays
    again = run_audit(cases, index, "cdg", sink, options=NO_JUDGE)
    assert (again.done, again.retried, again.skipped) == (1, 1, 3)
    newest = {t.id: t for t in latest_per_case(sink.traces(), key=trace_key)}
    assert newest[cases[0].id].error is None and newest[cases[1].id].error.kind == "EmptySeed"


def test_a_jsonl_file_sink_resumes_and_retries_failed_cases(tmp_path, index, cases):
    _resume_through(JsonlFileSink(tmp_path / "t.jsonl"), index, cases)


def test_a_store_sink_resumes_and_retries_failed_cases(engine, index, cases):
    sink = StoreSink(engine, "R", "ds", actor=COMMAND_LINE)
    _resume_through(sink, index, cases)
    assert {r for r, _t in run_traces(engine, "ds")} == {"R"}
    # a run resumes from itself only
    assert StoreSink(engine, "other-run", "ds", actor=COMMAND_LINE).traces() == []


def test_a_trace_holding_a_lone_surrogate_is_stored_and_read_back(engine):
    """The reader keeps text that is not valid Unicode (a JSON "\\udc80" escape); SQLite holds
    UTF-8 only, so the stored JSON escapes it (it crashed the store write before)."""
    line = json.loads(DEMO_TRACES.read_text(encoding="utf-8").splitlines()[0])
    line["session"] = "chat-\udc80"
    (trace,), problems = read_traces(text=json.dumps(line), origin="upload")
    sink = StoreSink(engine, "R", "ds", actor=COMMAND_LINE)
    sink.write(trace)
    assert problems == [] and [t.to_dict() for t in sink.traces()] == [trace.to_dict()]
    sink.write(trace)  # the same trace again is recognised as stored
    assert len(run_traces(engine, "ds")) == 1


def test_a_case_holding_a_lone_surrogate_is_stored_and_read_back(engine, cases):
    """A case built in code may hold one too (only the file readers refuse them)."""
    case = replace(cases[0], model_response="reply \udc80")
    assert audit_repo.save_cases(engine, "ds", [case], actor=COMMAND_LINE) == 1
    assert audit_repo.load_cases(engine, "ds") == [case]


def test_stdout_sink_streams_lines_and_holds_nothing_to_resume(index, cases):
    stream = io.StringIO()
    sink = TeeSink(StdoutSink(stream), JsonlFileSink(Path(tempfile.mkdtemp()) / "copy.jsonl"))
    assert run_audit(cases, index, "cdg", sink, options=NO_JUDGE).done == 4
    assert [json.loads(line)["id"] for line in stream.getvalue().splitlines()] == \
        [t.id for t in sink.sinks[1].traces()]
    assert sink_done_keys(sink) == (set(), set())  # resumes from the first sink: stdout
    assert run_audit(cases, index, "cdg", sink, options=NO_JUDGE).done == 4


def test_cli_audit_to_stdout_writes_no_temporary_file(monkeypatch, capsys, tmp_path):
    def no_temp_files(*_a, **_k):
        raise AssertionError("the stdout path must not write a temporary file")

    monkeypatch.setattr(tempfile, "NamedTemporaryFile", no_temp_files)
    monkeypatch.setattr(tempfile, "mkstemp", no_temp_files)
    monkeypatch.setattr(tempfile, "TemporaryDirectory", no_temp_files)
    monkeypatch.setenv("WORKBENCH_DB", f"sqlite:///{tmp_path / 'wb.db'}")
    args = ["audit", "--index", str(AUDIT_FIXTURES / "merchant_index.json"), "--cases",
            str(AUDIT_FIXTURES / "merchant_cases.jsonl"), "--strategy", "cdg", "--no-judge"]
    assert main(args) == 0
    traces, problems = read_traces(text=capsys.readouterr().out)
    assert problems == [] and len(traces) == 4
    # With --store the traces go to standard output and into the stored run as they finish.
    assert main([*args, "--store", "ds", "--run-id", "R"]) == 0
    out, err = capsys.readouterr()
    assert len(read_traces(text=out)[0]) == 4 and "4 new traces" in err


def test_cli_order_skill_groups_cases_by_their_skills(monkeypatch, capsys, tmp_path):
    """``--order skill``: cases naming the same SKILLs run one after another (so a caching
    server reads each RawSkill document once), file order within a group, unnamed cases last."""
    demo = DEMO
    monkeypatch.setenv("WORKBENCH_DB", f"sqlite:///{tmp_path / 'wb.db'}")
    args = ["audit", "--index", str(demo / "index.json"), "--cases", str(demo / "cases.jsonl"),
            "--strategy", "raw", "--no-judge", "--concurrency", "1"]
    cases = load_cases(demo / "cases.jsonl")
    assert main([*args, "--order", "skill"]) == 0
    got = [t.id for t in read_traces(text=capsys.readouterr().out)[0]]
    named = [c for c in cases if c.skills]
    expected = [c.id for c in sorted(named, key=lambda c: c.skills)] + [
        c.id for c in cases if not c.skills]
    assert got == expected
    assert got != [c.id for c in cases]  # the demo file interleaves: the order did change
    assert main(args) == 0  # the default keeps file order
    assert [t.id for t in read_traces(text=capsys.readouterr().out)[0]] == [c.id for c in cases]
