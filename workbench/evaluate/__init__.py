"""The studies of the audit (the research lab): how well strategies do, measured over many
audits.

- ``coverage_curve`` and ``length_sweep``: gold coverage (and accuracy) against the token
  target and against the SKILL's length; ``curve_figure`` draws both (the Studies page);
- ``injection``: the prompt-injection probe of the judge;
- ``baseline_costs``: a library baseline's indexing cost beside the CDG extraction's.

Each study runs audits through ``workbench.audit`` (the online path); nothing in
``workbench.audit`` imports this package (``tests/test_layers.py`` checks it), so auditing a
case never loads the studies. The audit's own metrics (``workbench.audit.metrics``) and the
CompliBench importer (``workbench.audit.importers.complibench``) are the product's, in
``workbench.audit``.
"""
