"""Verdicts from the judge's activations against its verbal probability, on labelled cases.

    python bench/activation_scorers.py --traces run.jsonl --cases cases.jsonl \
        [--verbal verdicts.jsonl] [--features run.features] [--boot 2000] [--json OUT]

Reads the features captured beside ``--traces`` (``workbench features capture``), the labels
and conversations of ``--cases`` and the judge's verbal P(violation) (from the traces'
verdicts, or ``--verbal``: JSONL rows ``{"instance", "params_b", "probability"}`` of
``fixtures/scaling/two_sizes/verdicts.jsonl``, the 1.5B's). On the cases that have all three:

- AUROC of (i) the verbal probability, (ii) whitening, (iii) the probe, (iv) the probe
  combined with the verbal log-odds, and (v) the scorer chosen among them — each case scored
  by a scorer chosen *and* fitted without its conversation (nested 5-fold CV grouped by
  conversation), 95 % intervals from a conversation bootstrap of those out-of-fold scores;
- accuracy of the 50 % most confident decisions (out-of-fold monotone calibration);
- CompliBench's own figures at a calibrated 0.5: accuracy on non-violating turns, violation
  detection rate, share of conversations judged entirely right;
- at α = 0.10 (δ = 0.05) the auto-decide level chosen on each training fold with the binomial
  learn-then-test bound, and the realised error and coverage on the held-out folds;
- the learning curve (AUROC on held-out conversations against the number of labelled cases),
  from 0 labels when ``--prior`` gives a setting whose probe was fitted without these cases
  (the built-in scorer fitted on the other sources, ``bench/builtin_scorer.py``): at 0 labels
  it decides alone, then it adapts from the labels (``workbench.decision._prior.adapt``);
- leave-one-SKILL-out: a scorer fitted on the other SKILLs' cases, scored on the held-out one;
- the labels a promise at α needs for 50 % coverage (``_labelling.labels_needed``), from the
  error rate of the chosen scorer's most confident half.

Features: every captured one (the last prompt token and the reply's mean, max and last token,
at every second layer) or ``--features last`` (the last prompt token only, as captured before
issue 57); the choice among them is made inside each fold. Paths are recorded
repository-relative.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.audit import load_cases  # noqa: E402
from workbench.audit.trace_file import read_traces  # noqa: E402
from workbench.decision import choose_level, realised  # noqa: E402
from workbench.decision.features import features_dir, load_features, read_index  # noqa: E402
from workbench.decision.learn import (  # noqa: E402
    Labelled,
    auroc,
    calibrated_oof,
    choose,
    fit_config,
    grouped_splits,
    learning_curve,
    nested_scores,
    score_config,
)
from workbench.decision.scorers import logit  # noqa: E402
from workbench.vocabulary import label_violation  # noqa: E402


def boot_auroc(scores, truth, groups, draws, seed=7):
    """95 % interval of the AUROC over conversation-bootstrap draws ((None, None) when no
    draw holds both labels). bench/builtin_scorer.py reads its intervals here too."""
    by = defaultdict(list)
    for i, g in enumerate(groups):
        by[g].append(i)
    keys = sorted(by)
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(draws):
        idx = [i for k in rng.choice(len(keys), len(keys)) for i in by[keys[k]]]
        a = auroc(scores[idx], truth[idx])
        if a == a:
            vals.append(a)
    if not vals:
        return None, None
    return float(np.percentile(vals, 2.5)), float(np.percentile(vals, 97.5))


def confident_half(q, truth):
    decided = q >= 0.5
    conf = np.where(decided, q, 1 - q)
    order = np.argsort(-conf, kind="stable")
    k = max(1, round(len(q) / 2))
    return float((decided[order[:k]] == truth[order[:k]]).mean())


def complibench_figures(q, truth, groups):
    decided = q >= 0.5
    ok = decided == truth
    comp = ~truth
    convs = defaultdict(list)
    for i, g in enumerate(groups):
        convs[g].append(bool(ok[i]))
    return {"accuracy on non-violating turns": float(ok[comp].mean()),
            "violation detection rate": float(decided[truth].mean()),
            "conversations entirely right": float(np.mean([all(v) for v in convs.values()])),
            "accuracy": float(ok.mean())}


def guarantee_oof(data, scores, alpha, folds=5):
    """Level chosen on each training fold's (out-of-fold calibrated) confidences, applied to
    the held-out fold; pooled realised error and coverage."""
    truth = data.violation
    auto, wrong, n = 0, 0, 0
    levels = []
    for tr, te in grouped_splits(data.groups, folds, seed=3):
        tr_groups = [data.groups[i] for i in tr]
        q_tr = calibrated_oof(scores[tr], truth[tr], tr_groups, folds=4, seed=5)
        ok_tr = ~np.isnan(q_tr)
        conf_tr = np.where(q_tr >= 0.5, q_tr, 1 - q_tr)[ok_tr]
        right_tr = ((q_tr >= 0.5) == truth[tr])[ok_tr]
        g = choose_level(conf_tr, right_tr, alpha)
        levels.append(g.level)
        from workbench.decision import fit_monotone

        cal = fit_monotone(scores[tr], truth[tr])
        if cal is None:
            continue
        q_te = np.array([cal(s) for s in scores[te]])
        conf_te = np.where(q_te >= 0.5, q_te, 1 - q_te)
        right_te = (q_te >= 0.5) == truth[te]
        cov, err = realised(conf_te, right_te, g.level)
        k = round(cov * len(te))
        auto += k
        wrong += round(err * k) if k else 0
        n += len(te)
    return {"alpha": alpha, "coverage": auto / n if n else 0.0,
            "realised_error": wrong / auto if auto else float("nan"),
            "auto_decided": auto, "cases": n, "levels": levels}


def _rel(arg: str) -> str:
    """A path argument relative to the repository (``<runs>/NAME`` for one outside it)."""
    root = Path(__file__).resolve().parents[1]
    p = Path(arg)
    if not p.exists():
        return arg
    try:
        return str(p.resolve().relative_to(root))
    except ValueError:
        return f"<runs>/{p.name}"


def prior_curve(data, prior, sizes, repeats=10, seed=0):
    """AUROC on held-out conversations at 0 labels (the prior alone) and at each size (the
    prior adapted from that many labelled cases of the other half)."""
    from workbench.decision._prior import adapt

    col = data.layers.index(prior.layer)
    rng = np.random.default_rng(seed)
    uniq = sorted(set(data.groups))
    by_n = defaultdict(list)
    for _ in range(repeats):
        perm = [uniq[i] for i in rng.permutation(len(uniq))]
        half = set(perm[: len(perm) // 2])
        pool = [i for i, g in enumerate(data.groups) if g in half]
        test = [i for i, g in enumerate(data.groups) if g not in half]
        yt = data.violation[test]
        xt = data.x[test][:, col, :]
        by_n[0].append(auroc(prior.score(xt), yt))
        for n in sizes:
            pick = list(rng.permutation(pool)[:n])
            yp = data.violation[pick]
            if n > len(pool) or yp.sum() < 2 or (~yp).sum() < 2:
                continue
            ad = adapt(data.x[pick][:, col, :], yp, [data.groups[i] for i in pick], prior)
            by_n[n].append(auroc(ad.scorer.score(xt), yt))
    return [{"labelled": n, "auroc": float(np.mean(v)), "low": float(np.min(v)),
             "high": float(np.max(v)), "repeats": len(v)} for n, v in sorted(by_n.items())]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", required=True, type=Path)
    ap.add_argument("--cases", required=True, type=Path)
    ap.add_argument("--features", type=Path)
    ap.add_argument("--verbal", type=Path)
    ap.add_argument("--params-b", type=float, default=1.5)
    ap.add_argument("--boot", type=int, default=2000)
    ap.add_argument("--alpha", type=float, default=0.10)
    ap.add_argument("--sizes", default="10,20,30,50,80,110")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--note", default="", help="what the sample is, stored with the figures")
    ap.add_argument("--features-kept", dest="features_kept", default="all",
                    help="all (every pooling) or last (the last prompt token only)")
    ap.add_argument("--prior", type=Path, default=None,
                    help="a saved setting (JSON) whose probe starts the learning curve at 0 labels")
    args = ap.parse_args()

    cases = {c.id: c for c in load_cases(args.cases)}
    traces = {t.id: t for t in read_traces(args.traces)[0]}
    folder = args.features or features_dir(args.traces)
    verbal = {}
    if args.verbal:
        for line in args.verbal.read_text().splitlines():
            r = json.loads(line)
            if r.get("params_b") == args.params_b and r.get("probability") is not None:
                verbal[r["instance"]] = float(r["probability"])
    else:
        verbal = {i: t.verdict.probability for i, t in traces.items()
                  if t.verdict and t.verdict.probability is not None}
    captured = [r.case_id for r in read_index(folder)]
    ids = [c for c in captured if c in verbal and c in cases
           and label_violation(cases[c].label) is not None]
    fs = load_features(folder, ids=ids)
    if args.features_kept == "last":
        keep = [i for i, f in enumerate(fs.layers) if f < 100]
        fs = type(fs)(fs.ids, tuple(fs.layers[i] for i in keep), fs.arrays[:, keep, :], fs.model)
    truth = np.array([bool(label_violation(cases[c].label)) for c in ids])
    groups = [cases[c].session or c for c in ids]
    data = Labelled(ids, groups, truth, [verbal[c] for c in ids], fs.arrays, fs.layers)
    skills = [(traces[c].skills or ["?"])[0] if c in traces else "?" for c in ids]
    n_conv = len(set(groups))
    print(f"n = {len(ids)} cases ({int(truth.sum())} violations, {n_conv} conversations), "
          f"layers {fs.layers}, model {fs.model}")
    secs = [r.seconds for r in read_index(folder) if r.case_id in set(ids)]
    toks = [r.prompt_tokens for r in read_index(folder) if r.case_id in set(ids)]
    print(f"capture: {np.mean(secs):.1f} s a case on average ({np.mean(toks):.0f} prompt tokens)")
    out = {"kind": "activation-scorers", "command": " ".join(_rel(a) for a in sys.argv),
           "n": len(ids), "violations": int(truth.sum()), "conversations": n_conv,
           "layers": list(fs.layers), "capture_seconds_mean": float(np.mean(secs)),
           "prompt_tokens_mean": float(np.mean(toks)), "figures": {}}

    verbal_scores = np.array([logit(verbal[c]) for c in ids])
    scored = {"verbal probability": verbal_scores}
    chosen = {}
    variants = (("whitening", ("whitening",)), ("probe", ("probe",)),
                ("probe + verbal", ("combined",)), ("chosen by CV", ("whitening", "probe", "combined")))
    for name, kinds in variants:
        s, cfgs = nested_scores(data, kinds=kinds)
        scored[name] = s
        chosen[name] = [c.label() for c in cfgs]
    for name, s in scored.items():
        ok = ~np.isnan(s)
        a = auroc(s[ok], truth[ok])
        lo, hi = boot_auroc(s[ok], truth[ok], [g for g, k in zip(groups, ok, strict=False) if k], args.boot)
        q = calibrated_oof(s, truth, groups)
        okq = ~np.isnan(q)
        half = confident_half(q[okq], truth[okq])
        cb = complibench_figures(q[okq], truth[okq], [g for g, k in zip(groups, okq, strict=False) if k])
        g = guarantee_oof(data, s, args.alpha)
        out["figures"][name] = {"auroc": a, "low": lo, "high": hi, "confident_half": half,
                                **cb, "guarantee": g, "chosen": chosen.get(name)}
        print(f"{name:22s} AUROC {a:.3f} [{lo:.3f}, {hi:.3f}]  confident half {half:.3f}  "
              f"acc {cb['accuracy']:.3f}  non-viol acc {cb['accuracy on non-violating turns']:.3f}  "
              f"detect {cb['violation detection rate']:.3f}  conv right "
              f"{cb['conversations entirely right']:.3f}  | alpha {args.alpha}: coverage "
              f"{g['coverage']:.2f}, realised error {g['realised_error']:.3f}")
        if chosen.get(name):
            print(f"{'':22s} chosen per fold: {'; '.join(chosen[name])}")

    sizes = [int(x) for x in args.sizes.split(",") if int(x) < len(ids)]
    mid = fs.layers[len(fs.layers) // 4::max(1, len(fs.layers) // 5)]
    curve = learning_curve(data, sizes, kinds=("probe",), repeats=5, layers=mid)
    out["learning_curve"] = curve
    print(f"learning curve (probe, layer among {mid} and C chosen inside each draw):",
          ", ".join(f"{r['labelled']}: {r['auroc']:.3f}" for r in curve))

    if args.prior:
        from workbench.decision._decide import DecisionSetting
        from workbench.decision._prior import prior_probe

        raw = json.loads(args.prior.read_text())
        prior = prior_probe(DecisionSetting.from_dict(raw.get("setting", raw)))
        if prior is not None and prior.layer in fs.layers:
            pc = prior_curve(data, prior, sizes)
            out["learning_curve_from_prior"] = pc
            print("learning curve from the prior (0 labels: the prior alone; then adapted):",
                  ", ".join(f"{r['labelled']}: {r['auroc']:.3f}" for r in pc))

    from workbench.decision._labelling import labels_needed

    s_best = scored["chosen by CV"]
    q = calibrated_oof(s_best, truth, groups)
    okq = ~np.isnan(q)
    conf = np.where(q[okq] >= 0.5, q[okq], 1 - q[okq])
    right = (q[okq] >= 0.5) == truth[okq]
    order = np.argsort(-conf, kind="stable")[: max(1, okq.sum() // 2)]
    err = float((~right[order]).mean())
    f = labels_needed(args.alpha, err, 0.5, have=len(ids))
    out["labels_needed"] = {"alpha": args.alpha, "coverage": 0.5, "error_rate": err,
                            "auto_needed": f.auto_needed, "labels_needed": f.labels_needed,
                            "more": f.more}
    print(f"labels needed at alpha {args.alpha} for 50 % coverage: error rate of the confident "
          f"half {err:.3f} -> {f.labels_needed} labelled cases ({f.more} more than these)"
          if f.labels_needed else f"labels needed at alpha {args.alpha}: the confident half errs "
          f"{err:.3f} >= alpha, no number of labels makes the promise")

    # leave-one-SKILL-out with the whole-data choice of config
    cfg = choose(data, ("probe",)).config
    loso = {}
    for sk in sorted(set(skills)):
        te = [i for i, s in enumerate(skills) if s == sk]
        tr = [i for i, s in enumerate(skills) if s != sk]
        yt = truth[te]
        if yt.all() or not yt.any() or len(te) < 4:
            continue
        sc = score_config(fit_config(data.take(tr), cfg), data.take(te))
        loso[sk] = {"cases": len(te), "auroc": auroc(sc, yt),
                    "verbal_auroc": auroc(verbal_scores[te], yt)}
    out["leave_one_skill_out"] = {"config": cfg.label(), "skills": loso}
    if loso:
        w = np.array([v["cases"] for v in loso.values()])
        pooled = float(np.average([v["auroc"] for v in loso.values()], weights=w))
        pooled_v = float(np.average([v["verbal_auroc"] for v in loso.values()], weights=w))
        out["leave_one_skill_out"].update(weighted_auroc=pooled, weighted_verbal_auroc=pooled_v)
        print(f"leave-one-SKILL-out ({cfg.label()}, {len(loso)} SKILLs with both answers and "
              f">= 4 cases): weighted AUROC {pooled:.3f} (verbal on the same cases {pooled_v:.3f})")
    out["note"] = args.note
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
