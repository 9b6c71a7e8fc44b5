"""Four writer processes on every write path at once (issue #15, defect 3): nothing lost,
nothing duplicated, no crash.

One process per writer (forked from a server that has the imports: ``fork_context``) runs
every path in turn; a barrier lines the four up before
each path so they really hit the same rows together: ``import-cases`` into one dataset,
``import`` of versions of one SKILL, ``audit --store`` into one dataset, review decisions,
annotation labels, and the Graph page's save (every writer edits version 1: exactly one may
win, the others must be refused, never silently applied). The database is fresh, so the
writers also race to create the schema.
"""

from __future__ import annotations

import json
import traceback
from pathlib import Path

import pytest

from workbench.identity.roles import COMMAND_LINE

WRITERS = 4
VERSIONS_PER_WRITER = 2
PER_WRITER = 20  # decisions and labels
FIX = Path(__file__).resolve().parent.parent / "fixtures" / "audit"


def _cases_file(folder: Path, writer: int) -> Path:
    """Ten cases: five shared by every writer (same ids, same content) and five of its own."""
    path = folder / f"cases-{writer}.jsonl"
    ids = [f"shared-{i}" for i in range(5)] + [f"w{writer}-{i}" for i in range(5)]
    path.write_text("".join(json.dumps({"id": cid, "model_response": f"reply {cid}"}) + "\n"
                            for cid in ids), encoding="utf-8")
    return path


def _index_file(folder: Path, base: dict, writer: int, n: int) -> Path:
    data = json.loads(json.dumps(base))
    data["skills"][0]["description"] = f"written by {writer}, edit {n}"
    path = folder / f"index-{writer}-{n}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def writer(number: int, url: str, folder: str, base_index: dict, barrier, results) -> None:
    """One writer process; reports ``(number, outcome of the graph save, error text)``."""
    import contextlib
    import io
    import os

    for name in [k for k in os.environ if k.startswith("WORKBENCH_")]:
        del os.environ[name]  # the fork server's environment is whatever it started with
    os.environ["WORKBENCH_DB"] = url
    out = Path(folder)
    graph_outcome, failure = "", ""
    try:
        from store import repo
        from store.annotation import add_labels
        from store.db import make_engine
        from store.review import add_decisions
        from workbench.annotation.labels import RULE_CORRECTNESS, Label
        from workbench.cli import main
        from workbench.graph.editing import apply_edits
        from workbench.review.queue import ReviewDecision

        quiet = contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO())

        def cli(*args: str) -> None:
            with quiet[0], quiet[1]:
                code = main(list(args))
            assert code == 0, f"workbench {' '.join(args)} exited {code}"

        barrier.wait()
        cli("import-cases", str(_cases_file(out, number)), "--dataset", "ds")
        barrier.wait()
        for n in range(VERSIONS_PER_WRITER):
            cli("import", str(_index_file(out, base_index, number, n)))
        cli("import", str(out / "edited.json"))  # the same content from everyone: one version
        barrier.wait()
        cli("audit", "--index", str(FIX / "merchant_index.json"), "--cases",
            str(FIX / "merchant_cases.jsonl"), "--no-judge", "--strategy", "cdg",
            "--out", str(out / f"traces-{number}.jsonl"), "--store", "audited",
            "--run-id", f"run-{number}")
        engine = make_engine(url)
        barrier.wait()
        add_decisions(engine, [ReviewDecision("audited", "run-0", f"c{i}", "cdg", f"rev{number}",
                                              "confirm") for i in range(PER_WRITER)], actor=COMMAND_LINE)
        barrier.wait()
        add_labels(engine, [Label(f"R{i}", RULE_CORRECTNESS, f"ann{number}", "correct")
                            for i in range(PER_WRITER)], actor=COMMAND_LINE)
        # The Graph page's save: every writer edits version 1 of "edited".
        skill = repo.load_skill(engine, "edited", 1)
        rules = [{"id": r.id, "condition": r.condition, "action": r.action,
                  "modality": r.modality} for r in skill.graph.rules.values()]
        rules[0]["action"] = f"verify identity (writer {number})"
        edges = [{"source": e.source, "target": e.target} for e in skill.graph.edges]
        edited = apply_edits(skill, rules, edges).skill
        barrier.wait()
        try:
            saved = repo.save_skill(engine, edited, author=f"w{number}", base_version=1, actor=COMMAND_LINE)
            graph_outcome = f"saved v{saved.version}"
        except repo.StaleVersion:
            graph_outcome = "refused"
        engine.dispose()
    except BaseException:  # reported to the test, which names the writer
        failure = traceback.format_exc()
        barrier.abort()  # the others must not wait for a writer that is gone
    results.put((number, graph_outcome, failure))


@pytest.mark.slow
def test_four_writer_processes_on_every_write_path_lose_nothing(
        tmp_path, store_url, refund_index_data, fork_context):
    from store import repo
    from store.annotation import labels_for
    from store.audit_repo import load_cases, load_traces
    from store.db import make_engine
    from store.review import decisions_for
    from workbench.annotation.labels import RULE_CORRECTNESS

    url = store_url  # SQLite and PostgreSQL
    edited = json.loads(json.dumps(refund_index_data))
    edited["skills"][0]["name"] = "edited"
    context = fork_context
    barrier = context.Barrier(WRITERS, timeout=120)
    results = context.Queue()
    procs = [context.Process(target=writer, args=(k, url, str(tmp_path), refund_index_data,
                                                  barrier, results)) for k in range(WRITERS)]
    (tmp_path / "edited.json").write_text(json.dumps(edited), encoding="utf-8")
    for p in procs:
        p.start()
    reports = sorted(results.get(timeout=300) for _ in procs)
    for p in procs:
        p.join(60)
    failures = [f"writer {n}:\n{text}" for n, _, text in reports if text]
    assert not failures, "\n".join(failures)

    engine = make_engine(url)
    # import-cases: the union of every writer's cases, each id once.
    ids = sorted(c.id for c in load_cases(engine, "ds"))
    assert ids == sorted({f"shared-{i}" for i in range(5)}
                         | {f"w{k}-{i}" for k in range(WRITERS) for i in range(5)})
    # import: every writer's versions kept, numbered 1..8 without gaps or collisions.
    versions = repo.versions(engine, "refunds")
    assert [v.version for v in versions] == list(range(1, WRITERS * VERSIONS_PER_WRITER + 1))
    assert {v.description for v in versions} == {
        f"written by {k}, edit {n}" for k in range(WRITERS) for n in range(VERSIONS_PER_WRITER)}
    # audit --store: four runs of four traces, none twice.
    merchant = sorted(json.loads(line)["id"] for line in
                      (FIX / "merchant_cases.jsonl").read_text(encoding="utf-8").splitlines())
    for k in range(WRITERS):
        assert sorted(t.id for t in load_traces(engine, run_id=f"run-{k}")) == merchant
    assert len(load_traces(engine, dataset="audited")) == WRITERS * len(merchant)
    # decisions and labels: every record of every writer.
    assert len(decisions_for(engine, "audited")) == WRITERS * PER_WRITER
    assert len(labels_for(engine, RULE_CORRECTNESS)) == WRITERS * PER_WRITER
    # Graph save from version 1: one writer wins, the others are refused; none is applied silently.
    outcomes = sorted(o for _, o, _ in reports)
    assert outcomes == ["refused"] * (WRITERS - 1) + ["saved v2"]
    assert [v.version for v in repo.versions(engine, "edited")] == [1, 2]
    engine.dispose()
