"""The Start panel's line on what the workbench decides now, from a stored dataset's decided
records (``pages._audit_cache.verdicts``: the labels every page shows). Page-private: it
reads the store."""

from __future__ import annotations

from sqlalchemy.engine import Engine

from components.start_here import decided_line
from pages import _audit_cache as audit_cache
from store import audit_repo
from workbench.audit.trace import latest_per_case
from workbench.vocabulary import label_violation
from workbench.words import BUILTIN_TERM, decided_by, help_for

PREFERRED = "demo"  # the dataset `make demo` stores


def start_summary(eng: Engine) -> tuple[str, str | None]:
    """:func:`components.start_here.decided_line` of the demo dataset when stored, else of the
    first stored dataset with traces, naming the setting that decided it; with the glossary's
    words for that setting (the line's tooltip). Empty when none."""
    datasets = audit_repo.trace_datasets(eng)
    if not datasets:
        return "", None
    dataset = PREFERRED if PREFERRED in datasets else datasets[0]
    verdicts = audit_cache.verdicts(eng, dataset)
    newest = latest_per_case(list(verdicts.values()), key=lambda v: (v.case, v.strategy))
    gold = {cid: label_violation(c.label) for cid, c in audit_cache.cases(eng, dataset).items()}
    decided = [v for v in newest if v.label != "review" and gold.get(v.case) is not None]
    agree = sum(v.violation == gold[v.case] for v in decided)
    versions = {v.setting_version for v in newest if v.decided is not None}
    why = help_for(BUILTIN_TERM if 0 in versions else "decision setting")
    return decided_line(dataset, [v.label for v in newest], agree, len(decided),
                        decided_by(versions)), why
