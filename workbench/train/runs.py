"""Run folders: configuration, metrics log, checkpoints and resumption.

A run folder holds::

    run.json                 kind (grpo | opd) and configuration, written at the start
    metrics.jsonl            one line per optimiser step (reward, KL, loss, ...)
    checkpoints/step-000010/ adapter (PEFT), optimizer.pt, state.json
    adapter/                 the final LoRA adapter

Resuming loads the newest checkpoint's adapter and optimiser and continues at the next
step; the data order and sampling seeds are functions of the step, so a resumed run draws
what the uninterrupted run would have drawn.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError

_STEP_DIR = re.compile(r"^step-(\d+)$")


class RunError(WorkbenchError, RuntimeError):
    """The run folder does not fit the request; the message says what to do."""


def checkpoints(run_dir: Path) -> list[tuple[int, Path]]:
    root = run_dir / "checkpoints"
    if not root.is_dir():
        return []
    return sorted((int(m.group(1)), p) for p in root.iterdir()
                  if (m := _STEP_DIR.match(p.name)) and (p / "state.json").is_file())


def start_run(run_dir: Path, kind: str, config: dict[str, Any], resume: bool) -> Path | None:
    """Create or reopen ``run_dir``; return the checkpoint to resume from (or None).

    Raises :class:`RunError` when the folder holds a run and ``resume`` is off (it would be
    overwritten), or when a resumed run's kind or configuration differ."""
    run_dir.mkdir(parents=True, exist_ok=True)
    meta = run_dir / "run.json"
    found = checkpoints(run_dir)
    if meta.is_file():
        old = json.loads(meta.read_text(encoding="utf-8"))
        if not resume:
            raise RunError(
                f"{run_dir} already holds a {old.get('kind')} run; pass --resume to continue "
                "it or choose a new --run-dir"
            )
        if old.get("kind") != kind:
            raise RunError(f"{run_dir} holds a {old.get('kind')} run, not {kind}; choose another --run-dir")
        changed = sorted(k for k in config if k not in ("max_steps",) and old["config"].get(k) != config[k])
        if changed:
            raise RunError(
                f"cannot resume {run_dir} with a different configuration ({', '.join(changed)}); "
                "use the original settings or a new --run-dir"
            )
    meta.write_text(json.dumps({"kind": kind, "config": config}, indent=2) + "\n", encoding="utf-8")
    if resume and found:
        return found[-1][1]
    if not resume:
        (run_dir / "metrics.jsonl").write_text("", encoding="utf-8")
    return None


def log_metrics(run_dir: Path, row: dict[str, Any]) -> None:
    with (run_dir / "metrics.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\n")


def truncate_metrics(run_dir: Path, after_step: int) -> None:
    """Drop metric rows past the resumed checkpoint (they are recomputed)."""
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        return
    rows = [r for r in read_metrics(run_dir) if int(r.get("step", 0)) <= after_step]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def read_metrics(run_dir: str | Path) -> list[dict[str, Any]]:
    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by an interrupted run
    return rows


def save_checkpoint(run_dir: Path, step: int, model: Any, optimizer: Any, state: dict[str, Any]) -> Path:
    import torch

    path = run_dir / "checkpoints" / f"step-{step:06d}"
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(path))
    torch.save(optimizer.state_dict(), path / "optimizer.pt")
    # state.json last: a checkpoint without it is incomplete and ignored on resume.
    (path / "state.json").write_text(json.dumps({"step": step, **state}, indent=2) + "\n", encoding="utf-8")
    return path


def load_checkpoint(path: Path, model: Any, optimizer: Any) -> dict[str, Any]:
    import torch
    from peft import set_peft_model_state_dict
    from peft.utils import load_peft_weights

    set_peft_model_state_dict(model, load_peft_weights(str(path), device="cpu"))
    optimizer.load_state_dict(torch.load(path / "optimizer.pt", weights_only=True))
    return json.loads((path / "state.json").read_text(encoding="utf-8"))


DEFAULT_RUNS_ROOT = Path(".workbench") / "train"


EVALUATION = "evaluation.json"


def save_evaluation(run_dir: str | Path, part: str, figures: dict[str, Any]) -> None:
    """Keep before/after figures of the trained model on one case set (``part``) in the run
    folder, beside the others already there (``bench/keyworder_gain.py --save``)."""
    path = Path(run_dir) / EVALUATION
    data = read_evaluation(run_dir)
    data[part] = figures
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    tmp.replace(path)


def read_evaluation(run_dir: str | Path) -> dict[str, Any]:
    """``{part: {"before": {...}, "after": {...}, ...}}``; empty when there is none or it is
    unreadable (a half-edited file must not hide the run)."""
    try:
        data = json.loads((Path(run_dir) / EVALUATION).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def evaluation_rows(run_dir: str | Path) -> list[dict[str, Any]]:
    """One row per case set and side (before / after) for a table."""
    return [{"cases": part, "model": side, "n": f.get("cases"),
             "gold rules in context": f.get("gold_share"),
             "every gold rule in context": f.get("all_gold_in_context"),
             "context tokens": f.get("context_tokens"), "failed": f.get("failed")}
            for part, figures in read_evaluation(run_dir).items() for side in ("before", "after")
            if isinstance(f := figures.get(side) if isinstance(figures, dict) else None, dict)]


def list_runs(root: str | Path) -> list[dict[str, Any]]:
    """Summaries of the run folders under ``root`` (``root`` itself when it is one): name,
    kind, steps done of total, the last reward / KL / verdict accuracy, and whether the
    final adapter exists. Unreadable ``run.json`` files are reported, not raised."""
    base = Path(root)
    if not base.is_dir():
        return []
    folders = [base] if (base / "run.json").is_file() else sorted(
        p for p in base.iterdir() if (p / "run.json").is_file()
    )
    out = []
    for folder in folders:
        try:
            meta = json.loads((folder / "run.json").read_text(encoding="utf-8"))
            kind = str(meta.get("kind", "?"))
        except (OSError, json.JSONDecodeError, AttributeError):
            kind = "unreadable run.json"
        rows = read_metrics(folder)
        last = rows[-1] if rows else {}
        out.append({
            "run": folder.name,
            "kind": kind,
            "steps": int(last.get("step", 0)),
            "total steps": int(last.get("total_steps", 0)),
            "reward (last)": last.get("reward_mean"),
            "KL (last)": last.get("kl"),
            "verdict accuracy (last)": last.get("verdict_accuracy"),
            "adapter": (folder / "adapter" / "adapter_config.json").is_file(),
            "path": str(folder),
        })
    return out
