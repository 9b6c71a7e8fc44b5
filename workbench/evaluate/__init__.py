"""The studies of the audit: how well strategies do, measured over many audits.

- ``metrics``: ACC, violation-F1, gold coverage, tokens and latency per strategy, over
  ``AuditTrace`` objects (``workbench metrics``, the Evaluate and Review pages);
- ``coverage_curve`` and ``length_sweep``: gold coverage (and accuracy) against the token
  target and against the SKILL's length; ``curve_figure`` draws both;
- ``complibench``: CompliBench conversations as SKILLs, an index and audit cases;
- ``injection``: the prompt-injection probe of the judge;
- ``baseline_costs``: a library baseline's indexing cost beside the CDG extraction's.

Each study runs audits through ``workbench.audit`` (the online path); nothing in
``workbench.audit`` imports this package (``tests/test_layers.py`` checks it), so auditing a
case never loads the studies.
"""
