"""``workbench model serve``, ``check`` and ``set``: the model endpoints of the roles."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

from workbench.commands._common import action, add_actor_option, command_group

CHECK_TIMEOUT_CAP_S = 120.0


def register(sub: argparse._SubParsersAction) -> None:
    msub = command_group(sub, "model", help="run or check the models behind the roles", dest="model_command")

    from workbench.llm.weights import DEFAULT_MODEL, EMBEDDED_MODELS

    serve = action(msub, "serve", _serve,
                   help="run the embedded model server in the foreground and print its URL")
    serve.add_argument("--model", choices=tuple(EMBEDDED_MODELS), default=DEFAULT_MODEL,
                       help="which embedded model: " + ", ".join(
                           f"{n} = {m.title}" for n, m in EMBEDDED_MODELS.items())
                       + f" (default {DEFAULT_MODEL}); roles reach it as model = \"embedded\" / "
                       "\"embedded:small\" with [embedded].url / .small_url set to the printed URL")
    serve.add_argument("--port", type=int, help="port on 127.0.0.1 (default: a free one)")
    serve.add_argument("--ctx-size", type=int, help="total context, split over the slots")
    serve.add_argument("--parallel", type=int, help="parallel request slots")
    serve.add_argument("--threads", type=int, help="CPU threads (default: all cores)")
    serve.add_argument("--verbose", action="store_true", help="show llama.cpp's log")
    serve.add_argument("--lora", metavar="ADAPTER.gguf",
                       help="apply a trained LoRA adapter (`workbench train export`); the "
                       "server is then named <model>+lora-<hash>, so its answers are cached "
                       "apart from the base model's")

    check = action(msub, "check", _check,
                   help="send one small request through each role (or --role) and report")
    check.add_argument("--role", help="check only this role (default: every role)")
    check.add_argument("--json", action="store_true", help="print JSON (one object per role)")
    check.add_argument(
        "--timeout",
        type=float,
        help=f"seconds to wait for the answer (default: the role's timeout, at most {CHECK_TIMEOUT_CAP_S:g})",
    )

    change = action(
        msub, "set", _set, help="change a role's settings in workbench.toml (checked before it is written)")
    change.add_argument("role", help="the role, e.g. judge")
    change.add_argument("settings", nargs="+", metavar="SETTING=VALUE",
                        help="model, api_base, temperature, max_tokens, concurrency or timeout, "
                             "e.g. temperature=0.2")
    change.add_argument("--db", help="the database whose roster says who may (default: WORKBENCH_DB)")
    add_actor_option(change)  # the Settings page's rule: admin only once the roster lists anyone


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _set(args: argparse.Namespace) -> int:
    """The Settings page's write, headless, with its rule: "change settings" (admin) once the
    roster lists anyone, as the ``--as`` person; the base is the file as read just now."""
    from workbench.commands._common import cli_actor_before_upgrade
    from workbench.llm.config_file import (
        parse_setting,
        read_settings_file,
        save_role_settings,
        settings_file_path,
    )

    changes = dict(parse_setting(a) for a in args.settings)
    actor = cli_actor_before_upgrade(args, args.db)  # reads the roster, makes no database
    path = settings_file_path()
    config = save_role_settings(path, args.role, changes, actor=actor,
                                base_hash=read_settings_file(path).content_hash)
    role = config.role(args.role)
    print(f"{path}: [roles.{args.role}] " + ", ".join(
        f"{key} = {getattr(role, key)!r}" for key in changes))
    return 0


def _serve(args: argparse.Namespace) -> int:
    import dataclasses

    from workbench.commands._common import CliError
    from workbench.llm import load_config
    from workbench.llm.embedded import ensure_embedded_server, stop_embedded_server

    config = load_config()
    keys = ("port", "ctx_size", "parallel", "threads")
    changes = {k: getattr(args, k) for k in keys if getattr(args, k) is not None}
    embedded = dataclasses.replace(config.embedded, **changes)
    if embedded.slot_ctx < 1024:
        raise CliError(
            f"each of the {embedded.parallel} slots would hold only {embedded.slot_ctx} tokens; "
            "raise --ctx-size or lower --parallel"
        )
    adapter = None
    if args.lora:
        adapter = Path(args.lora)
        if not adapter.is_file():
            raise CliError(f"--lora {adapter}: no such file; write it with `workbench train export`")
    server = ensure_embedded_server(embedded, progress=_progress, quiet=not args.verbose,
                                    adapter=adapter, model=args.model)
    info = server.info
    assert info is not None
    print(f"{info.url}/v1", flush=True)
    from workbench.llm.config import url_field

    field = url_field(args.model)
    # An adapted model is another model: only its own name keeps its answers apart from the
    # base model's in the cache, so it is reached as openai/<alias>, never as an embedded role.
    shared = "" if adapter else (
        f"Point the embedded roles of another process at it with [embedded].{field} = "
        f"\"{info.url}/v1\" (WORKBENCH_EMBEDDED_{field.upper()}), or one role with ")
    print(
        f"embedded model '{info.alias}' serving at {info.url}/v1 ({info.slots} slots x "
        f"{info.slot_ctx} tokens, {info.threads} threads; started in {info.startup_s:.1f}s). "
        f"{shared or 'Point a role at it with '}WORKBENCH_<ROLE>_MODEL=openai/{info.alias} "
        f"WORKBENCH_<ROLE>_API_BASE={info.url}/v1. Ctrl-C stops it.",
        file=sys.stderr,
        flush=True,
    )
    signal.signal(signal.SIGTERM, _interrupt)  # `kill` stops it as cleanly as Ctrl-C
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        busy = server.busy_slots()
        if busy != 0:
            # llama.cpp's clean shutdown waits, holding the GIL, until every client with a
            # request in flight gives up (the role timeout: minutes). The process is ending
            # anyway, so leave without it; the OS reclaims the model and the sockets.
            what = f"{busy} request(s) in flight" if busy else "requests possibly in flight"
            print(f"stopping with {what}; they are cut off", file=sys.stderr, flush=True)
            sys.stdout.flush()
            os._exit(0)
        stop_embedded_server()
    return 0


def _check(args: argparse.Namespace) -> int:
    from workbench.commands._common import CliError
    from workbench.llm import EmbeddedModelUnavailable, Gateway, load_config
    from workbench.llm.check import check_role, failed_result
    from workbench.llm.embedded import ensure_embedded_server

    config = load_config()
    if args.role and args.role not in config.roles:
        raise CliError(f"unknown role '{args.role}'; configured roles: {', '.join(config.roles)}")
    roles = [args.role] if args.role else list(config.roles)
    for name in roles:
        role = config.role(name)
        timeout = args.timeout or min(role.timeout, CHECK_TIMEOUT_CAP_S)
        config = config.with_role(name, timeout=timeout)
    gateway = Gateway.from_env(config)

    from workbench.llm.config import attached_url_of

    startup_errors: dict[str, str] = {}  # embedded model -> why its server did not start
    in_process = {} if gateway.mode != "live" else {
        config.role(r).embedded_name: None for r in roles
        if config.role(r).is_embedded and not attached_url_of(config, config.role(r))}
    for model in in_process:
        # Start it first so each role's latency is the request's, not the model loading.
        try:
            server = ensure_embedded_server(config.embedded, progress=_progress, model=model)
            info = server.info
            if info is not None:
                _progress(
                    f"embedded server ({model}) up at {info.url} in {info.startup_s:.1f}s "
                    f"({info.slots} slots x {info.slot_ctx} tokens)"
                )
        except EmbeddedModelUnavailable as exc:
            startup_errors[str(model)] = str(exc)

    def result(name: str) -> dict:
        role = config.role(name)
        error = startup_errors.get(str(role.embedded_name)) if role.is_embedded else None
        return failed_result(name, role.model, "embedded", error) if error else check_role(gateway, name)

    results = [result(name) for name in roles]

    if args.json:
        payload = results[0] if args.role else results
        print(json.dumps(payload, indent=None if args.role else 2))
    else:
        for r in results:
            if r["ok"]:
                print(
                    f"{r['role']:<10} ok      {r['model']}  {r['latency_ms']:.0f} ms  "
                    f"{r['prompt_tokens']}+{r['completion_tokens']} tokens  ({r['endpoint']})"
                )
            else:
                print(f"{r['role']:<10} FAILED  {r['model']}  {r['error']}")
    return 0 if all(r["ok"] for r in results) else 1


def _progress(message: str) -> None:
    print(f"[model] {message}", file=sys.stderr, flush=True)
