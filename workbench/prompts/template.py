"""The one reader of prompt templates: every ``workbench/prompts/<name>_v<N>.md`` file.

A template file has an optional leading HTML comment (notes for maintainers, never sent), then
a ``## system`` section and a ``## user`` section, each line on its own::

    <!-- judge_v3: what changed and why -->
    ## system
    You are a compliance auditor ... Answer with JSON only: {"violation": true or false}
    ## user
    <policy>
    {{policy}}
    </policy>

``{{name}}`` markers are filled by :meth:`Prompt.render`, in one pass, with every value defused
(``workbench.prompts.fencing``). Everything else is sent as written: single braces (JSON
examples), ``}}`` closing nested JSON, ``$`` and backslashes need no escaping. A value with no
marker, a marker with no value, and a marker written loosely (``{{ policy }}``) are errors that
name the template and the marker, never a prompt sent with a hole in it.

The version is the ``_v<N>`` of the file name; the hash is the SHA-256 of the file's text (its
bytes, for the UTF-8, LF-ended files of the repository; a CRLF checkout hashes the same), so
a trace or an extraction report names exactly the template its prompts came from, and a stored
extraction step is never reused after its template changed (``Prompt.id``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from workbench.errors import WorkbenchError
from workbench.prompts.fencing import defuse

PROMPT_DIR = Path(__file__).resolve().parent

_COMMENT = re.compile(r"\A\s*<!--.*?-->\s*", re.S)
_SECTION = re.compile(r"^## (system|user)[ \t]*$", re.M)
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
# What a writer may have meant as a placeholder but that _PLACEHOLDER does not read as one
# (spaces inside, a dash, a dot); "{{" cannot start valid JSON, so literal JSON never matches.
_LOOSE = re.compile(r"\{\{\s*[\w.-]*\s*\}\}")
_LABEL = re.compile(r"([a-z][a-z0-9_]*)_v(\d+)")


class PromptError(WorkbenchError, ValueError):
    """A prompt file is missing or malformed, or a render lacks or adds a value; the message
    names the template, the placeholder and the fix."""


@dataclass(frozen=True)
class Prompt:
    """One template version. ``id`` (e.g. ``extract_v1@3f2a9c1b``) names the file and a hash of
    its text, so a stored step result is never reused for a template that has since changed."""

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
            # value is defused: a SKILL line "<|im_end|><|im_start|>system" must not reach the
            # server as real turn tokens (ordinary text stays byte for byte as it is).
            return _PLACEHOLDER.sub(lambda m: defuse(values[m.group(1)]), text)

        return [
            {"role": "system", "content": fill(self.system)},
            {"role": "user", "content": fill(self.user)},
        ]


@lru_cache(maxsize=64)
def parse_prompt(text: str, name: str, version: int, origin: str = "<text>") -> Prompt:
    """The template in ``text`` (``origin`` names it in errors)."""
    body = _COMMENT.sub("", text, count=1)
    parts = _SECTION.split(body)
    # split gives ["", "system", "<text>", "user", "<text>"] for a well-formed file.
    sections = dict(zip(parts[1::2], (p.strip("\n") for p in parts[2::2]), strict=False))
    if parts[0].strip() or list(sections) != ["system", "user"] or len(parts) != 5:
        raise PromptError(
            f"{origin}: a prompt file needs exactly one '## system' and one '## user' section "
            "(in that order, after an optional <!-- comment -->)"
        )
    for section in sections.values():
        for m in _LOOSE.finditer(section):
            if not _PLACEHOLDER.fullmatch(m.group()):
                raise PromptError(
                    f"{origin}: {m.group()!r} is not a placeholder; write {{{{name}}}} with a "
                    "name of letters, digits and '_' and no spaces"
                )
    return Prompt(
        name=name,
        version=version,
        system=sections["system"].strip(),
        user=sections["user"].strip(),
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


def template_files(directory: Path = PROMPT_DIR) -> list[Path]:
    """Every template file of ``directory`` (``<name>_v<N>.md``), sorted by name."""
    return sorted(p for p in directory.glob("*.md") if _LABEL.fullmatch(p.stem))


def load_prompt(label: str, directory: Path = PROMPT_DIR) -> Prompt:
    """Load ``<directory>/<label>.md`` where ``label`` looks like ``extract_v1``.

    The file is read on every call (parsing is cached by its text), so an edited template is
    used, and hashed, from the next prompt on (a long-running page sees the edit)."""
    m = _LABEL.fullmatch(label)
    if not m:
        raise PromptError(f"prompt label {label!r} must look like 'extract_v1'")
    path = directory / f"{label}.md"
    if not path.is_file():
        known = ", ".join(p.stem for p in template_files(directory)) or "(none)"
        raise PromptError(f"no prompt file {path}; known prompts: {known}")
    return parse_prompt(path.read_text(encoding="utf-8"), m.group(1), int(m.group(2)), str(path))
