"""Offline CDG construction (SkillCDG Algorithm 1): extract per block, then fuse block by block.

    graph, report = extract_skill(doc, gateway, JsonStepStore(".workbench/steps"), progress=print)

1. Plan blocks: heading blocks, split past ``max_block_tokens`` (and past what fits the
   extractor's context when that is known), each with a stable key.
2. Extract each block with the ``extractor`` role under a JSON schema, blocks running
   concurrently up to the role's concurrency (one block: ``block_extraction``). By default
   (prompt ``units_v1``) the block is cut into numbered sentences and list items first and
   the model gives a verdict for every number (``sentences``): spans are exact and no sentence
   can be skipped or capped; a chunk it cannot answer is asked again in halves. With
   ``extract_v1`` the model lists rules and copies each one's sentence: a block whose answer
   is unusable or too long for the context is halved and each half asked again, down to a
   sentence or two, and an answer listing as many rules as its schema allows is asked again
   in halves (or, with ``on_rule_cap="report"``, flagged in the report), so no rule is lost
   silently at the cap.
3. Validate, locate every quote in the source (a cut sentence is its own span), drop untraceable
   rules as ``source_span_error``, rebase ids to ``<block key>-R<n>``; take out rules that
   carry no obligation (``nonrules``), listed in the report.
4. Read edge candidates from the text (``cues``). For every block after the first, ask the
   ``fuser`` role for merges and cross-block edges against a condensed view of the graph so
   far (the known rules cues link to the block always among them, the cues shown as
   suggestions); apply them.
5. Add direct cue edges, confirm model edges a cue supports, keep the rest as proposals, and
   re-apply an author's accept/reject decisions (``provenance``). Every rule and edge says
   where it came from.
6. Every answer is stored in the step store as it arrives, keyed by what it depends on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass

from workbench.clock import utcnow
from workbench.extract.block_extraction import SPLITTABLE, BlockExtractor, ExtractedBlock
from workbench.extract.blocks import PlannedBlock, plan_blocks
from workbench.extract.cues import find_candidates
from workbench.extract.fusion import (
    MIN_MERGE_OVERLAP,
    GraphBuilder,
    apply_fusion,
    candidates,
    fusion_request,
)
from workbench.extract.nonrules import NonRule, split_non_rules
from workbench.extract.prompts import Prompt, load_prompt
from workbench.extract.provenance import EdgeDecisions, apply_cues
from workbench.extract.rebase import RebasedBlock, rebase_block
from workbench.extract.report import BlockReport, ExtractionReport
from workbench.extract.schema import SCHEMA_VERSION, FusionAnswer, validate_fusion
from workbench.extract.steps import MemoryStepStore, StepStore, step_key
from workbench.graph import PolicyIndex, SkillGraph
from workbench.llm import EMBEDDED, ModelCallError, ModelGateway
from workbench.llm.tokens import count_tokens
from workbench.skill.document import SkillDoc
from workbench.vocabulary import ModelRole

DEFAULT_MAX_BLOCK_TOKENS = 12_000
EXTRACT_PROMPT = "units_v1"
FUSE_PROMPT = "fuse_v2"
# The served model's tokenizer may count more tokens than cl100k; keep this much slack.
TOKENIZER_SLACK = 0.85
FUSE_SCHEMA_NAME = "fusion"


@dataclass(frozen=True)
class ExtractionProgress:
    """One finished step. ``done``/``total`` count steps (one extraction and one fusion per
    block); ``phase`` is ``extract``, ``fuse`` or ``done``."""

    skill: str
    phase: str
    done: int
    total: int
    block: str
    section: str
    cached: bool

    @property
    def fraction(self) -> float:
        return 1.0 if self.total == 0 else min(1.0, self.done / self.total)


ProgressCallback = Callable[[ExtractionProgress], None]


@dataclass
class ExtractOptions:
    max_block_tokens: int = DEFAULT_MAX_BLOCK_TOKENS
    extract_prompt: str = EXTRACT_PROMPT
    fuse_prompt: str = FUSE_PROMPT
    fuse: bool = True
    max_known: int = 12  # known rules shown to the fuser per block
    merge_overlap: float = MIN_MERGE_OVERLAP  # least word overlap for a merge to be applied
    context_tokens: int | None = None  # the extractor's context; None: known for embedded
    concurrency: int | None = None  # extraction calls at once; None: the role's setting
    # An answer listing as many rules as its schema allows may have lost some: "split" asks
    # again for each half of the text; "report" keeps it and flags it in the report (for
    # recordings made before splitting existed, and for models billed per call).
    on_rule_cap: str = "split"
    cues: bool = True  # read edge candidates from the text (workbench.extract.cues)
    # Fusion candidates by meaning as well as words: (texts, texts) -> similarity matrix,
    # e.g. workbench.llm.embeddings.make_similarity(); None: shared words only.
    similarity: Callable | None = None
    decisions: EdgeDecisions | None = None  # an author's accepted/rejected edges, kept
    drop_non_rules: bool = True  # headings, lead-ins, examples, attribute lists (nonrules.py)
    # Edges the fuser or extractor found with no text cue behind them: "keep" them as edges,
    # "propose" them for an author, or "auto": propose when the fuser is the embedded 1.5B
    # model, whose own edges were 0 of 36 right on merchant-order-refund (not even on a
    # reference path) and 2 of 108 on the first demo extraction; keep them for any other model.
    model_edges: str = "auto"


def model_label(gateway: ModelGateway, role: str) -> str:
    """The model name as requests are keyed (``embedded/<alias>`` or the litellm string)."""
    request = gateway.build_request(gateway.config.role(role), [{"role": "user", "content": ""}])
    return str(request["model"])


def _settings(gateway: ModelGateway, role: str) -> dict:
    r = gateway.config.role(role)
    return {"model": model_label(gateway, role), "temperature": r.temperature,
            "max_tokens": r.max_tokens, "seed": r.seed}


def context_block_limit(gateway: ModelGateway, prompt: Prompt,
                        context_tokens: int | None = None) -> int | None:
    """Largest block (cl100k tokens) whose prompt and answer fit the extractor's context, or
    None when the context is unknown (a remote model: its server reports an overflow)."""
    role = gateway.config.role(ModelRole.EXTRACTOR)
    if context_tokens is None and role.is_embedded:
        context_tokens = gateway.config.embedded.slot_ctx
    if context_tokens is None:
        return None
    room = context_tokens - role.max_tokens - count_tokens(prompt.system) - 64
    return max(64, int(room * TOKENIZER_SLACK))


def drop_non_rules(source: str, rb: RebasedBlock) -> list[NonRule]:
    """Take a block's non-rules (and the edges touching them) out of ``rb``; return them."""
    rb.rules, gone = split_non_rules(source, rb.rules)
    ids = {n.rule_id for n in gone}
    rb.edges = [e for e in rb.edges if e.source not in ids and e.target not in ids]
    return gone


def extract_skill(
    doc: SkillDoc,
    gateway: ModelGateway,
    step_store: StepStore | None = None,
    progress: ProgressCallback | None = None,
    options: ExtractOptions | None = None,
    **overrides,
) -> tuple[SkillGraph, ExtractionReport]:
    """Build the rule graph of one SKILL and its report.

    ``overrides`` set :class:`ExtractOptions` fields (``max_block_tokens=400``...). Raises
    ModelCallError when the model cannot be reached (finished steps stay stored, so a re-run
    resumes), MissingRecording in replay mode, and PromptError for a bad prompt file.
    """
    opts = options or ExtractOptions()
    unknown = set(overrides) - {f.name for f in dataclasses.fields(ExtractOptions)}
    if unknown:
        raise TypeError(f"extract_skill() got unknown option(s) {sorted(unknown)}")
    opts = dataclasses.replace(opts, **overrides)
    if opts.on_rule_cap not in ("split", "report"):
        raise ValueError(f"on_rule_cap must be 'split' or 'report', got {opts.on_rule_cap!r}")
    if opts.model_edges not in ("auto", "propose", "keep"):
        raise ValueError(f"model_edges must be 'auto', 'propose' or 'keep', got {opts.model_edges!r}")
    store = step_store if step_store is not None else MemoryStepStore()
    run = _Run(doc, gateway, store, progress, opts)
    return run.execute()


class _Run:
    def __init__(self, doc, gateway, store, progress, opts: ExtractOptions) -> None:
        self.doc, self.gateway, self.store, self.progress, self.opts = doc, gateway, store, progress, opts
        self.xprompt = load_prompt(opts.extract_prompt)
        self.fprompt = load_prompt(opts.fuse_prompt)
        self.xsettings = _settings(gateway, ModelRole.EXTRACTOR)
        self.extractor = BlockExtractor(gateway, self.xprompt, doc.name, store, self.xsettings,
                                        opts.on_rule_cap)
        self.fsettings = _settings(gateway, ModelRole.FUSER)
        fit = context_block_limit(gateway, self.xprompt, opts.context_tokens)
        self.limit = min(opts.max_block_tokens, fit) if fit else opts.max_block_tokens
        self.usage_start = len(gateway.usage_log)
        self.done = 0
        self.total = 0

    # -- the run --------------------------------------------------------------------------
    def execute(self) -> tuple[SkillGraph, ExtractionReport]:
        started = time.perf_counter()
        doc = self.doc
        report = ExtractionReport(
            skill=doc.name,
            source_sha256=hashlib.sha256(doc.source.encode("utf-8")).hexdigest(),
            source_tokens=count_tokens(doc.source),
            extractor_model=self.xsettings["model"],
            fuser_model=self.fsettings["model"],
            extract_prompt=self.xprompt.id,
            fuse_prompt=self.fprompt.id,
            max_block_tokens=self.limit,
            extract_prompt_sha256=self.xprompt.sha256,
            fuse_prompt_sha256=self.fprompt.sha256,
            started_at=utcnow().isoformat(timespec="seconds"),
            warnings=list(doc.warnings),
        )
        if self.limit < self.opts.max_block_tokens and any(
            count_tokens(b.text) > self.limit for b in doc.blocks
        ):
            report.warnings.append(
                f"blocks were limited to {self.limit} tokens (not {self.opts.max_block_tokens}) so "
                "that prompt and answer fit the extractor's context"
            )
        blocks = plan_blocks(doc, self.limit)
        self.total = 2 * len(blocks)
        extracted = self._extract_all(blocks)

        rebased = {b.key: rebase_block(b, extracted[b.key].extraction) for b in blocks}
        if self.opts.drop_non_rules:
            for key, rb in rebased.items():
                report.non_rules.extend({"block": key, **asdict(n)} for n in drop_non_rules(doc.source, rb))
        # Cues are read over every located rule before fusion, so each fusion step can show
        # the fuser the known rules the text links to the new block (and ask it to confirm).
        self.cues = (find_candidates(doc, [r for rb in rebased.values() for r in rb.rules])
                     if self.opts.cues else [])
        builder = GraphBuilder()
        for block in blocks:
            report.blocks.append(
                self._fuse_block(block, extracted[block.key], rebased[block.key], builder, report))
        propose = (self.gateway.config.role(ModelRole.FUSER).model == EMBEDDED
                   if self.opts.model_edges == "auto" else self.opts.model_edges == "propose")
        outcome = apply_cues(builder, self.cues, self.opts.decisions, propose)
        report.cue_edges, report.cue_confirmed = outcome.direct, outcome.confirmed
        report.proposed_edges = len(outcome.proposed)
        report.decisions_applied = outcome.rejected_dropped + outcome.accepted_added

        graph = builder.graph()
        skill = SkillGraph(doc.name, doc.description, doc.source, graph, outcome.proposed)
        # The final invariant: what we built passes the same validation as a loaded file.
        PolicyIndex.from_dict(PolicyIndex([skill]).to_dict(), origin=f"extraction of {doc.name}")
        report.rules, report.edges = len(graph.rules), len(graph.edges)
        report.reused_tokens = sum(e.reused_tokens for e in extracted.values()) + report.reused_tokens
        self._account(report)
        report.wall_s = time.perf_counter() - started
        self._emit("done", None, cached=False)
        return skill, report

    def _emit(self, phase: str, block: PlannedBlock | None, cached: bool) -> None:
        if self.progress is None:
            return
        self.progress(
            ExtractionProgress(
                self.doc.name, phase, self.done, self.total,
                block.key if block else "", block.section if block else "", cached,
            )
        )

    def _account(self, report: ExtractionReport) -> None:
        prefix = (f"extract:{self.doc.name}/", f"fuse:{self.doc.name}/")
        by_block: dict[str, list] = {}
        for u in self.gateway.usage_log[self.usage_start :]:
            if not u.step.startswith(prefix) or u.cached:
                continue
            report.model_calls += u.attempts
            report.prompt_tokens += u.prompt_tokens
            report.completion_tokens += u.completion_tokens
            by_block.setdefault(u.step.rsplit("/", 1)[1], []).append(u)
        for b in report.blocks:
            for u in by_block.get(b.key, []):
                b.prompt_tokens += u.prompt_tokens
                b.completion_tokens += u.completion_tokens
                b.seconds += u.latency_ms / 1000.0

    # -- extraction -----------------------------------------------------------------------
    def _extract_all(self, blocks: list[PlannedBlock]) -> dict[str, ExtractedBlock]:
        """Every block's extraction: stored ones first, the rest asked concurrently (up to the
        role's concurrency), each reported to ``progress`` as it finishes."""
        results: dict[str, ExtractedBlock] = {}
        todo: list[PlannedBlock] = []
        for block in blocks:
            found = self.extractor.stored(block)
            if found is None:
                todo.append(block)
                continue
            results[block.key] = found
            self.done += 1
            self._emit("extract", block, cached=True)
        if not todo:
            return results
        workers = self.opts.concurrency or self.gateway.config.role(ModelRole.EXTRACTOR).concurrency
        with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="extract") as pool:
            pending: dict[Future, PlannedBlock] = {pool.submit(self.extractor.extract, b): b for b in todo}
            try:
                while pending:
                    finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in finished:
                        block = pending.pop(fut)
                        results[block.key] = fut.result()  # re-raises a fatal model error
                        self.done += 1
                        self._emit("extract", block, cached=False)
            except BaseException:
                for fut in pending:
                    fut.cancel()
                raise
        return results

    # -- rebase and fusion ----------------------------------------------------------------
    def _fuse_block(
        self, block: PlannedBlock, ex: ExtractedBlock, rebased: RebasedBlock, builder: GraphBuilder,
        report: ExtractionReport,
    ) -> BlockReport:
        br = BlockReport(
            key=block.key, section=block.section, start=block.start, end=block.end,
            tokens=block.tokens, rules_proposed=len(ex.extraction.rules),
            rules_kept=len(rebased.rules), exact_spans=rebased.exact,
            normalised_spans=rebased.normalised, span_errors=len(rebased.span_errors),
            edges=len(rebased.edges), pieces=max(1, ex.requests),
            extract_cached=ex.cached, problems=list(ex.extraction.problems),
            error="; ".join(ex.errors), cap_splits=ex.cap_splits, capped=ex.capped,
        )
        report.span_errors.extend(rebased.span_errors)
        if rebased.dropped_edges:
            br.problems.append(f"{rebased.dropped_edges} edge(s) dropped with their untraceable rules")
        known = list(builder.rules.values())
        new_ids = {r.id for r in rebased.rules}
        # Cue candidates linking this block's rules to earlier ones (ids through merges).
        suggested = [(builder.resolve(c.source), builder.resolve(c.target), c.note) for c in self.cues
                     if (c.source in new_ids) != (c.target in new_ids)
                     and builder.resolve(c.source if c.target in new_ids else c.target) in builder.rules]
        cued = {x for s, t, _ in suggested for x in (s, t)} - new_ids
        chosen = candidates(known, rebased.rules, self.opts.max_known,
                            similarity=self.opts.similarity, cued=cued) if self.opts.fuse else []
        builder.add_rules(rebased.rules, rebased.edges)
        br.fuse_candidates = len(chosen)
        if chosen and rebased.rules:
            request = fusion_request(self.fprompt, block.section, rebased.rules, chosen, suggested)
            key = step_key(
                "fuse", request=step_key("request", messages=request.messages, schema=request.schema),
                prompt=self.fprompt.id, schema=SCHEMA_VERSION, settings=self.fsettings,
            )
            answer = self._fusion_answer(block, request, key, br, report)
            if answer is not None:
                outcome = apply_fusion(builder, request, answer, self.opts.merge_overlap)
                br.merges, br.cross_edges = len(outcome.merges), outcome.cross_edges
                report.merges.extend({**m, "block": block.key} for m in outcome.merges)
                report.rejected_merges.extend(outcome.rejected)
                report.cross_block_edges += outcome.cross_edges
                br.problems.extend(f"fusion: {p}" for p in answer.problems)
        self.done += 1
        self._emit("fuse", block, cached=bool(br.fuse_cached))
        return br

    def _fusion_answer(self, block, request, key, br: BlockReport, report) -> FusionAnswer | None:
        stored = self.store.get(key)
        if stored is not None:
            br.fuse_cached = True
            usage = stored.get("usage", {})
            report.reused_tokens += int(usage.get("prompt_tokens", 0)) + int(
                usage.get("completion_tokens", 0)
            )
            return FusionAnswer.from_dict(stored["answer"])
        br.fuse_cached = False
        new_ids, known_ids = list(request.new_alias), list(request.known_alias)
        try:
            res = self.gateway.complete_json(
                role=ModelRole.FUSER,
                messages=request.messages,
                schema=request.schema,
                schema_name=FUSE_SCHEMA_NAME,
                step=f"fuse:{self.doc.name}/{block.key}",
                validate=lambda data: validate_fusion(data, new_ids, known_ids),
            )
        except ModelCallError as exc:
            if exc.kind not in SPLITTABLE:
                raise
            br.error = "; ".join(filter(None, [br.error, f"fusion failed: {exc.kind}"]))
            return None
        answer = res.checked
        usage = {"prompt_tokens": res.usage.prompt_tokens, "completion_tokens": res.usage.completion_tokens}
        self.store.put(key, "fuse", {"answer": answer.to_dict(), "usage": usage, "block": block.key})
        return answer
