"""``workbench extract PATH...``: build rule graphs from SKILLs with the extractor model.

Accepts SKILL.md files, folders with a SKILL.md (or folders of such folders) and zip files.
Every finished step is stored (``--steps`` folder, or the database with ``--into-store``), so
an interrupted run resumes and a re-run after an edit only asks about changed blocks.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from workbench.commands._common import action, add_actor_option, cli_actor

DEFAULT_STEPS_DIR = ".workbench/steps"


def register(sub: argparse._SubParsersAction) -> None:
    p = action(
        sub, "extract", _extract,
        help="extract rule graphs (CDGs) from SKILL.md files, folders or zips with the model",
        description="Extract atomic rules and require edges block by block, fuse them across "
        "blocks, and write a skillcdg/1 index and/or save new SKILL versions in the store. "
        "`workbench extract evaluate EXTRACTED.json REFERENCE.json` instead measures an "
        "extracted index against a reference (hand-built) one.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="SKILL.md, folder or .zip")
    p.add_argument("--out", metavar="INDEX.json", help="write the extracted skillcdg/1 index here")
    p.add_argument("--into-store", action="store_true",
                   help="save each SKILL as a new version in the workbench database")
    p.add_argument("--db", help="database URL for --into-store (default: WORKBENCH_DB or .workbench)")
    add_actor_option(p)
    p.add_argument("--report", metavar="REPORTS.json", help="write the extraction reports as JSON")
    p.add_argument("--steps", metavar="DIR",
                   help=f"folder of stored step results (default: {DEFAULT_STEPS_DIR}; with "
                   "--into-store: the database)")
    p.add_argument("--max-block-tokens", type=int, default=None,
                   help="split blocks longer than this (default 12000; the embedded model "
                   "works best around 300)")
    p.add_argument("--extract-prompt", choices=["units_v1", "extract_v1"], default="units_v1",
                   help="units_v1 (default): the text is cut into numbered sentences and the model "
                   "judges each, so every span is exact; extract_v1: the model lists rules and "
                   "copies each one's sentence (a strong model may find rules inside sentences)")
    p.add_argument("--no-fuse", action="store_true", help="skip cross-block fusion")
    p.add_argument("--related-by", choices=["words", "embedding"], default="words",
                   help="how fusion picks the known rules shown with a new block, besides text "
                   "cues: shared words (default) or sentence-embedding similarity (needs the "
                   "embedding model package; reaches rules that share no word)")
    p.add_argument("--model-edges", choices=["auto", "propose", "keep"], default="auto",
                   help="edges the model found with no cue in the text behind them: kept as edges "
                   "(keep), listed for review (propose), or auto: proposed when the fuser is the "
                   "embedded 1.5B model, whose own edges were rarely right, kept for any other")
    p.add_argument("--rename-duplicates", action="store_true",
                   help="rename a second SKILL with a taken name to NAME-2 instead of failing")
    p.add_argument("--attach", metavar="URL",
                   help="use a running `workbench model serve` (http://127.0.0.1:PORT/v1) for "
                   "embedded roles instead of starting a model in this process")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    # `workbench extract evaluate EXTRACTED.json REFERENCE.json` shares this parser (a
    # sub-command would take `evaluate` away from PATH), so its options live here too.
    p.add_argument("--path-credit", action="store_true",
                   help="evaluate: also count an edge that a reference path connects")
    p.add_argument("--json", metavar="OUT.json",
                   help="evaluate: write the figures as JSON here ('-': stdout only)")


class ProgressBar:
    """A one-line bar on a terminal; one line per finished block elsewhere (logs, CI)."""

    def __init__(self, stream=None, width: int = 28) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.started = time.monotonic()

    def __call__(self, event) -> None:
        if event.phase == "done":
            if self.tty:
                self.stream.write("\n")
            return
        filled = int(self.width * event.fraction)
        bar = "#" * filled + "." * (self.width - filled)
        how = "reused" if event.cached else f"{time.monotonic() - self.started:.0f}s"
        line = (f"[{bar}] {event.done}/{event.total} {event.phase:<7} {event.skill} > "
                f"{event.section[:60]} ({how})")
        if self.tty:
            self.stream.write("\r\x1b[2K" + line)
        elif event.phase == "fuse" or not event.cached:
            self.stream.write(line + "\n")
        self.stream.flush()


def _evaluate(args: argparse.Namespace) -> int:
    """Rule precision/recall, span exactness, modality agreement and edge P/R/F1 of an
    extracted index against a reference index (SKILLs paired by name)."""
    from workbench.commands._common import CliError
    from workbench.extract.evaluate import evaluate_index
    from workbench.graph import IndexValidationError, PolicyIndex

    if len(args.paths) != 3:
        raise CliError("usage: workbench extract evaluate EXTRACTED.json REFERENCE.json "
                       "[--path-credit] [--json OUT.json]")
    given = [f"--{n.replace('_', '-')}" for n in ("out", "into_store", "report", "steps") if getattr(args, n)]
    if given:
        raise CliError(f"`workbench extract evaluate` does not take {', '.join(given)}; it only "
                       "reads two indexes (use --json OUT.json to keep the figures)")
    args.extracted, args.reference = args.paths[1], args.paths[2]
    indexes = []
    for role, path in (("extracted", args.extracted), ("reference", args.reference)):
        try:
            indexes.append(PolicyIndex.load(path))
        except (FileNotFoundError, IndexValidationError) as exc:
            raise CliError(f"cannot read the {role} index: {exc}") from None
    result = evaluate_index(*indexes, path_credit=args.path_credit)
    if not result.skills:
        raise CliError(
            f"no SKILL of {args.extracted} has a reference of the same name in {args.reference} "
            f"(extracted: {', '.join(result.missing) or 'none'}); evaluate against the matching "
            "reference index"
        )
    text = json.dumps(result.to_dict(), ensure_ascii=False, indent=1)
    if args.json == "-":
        print(text)
        return 0
    print(result.table())
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            out.write(text + "\n")
        print(f"wrote the figures to {args.json}")
    return 0


def _extract(args: argparse.Namespace) -> int:
    from workbench.commands._common import CliError

    if args.paths[0] == "evaluate":  # `workbench extract evaluate A B`: a measurement, not a run
        return _evaluate(args)
    from workbench.extract import (
        DEFAULT_MAX_BLOCK_TOKENS,
        JsonStepStore,
        extract_skill,
        load_sources,
    )
    from workbench.graph import PolicyIndex
    from workbench.llm import Gateway, ModelCallError, load_config

    if not args.out and not args.into_store and not args.report:
        raise CliError("nothing would be kept: give --out INDEX.json, --into-store or --report FILE")
    if args.path_credit or args.json:
        raise CliError("--path-credit and --json belong to `workbench extract evaluate EXTRACTED.json "
                       "REFERENCE.json`")
    max_tokens = args.max_block_tokens or DEFAULT_MAX_BLOCK_TOKENS
    if max_tokens < 32:
        raise CliError(f"--max-block-tokens {max_tokens} is too small; use at least 32")
    docs = load_sources(args.paths, rename_duplicates=args.rename_duplicates)

    engine = None
    if args.into_store:
        from store.db import make_engine
        from store.edge_decisions import load_edge_decisions
        from store.extraction import SqlStepStore
        from store.repo import check_new_names, save_skill
        from workbench.identity.roles import require

        engine = make_engine(args.db)
        actor = cli_actor(args, engine)
        require(actor, "edit graphs")  # before any model call: a refused role costs nothing
        check_new_names(engine, [doc.name for doc in docs])  # before any model call
        steps = JsonStepStore(args.steps) if args.steps else SqlStepStore(engine)
    else:
        steps = JsonStepStore(args.steps or DEFAULT_STEPS_DIR)

    config = load_config()
    gateway = Gateway.from_env(config.attached_to(args.attach) if args.attach else config)

    similarity = None
    if args.related_by == "embedding":
        from workbench.llm.embeddings import EmbeddingUnavailable, load_model, make_similarity

        try:
            load_model()
        except EmbeddingUnavailable as exc:
            raise CliError(f"--related-by embedding: {exc}") from None
        similarity = make_similarity()

    progress = None if args.quiet else ProgressBar()
    skills, reports = [], []
    for doc in docs:
        try:
            # With the store, an author's verdicts on this SKILL's edges still hold.
            decisions = None if engine is None else load_edge_decisions(engine, doc.name)
            skill, report = extract_skill(
                doc, gateway, steps, progress, max_block_tokens=max_tokens, fuse=not args.no_fuse,
                decisions=decisions, similarity=similarity, extract_prompt=args.extract_prompt,
                model_edges=args.model_edges,
            )
        except ModelCallError as exc:
            raise CliError(
                f"{doc.name}: {exc}. Finished blocks are stored; run the same command again to "
                "resume."
            ) from None
        skills.append(skill)
        reports.append(report)
        for line in report.summary_lines():
            print(line)
        if engine is not None:
            saved = save_skill(engine, skill, author="extract", actor=actor,
                               note=f"extracted by {report.extractor_model}", report=report.to_dict(),
                               trust=True)
            state = "saved as version" if saved.created else "unchanged, still version"
            print(f"  {state} {saved.version} in the store")

    if args.out:
        PolicyIndex(skills).save(args.out)
        print(f"wrote {len(skills)} SKILL(s) to {args.out}")
    if args.report:
        with open(args.report, "w", encoding="utf-8") as out:
            json.dump([r.to_dict() for r in reports], out, ensure_ascii=False, indent=1)
        print(f"wrote {len(reports)} report(s) to {args.report}")
    return 0
