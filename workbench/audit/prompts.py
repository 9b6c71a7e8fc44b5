"""Prompt templates (``workbench/prompts/*.md``) and the data fencing every prompt uses.

A template file has a ``[system]`` and a ``[user]`` section; ``$name`` placeholders are
filled with :class:`string.Template`, so braces and dollar signs inside data are harmless.
Policy, state, conversation and reply go inside tags (``<policy>...</policy>``); any text in
the data that looks like one of our tags is defused first, so a message cannot close its
block and pose as an instruction. The system prompt tells the model that tagged text is
data, never instructions.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from string import Template

PROMPT_DIR = Path(__file__).resolve().parent.parent / "prompts"
DATA_TAGS = ("policy", "state", "conversation", "reply", "rule")
_TAG = re.compile(r"<(/?)\s*(" + "|".join(DATA_TAGS) + r")\b", re.IGNORECASE)


class PromptTemplateError(ValueError):
    """A prompt file is missing or malformed (a packaging problem, not a user error)."""


@lru_cache(maxsize=32)
def load_template(name: str) -> tuple[Template, Template]:
    path = PROMPT_DIR / f"{name}.md"
    if not path.is_file():
        raise PromptTemplateError(f"prompt template {path} is missing; reinstall the package")
    text = path.read_text(encoding="utf-8")
    if "[system]\n" not in text or "[user]\n" not in text:
        raise PromptTemplateError(f"{path}: needs a '[system]' and a '[user]' section")
    system = text.split("[system]\n", 1)[1].split("[user]\n", 1)[0].strip()
    user = text.split("[user]\n", 1)[1].strip()
    return Template(system), Template(user)


def defuse(text: str) -> str:
    """Make data unable to open or close our data tags (``<policy>`` -> ``‹policy>``)."""
    return _TAG.sub(lambda m: "‹" + m.group(1) + m.group(2), text)


def build_messages(name: str, **values: str) -> list[dict[str, str]]:
    """System + user messages of template ``name`` with every value defused."""
    system, user = load_template(name)
    safe = {k: defuse(v) for k, v in values.items()}
    return [
        {"role": "system", "content": system.substitute(safe)},
        {"role": "user", "content": user.substitute(safe)},
    ]
