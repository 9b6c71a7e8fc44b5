"""The Ray Data engine: same traces as the local engine; an interrupted run resumes exactly.

One local Ray session (2 CPUs) serves the whole module: starting Ray costs seconds.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray Data is not installed: pip install 'ray[data]' (dev extra)")

from workbench.audit.cases import load_cases  # noqa: E402
from workbench.audit.pipeline import AuditOptions  # noqa: E402
from workbench.audit.policy import AuditIndex  # noqa: E402
from workbench.audit.ray_engine import RayEngine  # noqa: E402
from workbench.audit.runner import run_audit  # noqa: E402
from workbench.audit.trace_file import read_traces  # noqa: E402
from workbench.graph import PolicyIndex  # noqa: E402
from workbench.llm import Gateway, load_config  # noqa: E402
from workbench.llm.fake_server import FakeChatServer, reply, role_env  # noqa: E402

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "audit"
N = 12


@pytest.fixture(scope="module")
def ray_session():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def judge():
    def verdict(body: dict) -> object:
        # Deterministic per prompt, so both engines must give the same verdicts and reasons.
        text = body["messages"][-1]["content"]
        return reply({"violation": False, "violated_rules": [],
                      "evidence": [], "reason": f"seen {len(text)} chars"})

    with FakeChatServer(default=verdict) as srv:
        yield srv


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> Path:
    base = [json.loads(line) for line in (FIX / "merchant_cases.jsonl").read_text().splitlines()]
    path = tmp_path_factory.mktemp("ray") / "cases.jsonl"
    path.write_text("".join(json.dumps(dict(base[i % len(base)], id=f"case-{i:02d}")) + "\n"
                            for i in range(N)), encoding="utf-8")
    return path


def _dicts(path: Path) -> list[dict]:
    """The file's traces in their JSON form (what the file holds)."""
    return [t.to_dict() for t in read_traces(path)[0]]


def _comparable(trace: dict) -> dict:
    """A trace without what depends on the clock."""
    out = {k: v for k, v in trace.items() if k not in ("timings_ms", "latency_ms")}
    out["usage"] = [{k: v for k, v in c.items() if k != "latency_ms"} for c in trace["usage"]]
    return out


def _by_id(path: Path) -> dict[str, dict]:
    return {t["id"]: _comparable(t) for t in _dicts(path)}


def _run(cases: Path, out: Path, config, engine=None, on_trace=None):
    index_data = json.loads((FIX / "merchant_index.json").read_text())
    index = AuditIndex(PolicyIndex.from_dict(index_data))
    gateway = Gateway(config)
    try:
        # no per-case time limit: on two cores shared with a model server a Ray worker's first
        # case can spend over 120 s of CPU-starved audit work, and the limit is not under test
        return run_audit(load_cases(cases), index, "cdg", out, gateway, AuditOptions(time_limit_s=0),
                         concurrency=2, on_trace=on_trace, engine=engine)
    finally:
        gateway.close()


def _engine(config) -> RayEngine:
    index_data = json.loads((FIX / "merchant_index.json").read_text())
    return RayEngine(index_data, functools.partial(Gateway, config), workers=2)


def test_ray_gives_the_traces_of_the_local_engine_and_resumes_exactly(
        ray_session, judge, cases, tmp_path):
    config = load_config(env=role_env(judge.api_base, role="judge", retries=0))
    local, on_ray = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    assert _run(cases, local, config).done == N
    summary = _run(cases, on_ray, config, engine=_engine(config))
    problems = [t["error"] for t in _dicts(on_ray) if t.get("error")]
    assert (summary.done, summary.judged, summary.errors) == (N, N, {}), problems
    assert _by_id(on_ray) == _by_id(local)
    assert len(_dicts(on_ray)) == N

    # Interrupted after 5 traces (the driver dies; workers' later answers are lost), then the
    # same command again: the 5 are skipped, the rest audited, none twice.
    resumed = tmp_path / "resumed.jsonl"
    seen = []

    def die_after_five(trace) -> None:
        seen.append(trace.id)
        if len(seen) == 5:
            raise KeyboardInterrupt("driver killed")

    with pytest.raises(KeyboardInterrupt):
        _run(cases, resumed, config, engine=_engine(config), on_trace=die_after_five)
    assert len(_dicts(resumed)) == 5
    again = _run(cases, resumed, config, engine=_engine(config))
    assert (again.skipped, again.done) == (5, N - 5)
    ids = Counter(t["id"] for t in _dicts(resumed))
    assert set(ids) == {f"case-{i:02d}" for i in range(N)} and set(ids.values()) == {1}
    assert _by_id(resumed) == _by_id(local)


def test_the_cli_audits_on_ray_with_the_drivers_settings(ray_session, judge, cases, tmp_path,
                                                         monkeypatch, capsys):
    from workbench.cli import main

    for name, value in role_env(judge.api_base, role="judge", retries=0).items():
        monkeypatch.setenv(name, value)  # the workers get the driver's WORKBENCH_* settings
    monkeypatch.delenv("WORKBENCH_LLM_MODE", raising=False)
    out = tmp_path / "cli.jsonl"
    args = ["audit", "--index", str(FIX / "merchant_index.json"), "--cases", str(cases),
            "--strategy", "cdg", "--out", str(out), "--no-cache", "--engine", "ray",
            "--concurrency", "2"]
    assert main(args) == 0
    traces = _dicts(out)
    assert sorted(t["id"] for t in traces) == [f"case-{i:02d}" for i in range(N)]
    assert all(t["verdict"] is not None for t in traces)
    assert main(args) == 0  # a re-run finds every case done
    assert f"{N} already in" in capsys.readouterr().err
    assert len(_dicts(out)) == N


def _processes_of_run(ray_tmp: str, marker: str) -> list[str]:
    """The live processes of one run: its driver (the marker in its environment) and every
    Ray process it started, each of which writes its logs into the run's own Ray temp
    folder (the agents rewrite their title over their environment, so the marker alone
    misses them). Another Ray on this machine is not counted."""
    import psutil

    found = []
    for p in psutil.process_iter(["name"]):
        try:
            if p.status() == psutil.STATUS_ZOMBIE:
                continue
            if (p.environ().get("SKILLCDG_RAY_PROBE") == marker
                    or any(ray_tmp in a for a in p.cmdline())
                    or any(f.path.startswith(ray_tmp) for f in p.open_files())):
                found.append(f"{p.pid} {p.name()}")
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return found


@pytest.mark.slow  # starts a fresh local Ray in a separate process (~20 s)
def test_an_audit_on_ray_leaves_no_process_of_its_own_behind(tmp_path):
    """Before, `workbench audit --engine ray` left ray::DashboardAgent and
    ray::RuntimeEnvAgent running (they ignore SIGTERM) after the command had exited: the
    engine never shut down the Ray it started, and the interpreter's exit hook does not wait
    for Ray's processes. Counted by a marker in the run's environment, so another Ray on the
    machine is not counted."""
    import contextlib
    import os
    import subprocess
    import sys
    import tempfile
    import time
    import uuid

    marker = uuid.uuid4().hex
    ray_tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths are capped
    env = dict(os.environ, PYTHONPATH=str(FIX.parents[1]), RAY_TMPDIR=ray_tmp,
               RAY_OVERRIDE_RESOURCES='{"CPU": 1}', SKILLCDG_RAY_PROBE=marker)
    env.pop("RAY_ADDRESS", None)  # start a Ray of its own, never join one
    run = subprocess.Popen(
        [sys.executable, "-m", "workbench.cli", "audit", "--index", str(FIX / "merchant_index.json"),
         "--cases", str(FIX / "merchant_cases.jsonl"), "--strategy", "cdg", "--no-judge",
         "--engine", "ray", "--concurrency", "1", "--out", str(tmp_path / "t.jsonl")],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    most = 0
    while run.poll() is None:  # while it runs: the count sees Ray's processes
        most = max(most, len(_processes_of_run(ray_tmp, marker)))
        time.sleep(0.3)
    err = run.stderr.read()
    assert run.returncode == 0, err[-2000:]
    assert most >= 3, "the count saw no Ray processes: the marker did not reach them"
    left = _processes_of_run(ray_tmp, marker)
    deadline = time.monotonic() + 15  # a little grace for processes already exiting
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = _processes_of_run(ray_tmp, marker)
    try:
        assert left == [], f"Ray processes left after the run: {left}"
    finally:
        import shutil

        import psutil

        for line in left:  # never leave them for the next test either (they ignore SIGTERM)
            with contextlib.suppress(psutil.NoSuchProcess):
                psutil.Process(int(line.split()[0])).kill()
        shutil.rmtree(ray_tmp, ignore_errors=True)


def test_ray_workers_send_each_cases_activations_back_to_the_driver(ray_session, judge, cases,
                                                                    tmp_path):
    """Issue 57 item 7: activations on the Ray engine. Each worker reads its cases' judging
    prompts (its own OnePass) and the driver keeps the readings beside the run through the
    same FeatureWriter a local audit uses."""
    import numpy as np

    from workbench.audit.activations import FeatureWriter
    from workbench.audit.judge import judge_messages
    from workbench.audit.ray_engine import Readings
    from workbench.decision import features as ff

    # Defined here, not at module level: Ray's workers cannot import the test module, and
    # cloudpickle sends a class of a function by value.
    class _FakeOnePass:
        """A worker's OnePass stand-in (no model): every prompt reads as its length."""

        source = "embedded"

        def take(self, messages):
            return None  # as if the answer came from the cache: the worker reads it itself

        def reader(self):
            return self

        def read(self, messages):
            import numpy as np

            from workbench.llm.onepass import Reading

            n = float(len(messages[-1]["content"]))
            return Reading(np.full((2, 4), n, dtype=np.float32), (20, 120), int(n), 3, 0.01)

        def wants(self, step):
            return False

    config = load_config(env=role_env(judge.api_base, role="judge", retries=0))
    index_data = json.loads((FIX / "merchant_index.json").read_text())
    readings = Readings("embedded", lambda: pytest.fail("every worker sent its reading"))
    engine = RayEngine(index_data, functools.partial(Gateway, config), workers=2,
                       activations=_FakeOnePass, readings=readings)
    by_id = {c.id: c for c in load_cases(cases)}
    folder = tmp_path / "ray.features"
    writer = FeatureWriter(folder, by_id, readings)
    out = tmp_path / "ray.jsonl"
    assert _run(cases, out, config, engine=engine, on_trace=writer).done == N
    assert writer.summary.captured == N and writer.from_judge == N
    traces = {t.id: t for t in read_traces(out)[0]}
    fs = ff.load_features(folder, ids=sorted(traces))
    for cid, arr in zip(fs.ids, fs.arrays, strict=True):
        length = len(judge_messages(by_id[cid], traces[cid].context)[-1]["content"])
        assert np.allclose(arr, length, rtol=1e-3)  # float16 on the way: the case's own reading
