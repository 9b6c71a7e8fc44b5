"""The Scaling page's Recovery from the judges' own evaluations, in real Chromium: the bundled
real distillation with its intervals and caution, then evaluations the analyst uploads (one
per judge), then an upload that is not text, refused by name without a crash."""

from __future__ import annotations

import pytest

from . import flows
from .screen import idle, screen, shown

pytestmark = pytest.mark.e2e

# 12 cases in 6 conversations: violations on even ids
GOLD = [(f"c{i}", f"conv{i // 2}", i % 2 == 0) for i in range(12)]
SAID = {
    "base": [False] * 12,
    "teacher": [gold for _, _, gold in GOLD],
    "uniform": [True, False, False, True, True, True, False, False, True, False, False, False],
}


def traces(said: list[bool]) -> bytes:
    from workbench.audit.trace import AuditTrace, Verdict
    from workbench.audit.trace_file import encode_trace

    return "".join(encode_trace(AuditTrace(
        id=cid, strategy="cdg", session=conv, label="negative" if gold else "positive",
        verdict=Verdict(violation=s, reason="r", violated_rules=[]))) + "\n"
        for (cid, conv, gold), s in zip(GOLD, said, strict=True)).encode()


@pytest.fixture
def server(tmp_path):
    srv = flows.start_server(tmp_path)
    yield srv
    srv.stop()


def upload(page, judge: str, name: str, data: bytes) -> None:
    screen(page).locator(f".st-key-scaling_eval_{judge} [data-testid='stFileUploaderDropzoneInput']"
                 ).set_input_files([{"name": name, "mimeType": "application/json", "buffer": data}])
    idle(page)


def test_recovery_from_bundled_and_uploaded_evaluations(page, server):
    flows.goto(page, server, "scaling")
    for label, value in (("Bootstrap replicates", "0"), ("Search generations", "10")):
        box = screen(page).get_by_role("spinbutton", name=label)  # the fit is not what this is about
        box.fill(value)
        box.press("Enter")
        idle(page)
    screen(page).get_by_role("button", name="Fit models").click()
    shown(page, lambda s: s.get_by_text("Distillation recovery"))
    # the bundled real runs: Recovery with its interval, and the caution about flagging more
    shown(page, lambda s: s.get_by_text("95 % intervals: 2000 bootstrap draws of whole conversations"))
    shown(page, lambda s: s.get_by_text("Student of the headroom-selected set: F1 rose but accuracy"))
    flows.assert_no_exception(page, server)

    screen(page).get_by_text("Upload evaluations").click()
    idle(page)
    shown(page, lambda s: s.get_by_text("Upload the base and teacher evaluations"))
    for judge, said in SAID.items():
        upload(page, judge, f"{judge}.jsonl", traces(said))
    shown(page, lambda s: s.get_by_text(
        "1000 bootstrap draws of whole conversations (6 conversations, 12 cases)"))
    flows.assert_no_exception(page, server)

    upload(page, "teacher", "teacher.json", b"\xff\xfe\x00binary")
    error = shown(page, lambda s: s.locator("[data-testid='stAlert']").filter(
        has_text="Recovery cannot be read from these evaluations"))
    assert "teacher.json" in error.inner_text() and "UTF-8" in error.inner_text()
    flows.assert_no_exception(page, server)
