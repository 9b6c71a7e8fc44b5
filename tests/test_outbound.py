"""The one outbound client and its address checks (issue 54 items 1-2), each probe of the
issue re-run against local receivers (``tests/receivers.py``, on 127.0.0.1, allowed through
``WORKBENCH_OUTBOUND_ALLOW`` where a post must get through):

- a redirect is a failure naming the new address, and the key never reaches the second host
  (the client, and ``export-verdicts --push`` for Langfuse, Phoenix and OTLP: exit 2 saying
  how many were delivered);
- a receiver that hangs or drips a byte at a time is cut off at the post's total deadline;
- a 500 is a failure;
- internal addresses (loopback, private, link-local, metadata, odd numeric spellings) are
  refused before a byte is sent unless the host is allowed, by name as written;
- a name is resolved, checked and connected to at the checked address (``Host`` stays the
  name), and a name that resolves inside is refused.
"""

from __future__ import annotations

import socket
import time

import pytest
from export_fixtures import demo_as_otel

from tests.receivers import Receiver
from workbench.alerts import destinations
from workbench.alerts.destinations import (
    DestinationRefused,
    OutboundError,
    allowed_hosts,
    check_destination,
    checked_addresses,
)
from workbench.alerts.outbound import post, post_json
from workbench.cli import main

LOOPBACK = ["127.0.0.1"]


@pytest.fixture
def allow_loopback(monkeypatch):
    monkeypatch.setenv("WORKBENCH_OUTBOUND_ALLOW", "127.0.0.1")


@pytest.fixture(autouse=True)
def _no_config(monkeypatch, tmp_path):
    """No workbench.toml of the checkout's ([outbound] allow would change what is refused)."""
    monkeypatch.setenv("WORKBENCH_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.delenv("WORKBENCH_OUTBOUND_ALLOW", raising=False)


# -- addresses ---------------------------------------------------------------------------------

REFUSED = [
    ("http://169.254.169.254/latest/meta-data/iam/security-credentials/", "metadata"),
    ("http://[fd00:ec2::254]/latest/meta-data/", "metadata"),
    ("http://100.100.100.200/latest/meta-data/", "metadata"),
    ("http://127.0.0.1:9/hook", "loopback"),
    ("http://[::1]:9/hook", "loopback"),
    ("http://[::ffff:127.0.0.1]:9/hook", "loopback"),
    ("http://0x7f000001/hook", "unusual form"),
    ("http://2130706433/hook", "unusual form"),
    ("http://0177.0.0.1/hook", "unusual form"),
    ("http://127.1/hook", "unusual form"),
    ("http://10.1.2.3/hook", "private"),
    ("http://192.168.0.10/hook", "private"),
    ("http://100.64.0.1/hook", "not public"),
    ("http://0.0.0.0:9/hook", "unspecified"),
    ("http://localhost:9/hook", "loopback"),
    ("ftp://hooks.example.com/x", "not an http"),
    ("http://user:pw@hooks.example.com/x", "credential"),
    ("https://hooks.example.com/x?token=abcdef123", "credential"),
]


@pytest.mark.parametrize(("url", "why"), REFUSED)
def test_internal_and_odd_addresses_are_refused_when_saved_and_used(url, why):
    with pytest.raises(DestinationRefused, match=why):
        check_destination(url, "webhook")
    with pytest.raises(DestinationRefused, match=why):
        post_json(url, {"x": 1}, deadline_s=2)


def test_nothing_reaches_a_loopback_receiver_unless_an_admin_allows_it(monkeypatch, tmp_path):
    with Receiver() as receiver:
        with pytest.raises(DestinationRefused, match="loopback.*WORKBENCH_OUTBOUND_ALLOW"):
            post_json(receiver.url + "/hook", {"x": 1})
        assert receiver.requests == []
        # [outbound] allow in workbench.toml, by the name as written in the address
        config = tmp_path / "workbench.toml"
        config.write_text('[outbound]\nallow = ["127.0.0.1"]\n', encoding="utf-8")
        monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
        assert post_json(receiver.url + "/hook", {"x": 1}).status == 204
        config.write_text('[outbound]\nallow = ["localhost"]\n', encoding="utf-8")
        with pytest.raises(DestinationRefused):  # another name for it is not allowed
            post_json(receiver.url + "/hook", {"x": 1})
        monkeypatch.setenv("WORKBENCH_OUTBOUND_ALLOW", "collector.internal, 127.0.0.1")
        assert allowed_hosts() == {"localhost", "collector.internal", "127.0.0.1"}
        assert post_json(receiver.url + "/hook", {"x": 1}).status == 204
    assert len(receiver.posts) == 2


def test_an_allowed_host_never_opens_the_metadata_address():
    def metadata(*_a, **_k):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("169.254.169.254", 80))]

    with pytest.raises(DestinationRefused, match="metadata"):
        checked_addresses("collector.internal", 80, allow=["collector.internal"], resolve=metadata)


def test_a_name_is_checked_on_every_address_it_resolves_to_and_each_time_it_is_used():
    answers = iter([["93.184.216.34"], ["93.184.216.34", "127.0.0.1"], ["10.0.0.7"]])

    def rebinding(host, port, **_k):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in next(answers)]

    assert [str(a) for a in checked_addresses("hooks.example.test", 443, allow=(),
                                              resolve=rebinding)] == ["93.184.216.34"]
    with pytest.raises(DestinationRefused, match=r"resolved to 127\.0\.0\.1.*loopback"):
        checked_addresses("hooks.example.test", 443, allow=(), resolve=rebinding)
    with pytest.raises(DestinationRefused, match="private"):
        checked_addresses("hooks.example.test", 443, allow=(), resolve=rebinding)


def test_the_post_connects_to_the_checked_address_and_keeps_the_name(monkeypatch):
    """The name resolves (through the patched resolver) to the receiver's loopback address;
    the client connects there, and the receiver sees the name as Host."""
    real = socket.getaddrinfo
    looked_up = []

    def resolve(host, port, *args, **kwargs):
        looked_up.append(host)
        return real("127.0.0.1" if host == "hooks.example.test" else host, port, *args, **kwargs)

    monkeypatch.setattr(destinations.socket, "getaddrinfo", resolve)
    with Receiver() as receiver:
        url = f"http://hooks.example.test:{receiver.port}/hook"
        with pytest.raises(DestinationRefused, match="resolved to 127.0.0.1"):
            post_json(url, {"x": 1})
        monkeypatch.setenv("WORKBENCH_OUTBOUND_ALLOW", "hooks.example.test")
        assert post_json(url, {"x": 1}).status == 204
    [got] = receiver.posts
    assert got.headers["host"] == f"hooks.example.test:{receiver.port}"
    assert looked_up.count("hooks.example.test") == 2  # at each use, not once


# -- what a receiver does ------------------------------------------------------------------------

def test_a_redirect_is_a_failure_naming_the_new_address_and_the_key_stays_home(allow_loopback):
    with Receiver() as second, Receiver(f"redirect:{second.url}/steal?token=leakme123") as first:
        with pytest.raises(OutboundError) as caught:
            post(first.url + "/hook", b"{}", {"Authorization": "Bearer sk-never-elsewhere"})
    message = str(caught.value)
    assert "302" in message and f"{second.url}/steal" in message and "leakme123" not in message
    assert [r.headers["authorization"] for r in first.posts] == ["Bearer sk-never-elsewhere"]
    assert second.requests == []


@pytest.mark.parametrize("mode", ["hang", "drip"])
def test_a_slow_receiver_is_cut_off_at_the_whole_posts_deadline(allow_loopback, mode):
    with Receiver(mode, drip_s=0.5) as receiver:
        started = time.monotonic()
        with pytest.raises(OutboundError, match="did not answer within 2 s"):
            post_json(receiver.url + "/hook", {"x": 1}, deadline_s=2)
        took = time.monotonic() - started
    # A per-read timeout would let the drip run for 500 s; the deadline ends it (generous
    # bound: a busy machine may be slow to wake the thread).
    assert took < 8, took


def test_an_answer_other_than_2xx_is_a_failure(allow_loopback):
    with Receiver("status:500") as receiver, pytest.raises(OutboundError, match="answered 500"):
        post_json(receiver.url + "/hook", {"x": 1})


# -- export-verdicts --push ------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["langfuse", "phoenix", "otlp"])
def test_push_to_a_redirect_is_exit_2_and_no_key_reaches_the_target(
        tmp_path, capsys, monkeypatch, allow_loopback, fmt):
    traces_path, spans_path, _ = demo_as_otel(tmp_path)
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", "pk-lf-probe")
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-lf-probe")
    monkeypatch.setenv("PHOENIX_API_KEY", "px-probe")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20otlp-probe")
    with Receiver() as target, Receiver(f"redirect:{target.url}/redir") as first:
        rc = main(["export-verdicts", str(traces_path), "--cases", str(spans_path),
                   "--cases-format", "otel", "--format", fmt, "--push", first.url])
    err = capsys.readouterr().err
    assert rc == 2
    assert "0 of" in err and "delivered" in err and "302" in err and target.url in err
    assert target.requests == []  # nothing, and so no key, reached the redirect's target
    assert len(first.posts) == 1 and "authorization" in first.posts[0].headers


def test_push_to_an_internal_address_is_refused_before_any_work(tmp_path, capsys):
    rc = main(["export-verdicts", str(tmp_path / "missing.jsonl"), "--format", "otlp",
               "--push", "http://169.254.169.254/v1/logs"])
    assert rc == 2 and "metadata" in capsys.readouterr().err
