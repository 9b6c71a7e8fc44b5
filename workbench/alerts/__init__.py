"""Alerts on new violations: saved rules checked after each batch and API call, each alert
delivered to a webhook from a durable outbox, silenced and acknowledged by a person.

- :mod:`workbench.alerts.rules`: the two kinds of rule and what fires them (each case's
  decided record, ``workbench.decision.decided_verdict``, under the dataset's saved setting);
- :mod:`workbench.alerts.hooks`: ``audited(traces, where)``, called by the batch runner and
  the API after traces are stored; the store registers its checker with ``on_audited``;
- :mod:`workbench.alerts.delivery`: the outbox drained by a pool of posting threads, one
  per destination at a time, retried with backoff per destination;
- :mod:`workbench.alerts.outbound`: the workbench's one outbound HTTP client (webhooks and
  every ``--push``), over the address checks of :mod:`workbench.alerts.destinations`.

The rules and alerts themselves are stored by ``store.alerts``.
"""

from workbench.alerts.delivery import Deliverer, Outbox, Pending, backoff_s, post_alert
from workbench.alerts.hooks import audited, on_audited
from workbench.alerts.rules import AlertRule, Fired, RuleKind, new_violations, share_fired

__all__ = ["AlertRule", "Deliverer", "Fired", "Outbox", "Pending", "RuleKind", "audited",
           "backoff_s", "new_violations", "on_audited", "post_alert", "share_fired"]
