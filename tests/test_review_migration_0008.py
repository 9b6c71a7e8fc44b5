"""Migration 0008 gives old review decisions the label shown and the analyst's own label, by
what the analyst saw when they decided (issue 53): the card of that time, rebuilt from the
dataset's decision setting current then and the stored trace (its activations, its
probability, its yes/no). Under an activation setting an overturn of a red "Violation" the
score decided over the judge's "compliant" is the analyst saying compliant; under a verbal
setting or none, a row whose probability and yes/no disagree cannot be told apart and counts
nowhere. Run on SQLite and PostgreSQL, on a store at 0007 holding old decisions."""

from __future__ import annotations

import json

import numpy as np
from alembic import command
from sqlalchemy import create_engine, text

from store.db import migrations_config
from workbench.decision import DecisionSetting
from workbench.decision.scorers import Probe

# An activation setting saved at 12:00: a probe reading dimension 0 of layer 20.
PROBE = Probe(20, np.zeros(2), np.ones(2), np.array([1.0, 0.0]), 0.0, 0.1)
SETTING = DecisionSetting(threshold=0.5, scorer=PROBE.to_dict())

# case, dataset, decided at, decision, judge's yes/no, its probability, activation dim 0
#   -> shown, analyst label, source, setting version
ROWS = [
    # no setting yet: the card read the probability, which agrees with the yes/no
    ("c1", "d", "10:00", "overturn", False, 0.2, None, "compliant", "violation", "judge", None),
    ("c2", "d", "10:00", "confirm", True, 0.8, None, "violation", "violation", "judge", None),
    # no setting, probability and yes/no disagree: which the card showed is unknown
    ("c3", "d", "10:00", "overturn", False, 0.7, None, None, None, "unknown", None),
    # under the activation setting: the score's label was shown (the case)
    ("c4", "d", "13:00", "overturn", False, 0.3, 4.0, "violation", "compliant", "activations", 1),
    ("c5", "d", "13:00", "wrong-rule", True, 0.9, 3.0, "violation", "violation", "activations", 1),
    ("c6", "d", "13:00", "confirm", True, 0.9, -3.0, "compliant", "compliant", "activations", 1),
    # under the activation setting, no activations stored: the card showed the yes/no
    ("c7", "d", "13:00", "confirm", False, 0.1, None, "compliant", "compliant", "judge", 1),
    # an undo says nothing of its own; a decision with no verdict known neither
    ("c8", "d", "13:00", "undo", True, 0.9, None, None, None, None, None),
    ("c9", "d", "13:00", "confirm", None, None, None, None, None, None, None),
]


def test_old_decisions_keep_what_the_analyst_meant(store_url):
    engine = create_engine(store_url)
    with engine.begin() as conn:
        command.upgrade(migrations_config(conn), "0007")
        conn.execute(text(
            "INSERT INTO decision_threshold (scope, version, threshold, setting_json, author, note, "
            "created_at) VALUES ('dataset:d', 1, 0.5, :s, 'ana', '', '2026-12-04 12:00:00')"),
            {"s": json.dumps(SETTING.to_dict())})
        for cid, ds, at, decision, judge, p, act, *_ in ROWS:
            conn.execute(text(
                "INSERT INTO review_decision (dataset, run_id, case_id, strategy, reviewer, "
                "decision, note, judge_violation, created_at, batch, undoes) VALUES "
                "(:d, 'r', :c, 'cdg', 'ana', :decision, 'n', :judge, :at, '', :undoes)"),
                {"d": ds, "c": cid, "decision": decision, "judge": judge,
                 "at": f"2026-12-04 {at}:00", "undoes": 1 if decision == "undo" else None})
            conn.execute(text(
                "INSERT INTO auditresultrow (run_id, dataset, case_id, strategy, violation, "
                "probability, error, trace_json, created_at) VALUES ('r', :d, :c, 'cdg', :v, "
                ":p, NULL, '{}', '2026-12-04 09:00:00')"),
                {"d": ds, "c": cid, "v": judge, "p": p})
            if act is not None:
                vec = np.array([[act, 0.0]], dtype=np.float16)
                conn.execute(text(
                    "INSERT INTO activation_features (dataset, case_id, strategy, model, "
                    "prompt_sha256, layers_json, hidden, vectors) VALUES (:d, :c, 'cdg', "
                    "'embedded', 'sha', '[20]', 2, :v)"), {"d": ds, "c": cid, "v": vec.tobytes()})
    with engine.begin() as conn:
        command.upgrade(migrations_config(conn), "0008")
    with engine.connect() as conn:
        got = conn.execute(text("SELECT case_id, shown, analyst_label, shown_source, "
                                "setting_version FROM review_decision ORDER BY id")).all()
    engine.dispose()
    want = [(r[0], *r[7:]) for r in ROWS]
    assert [tuple(g) for g in got] == want


def test_a_decision_whose_card_cannot_be_rebuilt_says_nothing():
    from workbench.review.decisions import UNKNOWN_SHOWN, ReviewDecision

    d = ReviewDecision("d", "r", "c3", "cdg", "ana", "overturn", "n", judge_violation=False,
                       shown_source=UNKNOWN_SHOWN)
    assert d.analyst_violation is None
    known = ReviewDecision("d", "r", "c4", "cdg", "ana", "overturn", "n", judge_violation=False,
                           shown="violation", shown_source="activations", analyst_label="compliant")
    assert known.analyst_violation is False
