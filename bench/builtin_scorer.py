"""The built-in activation scorer: how it transfers to policies it never saw, what labels add
to it, and the scorer that ships (issue 57 item 3).

    python bench/builtin_scorer.py --source airlines=RUN.jsonl:CASES.jsonl \
        --source demo=fixtures/demo/traces_cdg.jsonl:fixtures/demo/cases.jsonl \
        --source handwritten=HW.jsonl:fixtures/handwritten/cases.jsonl \
        [--family airlines] [--boot 1000] [--json docs/evaluations/builtin-scorer.json] \
        [--save workbench/decision/builtin_scorer.json]

Each source is a judged run with its activations beside it (``RUN.features/``, written by
``workbench audit``) and its labelled cases; a group of sources written the same way (the
demo's and the hand-written cases of the bundled SKILLs) can be named one *kind* with
``--kind handwritten=demo,handwritten``. Every figure is out of sample for what it measures:

- **which feature and C** (one linear probe: a layer read at the last prompt token or pooled
  over the reply, and the L2 strength) are chosen on the training kinds alone, by grouped CV
  by conversation on them pooled (see ``choose_transfer`` for why not by leaving a kind out);
- **leave one kind out**: the probe chosen and fitted without a kind, scored on it — AUROC
  with a 95 % conversation-bootstrap interval, beside the judge's words on the same cases;
- **leave one workflow out** inside ``--family`` (CompliBench airlines' 9 workflows, each
  in three variants): the nearest stand-in for a CompliBench domain the scorer never saw;
- **labels that only ever help**: on each held-out kind, conversations split in halves
  (``--repeats`` times); the probe fitted without the kind decides the test half at 0 labels,
  then 20 and 50 labelled cases drawn from the other half are given to (i) the adaptation
  from the built-in probe (``workbench.decision._prior.adapt``) and (ii) a probe chosen and
  fitted from scratch on them alone; the judge's words on the same test halves;
- **labels needed** at α = 0.10 for 50 % coverage (``_labelling.labels_needed``), from the
  error of the most confident half of each kind's decisions.

``--save`` fits the chosen probe on every kind, calibrates it on its grouped-CV scores out of
fold (monotone, slope >= 0) and writes the setting the product ships. A refit changes the
scores the demo's explanations were asked with: record them again (``make demo-explain``). Paths in the output
are repository-relative.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.activation_scorers import boot_auroc  # noqa: E402
from workbench.audit import load_cases  # noqa: E402
from workbench.audit.trace import latest_per_case, trace_key  # noqa: E402
from workbench.audit.trace_file import read_traces  # noqa: E402
from workbench.decision._prior import adapt  # noqa: E402
from workbench.decision.features import feature_words, features_dir, load_features, read_index  # noqa: E402
from workbench.decision.learn import Labelled, auroc, choose, fit_config, score_config  # noqa: E402
from workbench.decision.scorers import Probe, fit_probe, logit  # noqa: E402
from workbench.vocabulary import label_violation  # noqa: E402

CS = (0.001, 0.01, 0.1)


def rel(path: Path | str) -> str:
    """``path`` relative to the repository, or ``<runs>/NAME`` for a run kept outside it."""
    p = Path(path).resolve()
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return f"<runs>/{p.name}"


def rel_arg(arg: str) -> str:
    """A command-line word with its paths repository-relative (``NAME=TRACES:CASES`` too)."""
    if Path(arg).exists():
        return rel(arg)
    name, eq, paths = arg.partition("=")
    if eq and ":" in paths:
        return name + "=" + ":".join(rel(p) if Path(p).exists() else p
                                     for p in paths.split(":"))
    return arg


@dataclass
class Source:
    name: str
    kind: str
    ids: list[str]
    groups: list[str]  # conversation
    family: list[str]  # the SKILL's workflow (SKILL name without its -wN variant)
    y: np.ndarray
    verbal: list[float | None]
    x: np.ndarray  # [cases, features, hidden]
    features: tuple[int, ...]


def load_source(name: str, kind: str, traces_path: Path, cases_path: Path) -> Source:
    cases = {c.id: c for c in load_cases(cases_path)}
    traces = {t.id: t for t in latest_per_case(read_traces(traces_path)[0], key=trace_key)}
    folder = features_dir(traces_path)
    ids = [r.case_id for r in read_index(folder)
           if r.case_id in cases and label_violation(cases[r.case_id].label) is not None]
    fs = load_features(folder, ids=ids)
    y = np.array([bool(label_violation(cases[c].label)) for c in ids])

    def family(cid: str) -> str:
        t = traces.get(cid)
        skill = ((t.skills if t is not None else None) or cases[cid].skills or ["?"])[0]
        return skill.rsplit("-w", 1)[0] if "-w" in skill else skill

    verbal = [traces[c].verdict.probability if c in traces and traces[c].verdict else None
              for c in ids]
    return Source(name, kind, ids, [f"{name}:{cases[c].session or c}" for c in ids],
                  [family(c) for c in ids], y, verbal, fs.arrays, fs.layers)


def concat(sources: list[Source]) -> Source:
    feats = sources[0].features
    assert all(s.features == feats for s in sources), "every source must hold the same features"
    return Source("+".join(s.name for s in sources), "+".join(sorted({s.kind for s in sources})),
                  sum((s.ids for s in sources), []), sum((s.groups for s in sources), []),
                  sum((s.family for s in sources), []), np.concatenate([s.y for s in sources]),
                  sum((s.verbal for s in sources), []), np.concatenate([s.x for s in sources]),
                  feats)


def take(s: Source, idx) -> Source:
    idx = list(idx)
    return Source(s.name, s.kind, [s.ids[i] for i in idx], [s.groups[i] for i in idx],
                  [s.family[i] for i in idx], s.y[idx], [s.verbal[i] for i in idx], s.x[idx],
                  s.features)


def fit(s: Source, fid: int, c: float, balance: bool = True) -> Probe:
    """A probe on feature ``fid``; each kind (source group) weighs the same in the fit."""
    col = s.features.index(fid)
    w = None
    if balance:
        kinds = [g.split(":", 1)[0] for g in s.groups]  # the source's name
        count = defaultdict(int)
        for k in kinds:
            count[k] += 1
        w = np.array([len(s.ids) / (len(count) * count[k]) for k in kinds])
    return fit_probe(s.x[:, col, :], s.y, fid, c, weight=w)


def score(p: Probe, s: Source) -> np.ndarray:
    return p.score(s.x[:, s.features.index(p.layer), :])


def choose_transfer(train: list[Source], features: list[int]) -> tuple[int, float, dict]:
    """The (feature, C) with the best AUROC out of fold under grouped CV by conversation on
    every training case pooled (each kind weighing the same in each fit). Leaving a training
    kind out in turn was the first rule; with the sources this project holds (200 airline
    cases, 21 demo cases) its mean was decided by a probe fitted on the 21 demo cases alone
    (AUROC 0.60 on airlines), noise rather than transfer. Pooled grouped CV keeps every
    choice out of sample and lets each kind speak in proportion to what it can say."""
    from workbench.decision.learn import grouped_splits

    one = concat(train)
    splits = list(grouped_splits(one.groups, 5, seed=0))
    tried: dict[str, float] = {}
    best = None
    for fid in features:
        for c in CS:
            oof = out_of_fold(one, fid, c, splits)
            ok = ~np.isnan(oof)
            m = auroc(oof[ok], one.y[ok])
            tried[f"{fid}:{c}"] = m
            if m == m and (best is None or m > best[0]):
                best = (m, fid, c)
    assert best is not None
    return best[1], best[2], tried


def out_of_fold(one: Source, fid: int, c: float, splits) -> np.ndarray:
    """Each case's score from a probe fitted without its conversation (NaN where a fold's
    training part held one label only)."""
    oof = np.full(len(one.y), np.nan)
    for a, b in splits:
        part = take(one, a)
        if part.y.all() or not part.y.any():
            continue
        oof[b] = score(fit(part, fid, c), take(one, b))
    return oof


def restrict(s: Source, feats: list[int]) -> Source:
    """``s`` with only the feature ids ``feats`` (every source must hold them)."""
    cols = [s.features.index(f) for f in feats]
    return Source(s.name, s.kind, s.ids, s.groups, s.family, s.y, s.verbal, s.x[:, cols, :],
                  tuple(feats))


def verbal_scores(s: Source) -> np.ndarray:
    return np.array([logit(p) if p is not None else np.nan for p in s.verbal])


def figure(scores: np.ndarray, s: Source, draws: int) -> dict:
    ok = ~np.isnan(scores)
    a = auroc(scores[ok], s.y[ok])
    lo, hi = boot_auroc(scores[ok], s.y[ok], [g for g, k in zip(s.groups, ok, strict=True) if k], draws)
    return {"auroc": a, "low": lo, "high": hi, "cases": int(ok.sum()),
            "violations": int(s.y[ok].sum())}


def curve(held: Source, prior: Probe, sizes: list[int], repeats: int, seed: int = 0) -> dict:
    """AUROC on test halves at 0 / n labels: adapted from the prior, from scratch, judge."""
    rng = np.random.default_rng(seed)
    uniq = sorted(set(held.groups))
    rows: dict[str, dict[int, list[float]]] = {k: defaultdict(list) for k in
                                               ("adapted", "scratch", "judge", "replaced")}
    vs = verbal_scores(held)
    for _ in range(repeats):
        perm = [uniq[i] for i in rng.permutation(len(uniq))]
        half = set(perm[: len(perm) // 2])
        pool = [i for i, g in enumerate(held.groups) if g in half]
        test = [i for i, g in enumerate(held.groups) if g not in half]
        yt = held.y[test]
        if yt.all() or not yt.any():
            continue
        base = score(prior, take(held, test))
        rows["adapted"][0].append(auroc(base, yt))
        okv = ~np.isnan(vs[test])
        if okv.sum() > 2:
            rows["judge"][0].append(auroc(vs[test][okv], yt[okv]))
        for n in sizes:
            if n > len(pool):
                continue
            pick = list(rng.permutation(pool)[:n])
            part = take(held, pick)
            if part.y.sum() < 2 or (~part.y).sum() < 2:
                continue
            col = held.features.index(prior.layer)
            ad = adapt(part.x[:, col, :], part.y, part.groups, prior)
            rows["adapted"][n].append(auroc(ad.scorer.score(held.x[test][:, col, :]), yt))
            rows["replaced"][n].append(float(ad.replaced))
            lab = Labelled(part.ids, part.groups, part.y, part.verbal, part.x, part.features)
            try:
                cfg = choose(lab, ("probe",), folds=min(4, len(set(part.groups)))).config
                sc = score_config(fit_config(lab, cfg), Labelled(
                    [held.ids[i] for i in test], [held.groups[i] for i in test], yt,
                    [held.verbal[i] for i in test], held.x[test], held.features))
                rows["scratch"][n].append(auroc(sc, yt))
            except ValueError:
                pass
            if okv.sum() > 2:
                rows["judge"][n].append(auroc(vs[test][okv], yt[okv]))
    out: dict = {}
    for k, by_n in rows.items():
        out[k] = {str(n): {"mean": float(np.mean(v)), "low": float(np.percentile(v, 5)),
                           "high": float(np.percentile(v, 95)), "draws": len(v)}
                  for n, v in sorted(by_n.items()) if v}
    # "never worse": per draw, adapted at n minus the built-in at 0 on the same test half
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", action="append", required=True,
                    help="NAME=TRACES.jsonl:CASES.jsonl (features beside the traces)")
    ap.add_argument("--kind", action="append", default=[],
                    help="KIND=NAME,NAME: sources written the same way, held out together")
    ap.add_argument("--family", default=None, help="a source to leave out workflow by workflow")
    ap.add_argument("--features", default="all", help="all, last, or a comma list of feature ids")
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--sizes", default="20,50")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--save", type=Path)
    ap.add_argument("--holdout", action="append", default=[],
                    help="NAME=TRACES.jsonl:CASES.jsonl: cases never used to choose or fit; "
                    "the scorer --save wrote (else the shipped one) decides them as the product "
                    "does")
    args = ap.parse_args()

    kind_of = {}
    for spec in args.kind:
        k, _, names = spec.partition("=")
        for n in names.split(","):
            kind_of[n.strip()] = k.strip()
    sources = []
    for spec in args.source:
        name, _, paths = spec.partition("=")
        t, _, c = paths.partition(":")
        s = load_source(name, kind_of.get(name, name), Path(t), Path(c))
        sources.append(s)
        print(f"{name} ({s.kind}): {len(s.ids)} cases, {int(s.y.sum())} violations, "
              f"{len(set(s.groups))} conversations", flush=True)
    # the feature ids every source holds (a capture of an older build kept the last prompt
    # token only)
    feats = [f for f in sources[0].features if all(f in s.features for s in sources)]
    sources = [restrict(s, feats) for s in sources]
    if args.features == "last":
        feats = [f for f in feats if f < 100]
    elif args.features != "all":
        feats = [int(x) for x in args.features.split(",")]
    kinds = sorted({s.kind for s in sources})
    sizes = [int(x) for x in args.sizes.split(",")]
    out: dict = {"kind": "builtin-scorer", "command": " ".join(rel_arg(a) for a in sys.argv),
        "sources": {s.name: {"kind": s.kind, "cases": len(s.ids), "violations": int(s.y.sum()),
                             "conversations": len(set(s.groups))} for s in sources},
        "leave_one_kind_out": {}, "curves": {}}

    for k in kinds:
        train = [s for s in sources if s.kind != k]
        held = concat([s for s in sources if s.kind == k])
        fid, c, _ = choose_transfer(train, feats)
        prior = fit(concat(train), fid, c)
        got = figure(score(prior, held), held, args.boot)
        got["judge"] = figure(verbal_scores(held), held, args.boot)
        got["chosen"] = f"{feature_words(fid)}, C={c:g}"
        out["leave_one_kind_out"][k] = got
        print(f"held out {k}: probe ({got['chosen']}) AUROC {got['auroc']:.3f} "
              f"[{got['low']:.3f}, {got['high']:.3f}] on {got['cases']} cases; the judge's words "
              f"{got['judge']['auroc']:.3f}", flush=True)
        out["curves"][k] = curve(held, prior, sizes, args.repeats)
        cv = out["curves"][k]
        print("   labels: " + "; ".join(
            f"{n}: adapted {cv['adapted'][n]['mean']:.3f}"
            + (f", scratch {cv['scratch'][n]['mean']:.3f}" if n in cv.get("scratch", {}) else "")
            + (f", judge {cv['judge'][n]['mean']:.3f}" if n in cv.get("judge", {}) else "")
            for n in cv["adapted"]), flush=True)

    if args.family:
        fam_src = next(s for s in sources if s.name == args.family)
        others = [s for s in sources if s.name != args.family]
        fams = sorted(set(fam_src.family))
        held_scores = np.full(len(fam_src.ids), np.nan)
        per = {}
        for f in fams:
            te = [i for i, x in enumerate(fam_src.family) if x == f]
            tr = [i for i, x in enumerate(fam_src.family) if x != f]
            train = [*others, take(fam_src, tr)]
            fid, c, _ = choose_transfer(train, feats)
            p = fit(concat(train), fid, c)
            held_scores[te] = score(p, take(fam_src, te))
            yt = fam_src.y[te]
            both = 0 < yt.sum() < len(yt)
            per[f] = {"cases": len(te), "auroc": auroc(held_scores[te], yt) if both else None,
                      "chosen": f"{feature_words(fid)}, C={c:g}"}
            print(f"   workflow {f} held out: {per[f]}", flush=True)
        got = figure(held_scores, fam_src, args.boot)
        got["judge"] = figure(verbal_scores(fam_src), fam_src, args.boot)
        got["workflows"] = per
        out["leave_one_workflow_out"] = got
        print(f"leave one workflow of {args.family} out: pooled AUROC {got['auroc']:.3f} "
              f"[{got['low']:.3f}, {got['high']:.3f}]; the judge's words {got['judge']['auroc']:.3f}")

    if args.save:
        save_builtin(sources, feats, out, args.save)
    for spec in args.holdout:
        name, _, paths = spec.partition("=")
        t, _, c = paths.partition(":")
        got = holdout(Path(t), Path(c), args.save or BUILTIN, args.boot)
        out.setdefault("held_out_of_everything", {})[name] = got
        print(f"{name}, never used to choose or fit: the built-in scorer AUROC {got['auroc']:.3f} "
              f"[{got['low']:.3f}, {got['high']:.3f}], accuracy {got['accuracy']:.3f}; the judge's "
              f"words AUROC {got['judge']['auroc']:.3f} [{got['judge']['low']:.3f}, "
              f"{got['judge']['high']:.3f}], accuracy {got['judge']['accuracy']:.3f} "
              f"({got['cases']} cases, {got['violations']} violations)", flush=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1), encoding="utf-8")


BUILTIN = ROOT / "workbench" / "decision" / "builtin_scorer.json"


def holdout(traces_path: Path, cases_path: Path, scorer_path: Path, draws: int) -> dict:
    """The saved scorer on a run it never saw, decided as the product decides it
    (``decided_verdict`` under the setting with its activation scores attached): AUROC of
    the calibrated score with its conversation-bootstrap interval and the accuracy of the
    decided label (a violation with no rule behind it yet, "to review", counts as the
    violation its score decided), beside the judge's words on the same cases."""
    from dataclasses import replace

    from workbench.decision import DecisionSetting, decided_verdict
    from workbench.decision.apply import activation_scores

    setting = DecisionSetting.from_dict(json.loads(scorer_path.read_text(encoding="utf-8"))["setting"])
    cases = {c.id: c for c in load_cases(cases_path)}
    traces = [t for t in latest_per_case(read_traces(traces_path)[0], key=trace_key)
              if t.id in cases and label_violation(cases[t.id].label) is not None
              and t.error is None and t.verdict is not None]
    scores = activation_scores(setting, features_dir(traces_path), ids=[t.id for t in traces])
    traces = [t for t in traces if t.id in scores]
    setting = replace(setting, case_scores={(t.id, t.strategy): scores[t.id] for t in traces})
    records = [decided_verdict(t, saved=(0, setting)) for t in traces]
    y = np.array([bool(label_violation(cases[t.id].label)) for t in traces])
    groups = [cases[t.id].session or t.id for t in traces]

    def measured(p: np.ndarray, said: np.ndarray) -> dict:
        low, high = boot_auroc(p, y, groups, draws)
        return {"auroc": auroc(p, y), "low": low, "high": high,
                "accuracy": float((said == y).mean())}

    got = measured(np.array([r.score for r in records]),
                   np.array([bool(r.decided.violation) for r in records]))
    verbal = np.array([t.verdict.probability if t.verdict.probability is not None
                       else float(t.verdict.violation) for t in traces])
    got["judge"] = measured(verbal, np.array([bool(t.verdict.violation) for t in traces]))
    got.update(cases=len(traces), violations=int(y.sum()), conversations=len(set(groups)),
               run=rel(traces_path), scorer=rel(scorer_path))
    return got


def save_builtin(sources: list[Source], feats: list[int], out: dict, path: Path) -> None:
    """Fit the shipped scorer on every kind, calibrated on its grouped-CV scores out of fold."""
    from workbench.decision._calibration import fit_monotone
    from workbench.decision._decide import DecisionSetting

    fid, c, tried = choose_transfer(sources, feats)
    everything = concat(sources)
    probe = fit(everything, fid, c)
    # Calibrated on scores each case got from a probe fitted without its conversation
    # (grouped CV on every kind pooled, as the choice was made): leave-one-kind-out scores
    # came from a probe fitted on the 21 demo cases alone for every airline case, which
    # flattened the calibration (slope 0.13) to say 'about 45 %' of everything.
    from workbench.decision.learn import grouped_splits

    oof = out_of_fold(everything, fid, c, list(grouped_splits(everything.groups, 5, seed=0)))
    ok = ~np.isnan(oof)
    cal = fit_monotone(oof[ok], everything.y[ok])
    setting = DecisionSetting(
        threshold=0.5, calibration=None if cal is None else {"a": cal.a, "b": cal.b},
        scorer=probe.to_dict(), ranks=True,
        fitted_on={"cases": len(everything.ids), "violations": int(everything.y.sum()),
                   "groups": len(set(everything.groups)),
                   "scorer": f"probe at {feature_words(fid)}, C={c:g}",
                   "sources": out["sources"], "builtin": True},
        cross_validated={"leave_one_kind_out": {k: {"auroc": v["auroc"], "low": v["low"],
                                                    "high": v["high"]}
                                                for k, v in out["leave_one_kind_out"].items()}})
    about = {"what": "the built-in activation scorer: a linear probe on the embedded 1.5B "
             "judge's hidden states, fitted on every labelled case the project holds",
             "chosen": f"probe at {feature_words(fid)}, C={c:g}",
             "by": "AUROC out of fold, grouped CV by conversation on every labelled case pooled",
             "leave_one_kind_out": setting.cross_validated["leave_one_kind_out"],
             "command": out["command"]}
    path.write_text(json.dumps({"kind": "builtin-scorer", "setting": setting.to_dict(),
                                "about": about}, indent=1), encoding="utf-8")
    print(f"saved the built-in scorer ({about['chosen']}) to {rel(path)}")


if __name__ == "__main__":
    main()
