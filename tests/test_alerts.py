"""Alerts (issue 47 item 3): rules fire from ``decide`` on new traces, once per case; a batch
stored through ``AuditBatch`` fires them; the alert reaches a local webhook exactly once,
also when the webhook fails twice first; silencing and acknowledging need the role; the
Review page acknowledges an alert."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from streamlit.testing.v1 import AppTest

from store import alerts as alert_store
from store.audit_repo import StoreSink
from tests.test_page_review import PAGE
from workbench.alerts import delivery, hooks
from workbench.alerts.rules import AlertRule, RuleKind, new_violations, share_fired
from workbench.audit import AuditIndex, AuditOptions
from workbench.audit.batch import AuditBatch
from workbench.audit.trace import AuditTrace, Verdict
from workbench.identity.roles import COMMAND_LINE, Actor, NotAllowed


def judged(cid: str, violation: bool, p: float | None, skills=("refunds",)) -> AuditTrace:
    t = AuditTrace(id=cid, strategy="cdg", skills=list(skills))
    t.verdict = Verdict(violation, "why", ["refunds/R1"] if violation else [], probability=p)
    return t


# -- the rules, pure ----------------------------------------------------------------------------

def test_a_violation_rule_fires_at_or_above_its_probability_on_its_policy_only():
    rule = AlertRule("hi", RuleKind.VIOLATION, policy="refunds", probability=0.8, id=1)
    traces = [judged("a", True, 0.8), judged("b", True, 0.79), judged("c", False, 0.1),
              judged("d", True, 0.95, skills=("airline",)), judged("e", True, None),
              AuditTrace(id="f", strategy="cdg")]  # not judged: nothing to decide
    fired = new_violations(rule, traces, "demo")
    # a: 0.8 >= 0.8; b: below; c: compliant; d: other policy; e: no probability, the verdict stands
    assert [f.case_id for f in fired] == ["a", "e"]
    assert fired[0].payload["probability"] == 0.8 and fired[0].payload["rule"]["name"] == "hi"
    assert new_violations(AlertRule("x", RuleKind.VIOLATION, dataset="other"), traces, "demo") == []


def test_a_share_rule_fires_when_the_share_crosses_above_and_not_again_while_above():
    rule = AlertRule("share", RuleKind.SHARE, window=4, share=0.25)
    calm = [judged(f"c{i}", False, 0.1) for i in range(4)]
    one_bad = calm[1:] + [judged("v1", True, 0.9)]  # 1/4 = 25 %: not above 25 %
    two_bad = one_bad[1:] + [judged("v2", True, 0.9)]  # 2/4 = 50 %
    assert share_fired(rule, calm, "d", False) == (None, False)
    assert share_fired(rule, one_bad, "d", False) == (None, False)
    fired, above = share_fired(rule, two_bad, "d", False)
    assert above and fired is not None and fired.payload["violations"] == 2
    assert share_fired(rule, two_bad, "d", True) == (None, True)  # still above: no second alert
    assert share_fired(rule, calm[:3], "d", False) == (None, False)  # fewer cases than the window


def test_a_failing_checker_never_reaches_the_audit(caplog):
    def broken(_traces, _where):
        raise RuntimeError("boom")

    hooks.on_audited(broken)
    try:
        hooks.audited([judged("a", True, 0.9)], object())  # logged, not raised
    finally:
        hooks._CHECKERS.remove(broken)
    assert "alert check failed" in caplog.text


# -- a local webhook ------------------------------------------------------------------------------

class Webhook:
    """http.server on 127.0.0.1:0; answers 500 to the first ``fail`` posts, then 204."""

    def __init__(self, fail: int = 0):
        self.fail, self.posts, self.ok = fail, [], []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                hook.posts.append(body)
                failing = len(hook.posts) <= hook.fail
                if not failing:
                    hook.ok.append(body)
                self.send_response(500 if failing else 204)
                self.end_headers()

            def log_message(self, *_args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/alerts"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fast_retries(monkeypatch):
    monkeypatch.setattr(delivery, "BASE_BACKOFF_S", 0.05)


@pytest.fixture
def stop_deliverers():
    yield
    alert_store.stop_deliverers()


@pytest.fixture(autouse=True)
def _allow_the_local_webhook(monkeypatch):
    """The test receivers listen on 127.0.0.1, which posts refuse unless an admin allows it."""
    monkeypatch.setenv("WORKBENCH_OUTBOUND_ALLOW", "127.0.0.1")


def wait_for(check, timeout=20.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.05)
    return False


class JudgedSink(StoreSink):
    """The store sink, with the judge's answer written in (no model in this test): case
    ``mor-001...`` is a violation at 0.93, every other case compliant at 0.05."""

    def write(self, trace: AuditTrace) -> None:
        bad = trace.id.startswith("mor-001")
        trace.verdict = Verdict(bad, "scripted", [], probability=0.93 if bad else 0.05)
        super().write(trace)


@pytest.mark.parametrize("fail", [0, 2])
def test_a_recorded_violation_reaches_the_webhook_once(demo_db, fast_retries, stop_deliverers, fail):
    eng, index, cases = demo_db
    hook = Webhook(fail=fail)
    try:
        alert_store.add_rule(eng, AlertRule("any violation", RuleKind.VIOLATION, probability=0.9,
                                            webhook=hook.url), actor=COMMAND_LINE)
        sink = JudgedSink(eng, "r1", "demo", actor=COMMAND_LINE)
        batch = AuditBatch.configure("cdg", AuditOptions(judge_mode="none"))
        batch.run(cases, AuditIndex(index), sink)
        assert wait_for(lambda: len(hook.ok) == 1), hook.posts
        # The same traces checked again (a re-run, a second API call): no second alert.
        hooks.audited(sink.traces(), sink)
        time.sleep(0.5)
        assert len(hook.ok) == 1 and len(hook.posts) == fail + 1
        [alert] = hook.ok
        assert alert["case_id"].startswith("mor-001") and alert["probability"] == 0.93
        assert alert["rule"]["name"] == "any violation" and alert["dataset"] == "demo"
        [(row, _name)] = alert_store.alerts(eng)
        assert row.delivery == "delivered" and row.attempts == fail + 1 and row.id == alert["alert_id"]
    finally:
        hook.close()


def test_a_silenced_rule_records_its_alerts_without_posting(demo_db, stop_deliverers):
    eng, _index, _cases = demo_db
    hook = Webhook()
    try:
        alert_store.add_rule(eng, AlertRule("quiet", RuleKind.VIOLATION, webhook=hook.url),
                             actor=COMMAND_LINE)
        with pytest.raises(NotAllowed):
            alert_store.silence_rule(eng, "quiet", 60, actor=Actor.signed_in("v", "viewer"))
        alert_store.silence_rule(eng, "quiet", 60, actor=Actor.signed_in("rita", "reviewer"))
        alert_store.check_audited(eng, "demo", [judged("x", True, 0.99)])
        time.sleep(0.3)
        [(row, _)] = alert_store.alerts(eng)
        assert row.delivery == "silenced" and hook.posts == []
    finally:
        hook.close()


def test_acknowledging_needs_the_role_and_is_recorded(demo_db):
    eng, _index, _cases = demo_db
    alert_store.add_rule(eng, AlertRule("shown", RuleKind.VIOLATION), actor=COMMAND_LINE)
    alert_store.check_audited(eng, "demo", [judged("x", True, 0.99)])
    [(row, _)] = alert_store.alerts(eng, open_only=True)
    assert row.delivery == "none"  # no webhook: shown on Review only
    with pytest.raises(NotAllowed):
        alert_store.acknowledge(eng, [row.id], actor=Actor.signed_in("ann", "annotator"))
    assert alert_store.acknowledge(eng, [row.id], actor=Actor.signed_in("al", "analyst")) == 1
    assert alert_store.alerts(eng, open_only=True) == []


def test_an_alert_is_acknowledged_from_the_review_page(demo_db):
    from tests.test_page_review import seed_traces

    eng, index, cases = demo_db
    seed_traces(eng, index, cases)
    alert_store.add_rule(eng, AlertRule("page rule", RuleKind.VIOLATION), actor=COMMAND_LINE)
    alert_store.check_audited(eng, "demo", [judged("mor-001-delay-not-yet-late", True, 0.97)])
    [(row, _)] = alert_store.alerts(eng, open_only=True)
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.text_input(key="rv_reviewer").set_value("ada").run()
    assert not at.exception
    assert any("Alerts: 1 open alert" in e.label for e in at.expander)
    at.button(key=f"rv_alert_ack_{row.id}").click().run()
    assert not at.exception
    assert any(f"Alert {row.id} acknowledged" in s.value for s in at.success)
    assert alert_store.alerts(eng, open_only=True) == []
    [(done, _)] = alert_store.alerts(eng)
    assert done.ack_by == "ada"
