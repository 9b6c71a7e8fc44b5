"""The audit API's trust boundary (issue 45 item 5), over a real uvicorn server on loopback
with raw sockets where a client must misbehave: the token before the body, the body cap,
body and header timeouts, strings and numbers checked as the CLI's readers check them,
error answers that do not echo the body, Swagger UI served offline, and the service
identity every store write is made as."""

from __future__ import annotations

import ast
import json
import re
import select
import socket
import time
from pathlib import Path

import httpx
import psutil
import pytest

from tests.test_api import AUTH, CANCEL, TOKEN, Served, judge
from workbench.api.body import SafeJSONResponse, excerpt
from workbench.api.service import AuditService, MemoryTraceStore
from workbench.api.settings import ApiSettingsError, check_settings, load_api_settings
from workbench.identity.roles import Actor, NotAllowed
from workbench.llm.fake_server import FakeChatServer

ROOT = Path(__file__).resolve().parents[1]
MB = 1024 * 1024


@pytest.fixture
def fake_judge():
    with FakeChatServer(default=judge) as srv:
        yield srv


def _connect(api: Served) -> socket.socket:
    return socket.create_connection(("127.0.0.1", api.port), timeout=10)


def _head(path: str = "/v1/audit", *extra: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json", *extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _answer(sock: socket.socket, limit_s: float = 10) -> tuple[int, dict, bool]:
    """(status, JSON body, whether the server closed the connection after it)."""
    sock.settimeout(limit_s)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status = int(head.split()[1])
    length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
    while len(rest) < length:
        rest += sock.recv(65536)
    try:
        closed = sock.recv(1) == b""
    except (ConnectionResetError, TimeoutError):
        closed = True
    return status, json.loads(rest[:length]), closed


def _push(sock: socket.socket, total: int, chunk: bytes, chunked: bool = False) -> int:
    """Send up to ``total`` bytes of body; the bytes sent before the server stopped us."""
    sent = 0
    try:
        while sent < total:
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
            sent += len(chunk)
    except (BrokenPipeError, ConnectionResetError, TimeoutError):
        pass
    return sent


def _rss() -> int:
    return psutil.Process().memory_info().rss


# -- the token before the body; the cap --------------------------------------------------------

def test_an_unauthenticated_100_mb_body_is_refused_unread(tmp_path, fake_judge, monkeypatch):
    chunk = b"x" * MB
    with Served(tmp_path, fake_judge, monkeypatch, max_body_bytes=200 * MB) as api:
        before = _rss()
        for extra in ((f"Content-Length: {100 * MB}",), ("Transfer-Encoding: chunked",)):
            with _connect(api) as sock:
                sock.sendall(_head("/v1/audit", *extra))
                sent = _push(sock, 100 * MB, chunk, chunked="chunked" in extra[0])
                status, body, closed = _answer(sock)
            assert status == 401 and body["error"] == "unauthorized", body
            assert closed and sent < 100 * MB, (extra, sent)  # the server stopped taking it
            assert sock is not None
        grown = (_rss() - before) / MB
        assert grown < 50, f"RSS grew {grown:.0f} MB for two unauthenticated 100 MB bodies"
        # Every route, public ones included: a body without the token is refused there too.
        with _connect(api) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
            assert _answer(sock)[0] == 401
        assert httpx.get(f"{api.url}/healthz", timeout=10).status_code == 200
    assert fake_judge.requests == []


def test_the_body_cap_is_413_from_the_header_and_while_streaming(tmp_path, fake_judge, monkeypatch):
    cap = 64 * 1024
    with Served(tmp_path, fake_judge, monkeypatch, max_body_bytes=cap) as api:
        with _connect(api) as sock:
            sock.sendall(_head("/v1/audit", f"Authorization: Bearer {TOKEN}", f"Content-Length: {100 * MB}"))
            status, body, closed = _answer(sock)
        assert status == 413 and closed and body["error"] == "too_large"
        assert "65,536 bytes" in body["message"] and "max_body_bytes" in body["hint"]
        with _connect(api) as sock:  # chunked: no length to check, counted as it comes
            sock.sendall(_head("/v1/audit", f"Authorization: Bearer {TOKEN}", "Transfer-Encoding: chunked"))
            sent = _push(sock, 20 * MB, b"y" * 16384, chunked=True)
            status, body, closed = _answer(sock)
        assert status == 413 and closed and sent < 20 * MB, sent
        assert "65,536 bytes" in body["message"] and "WORKBENCH_API_MAX_BODY_BYTES" in body["hint"]
        ok = httpx.post(f"{api.url}/v1/audit", json=CANCEL, headers=AUTH, timeout=60)
        assert ok.status_code == 200, ok.text  # a body under the cap goes through
    assert len(fake_judge.requests) == 1


# -- timeouts ------------------------------------------------------------------------------------

def _closed_within(socks: list[socket.socket], limit_s: float) -> tuple[list[float], dict[int, int]]:
    """Seconds until each socket was closed by the server (inf if not within ``limit_s``) and
    the statuses answered before closing."""
    start, open_, when, statuses = time.monotonic(), {s.fileno(): s for s in socks}, {}, {}
    buffers = {fd: b"" for fd in open_}
    while open_ and time.monotonic() - start < limit_s:
        ready, _, _ = select.select(list(open_.values()), [], [], 0.2)
        for s in ready:
            try:
                data = s.recv(65536)
            except ConnectionResetError:
                data = b""
            fd = s.fileno()
            if data:
                buffers[fd] += data
                continue
            when[fd] = time.monotonic() - start
            if m := re.match(rb"HTTP/1.1 (\d+)", buffers[fd]):
                statuses[int(m.group(1))] = statuses.get(int(m.group(1)), 0) + 1
            del open_[fd]
    return [when.get(s.fileno(), float("inf")) for s in socks], statuses


def test_stalled_uploads_and_headers_are_dropped_within_the_timeouts(tmp_path, fake_judge, monkeypatch):
    with Served(tmp_path, fake_judge, monkeypatch, body_timeout_s=1.5, header_timeout_s=1.5) as api:
        bodies = [_connect(api) for _ in range(50)]  # declared 1 MB (under the cap), sent 10 bytes
        for s in bodies:
            s.sendall(_head("/v1/audit", f"Authorization: Bearer {TOKEN}", f"Content-Length: {MB}")
                      + b'{"reply": ')
        heads = [_connect(api) for _ in range(20)]  # half a request line and header, then nothing
        for s in heads[:10]:
            s.sendall(b"POST /v1/audit HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
        try:
            body_times, statuses = _closed_within(bodies, 15)
            head_times, _ = _closed_within(heads, 15)
        finally:
            for s in bodies + heads:
                s.close()
        assert max(body_times) < 6, sorted(body_times)[-5:]  # 1.5 s, plus a loaded machine
        assert min(body_times) >= 1.4 and statuses == {408: 50}, (min(body_times), statuses)
        assert max(head_times) < 6, sorted(head_times)[-5:]
        r = httpx.post(f"{api.url}/v1/audit", json=CANCEL, headers=AUTH, timeout=60)
        assert r.status_code == 200  # the server still serves
    with Served(tmp_path, fake_judge, monkeypatch, body_timeout_s=1.5) as api, _connect(api) as sock:
        sock.sendall(_head("/v1/audit", f"Authorization: Bearer {TOKEN}", "Content-Length: 100") + b"{")
        status, body, closed = _answer(sock)
        assert status == 408 and closed and body["error"] == "timeout"
        assert "1.5 s" in body["message"] and "body_timeout_s" in body["hint"]


# -- strings and numbers; no echo -----------------------------------------------------------------

def _post_raw(api: Served, raw: bytes) -> httpx.Response:
    return httpx.post(f"{api.url}/v1/audit", content=raw, timeout=60,
                      headers={**AUTH, "Content-Type": "application/json"})


@pytest.mark.parametrize(("raw", "field", "words"), [
    (b'{"reply": "fine \\udc80"}', "reply", "lone surrogate"),
    (b'{"reply": "ok", "conversation": [{"role": "user", "content": "a\\ud800b"}]}',
     "conversation[0].content", "lone surrogate"),
    (b'{"reply": "ok", "state": NaN}', "state", "NaN"),
    (b'{"reply": "ok", "state": {"fare": Infinity}}', "state.fare", "Infinity"),
    (b'{"reply": "ok", "state": [1, -1e999]}', "state[1]", "-Infinity"),
    (b'{"reply": "ok", "state": {"\\udc80": 1}}', "state", "lone surrogate"),
])
def test_surrogates_and_nan_are_422_naming_the_field(tmp_path, fake_judge, monkeypatch, raw, field, words):
    with Served(tmp_path, fake_judge, monkeypatch) as api:
        r = _post_raw(api, raw)
        assert r.status_code == 422, r.text
        assert r.json()["error"] == "bad_request"
        assert f" {field} " in r.json()["message"] and words in r.json()["message"], r.json()
        assert r.json()["hint"]
        from store import audit_repo
        assert audit_repo.load_traces(api.engine, run_id="api", dataset="api") == []
    assert fake_judge.requests == []  # nothing audited, nothing stored


def test_error_answers_do_not_echo_the_body(tmp_path, fake_judge, monkeypatch):
    big = "z" * (10 * MB)
    with Served(tmp_path, fake_judge, monkeypatch, max_body_bytes=16 * MB) as api:
        cases = {
            "wrong type": json.dumps({"reply": "ok", "conversation": big}).encode(),
            "invalid JSON": b'{"reply": "' + big.encode() + b'" trailing',
            "unknown policy": json.dumps({**CANCEL, "policies": [big]}).encode(),
            "repeated key": json.dumps({"reply": "ok"})[:-1].encode() + b', "' + big[:5 * MB].encode()
            + b'": 1, "' + big[:5 * MB].encode() + b'": 2}',
            "missing field": json.dumps({"conversation": [{"role": big}]}).encode(),
        }
        for name, raw in cases.items():
            r = _post_raw(api, raw)
            assert r.status_code == 422, (name, r.status_code, r.text[:300])
            assert len(r.content) < 4096 and "z" * 200 not in r.text, (name, len(r.content))
            assert r.json()["message"], name
        missing = r.json()
        assert {f["field"] for f in missing["fields"]} >= {"reply"} and "input" not in r.text
        huge_id = "q" * 10000
        r = httpx.get(f"{api.url}/v1/traces/{huge_id}", headers=AUTH, timeout=30)
        assert r.status_code == 404 and len(r.content) < 2048
    assert fake_judge.requests == []


def test_a_stored_trace_that_strict_json_cannot_carry_is_still_answered():
    content = {"reason": "bad \udc80 text", "p": float("nan"), "ok": "naïve"}
    raw = SafeJSONResponse(content).body
    assert json.loads(raw) == {"reason": "bad \udc80 text", "p": None, "ok": "naïve"}
    assert excerpt("a" * 100, 10) == "aaaaaaaaaa... (90 more characters)"


# -- /docs offline ---------------------------------------------------------------------------------

def test_docs_are_served_from_installed_files(tmp_path, fake_judge, monkeypatch):
    with Served(tmp_path, fake_judge, monkeypatch) as api:  # token set: the docs stay public
        page = httpx.get(f"{api.url}/docs", timeout=30)
        assert page.status_code == 200 and "swagger-ui" in page.text
        urls = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        assert urls and not [u for u in urls if "//" in u], urls  # nothing from another host
        assert "cdn" not in page.text.lower()
        for url in urls:
            asset = httpx.get(f"{api.url}{url}", timeout=30)
            assert asset.status_code == 200 and len(asset.content) > 1000, url
        bundle = httpx.get(f"{api.url}/docs/assets/swagger-ui-bundle.js", timeout=30).text
        assert re.search(r'"5\.\d+\.\d+"', bundle)  # Swagger UI 5: it reads OpenAPI 3.1
        assert httpx.get(f"{api.url}/openapi.json", timeout=30).json()["openapi"].startswith("3.1")
        assert httpx.get(f"{api.url}/docs/assets/..%2Fcore.py", timeout=30).status_code in (401, 404)
        assert httpx.get(f"{api.url}/redoc", timeout=30).status_code in (401, 404)  # a CDN page: off


def test_docs_are_off_without_the_files_and_the_schema_stays(tmp_path, fake_judge, monkeypatch):
    monkeypatch.setattr("workbench.api.docs.swagger_assets", lambda: None)
    with Served(tmp_path, fake_judge, monkeypatch) as api:
        assert httpx.get(f"{api.url}/docs", timeout=30).status_code in (401, 404)
        assert "/v1/audit" in httpx.get(f"{api.url}/openapi.json", timeout=30).json()["paths"]


# -- the service identity -------------------------------------------------------------------------

def test_the_service_identity_is_a_setting_with_a_role_that_may_store(tmp_path):
    bare = load_api_settings(tmp_path / "none.toml", env={})
    assert (bare.actor.name, bare.actor.role) == ("api", "analyst")
    got = load_api_settings(tmp_path / "none.toml", env={"WORKBENCH_API_SERVICE_USER": "svc-audit",
                                                         "WORKBENCH_API_SERVICE_ROLE": "reviewer",
                                                         "WORKBENCH_API_BODY_TIMEOUT_S": "2.5"})
    assert (got.actor.name, got.actor.role, got.body_timeout_s) == ("svc-audit", "reviewer", 2.5)
    for role, words in (("viewer", "may not import cases or store audit results"),
                        ("author", "may not import cases"), ("root", "is not a role")):
        with pytest.raises(ApiSettingsError, match=words):
            check_settings(bare.with_changes(service_role=role))
    for bad in ({"max_body_bytes": 10}, {"body_timeout_s": float("nan")}, {"header_timeout_s": 0.0}):
        with pytest.raises(ApiSettingsError):
            check_settings(bare.with_changes(**bad))
    with pytest.raises(ApiSettingsError, match="not a number"):
        load_api_settings(tmp_path / "none.toml", env={"WORKBENCH_API_BODY_TIMEOUT_S": "soon"})


def test_the_service_writes_as_the_actor_it_is_given(fake_judge):
    from workbench.audit.policy import AuditIndex
    from workbench.graph import PolicyIndex
    from workbench.llm import Gateway, load_config
    from workbench.llm.fake_server import role_env

    index = AuditIndex(PolicyIndex.load(ROOT / "fixtures" / "demo" / "index.json"))
    gateway = Gateway(load_config(env=role_env(fake_judge.api_base, role="judge", retries=0)))
    try:
        store = MemoryTraceStore()
        service = AuditService(index, gateway, store)
        assert service.store_takes_actor
        out = service.audit(CANCEL, actor=Actor.signed_in("api", "analyst"))
        assert out["trace_id"] in store.items
        with pytest.raises(NotAllowed):
            service.audit(CANCEL, actor=Actor.signed_in("api", "viewer"))
        assert len(store.items) == 1

        class OldStore(MemoryTraceStore):  # a save() from before writes named their actor
            def save(self, case, trace):  # type: ignore[override]
                self.items[trace.id] = (case, trace)

        old = AuditService(index, gateway, OldStore())
        assert not old.store_takes_actor
        with pytest.raises(NotAllowed):  # the role is still checked before the write
            old.audit(CANCEL, actor=Actor.signed_in("api", "annotator"))
        assert old.store.items == {}
    finally:
        gateway.close()


def test_every_store_write_in_the_api_names_its_actor():
    """Each ``.save(...)`` call in workbench/api/ passes ``actor=`` (store writers are
    becoming actor-required; a forgotten one would write with the store's default)."""
    calls = []
    for path in sorted((ROOT / "workbench" / "api").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("save", "audit")):
                calls.append((path.name, node.lineno, any(k.arg == "actor" for k in node.keywords)))
    missing = [c for c in calls if not c[2]]
    # The one exception: the fallback for a store whose save() takes no actor, after the
    # role is checked (AuditService.save).
    source = (ROOT / "workbench" / "api" / "service.py").read_text(encoding="utf-8").splitlines()
    assert [(f, source[line - 1].strip()) for f, line, _ in missing] == [
        ("service.py", "self.store.save(case, trace)")], missing
    assert len(calls) >= 3
