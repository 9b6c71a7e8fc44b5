"""Review opens in doubt order with a card that agrees with itself, and auto-decides with a
guaranteed error rate (issue 44 item 2, issue 48 items 5-6): the level chosen on the
dataset's labelled verdicts, said in words before anything is recorded, refused where the
score does not rank cases."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pages._review_auto import Labelled, guarantee_words, labelled_of, plan_guarantee
from store import audit_repo
from store.review import decisions_for
from store.thresholds import current_threshold, scope_name
from tests.review_seed import DATASET, MOST_DOUBTFUL, save_setting, seed_labelled
from workbench.decision import DecisionSetting

ROOT = Path(__file__).resolve().parents[1]
PAGE = str(ROOT / "pages" / "review.py")


def synthetic(n: int, flip: int, seed: int = 0) -> Labelled:
    """``n`` cases, half violations, probabilities that rank them, ``flip`` answers wrong."""
    rng = random.Random(seed)
    truth = [i % 2 == 0 for i in range(n)]
    probs = [rng.uniform(0.6, 0.99) if t else rng.uniform(0.01, 0.4) for t in truth]
    for i in range(flip):
        truth[i] = not truth[i]
    return Labelled(tuple(probs), tuple(truth), tuple(f"g{i}" for i in range(n)))


def test_a_ranking_score_buys_coverage_with_a_bound_under_alpha():
    data = synthetic(200, 4)
    g = plan_guarantee(None, data, 0.10)
    assert g.refusal is None and g.level is not None and g.labelled == 200
    auto = g.setting.auto
    assert auto["bound"] <= 0.10 and auto["decided"] >= 100 and auto["cases"] == 200
    words = guarantee_words(g)
    assert f"decides {auto['decided']} of 200 ({round(100 * auto['decided'] / 200)} %) " \
           "automatically; at most 10 % of those wrong, with 95 % confidence" in words
    # The costs move the violation line: a missed violation worth two false alarms, 1/3.
    assert plan_guarantee(None, data, 0.10, miss_cost=2.0).setting.threshold == pytest.approx(1 / 3)


def test_a_calibrated_setting_takes_its_level_from_out_of_fold_probabilities():
    data = synthetic(200, 4)
    g = plan_guarantee(DecisionSetting(calibration={"a": 1.0, "b": 0.0}), data, 0.10)
    assert g.refusal is None and g.setting.calibration == {"a": 1.0, "b": 0.0}
    assert g.setting.auto["bound"] <= 0.10


@pytest.mark.parametrize(("saved", "data", "reason"), [
    (DecisionSetting(ranks=False), synthetic(200, 0), "This score does not rank cases here"),
    (None, Labelled(tuple(random.Random(1).random() for _ in range(200)),
                    tuple(i % 2 == 0 for i in range(200)), tuple(map(str, range(200)))),
     "This score does not rank cases here"),
    (None, synthetic(8, 0), "Auto-decide needs at least 10 labelled verdicts"),
    (DecisionSetting(scorer={"kind": "probe"}), synthetic(200, 0), "from the judge's activations"),
    (DecisionSetting(scorer={"kind": "probe"}, auto={"alpha": 0.05, "level": 0.9}),
     synthetic(200, 0), "it was saved for α = 5 %"),
    (None, synthetic(30, 0), "No confidence level keeps the wrong automatic decisions under 10 %"),
])
def test_auto_decide_is_refused_with_the_reason(saved, data, reason):
    g = plan_guarantee(saved, data, 0.10)
    assert g.setting is None and g.level is None and reason in g.refusal


@pytest.fixture
def db(demo_db):
    eng = demo_db[0]
    seed_labelled(eng)
    save_setting(eng)
    return eng


def open_review(reviewer: str = "ada") -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=90)
    at.query_params["dataset"] = DATASET
    at.run()
    at.text_input(key="rv_reviewer").set_value(reviewer).run()
    assert not at.exception
    return at


def plain(text: str) -> str:
    return text.replace("\\", "")


def test_review_opens_most_doubtful_first_with_one_sort_and_a_card_that_agrees(db):
    at = open_review()
    assert at.selectbox(key="rv_sort").value == "uncertainty"
    assert [s.label for s in at.selectbox if s.label == "Sort by"] == ["Sort by"]  # one sort
    card = next(t.value for t in at.text if " · case " in t.value)
    assert card.startswith("1/") and f"case {MOST_DOUBTFUL} " in card
    # p = 0.62 at a threshold of 2/3: compliant, 38 % sure; the judge said violation.
    assert [e.value for e in at.success] [:1] == ["Compliant"] and "Violation" not in \
        [e.value for e in at.error]
    words = " ".join(plain(m.value) for m in at.markdown)
    assert "probably compliant — 38 %" in words
    assert ("The judge answered violation; at this dataset's setting its probability decides "
            "compliant.") in words
    assert "Gold label: violation — the verdict says compliant" in [w.value for w in at.warning]


def test_auto_decide_says_what_it_buys_then_records_only_above_the_level(db):
    at = open_review()
    assert at.selectbox(key="rv_auto_alpha").value == 0.10
    assert at.selectbox(key="rv_auto_miss").value == 0.5  # the saved setting's costs
    saved = current_threshold(db, scope_name("dataset", DATASET))[1]
    cases = {c.id: c for c in audit_repo.load_cases(db, DATASET)}
    expected = plan_guarantee(saved, labelled_of(audit_repo.run_traces(db, DATASET), cases, []),
                              0.10, 0.5)
    assert expected.level is not None
    info = [plain(i.value) for i in at.info]
    assert guarantee_words(expected) in info
    here = next(plain(m.value) for m in at.markdown if plain(m.value).startswith("Here it decides"))
    n = int(here.split(" ")[3])
    assert 0 < n and at.button(key="rv_auto_apply").label == f"Auto-decide {n} verdicts"
    assert not decisions_for(db, DATASET)  # nothing recorded before the press
    at.button(key="rv_auto_apply").click().run()
    stored = decisions_for(db, DATASET)
    assert len(stored) == n and all(d.note.startswith("auto-decided") for d in stored)
    assert MOST_DOUBTFUL not in {d.case_id for d in stored}  # 38 % sure: left to people
    level = expected.level
    assert all(float(d.note.split("confidence ")[1].split(" ")[0]) >= level - 0.005 for d in stored)


def test_a_setting_that_does_not_rank_refuses_auto_decide_plainly(demo_db):
    eng = demo_db[0]
    seed_labelled(eng)
    save_setting(eng, ranks=False, cross_validated={"auroc": 0.48})
    at = open_review()
    warnings = [w.value for w in at.warning]
    assert any(w.startswith("This score does not rank cases here") for w in warnings)
    assert any(w.startswith("The score does not rank cases on this dataset") for w in warnings)
    button = at.button(key="rv_auto_apply")
    assert button.disabled and button.label == "Auto-decide 0 verdicts"
