"""Malformed-input generators and the file-taking entry points they are thrown at.

Shared by ``tests/test_fuzz_inputs.py`` (hypothesis drives ``random.Random`` seeds, a few dozen
examples per reader in the normal suite) and ``bench/fuzz_inputs.py`` (thousands, with
counts). Mutations start from a valid file of each kind and apply what issue 15 found
breaking readers: foreign encodings, stray bytes, truncation (also inside a multi-byte
character), NUL, BOMs, lone surrogates, huge integers, deep nesting, duplicate keys, YAML
aliases and tags, and structure-aware edits that keep the JSON valid but the content wrong;
and the hostile shapes of issue 36: SKILL names that look like another (zero-width, bidi
overrides, full-width and mixed-script letters), a second ``name:`` in front matter, zip
bombs (a high ratio, many members, look-alike names), ids holding line breaks or bidi
controls, trace fields outside the vocabulary, conversations of thousands of turns, and
inputs that are not regular files (a FIFO, a device: ``tests/special_inputs.py``).

The property for every target: the entry point returns (exit 0, or 2 with an ``error:``
message naming the input file), never raises; it finishes within :data:`TIME_LIMIT_S`; and
an exit 2 from a command that writes leaves the store as it was (no partial write).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import shutil
import sys
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures"
INDEX = FIX / "audit" / "merchant_index.json"
CASES = FIX / "audit" / "merchant_cases.jsonl"
TRACES = FIX / "demo" / "traces_cdg.jsonl"
CONTRACT = FIX / "contracts" / "airline.yaml"
TRAJECTORIES = FIX / "contracts" / "airline_synthetic.json"
OUTCOMES = FIX / "scaling" / "outcomes.csv"
COMPLIBENCH = FIX / "audit" / "complibench" / "airlines" / "conversation_00000.json"
IMPORTERS = FIX / "importers"
SKILL = FIX / "demo" / "skills"
LABELS = b"item,annotator,label\nr1,ann,correct\nr1,bob,wrong\nr2,ann,correct\nr2,bob,\n"
TIME_LIMIT_S = 20.0  # per input, on a loaded 2-core machine; a hang is far beyond it

PAYLOADS: tuple[bytes, ...] = (
    b"\x00", b"\xff", b"\xe9", b"\x92", b"\xc3", b"\xef\xbb\xbf", b"\xfe\xff", b"\r", b"\n",
    b"\\udc80", b"\\ud800", b"\\ud83d\\ude00", '\u2028'.encode(), "é".encode(), b'"', b"{",
    b"}", b"[", b"]", b",", b":", b"'", b"&a", b"*a", b"!!binary ", b"!!python/object:os.system ",
    b"!!timestamp ", b"!!set ", b"? ", b"- ", b"---\n", b"...\n", b"\t", b"9" * 4400,
    b"-" + b"7" * 5000, b"1e999999", b"NaN", b"Infinity", b"[" * 3000, b"{\"a\":" * 2000,
    b"- " * 500, b"\xf0\x9f\x98", b"null", b"true", b"\"\"",
)

# Ids and names of issue 36: a forged log line, direction overrides, invisible characters.
HOSTILE_IDS = ("c1\n[audit] c2 cdg: compliant", "c1\r", "\u202e1-esac", "c\u2066x", "a\x1b[31m")
HOSTILE_NAMES = ("retail\u200b-policy", "retail-\u202epolicy", "\uff52etail-policy",
                 "r\u0435tail-policy", "\ufb01nance", "a\u2028b", "MERCHANT-ORDER-REFUND")
# Near misses of trace vocabulary: each would make a group of its own in the metrics.
VOCABULARY_MISSES = {"strategy": ["skillcdg", "CDG", "<b>cdg</b>", "cdg "],
                     "judge_mode": ["whole ", "per_rule", "checklist?"],
                     "keywords_method": ["LLM", "lexical\n"], "label": ["violation", "Negative"]}

YAML_BOMB = (b"a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
             b"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
             b"e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
             b"g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n")


def _json_value(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.randrange(14 if depth < 3 else 10)
    if pick == 0:
        return None
    if pick == 1:
        return rng.choice([True, False])
    if pick == 2:
        return rng.choice([0, -1, 1, 2**63, -(2**31), 10**30])
    if pick == 3:
        return rng.choice([0.5, -0.0, 1e308, float("nan"), float("inf")])
    if pick == 4:
        return ""
    if pick == 5:
        return rng.choice(["\udc80", "a\ud800b", "x\x00y", "../../x", "\u2028", "é" * 3, " ",
                           *HOSTILE_IDS])
    if pick == 6:
        return "".join(chr(rng.randrange(0x20, 0x3000)) for _ in range(rng.randrange(1, 12)))
    if pick == 7:
        return rng.choice(["R1", "required", "prohibited", "negative", "positive", "require"])
    if pick == 8:
        return "x" * rng.randrange(0, 3000)
    if pick == 9:
        return {"start": rng.randrange(-5, 5000), "end": rng.randrange(-5, 5000)}
    if pick == 10:
        return [_json_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    if pick == 11:
        return {rng.choice(["id", "name", "x", ""]): _json_value(rng, depth + 1)
                for _ in range(rng.randrange(0, 3))}
    if pick == 12:
        deep: Any = 1
        for _ in range(rng.randrange(50, 400)):
            deep = [deep]
        return deep
    return rng.choice([[], {}])


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:8]):
            out += _paths(v, (*prefix, i))
    return out


def _edit_json(rng: random.Random, value: Any) -> Any:
    """Replace, delete or duplicate-with-change one node of a parsed JSON value."""
    paths = _paths(value)
    path = rng.choice(paths)
    if not path:
        return _json_value(rng)
    parent = value
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    action = rng.randrange(3)
    if action == 0 and isinstance(parent, dict):
        del parent[last]
    elif action == 1 and isinstance(parent, list):
        parent.insert(last, _json_value(rng))
    else:
        parent[last] = _json_value(rng)
    return value


def _dump_json(rng: random.Random, value: Any, indent: int | None) -> bytes:
    text = json.dumps(value, ensure_ascii=rng.random() < 0.5, indent=indent)
    return text.encode("utf-8", errors="surrogatepass")


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    """One text-agnostic mutation of ``data``."""
    action = rng.randrange(11)
    at = rng.randrange(len(data) + 1)
    if action == 0:  # truncated write (kill -9, full disk): anywhere, even mid-character
        return data[:at]
    if action == 1:
        return data[:at] + rng.choice(PAYLOADS) + data[at:]
    if action == 2:
        return data[:at] + bytes([rng.randrange(256)]) + data[at + 1:]
    if action == 3:
        end = min(len(data), at + rng.randrange(1, 200))
        return data[:at] + data[end:]
    if action == 4:
        text = data.decode("utf-8", errors="replace")
        codec = rng.choice(["utf-16", "utf-16-le", "utf-32", "utf-32-be", "latin-1", "cp1252"])
        return text.encode(codec, errors="replace")
    if action == 5:
        return rng.choice([b"", b"\xef\xbb\xbf", bytes(rng.randrange(256) for _ in range(300))])
    if action == 6:
        lines = data.split(b"\n")
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
        return b"\n".join(lines)
    if action == 7:
        return b"\xef\xbb\xbf" + data
    if action == 8:
        return data[:at] + rng.choice(PAYLOADS) * rng.randrange(1, 60) + data[at:]
    if action == 9:
        return data + rng.choice(PAYLOADS)
    return data.replace(b"\n", b"\r\n")


def mutate_json(rng: random.Random, data: bytes, jsonl: bool) -> bytes:
    if rng.random() < 0.45:
        return mutate_bytes(rng, data)
    if jsonl:
        lines = [ln for ln in data.split(b"\n") if ln.strip()]
        i = rng.randrange(len(lines))
        edited = _edit_json(rng, json.loads(lines[i]))
        if isinstance(edited, dict) and rng.random() < 0.25:
            edited = _hostile_record(rng, edited)
        lines[i] = _dump_json(rng, edited, None).replace(b"\n", b" ")
        if rng.random() < 0.2:  # the same key twice on one line
            lines[i] = lines[i].replace(b"{", b'{"id": "dup", ', 1)
        return b"\n".join(lines) + b"\n"
    value = json.loads(data)
    for _ in range(rng.randrange(1, 4)):
        value = _edit_json(rng, value)
    out = _dump_json(rng, value, rng.choice([None, 1]))
    if rng.random() < 0.2:
        out = out.replace(b'"format"', b'"format": "skillcdg/1", "format"', 1)
    return out


def _hostile_record(rng: random.Random, record: dict) -> dict:
    """One issue-36 edit of a case or trace line: an id with a control character, a field
    outside the vocabulary, or (a case) a conversation of thousands of turns."""
    action = rng.randrange(3)
    if action == 0:
        record["id"] = rng.choice(HOSTILE_IDS)
    elif action == 1:
        key = rng.choice(sorted(VOCABULARY_MISSES))
        record[key] = rng.choice(VOCABULARY_MISSES[key])
    elif isinstance(record.get("context"), list) and record["context"]:
        turns = record["context"]
        record["context"] = [turns[k % len(turns)] for k in range(rng.choice([2_000, 6_000]))]
    return record


def mutate_yaml(rng: random.Random, data: bytes) -> bytes:
    if rng.random() < 0.2:
        key = rng.choice([b"x-bomb:\n", b"version: ", b"tools: "])
        bomb = b"".join(b"  " + ln + b"\n" for ln in YAML_BOMB.splitlines())
        return data + b"\n" + (b"x-bomb:\n" + bomb + b"tools: *h\n" if key == b"tools: " else
                               key + rng.choice([b"!!binary aGk=", b"2024-01-01", b"*nope", b"[" * 500])
                               + b"\n")
    return mutate_bytes(rng, data)


def _zip(members: list[tuple[str, bytes]], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as zf:
        for name, body in members:
            zf.writestr(name, body)
    return buf.getvalue()


def _zip_bomb(rng: random.Random, skill: bytes) -> bytes:
    """Small-scale shapes of the issue-36 bomb: a member of repeated text (ratio far over
    the limit), more entries than allowed (the default 10,000; empty ones, so the archive
    stays small), or two SKILLs whose names differ only in case or look-alike letters."""
    shape = rng.randrange(3)
    if shape == 0:
        return _zip([("s/SKILL.md", skill + b"Refund within five days.\n" * 40_000)])
    if shape == 1:
        return _zip([("s/SKILL.md", skill)] + [(f"junk/{i}", b"") for i in range(10_050)],
                    zipfile.ZIP_STORED)
    other = rng.choice(HOSTILE_NAMES[-2:] + ("Merchant-Order-Refund",)).encode()
    twin = re.sub(rb"(?m)^name:.*$", lambda _m: b"name: " + other, skill, count=1)
    return _zip([("a/SKILL.md", skill), ("b/SKILL.md", twin)])


def mutate_zip(rng: random.Random, skill: bytes) -> bytes:
    if rng.random() < 0.2:
        return _zip_bomb(rng, skill)
    name = rng.choice(["s/SKILL.md", "../../evil/SKILL.md", "/abs/SKILL.md", "a/b/c/skill.md",
                       "__MACOSX/s/SKILL.md", ".hidden/SKILL.md", "SKILL.md", "s\\SKILL.md"])
    body = mutate_skill(rng, skill) if rng.random() < 0.7 else skill
    front = rng.choice([b"", b'---\nname: "../../../x"\n---\n', b'---\nname: ""\n---\n'])
    archive = _zip([(name, front + body)] + ([("t/SKILL.md", skill)] if rng.random() < 0.3 else []))
    if rng.random() < 0.4:
        archive = mutate_bytes(rng, archive)
    return archive


def mutate_skill(rng: random.Random, data: bytes) -> bytes:
    if rng.random() < 0.15:  # the name itself looks like another, or is given twice
        hostile = json.dumps(rng.choice(HOSTILE_NAMES)).encode()
        if rng.random() < 0.5:
            return re.sub(rb"(?m)^name:.*$", lambda _m: b"name: " + hostile, data, count=1)
        end = data.index(b"\n---", 3)
        return data[:end] + b"\nname: " + hostile + data[end:]
    if rng.random() < 0.3:
        end = data.index(b"\n---", 3)
        extra = rng.choice([b"\nversion: " + b"9" * 5000, b"\nx: " + b"[" * 300 + b"]" * 300,
                            b"\nname: ../../x", b"\nname: ''", b"\nname: [a]", b"\nx: a\x00b",
                            b"\nz:\n" + b"".join(b"  " + ln + b"\n" for ln in YAML_BOMB.splitlines()),
                            b"\nname: " + b"n" * 80])
        return data[:end] + extra + data[end:]
    return mutate_bytes(rng, data)


# -- targets ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Target:
    """One reader or CLI entry: what to feed it and how to call it."""

    name: str
    filename: str
    seed: Callable[[], bytes]
    mutate: Callable[[random.Random, bytes], bytes]
    argv: Callable[[Path, Path], list[str]] | None = None  # (input, work dir) -> CLI argv
    call: Callable[[Path], int] | None = None  # a reader called directly: 0 read, 2 refused
    writes: bool = False  # exit 2 must leave the database untouched
    outputs: tuple[str, ...] = ()  # files/folders under the work dir that exit 2 must not create


def _skill_seed() -> bytes:
    return sorted(SKILL.rglob("SKILL.md"))[0].read_bytes()


def _load_skill(path: Path) -> int:
    """What ``workbench extract`` (files) and the Skills page (uploads) read a SKILL with,
    short of calling the model; an error is printed the way the CLI prints it."""
    from workbench.extract.sources import SkillSourceError, load_sources, load_uploads
    from workbench.skill.document import SkillFormatError

    codes = []
    for load in (lambda: load_sources([path]), lambda: load_uploads([(path.name, path.read_bytes())])):
        try:
            load()
            codes.append(0)
        except (SkillFormatError, SkillSourceError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            codes.append(2)
    if codes[0] != codes[1]:
        raise AssertionError(f"file and upload readers disagree: {codes}")
    return codes[0]


def _load_outcomes(path: Path) -> int:
    """What ``workbench scaling fit|select`` read their outcomes table with (fitting itself
    is numeric work on validated data, too slow to fuzz)."""
    from workbench.scaling import OutcomesError, load_outcomes

    try:
        load_outcomes(path)
    except OutcomesError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _two_skill_index() -> bytes:
    """The merchant index with a renamed second copy of its SKILL: an import that fails on
    the second SKILL must not have stored the first."""
    data = json.loads(INDEX.read_bytes())
    second = json.loads(json.dumps(data["skills"][0]))
    second["name"] += "-second"
    data["skills"].append(second)
    return json.dumps(data, ensure_ascii=False, indent=1).encode()


def _audit_argv(path: Path, work: Path) -> list[str]:
    return ["audit", "--index", str(INDEX), "--cases", str(path), "--strategy", "cdg",
            "--no-judge", "--out", str(work / "out.jsonl")]


TARGETS: tuple[Target, ...] = (
    Target("skill-md", "SKILL.md", _skill_seed, mutate_skill, call=_load_skill),
    Target("skill-zip", "bundle.zip", _skill_seed, mutate_zip, call=_load_skill),
    Target("index:graph-stats", "index.json", INDEX.read_bytes,
           lambda r, d: mutate_json(r, d, False), argv=lambda p, w: ["graph", "stats", str(p)]),
    Target("index:import", "index.json", _two_skill_index, lambda r, d: mutate_json(r, d, False),
           argv=lambda p, w: ["import", str(p)], writes=True),
    Target("cases:import-cases", "cases.jsonl", CASES.read_bytes,
           lambda r, d: mutate_json(r, d, True),
           argv=lambda p, w: ["import-cases", str(p), "--dataset", "fz"], writes=True),
    Target("cases:audit", "cases.jsonl", CASES.read_bytes, lambda r, d: mutate_json(r, d, True),
           argv=_audit_argv, outputs=("out.jsonl",)),
    Target("cases:openai", "chat.jsonl", (IMPORTERS / "openai_chat.jsonl").read_bytes,
           lambda r, d: mutate_json(r, d, True),
           argv=lambda p, w: ["import-cases", str(p), "--dataset", "fz", "--format", "openai"],
           writes=True),
    Target("cases:tau2", "results.json", (IMPORTERS / "tau2_airline_results.json").read_bytes,
           lambda r, d: mutate_json(r, d, False),
           argv=lambda p, w: ["import-cases", str(p), "--dataset", "fz", "--format", "tau2"],
           writes=True),
    Target("cases:otel", "spans.jsonl", (IMPORTERS / "otel_genai_spans.jsonl").read_bytes,
           lambda r, d: mutate_json(r, d, True),
           argv=lambda p, w: ["import-cases", str(p), "--dataset", "fz", "--format", "otel"],
           writes=True),
    Target("cases:map-csv", "qa.csv", (IMPORTERS / "qa_export.csv").read_bytes, mutate_bytes,
           argv=lambda p, w: ["import-cases", str(p), "--dataset", "fz", "--map",
                              "id=ticket,history=conversation,reply=bot_answer,label=qa_result"],
           writes=True),
    Target("traces:metrics", "traces.jsonl", TRACES.read_bytes,
           lambda r, d: mutate_json(r, d, True), argv=lambda p, w: ["metrics", str(p)]),
    Target("traces:import-traces", "traces.jsonl", TRACES.read_bytes,
           lambda r, d: mutate_json(r, d, True),
           argv=lambda p, w: ["import-traces", str(p), "--dataset", "fz", "--run-id", "r"],
           writes=True),
    Target("contract:check", "contract.yaml", CONTRACT.read_bytes, mutate_yaml,
           argv=lambda p, w: ["contract", "check", str(p)]),
    Target("trajectories:replay", "runs.json", TRAJECTORIES.read_bytes,
           lambda r, d: mutate_json(r, d, False),
           argv=lambda p, w: ["contract", "replay", str(CONTRACT), str(p)]),
    Target("complibench:import", "cb/conversation_00000.json", COMPLIBENCH.read_bytes,
           lambda r, d: mutate_json(r, d, False),
           argv=lambda p, w: ["import-complibench", str(p.parent), "--out", str(w / "cb-out")],
           outputs=("cb-out",)),
    Target("outcomes:csv", "outcomes.csv", lambda: b"".join(OUTCOMES.open("rb").readlines()[:80]),
           mutate_bytes,
           call=_load_outcomes),
    Target("labels:agreement", "labels.csv", lambda: LABELS, mutate_bytes,
           argv=lambda p, w: ["annotate", "agreement", str(p)]),
)
BY_NAME = {t.name: t for t in TARGETS}


def store_snapshot(url: str) -> tuple:
    """Everything the fuzzed commands can write: SKILL versions, cases, traces."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            tables = {r[0] for r in conn.execute(text("select name from sqlite_master where type='table'"))}
            counts = []
            for table in sorted(tables):
                counts.append((table, conn.execute(text(f'select count(*) from "{table}"')).scalar()))
            return tuple(counts)
    finally:
        engine.dispose()


@dataclass
class Outcome:
    code: int | None
    seconds: float
    error: str = ""  # the traceback when the entry raised
    problem: str = ""  # a broken property other than a traceback


def run_target(target: Target, data: bytes, work: Path) -> Outcome:
    """Feed ``data`` to ``target`` once; report what happened instead of raising."""
    import traceback

    from workbench.cli import main

    work.mkdir(parents=True, exist_ok=True)
    path = work / target.filename
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    for name in ("out.jsonl", *target.outputs):
        shutil.rmtree(work / name, ignore_errors=True)
        (work / name).unlink(missing_ok=True)
    url = use_db(work)
    if target.writes:
        # The schema first: a command's first run creates the tables (and the migration
        # row), which is no partial write of the input.
        from store.db import make_engine

        make_engine(url).dispose()
    before = store_snapshot(url) if target.writes else None
    err = io.StringIO()
    started = time.perf_counter()
    code: int | None = None
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            if target.call is not None:
                code = target.call(path)
            else:
                assert target.argv is not None
                code = main(target.argv(path, work))
    except BaseException as exc:  # noqa: BLE001 - the point is to count them
        if isinstance(exc, KeyboardInterrupt):
            raise
        return Outcome(None, time.perf_counter() - started,
                       "".join(traceback.format_exception(exc))[-3000:])
    seconds = time.perf_counter() - started
    out = Outcome(code, seconds)
    message = err.getvalue()
    if code not in (0, 2):
        out.problem = f"exit {code}: {message[-500:]}"
    elif code == 2 and not any(line.startswith("error: ") for line in message.splitlines()):
        out.problem = f"exit 2 without an 'error:' line: {message[:500]}"
    elif code == 2 and path.name not in message:
        out.problem = f"exit 2 without naming {path.name}: {message[:500]}"
    elif code == 2 and before is not None and store_snapshot(url) != before:
        out.problem = "exit 2 but the store changed (partial write)"
    elif code == 2 and any((work / name).exists() for name in target.outputs):
        out.problem = "exit 2 but output files were written (partial write)"
    if seconds > TIME_LIMIT_S:
        out.problem = out.problem or f"took {seconds:.1f} s"
    return out


def use_db(work: Path) -> str:
    """Point WORKBENCH_DB at a scratch database under ``work`` (the CLI's default engine),
    so a fuzz run never touches a real workspace."""
    url = f"sqlite:///{work / 'fuzz.db'}"
    os.environ["WORKBENCH_DB"] = url
    return url


if __name__ == "__main__":  # pragma: no cover - a quick manual smoke run
    rng = random.Random(0)
    for t in TARGETS:
        print(t.name, run_target(t, t.mutate(rng, t.seed()), Path(sys.argv[1]) / t.name.replace(":", "_")))
