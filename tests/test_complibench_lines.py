"""``import-complibench`` never writes a cases file ``import-cases`` cannot read (issue 54 item
5): each case carries every turn before it, so long messages in a long conversation made
52 MB lines that ``import-cases`` then refused. The import now refuses first, nothing
written, naming the case and its conversation. The line limit is made small here (the real
one is 32 MiB) so the test writes kilobytes, not gigabytes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from workbench.audit.importers import complibench
from workbench.cli import main
from workbench.inputs import MAX_LINE_BYTES

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "audit" / "complibench" / "airlines"


def test_a_case_too_long_for_import_cases_is_refused_with_its_name(tmp_path, monkeypatch, capsys):
    src = tmp_path / "in"
    shutil.copytree(SAMPLE, src)
    first = sorted(src.glob("conversation_*.json"))[0]
    data = json.loads(first.read_text(encoding="utf-8"))
    for message in data["message_list"]:
        message["content"] = (message.get("content") or "") + " padding" * 1000  # ~8 KB a turn
    first.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(complibench, "MAX_LINE_BYTES", 60_000)
    out = tmp_path / "out"
    assert main(["import-complibench", str(src), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert first.name in err and f"case {first.stem}-t" in err and "60,000 bytes" in err
    assert "nothing was written" in err and not out.exists()
    # At the real limit the same folder imports, and import-cases reads what it wrote.
    monkeypatch.setattr(complibench, "MAX_LINE_BYTES", MAX_LINE_BYTES)
    assert main(["import-complibench", str(src), "--out", str(out)]) == 0
    db = f"sqlite:///{tmp_path / 'w.db'}"
    assert main(["import-cases", str(out / "cases.jsonl"), "--dataset", "cb", "--db", db]) == 0
