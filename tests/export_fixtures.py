"""What the export tests share: the demo run as if its conversations had been traced with
OpenTelemetry (so each verdict has a span to link to), and a loopback HTTP stand-in for a
collector, Langfuse or Phoenix that records what it receives and answers as told."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from workbench.audit.cases import load_cases
from workbench.audit.trace_file import encode_trace, read_traces

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo"
DEMO_TRACES = DEMO / "traces_cdg.jsonl"
DEMO_CASES = DEMO / "cases.jsonl"


def ids_for(case_id: str) -> tuple[str, str]:
    """A made-up but stable W3C trace id (32 hex) and span id (16 hex) for a demo case."""
    h = hashlib.sha256(case_id.encode()).hexdigest()
    return h[:32], h[32:48]


def _value(text: str) -> dict[str, Any]:
    return {"stringValue": text}


def demo_as_otel(folder: Path) -> tuple[Path, Path, dict[str, str]]:
    """The demo's conversations written as OTLP/JSON GenAI chat spans (``gen_ai.input.messages``
    / ``gen_ai.output.messages``) and its traces renamed to the case ids the OTel importer
    gives them (``<trace id>-<span id>``). Returns ``(traces, spans, demo id -> new id)``."""
    spans, renamed = [], {}
    for case in load_cases(DEMO_CASES):
        trace_id, span_id = ids_for(case.id)
        history = [{"role": t.role if t.role in ("user", "assistant", "system") else "user",
                    "parts": [{"type": "text", "content": t.content}]} for t in case.turns]
        output = [{"role": "assistant", "parts": [{"type": "text", "content": case.model_response}]}]
        spans.append({"traceId": trace_id, "spanId": span_id, "name": "chat demo-model", "attributes": [
            {"key": "gen_ai.operation.name", "value": _value("chat")},
            {"key": "gen_ai.response.id", "value": _value(f"resp-{case.id}")},
            {"key": "gen_ai.input.messages", "value": _value(json.dumps(history))},
            {"key": "gen_ai.output.messages", "value": _value(json.dumps(output))},
        ]})
        renamed[case.id] = f"{trace_id}-{span_id}"
    doc = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": _value("demo")}]},
                              "scopeSpans": [{"scope": {"name": "demo"}, "spans": spans}]}]}
    spans_path = folder / "demo_spans.json"
    spans_path.write_text(json.dumps(doc), encoding="utf-8")
    traces, problems = read_traces(DEMO_TRACES)
    assert not problems
    traces_path = folder / "demo_traces.jsonl"
    with traces_path.open("w", encoding="utf-8") as out:
        for t in traces:
            t.id = renamed[t.id]
            out.write(encode_trace(t) + "\n")
    return traces_path, spans_path, renamed


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class StandIn:
    """A loopback server (127.0.0.1, a free port) that keeps every POST and answers with
    ``respond(received) -> (status, body bytes, content type)``."""

    respond: Callable[[Received], tuple[int, bytes, str]]
    received: list[Received] = field(default_factory=list)

    def __enter__(self) -> StandIn:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                n = int(self.headers.get("Content-Length") or 0)
                got = Received(self.path, {k.lower(): v for k, v in self.headers.items()},
                               self.rfile.read(min(n, 50_000_000)))
                stand_in.received.append(got)
                try:
                    status, body, ctype = stand_in.respond(got)
                except Exception as exc:  # a failed check answers 422 with what failed
                    status, body, ctype = 422, str(exc).encode(), "text/plain"
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
