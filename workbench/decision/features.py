"""What the judge knows about a case, kept beside the run: its hidden states, one vector per
*feature*, keyed by the trace they were read for.

A feature is one layer read one way (:data:`POOLINGS`): at the last prompt token (where the
judge starts its answer), or over the tokens of the audited reply inside the prompt — their
mean, their element-wise max (on long contexts a max over positions keeps a signal a mean
loses), or the reply's last token. A feature id is one integer, ``pooling * 100 + layer``
(:func:`feature_id`), so the layer-indexed machinery (scorers, cross-validation, the store's
``layers_json``) carries poolings unchanged and a scorer saved before poolings existed
(layer 20) still means the last token at layer 20.

A run ``traces.jsonl`` keeps its features in the folder ``traces.features/``: an index
``features.jsonl`` (one line per case: case id, strategy, the judging prompt's sha256, the
model, the layers) and one ``<key>.npy`` per case (float16, ``[layers, hidden]``). Lines
are appended after their array is on disk (written to a temporary name, then renamed), so a
capture killed at any point resumes where it stopped and never leaves a line without its
array. Scorers are fitted and refitted from these files without running a model again.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from workbench.errors import WorkbenchError

INDEX = "features.jsonl"

# How a layer is read (the index is the hundreds of a feature id).
POOLINGS = ("last", "reply_mean", "reply_max", "reply_end")
POOLING_WORDS = {"last": "the last prompt token", "reply_mean": "the mean over the reply",
                 "reply_max": "the max over the reply", "reply_end": "the reply's last token"}


def feature_id(pooling: str, layer: int) -> int:
    """``reply_mean`` at layer 20 -> 120; ``last`` at 20 -> 20."""
    return POOLINGS.index(pooling) * 100 + int(layer)


def split_feature(fid: int) -> tuple[str, int]:
    """120 -> ("reply_mean", 20)."""
    k, layer = divmod(int(fid), 100)
    if not 0 <= k < len(POOLINGS):
        raise ValueError(f"feature {fid} names no pooling (0..{len(POOLINGS) - 1} hundreds)")
    return POOLINGS[k], layer


def feature_words(fid: int) -> str:
    """"layer 20, the mean over the reply"."""
    pooling, layer = split_feature(fid)
    return f"layer {layer}, {POOLING_WORDS[pooling]}"


def pool(rows: dict[int, np.ndarray], reply: tuple[int, int] | None,
         layers: Sequence[int], poolings: Sequence[str] = POOLINGS) -> tuple[list[int], np.ndarray]:
    """Feature ids and ``[features, hidden]`` from one prefill's rows (``rows[layer]``:
    ``[positions, hidden]``; the last layer, whose rows llama.cpp prunes to the output token,
    is read at the last position only: its reply poolings are left out). The ids depend only
    on ``layers`` and ``poolings``, never on the case, so every case of a run holds the same
    set: a reply that could not be located (``reply`` None) gets NaN reply poolings, which a
    scorer reading them leaves unscored (:func:`finite_rows`)."""
    positions = max(rows[layer].shape[0] for layer in layers)
    ids: list[int] = []
    out: list[np.ndarray] = []
    for pooling in poolings:
        for layer in layers:
            r = rows[layer]
            if pooling != "last" and r.shape[0] < positions:  # read at the output token only
                continue
            if pooling == "last":
                vec = r[-1]
            else:
                span = r[reply[0]:reply[1]] if reply is not None else r[:0]
                if not len(span):
                    vec = np.full(r.shape[1], np.nan, dtype=np.float32)
                else:
                    vec = (span.mean(axis=0) if pooling == "reply_mean" else
                           span.max(axis=0) if pooling == "reply_max" else span[-1])
            ids.append(feature_id(pooling, layer))
            out.append(np.asarray(vec, dtype=np.float32))
    return ids, np.stack(out)


def finite_rows(x: np.ndarray) -> np.ndarray:
    """Which rows of ``[cases, hidden]`` hold a value (a reply pooling of a case whose reply
    was not found is NaN)."""
    return np.isfinite(np.asarray(x, dtype=float)).all(axis=1)


class FeatureFileError(WorkbenchError, ValueError):
    """A features folder that cannot be read (named, with what to do)."""


def prompt_sha(messages: Sequence[dict[str, str]]) -> str:
    """The sha256 of the judging messages, so a feature is never matched to another prompt."""
    blob = json.dumps([[m["role"], m["content"]] for m in messages], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class FeatureRecord:
    case_id: str
    strategy: str
    prompt_sha256: str
    model: str
    layers: tuple[int, ...]  # feature ids kept (:func:`feature_id`; 0..99: last token at that layer)
    prompt_tokens: int
    seconds: float
    file: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.case_id, self.strategy)


def features_dir(traces: Path) -> Path:
    """``run.jsonl`` -> ``run.features/`` (beside the run)."""
    traces = Path(traces)
    return traces.with_name(traces.name.removesuffix(".jsonl").removesuffix(".parquet")
                            + ".features")


def _file_name(case_id: str, strategy: str, sha: str) -> str:
    digest = hashlib.sha256(f"{case_id}\0{strategy}\0{sha}".encode()).hexdigest()[:20]
    return f"{digest}.npy"


def read_index(folder: Path) -> list[FeatureRecord]:
    """Every record of ``folder`` (the last line wins for a case captured twice)."""
    path = Path(folder) / INDEX
    if not path.is_file():
        return []
    out: dict[tuple[str, str], FeatureRecord] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            rec = FeatureRecord(**{**raw, "layers": tuple(raw["layers"])})
        except (ValueError, TypeError, KeyError) as exc:
            raise FeatureFileError(
                f"{path}:{n}: not a feature record ({exc}); remove the line and capture that "
                "case again"
            ) from None
        out[rec.key] = rec
    return list(out.values())


def append(folder: Path, rec: FeatureRecord, array: np.ndarray) -> None:
    """Write ``array`` under ``rec.file`` then add the index line (see the module doc)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / rec.file
    tmp = target.with_suffix(".tmp.npy")
    np.save(tmp, np.asarray(array, dtype=np.float16))
    os.replace(tmp, target)
    line = json.dumps({**asdict(rec), "layers": list(rec.layers)}, ensure_ascii=False)
    with open(folder / INDEX, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def new_record(case_id: str, strategy: str, sha: str, model: str, layers: Iterable[int],
               prompt_tokens: int, seconds: float) -> FeatureRecord:
    return FeatureRecord(case_id, strategy, sha, model, tuple(int(x) for x in layers),
                         int(prompt_tokens), round(float(seconds), 2),
                         _file_name(case_id, strategy, sha))


@dataclass
class FeatureSet:
    """Features of many cases, aligned: ``arrays[i]`` is ``[layers, hidden]`` of ``ids[i]``."""

    ids: list[str]
    layers: tuple[int, ...]
    arrays: np.ndarray  # [cases, layers, hidden] float32
    model: str

    def layer(self, index: int) -> np.ndarray:
        """``[cases, hidden]`` at hidden-state index ``index`` (one of ``layers``)."""
        return self.arrays[:, self.layers.index(index), :]

    def subset(self, ids: Sequence[str]) -> FeatureSet:
        pos = {c: i for i, c in enumerate(self.ids)}
        keep = [pos[c] for c in ids]
        return FeatureSet(list(ids), self.layers, self.arrays[keep], self.model)


def load_features(folder: Path, strategy: str | None = None,
                  ids: Sequence[str] | None = None) -> FeatureSet:
    """The features of ``folder`` (of one strategy; of ``ids`` in that order when given).
    Refuses a folder mixing models or layer sets: scores of two models are not comparable."""
    recs = [r for r in read_index(folder) if strategy is None or r.strategy == strategy]
    if not recs:
        raise FeatureFileError(
            f"{folder}: no captured features{f' for strategy {strategy}' if strategy else ''}; "
            "run `workbench features capture TRACES` first"
        )
    models = {r.model for r in recs}
    layer_sets = {r.layers for r in recs}
    if len(models) > 1 or len(layer_sets) > 1:
        raise FeatureFileError(
            f"{folder}: features of {len(models)} models / {len(layer_sets)} layer sets; "
            "capture each model's features into its own folder"
        )
    by_id = {r.case_id: r for r in recs}
    order = list(ids) if ids is not None else [r.case_id for r in recs]
    missing = [c for c in order if c not in by_id]
    if missing:
        raise FeatureFileError(
            f"{folder}: no features for {len(missing)} case(s), e.g. {missing[0]!r}; capture "
            "them (the capture resumes) or leave those cases out"
        )
    arrays = np.stack([np.load(Path(folder) / by_id[c].file).astype(np.float32)
                       for c in order]) if order else np.zeros((0, 0, 0), np.float32)
    return FeatureSet(order, next(iter(layer_sets)), arrays, next(iter(models)))
