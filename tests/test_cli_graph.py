from __future__ import annotations

import json

import networkx as nx
import pytest

from workbench.cli import main
from workbench.graph import PolicyIndex


@pytest.fixture
def index_file(tmp_path, refund_index_data):
    path = tmp_path / "index.json"
    path.write_text(json.dumps(refund_index_data))
    return path


def test_stats_json(index_file, capsys):
    assert main(["graph", "stats", str(index_file), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["skills"]["refunds"]["rules"] == 4
    assert out["skills"]["refunds"]["max_depth"] == 2
    assert out["total"]["edges"] == 3


def test_stats_table(index_file, capsys):
    assert main(["graph", "stats", str(index_file)]) == 0
    out = capsys.readouterr().out
    assert "refunds" in out and "TOTAL" in out and "0.750" in out
    assert "tokenizer: cl100k" in out


def test_stats_totals_are_table9s(tmp_path, refund_index_data, capsys):
    # a second SKILL of depth 0 with a 2-cycle: mean depth (2 + 0) / 2 = 1.0, 1 cyclic SKILL
    data = json.loads(json.dumps(refund_index_data))
    loop = json.loads(json.dumps(data["skills"][0]))
    loop["name"] = "loop"
    ids = [r["id"] for r in loop["rules"]][:2]
    loop["rules"] = loop["rules"][:2]
    loop["edges"] = [{"source": ids[0], "target": ids[1]}, {"source": ids[1], "target": ids[0]}]
    data["skills"].append(loop)
    path = tmp_path / "two.json"
    path.write_text(json.dumps(data))
    assert main(["graph", "stats", str(path), "--json"]) == 0
    total = json.loads(capsys.readouterr().out)["total"]
    assert total["skills"] == 2 and total["mean_depth"] == pytest.approx(1.0)
    assert total["skills_with_cycle"] == 1 and total["edges"] == 5
    assert total["tokenizer"] == "cl100k"


def test_closure_json_and_text(index_file, capsys):
    assert main(["graph", "closure", str(index_file), "--skill", "refunds", "--seeds", "R2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["closure"] == ["R2", "R1"] and out["tokens"] > 0
    assert main(["graph", "closure", str(index_file), "--skill", "refunds", "--seeds", "R3,R1"]) == 0
    assert "R3, R1, R2, R4" in capsys.readouterr().out


def test_closure_explain_gives_each_rules_require_path(index_file, capsys):
    args = ["graph", "closure", str(index_file), "--skill", "refunds", "--seeds", "R3"]
    assert main([*args, "--explain"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == ["  R3: seed R3", "  R2: seed R3 → R2", "  R4: seed R3 → R4",
                         "  R1: seed R3 → R2 → R1"]
    assert main([*args, "--explain", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["paths"]["R1"] == ["R3", "R2", "R1"] and list(out["paths"]) == out["closure"]
    assert main([*args, "--json"]) == 0
    assert "paths" not in json.loads(capsys.readouterr().out)  # only when asked


def test_closure_errors_say_what_to_do(index_file, capsys):
    assert main(["graph", "closure", str(index_file), "--skill", "nope", "--seeds", "R1"]) == 2
    assert "known: refunds" in capsys.readouterr().err
    assert main(["graph", "closure", str(index_file), "--skill", "refunds", "--seeds", "X9"]) == 2
    err = capsys.readouterr().err
    assert "unknown rule id(s) in SKILL 'refunds': X9" in err
    assert "List rule ids with `workbench graph export" in err and "--skill" not in err
    assert main(["graph", "closure", str(index_file), "--skill", "refunds", "--seeds", "R3",
                 "--budget", "5"]) == 3
    assert "over the budget of 5" in capsys.readouterr().err


def test_bad_index_file_exits_nonzero_with_locations(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "other", "skills": []}))
    assert main(["graph", "stats", str(bad)]) == 2
    assert "unknown format 'other'" in capsys.readouterr().err
    assert main(["graph", "stats", str(tmp_path / "missing.json")]) == 2
    assert "no such index file" in capsys.readouterr().err


def test_export_graphml_and_json(index_file, tmp_path, refund_index_data):
    out = tmp_path / "g.graphml"
    assert main(["graph", "export", str(index_file), "--format", "graphml", "--out", str(out)]) == 0
    g = nx.read_graphml(out)
    assert set(g.nodes) == {f"refunds::R{i}" for i in range(1, 5)}
    assert g.has_edge("refunds::R3", "refunds::R2")
    assert g.nodes["refunds::R4"]["source_text"] == "Never refund to a different payment method."
    out_json = tmp_path / "g.json"
    assert main(["graph", "export", str(index_file), "--format", "json", "--out", str(out_json)]) == 0
    assert PolicyIndex.load(out_json).to_dict() == refund_index_data


def test_import_then_export_store(index_file, tmp_path, capsys, refund_index_data):
    db = f"sqlite:///{tmp_path / 'w.db'}"
    assert main(["import", str(index_file), "--db", db]) == 0
    assert "refunds: version 1 (new version)" in capsys.readouterr().out
    assert main(["import", str(index_file), "--db", db]) == 0
    assert "unchanged" in capsys.readouterr().out
    out = tmp_path / "back.json"
    assert main(["export-store", "--db", db, "--out", str(out)]) == 0
    assert PolicyIndex.load(out).to_dict() == refund_index_data
    assert main(["export-store", "--db", db, "--out", str(out), "--skill", "ghost"]) == 2


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "usage: workbench" in capsys.readouterr().out
