"""Offline CDG construction: SKILL documents to rule graphs with a model (Algorithm 1).

    from workbench.extract import extract_skill, JsonStepStore, load_sources
    docs = load_sources(["skills/"])
    graph, report = extract_skill(docs[0], Gateway.from_env(), JsonStepStore(".workbench/steps"))

Modules: ``blocks`` (planning), ``prompts`` (versioned prompt files), ``schema`` (answer
schemas and validation), ``spans`` (quote location), ``rebase`` (ids), ``nonrules`` (text
carrying no obligation), ``cues`` (edge candidates from the text), ``fusion`` (merges and
cross-block edges), ``provenance`` (cue edges and an author's decisions), ``steps`` (stored
step results), ``block_extraction`` (the extractor asked about one block), ``report``,
``pipeline`` (the whole run), ``sources``, ``evaluate`` (against a reference).
"""

from workbench.extract.blocks import PlannedBlock, plan_blocks
from workbench.extract.cues import EdgeCandidate, find_candidates
from workbench.extract.pipeline import (
    DEFAULT_MAX_BLOCK_TOKENS,
    ExtractionProgress,
    ExtractOptions,
    extract_skill,
)
from workbench.extract.prompts import Prompt, PromptError, load_prompt
from workbench.extract.provenance import EdgeDecisions
from workbench.extract.report import BlockReport, ExtractionReport, SpanError
from workbench.extract.sources import DuplicateSkillName, SkillSourceError, load_sources, load_uploads
from workbench.extract.spans import Located, locate
from workbench.extract.steps import JsonStepStore, MemoryStepStore, StepStore, step_key

__all__ = [
    "DEFAULT_MAX_BLOCK_TOKENS",
    "BlockReport",
    "DuplicateSkillName",
    "EdgeCandidate",
    "EdgeDecisions",
    "ExtractOptions",
    "ExtractionProgress",
    "ExtractionReport",
    "JsonStepStore",
    "Located",
    "MemoryStepStore",
    "PlannedBlock",
    "Prompt",
    "PromptError",
    "SkillSourceError",
    "SpanError",
    "StepStore",
    "extract_skill",
    "find_candidates",
    "load_prompt",
    "load_sources",
    "load_uploads",
    "locate",
    "plan_blocks",
    "step_key",
]
