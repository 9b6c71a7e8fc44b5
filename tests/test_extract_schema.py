"""Validation of extractor and fuser answers, and the versioned prompt files."""

from __future__ import annotations

import pytest

from workbench.extract.prompts import PromptError, load_prompt, parse_prompt
from workbench.extract.schema import extraction_schema, fusion_schema, validate_extraction, validate_fusion
from workbench.llm.structured import OutputProblem, check_schema


def rule(i, **kw):
    base = {"id": f"R{i}", "quote": f"Quote {i}.", "condition": "c", "action": "a", "modality": "required"}
    return {**base, **kw}


def test_valid_answer_passes_unchanged():
    ex = validate_extraction({"rules": [rule(1), rule(2)], "edges": [{"source": "R2", "target": "R1"}]})
    assert [r.id for r in ex.rules] == ["R1", "R2"] and ex.edges == [("R2", "R1")] and not ex.problems


def test_bad_rules_and_edges_are_dropped_and_listed():
    ex = validate_extraction({
        "rules": [rule(1), rule(2, modality="optional"), rule(3, quote=" "), "junk", rule(1, quote="Again.")],
        "edges": [{"source": "R1", "target": "R7"}, {"source": "R1", "target": "R1"}, {"source": "R3"}],
    })
    # The repeated id R1 is renamed; edges naming it become ambiguous and are dropped.
    assert [(r.id, r.quote) for r in ex.rules] == [("R1", "Quote 1."), ("R2", "Again.")]
    assert ex.edges == []
    text = " ".join(ex.problems)
    for needle in ("modality 'optional'", "missing or empty", "not an object", "repeats", "unknown rule id"):
        assert needle in text


def test_cycles_are_kept():
    ex = validate_extraction({"rules": [rule(1), rule(2)], "edges": [
        {"source": "R1", "target": "R2"}, {"source": "R2", "target": "R1"},
        {"source": "R2", "target": "R1"}]})
    assert ex.edges == [("R1", "R2"), ("R2", "R1")]


def test_unusable_shapes_raise_value_error():
    for data in ([], {"rules": "none"}, {"edges": []}):
        with pytest.raises(ValueError):
            validate_extraction(data)


def test_fusion_answer_checks_aliases_and_direction():
    ans = validate_fusion({
        "merges": [{"new": "N1", "known": "K1"}, {"new": "N1", "known": "K2"}, {"new": "N9", "known": "K1"}],
        "edges": [{"source": "N2", "target": "K1"}, {"source": "K1", "target": "N2"},
                  {"source": "N1", "target": "N2"}, {"source": "X", "target": "K1"}],
    }, ["N1", "N2"], ["K1", "K2"])
    assert ans.merges == {"N1": "K1"}
    assert ans.edges == [("N2", "K1"), ("K1", "N2")]
    assert len(ans.problems) == 4


def test_schemas_accept_and_reject_as_the_server_would():
    schema = extraction_schema(max_rules=1)
    check_schema({"rules": [rule(1)], "edges": []}, schema)
    with pytest.raises(OutputProblem):
        check_schema({"rules": [rule(1), rule(2)], "edges": []}, schema)
    with pytest.raises(OutputProblem):
        check_schema({"rules": [rule(1, modality="maybe")], "edges": []}, schema)
    fs = fusion_schema(["N1"], ["K1"])
    check_schema({"merges": [{"new": "N1", "known": "K1"}], "edges": []}, fs)
    with pytest.raises(OutputProblem):
        check_schema({"merges": [{"new": "N2", "known": "K1"}], "edges": []}, fs)


def test_prompt_files_load_render_and_carry_their_hash():
    p = load_prompt("extract_v1")
    assert p.id.startswith("extract_v1@") and p.placeholders() == {"section", "text"}
    messages = p.render(section="Refunds", text="Text with {{braces}} and {json}.")
    assert messages[0]["role"] == "system" and "Reply with JSON only" in messages[0]["content"]
    assert messages[1]["content"].endswith("Text with {{braces}} and {json}.")
    assert load_prompt("fuse_v1").placeholders() == {"known", "new", "section"}
    with pytest.raises(PromptError, match="missing values"):
        p.render(section="x")


def test_prompt_file_errors_name_the_fix(tmp_path):
    with pytest.raises(PromptError, match="known prompts"):
        load_prompt("extract_v99")
    with pytest.raises(PromptError, match="must look like"):
        load_prompt("../etc/passwd")
    with pytest.raises(PromptError, match="## system"):
        parse_prompt("## user\nonly a user part", "x", 1)
    a = parse_prompt("<!-- note -->\n## system\nS\n## user\nU {{t}}", "x", 1)
    b = parse_prompt("<!-- other note -->\n## system\nS\n## user\nU {{t}}", "x", 1)
    assert (a.system, a.user) == ("S", "U {{t}}") and a.id != b.id
