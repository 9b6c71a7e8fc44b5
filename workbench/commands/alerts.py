"""``workbench alerts add|list|edit|pause|remove|silence|ack|deliver``: rules that watch new
verdicts.

A rule fires after each batch (``workbench audit --store``, the Review page's Audit) and each
API call; its alerts are posted to the rule's webhook (JSON, through the workbench's one
outbound client, retried with backoff per destination from a durable, capped outbox) and
listed on the Review page, where a person acknowledges them. Adding, editing, pausing and
removing a rule is an admin's ("change settings": it decides where verdicts are sent);
silencing and acknowledging are a reviewer's or analyst's ("decide reviews"). The store
checks the role at each write.

A webhook must be a public http(s) address without a credential in it (an admin may allow
a named internal host: ``[outbound] allow`` in workbench.toml or ``WORKBENCH_OUTBOUND_ALLOW``);
its credential comes from the environment variable ``--auth-env`` names (or that key of
``.streamlit/secrets.toml``), sent as the ``Authorization`` header.
"""

from __future__ import annotations

import argparse
import sys

from workbench.commands._common import action, add_actor_option, cli_actor, command_group

AUTH_HELP = ("environment variable (or .streamlit/secrets.toml key) holding the webhook's "
             "Authorization value, e.g. 'Bearer <token>' (a bare token is sent as Bearer); "
             "never put a credential in the address")


def register(sub: argparse._SubParsersAction) -> None:
    alerts = command_group(sub, "alerts", dest="alerts_command",
                           help="alert rules on new violations: add, list, edit, pause, remove, "
                           "silence, acknowledge")
    p = action(alerts, "add", _add, help="save a rule (admin)",
               description="Kinds: 'violation' fires on each new violation with probability >= "
               "--probability (on --policy, else any); 'share' fires when the share of "
               "violations in the last --last cases rises above --share.")
    p.add_argument("name")
    p.add_argument("--kind", choices=("violation", "share"), required=True)
    _rule_options(p, defaults=True)
    p.add_argument("--db")
    add_actor_option(p)

    p = action(alerts, "list", _list, help="the rules and the latest alerts")
    p.add_argument("--open", action="store_true", help="only alerts not acknowledged")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--db")

    p = action(alerts, "edit", _edit, help="change a rule's settings or webhook (admin)",
               description="Only the options given change; alerts still waiting go to the new "
               "webhook. --webhook '' removes the webhook (alerts are then shown on Review only).")
    p.add_argument("name")
    _rule_options(p, defaults=False)
    p.add_argument("--db")
    add_actor_option(p)

    p = action(alerts, "pause", _pause, help="pause a rule: it fires nothing and posts nothing "
                                              "until resumed (admin)")
    p.add_argument("name")
    p.add_argument("--resume", action="store_true", help="resume the paused rule")
    p.add_argument("--db")
    add_actor_option(p)

    p = action(alerts, "remove", _remove, help="remove a rule; its waiting alerts are not sent "
                                                "(admin)")
    p.add_argument("name")
    p.add_argument("--db")
    add_actor_option(p)

    p = action(alerts, "silence", _silence, help="stop posting a rule's alerts for a while "
                                                  "(they are still recorded and shown)")
    p.add_argument("name")
    p.add_argument("--minutes", type=float, default=60.0, help="0 lifts the silence (default 60)")
    p.add_argument("--db")
    add_actor_option(p)

    p = action(alerts, "ack", _ack, help="acknowledge alerts by id (from `alerts list`)")
    p.add_argument("ids", nargs="+", type=int)
    p.add_argument("--db")
    add_actor_option(p)

    p = action(alerts, "deliver", _deliver,
               help="post the alerts waiting in the outbox now (e.g. from cron); exit 1 when "
               "a post failed")
    p.add_argument("--db")


def _rule_options(p: argparse.ArgumentParser, *, defaults: bool) -> None:
    def default(value):
        return value if defaults else None

    p.add_argument("--policy", default=default(""), help="SKILL name (default: any)")
    p.add_argument("--probability", type=float, default=default(0.5),
                   help="violation: the probability from which a violation fires (default 0.5)")
    p.add_argument("--last", dest="window", type=int, default=default(50),
                   help="share: the cases counted (default 50)")
    p.add_argument("--share", type=float, default=default(0.2),
                   help="share: fire above this share of violations (default 0.2)")
    p.add_argument("--dataset", default=default(""), help="only this dataset (default: any)")
    p.add_argument("--webhook", default=default(""),
                   help="public http(s) address its alerts are posted to (no credential in it)")
    p.add_argument("--auth-env", dest="auth_env", default=default(""), metavar="VAR",
                   help=AUTH_HELP)


def _add(args) -> int:
    from store import alerts
    from store.db import make_engine
    from workbench.alerts.rules import AlertRule, RuleKind

    engine = make_engine(args.db)
    rule = AlertRule(args.name, RuleKind(args.kind), args.policy, args.probability, args.window,
                     args.share, args.dataset, args.webhook)
    rid = alerts.add_rule(engine, rule, actor=cli_actor(args, engine), auth_env=args.auth_env)
    print(f"rule {rid} {rule.name!r}: {rule.describe()}")
    return 0


def _list(args) -> int:
    from store import alerts
    from store.db import make_engine

    engine = make_engine(args.db)
    found = alerts.rules(engine)
    if not found:
        print("no alert rules (`workbench alerts add NAME --kind violation ...`)")
    for rule, row in found:
        print(f"rule {rule.id}\t{rule.name}\t{rule.describe()} -> {_delivery_words(row)}")
    for alert, name in alerts.alerts(engine, open_only=args.open, limit=args.limit):
        ack = f"acknowledged by {alert.ack_by}" if alert.ack_at else "open"
        print(f"alert {alert.id}\t{alert.fired_at:%Y-%m-%d %H:%M:%S}\t{name}\t{alert.delivery}"
              f"\t{ack}\t{alert.summary}")
    return 0


def _delivery_words(row) -> str:
    """Where a rule's alerts go and in what state, for `alerts list`."""
    from workbench.alerts.destinations import secret_value
    from workbench.llm.redact import redact_url

    words = [redact_url(row.webhook) if row.webhook else "no webhook"]
    if row.auth_env:
        words.append(f"credential from {row.auth_env} "
                     f"({'set' if secret_value(row.auth_env) else 'NOT set'})")
    if row.paused:
        words.append(f"paused by {row.paused_by or 'an admin'}")
    if row.silenced_until is not None:
        words.append(f"silenced until {row.silenced_until:%Y-%m-%d %H:%M} UTC")
    if row.dropped:
        words.append(f"{row.dropped} dropped unsent (outbox full)")
    return "; ".join(words)


def _edit(args) -> int:
    from store import alerts
    from store.db import make_engine

    engine = make_engine(args.db)
    changes = {key: getattr(args, key) for key in alerts.EDITABLE}
    if all(value is None for value in changes.values()):
        from workbench.commands._common import CliError

        raise CliError("nothing to change", "give at least one of --policy, --probability, "
                       "--last, --share, --dataset, --webhook, --auth-env")
    rule = alerts.edit_rule(engine, args.name, changes, actor=cli_actor(args, engine))
    print(f"rule {rule.id} {rule.name!r}: {rule.describe()}")
    return 0


def _pause(args) -> int:
    from store import alerts
    from store.db import make_engine

    engine = make_engine(args.db)
    changed = alerts.pause_rule(engine, args.name, not args.resume, actor=cli_actor(args, engine))
    state = "resumed" if args.resume else "paused"
    print(f"rule {args.name!r} {state}" if changed else f"rule {args.name!r} was already {state}")
    return 0


def _remove(args) -> int:
    from store import alerts
    from store.db import make_engine
    from workbench.words import plural

    engine = make_engine(args.db)
    cancelled = alerts.remove_rule(engine, args.name, actor=cli_actor(args, engine))
    print(f"rule {args.name!r} removed; {plural(cancelled, 'waiting alert')} not sent")
    return 0


def _silence(args) -> int:
    from store import alerts
    from store.db import make_engine

    engine = make_engine(args.db)
    until = alerts.silence_rule(engine, args.name, args.minutes, actor=cli_actor(args, engine))
    print(f"rule {args.name!r} silenced until {until:%Y-%m-%d %H:%M} UTC" if until
          else f"rule {args.name!r} is no longer silenced")
    return 0


def _ack(args) -> int:
    from store import alerts
    from store.db import make_engine

    engine = make_engine(args.db)
    n = alerts.acknowledge(engine, args.ids, actor=cli_actor(args, engine))
    print(f"{n} of {len(args.ids)} alerts acknowledged" + (" (the rest were already)" if
                                                          n < len(args.ids) else ""))
    return 0


def _deliver(args) -> int:
    from store import alerts
    from store.db import make_engine
    from workbench.alerts.delivery import deliver_due

    done = deliver_due(alerts.SqlOutbox(make_engine(args.db)))
    tried = done.delivered + done.failed
    print(f"{done.delivered} of {tried} alerts delivered"
          + (f"; {done.failed} failed and wait for their destination's retry"
             f" (first: {done.errors[0]})" if done.failed else ""), file=sys.stderr)
    return 1 if done.failed else 0
