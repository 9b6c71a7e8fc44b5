"""One base for the errors a user can meet: ``WorkbenchError(message, hint)``.

``message`` says what went wrong, ``hint`` what to do; ``str()`` is ``message; hint`` (the
form every message already had), so the CLI and the pages show any of them the same way:
the CLI catches ``WorkbenchError`` once (``workbench.cli.main``) and the pages render it with
``components.errors.show_error``.

``fatal`` marks errors about the setup rather than the case (no model configuration, a
missing recording, an embedded model or embedding model that cannot load, an aborted run):
a batch stops on them instead of writing the same failure into every remaining trace.
``is_fatal`` is the one place that question is answered (the runner and the Review page).

Subclasses keep the builtin base callers already catch (``class CaseFormatError(WorkbenchError,
ValueError)``), so ``except ValueError`` around a call still works.

Example::

    raise WorkbenchError("cases.jsonl:3: no 'id' field", "give every case an id")
"""

from __future__ import annotations

from typing import ClassVar


class WorkbenchError(Exception):
    """A user-facing error: ``message`` (what happened) and ``hint`` (what to do)."""

    fatal: ClassVar[bool] = False

    def __init__(self, message: str = "", hint: str = "") -> None:
        self.message = message
        self.hint = hint
        # The text goes into args so str(), repr() and pickling behave as for any exception.
        super().__init__(f"{message}; {hint}" if hint else message)


def is_fatal(exc: BaseException) -> bool:
    """True for errors about the setup, not the case: a batch stops on them."""
    return isinstance(exc, WorkbenchError) and exc.fatal
