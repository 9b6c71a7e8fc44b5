"""The audit prompts (keywords, judge, per-rule judge, checklist judge) and the data fencing
every prompt uses.

Templates are ``workbench/prompts/<name>_v<N>.md``, read by the one reader
(:mod:`workbench.prompts.template`: ``## system``/``## user`` sections, ``{{name}}``
placeholders). Every block goes inside tags (``<policy>...</policy>``). Text a party of the
audited conversation wrote (the state, each conversation turn, the agent's reply) is also quoted
as JSON by :func:`quote`: it becomes one line that starts and ends with a quote, so it cannot
close its block, add a line that looks like the template's own question, or forge a turn.
Policy text (written by the policy's author, and read by the judge as a rule list) is not
quoted; in it, and in anything else filled in, text that looks like one of our tags or like
the model's chat-template tokens (``<|im_end|>``) is defused. The system prompt tells the
model that tagged text is data, never instructions.
"""

from __future__ import annotations

from workbench.prompts.fencing import DATA_TAGS, defuse, quote  # noqa: F401  (re-exported)
from workbench.prompts.template import PROMPT_DIR, Prompt, PromptError, load_prompt  # noqa: F401


def build_messages(name: str, **values: str) -> list[dict[str, str]]:
    """System + user messages of template ``name`` (``judge_v3``) with every value defused
    (callers :func:`quote` the values that a party of the audited conversation wrote).
    PromptError when a value has no placeholder or a placeholder no value."""
    return load_prompt(name).render(**values)
