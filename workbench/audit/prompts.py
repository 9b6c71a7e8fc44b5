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

import json
import re
from functools import lru_cache
from pathlib import Path
from string import Template

from workbench.errors import WorkbenchError

PROMPT_DIR = Path(__file__).resolve().parent.parent / "prompts"
DATA_TAGS = ("policy", "state", "conversation", "reply", "rule")
# Spaces are allowed around the slash: "< /reply>" reads as a closing tag to a model.
_TAG = re.compile(r"<\s*(/?)\s*(" + "|".join(DATA_TAGS) + r")\b", re.IGNORECASE)
# "<|im_end|>" and the like: llama.cpp's server tokenizes special tokens in message text,
# so a raw one in data would end the user turn for real.
_SPECIAL = re.compile(r"<\s*\|")
# Escaped inside quoted data: "<" and ">" (no tag or special token survives quoting, in any
# spacing or lookalike order), the characters str.splitlines() breaks at that json.dumps
# leaves raw (a quoted value stays one line), and lone surrogates (not encodable as UTF-8).
_UNSAFE_IN_QUOTES = re.compile("[<>\x85\u2028\u2029\ud800-\udfff]")


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


def defuse(text: str) -> str:
    """Make data unable to open or close our data tags (``<policy>`` -> ``‹policy>``,
    ``< /reply>`` -> ``‹/reply>``) or to write a chat-template token (``<|`` -> ``‹|``)."""
    text = _TAG.sub(lambda m: "‹" + m.group(1) + m.group(2), text)
    return _SPECIAL.sub("‹|", text)


def quote(value: object, *, sort_keys: bool = False) -> str:
    """``value`` as one line of JSON, safe to place in a prompt as data.

    Standard JSON (``json.loads`` gives ``value`` back), keeping non-ASCII text readable;
    quotes, backslashes and newlines are escaped by JSON itself, and ``<``, ``>``, Unicode
    line separators and lone surrogates as ``\\uXXXX``, so the result has no line break, no
    tag and no chat-template token whatever ``value`` holds.
    """
    text = json.dumps(value, ensure_ascii=False, sort_keys=sort_keys)
    return _UNSAFE_IN_QUOTES.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def build_messages(name: str, **values: str) -> list[dict[str, str]]:
    """System + user messages of template ``name`` with every value defused (callers
    :func:`quote` the values that a party of the audited conversation wrote)."""
    system, user = load_template(name)
    safe = {k: defuse(v) for k, v in values.items()}
    return [
        {"role": "system", "content": system.substitute(safe)},
        {"role": "user", "content": user.substitute(safe)},
    ]
