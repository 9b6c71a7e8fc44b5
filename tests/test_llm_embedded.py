"""The real embedded model: assembled from the wheels, served on 127.0.0.1, called through
litellm with a JSON schema. Slow on a small CPU (~20-40 s), so one tiny request only."""

from __future__ import annotations

import hashlib
import urllib.error
import urllib.request

import pytest

from workbench.llm import Gateway, load_config
from workbench.llm.embedded import current_embedded_server, stop_embedded_server
from workbench.llm.weights import MODEL_SHA256, assembled_path

pytestmark = [pytest.mark.model, pytest.mark.slow, pytest.mark.timeout(600)]

SCHEMA = {
    "type": "object",
    "properties": {
        "modality": {"type": "string", "enum": ["required", "prohibited", "permitted"]},
    },
    "required": ["modality"],
    "additionalProperties": False,
}


def test_embedded_model_answers_a_structured_request_through_litellm(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    for var in ("WORKBENCH_CONFIG", "WORKBENCH_LLM_MODE"):
        monkeypatch.delenv(var, raising=False)
    path = assembled_path()  # once per machine; later runs reuse the verified file
    with open(path, "rb") as f:
        assert hashlib.file_digest(f, "sha256").hexdigest() == MODEL_SHA256

    config = load_config(env={"WORKBENCH_EXTRACTOR_MAX_TOKENS": "24"})
    gw = Gateway(config)
    res = gw.complete_json(
        "extractor",
        [
            {"role": "system", "content": "Classify the modality of the policy sentence."},
            {"role": "user", "content": "Never refund to a different payment method."},
        ],
        SCHEMA,
        schema_name="modality",
        step="test:embedded",
        use_cache=False,
    )
    # The server enforces the schema: the answer is one of the enum values, nothing else.
    assert res.data["modality"] in {"required", "prohibited", "permitted"}
    assert res.usage.prompt_tokens > 10 and 0 < res.usage.completion_tokens <= 24
    assert res.usage.model == "embedded/qwen2.5-coder-1.5b-instruct-q4_k_m"

    server = current_embedded_server()
    assert server is not None and server.info is not None
    assert server.info.url.startswith("http://127.0.0.1:")
    # 32768 tokens over 2 slots: each request may use 16384 (prompt + answer).
    assert (server.info.slots, server.info.slot_ctx) == (2, 16384)

    url = server.info.url
    stop_embedded_server()
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        urllib.request.urlopen(f"{url}/health", timeout=2)


def test_served_model_stops_at_once_with_a_request_in_flight(tmp_path):
    # llama.cpp's clean shutdown waits for in-flight clients to give up (minutes); `model
    # serve` must leave at once on SIGTERM and say the request was cut off.
    import json
    import signal
    import socket
    import subprocess
    import sys
    import threading
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "workbench.cli", "model", "serve", "--port", str(port)]
    cmd += ["--threads", "1", "--parallel", "1", "--ctx-size", "2048"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()  # the first line is the base URL, once healthy
        assert url.endswith("/v1"), proc.stderr.read()
        body = {
            "model": "x",
            "messages": [{"role": "user", "content": "Write a long essay about airline refunds."}],
            "max_tokens": 1500,
        }
        request = urllib.request.Request(
            f"{url}/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        outcome: list[str] = []

        def client() -> None:
            try:
                urllib.request.urlopen(request, timeout=300).read()
                outcome.append("answered")
            except (OSError, urllib.error.URLError) as exc:
                outcome.append(type(exc).__name__)

        thread = threading.Thread(target=client, daemon=True)
        thread.start()
        base = url.removesuffix("/v1")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # wait until the slot is generating
            with urllib.request.urlopen(f"{base}/slots", timeout=5) as resp:
                if any(s.get("is_processing") for s in json.loads(resp.read())):
                    break
            time.sleep(0.2)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        assert time.monotonic() - started < 10
        assert proc.returncode == 0
        assert "1 request(s) in flight; they are cut off" in proc.stderr.read()
        thread.join(timeout=30)
        assert outcome and outcome[0] != "answered"
    finally:
        if proc.poll() is None:
            proc.kill()


def test_both_embedded_models_serve_in_one_process_under_their_own_keys(monkeypatch, tmp_path):
    # A role on embedded:small gets the 0.5B (its own in-process server, its own request key)
    # beside the 1.5B; the small model's file is hash-checked like the default's.
    from workbench.llm.weights import SMALL

    monkeypatch.chdir(tmp_path)
    for var in ("WORKBENCH_CONFIG", "WORKBENCH_LLM_MODE", "WORKBENCH_EMBEDDED_URL",
                "WORKBENCH_EMBEDDED_SMALL_URL"):
        monkeypatch.delenv(var, raising=False)
    path = assembled_path(model="small")
    with open(path, "rb") as f:
        assert hashlib.file_digest(f, "sha256").hexdigest() == SMALL.sha256
    env = {"WORKBENCH_JUDGE_MODEL": "embedded:small", "WORKBENCH_DEFAULT_MAX_TOKENS": "8",
           "WORKBENCH_EMBEDDED_CTX_SIZE": "4096"}
    gw = Gateway(load_config(env=env))
    messages = [{"role": "user", "content": 'Reply with {"ok": true}.'}]
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
              "additionalProperties": False}
    try:
        small = gw.complete_json("judge", messages, schema, schema_name="check", step="t", use_cache=False)
        big = gw.complete_json("extractor", messages, schema, schema_name="check", step="t", use_cache=False)
        assert small.usage.model == "embedded/qwen2.5-coder-0.5b-instruct-q4_k_m"
        assert big.usage.model == "embedded/qwen2.5-coder-1.5b-instruct-q4_k_m"
        servers = current_embedded_server("small"), current_embedded_server()
        assert all(s is not None and s.info is not None for s in servers)
        assert servers[0].info.url != servers[1].info.url
        assert servers[0].info.alias == SMALL.alias
        assert servers[1].info.alias == "qwen2.5-coder-1.5b-instruct-q4_k_m"
    finally:
        stop_embedded_server()
    assert current_embedded_server("small") is None and current_embedded_server() is None
