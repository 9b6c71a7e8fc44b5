"""``workbench alerts add|list|silence|ack|deliver``: rules that watch new verdicts.

A rule fires after each batch (``workbench audit --store``, the Review page's Audit) and each
API call; its alerts are posted to the rule's webhook (JSON, retried with backoff from a
durable outbox) and listed on the Review page, where a person acknowledges them. Adding a
rule is an admin's ("change settings": it names where verdicts are sent); silencing and
acknowledging are a reviewer's or analyst's ("decide reviews")."""

from __future__ import annotations

import argparse
import sys

from workbench.commands._common import action, add_actor_option, cli_actor, command_group


def register(sub: argparse._SubParsersAction) -> None:
    alerts = command_group(sub, "alerts", dest="alerts_command",
                           help="alert rules on new violations: add, list, silence, acknowledge")
    p = action(alerts, "add", _add, help="save a rule",
               description="Kinds: 'violation' fires on each new violation with probability >= "
               "--probability (on --policy, else any); 'share' fires when the share of "
               "violations in the last --last cases rises above --share.")
    p.add_argument("name")
    p.add_argument("--kind", choices=("violation", "share"), required=True)
    p.add_argument("--policy", default="", help="SKILL name (default: any)")
    p.add_argument("--probability", type=float, default=0.5,
                   help="violation: the probability from which a violation fires (default 0.5)")
    p.add_argument("--last", type=int, default=50, help="share: the cases counted (default 50)")
    p.add_argument("--share", type=float, default=0.2,
                   help="share: fire above this share of violations (default 0.2)")
    p.add_argument("--dataset", default="", help="only this dataset (default: any)")
    p.add_argument("--webhook", default="", help="http(s) address its alerts are posted to")
    p.add_argument("--db")
    add_actor_option(p)

    p = action(alerts, "list", _list, help="the rules and the latest alerts")
    p.add_argument("--open", action="store_true", help="only alerts not acknowledged")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--db")

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
               help="post the alerts waiting in the outbox now (e.g. from cron)")
    p.add_argument("--db")


def _add(args) -> int:
    from store import alerts
    from store.db import make_engine
    from workbench.alerts.rules import AlertRule, RuleKind

    engine = make_engine(args.db)
    rule = AlertRule(args.name, RuleKind(args.kind), args.policy, args.probability, args.last,
                     args.share, args.dataset, args.webhook)
    rid = alerts.add_rule(engine, rule, actor=cli_actor(args, engine))
    print(f"rule {rid} {rule.name!r}: {rule.describe()}")
    return 0


def _list(args) -> int:
    from store import alerts
    from store.db import make_engine
    from workbench.llm.redact import redact_url

    engine = make_engine(args.db)
    found = alerts.rules(engine)
    if not found:
        print("no alert rules (`workbench alerts add NAME --kind violation ...`)")
    for rule, row in found:
        silenced = f", silenced until {row.silenced_until:%Y-%m-%d %H:%M} UTC" if (
            row.silenced_until is not None) else ""
        hook = redact_url(rule.webhook) if rule.webhook else "no webhook"
        print(f"rule {rule.id}\t{rule.name}\t{rule.describe()} -> {hook}{silenced}")
    for alert, name in alerts.alerts(engine, open_only=args.open, limit=args.limit):
        ack = f"acknowledged by {alert.ack_by}" if alert.ack_at else "open"
        print(f"alert {alert.id}\t{alert.fired_at:%Y-%m-%d %H:%M:%S}\t{name}\t{alert.delivery}"
              f"\t{ack}\t{alert.summary}")
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

    sent = deliver_due(alerts.SqlOutbox(make_engine(args.db)))
    print(f"{sent} alerts delivered", file=sys.stderr)
    return 0
