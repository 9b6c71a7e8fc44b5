"""The judge's activations of stored traces (``ActivationRow``), so the pages can decide a
dataset's cases with a saved activation scorer without running a model.

One row per (dataset, case, strategy): the vectors of the captured layers as float16 bytes,
the model, the layers and the judging prompt's sha256 they were read for. Saving a case's
features again replaces them. ``workbench import-traces`` stores the features captured beside
the traces file (``workbench.decision.features``); writing needs "store audit results".
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import numpy as np
from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, UniqueConstraint, select

from store.session import retry_conflicts, write_session
from workbench.decision.features import FeatureRecord
from workbench.identity.roles import Actor, require


class ActivationRow(SQLModel, table=True):
    __tablename__ = "activation_features"
    __table_args__ = (UniqueConstraint("dataset", "case_id", "strategy"),)

    id: int | None = Field(default=None, primary_key=True)
    dataset: str = Field(index=True)
    case_id: str
    strategy: str
    model: str
    prompt_sha256: str
    layers_json: str  # [2, 4, ...]
    hidden: int
    vectors: bytes  # float16, [layers, hidden], C order


def save_features(engine: Engine, dataset: str,
                  items: Iterable[tuple[FeatureRecord, np.ndarray]], *, actor: Actor) -> int:
    """Store (record, array) pairs of ``dataset``; returns how many. Needs "store audit
    results" (``roles.NotAllowed``, nothing written)."""
    require(actor, "store audit results")
    chosen = [(rec, np.asarray(arr, dtype=np.float16)) for rec, arr in items]

    def write() -> int:
        with write_session(engine) as session:
            have = {(r.case_id, r.strategy): r for r in session.exec(
                select(ActivationRow).where(ActivationRow.dataset == dataset)).all()}
            for rec, arr in chosen:
                row = have.get((rec.case_id, rec.strategy)) or ActivationRow(
                    dataset=dataset, case_id=rec.case_id, strategy=rec.strategy, model="",
                    prompt_sha256="", layers_json="[]", hidden=0, vectors=b"")
                row.model, row.prompt_sha256 = rec.model, rec.prompt_sha256
                row.layers_json, row.hidden = json.dumps(list(rec.layers)), int(arr.shape[1])
                row.vectors = arr.tobytes()
                have[(rec.case_id, rec.strategy)] = row
                session.add(row)
            session.commit()
        return len(chosen)

    return retry_conflicts(write)


def layer_vectors(engine: Engine, dataset: str, layer: int,
                  strategy: str | None = None) -> dict[tuple[str, str], np.ndarray]:
    """(case id, strategy) -> the float32 vector of hidden-state ``layer``, for the cases of
    ``dataset`` whose stored features hold that layer."""
    out = {}
    with Session(engine) as session:
        q = select(ActivationRow).where(ActivationRow.dataset == dataset)
        if strategy is not None:
            q = q.where(ActivationRow.strategy == strategy)
        for r in session.exec(q).all():
            layers = json.loads(r.layers_json)
            if layer not in layers:
                continue
            arr = np.frombuffer(r.vectors, dtype=np.float16).reshape(len(layers), r.hidden)
            out[(r.case_id, r.strategy)] = arr[layers.index(layer)].astype(np.float32)
    return out


def feature_count(engine: Engine, dataset: str) -> int:
    """How many cases of ``dataset`` have stored activations (a COUNT: pages ask on every
    run to key their cached scores)."""
    with Session(engine) as session:
        return int(session.exec(select(func.count()).select_from(ActivationRow)
                                .where(ActivationRow.dataset == dataset)).one())


def holds_feature(engine: Engine, dataset: str, layer: int) -> bool:
    """Whether some stored activations of ``dataset`` hold feature ``layer`` (reads the few
    distinct layer lists, not the vectors)."""
    with Session(engine) as session:
        kinds = session.exec(select(ActivationRow.layers_json)
                             .where(ActivationRow.dataset == dataset).distinct()).all()
    return any(layer in json.loads(k) for k in kinds)
