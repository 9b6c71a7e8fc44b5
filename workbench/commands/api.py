"""``workbench api``: serve the audit API (FastAPI on uvicorn) for agent runtimes.

The same pipeline, store and response cache as ``workbench audit --store``: cases and traces
go to the database (``WORKBENCH_DB``) as dataset/run ``[api] dataset``/``run_id``, model
answers through the gateway with the database response cache. The store is injected here,
into the core's ``workbench.api`` (which never imports ``store/``).
"""

from __future__ import annotations

import argparse
import sys

from workbench.commands._common import action, load_index_or_fail
from workbench.vocabulary import JUDGED_MODES, JudgeMode, StrategyName, values


def register(sub: argparse._SubParsersAction) -> None:
    p = action(
        sub, "api", _api,
        help="serve the audit API: POST /v1/audit, GET /v1/traces/{id} (FastAPI + uvicorn)",
        description="Serve the audit API. Settings: [api] in workbench.toml, WORKBENCH_API_* "
        "variables, then these flags. The bearer token comes from WORKBENCH_API_TOKEN or [api] "
        "token_file; without one the API serves on a loopback address only. The OpenAPI schema "
        "is at /openapi.json.",
    )
    p.add_argument("--index", default=None,
                   help="policy index (skillcdg/1 JSON) to audit against (default: the newest "
                   "SKILL versions in the database)")
    p.add_argument("--host", default=None, help="address to serve on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port (default 8765)")
    p.add_argument("--dataset", default=None, help="dataset the requests are stored in (default api)")
    p.add_argument("--run-id", dest="run_id", default=None, help="run of their traces (default api)")
    p.add_argument("--concurrency", type=int, default=None, help="audits at once (default 2)")
    p.add_argument("--queue", type=int, default=None,
                   help="requests that may wait beyond those; more get 429 (default 8)")
    p.add_argument("--strategy", choices=values(StrategyName), default=StrategyName.CDG)
    p.add_argument("--judge-mode", choices=JUDGED_MODES, default=JudgeMode.WHOLE)
    p.add_argument("--no-cache", action="store_true", help="do not use the database response cache")


class StoreTraces:
    """The API's TraceStore: the workbench database (``store.audit_repo``), written as the
    ``actor`` the service passes: the API's service identity (``[api] service_user`` /
    ``service_role``), checked by the store's role table."""

    def __init__(self, engine, dataset: str, run_id: str):
        self.engine, self.dataset, self.run_id = engine, dataset, run_id

    def save(self, case, trace, *, actor) -> None:
        from store.audit_repo import save_case_and_trace

        save_case_and_trace(self.engine, self.dataset, case, trace, self.run_id, actor=actor)

    def decision_setting(self):
        """The served dataset's saved setting with its case scores (``store.verdicts``)."""
        from store.verdicts import dataset_setting

        return dataset_setting(self.engine, self.dataset)

    def get(self, trace_id: str):
        from store.audit_repo import load_case, load_traces

        traces = load_traces(self.engine, run_id=self.run_id, dataset=self.dataset, case_id=trace_id)
        if not traces:
            return None
        return load_case(self.engine, self.dataset, trace_id), traces[-1]


def build_app(args, engine=None, gateway=None):
    """The app ``workbench api`` serves (also what the API tests start under uvicorn):
    settings checked, index loaded, store and gateway injected. Returns (app, settings)."""
    from store import repo
    from store.db import make_engine
    from workbench.api.app import create_app
    from workbench.api.service import AuditService
    from workbench.api.settings import check_settings, load_api_settings
    from workbench.audit.pipeline import AuditOptions
    from workbench.audit.policy import AuditIndex
    from workbench.commands._common import CliError, cli_gateway

    settings = load_api_settings().with_changes(
        host=args.host, port=args.port, dataset=args.dataset, run_id=args.run_id,
        concurrency=args.concurrency, queue=args.queue)
    check_settings(settings)
    engine = engine if engine is not None else make_engine()
    if args.index:
        index = load_index_or_fail(args.index)
    else:
        index = repo.export_index(engine)
        if not len(index):
            raise CliError("no SKILLs in the database to audit against",
                           "import an index first (`workbench import INDEX.json`) or pass --index")
    gateway = gateway if gateway is not None else cli_gateway(args.no_cache)
    traces = StoreTraces(engine, settings.dataset, settings.run_id)
    service = AuditService(AuditIndex(index), gateway, traces, args.strategy,
                           AuditOptions(judge_mode=args.judge_mode))
    app = create_app(service, settings)
    app.state.gateway = gateway
    return app, settings


def _api(args) -> int:
    from workbench.api.server import serve

    app, settings = build_app(args)
    print(f"[api] serving on http://{settings.host}:{settings.port} (token "
          f"{'required' if settings.token else 'off: loopback only'}; {settings.concurrency} "
          f"audits at once, {settings.queue} waiting; traces in dataset {settings.dataset!r} run "
          f"{settings.run_id!r})", file=sys.stderr)
    try:
        serve(app, settings)  # header, body and keep-alive timeouts of [api]
    finally:
        app.state.gateway.close()
    return 0
