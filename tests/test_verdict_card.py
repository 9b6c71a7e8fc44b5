"""The verdict card cannot contradict itself (issue 48 item 5, issue 44 item 5): its header,
its words, the colour of its evidence and the gold-label warning all come from one decision
under the dataset's setting; the judge's own differing answer is said in one plain line."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from components.spans import highlighted_html
from components.verdict import (
    decided_word,
    disagreement_line,
    gold_line,
    no_ranking_line,
    verdict_decision,
)
from workbench.audit import Verdict
from workbench.decision import DecisionSetting, ScoreSource
from workbench.graph import Span

REPLY = "Your order is running late. We will refund you."


def judged(violation: bool, p: float | None) -> Verdict:
    return Verdict(violation, "hand-set", ["R1"] if violation else [], probability=p,
                   probability_source="logprobs",
                   evidence=[{"start": 0, "end": 26, "quote": REPLY[:26]}])


def test_the_decision_comes_from_the_score_under_the_setting_not_the_bare_answer():
    # Threshold 0.7 on p = 0.6: the judge said "violation", the setting decides compliant.
    strict = DecisionSetting(threshold=0.7)
    d = verdict_decision(judged(True, 0.6), strict)
    assert d is not None and not d.violation and d.source is ScoreSource.VERBAL
    assert decided_word(judged(True, 0.6), strict) == "compliant"
    assert disagreement_line(judged(True, 0.6), d) == (
        "The judge answered violation; at this dataset's setting its probability decides compliant.")
    # No probability: the judge's answer stands, and no disagreement is claimed.
    bare = verdict_decision(judged(True, None), strict)
    assert bare is not None and bare.violation and bare.source is ScoreSource.VERDICT
    assert disagreement_line(judged(True, None), bare) is None
    # A setting that reads activations, with none captured: the bare answer, said so.
    scorer = DecisionSetting(scorer={"kind": "probe"})
    assert verdict_decision(judged(False, 0.9), scorer).source is ScoreSource.VERDICT
    assert verdict_decision(None, strict) is None


def test_gold_and_ranking_lines_say_only_what_disagrees():
    assert gold_line("negative", False) == "Gold label: violation — the verdict says compliant"
    assert gold_line("positive", True) == "Gold label: compliant — the verdict says violation"
    assert gold_line("negative", True) is None and gold_line(None, False) is None
    assert no_ranking_line(DecisionSetting()) is None and no_ranking_line(None) is None
    text = no_ranking_line(DecisionSetting(ranks=False, cross_validated={"auroc": 0.45}))
    assert text.startswith("The score does not rank cases on this dataset (out of fold it told "
                           "violations from compliant cases apart 45 % of the time")


def test_a_mark_class_is_ours_and_the_text_stays_escaped():
    out = highlighted_html("<b>x</b> ok", [Span(0, 8)], mark_class="wb-compliant")
    assert out == '<mark id="span-0" class="wb-compliant">&lt;b&gt;x&lt;/b&gt;</mark> ok'


def _card(violation: bool, p: float | None, setting: dict | None, gold: str | None) -> AppTest:
    def script(violation, p, setting, gold):
        from components.verdict import show_verdict
        from workbench.audit import AuditTrace, Verdict
        from workbench.decision import DecisionSetting

        reply = "Your order is running late. We will refund you."
        # A violation names a rule, as the whole-mode judge must.
        verdict = Verdict(violation, "hand-set", ["R1"] if violation else [], probability=p,
                          probability_source="logprobs",
                          evidence=[{"start": 0, "end": 26, "quote": reply[:26]}])
        show_verdict(AuditTrace(id="c1", strategy="cdg", verdict=verdict), None, key="t",
                     reply=reply, setting=DecisionSetting(**setting) if setting else None, gold=gold)

    return AppTest.from_function(script, args=(violation, p, setting, gold), default_timeout=30).run()


def _html(at: AppTest) -> str:
    return " ".join(e.proto.body for e in at.get("html"))


@pytest.mark.parametrize(("setting", "header", "words"), [
    ({"threshold": 0.7}, "Compliant", "probably compliant — 40 %"),
    (None, "Violation", "possible violation — 60 %"),
])
def test_the_header_and_the_words_under_it_agree(setting, header, words):
    at = _card(True, 0.6, setting, None)
    assert not at.exception
    headers = [e.value for e in at.error] + [e.value for e in at.success]
    assert headers == [header]
    shown = " ".join(m.value for m in at.markdown).replace("\\", "")
    assert words in shown
    said_otherwise = ("The judge answered violation; at this dataset's setting its probability "
                      "decides compliant.")
    assert (said_otherwise in shown) == (header == "Compliant")
    # Evidence of a compliant decision is not painted like a violation's (under a compliant
    # decision the judge's quotes are shown unpainted, as what the judge pointed at).
    kind = "compliant" if header == "Compliant" else "violation"
    assert f'class="wb-{kind}"' in _html(at) and f'data-kind="{kind}"' in _html(at)
    said = [c.value for c in at.caption if c.value.startswith("Words of the reply")]
    assert said == (["Words of the reply the judge quoted for its own answer"]
                    if header == "Compliant" else ["Words of the reply the verdict rests on"])


def test_the_gold_label_disagreeing_is_a_warning_on_the_card():
    at = _card(False, 0.1, None, "negative")
    assert [e.value for e in at.success] == ["Compliant"]
    assert [w.value for w in at.warning] == ["Gold label: violation — the verdict says compliant"]
    agree = _card(True, 0.9, None, "negative")
    assert not agree.warning


def test_a_setting_that_does_not_rank_says_so_plainly():
    at = _card(True, 0.9, {"ranks": False}, None)
    assert any(w.value.startswith("The score does not rank cases on this dataset")
               for w in at.warning)
    # Its header still agrees with its words.
    assert [e.value for e in at.error] == ["Violation"]
    assert "likely violation — 90 %" in " ".join(m.value for m in at.markdown)


def test_without_a_score_the_card_says_the_judges_answer_stands():
    at = _card(True, None, None, None)
    assert [e.value for e in at.error] == ["Violation"]
    assert any("the judge's own answer is shown" in c.value for c in at.caption)
