"""Inputs that are not regular files, for every target of ``tests/fuzzing.py`` (issue 36).

A FIFO nobody writes blocked a reader forever, and a link to ``/dev/zero`` was read until
memory ran out. :func:`run_special` hands a target such a path; the property is an exit 2
naming the file, at once. :func:`released_after` keeps a regression from hanging the suite.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
import time
from pathlib import Path

from tests import fuzzing
from tests.fuzzing import Outcome, Target

SPECIAL_KINDS = ("fifo", "device")
# A reader still waiting on the FIFO by then is released (and fails). Generous: a loaded
# machine takes seconds just to start a command, and only a broken reader ever waits this long.
RESCUE_AFTER_S = 60.0


@contextlib.contextmanager
def released_after(fifo: Path, seconds: float):
    """While the body runs, a reader that blocks on ``fifo`` (nobody writes it) is released
    after ``seconds``: a writer opens and closes it, so the reader sees the end of the file
    instead of hanging the suite. Yields a list that holds True when that was needed."""
    done, fired = threading.Event(), []

    def release() -> None:
        if done.wait(seconds):
            return
        fired.append(True)
        while not done.is_set():
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: no reader has it open right now
                time.sleep(0.05)
                continue
            os.close(fd)

    thread = threading.Thread(target=release, daemon=True)
    thread.start()
    try:
        yield fired
    finally:
        done.set()
        thread.join(5)


def _load_skill_file(path: Path) -> int:
    """``fuzzing._load_skill`` without the upload half (an upload is bytes, never a FIFO)."""
    from workbench.extract.sources import SkillSourceError, load_sources
    from workbench.skill.document import SkillFormatError

    try:
        load_sources([path])
    except (SkillFormatError, SkillSourceError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def run_special(target: Target, kind: str, work: Path) -> Outcome:
    """Give ``target`` an input path that is not a regular file: a FIFO nobody writes
    (``kind="fifo"``) or a link to the endless ``/dev/zero`` (``"device"``). The property:
    exit 2 naming the file, at once; never a wait (the FIFO is released after
    :data:`RESCUE_AFTER_S` and that counts as a hang) nor a read of the device."""
    import traceback

    from workbench.cli import main

    work.mkdir(parents=True, exist_ok=True)
    path = work / target.filename
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        os.symlink("/dev/zero", path)
    fuzzing.use_db(work)
    err = io.StringIO()
    started = time.perf_counter()
    with released_after(path, RESCUE_AFTER_S) as fired:
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                if target.call is not None:
                    call = _load_skill_file if target.call is fuzzing._load_skill else target.call
                    code = call(path)
                else:
                    assert target.argv is not None
                    code = main(target.argv(path, work))
        except BaseException as exc:  # noqa: BLE001 - reported, not raised
            if isinstance(exc, KeyboardInterrupt):
                raise
            return Outcome(None, time.perf_counter() - started,
                           "".join(traceback.format_exception(exc))[-3000:])
        finally:
            path.unlink(missing_ok=True)
    out = Outcome(code, time.perf_counter() - started)
    message = err.getvalue()
    if fired:
        out.problem = f"waited on the {kind} until it was released: {message[-300:]}"
    elif code != 2 or not any(line.startswith("error: ") for line in message.splitlines()):
        out.problem = f"a {kind} gave exit {code}, not a refusal: {message[-500:]}"
    elif path.name not in message:
        out.problem = f"the refusal does not name {path.name}: {message[:500]}"
    return out
