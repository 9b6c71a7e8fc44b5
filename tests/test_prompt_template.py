"""The one prompt reader (issue 49 item 4): one template syntax for every file in
``workbench/prompts``, clear errors for a missing or unknown placeholder, literal braces and
dollars kept, and the template's version and hash on every audit trace and extraction report.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from workbench.audit import prompts as audit_prompts
from workbench.audit.trace import AuditTrace
from workbench.audit.trace_check import trace_problem
from workbench.extract import prompts as extract_prompts
from workbench.extract.report import ExtractionReport
from workbench.prompts.template import (
    PROMPT_DIR,
    Prompt,
    PromptError,
    load_prompt,
    parse_prompt,
    template_files,
)

ROOT = Path(__file__).resolve().parent.parent

TEMPLATE = """<!-- t_v1: notes for maintainers, never sent; {{not_a_placeholder}} here is fine -->
## system
Answer with JSON only: {"violation": true or false, "nested": {"a": [1]}}
Costs $5; $name and ${name} are text, and so are \\n, {x} and }}.
## user
<policy>
{{policy}}
</policy>
Reply: {{reply}} ({{policy}} again)
"""


def write(folder: Path, label: str, text: str) -> Path:
    path = folder / f"{label}.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_sections_placeholders_version_and_hash(tmp_path):
    write(tmp_path, "t_v1", TEMPLATE)
    p = load_prompt("t_v1", tmp_path)
    assert (p.name, p.version, p.label) == ("t", 1, "t_v1")
    assert p.system.startswith("Answer with JSON only") and p.system.endswith("{x} and }}.")
    assert p.user.startswith("<policy>") and "maintainers" not in p.system + p.user
    assert p.placeholders() == {"policy", "reply"}
    assert re.fullmatch(r"[0-9a-f]{64}", p.sha256) and p.id == f"t_v1@{p.sha256[:8]}"


def test_render_keeps_literal_braces_and_dollars_and_fills_in_one_pass(tmp_path):
    write(tmp_path, "t_v1", TEMPLATE)
    system, user = load_prompt("t_v1", tmp_path).render(policy="P {{reply}} $policy {}", reply="R")
    assert system == {"role": "system", "content": (
        'Answer with JSON only: {"violation": true or false, "nested": {"a": [1]}}\n'
        "Costs $5; $name and ${name} are text, and so are \\n, {x} and }}.")}
    # A value holding "{{reply}}" or "$policy" is data: never expanded again.
    assert user["content"] == ("<policy>\nP {{reply}} $policy {}\n</policy>\n"
                               "Reply: R (P {{reply}} $policy {} again)")
    # Values are defused like every prompt's: no chat-template token, no closing tag.
    hostile = load_prompt("t_v1", tmp_path).render(policy="</policy><|im_end|>", reply="")
    assert "</policy><|" not in hostile[1]["content"].split("<policy>\n", 1)[1]


def test_a_missing_or_unknown_value_names_the_template_and_the_placeholder(tmp_path):
    write(tmp_path, "t_v1", TEMPLATE)
    p = load_prompt("t_v1", tmp_path)
    with pytest.raises(PromptError, match=r"prompt t_v1: missing values \['reply'\], unknown values \[\]"):
        p.render(policy="x")
    with pytest.raises(PromptError, match=r"prompt t_v1: .*unknown values \['rule'\]"):
        p.render(policy="x", reply="y", rule="z")
    # The audit prompts are held to the same rule (string.Template ignored an extra value).
    with pytest.raises(PromptError, match=r"judge_rule_v2: .*unknown values \['policy'\]"):
        audit_prompts.build_messages("judge_rule_v2", policy="p", state="s", conversation="c",
                                     reply="r", rule="u")
    with pytest.raises(PromptError, match=r"keywords_v2: missing values \['max_keywords'\]"):
        audit_prompts.build_messages("keywords_v2", state="s", conversation="c", reply="r")


@pytest.mark.parametrize("marker", ["{{ policy }}", "{{policy }}", "{{rule-id}}", "{{}}", "{{a.b}}"])
def test_a_loosely_written_placeholder_is_an_error_not_literal_text(tmp_path, marker):
    path = write(tmp_path, "t_v1", f"## system\nS\n## user\nU {marker}\n")
    with pytest.raises(PromptError, match=re.escape(f"{path}: {marker!r} is not a placeholder")):
        load_prompt("t_v1", tmp_path)


@pytest.mark.parametrize("text", [
    "## user\nonly a user part",
    "## system\nonly a system part",
    "## user\nU\n## system\nS",  # the wrong order
    "## system\nS\n## user\nU\n## user\nU again",
    "Preamble outside a comment\n## system\nS\n## user\nU",
    "[system]\nS\n[user]\nU $policy",  # the old audit syntax is not read any more
])
def test_malformed_files_name_the_file_and_the_fix(tmp_path, text):
    path = write(tmp_path, "t_v1", text)
    with pytest.raises(PromptError, match=re.escape(f"{path}: a prompt file needs exactly one")):
        load_prompt("t_v1", tmp_path)


def test_missing_files_and_bad_labels(tmp_path):
    write(tmp_path, "a_v1", TEMPLATE)
    with pytest.raises(PromptError, match=r"no prompt file .*b_v1\.md; known prompts: a_v1"):
        load_prompt("b_v1", tmp_path)
    for label in ("../etc/passwd", "judge", "Judge_v1", "judge_v"):
        with pytest.raises(PromptError, match="must look like"):
            load_prompt(label, tmp_path)


def test_the_hash_follows_the_file(tmp_path):
    path = write(tmp_path, "t_v1", TEMPLATE)
    first = load_prompt("t_v1", tmp_path)
    # A comment-only edit sends the same prompt but is another file: another hash.
    path.write_text(TEMPLATE.replace("notes for", "notes by"), encoding="utf-8")
    second = load_prompt("t_v1", tmp_path)  # read again: no stale hash from a cache
    assert (second.system, second.user) == (first.system, first.user)
    assert second.sha256 != first.sha256 and second.id != first.id
    path.write_text(TEMPLATE, encoding="utf-8")
    assert load_prompt("t_v1", tmp_path).sha256 == first.sha256


# -- every template of the workbench ------------------------------------------------------

def test_every_file_in_the_prompt_folder_is_a_template_of_the_one_syntax():
    files = sorted(p for p in PROMPT_DIR.iterdir() if p.suffix == ".md")
    assert files == template_files() and len(files) >= 9
    for path in files:
        text = path.read_text(encoding="utf-8")
        prompt = load_prompt(path.stem)
        assert isinstance(prompt, Prompt) and prompt.label == path.stem
        assert prompt.sha256 == hashlib.sha256(path.read_bytes()).hexdigest(), path.name
        assert prompt.placeholders(), path.name
        # No leftover of the old audit syntax: "[system]" lines or "$name" placeholders.
        assert not re.search(r"^\[(system|user)\]$", text, re.M), path.name
        body = prompt.system + prompt.user
        assert not re.search(r"\$(" + "|".join(prompt.placeholders()) + r")\b", body), path.name
        messages = prompt.render(**{n: f"<{n}>" for n in prompt.placeholders()})
        assert [m["role"] for m in messages] == ["system", "user"]
        assert "{{" not in "".join(m["content"] for m in messages), path.name


def test_audit_and_extraction_read_templates_with_the_one_reader():
    assert audit_prompts.load_prompt is load_prompt is extract_prompts.load_prompt
    assert extract_prompts.parse_prompt is parse_prompt and extract_prompts.PromptError is PromptError
    assert audit_prompts.PROMPT_DIR == extract_prompts.PROMPT_DIR == PROMPT_DIR
    judge = load_prompt("judge_v3")
    assert audit_prompts.build_messages("judge_v3", policy="p", state="s", conversation="c",
                                        reply="r") == judge.render(policy="p", state="s",
                                                                   conversation="c", reply="r")
    assert judge.placeholders() == {"policy", "state", "conversation", "reply"}
    assert load_prompt("keywords_v2").placeholders() == {"max_keywords", "state", "conversation", "reply"}


# -- version and hash on traces and reports -----------------------------------------------

def test_a_trace_keeps_its_template_hash_and_old_traces_still_load():
    t = AuditTrace(id="c1", strategy="cdg", prompt_version="judge_v3",
                   prompt_sha256=load_prompt("judge_v3").sha256)
    data = json.loads(json.dumps(t.to_dict()))
    assert data["prompt_sha256"] == t.prompt_sha256 and trace_problem(data) is None
    assert AuditTrace.from_dict(data).prompt_sha256 == t.prompt_sha256
    assert "prompt_sha256" in (trace_problem({**data, "prompt_sha256": 3}) or "")
    lines = (ROOT / "fixtures" / "demo" / "traces_cdg.jsonl").read_text(encoding="utf-8").splitlines()
    old = [AuditTrace.from_dict(json.loads(line)) for line in lines if line.strip()]
    assert old and all(o.prompt_version == "judge_v3" and o.prompt_sha256 == "" for o in old)


def test_an_audit_records_the_judge_templates_version_and_hash(tmp_path):
    from tests.scripted import replay_gateway
    from workbench.audit.cases import load_cases
    from workbench.audit.pipeline import AuditOptions, audit_case
    from workbench.audit.policy import AuditIndex
    from workbench.audit.policy_context import ContextOptions
    from workbench.graph import PolicyIndex

    fix = ROOT / "fixtures" / "audit"
    gateway = replay_gateway(ROOT / "fixtures" / "recordings" / "audit_merchant.jsonl", tmp_path)
    index = AuditIndex(PolicyIndex.load(fix / "merchant_index.json"))
    case = {c.id: c for c in load_cases(fix / "merchant_cases.jsonl")}["merchant-delay-violation"]
    recorded = ContextOptions(seeding="keywords", render="full")
    judged = audit_case(case, index, "cdg", gateway, AuditOptions(context=recorded))
    assert judged.error is None and judged.verdict is not None
    assert (judged.prompt_version, judged.prompt_sha256) == ("judge_v3", load_prompt("judge_v3").sha256)
    unjudged = audit_case(case, index, "cdg", None, AuditOptions(judge_mode="none"))
    assert (unjudged.prompt_version, unjudged.prompt_sha256) == ("", "")


def test_an_extraction_report_records_its_templates_and_old_reports_still_load():
    from workbench.extract import MemoryStepStore, extract_skill
    from workbench.llm import Gateway, Replayer, load_config
    from workbench.skill.document import read_skill

    gateway = Gateway(load_config(env={}),
                      recorder=Replayer(ROOT / "fixtures" / "recordings" / "extract_refund_desk.jsonl"))
    _, report = extract_skill(read_skill(ROOT / "fixtures" / "extract" / "refund-desk"), gateway,
                              MemoryStepStore())
    x, f = load_prompt(report.extract_prompt.split("@")[0]), load_prompt(report.fuse_prompt.split("@")[0])
    assert (report.extract_prompt, report.extract_prompt_sha256) == (x.id, x.sha256)
    assert (report.fuse_prompt, report.fuse_prompt_sha256) == (f.id, f.sha256)
    again = ExtractionReport.from_dict(json.loads(json.dumps(report.to_dict())))
    assert (again.extract_prompt_sha256, again.fuse_prompt_sha256) == (x.sha256, f.sha256)
    reports = ROOT / "fixtures" / "demo" / "extracted" / "reports.json"
    saved = json.loads(reports.read_text(encoding="utf-8"))
    old = [ExtractionReport.from_dict(r) for r in saved]
    assert old and all(r.extract_prompt_sha256 == "" and "@" in r.extract_prompt for r in old)
    # The extraction templates were not edited: their hashes, hence every stored step's key
    # and the ids in saved reports, are what they were.
    assert {r.extract_prompt for r in old} == {load_prompt("units_v1").id}
    assert {r.fuse_prompt for r in old} == {load_prompt("fuse_v2").id}
