"""Indexing cost of a baseline beside the CDG extraction cost of the same SKILL.

A user choosing a method pays one of them before the first audit, so both are shown in the
same units: model calls, prompt and output tokens (as the model's server counted them) and
wall time. The CDG side comes from extraction reports (``workbench extract`` writes them;
the demo's are ``fixtures/demo/extracted/reports.json``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from workbench.audit.baselines.index_store import IndexCost

COLUMNS = ("calls", "failed_calls", "prompt_tokens", "completion_tokens", "wall_s")


def cost_rows(costs: Iterable[IndexCost], reports: Iterable[Mapping[str, Any]] = ()) -> list[dict]:
    """One row per SKILL: the baseline's cost and, when a report of the same SKILL is given,
    the CDG extraction's (``cdg_*``; ``same_source`` says whether both read the same text)."""
    by_skill = {str(r.get("skill")): r for r in reports}
    rows = []
    for c in costs:
        row: dict[str, Any] = {"skill": c.skill, "source_tokens": c.source_tokens,
                               "model": c.model, "runs": len(c.runs)}
        row.update({k: getattr(c, k) for k in COLUMNS})
        rep = by_skill.get(c.skill)
        if rep is not None:
            row.update(cdg_calls=rep.get("model_calls"), cdg_prompt_tokens=rep.get("prompt_tokens"),
                       cdg_completion_tokens=rep.get("completion_tokens"),
                       cdg_wall_s=rep.get("wall_s"),
                       same_source=rep.get("source_sha256") == c.source_sha256)
        rows.append(row)
    return rows


def format_cost_rows(rows: list[dict], strategy: str = "lightrag") -> str:
    """A plain-text table: per SKILL, the baseline's cost and the CDG extraction's."""
    head = ["skill", "tokens", "method", "calls", "prompt tok", "output tok", "wall s"]
    table = [head]
    for r in rows:
        calls = str(r["calls"]) + (f" ({r['failed_calls']} failed)" if r.get("failed_calls") else "")
        table.append([r["skill"], str(r["source_tokens"]), strategy, calls,
                      str(r["prompt_tokens"]), str(r["completion_tokens"]), f"{r['wall_s']:.1f}"])
        if "cdg_calls" in r:
            note = "" if r["same_source"] else " (other source text)"
            table.append(["", "", "cdg" + note, str(r["cdg_calls"]), str(r["cdg_prompt_tokens"]),
                          str(r["cdg_completion_tokens"]), f"{float(r['cdg_wall_s'] or 0):.1f}"])
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
                     for row in table)
