"""Issue 35 item 2: ``workbench import`` of a ``skillcdg/1`` file dropped its proposed edges
and the provenance of its edges ("No proposed edge is waiting", "Edges from: unknown (12)").
Every optional field of the format now round-trips through the store: file -> import ->
export-store -> the same file, and importing it again adds nothing."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from store import edge_decisions, repo
from workbench.cli import main
from workbench.graph import PolicyIndex
from workbench.identity.roles import COMMAND_LINE

ROOT = Path(__file__).resolve().parents[1]
SOURCE = "Verify the id. Check the fare. Refund to the card. Keep the receipt."


def full_index() -> dict:
    """A file using every optional field of ``skillcdg/1`` (and, beside them, a rule and an
    edge with none, which must come back without them)."""
    return {"format": "skillcdg/1", "skills": [{
        "name": "desk", "description": "front desk refunds", "source": SOURCE,
        "rules": [
            {"id": "V", "condition": "always", "action": "verify the id", "modality": "required",
             "spans": [{"start": 0, "end": 14}], "provenance": "model", "confidence": 0.9},
            {"id": "F", "condition": "a fare", "action": "check it", "modality": "required",
             "spans": [{"start": 15, "end": 30}], "provenance": "obligation", "confidence": 0.35},
            {"id": "C", "condition": "a refund", "action": "to the card", "modality": "permitted",
             "spans": [{"start": 31, "end": 50}, {"start": 51, "end": 67}]},
            {"id": "K", "condition": "always", "action": "keep the receipt",
             "modality": "prohibited", "spans": [], "provenance": "author"},
        ],
        "edges": [
            {"source": "F", "target": "V", "type": "require", "provenance": "procedure",
             "confidence": 0.9, "evidence": {"start": 15, "end": 20}, "note": "step 2 after 1"},
            {"source": "C", "target": "F", "type": "require"},
            {"source": "K", "target": "C", "type": "require", "provenance": "author",
             "confidence": 1.0},
        ],
        "proposed_edges": [
            {"source": "C", "target": "V", "type": "require", "provenance": "continuation",
             "confidence": 0.3, "evidence": {"start": 31, "end": 37}, "note": "follows"},
            {"source": "K", "target": "V", "type": "require", "provenance": "cross-reference"},
        ],
        "decisions": [
            {"source": "K", "target": "C", "decision": "accepted", "author": "otto",
             "at": "2025-03-01T09:30:00+00:00"},
            {"source": "V", "target": "K", "decision": "rejected", "author": "ann",
             "at": "2025-03-02T10:00:00+00:00"},
        ],
    }]}


def _keys(value: object) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_the_fixture_uses_every_field_the_reader_knows():
    """The round trip below covers the format only if its file uses every key the reader
    reads: a field added to workbench.graph.validation without a place here fails this test."""
    tree = ast.parse((ROOT / "workbench" / "graph" / "validation.py").read_text())
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            args = node.args
            if name == "get" and args and isinstance(args[0], ast.Constant):
                read.add(args[0].value)
            elif name in {"_str_field", "_objects", "_edges"} and len(args) > 1 \
                    and isinstance(args[1], ast.Constant):
                read.add(args[1].value)
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) \
                and any(isinstance(op, ast.In) for op in node.ops):
            read.add(node.left.value)
    read = {k for k in read if isinstance(k, str)}
    assert {"proposed_edges", "decisions", "evidence", "confidence", "note"} <= read
    assert read - _keys(full_index()) == set()


def test_every_optional_field_round_trips_through_the_store(engine):
    data = full_index()
    (saved,) = repo.import_index(engine, PolicyIndex.from_dict(data), actor=COMMAND_LINE)
    assert saved.created and saved.decisions_added == 2
    assert repo.export_index(engine).to_dict() == data
    # What the Graph page reads: sourced edges and the waiting proposals.
    skill = repo.load_skill(engine, "desk")
    assert {e.pair: e.provenance for e in skill.graph.edges} == {
        ("F", "V"): "procedure", ("C", "F"): "", ("K", "C"): "author"}
    assert [e.pair for e in skill.proposed] == [("C", "V"), ("K", "V")]
    assert edge_decisions.load_edge_decisions(engine, "desk").rejected == {("V", "K")}
    # The same file again: no new version, no verdict twice.
    (again,) = repo.import_index(engine, PolicyIndex.from_dict(data), actor=COMMAND_LINE)
    assert (again.created, again.version, again.decisions_added) == (False, 1, 0)
    assert len(repo.export_index(engine).to_dict()["skills"][0]["decisions"]) == 2


def test_a_file_without_optional_fields_exports_without_them(engine):
    data = full_index()
    skill = data["skills"][0]
    for key in ("proposed_edges", "decisions"):
        skill.pop(key)
    skill["rules"] = [{k: v for k, v in r.items() if k not in {"provenance", "confidence"}}
                      for r in skill["rules"]]
    skill["edges"] = [{k: e[k] for k in ("source", "target", "type")} for e in skill["edges"]]
    repo.import_index(engine, PolicyIndex.from_dict(data), actor=COMMAND_LINE)
    assert repo.export_index(engine).to_dict() == data


def test_import_then_export_store_on_the_command_line(tmp_path, capsys):
    given = tmp_path / "in.json"
    given.write_text(json.dumps(full_index()))
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    assert main(["import", str(given), "--db", db]) == 0
    said = capsys.readouterr().out
    assert ("desk: version 1 (new version): 4 rules, 3 edges (2 with provenance), "
            "2 proposed edges, 2 new verdicts") in said
    out = tmp_path / "out.json"
    assert main(["export-store", "--out", str(out), "--db", db]) == 0
    assert json.loads(out.read_text()) == full_index()


def test_an_edit_after_import_keeps_the_imported_provenance(engine):
    """A version saved by an edit (no trust of its own) reads the imported version's."""
    from workbench.graph.editing import apply_edits

    repo.import_index(engine, PolicyIndex.from_dict(full_index()), actor=COMMAND_LINE)
    skill = repo.load_skill(engine, "desk")
    rows = [{"id": r.id, "condition": r.condition, "action": r.action, "modality": r.modality}
            for r in skill.graph.rules.values()]
    edges = [{"source": e.source, "target": e.target} for e in skill.graph.edges]
    result = apply_edits(skill, rows, [*edges, {"source": "K", "target": "F"}])
    v2 = repo.save_skill(engine, result.skill, base_version=1, actor=COMMAND_LINE).version
    back = repo.load_skill(engine, "desk", v2)
    assert {e.pair: e.provenance for e in back.graph.edges}[("F", "V")] == "procedure"
    assert {e.pair: e.provenance for e in back.graph.edges}[("K", "F")] == "author"
    assert [e.pair for e in back.proposed] == [("C", "V"), ("K", "V")]
    assert back.graph.rules["F"].provenance == "obligation"
