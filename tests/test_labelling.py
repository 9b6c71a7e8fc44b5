"""Labels where they teach most (issue 57 item 5): which cases to label next, how many labels
a promise still needs (binomial arithmetic worked by hand), and a guarantee certified on a
split that needs fewer labels for the same promise."""

from __future__ import annotations

import numpy as np

from workbench.decision._guarantee import choose_level
from workbench.decision._labelling import (
    Candidate,
    auto_cases_needed,
    labels_needed,
    propose,
    split_guarantee,
)


def test_with_no_error_a_promise_at_ten_percent_needs_51_cases_bonferroni_or_29_alone():
    # 0.9^50 = 0.00515 > 0.05/10 and 0.9^51 = 0.00464 <= 0.005; 0.9^28 = 0.0523, 0.9^29 = 0.0471
    assert auto_cases_needed(0.10, 0.05, 0.0, tests=10) == 51
    assert auto_cases_needed(0.10, 0.05, 0.0, tests=1) == 29
    f = labels_needed(0.10, 0.0, coverage=0.5, have=40)
    assert (f.auto_needed, f.labels_needed, f.more) == (51, 102, 62)


def test_errors_raise_the_count_and_an_error_rate_at_alpha_never_passes():
    few = auto_cases_needed(0.10, 0.05, 0.0, tests=10)
    some = auto_cases_needed(0.10, 0.05, 0.03, tests=10)
    assert some is not None and some > few
    # the count found is the first that passes: one case fewer does not
    from scipy.stats import binom

    assert binom.cdf(int(0.03 * some), some, 0.10) <= 0.005
    fewer = some - 1
    assert binom.cdf(int(0.03 * fewer), fewer, 0.10) > 0.005 or int(0.03 * fewer) < int(0.03 * some)
    assert labels_needed(0.10, 0.12, coverage=0.5).labels_needed is None


def test_the_next_labels_are_the_doubtful_ones_spread_over_conversations_and_skills():
    cands = [Candidate(("r", f"a{i}", "cdg"), "conv-a", "refunds", 0.5 + i / 100) for i in range(5)]
    cands += [Candidate(("r", "b0", "cdg"), "conv-b", "refunds", 0.9),
              Candidate(("r", "c0", "cdg"), "conv-c", "delays", 0.45),
              Candidate(("r", "d0", "cdg"), "conv-d", "delays", None)]
    got = [c.key[1] for c in propose(cands, 4)]
    # one per conversation first, SKILLs in turn, most doubtful first (no score = least known)
    assert got == ["d0", "a0", "c0", "b0"]
    assert [c.key[1] for c in propose(cands, 6)][4:] == ["a1", "a2"]


def test_a_level_chosen_on_one_half_and_certified_on_the_other_passes_where_bonferroni_cannot():
    rng = np.random.default_rng(3)
    n = 80  # 40 conversations of 2: each half holds ~40 cases
    groups = [f"g{i // 2}" for i in range(n)]
    conf = rng.uniform(0.5, 1.0, n)
    correct = np.ones(n, dtype=bool)  # a scorer that is right wherever it is confident
    correct[conf < 0.6] = False
    g = split_guarantee(conf, correct, groups, alpha=0.10)
    assert g.level is not None and g.decided >= 29 and g.errors == 0 and g.bound <= 0.10
    # the Bonferroni learn-then-test needs 51 auto-decided cases: at most 80 here, it cannot
    # pass at the coverages whose levels it may test with the errors below 0.6
    b = choose_level(conf, correct, alpha=0.10)
    assert b.level is None or b.decided >= 51


def test_a_setting_can_carry_the_split_guarantee():
    from workbench.decision import guarantee_dict

    rng = np.random.default_rng(3)
    n = 120
    groups = [f"g{i // 2}" for i in range(n)]
    q = rng.uniform(0.0, 1.0, n)
    truth = q >= 0.5  # calibrated and right wherever it decides
    split = guarantee_dict(q, truth, 0.5, 0.10, method="split", groups=groups)
    assert split["method"] == "split" and split["level"] is not None and split["errors"] == 0
    levels = guarantee_dict(q, truth, 0.5, 0.10)
    assert levels["method"] == "levels"
    import pytest

    with pytest.raises(ValueError):
        guarantee_dict(q, truth, 0.5, 0.10, method="split")  # no conversations given


def test_the_split_guarantee_from_scores_certifies_on_the_half_it_did_not_fit_on():
    from workbench.decision._labelling import split_scores_guarantee

    rng = np.random.default_rng(5)
    n = 160
    groups = [f"g{i // 2}" for i in range(n)]
    scores = rng.normal(0, 3, n)
    truth = scores > 0  # a score that is right wherever it is far from 0
    g = split_scores_guarantee(scores, truth, groups, 0.5, alpha=0.10)
    assert g.level is not None and g.errors <= 2 and g.bound <= 0.10
    # the same choosing half, a certifying half whose labels are all wrong: refused
    half = set(sorted(set(groups))[i] for i in np.random.default_rng(0).permutation(80)[:40])
    flipped = np.array([t if grp in half else not t for t, grp in zip(truth, groups, strict=True)])
    assert split_scores_guarantee(scores, flipped, groups, 0.5, alpha=0.10).level is None
