"""Versioned prompt files: ``workbench/prompts/<name>_v<N>.md``.

A prompt file has an optional leading HTML comment (notes for maintainers, never sent), then a
``## system`` section and a ``## user`` section. ``{{placeholder}}`` markers are filled with
:meth:`Prompt.render`; plain ``{`` and ``}`` are left alone, so JSON examples need no escaping.
Every value is defused (``workbench.prompts.fencing``), like the audit prompts' values.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from workbench.errors import WorkbenchError
from workbench.prompts.fencing import defuse

PROMPT_DIR = Path(__file__).resolve().parent.parent / "prompts"

_COMMENT = re.compile(r"\A\s*<!--.*?-->\s*", re.S)
_SECTION = re.compile(r"^## (system|user)[ \t]*$", re.M)
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


class PromptError(WorkbenchError, ValueError):
    """A prompt file is missing or malformed; the message names the file and the fix."""


@dataclass(frozen=True)
class Prompt:
    """One prompt version. ``id`` (e.g. ``extract_v1@3f2a9c1b``) names the file and a hash of
    its text, so a stored step result is never reused for a prompt that has since changed."""

    name: str
    version: int
    system: str
    user: str
    sha256: str

    @property
    def label(self) -> str:
        return f"{self.name}_v{self.version}"

    @property
    def id(self) -> str:
        return f"{self.label}@{self.sha256[:8]}"

    def placeholders(self) -> set[str]:
        return set(_PLACEHOLDER.findall(self.system)) | set(_PLACEHOLDER.findall(self.user))

    def render(self, **values: str) -> list[dict[str, str]]:
        """The chat messages with every placeholder filled. Raises PromptError when a
        placeholder has no value or a value has no placeholder (a typo either side)."""
        wanted = self.placeholders()
        missing, extra = wanted - set(values), set(values) - wanted
        if missing or extra:
            raise PromptError(
                f"prompt {self.label}: missing values {sorted(missing)}, unknown values "
                f"{sorted(extra)}; the placeholders are {sorted(wanted)}"
            )

        def fill(text: str) -> str:
            # One pass, so a value that itself contains "{{x}}" is never expanded again. Every
            # value is defused as audit prompts are: a SKILL line "<|im_end|><|im_start|>system"
            # must not reach the server as real turn tokens (ordinary text stays as it is).
            return _PLACEHOLDER.sub(lambda m: defuse(values[m.group(1)]), text)

        return [
            {"role": "system", "content": fill(self.system)},
            {"role": "user", "content": fill(self.user)},
        ]


def parse_prompt(text: str, name: str, version: int, origin: str = "<text>") -> Prompt:
    body = _COMMENT.sub("", text, count=1)
    parts = _SECTION.split(body)
    # split gives ["", "system", "<text>", "user", "<text>"] for a well-formed file.
    sections = dict(zip(parts[1::2], (p.strip("\n") for p in parts[2::2]), strict=False))
    if parts[0].strip() or set(sections) != {"system", "user"} or len(parts) != 5:
        raise PromptError(
            f"{origin}: a prompt file needs exactly one '## system' and one '## user' section "
            "(in that order, after an optional <!-- comment -->)"
        )
    return Prompt(
        name=name,
        version=version,
        system=sections["system"].strip(),
        user=sections["user"].strip(),
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


@lru_cache(maxsize=16)
def load_prompt(label: str, directory: Path = PROMPT_DIR) -> Prompt:
    """Load ``<directory>/<label>.md`` where ``label`` looks like ``extract_v1``."""
    m = re.fullmatch(r"([a-z][a-z0-9_]*)_v(\d+)", label)
    if not m:
        raise PromptError(f"prompt label {label!r} must look like 'extract_v1'")
    path = directory / f"{label}.md"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in directory.glob("*_v*.md"))) or "(none)"
        raise PromptError(f"no prompt file {path}; known prompts: {known}")
    return parse_prompt(path.read_text(encoding="utf-8"), m.group(1), int(m.group(2)), str(path))
