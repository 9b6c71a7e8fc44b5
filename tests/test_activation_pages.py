"""A dataset whose saved setting reads the judge's activations: import-traces stores the
features captured beside the traces, and the pages' setting comes with the scorer's outputs,
so the card, the queue's order and the words decide from them."""

from __future__ import annotations

import json

import numpy as np

from store.activations import feature_count
from workbench.audit.trace import AuditTrace, Verdict
from workbench.cli import main
from workbench.decision import ScoreSource, judgement
from workbench.decision import features as ff
from workbench.words import probability


def _run(tmp_path, n=40, seed=3):
    rng = np.random.default_rng(seed)
    path = tmp_path / "run.jsonl"
    lines = []
    for i in range(n):
        truth = i % 2 == 0
        t = AuditTrace(id=f"c{i}", strategy="cdg", session=f"conv{i // 2}",
                       label="negative" if truth else "positive",
                       verdict=Verdict(violation=False, reason="r", violated_rules=[],
                                       probability=0.3, probability_source="logprobs"))
        lines.append(json.dumps(t.to_dict()))
        x = rng.normal(0, 1, (2, 8))
        x[1, :2] += 2.0 * truth
        ff.append(ff.features_dir(path), ff.new_record(t.id, "cdg", f"s{i}", "embedded", (2, 4), 10, 1.0), x)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": f"c{i}", "model_response": "ok",
                                         "label": "negative" if i % 2 == 0 else "positive",
                                         "session": f"conv{i // 2}"}) + "\n" for i in range(n)))
    return path, cases


def test_pages_decide_a_dataset_from_its_stored_activations(tmp_path, empty_db, capsys):
    from pages._thresholds import dataset_setting
    from store.audit_repo import latest_traces

    path, cases = _run(tmp_path)
    assert main(["import-cases", str(cases), "--dataset", "d"]) == 0
    assert main(["import-traces", str(path), "--dataset", "d", "--run-id", "r1"]) == 0
    assert "activations of 40 case(s) stored" in capsys.readouterr().out
    assert feature_count(empty_db, "d") == 40
    assert main(["calibrate", str(path), "--cases", str(cases), "--save", "dataset:d"]) == 0
    version, setting = dataset_setting(empty_db, "d")
    assert setting.scorer is not None and len(setting.case_scores) == 40
    traces = latest_traces(empty_db, "d")
    violation = traces[("c0", "cdg")]  # the judge said compliant at 0.3
    decided = judgement(violation, setting)
    assert decided.source is ScoreSource.ACTIVATIONS and decided.violation
    assert probability(judgement(violation, setting)).startswith(("likely violation", "possible violation"))
    # a bare verdict (no trace, so no case to look up) has no score under this setting
    assert judgement(violation.verdict, setting) is None
    # the card's words and header come from the same decision
    from components.verdict import decided_word, verdict_decision

    # The score decided violation over the judge's "compliant" and no rule was found for it
    # yet: the card and every list say "review" (issue 53), never a violation without a rule.
    assert decided_word(violation, setting) == "review"
    assert verdict_decision(violation, setting).confidence == decided.confidence
