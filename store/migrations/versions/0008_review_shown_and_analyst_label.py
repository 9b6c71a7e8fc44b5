"""review decisions record what was shown and what the analyst says

A decision used to keep only the judge's yes/no (``judge_violation``) and read confirm /
overturn against it, although the card may have shown a verdict a score decided. Each
decision now stores the label shown, where its score came from, the decision setting's version
and the analyst's own label.

Existing rows are migrated by what the analyst saw when they decided, rebuilt as the card of
that time built it: the dataset's decision setting current at the decision's time
(``decision_threshold``), applied to the stored trace — its activation scorer's output from
the stored activations, else the judge's probability, else its yes/no. A confirm or a
wrong-rule stands behind the label shown, an overturn says the opposite; an undo says nothing
of its own (NULL).

- Under an **activation setting** the card showed the score's label (the card and such
  settings came together): a red "Violation" decided by the score over the judge's
  "compliant", overturned, becomes shown violation, analyst compliant — what the analyst meant.
- Under a **verbal setting or none**, cards of some earlier builds showed the judge's yes/no,
  later ones the probability's decision: where the two agree the row is migrated; where they
  differ, which one the analyst saw cannot be known, and the row is marked
  ``shown_source = 'unknown'`` with no label: it counts nowhere, and its original fields
  (decision, judge_violation, note) stay as they were.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-05 13:31:42.766118
"""

from __future__ import annotations

import json
from datetime import datetime

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('review_decision', schema=None) as batch_op:
        batch_op.add_column(sa.Column('shown', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
        batch_op.add_column(sa.Column('shown_source', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
        batch_op.add_column(sa.Column('setting_version', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('analyst_label', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
    conn = op.get_bind()
    rows = conn.execute(sa.text(
        "SELECT id, dataset, run_id, case_id, strategy, decision, judge_violation, created_at "
        "FROM review_decision WHERE judge_violation IS NOT NULL AND decision != 'undo'")).all()
    settings: dict[str, list] = {}
    for r in rows:
        if r.dataset not in settings:
            settings[r.dataset] = conn.execute(sa.text(
                "SELECT version, setting_json, created_at FROM decision_threshold "
                "WHERE scope = :scope ORDER BY version"), {"scope": f"dataset:{r.dataset}"}).all()
        shown, source, version = _shown(conn, r, settings[r.dataset])
        judge = "violation" if r.judge_violation else "compliant"
        if source != "activations" and shown != judge:
            values = {"shown": None, "source": "unknown", "version": version, "label": None}
        else:
            opposite = "compliant" if shown == "violation" else "violation"
            label = opposite if r.decision == "overturn" else shown
            values = {"shown": shown, "source": source, "version": version, "label": label}
        conn.execute(sa.text(
            "UPDATE review_decision SET shown = :shown, shown_source = :source, "
            "setting_version = :version, analyst_label = :label WHERE id = :id"),
            {**values, "id": r.id})


def _when(value) -> datetime:
    if isinstance(value, datetime):
        return value.replace(tzinfo=None)
    return datetime.fromisoformat(str(value)).replace(tzinfo=None)


def _shown(conn, r, history) -> tuple[str, str, int | None]:
    """(label the card showed, "judge" / "activations", setting version) for decision ``r``."""
    from workbench.decision import DecisionSetting, decide
    from workbench.decision.scorers import apply, scorer_from_dict

    at = _when(r.created_at)
    current = [h for h in history if _when(h.created_at) <= at]
    setting = DecisionSetting.from_dict(json.loads(current[-1].setting_json)) if current else None
    version = current[-1].version if current else None
    trace = conn.execute(sa.text(
        "SELECT probability, violation FROM auditresultrow WHERE dataset = :d AND run_id = :r "
        "AND case_id = :c AND strategy = :s ORDER BY id DESC"),
        {"d": r.dataset, "r": r.run_id, "c": r.case_id, "s": r.strategy}).first()
    p = trace.probability if trace is not None else None
    judge = bool(r.judge_violation)
    word = {True: "violation", False: "compliant"}
    if setting is not None and setting.scorer is not None:
        scorer = scorer_from_dict(setting.scorer)
        row = conn.execute(sa.text(
            "SELECT layers_json, hidden, vectors FROM activation_features WHERE dataset = :d "
            "AND case_id = :c AND strategy = :s"),
            {"d": r.dataset, "c": r.case_id, "s": r.strategy}).first()
        layers = json.loads(row.layers_json) if row is not None else []
        if scorer.layer in layers and (p is not None or type(scorer).__name__ != "Combined"):
            import numpy as np

            arr = np.frombuffer(bytes(row.vectors), dtype=np.float16).reshape(len(layers), row.hidden)
            x = arr[layers.index(scorer.layer)].astype(np.float32)[None, :]
            score = float(apply(scorer, x, [p])[0])
            return word[decide(setting, activation=score).violation], "activations", version
        return word[judge], "judge", version  # no score under it: the card showed the yes/no
    if p is not None:
        return word[decide(setting, probability=float(p)).violation], "judge", version
    return word[judge], "judge", version


def downgrade() -> None:
    with op.batch_alter_table('review_decision', schema=None) as batch_op:
        batch_op.drop_column('analyst_label')
        batch_op.drop_column('setting_version')
        batch_op.drop_column('shown_source')
        batch_op.drop_column('shown')
