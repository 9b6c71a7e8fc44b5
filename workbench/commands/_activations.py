"""The judge's activations kept by ``workbench audit`` (issue 57): whether a run can keep
them, and the pieces that do it on local threads or on Ray workers
(``workbench.llm.onepass``, ``workbench.audit.activations.FeatureWriter``)."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any

from workbench.vocabulary import JudgeMode, ModelRole


def activation_plan(args: Any, judge_mode: str, config: Any) -> dict[str, Any] | None:
    """The OnePass settings of this run, or None: not asked for (``--no-activations``), no
    ``--out`` to keep them beside, a judge mode whose prompt is not the whole-context one,
    or a judge this process cannot read (another server, a hosted model)."""
    if not args.activations or args.out is None or judge_mode != JudgeMode.WHOLE or config is None:
        return None
    from workbench.llm.config import attached_url_of

    role = config.role(ModelRole.JUDGE)
    if role.embedded_model is None or attached_url_of(config, role):
        return None
    e = config.embedded
    return {"model": f"embedded:{role.embedded_model.name}", "slots": e.parallel,
            "threads": e.n_threads, "cache_dir": e.cache_dir or None}


def score_only_plan(args: Any) -> dict[str, Any]:
    """The reading settings of ``--score-only`` (the judge's role must be an embedded model:
    only its weights can be read here)."""
    from workbench.commands._common import CliError
    from workbench.llm.config import load_config

    if args.out is None:
        raise CliError("--score-only keeps each case's activations beside --out; give --out")
    config = load_config()
    role = config.role(ModelRole.JUDGE)
    if role.embedded_model is None:
        raise CliError(f"--score-only reads the judge's own weights, and the judge is "
                       f"{role.model!r}", "set the judge to the embedded model, or drop --score-only")
    e = config.embedded
    return {"model": f"embedded:{role.embedded_model.name}", "slots": e.parallel,
            "threads": e.n_threads, "cache_dir": e.cache_dir or None}


def _folder(args: Any) -> Path:
    from workbench.decision.features import features_dir

    folder = features_dir(Path(args.out))
    print(f"[audit] keeping the judge's activations in {folder} (--no-activations: off)",
          file=sys.stderr)
    return folder


def local_writer(args: Any, plan: dict[str, Any], gateway: Any, cases: list) -> Any:
    """A FeatureWriter fed by a OnePass on this process's gateway (None: no judge calls,
    every prompt read without an answer)."""
    from workbench.audit.activations import FeatureWriter
    from workbench.llm.onepass import OnePass

    onepass = OnePass(**plan)
    if gateway is not None:
        gateway.onepass = onepass
    return FeatureWriter(_folder(args), {c.id: c for c in cases}, onepass)


def ray_parts(args: Any, plan: dict[str, Any], cases: list) -> tuple[Any, Any, Any]:
    """(each worker's OnePass factory, the driver's Readings, the FeatureWriter on them)."""
    from workbench.audit.activations import FeatureWriter
    from workbench.audit.ray_engine import Readings
    from workbench.llm.onepass import JudgeReader, OnePass

    local: list[JudgeReader] = []

    def reader() -> JudgeReader:  # a case whose worker sent no reading is read here
        if not local:
            local.append(JudgeReader(plan["model"], threads=plan["threads"],
                                     cache_dir=plan["cache_dir"]))
        return local[0]

    name = plan["model"].removesuffix(":default")
    readings = Readings("embedded" if name == "embedded" else name, reader)
    writer = FeatureWriter(_folder(args), {c.id: c for c in cases}, readings)
    return functools.partial(OnePass, **plan), readings, writer


def report(writer: Any) -> None:
    s, source = writer.summary, writer.onepass
    handed = (f", {source.restored} prompts handed to the server, {source.fallbacks} read "
              "again by it" if hasattr(source, "restored") else "")
    print(f"[audit] activations: {s.captured} kept ({writer.from_judge} read in the judge's "
          f"own pass, {s.captured - writer.from_judge} read without an answer){handed}; in "
          f"{writer.folder}", file=sys.stderr)
    failed = writer.failed + list(getattr(source, "failures", []))
    if failed:
        print(f"[audit] warning: {len(failed)} prompt(s) could not be read for activations "
              f"(their verdicts stand; `workbench features capture` can read them later), "
              f"e.g. {failed[0]}", file=sys.stderr)
    if hasattr(source, "close"):
        source.close()
