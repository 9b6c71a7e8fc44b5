"""Extraction quality against the hand-built demo graphs (issue 14's BEFORE and AFTER).

Prints, per demo SKILL, rule precision/recall and edge precision/recall/F1 over matched rule
pairs (``workbench extract evaluate``), for:

- ``v1``: the embedded model's extraction before issue 14 (``fixtures/demo/extracted/v1``);
- ``v1 + filter + cues``: the same rules with the non-rule filter, and as edges only the
  deterministic text cues (direct ones, plus every proposal as if an author accepted it):
  what the text alone gives, with no model edge;
- ``quotes``: issue 14's first pass, the quoting extractor (prompt ``extract_v1``, the model
  copies each rule's sentence) with the non-rule filter and cues (``extracted/quotes``);
- ``now``: the current recorded extraction (``fixtures/demo/extracted``: the sentence extractor,
  prompt ``units_v1``), edges as extracted (proposals not counted), and with its proposals
  accepted.

No model is called. ``--path-credit`` also counts edges a reference path connects.

    .venv/bin/python bench/extract_quality.py [--path-credit]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.extract.cues import find_candidates  # noqa: E402
from workbench.extract.evaluate import evaluate_skill  # noqa: E402
from workbench.extract.nonrules import split_non_rules  # noqa: E402
from workbench.graph import Edge, PolicyIndex, RuleGraph, SkillGraph  # noqa: E402
from workbench.skill.document import parse_skill  # noqa: E402

DEMO = ROOT / "fixtures" / "demo"
# merchant-order-refund was first extracted after the issue-14 changes: a held-out check of
# choices made on the other two (no v1 or quotes extraction of it).
SKILLS = ("airline-policy", "retail-policy", "merchant-order-refund")


def cue_only(skill: SkillGraph) -> tuple[SkillGraph, int]:
    kept, _ = split_non_rules(skill.source, list(skill.graph.rules.values()))
    found = find_candidates(parse_skill(skill.source, f"{skill.name}/SKILL.md"), kept)
    direct = sum(c.direct for c in found)
    graph = RuleGraph(kept, [Edge(c.source, c.target, provenance=c.kind) for c in found])
    return SkillGraph(skill.name, skill.description, skill.source, graph), direct


def accepted(skill: SkillGraph) -> SkillGraph:
    return SkillGraph(skill.name, skill.description, skill.source,
                      RuleGraph(skill.graph.rules.values(), [*skill.graph.edges, *skill.proposed]))


def line(label: str, name: str, skill: SkillGraph, reference: SkillGraph, path_credit: bool) -> str:
    f = evaluate_skill(skill, reference, path_credit).figures()

    def fmt(k: str) -> str:
        return "  n/a" if f[k] is None else f"{f[k]:.2f}"

    return (f"{name:15} {label:28} rules {len(skill.graph.rules):3} edges {len(skill.graph.edges):3}  "
            f"rule P {fmt('rule_precision')} R {fmt('rule_recall')}  "
            f"edge P {fmt('edge_precision')} R {fmt('edge_recall')} F1 {fmt('edge_f1')}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--path-credit", action="store_true")
    args = parser.parse_args()
    reference = PolicyIndex.load(DEMO / "index.json")
    v1 = PolicyIndex.load(DEMO / "extracted" / "v1" / "index.embedded.json")
    quotes = PolicyIndex.load(DEMO / "extracted" / "quotes" / "index.embedded.json")
    now = PolicyIndex.load(DEMO / "extracted" / "index.embedded.json")
    for name in SKILLS:
        ref = reference[name]
        if name in v1.skills:
            print(line("v1 (before)", name, v1[name], ref, args.path_credit))
            cues, direct = cue_only(v1[name])
            print(line(f"v1 + filter + cues ({direct} direct)", name, cues, ref, args.path_credit))
        if name in quotes.skills:
            print(line("quotes (edges as extracted)", name, quotes[name], ref, args.path_credit))
        if name in now.skills:
            print(line("now (edges as extracted)", name, now[name], ref, args.path_credit))
            print(line("now + proposals accepted", name, accepted(now[name]), ref, args.path_credit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
