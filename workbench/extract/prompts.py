"""The extraction and fusion prompts: versioned files ``workbench/prompts/<name>_v<N>.md``,
read by the one template reader (:mod:`workbench.prompts.template`), which the audit prompts
use too. Re-exported here, where the extraction pipeline has always found them."""

from __future__ import annotations

from workbench.prompts.template import PROMPT_DIR, Prompt, PromptError, load_prompt, parse_prompt

__all__ = ["PROMPT_DIR", "Prompt", "PromptError", "load_prompt", "parse_prompt"]
