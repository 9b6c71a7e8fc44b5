"""The demo as ``make demo`` stores it, with the rules found for its score-decided verdicts:
the SKILLs, the 21 cases, the embedded judge's traces with their activations, the decision
setting fitted on CompliBench airlines (``fixtures/demo/decision_setting.json``), and
``workbench verdicts --explain`` replayed from the real model's answers
(``fixtures/recordings/demo_explain.jsonl``). For the tests of every surface that reads the
decided record (page, browser and command tests); no model runs."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo"
RECORDING = ROOT / "fixtures" / "recordings" / "demo_explain.jsonl"
DATASET, RUN = "demo", "demo-cdg"


def seed_decided_demo(db_url: str, monkeypatch=None) -> None:
    """Fill the database at ``db_url`` (SKILLs and cases included) as described above."""
    import os

    from store import audit_repo, repo
    from store.db import make_engine
    from workbench.audit import load_cases
    from workbench.cli import main
    from workbench.graph import PolicyIndex
    from workbench.identity.roles import COMMAND_LINE

    eng = make_engine(db_url)
    if not repo.skill_names(eng):
        repo.import_index(eng, PolicyIndex.load(DEMO / "index.json"), actor=COMMAND_LINE)
    if not audit_repo.load_cases(eng, DATASET):
        audit_repo.save_cases(eng, DATASET, load_cases(DEMO / "cases.jsonl"), actor=COMMAND_LINE)
    eng.dispose()
    env = {"WORKBENCH_DB": db_url, "WORKBENCH_LLM_MODE": "replay",
           "WORKBENCH_LLM_RECORDINGS": str(RECORDING)}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        for argv in (["import-traces", str(DEMO / "traces_cdg.jsonl"), "--dataset", DATASET,
                      "--run-id", RUN],
                     ["calibrate", "--from-setting", str(DEMO / "decision_setting.json"),
                      "--save", f"dataset:{DATASET}", "--note", "as make demo saves it"],
                     ["verdicts", "--dataset", DATASET, "--explain", "--no-cache"]):
            assert main(argv) == 0, argv
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
