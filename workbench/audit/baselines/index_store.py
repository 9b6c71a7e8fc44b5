"""What the library baselines (LightRAG, GraphRAG) share about their per-SKILL indexes.

An index lives in ``<root>/<library>/<skill>-<key>/`` where the key hashes the SKILL source,
the model, the embedder and the library version: change any of them and a new index is
built, never a stale one reused. What building it cost (every run appended, a resumed index
has several) is kept in ``cost.json`` beside it, so it can be shown next to the CDG
extraction cost of the same SKILL (``workbench.evaluate.baseline_costs``).

Retrieved chunks are verbatim slices of the SKILL source; ``locate`` finds where, so gold
coverage by span works for these baselines as for bm25/dense.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from workbench.settings import BASELINES_DIR

COST_FILE = "cost.json"


def default_root(library: str) -> Path:
    """``.workbench/baselines/<library>`` (or under ``$WORKBENCH_BASELINES_DIR``)."""
    return Path(BASELINES_DIR.read() or Path(".workbench") / "baselines") / library


def index_key(source: str, model: str, embedder: str, version: str) -> str:
    """What an index depends on, hashed: a change to any part means a new index."""
    parts = [source_sha256(source), model, embedder, version]
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:16]


def source_sha256(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def slug(name: str) -> str:
    """A SKILL name as a folder name."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:60] or "skill"


def locate(source: str, chunk: str) -> tuple[int, int] | None:
    """Where ``chunk`` (libraries strip their chunks) sits in ``source``, or None."""
    text = chunk.strip()
    if not text:
        return None
    at = source.find(text)
    return (at, at + len(text)) if at >= 0 else None


@dataclass
class IndexRun:
    """One indexing run (a resumed index has several)."""

    started_at: float
    wall_s: float
    calls: int
    cached_calls: int
    prompt_tokens: int
    completion_tokens: int
    status: str
    failed_calls: int = 0  # live calls that failed; their tokens are in the totals (spent)


def _summed(name: str) -> property:
    """A read-only total of one :class:`IndexRun` field over an index's runs."""
    return property(lambda cost: sum(getattr(r, name) for r in cost.runs),
                    doc=f"{name} summed over the runs")


@dataclass
class IndexCost:
    """What building one SKILL's baseline index cost, summed over its runs."""

    skill: str
    key: str
    library_version: str
    model: str
    embedder: str
    source_sha256: str
    source_tokens: int
    runs: list[IndexRun] = field(default_factory=list)

    calls = _summed("calls")
    failed_calls = _summed("failed_calls")
    prompt_tokens = _summed("prompt_tokens")
    completion_tokens = _summed("completion_tokens")
    wall_s = _summed("wall_s")

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(calls=self.calls, failed_calls=self.failed_calls, prompt_tokens=self.prompt_tokens,
                   completion_tokens=self.completion_tokens, wall_s=round(self.wall_s, 3))
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> IndexCost:
        runs = [IndexRun(**r) for r in data.get("runs", [])]
        keep = {k: data[k] for k in ("skill", "key", "library_version", "model", "embedder",
                                     "source_sha256", "source_tokens")}
        return cls(**keep, runs=runs)


def run_from_usage(usage: list[Any], started_at: float, wall_s: float, status: str) -> IndexRun:
    """An :class:`IndexRun` from the gateway :class:`Usage` records of its model calls:
    calls the response cache answered are counted apart and cost no tokens; failed calls
    (``error`` set) count, with every attempt's tokens, because they were paid for."""
    return IndexRun(
        started_at=started_at, wall_s=round(wall_s, 3),
        calls=sum(1 for u in usage if not u.cached),
        cached_calls=sum(1 for u in usage if u.cached),
        prompt_tokens=sum(u.prompt_tokens for u in usage if not u.cached),
        completion_tokens=sum(u.completion_tokens for u in usage if not u.cached),
        status=status,
        failed_calls=sum(1 for u in usage if not u.cached and u.error),
    )


def booked(usage: list[Any], call: Callable[[], Any]) -> Any:
    """Make one gateway call and append its :class:`Usage` to ``usage``; a failed call's
    too (the gateway puts it on the error), because its tokens were paid for."""
    try:
        res = call()
    except Exception as exc:
        if getattr(exc, "usage", None) is not None:
            usage.append(exc.usage)
        raise
    usage.append(res.usage)  # list.append is atomic: calls may finish on several threads
    return res


def read_cost(folder: Path) -> IndexCost | None:
    path = folder / COST_FILE
    if not path.is_file():
        return None
    return IndexCost.from_json(json.loads(path.read_text(encoding="utf-8")))


def append_run(folder: Path, run: IndexRun, *, skill: str, source: str, library_version: str,
               model: str, embedder: str) -> IndexCost:
    """Add ``run`` to the folder's ``cost.json`` (created on the first run), atomically."""
    from workbench.llm.tokens import count_tokens

    cost = read_cost(folder) or IndexCost(
        skill, folder.name.rsplit("-", 1)[-1], library_version, model, embedder,
        source_sha256(source), count_tokens(source))
    cost.runs.append(run)
    tmp = folder / (COST_FILE + ".tmp")
    tmp.write_text(json.dumps(cost.to_json(), indent=1), encoding="utf-8")
    tmp.replace(folder / COST_FILE)
    return cost
