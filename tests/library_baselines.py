"""What the LightRAG and GraphRAG baseline tests share: an index folder's cost file, resuming
after a model outage, and the checks that the recall/tokens curve, the length sweep and the
``audit`` command take a baseline by its registry name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.audit_data import AUDIT_FIXTURES, COMPLIBENCH_SAMPLE
from workbench.audit import AuditCase, AuditIndex
from workbench.audit.baselines.index_store import COST_FILE


def index_cost(root: Path) -> dict:
    """The cost file of the one index under ``root``."""
    (path,) = root.glob(f"*/{COST_FILE}")
    return json.loads(path.read_text())


def assert_curve_and_sweep(strategy: str, index: AuditIndex, cases: list[AuditCase]) -> None:
    """Both build ``strategy`` from the registry by name (the test has put its scripted one
    there): the curve's contexts stay within each share's target and grow with it, and a
    sweep level with a foreign SKILL mixed in audits without errors."""
    from workbench.evaluate.coverage_curve import coverage_curve
    from workbench.evaluate.length_sweep import run_sweep, sweep_levels

    curve = coverage_curve(index, cases, (0.05, 0.5), (strategy,))
    assert [p.share for p in curve.points] == [0.05, 0.5]
    for p in curve.points:
        assert p.cases and not p.errors and 0 < p.mean_tokens <= p.mean_target + 1e-9
    assert curve.points[0].mean_tokens < curve.points[1].mean_tokens

    foreign = AUDIT_FIXTURES / "merchant" / "SKILL.md"
    # 3,000: what the sample (3 workflows) and the merchant SKILL reach together
    levels, sweep_cases = sweep_levels(COMPLIBENCH_SAMPLE, (3000,), [foreign])
    (row,) = run_sweep(levels, sweep_cases, (strategy,))
    assert row.strategy == strategy and not row.errors and row.mean_tokens > 0


def audit_first_case(folder: Path, strategy: str) -> dict:
    """``workbench audit --strategy STRATEGY --no-judge --limit 1`` over the sample imported
    into ``folder``: the one trace it wrote, checked to carry a context and no error."""
    from workbench.audit.importers.complibench import import_complibench
    from workbench.cli import main

    data = folder / "long"
    import_complibench(COMPLIBENCH_SAMPLE, data, long=True)
    traces = folder / "traces.jsonl"
    code = main(["audit", "--index", str(data / "index.json"), "--cases",
                 str(data / "cases.jsonl"), "--strategy", strategy, "--no-judge", "--limit", "1",
                 "--out", str(traces)])
    assert code == 0
    (trace,) = [json.loads(line) for line in traces.read_text().splitlines()]
    assert trace["error"] is None and trace["strategy"] == strategy and trace["context"]
    return trace


def calls_to_index(make_indexes, root: Path, source: str, transport) -> int:
    """Open (so build or resume) the airline SKILL's index under ``root`` with the model
    behind ``transport``, then close it: how many model calls that took."""
    idx = make_indexes(root, transport)
    try:
        idx.open("airline-policy", source)
    finally:
        idx.close()  # also after a failed run: what finished is flushed for the next one
    return len(transport.requests)


def assert_resumes(make_indexes, scripted, root: Path, source: str, error: type[Exception],
                   min_calls: int) -> None:
    """A model outage late in indexing fails the run (recorded ``failed``, raised as ``error``
    saying the index resumes); the next run pays only the calls that had not finished, the
    others come from the library's own cache. ``scripted(fail_on=None)``: a transport."""
    n = calls_to_index(make_indexes, root / "ref", source, scripted())
    assert n >= min_calls

    with pytest.raises(error, match="resumes"):  # the outage comes late: most calls finished
        calls_to_index(make_indexes, root / "res", source, scripted(fail_on=n))
    assert index_cost(root / "res")["runs"][0]["status"] == "failed"

    resumed = calls_to_index(make_indexes, root / "res", source, scripted())
    assert 0 < resumed < n
    assert [r["status"] for r in index_cost(root / "res")["runs"]] == ["failed", "processed"]


def resumed_cost_rows(library_version: str, cdg_source_sha256: str) -> list[dict]:
    """The cost table's rows for a SKILL (source hash "abc") indexed in a failed run (its last
    call failed) and the resumed one (3 + 1 calls, 300 + 100 prompt and 90 + 30 output tokens,
    10 + 5.5 s), with the CDG extraction of the source hashed ``cdg_source_sha256`` under it
    (7 calls, 4,000 prompt and 900 output tokens, 60 s)."""
    from workbench.audit.baselines.index_store import IndexCost, IndexRun
    from workbench.evaluate.baseline_costs import cost_rows

    cost = IndexCost("s", "k", library_version, "m", "e", "abc", 1000,
                     [IndexRun(0.0, 10.0, 3, 0, 300, 90, "failed", failed_calls=1),
                      IndexRun(1.0, 5.5, 1, 2, 100, 30, "processed")])
    return cost_rows([cost], [{"skill": "s", "model_calls": 7, "prompt_tokens": 4000,
                               "completion_tokens": 900, "wall_s": 60.0,
                               "source_sha256": cdg_source_sha256}])
