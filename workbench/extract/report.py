"""The extraction report of one SKILL version: what was read, found, merged, dropped, spent.

Figures a reader compares across documents are ratios: the verbatim-span rate (rules whose
quote was found in the source / rules the model proposed), rules and edges per 1,000 source
tokens, and model tokens spent per source token.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields


@dataclass(frozen=True)
class SpanError:
    """A proposed rule whose quote was not found in its block: dropped, kept here."""

    block: str
    local_id: str
    quote: str
    condition: str
    action: str
    modality: str
    reason: str
    kind: str = "source_span_error"


@dataclass
class BlockReport:
    key: str
    section: str
    start: int
    end: int
    tokens: int
    rules_proposed: int = 0
    rules_kept: int = 0  # located and not a word-for-word repeat within the block
    exact_spans: int = 0
    normalised_spans: int = 0
    span_errors: int = 0
    edges: int = 0  # within-block edges kept
    merges: int = 0  # rules of this block merged into earlier ones
    cross_edges: int = 0
    pieces: int = 1
    extract_cached: bool = False
    fuse_cached: bool | None = None  # None: no fusion step (first block, no rules, no candidates)
    fuse_candidates: int = 0
    prompt_tokens: int = 0  # live model tokens spent on this block in this run
    completion_tokens: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    error: str = ""  # a piece the model could not answer for; its rules are missing
    cap_splits: int = 0  # answers that listed as many rules as allowed, re-asked in halves
    capped: int = 0  # answers at the rule cap too short to split: rules may be missing


@dataclass
class ExtractionReport:
    skill: str
    source_sha256: str
    source_tokens: int
    extractor_model: str
    fuser_model: str
    extract_prompt: str  # the template's id: name, version and hash prefix ("units_v1@886c20a6")
    fuse_prompt: str
    max_block_tokens: int
    blocks: list[BlockReport] = field(default_factory=list)
    span_errors: list[SpanError] = field(default_factory=list)
    merges: list[dict] = field(default_factory=list)  # {"rule", "into", "block"}
    rejected_merges: list[dict] = field(default_factory=list)  # {"rule", "into", "reason"}
    # Proposed rules that carry no obligation (headings, lead-ins, examples, attribute lists),
    # taken out before fusion: {"block", "rule_id", "reason", "quote"}.
    non_rules: list[dict] = field(default_factory=list)
    rules: int = 0
    edges: int = 0
    cross_block_edges: int = 0
    cue_edges: int = 0  # edges added directly from unambiguous cues in the text
    cue_confirmed: int = 0  # model edges a cue in the text supports
    proposed_edges: int = 0  # cue candidates left for the author to accept or reject
    decisions_applied: int = 0  # an author's earlier accept/reject verdicts re-applied
    prompt_tokens: int = 0  # live tokens spent in this run
    completion_tokens: int = 0
    reused_tokens: int = 0  # tokens of stored steps reused instead of asking again
    model_calls: int = 0
    wall_s: float = 0.0
    started_at: str = ""
    warnings: list[str] = field(default_factory=list)
    # The full SHA-256 of each template file (workbench.prompts.template), as audit traces keep
    # the judge's; empty in reports written before it was kept.
    extract_prompt_sha256: str = ""
    fuse_prompt_sha256: str = ""

    # -- figures --------------------------------------------------------------------------
    @property
    def rules_proposed(self) -> int:
        return sum(b.rules_proposed for b in self.blocks)

    @property
    def verbatim_span_rate(self) -> float | None:
        """Share of proposed rules whose quote was located (None when none were proposed)."""
        proposed = self.rules_proposed
        located = sum(b.exact_spans + b.normalised_spans for b in self.blocks)
        return None if proposed == 0 else located / proposed

    @property
    def exact_span_rate(self) -> float | None:
        proposed = self.rules_proposed
        return None if proposed == 0 else sum(b.exact_spans for b in self.blocks) / proposed

    def per_1k(self, count: int) -> float:
        return 0.0 if not self.source_tokens else 1000.0 * count / self.source_tokens

    @property
    def tokens_spent(self) -> int:
        """Model tokens this SKILL cost, counting reused steps at their original cost."""
        return self.prompt_tokens + self.completion_tokens + self.reused_tokens

    @property
    def tokens_per_source_token(self) -> float:
        return 0.0 if not self.source_tokens else self.tokens_spent / self.source_tokens

    @property
    def blocks_cached(self) -> int:
        return sum(1 for b in self.blocks if b.extract_cached)

    def figures(self) -> dict:
        rate, exact = self.verbatim_span_rate, self.exact_span_rate
        return {
            "rules": self.rules,
            "edges": self.edges,
            "rules_proposed": self.rules_proposed,
            "span_errors": len(self.span_errors),
            "non_rules": len(self.non_rules),
            "verbatim_span_rate": None if rate is None else round(rate, 4),
            "exact_span_rate": None if exact is None else round(exact, 4),
            "rules_per_1k_tokens": round(self.per_1k(self.rules), 2),
            "edges_per_1k_tokens": round(self.per_1k(self.edges), 2),
            "tokens_per_source_token": round(self.tokens_per_source_token, 2),
            "merges": len(self.merges),
            "cross_block_edges": self.cross_block_edges,
            "cue_edges": self.cue_edges,
            "cue_confirmed": self.cue_confirmed,
            "proposed_edges": self.proposed_edges,
            "blocks": len(self.blocks),
            "blocks_reused": self.blocks_cached,
            "rule_cap_splits": sum(b.cap_splits for b in self.blocks),
            "rule_cap_hits": sum(b.capped for b in self.blocks),
            "wall_s": round(self.wall_s, 1),
        }

    # -- serialisation --------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {**asdict(self), "figures": self.figures()}

    @classmethod
    def from_dict(cls, data: dict) -> ExtractionReport:
        names = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names}
        kwargs["blocks"] = [BlockReport(**b) for b in data.get("blocks", [])]
        kwargs["span_errors"] = [SpanError(**e) for e in data.get("span_errors", [])]
        return cls(**kwargs)

    def summary_lines(self) -> list[str]:
        f = self.figures()
        rate = "n/a" if f["verbatim_span_rate"] is None else f"{100 * f['verbatim_span_rate']:.0f}%"
        lines = [
            f"{self.skill}: {f['rules']} rules, {f['edges']} edges ({f['cross_block_edges']} across "
            f"blocks), {f['merges']} merges from {f['blocks']} blocks ({f['blocks_reused']} reused)",
            f"  edges from text cues: {self.cue_edges} added, {self.cue_confirmed} confirming the "
            f"model's; {self.proposed_edges} proposed for review",
            f"  verbatim spans {rate} ({f['span_errors']} rules dropped as source_span_error, "
            f"{f['non_rules']} as carrying no obligation); "
            f"{f['rules_per_1k_tokens']} rules and {f['edges_per_1k_tokens']} edges per 1k tokens",
            f"  {self.source_tokens} source tokens; model tokens {self.prompt_tokens}+"
            f"{self.completion_tokens} live, {self.reused_tokens} reused "
            f"({f['tokens_per_source_token']} per source token); {f['wall_s']} s; "
            f"extractor {self.extractor_model}",
        ]
        capped = [b for b in self.blocks if b.capped]
        if capped:
            lines.append(f"  {len(capped)} block(s) hit the rule cap and could not be split; rules "
                         "may be missing: " + ", ".join(b.key for b in capped[:5]))
        failed = [b for b in self.blocks if b.error]
        if failed:
            lines.append(f"  {len(failed)} block(s) incomplete: " + "; ".join(
                f"{b.key}: {b.error}" for b in failed[:5]))
        lines.extend(f"  warning: {w}" for w in self.warnings)
        return lines
