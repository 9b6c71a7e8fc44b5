"""The audit fixtures the audit, scaling and training tests read, named and loaded in one place
rather than each test module spelling out the same paths and loaders."""

from __future__ import annotations

from pathlib import Path

from workbench.audit import AuditCase, AuditIndex, load_cases
from workbench.graph import PolicyIndex

ROOT = Path(__file__).resolve().parents[1]
AUDIT_FIXTURES = ROOT / "fixtures" / "audit"  # the small merchant policy and its cases
DEMO = ROOT / "fixtures" / "demo"  # the demo policy index, cases and recorded traces
COMPLIBENCH_SAMPLE = AUDIT_FIXTURES / "complibench" / "airlines"  # a few CompliBench conversations


def merchant_index() -> AuditIndex:
    return AuditIndex(PolicyIndex.load(AUDIT_FIXTURES / "merchant_index.json"))


def merchant_cases() -> list[AuditCase]:
    return load_cases(AUDIT_FIXTURES / "merchant_cases.jsonl")


def demo_index() -> PolicyIndex:
    return PolicyIndex.load(DEMO / "index.json")


def long_sample(folder: Path) -> tuple[AuditIndex, list[AuditCase]]:
    """The CompliBench sample imported into ``folder`` with its long policy: index and cases."""
    from workbench.audit.importers.complibench import import_complibench

    import_complibench(COMPLIBENCH_SAMPLE, folder, long=True)
    return AuditIndex(PolicyIndex.load(folder / "index.json")), load_cases(folder / "cases.jsonl")
