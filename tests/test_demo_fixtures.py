"""The bundled demo workspace (fixtures/demo): hand-built CDGs, their spans, and audit cases.

The index is read with plain ``json`` on purpose: these tests pin the file format itself, not
whatever the loader in ``workbench.graph`` accepts today.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections import deque
from pathlib import Path

import pytest
import yaml

from workbench.llm.tokens import count_tokens

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo"
INDEX = DEMO / "index.json"
CASES = DEMO / "cases.jsonl"
SKILL_NAMES = {"airline-policy", "retail-policy", "merchant-order-refund"}
RULE_COUNTS = {"airline-policy": (40, 70), "retail-policy": (30, 60), "merchant-order-refund": (120, 250)}
MODALITIES = {"required", "prohibited", "permitted"}


@pytest.fixture(scope="module")
def index() -> dict:
    return json.loads(INDEX.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def skills(index) -> dict[str, dict]:
    return {s["name"]: s for s in index["skills"]}


@pytest.fixture(scope="module")
def cases() -> list[dict]:
    lines = CASES.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _closure(skill: dict, seeds: list[str]) -> set[str]:
    out: dict[str, list[str]] = {}
    for e in skill["edges"]:
        out.setdefault(e["source"], []).append(e["target"])
    seen, todo = set(seeds), deque(seeds)
    while todo:
        for nxt in out.get(todo.popleft(), []):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _longest_shortest_path(skill: dict) -> int:
    """Largest BFS depth from any rule: the length of the longest multi-hop require chain."""
    out: dict[str, list[str]] = {}
    for e in skill["edges"]:
        out.setdefault(e["source"], []).append(e["target"])
    best = 0
    for start in (r["id"] for r in skill["rules"]):
        depth = {start: 0}
        todo = deque([start])
        while todo:
            cur = todo.popleft()
            for nxt in out.get(cur, []):
                if nxt not in depth:
                    depth[nxt] = depth[cur] + 1
                    todo.append(nxt)
        best = max(best, max(depth.values()))
    return best


# --- index structure ---------------------------------------------------------------


def test_index_has_the_three_demo_skills(index, skills):
    assert index["format"] == "skillcdg/1"
    assert set(skills) == SKILL_NAMES
    for s in skills.values():
        assert s["description"].strip()
        assert s["source"].startswith("---\nname: " + s["name"] + "\n")


@pytest.mark.parametrize("name", sorted(SKILL_NAMES))
def test_rule_ids_unique_and_modalities_valid(skills, name):
    rules = skills[name]["rules"]
    ids = [r["id"] for r in rules]
    assert len(ids) == len(set(ids))
    low, high = RULE_COUNTS[name]
    assert low <= len(rules) <= high
    for r in rules:
        assert r["modality"] in MODALITIES, r["id"]
        assert r["condition"].strip() and r["action"].strip(), r["id"]
        assert r["spans"], r["id"]


def test_rule_ids_unique_across_skills(skills):
    ids = [r["id"] for s in skills.values() for r in s["rules"]]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("name", sorted(SKILL_NAMES))
def test_spans_are_the_verbatim_quotes(skills, name):
    """Every span is non-empty, inside the source, trimmed, and spells out its YAML quote."""
    skill = skills[name]
    source = skill["source"]
    authored = yaml.safe_load((DEMO / "rules" / f"{name}.yaml").read_text(encoding="utf-8"))
    quotes = {r["id"]: r["quotes"] for r in authored["rules"]}
    for rule in skill["rules"]:
        assert len(rule["spans"]) == len(quotes[rule["id"]]), rule["id"]
        for span, quote in zip(rule["spans"], quotes[rule["id"]], strict=True):
            start, end = span["start"], span["end"]
            assert 0 <= start < end <= len(source), rule["id"]
            text = source[start:end]
            assert text == quote, rule["id"]
            assert text.strip() == text, rule["id"]


@pytest.mark.parametrize("name", sorted(SKILL_NAMES))
def test_edges_connect_existing_rules(skills, name):
    skill = skills[name]
    ids = {r["id"] for r in skill["rules"]}
    pairs = [(e["source"], e["target"]) for e in skill["edges"]]
    assert len(pairs) == len(set(pairs)), "duplicate edge"
    for e in skill["edges"]:
        assert e["type"] == "require"
        assert e["source"] in ids and e["target"] in ids, e
        assert e["source"] != e["target"], e
    # Roughly 0.5-1.0 require edges per rule: dense enough to matter, sparse enough to select.
    assert 0.5 <= len(pairs) / len(ids) <= 1.1


def test_graphs_have_a_cycle_and_deep_chains(skills):
    merchant = skills["merchant-order-refund"]
    edges = {(e["source"], e["target"]) for e in merchant["edges"]}
    assert any((t, s) in edges for s, t in edges), "expected a small mutual-dependency cycle"
    for s in skills.values():
        assert _longest_shortest_path(s) >= 4, s["name"]


def test_merchant_closures_carry_the_case_study_dependencies(skills):
    merchant = skills["merchant-order-refund"]
    delay_credit = _closure(merchant, ["MOR-C008"])
    # compensation for a late order needs: the delay rule, the promised window, the order
    # lookup and identity verification, and the paid-price (coupon-aware) refund amount.
    assert {"MOR-C005", "MOR-S001", "MOR-O007", "MOR-O001", "MOR-V001"} <= delay_credit
    assert {"MOR-R003", "MOR-D002"} <= delay_credit
    refund = _closure(merchant, ["MOR-X013"])
    assert {"MOR-X001", "MOR-X002", "MOR-R003", "MOR-D002", "MOR-D005", "MOR-P001"} <= refund


def test_merchant_skill_is_long(skills):
    assert count_tokens(skills["merchant-order-refund"]["source"]) >= 8000


def test_tau2_policies_are_embedded_verbatim(skills):
    corpora = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "tau2-bench" / "domains"
    for name, domain in (("airline-policy", "airline"), ("retail-policy", "retail")):
        original = corpora / domain / "policy.md"
        if not original.is_file():
            pytest.skip("shared tau2-bench corpus not available")
        assert original.read_text(encoding="utf-8").strip() in skills[name]["source"]


# --- cases ---------------------------------------------------------------------


def test_cases_follow_the_schema(cases, skills):
    assert 16 <= len(cases) <= 24
    assert len({c["id"] for c in cases}) == len(cases)
    labels = [c["label"] for c in cases]
    assert set(labels) == {"positive", "negative"}
    assert abs(labels.count("positive") - labels.count("negative")) <= 4
    without_skills = [c for c in cases if "skills" not in c]
    assert 0 < len(without_skills) < len(cases)
    for c in cases:
        assert {"id", "session", "label", "context", "background", "model_response", "gold"} <= set(c)
        assert set(c.get("skills", [])) <= SKILL_NAMES, c["id"]
        assert c["context"] and all(
            t["role"] in {"user", "assistant"} and t["content"].strip() for t in c["context"]
        ), c["id"]
        assert isinstance(c["background"], dict) and c["model_response"].strip(), c["id"]
        gold = c["gold"]
        assert gold["note"].strip(), c["id"]
        assert bool(gold["violated_rules"]) == (c["label"] == "negative"), c["id"]
        assert set(gold["violated_rules"]) <= set(gold["governing_rules"]), c["id"]


def test_case_gold_rules_exist_in_the_index(cases, skills):
    owner = {r["id"]: s["name"] for s in skills.values() for r in s["rules"]}
    for c in cases:
        for rid in c["gold"]["governing_rules"]:
            assert rid in owner, (c["id"], rid)
            if "skills" in c:
                assert owner[rid] in c["skills"], (c["id"], rid)


def test_cases_cover_every_skill_and_the_injection_attempt(cases):
    owners = {rid.split("-")[0] for c in cases for rid in c["gold"]["governing_rules"]}
    assert owners == {"AIR", "RET", "MOR"}
    assert any(
        "ignore previous instructions" in t["content"].lower() for c in cases for t in c["context"]
    )


# --- build script ----------------------------------------------------------------


def test_build_index_regenerates_the_committed_file(tmp_path):
    out = tmp_path / "index.json"
    result = subprocess.run(
        [sys.executable, str(DEMO / "build_index.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "merchant-order-refund:" in result.stdout and "source tokens" in result.stdout
    assert out.read_bytes() == INDEX.read_bytes(), "index.json is stale: rerun build_index.py"


def _load_build_script():
    spec = importlib.util.spec_from_file_location("demo_build_index", DEMO / "build_index.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_locate_resolves_repeats_after_the_previous_span_and_fails_loudly():
    build = _load_build_script()
    source = "Check status. Cancel. Check status. Return."
    assert build.locate(source, "Check status.", 0, "r1") == (0, 13)
    assert build.locate(source, "Check status.", 14, "r2") == (22, 35)
    with pytest.raises(build.BuildError, match="RULE-9.*not found"):
        build.locate(source, "Refund.", 0, "RULE-9 quote 1")
    with pytest.raises(build.BuildError, match="occurs 2 times"):
        build.locate(source, "Check status.", 30, "RULE-9 quote 1")
