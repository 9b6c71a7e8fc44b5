"""``workbench train``: training data from audits, GRPO for the keyworder, OPD for the judge."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from workbench.commands._common import (
    CliError,
    action,
    add_index_and_cases,
    audit_index_and_cases,
    command_group,
    load_index_or_fail,
)
from workbench.commands._training import (
    add_opd_gate,
    add_trainer_flags,
    progress,
    records_with_cases,
    trained,
    verified_judge,
)
from workbench.extras.lab_defaults import (  # the lab's own defaults, without loading the lab
    DEFAULT_JUDGE_TOKENS,
    DEFAULT_OPD_RECIPE,
    DEFAULT_OPD_WEIGHT,
    OPD_RECIPES,
)
from workbench.vocabulary import StrategyName


def register(subparsers: Any) -> None:
    sub = command_group(
        subparsers, "train",
        help="turn audited cases into a better keyworder (GRPO) and judge (OPD)",
        description="Training recipes of the SkillCDG papers: materialise training records "
        "from audit cases, train the keyword stage by GRPO with a graph-verified reward, and "
        "distil a judge by entropy-gated on-policy distillation. LoRA adapters are written "
        "to the run folder.",
        dest="train_command",
    )

    data = action(
        sub, "data", run_data,
        help="materialise judge and keyword prompts with labels and gold rules",
        description="One record per audit case: the exact judge prompt of a strategy, the "
        "keyword prompt, label, gold rules, pseudonymised session and complexity.",
    )
    data.add_argument("--index", help="skillcdg/1 policy index (JSON); with --from-store the "
                      "store's SKILLs when left out")
    data.add_argument("--cases", help="audit cases (JSONL); not with --from-store")
    data.add_argument("--from-store", metavar="DATASET",
                      help="records from the reviewed verdicts of this stored dataset: "
                      "confirmed ones keep the judge's verdict as the label, overturned ones "
                      "flip it, 'wrong rule' keeps it and is marked; unreviewed verdicts are "
                      "left out (see --unreviewed-weight)")
    data.add_argument("--unreviewed-weight", type=float, default=0.0, metavar="W",
                      help="with --from-store: keep unreviewed verdicts too, the judge's verdict "
                      "as the label, with this weight (0 < W <= 1; default 0: left out)")
    data.add_argument("--db", help="SQLAlchemy URL of the workbench database (--from-store; "
                      "default: WORKBENCH_DB or .workbench/workbench.db)")
    data.add_argument("--out", required=True, help="records JSONL to write")
    data.add_argument("--strategy", default=StrategyName.CDG, help="policy-access strategy (default cdg)")
    data.add_argument("--salt", default="", help="secret salt for session pseudonyms")
    data.add_argument("--budget", type=int, default=None, help="context token budget")
    data.add_argument("--hf", metavar="DIR", help="also save a Hugging Face dataset here")

    grpo = action(
        sub, "grpo", run_grpo,
        help="GRPO on the keyword prompt with a graph-verified or coverage reward",
        description="K keyword candidates per case from the student; reward = format "
        "validity x non-empty closure x (judge verdict correct | gold-rule coverage minus "
        "a token cost); group-normalised advantages.",
    )
    grpo.add_argument("--records", required=True, help="records from `workbench train data`")
    add_index_and_cases(grpo, cases_help="the audit cases the records were made from",
                        index_help="the policy index the records were made with")
    grpo.add_argument("--reward", choices=("coverage", "verified"), default=None,
                      help="default: verified, the second paper's reward (valid closure x "
                      "correct verdict of the judge role): it needs only labels, since gold "
                      "rules do not exist at training time, but costs one judge call per "
                      "candidate (K per case per step: about a minute each for the embedded "
                      "1.5B on 2 cores); coverage when every record carries gold rules (gold "
                      "rules in the closure minus a token cost: no judge call, and a graded "
                      "reward, so fewer groups of equal rewards). `train joint` uses the "
                      "verified reward with the student's own verdicts instead of judge calls")
    grpo.add_argument("--token-cost", type=float, default=0.05,
                      help="λ of the coverage reward, per 1000 context tokens (default 0.05)")
    grpo.add_argument("--group", type=int, default=8, help="candidates per case K (default 8)")
    add_trainer_flags(grpo, max_new_tokens=48)

    turns = action(
        sub, "grpo-contract", run_grpo_contract,
        help="GRPO on an agent's turns with a skill contract's progress reward",
        description="One prompt per agent turn of recorded trajectories (the conversation up "
        "to it); the student writes the turn (a JSON tool call or a message); reward = the "
        "return R = outcome + verified progress credit of the recorded trajectory with that "
        "turn in place (one advantage per trajectory, as the contracts paper; --advantage "
        "turn: the credit of the turn alone, rho on a recovery after shown feedback, 0 when "
        "rejected). A call is observed only when it is the recorded one.",
    )
    turns.add_argument("--contract", required=True, help="the skill contract (YAML)")
    turns.add_argument("--trajectories", required=True,
                       help="recorded trajectories (tau-bench JSON, message lists, JSON Lines)")
    turns.add_argument("--arm", choices=("feedback_credit", "credit_only"),
                       default="feedback_credit",
                       help="factorial arm: feedback shown (recovery discount) or withheld "
                       "(no discount); the outcome-only arms give one turn no reward")
    turns.add_argument("--rho", type=float, default=None,
                       help="recovery discount in (0, 1] (default: the contract's)")
    turns.add_argument("--advantage", choices=("trajectory", "turn"), default="trajectory",
                       help="trajectory (default, the contracts paper): one advantage per "
                       "trajectory, from the return of the recorded run with the student's turn "
                       "in place of the recorded one; turn: the credit the turn alone adds "
                       "(see docs/recipes.md)")
    turns.add_argument("--turns", type=int, default=None,
                       help="the first N agent turns of each trajectory (default: all)")
    turns.add_argument("--group", type=int, default=8, help="candidates per turn K (default 8)")
    add_trainer_flags(turns, max_new_tokens=96)

    export = action(
        sub, "export", run_export,
        help="write a trained LoRA adapter as a llama.cpp adapter GGUF for the audit",
        description="Converts a run's adapter (or a checkpoint's) into a llama.cpp LoRA adapter "
        "checked against the base model GGUF; serve it with `workbench model serve --lora "
        "OUT` and point a role (e.g. the keyworder) at that server.",
    )
    export.add_argument("adapter", help="a run folder (its adapter/ is used) or a PEFT adapter folder")
    export.add_argument("--out", required=True, help="adapter GGUF to write")
    export.add_argument("--base", default="embedded",
                        help="base model GGUF the adapter was trained on: a .gguf file, 'embedded' "
                        "(default, the 1.5B) or 'embedded:small' (the 0.5B)")

    _register_opd(sub)
    _register_joint(sub)


def _register_opd(sub: Any) -> None:
    opd = action(
        sub, "opd", run_opd,
        help="on-policy distillation of the judge from a teacher, by a named recipe",
        description="The student answers the judge prompt; the frozen teacher scores its "
        "tokens; clipped k1 as a detached advantage (vanilla policy gradient) on the tokens "
        "the gate keeps. Settings come from --recipe; a flag given explicitly overrides that "
        "one value. Recipes (docs/recipes.md: each beside its paper's row): "
        "scaling-guided = the first paper's Table 13 (lr 1e-6, k1 clamp [-10, 10], no gate, "
        "LoRA 32/64, T 0.7 / top-p 0.9, 128 tokens, 2 epochs, batch 24, seed 17); "
        "entropy-gated = the second paper's OPD (the 20 % highest-entropy tokens only; the "
        "rest as Table 13); cpu (default) = entropy-gated at lr 1e-4 with the verdict and "
        "termination tokens kept beyond the 20 %, because on 2 CPU cores a paper's rate "
        "moves nothing in the steps one can afford (measured: 1e-5 changed none of 30 "
        "held-out verdicts, 1e-4 changed 5; fixtures/scaling/two_sizes/README.md). On a GPU "
        "use a paper's recipe. Records may be `train data` output or a `scaling select` set "
        "(uniform.jsonl / headroom.jsonl).",
    )
    opd.add_argument("--records", required=True, help="records with a judge 'prompt'")
    opd.add_argument("--teacher", required=True,
                     help="teacher checkpoint (same tokenizer), e.g. 'embedded' (the 1.5B GGUF) "
                     "for --student embedded:small (the 0.5B)")
    opd.add_argument("--recipe", choices=OPD_RECIPES, default=DEFAULT_OPD_RECIPE,
                     help=f"named settings (default {DEFAULT_OPD_RECIPE}); explicit flags override them")
    opd.add_argument("--gate", choices=("entropy", "none"), default=None,
                     help="OPD gate: entropy (the top fraction by entropy) or none (every "
                     "token); default: the recipe's")
    opd.add_argument("--top-fraction", type=float, default=None,
                     help="entropy gate share (default: the recipe's, 0.2)")
    opd.add_argument("--keep-outcome-tokens", action=argparse.BooleanOptionalAction,
                     default=None, help="also supervise the verdict and termination tokens "
                     "beyond the entropy gate's share (ours; default: the recipe's: on in cpu, "
                     "off in the papers')")
    opd.add_argument("--clip", type=float, default=None,
                     help="k1 clamp c, [-c, c] (default: the recipe's, 10)")
    opd.add_argument("--lora-alpha", type=int, default=None,
                     help="LoRA alpha (default: the recipe's, 64; 2 x --lora-rank when only "
                     "the rank is given)")
    add_trainer_flags(opd, max_new_tokens=None)


def _register_joint(sub: Any) -> None:
    joint = action(
        sub, "joint", run_joint,
        help="one rollout batch, two losses: GRPO for the keywords, OPD for the verdicts",
        description="The second paper's joint step (§4.2): the student writes K keyword "
        "candidates per case; each valid closure they seed is judged by the student itself; "
        "the verified reward (valid closure x correct verdict) drives GRPO on the keyword "
        "tokens, and the frozen teacher's scores of the student's verdict tokens drive "
        "entropy-gated OPD, in one update (loss = GRPO + w x OPD). Needs labelled cases; "
        "beside it, `train grpo` and `train opd` run the two stages apart.",
    )
    joint.add_argument("--records", required=True, help="records from `workbench train data`")
    add_index_and_cases(joint, cases_help="the audit cases the records were made from",
                        index_help="the policy index the records were made with")
    joint.add_argument("--teacher", required=True,
                       help="teacher checkpoint for the judgment stage (same tokenizer), e.g. 'embedded'")
    joint.add_argument("--group", type=int, default=8, help="keyword candidates per case K (default 8)")
    joint.add_argument("--opd-weight", type=float, default=DEFAULT_OPD_WEIGHT,
                       help=f"w, the OPD loss against the GRPO loss (default {DEFAULT_OPD_WEIGHT:g})")
    joint.add_argument("--judge-max-new-tokens", type=int, default=DEFAULT_JUDGE_TOKENS,
                       help=f"verdict length limit (default {DEFAULT_JUDGE_TOKENS})")
    add_opd_gate(joint)
    add_trainer_flags(joint, max_new_tokens=48, temperature=0.7, top_p=0.9)


def _recipe_settings(args: argparse.Namespace):
    """`train opd`'s recipe with the flags given explicitly laid over it."""
    from workbench.train.recipes import FLAGS, recipe, with_overrides

    names = {"learning_rate": "lr"}
    given = {field: getattr(args, names.get(field, field)) for field in FLAGS}
    try:
        return with_overrides(recipe(args.recipe), given)
    except ValueError as exc:
        raise CliError(str(exc)) from None


def _config(args: argparse.Namespace):
    from workbench.train.models import LoraSettings
    from workbench.train.trainers import TrainConfig

    if getattr(args, "recipe", None):
        r = _recipe_settings(args)
        for flag, value in (("lr", r.learning_rate), ("epochs", r.epochs),
                            ("global_batch", r.global_batch), ("lora_rank", r.lora_rank),
                            ("max_new_tokens", r.max_new_tokens), ("temperature", r.temperature),
                            ("top_p", r.top_p), ("seed", r.seed), ("gate", r.gate),
                            ("top_fraction", r.top_fraction), ("clip", r.clip)):
            setattr(args, flag, value)
        alpha, keep = r.lora_alpha, r.keep_outcome_tokens
    else:
        alpha, keep = 2 * args.lora_rank, True

    if args.lora_rank < 1:
        raise CliError("--lora-rank must be at least 1")
    if args.lora_layers < 0:
        raise CliError("--lora-layers must be 0 (all layers) or more")
    if args.max_steps is not None and args.max_steps < 1:
        raise CliError("--max-steps must be at least 1")
    if args.save_every < 1:
        raise CliError("--save-every must be at least 1")
    cfg = TrainConfig(
        epochs=args.epochs, global_batch=args.global_batch, micro_batch=args.micro_batch,
        learning_rate=args.lr, max_new_tokens=args.max_new_tokens, temperature=args.temperature,
        top_p=args.top_p,
        save_every=args.save_every, max_steps=args.max_steps, seed=args.seed, dtype=args.dtype,
        lora=LoraSettings(rank=args.lora_rank, alpha=alpha, layers=args.lora_layers),
        group=getattr(args, "group", 8), gate=getattr(args, "gate", "entropy"),
        top_fraction=getattr(args, "top_fraction", 0.2), clip=getattr(args, "clip", 10.0),
        keep_outcome_tokens=keep, recipe=getattr(args, "recipe", None),
    )
    try:
        cfg.check("grpo" if hasattr(args, "group") else "opd")
    except ValueError as exc:
        raise CliError(str(exc)) from None
    return cfg


def _reviewed_records(args: argparse.Namespace, options):
    """Records of the reviewed verdicts of ``--from-store`` (see workbench.train.reviewed)."""
    from store import audit_repo, repo
    from store.db import make_engine
    from store.review import decisions_for
    from store.verdicts import dataset_verdicts
    from workbench.audit import AuditIndex
    from workbench.audit.strategies import STRATEGIES
    from workbench.review.queue import build_queue
    from workbench.train.data import materialise_reviewed
    from workbench.train.reviewed import reviewed_labels

    if args.cases:
        raise CliError("--cases and --from-store both name the cases; --from-store reads them "
                       "from the store, so leave out --cases")
    if args.strategy not in STRATEGIES:
        raise CliError(f"unknown strategy {args.strategy!r}; choose one of {', '.join(STRATEGIES)}")
    if not 0.0 <= args.unreviewed_weight <= 1.0:
        raise CliError(f"--unreviewed-weight {args.unreviewed_weight} is outside [0, 1]; "
                       "0 leaves unreviewed verdicts out")
    dataset = args.from_store
    engine = make_engine(args.db)
    cases = audit_repo.load_cases(engine, dataset)
    if not cases:
        raise CliError(f"dataset {dataset!r} has no stored cases",
                       "store them with `workbench import-cases --dataset NAME`, or check the name")
    if args.index:
        index = load_index_or_fail(args.index)
    elif repo.skill_names(engine):
        index = repo.export_index(engine, repo.skill_names(engine))
    else:
        raise CliError("the store holds no SKILLs to build the prompts with",
                       "pass --index INDEX.json or `workbench import INDEX.json` first")
    labels = {c.id: c.label for c in cases if c.label}
    # The decided records (the dataset's setting, explanations, decisions): what the Review
    # card shows, never the judge's words read again at 0.5.
    decided = {v.key: v for v in dataset_verdicts(engine, dataset)}
    items = [i for i in build_queue(audit_repo.run_traces(engine, dataset), labels, dataset,
                                    verdicts=decided)
             if i.strategy == args.strategy]
    reviewed = reviewed_labels(items, decisions_for(engine, dataset),
                               unreviewed_weight=args.unreviewed_weight)
    records, missing = materialise_reviewed(cases, AuditIndex(index), reviewed.labels,
                                            args.strategy, options=options, salt=args.salt)
    left = dict(reviewed.left_out) | ({"case not stored": missing} if missing else {})
    return records, left, len(items)


def run_data(args: argparse.Namespace) -> int:
    from workbench.audit import AuditOptions
    from workbench.train.data import materialise, to_hf_dataset, write_jsonl

    options = AuditOptions().with_context(budget=args.budget)
    left: dict[str, int] = {}
    if args.from_store:
        records, left, verdicts = _reviewed_records(args, options)
    else:
        if not args.index or not args.cases:
            raise CliError("train data needs --index and --cases (or --from-store DATASET)")
        index, cases = audit_index_and_cases(args, args.strategy)
        records = materialise(cases, index, args.strategy, options=options, salt=args.salt)
    try:
        path = write_jsonl(records, args.out)
        if args.hf:
            to_hf_dataset(records).save_to_disk(args.hf)
    except OSError as exc:
        raise CliError(f"could not write the records: {exc}; choose a writable path") from None
    failed = [r for r in records if r.error]
    print(f"{len(records)} records -> {path} ({len(records) - len(failed)} with a judge prompt, "
          f"{sum(bool(r.gold_rules) for r in records)} with gold rules)")
    if args.from_store:
        flipped = sum(bool(r.review.get("flipped")) for r in records)
        marked = sum(bool(r.review.get("wrong_rule")) for r in records)
        print(f"from {verdicts} {args.strategy} verdict(s) of {args.from_store}: "
              f"{sum(r.review.get('decision') != 'unreviewed' for r in records)} reviewed "
              f"({flipped} overturned: label flipped; {marked} marked 'wrong rule')"
              + "".join(f"; left out, {why}: {n}" for why, n in sorted(left.items())))
    for r in failed[:5]:
        print(f"note: {r.id}: no judge prompt ({r.error})", file=sys.stderr)
    return 0


def run_grpo(args: argparse.Namespace) -> int:
    from workbench.train.data import read_jsonl
    from workbench.train.rewards import coverage_reward, keyword_closure, verified_reward
    from workbench.train.trainers import train_grpo
    from workbench.vocabulary import label_violation

    config = _config(args)
    index, cases = audit_index_and_cases(args)
    rows = read_jsonl(args.records, require=("id", "keyword_prompt", "gold_rules"))
    by_id = records_with_cases(rows, cases, args.cases)
    if args.reward is None:
        args.reward = "coverage" if rows and all(r["gold_rules"] for r in rows) else "verified"
        why = "every record has gold rules" if args.reward == "coverage" else "the default"
        print(f"reward: {args.reward} ({why}; --reward chooses)", file=sys.stderr)
    if args.reward == "coverage":
        rows = [r for r in rows if r["gold_rules"]]
        if not rows:
            raise CliError("no record has gold rules, which the coverage reward needs; use "
                           "--reward verified or cases with gold.governing_rule")
        judge = None
    else:
        rows = [r for r in rows if label_violation(r.get("label")) is not None]
        if not rows:
            raise CliError("no record is labelled, which the verified reward needs")
        judge = verified_judge()
    chosen = [by_id[r["id"]] for r in rows]

    def reward(i: int, text: str) -> float:
        outcome = keyword_closure(chosen[i], text, index)
        if judge is None:
            return coverage_reward(outcome, rows[i]["gold_rules"], args.token_cost)
        return verified_reward(outcome, chosen[i], judge)

    return trained(lambda: train_grpo(args.student, [r["keyword_prompt"] for r in rows], reward,
                                       args.run_dir, config, resume=args.resume, progress=progress))


def run_joint(args: argparse.Namespace) -> int:
    from workbench.audit.judge import judge_messages
    from workbench.train.data import read_jsonl
    from workbench.train.joint import JointSettings, train_joint
    from workbench.train.rewards import keyword_closure
    from workbench.vocabulary import label_violation

    config = _config(args)
    settings = JointSettings(opd_weight=args.opd_weight, judge_max_new_tokens=args.judge_max_new_tokens)
    try:
        settings.check()
    except ValueError as exc:
        raise CliError(str(exc)) from None
    index, cases = audit_index_and_cases(args)
    rows = read_jsonl(args.records, require=("id", "keyword_prompt", "label"))
    by_id = records_with_cases(rows, cases, args.cases)
    rows = [r for r in rows if label_violation(r.get("label")) is not None]
    if not rows:
        raise CliError("no record is labelled, which the verified reward of the joint step needs")
    chosen = [by_id[r["id"]] for r in rows]

    def judge_prompt(i: int, text: str):
        outcome = keyword_closure(chosen[i], text, index)
        if not outcome.valid or not outcome.closure_nonempty or outcome.context is None:
            return None
        return judge_messages(chosen[i], outcome.context.text)

    labels = [label_violation(r["label"]) for r in rows]
    return trained(lambda: train_joint(args.student, args.teacher, [r["keyword_prompt"] for r in rows],
                                        judge_prompt, labels, args.run_dir, config, settings,
                                        resume=args.resume, progress=progress))


def run_grpo_contract(args: argparse.Namespace) -> int:
    from workbench.contracts import load_contract
    from workbench.train.agent_turns import load_agent_turns, turn_reward
    from workbench.train.trainers import train_grpo

    config = _config(args)
    if args.turns is not None and args.turns < 1:
        raise CliError("--turns must be at least 1 (or left out: every agent turn)")
    contract = load_contract(args.contract)
    turns = load_agent_turns(args.trajectories, contract, turns_per_trajectory=args.turns)
    if not turns:
        raise CliError(f"{args.trajectories}: no agent turn after a user message to train on; "
                       "give trajectories with user and assistant messages")
    def train():
        reward = turn_reward(contract, turns, arm=args.arm, rho=args.rho,
                             advantage=args.advantage)
        return train_grpo(args.student, [t.prompt for t in turns], reward, args.run_dir,
                          config, resume=args.resume, progress=progress)

    return trained(train, before=f"{len(turns)} agent turns; ")


def run_opd(args: argparse.Namespace) -> int:
    from workbench.train.data import read_jsonl
    from workbench.train.trainers import train_opd

    config = _config(args)
    rows = read_jsonl(args.records, require=("prompt",))
    rows = [r for r in rows if isinstance(r["prompt"], list) and r["prompt"]]
    if not rows:
        raise CliError(f"{args.records}: no record carries a judge prompt (chat messages); make "
                       "the records with `workbench train data`, or `scaling select --index`")
    labels = [r.get("violation") if isinstance(r.get("violation"), bool) else None for r in rows]
    kept = " + verdict/termination tokens" if config.keep_outcome_tokens else ""
    gate = (f"top {config.top_fraction:g} by entropy{kept}" if config.gate == "entropy"
            else "every token")
    print(f"recipe {config.recipe}: lr {config.learning_rate:g}, k1 clamp ±{config.clip:g}, "
          f"gate {gate}, LoRA {config.lora.rank}/{config.lora.alpha}, T {config.temperature:g} / "
          f"top-p {config.top_p:g}, {config.max_new_tokens} tokens, {config.epochs} epochs, "
          f"batch {config.global_batch}, seed {config.seed}", file=sys.stderr)
    return trained(lambda: train_opd(args.student, args.teacher, [r["prompt"] for r in rows],
                                      args.run_dir, config, labels=labels, resume=args.resume,
                                      progress=progress))


def run_export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from workbench.train.export import export_lora_gguf

    folder = Path(args.adapter)
    if (folder / "adapter").is_dir():
        folder = folder / "adapter"
    from workbench.llm.weights import DEFAULT_MODEL, embedded_name_of

    done = export_lora_gguf(folder, args.out, base=args.base)
    name = embedded_name_of(str(args.base))
    model = f" --model {name}" if name not in (None, DEFAULT_MODEL) else ""
    print(f"{done.tensors} LoRA pairs (rank {done.rank}, alpha {done.alpha:g}, {done.architecture}) "
          f"-> {done.path}; serve with `workbench model serve{model} --lora {done.path}`")
    return 0
