"""Asking the extractor for the rules of one planned block (step 2 of Algorithm 1).

Two answer forms, chosen by the prompt:

- sentences (prompt ``units_v1``): the block is cut into numbered sentences and list items
  (``workbench.extract.sentences``) and the model gives a verdict for every number; a chunk
  it cannot answer is asked again in halves, down to one sentence.
- quotes (``extract_v1``): the model lists rules and copies each one's sentence; a piece
  whose answer is unusable or too long is halved and each half asked again, and an answer
  listing as many rules as its schema allows is asked again in halves (or, with
  ``on_rule_cap="report"``, flagged), so no rule is lost silently at the cap.

A complete answer is stored in the step store under :meth:`BlockExtractor.key`; a block
with a failed piece is not stored, so a re-run asks again. The run that plans the blocks,
runs them concurrently and fuses the results is ``workbench.extract.pipeline``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.extract.blocks import PlannedBlock, halve
from workbench.extract.prompts import Prompt
from workbench.extract.schema import (
    SCHEMA_VERSION,
    BlockExtraction,
    extraction_schema,
    validate_extraction,
)
from workbench.extract.sentences import (
    chunks,
    merge_answers,
    opening,
    render_sentences,
    sentences_schema,
    split_sentences,
    validate_sentences_answer,
)
from workbench.extract.steps import StepStore, step_key
from workbench.llm import ModelCallError, ModelGateway
from workbench.llm.tokens import count_tokens
from workbench.vocabulary import ModelRole

# Failures that a smaller request can fix: the answer was cut off or malformed, or the
# prompt did not fit. Anything else (server down, auth) stops the run; stored steps remain.
SPLITTABLE = frozenset({"invalid_output", "context_overflow"})
TOKENS_PER_RULE = 120  # answer tokens one extracted rule takes, generously
EXTRACT_SCHEMA_NAME = "rules"
SENTENCES_PROMPT_NAME = "units"  # the prompt's name (units_v1): numbered sentences


@dataclass
class ExtractedBlock:
    """The extractor's answer for one block, and what it took."""

    extraction: BlockExtraction
    cached: bool
    errors: list[str] = field(default_factory=list)
    reused_tokens: int = 0
    requests: int = 1  # model requests the block took (pieces, or chunks of sentences)
    cap_splits: int = 0  # answers that hit the rule cap and were asked again in halves
    capped: int = 0  # answers at the cap whose text was too short to split


def rule_bound(block_tokens: int, max_tokens: int) -> int:
    """How many rules one answer may hold: enough for the block's size, few enough that the
    answer ends before the role's ``max_tokens``."""
    cap = max(4, (max_tokens - 150) // TOKENS_PER_RULE)
    return min(cap, max(6, block_tokens // 25 + 4))


def at_rule_cap(answer: object, bound: int) -> bool:
    """True when an extractor answer lists as many rules as its schema allowed: the model
    may have had more to say, so the caller splits the text rather than lose them silently."""
    rules = answer.get("rules") if isinstance(answer, dict) else None
    return isinstance(rules, list) and len(rules) >= bound


def extraction_request(prompt: Prompt, section: str, text: str, max_tokens: int) -> tuple[list, dict]:
    """The extractor's messages and answer schema for one block (or piece) of text."""
    bound = rule_bound(count_tokens(text), max_tokens)
    return prompt.render(section=section, text=text), extraction_schema(max_rules=bound, max_edges=bound + 4)


class BlockExtractor:
    """The ``extractor`` role asked about the blocks of one SKILL under one prompt.

    ``settings`` (model, temperature, max_tokens, seed) and ``on_rule_cap`` are part of the
    stored answer's key, so changing either asks the model again. Safe to call from several
    threads at once (one block each). Raises ModelCallError for a failure no smaller request
    can fix."""

    def __init__(self, gateway: ModelGateway, prompt: Prompt, skill: str, store: StepStore,
                 settings: dict, on_rule_cap: str) -> None:
        self.gateway, self.prompt, self.skill, self.store = gateway, prompt, skill, store
        self.settings, self.on_rule_cap = settings, on_rule_cap
        # The "units" prompt answers with sentence numbers over a pre-cut text (sentences.py)
        # instead of quotes the model copies; the prompt decides the answer's form.
        self.by_sentences = prompt.name == SENTENCES_PROMPT_NAME

    def key(self, block: PlannedBlock) -> str:
        return step_key(
            "extract", block=block.digest(), prompt=self.prompt.id, schema=SCHEMA_VERSION,
            settings=self.settings, on_rule_cap=self.on_rule_cap,
        )

    def stored(self, block: PlannedBlock) -> ExtractedBlock | None:
        """The block's answer without a model call: empty for an empty block, else the stored
        one (None when there is none yet)."""
        if block.is_empty:
            return ExtractedBlock(BlockExtraction(pieces=[(0, len(block.text))]), True)
        stored = self.store.get(self.key(block))
        if stored is None:
            return None
        usage, cap = stored.get("usage", {}), stored.get("cap", {})
        return ExtractedBlock(
            BlockExtraction.from_dict(stored["extraction"]), True,
            reused_tokens=int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0)),
            cap_splits=int(cap.get("splits", 0)), capped=int(cap.get("capped", 0)),
            requests=int(stored.get("requests", len(stored["extraction"].get("pieces", [])) or 1)),
        )

    def extract(self, block: PlannedBlock) -> ExtractedBlock:
        """Ask the model about ``block`` (in the prompt's answer form) and store a complete
        answer."""
        return self._by_sentences(block) if self.by_sentences else self._by_quotes(block)

    def _step(self, block: PlannedBlock) -> str:
        return f"extract:{self.skill}/{block.key}"

    def _by_sentences(self, block: PlannedBlock) -> ExtractedBlock:
        """Ask the extractor which of the block's numbered sentences are rules, a chunk of
        sentences at a time; a chunk the model cannot answer for is asked again in halves."""
        sentences = split_sentences(block.text)
        queue = chunks(sentences)
        answers, errors = [], []
        prompt_tokens = completion_tokens = requests = 0
        while queue:
            chosen = queue.pop(0)
            messages = self.prompt.render(section=block.section,
                                          text=render_sentences(block.text, sentences, chosen))

            def check(data, chosen=chosen):
                return validate_sentences_answer(data, block.text, sentences, chosen)

            try:
                res = self.gateway.complete_json(
                    role=ModelRole.EXTRACTOR, messages=messages,
                    schema=sentences_schema([opening(block.text, sentences[i]) for i in chosen]),
                    schema_name=EXTRACT_SCHEMA_NAME, step=self._step(block),
                    validate=check,
                )
            except ModelCallError as exc:
                if exc.kind not in SPLITTABLE:
                    raise
                if len(chosen) > 1:
                    queue[:0] = [chosen[: len(chosen) // 2], chosen[len(chosen) // 2 :]]
                else:
                    first = sentences[chosen[0]]
                    errors.append(f"chars {first.start}-{first.end}: {exc.kind} ({exc.detail[:160]})")
                continue
            requests += 1
            prompt_tokens += res.usage.prompt_tokens
            completion_tokens += res.usage.completion_tokens
            answers.append(res.checked)
        result = merge_answers(answers, sentences)
        if not errors:
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
            self.store.put(self.key(block), "extract",
                           {"extraction": result.to_dict(), "usage": usage, "block": block.key,
                            "requests": requests})
        return ExtractedBlock(result, False, errors, requests=requests)

    def _by_quotes(self, block: PlannedBlock) -> ExtractedBlock:
        """Ask the extractor for one block, halving pieces the model cannot answer for."""
        role = self.gateway.config.role(ModelRole.EXTRACTOR)
        whole = (0, len(block.text))
        queue = [whole]
        result = BlockExtraction()
        errors: list[str] = []
        capped: list[tuple[int, int]] = []
        capped_splits = 0
        prompt_tokens = completion_tokens = 0
        while queue:
            a, b = queue.pop(0)
            text = block.text[a:b]
            section = block.section if (a, b) == whole else f"{block.section} (continued)"
            messages, schema = extraction_request(self.prompt, section, text, role.max_tokens)
            try:
                res = self.gateway.complete_json(
                    role=ModelRole.EXTRACTOR,
                    messages=messages,
                    schema=schema,
                    schema_name=EXTRACT_SCHEMA_NAME,
                    step=self._step(block),
                    validate=validate_extraction,
                )
            except ModelCallError as exc:
                if exc.kind not in SPLITTABLE:
                    raise
                halves = halve(block.text, a, b)
                if halves:
                    queue[:0] = halves
                else:
                    errors.append(f"chars {a}-{b}: {exc.kind} ({exc.detail[:160]})")
                continue
            prompt_tokens += res.usage.prompt_tokens
            completion_tokens += res.usage.completion_tokens
            bound = rule_bound(count_tokens(text), role.max_tokens)
            if at_rule_cap(res.data, bound):
                # The schema let the model list no more rules, so rules past the cap may be
                # missing: ask again for each half rather than keep a truncated list.
                halves = halve(block.text, a, b) if self.on_rule_cap == "split" else None
                if halves:
                    capped_splits += 1
                    queue[:0] = halves
                    continue
                split = self.on_rule_cap == "split"
                why = "the text is too short to split" if split else "splitting is off"
                result.problems.append(
                    f"chars {a}-{b}: the answer hit the cap of {bound} rules and {why}; rules past "
                    "the cap may be missing (raise the extractor's max_tokens)"
                )
                capped.append((a, b))
            result.extend(res.checked, (a, b))
        if not errors:
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
            # Only complete answers are stored: a block with a failed piece is asked again.
            self.store.put(self.key(block), "extract",
                           {"extraction": result.to_dict(), "usage": usage, "block": block.key,
                            "cap": {"splits": capped_splits, "capped": len(capped)}})
        return ExtractedBlock(result, False, errors, requests=max(1, len(result.pieces)),
                              cap_splits=capped_splits, capped=len(capped))
