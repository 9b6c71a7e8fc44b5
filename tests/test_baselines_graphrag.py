"""The graphrag baseline: Microsoft GraphRAG indexing a SKILL through our gateway.

GraphRAG is an optional overlay (``make install-graphrag``). The adapter tests at the top run
without it: the gateway adapter, the context assembly over a stand-in engine, the registry,
the CLI and the install hint. The tests after ``importorskip`` run the real library's
``standard`` pipeline and local search, with no model and no network: a scripted transport
answers in GraphRAG's formats (``("entity"<|>NAME<|>TYPE<|>description)`` records joined by
``##``, ``<|COMPLETE|>``; community reports as JSON) and a hash encoder stands in for
all-MiniLM-L6-v2 (same shape: 384-d unit vectors).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.audit_data import long_sample
from tests.library_baselines import assert_curve_and_sweep, assert_resumes, audit_first_case, index_cost
from tests.scripted import HashEncoder, ScriptedTransport, scripted_gateway
from workbench.audit.baselines.graphrag_context import GraphragRetriever, kg_section
from workbench.audit.baselines.graphrag_index import GatewayCall, GraphragUnavailable, _graphrag, as_messages
from workbench.audit.baselines.strategies import GraphragStrategy
from workbench.audit.strategies import STRATEGIES, get_strategy, needs_gateway
from workbench.evaluate.baseline_costs import format_cost_rows
from workbench.llm.config import load_config
from workbench.llm.gateway import Gateway
from workbench.llm.tokens import count_tokens
from workbench.vocabulary import StrategyName, values

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo" / "index.json"
PROMPT_TOKENS, OUTPUT_TOKENS = 100, 50  # what the scripted transport reports per call
QUERY = "Can I cancel my basic economy flight for a refund?"
REPORT = {"title": "Flight changes and refunds",
          "summary": "How agents change, cancel and refund reservations.",
          "rating": 6.0, "rating_explanation": "Central to the airline policy.",
          "findings": [{"summary": "Cancellation rules",
                        "explanation": "Refunds depend on the fare and the insurance."}]}


def graphrag_answer(request) -> str:
    """GraphRAG's formats: an entity per markdown heading of the chunk (its text follows
    ``-Real Data-``), a relationship between consecutive headings; the gleaning turn adds
    nothing; a community report as JSON; a merged description as prose."""
    text = "\n".join(str(m["content"]) for m in request["messages"])
    if "MANY entities and relationships were missed" in text[-600:]:
        return "<|COMPLETE|>"
    if "-Real Data-" in text:
        chunk = text.split("-Real Data-")[-1].split("Text:", 1)[-1]
        heads = list(dict.fromkeys(h.strip().upper() for h in
                                   re.findall(r"^#+[ \t]*(\S.*)$", chunk, re.M)))[:6]
        rows = [f'("entity"<|>{h}<|>EVENT<|>Policy section about {h.lower()})' for h in heads]
        rows += [f'("relationship"<|>{a}<|>{b}<|>{b} follows {a}<|>5)'
                 for a, b in zip(heads, heads[1:], strict=False)]
        return "\n##\n".join(rows) + "\n<|COMPLETE|>"
    if "findings" in text:
        return json.dumps(REPORT)
    return "Merged description of the policy section."


class Scripted(ScriptedTransport):
    def __init__(self, fail_on: int | None = None) -> None:
        super().__init__(graphrag_answer, fail_on=fail_on, prompt_tokens=PROMPT_TOKENS,
                         output_tokens=OUTPUT_TOKENS)


# --- adapter logic, without the library -------------------------------------------------

def test_missing_library_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphrag", None)
    _graphrag.cache_clear()
    try:
        with pytest.raises(GraphragUnavailable, match="make install-graphrag"):
            _graphrag()
    finally:
        _graphrag.cache_clear()


def test_cli_without_the_library_says_how_to_install(monkeypatch, capsys, tmp_path):
    from workbench.cli import main

    monkeypatch.setitem(sys.modules, "graphrag", None)
    _graphrag.cache_clear()
    try:
        code = main(["baselines", "index", "--strategy", "graphrag", "--index", str(DEMO),
                     "--root", str(tmp_path), "--no-cache"])
    finally:
        _graphrag.cache_clear()
    assert code == 2
    assert "make install-graphrag" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # nothing half-built


def test_cli_attach_points_the_indexing_gateway_at_a_running_model(monkeypatch, tmp_path):
    """`--attach URL` (the lead's `workbench model serve`) reaches the gateway that indexes."""
    import workbench.audit.baselines as baselines
    from workbench.cli import main

    seen = []

    class Recording:
        def __init__(self, gateway, root):
            seen.append(gateway)

        def open(self, skill, source, variant=None):
            pass

        def cost(self, skill, source, variant=None):
            return None

        def close(self):
            pass

    monkeypatch.setattr(baselines, "GraphragIndexes", Recording)
    url = "http://127.0.0.1:8765/v1"
    code = main(["baselines", "index", "--strategy", "graphrag", "--index", str(DEMO),
                 "--skills", "airline-policy", "--root", str(tmp_path), "--no-cache",
                 "--attach", url])
    assert code == 0
    (gw,) = seen
    assert gw.config.embedded.url == url


def test_messages_in_every_shape_graphrag_sends():
    assert as_messages("hi") == [{"role": "user", "content": "hi"}]
    obj = SimpleNamespace(role="assistant", content="earlier answer")
    parts = {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    assert as_messages([{"role": "system", "content": "s"}, obj, parts]) == [
        {"role": "system", "content": "s"}, {"role": "assistant", "content": "earlier answer"},
        {"role": "user", "content": "ab"}]


def test_gateway_call_accounts_usage_asks_json_for_structured_answers_and_records_failures():
    from pydantic import BaseModel

    class Finding(BaseModel):
        summary: str
        explanation: str

    class Report(BaseModel):
        title: str
        summary: str
        rating: float
        rating_explanation: str
        findings: list[Finding]

    t = Scripted()
    usage, failures = [], []
    call = GatewayCall(scripted_gateway(t), "airline-policy", usage, failures)
    assert call("-Real Data-\nText: # Refunds\n## Fees") .endswith("<|COMPLETE|>")
    out = call([{"role": "user", "content": "write the report with findings"}], Report)
    assert Report.model_validate_json(out).title == REPORT["title"]
    assert t.requests[1].get("response_format"), "a structured answer is a JSON call"
    assert t.requests[0]["temperature"] == 0.01
    assert [u.prompt_tokens for u in usage] == [PROMPT_TOKENS, PROMPT_TOKENS]

    broken = GatewayCall(scripted_gateway(Scripted(fail_on=1)), "s", [], failures)
    with pytest.raises(Exception, match="scripted outage"):
        broken("anything")
    # GraphRAG logs and skips a failed extraction: the failure must still be seen by us.
    assert len(failures) == 1 and "scripted outage" in failures[0]


class FakeEngine:
    """Stands in for GraphRAG's local search engine: a context whose size follows the
    ``max_context_tokens`` it is given, as GraphRAG's does."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.context_builder_params = {"max_context_tokens": 12000, "text_unit_prop": 0.5}
        self.context_builder = self
        self.asked: list[int] = []

    def build_context(self, query, max_context_tokens, **_):
        self.asked.append(max_context_tokens)
        paras = [p for p in self.source.split("\n\n") if p.strip()]
        rows, used = [], 0
        for i, p in enumerate(paras):
            if used + count_tokens(p) > max_context_tokens * 0.6:
                break
            rows.append({"id": str(i), "text": p})
            used += count_tokens(p)
        kg = "-----Entities-----\nid|entity|description\n0|REFUND|Refund rules"
        chunks = kg + "\n\n" + "-----Sources-----\nid|text\n" + "\n".join(
            f"{r['id']}|{r['text']}" for r in rows)
        return SimpleNamespace(context_chunks=chunks, context_records={"sources": rows})


class FakeIndexes:
    def __init__(self) -> None:
        self.engines: dict[str, FakeEngine] = {}

    def open(self, skill, source):
        return self.engines.setdefault(skill, FakeEngine(source))


@pytest.fixture(scope="module")
def demo():
    from workbench.audit.policy import AuditIndex
    from workbench.graph import PolicyIndex

    return AuditIndex(PolicyIndex.load(DEMO))


def test_context_units_locate_text_units_and_keep_the_graph_apart(demo):
    r = GraphragRetriever(FakeIndexes())
    text, units, chunk_ids = r.context(QUERY, ["airline-policy"], demo)
    source = demo.skill("airline-policy").source
    kg = units[0]
    assert kg.id == "airline-policy#graphrag-kg" and kg.spans == ()
    assert "-----Entities-----" in kg.text and "-----Sources-----" not in kg.text
    assert chunk_ids and chunk_ids == [u.id for u in units[1:]]
    for u in units[1:]:
        ((a, b),) = u.spans
        assert source[a:b] in u.text
    assert text == "\n\n".join(u.text for u in units)


def test_token_target_is_met_by_lowering_graphrags_limit(demo):
    idx = FakeIndexes()
    r = GraphragRetriever(idx)
    full, _, _ = r.context(QUERY, ["airline-policy"], demo)
    for target in (60, count_tokens(full) // 2):
        text, units, _ = r.context(QUERY, ["airline-policy"], demo, target_tokens=target)
        assert count_tokens(text) <= target
    # GraphRAG was asked again with a lower limit rather than its output cut blindly.
    asked = idx.engines["airline-policy"].asked
    assert asked[0] == 12000 and min(asked) < count_tokens(full) // 2


def test_token_target_holds_over_several_skills(demo):
    skills = ["airline-policy", "retail-policy"]
    r = GraphragRetriever(FakeIndexes())
    for target in (101, 333, 1001):
        text, units, _ = r.context(QUERY, skills, demo, target_tokens=target)
        assert count_tokens(text) <= target
        assert {u.skill for u in units} == set(skills)  # each SKILL got its share


def test_kg_section_without_sources():
    assert kg_section("-----Reports-----\nid|title\n1|T\n\n-----Sources-----\nid|text\n1|x") == \
        "-----Reports-----\nid|title\n1|T"
    assert kg_section(["a", "b"]) == "a\n\nb"


def test_registry_evaluate_lists_and_gateway_hand_over():
    assert StrategyName.GRAPHRAG in values(StrategyName) and "graphrag" in STRATEGIES
    s = get_strategy("graphrag")
    assert isinstance(s, GraphragStrategy) and s._retriever is None  # cheap until used
    assert not s.uses_keywords  # local search embeds the query: no audit keywords needed
    assert needs_gateway("graphrag")
    gw = scripted_gateway(Scripted())
    assert get_strategy("graphrag", gw)._gateway is gw


def test_cost_table_names_graphrag_and_puts_cdg_under_it():
    from tests.library_baselines import resumed_cost_rows

    rows = resumed_cost_rows("3.3.0", cdg_source_sha256="abc")
    lines = format_cost_rows(rows, "graphrag").splitlines()
    assert lines[1].split()[:9] == ["s", "1000", "graphrag", "4", "(1", "failed)", "400", "120", "15.5"]
    assert lines[2].split() == ["cdg", "7", "4000", "900", "60.0"]


# --- the real library ---------------------------------------------------------------------

graphrag_installed = pytest.mark.skipif(
    importlib.util.find_spec("graphrag") is None,
    reason="the graphrag baseline's library is an optional overlay: make install-graphrag")


def real_library(test):
    """Runs GraphRAG's pipeline (its import alone takes tens of seconds)."""
    return pytest.mark.slow(graphrag_installed(test))


def indexes(root, transport):
    from workbench.audit.baselines.graphrag_index import GraphragIndexes

    return GraphragIndexes(gateway=scripted_gateway(transport), encoder=HashEncoder(), root=root)


@real_library
def test_index_local_search_spans_andindex_cost(tmp_path, demo):
    t = Scripted()
    idx = indexes(tmp_path, t)
    text, units, chunk_ids = GraphragRetriever(idx).context(QUERY, ["airline-policy"], demo)
    source = demo.skill("airline-policy").source
    kinds = [q.get("response_format") is not None for q in t.requests]
    assert any(kinds) and not all(kinds), "extraction (text) and community reports (JSON)"
    assert all(q["temperature"] == 0.01 for q in t.requests)
    kg = next(u for u in units if u.id.endswith("#graphrag-kg"))
    # The scripted extraction's graph: heading entities, "follows" relationships.
    assert "-----Entities-----" in kg.text and "-----Relationships-----" in kg.text
    assert " follows " in kg.text
    assert "-----Reports-----" in kg.text and REPORT["title"] in kg.text
    assert chunk_ids
    for u in units:
        if u.id in chunk_ids:  # GraphRAG's text units are verbatim slices of the source
            ((a, b),) = u.spans
            assert source[a:b] in u.text and b - a > 100
    cost = index_cost(tmp_path)
    assert cost["calls"] == len(t.requests) and cost["runs"][0]["status"] == "processed"
    assert cost["prompt_tokens"] == PROMPT_TOKENS * len(t.requests)
    assert cost["completion_tokens"] == OUTPUT_TOKENS * len(t.requests)
    assert cost["library_version"] == "3.3.0" and cost["embedder"] == "all-MiniLM-L6-v2"
    assert cost["source_tokens"] == count_tokens(source)
    idx.close()

    # Another process opens the stored index: no model call, no new run, the same context.
    t2 = Scripted()
    again = indexes(tmp_path, t2)
    assert GraphragRetriever(again).context(QUERY, ["airline-policy"], demo)[0] == text
    assert t2.requests == [] and len(index_cost(tmp_path)["runs"]) == 1
    again.close()


@real_library
def test_reports_never_ask_for_more_than_the_extractor_may_answer(tmp_path, demo):
    """GraphRAG asks for reports of up to 2,000 words; with an answer budget of 600 tokens the
    prompt asks for 600 (descriptions keep their 500), and the default 2,048 keeps GraphRAG's."""
    from workbench.audit.baselines.graphrag_index import GraphragIndexes

    def limits(max_tokens: int) -> set[str]:
        t = Scripted()
        config = load_config(env={"WORKBENCH_EXTRACTOR_MAX_TOKENS": str(max_tokens)})
        idx = GraphragIndexes(gateway=scripted_gateway(t, config), encoder=HashEncoder(),
                              root=tmp_path / str(max_tokens))
        GraphragRetriever(idx).context(QUERY, ["airline-policy"], demo)
        idx.close()
        prompts = " ".join(m["content"] for q in t.requests for m in q["messages"])
        return set(re.findall(r"report length to (\d+) words", prompts))

    assert limits(600) == {"600"}
    assert limits(2048) == {"2000"}


@real_library
def test_failed_run_resumes_without_repaying_finished_calls(tmp_path, demo):
    from workbench.audit.baselines.graphrag_index import GraphragIndexError

    source = demo.skill("airline-policy").source
    assert_resumes(indexes, Scripted, tmp_path, source, GraphragIndexError, min_calls=3)


@real_library
def test_target_tokens_caps_the_real_context(tmp_path, demo):
    idx = indexes(tmp_path, Scripted())
    r = GraphragRetriever(idx)
    full, _, _ = r.context(QUERY, ["airline-policy"], demo)
    for target in (80, count_tokens(full) // 2):
        text, units, _ = r.context(QUERY, ["airline-policy"], demo, target_tokens=target)
        assert count_tokens(text) <= target and units
    idx.close()


@real_library
def test_strategy_audits_and_the_curve_and_sweep_take_it(tmp_path, monkeypatch):
    from workbench.audit.pipeline import AuditOptions, audit_case
    from workbench.vocabulary import JudgeMode

    retriever = GraphragRetriever(indexes(tmp_path / "idx", Scripted()))
    monkeypatch.setitem(STRATEGIES, "graphrag", lambda: GraphragStrategy(retriever))
    index, cases = long_sample(tmp_path / "long")
    cases = [c for c in cases if c.gold_rules]
    trace = audit_case(cases[0], index, get_strategy("graphrag"), None,
                       AuditOptions(judge_mode=JudgeMode.NONE))
    assert trace.error is None and trace.strategy == "graphrag"
    assert trace.context_tokens == count_tokens(trace.context)
    assert [u for u in trace.unit_spans.values() if u["spans"]], "text units carry spans"

    assert_curve_and_sweep("graphrag", index, cases)
    retriever.indexes.close()


@real_library
def test_cli_indexes_and_audits_through_the_given_gateway(tmp_path, monkeypatch, capsys):
    """`workbench baselines index --strategy graphrag` reports the cost beside CDG's, and
    `workbench audit --strategy graphrag --no-judge` indexes through the audit's own gateway."""
    import workbench.audit.dense as dense
    import workbench.commands.audit as audit_command
    import workbench.commands.baselines as baselines_command
    from workbench.cli import main

    scripted, made = Scripted(), []

    def audit_gateway(no_cache: bool, attach: str = "") -> Gateway:
        made.append(scripted_gateway(scripted))
        return made[-1]

    monkeypatch.setattr(audit_command, "cli_gateway", audit_gateway)
    monkeypatch.setattr(baselines_command, "cli_gateway", audit_gateway)
    monkeypatch.setattr(dense, "default_encoder", HashEncoder)  # no torch
    monkeypatch.setenv("WORKBENCH_BASELINES_DIR", str(tmp_path / "baselines"))
    monkeypatch.setenv("WORKBENCH_DB", f"sqlite:///{tmp_path / 'wb.db'}")

    reports = ROOT / "fixtures" / "demo" / "extracted" / "reports.json"
    code = main(["baselines", "index", "--strategy", "graphrag", "--index", str(DEMO),
                 "--skills", "airline-policy", "--extraction-reports", str(reports), "--json"])
    assert code == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["skill"] == "airline-policy" and row["calls"] == len(scripted.requests) > 0
    cdg = next(r for r in json.loads(reports.read_text()) if r["skill"] == "airline-policy")
    assert row["cdg_calls"] == cdg["model_calls"] and row["same_source"] is True

    audit_first_case(tmp_path, "graphrag")
    assert len(made) == 2
    assert {u.step.split(":")[0] for u in made[1].usage_log} == {"graphrag.index"}
