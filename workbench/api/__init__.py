"""The audit API for agent runtimes (``workbench api``): a request is audited by the same
pipeline as ``workbench audit`` and stored through an injected trace store.

``settings`` (``[api]``, ``WORKBENCH_API_*``, the exposure check), ``service`` (request ->
case -> trace -> response, no web framework) and ``app`` (the FastAPI application).
"""
