"""Prompt templates (``workbench/prompts/*.md``) and the data fencing every prompt uses.

A template file has a ``[system]`` and a ``[user]`` section; ``$name`` placeholders are
filled with :class:`string.Template`, so braces and dollar signs inside data are harmless.
Every block goes inside tags (``<policy>...</policy>``). Text a party of the audited
conversation wrote (the state, each conversation turn, the agent's reply) is also quoted as
JSON by :func:`quote`: it becomes one line that starts and ends with a quote, so it cannot
close its block, add a line that looks like the template's own question, or forge a turn.
Policy text (written by the policy's author, and read by the judge as a rule list) is not
quoted; in it, and in anything else filled in, text that looks like one of our tags or like
the model's chat-template tokens (``<|im_end|>``) is defused. The system prompt tells the
model that tagged text is data, never instructions.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from string import Template

from workbench.errors import WorkbenchError
from workbench.prompts.fencing import DATA_TAGS, defuse, quote  # noqa: F401  (re-exported)

PROMPT_DIR = Path(__file__).resolve().parent.parent / "prompts"


class PromptTemplateError(WorkbenchError, ValueError):
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


def build_messages(name: str, **values: str) -> list[dict[str, str]]:
    """System + user messages of template ``name`` with every value defused (callers
    :func:`quote` the values that a party of the audited conversation wrote)."""
    system, user = load_template(name)
    safe = {k: defuse(v) for k, v in values.items()}
    return [
        {"role": "system", "content": system.substitute(safe)},
        {"role": "user", "content": user.substitute(safe)},
    ]
