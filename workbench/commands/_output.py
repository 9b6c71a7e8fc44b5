"""``--out FILE`` of the commands that write a file, one behaviour for all of them.

- A path that exists is not replaced unless ``--force`` is given: the command stops before
  any work with exit 2 and says so.
- A symbolic link is never followed: without ``--force`` it is refused like any existing
  path; with ``--force`` the link itself is replaced by a regular file, and the file it
  pointed to is left as it was (as ``workbench export-store`` has always done).
- A directory, FIFO or device is refused, ``--force`` or not.
- The file is written beside the target under a fresh name (``O_EXCL``) and then moved into
  place, so a crash never leaves half a file, and a file that appears meanwhile is not
  overwritten (without ``--force`` the move is a hard link, which fails when the name exists).

:func:`write_output` returns the words for the command's message ("wrote", or "replaced"
when an existing file or link gave way).
"""

from __future__ import annotations

import argparse
import errno
import os
import stat
import tempfile
from pathlib import Path

from workbench.commands._common import CliError

FORCE_HELP = "replace FILE if it exists (a symbolic link is replaced, never followed)"


def add_force_option(parser: argparse.ArgumentParser, flag: str = "--out") -> None:
    """``--force``: let ``flag`` replace an existing file."""
    parser.add_argument("--force", action="store_true", help=f"{flag}: {FORCE_HELP}")


def check_output(path: str | os.PathLike[str], *, force: bool, flag: str = "--out") -> None:
    """Refuse ``path`` before any work when writing it would be refused (see the module doc)."""
    p = Path(path)
    try:
        info = os.lstat(p)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise CliError(f"{flag} {p}: cannot be checked ({exc.strerror})", "choose another path") from None
    if stat.S_ISLNK(info.st_mode):
        if not force:
            raise CliError(f"{flag} {p} is a symbolic link (to {os.readlink(p)}); it is not "
                           "followed and not replaced",
                           "give the real path, or add --force to replace the link itself "
                           "with a regular file")
        return
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise CliError(f"{flag} {p} is {kind}", "give a file name")
    if not force:
        raise CliError(f"{flag} {p} exists; it is not replaced",
                       "add --force to replace it, or choose another name")


def write_output(path: str | os.PathLike[str], data: str | bytes, *, force: bool,
                 flag: str = "--out") -> str:
    """Write ``data`` (text as UTF-8) to ``path`` as the module doc says; returns "wrote" or
    "replaced". :class:`CliError` when refused or the disk refuses."""
    check_output(path, force=force, flag=flag)
    p = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    existed = os.path.lexists(p)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    except OSError as exc:
        raise CliError(f"cannot write {p}: {exc.strerror}", f"choose a writable {flag}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(raw)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        if force:
            os.replace(tmp, p)  # replaces a link or file; never writes through a link
        else:
            _link_new(tmp, p, flag)
    except OSError as exc:
        raise CliError(f"cannot write {p}: {exc.strerror}", f"choose a writable {flag}") from None
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
    return "replaced" if existed and force else "wrote"


def _link_new(tmp: str, path: Path, flag: str) -> None:
    try:
        os.link(tmp, path)  # fails when the name exists, whatever it is
    except FileExistsError:
        raise CliError(f"{flag} {path} appeared while writing; it is not replaced",
                       "add --force to replace it, or choose another name") from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EXDEV, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
        # A file system without hard links: create the name exclusively instead.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "wb") as out, open(tmp, "rb") as src:
            out.write(src.read())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
