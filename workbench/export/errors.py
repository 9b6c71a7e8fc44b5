"""The export's one error kind."""

from __future__ import annotations

from workbench.errors import WorkbenchError


class ExportError(WorkbenchError, RuntimeError):
    """Verdicts could not be written or sent: the message says where, the hint what to do."""
