"""Import CompliBench conversations as SKILLs, a policy index and audit cases.

Input: ``DIR`` holding ``conversation_*.json`` files (searched recursively), in the format of
``shared/corpora/complibench/SOURCES.md``. Output in ``OUT``:

- ``skills/<name>/SKILL.md``: one SKILL per (intent, workflow): the ORIGINAL (correct)
  guidelines: Category 1 (universal), the intent's Category 2 workflow phases, and the
  Category 3 condition-triggered guidelines. With ``long=True`` the SKILL also holds
  distractor workflows of the same domain (every other (intent, workflow) of the input, or
  ``distractors`` of them), placed in a deterministic shuffled order around its own workflow.
- ``index.json``: a ``skillcdg/1`` index compiled *structurally* from that layout: one rule
  per guideline, spans pointing at the guideline text, and a ``require`` edge from each
  workflow phase to the phase before it (judging a step needs the steps it follows). This
  is a deterministic compilation of already-atomic guidelines, not LLM extraction; it gives
  every case a gold rule id for coverage measurements.
- ``cases.jsonl``: one case per assistant turn: ``context`` = the turns before it,
  ``background`` = the persona (the environment state), ``model_response`` = the turn,
  ``label`` = ``negative`` iff the turn index is in ``mistakes`` (they override
  ``message_list``), and ``gold`` = the governing guideline (category, key, phase, rule id)
  and, for violations, the violated one with the injected text and evidence.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.audit.cases import AuditCase, Turn, dump_cases, pseudonymise
from workbench.errors import WorkbenchError
from workbench.graph import IndexValidationError, PolicyIndex
from workbench.inputs import MAX_INPUT_BYTES, MAX_LINE_BYTES, InputError, read_json
from workbench.vocabulary import Label

CAT1 = "Category 1: Universal Compliance"
CAT2 = "Category 2: Intent Triggered Guidelines"
CAT3 = "Category 3: Condition Triggered Guidelines"


class CompliBenchFormatError(WorkbenchError, ValueError):
    """A conversation file does not have the fields the import needs."""


@dataclass
class Workflow:
    intent: str
    index: int
    phases: dict[int, str]  # phase number -> guideline text

    @property
    def key(self) -> tuple[str, int]:
        return (self.intent, self.index)


@dataclass
class Conversation:
    path: Path
    domain: str
    workflow: Workflow
    cat1: dict[str, str]
    cat3: dict[str, str]
    messages: list[dict[str, Any]]
    mistakes: dict[int, dict[str, Any]]
    persona: dict[str, Any] | None = None


@dataclass
class ImportSummary:
    conversations: int = 0
    skills: int = 0
    rules: int = 0
    cases: int = 0
    violations: int = 0
    files: list[str] = field(default_factory=list)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def skill_name(domain: str, wf: Workflow) -> str:
    return f"{_slug(domain.split('_')[0])}-{_slug(wf.intent)}-w{wf.index}"


def phase_rule_id(intent: str, index: int, phase: int) -> str:
    return f"{intent}.w{index}.p{phase}"


def cond_rule_id(key: str) -> str:
    return f"cond.{key}"


def _phase_number(label: Any) -> int:
    m = re.search(r"\d+", str(label))
    if not m:
        raise CompliBenchFormatError(f"phase label {label!r} has no number")
    return int(m.group())


def read_conversation(path: Path) -> Conversation:
    try:
        data = read_json(path, "CompliBench conversation")
        guidelines = data["assistant_guidelines"]
        intent = data["intent_name"]
        phases_raw = guidelines[CAT2][intent]
        wf = Workflow(
            intent,
            int(data["workflow_index"]),
            {_phase_number(k): str(v) for k, v in phases_raw.items()},
        )
        mistakes = {int(m["turn_index"]): m for m in data.get("mistakes") or []}
        return Conversation(
            path=path,
            domain=str(data.get("domain") or "domain"),
            workflow=wf,
            cat1={str(k): str(v) for k, v in (guidelines.get(CAT1) or {}).items()},
            cat3={str(k): str(v) for k, v in (guidelines.get(CAT3) or {}).items()},
            messages=list(data["message_list"]),
            mistakes=mistakes,
            persona=data.get("persona") if isinstance(data.get("persona"), dict) else None,
        )
    except InputError as exc:  # encoding, JSON syntax, bounds: already names file and line
        raise CompliBenchFormatError(f"{exc}; not a readable CompliBench conversation") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CompliBenchFormatError(
            f"{path}: not a CompliBench conversation ({type(exc).__name__}: {str(exc)[:200]}); see "
            "shared/corpora/complibench/SOURCES.md for the expected fields"
        ) from None


def _title(intent: str) -> str:
    return intent.replace("_", " ")


class _Writer:
    """Builds SKILL text while recording each guideline's span and rule."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.rules: list[dict[str, Any]] = []
        self.edges: list[dict[str, str]] = []

    def add(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)

    def rule(self, rid: str, condition: str, action: str, text: str) -> None:
        start = self.size
        self.add(text)
        self.rules.append({
            "id": rid, "condition": condition, "action": action, "modality": "required",
            "spans": [{"start": start, "end": start + len(text)}],
        })

    @property
    def text(self) -> str:
        return "".join(self.parts)


def _split_condition(text: str) -> tuple[str, str]:
    """'If X, do Y' -> ('X', 'do Y'); other texts keep the whole text as the action."""
    m = re.match(r"^\s*If (.+?), (.+)$", text, re.S)
    if m:
        return m.group(1).strip(), m.group(2).strip()
    return "the condition described applies", text.strip()


def build_skill(
    conv: Conversation, distractors: list[Workflow], domain_label: str
) -> dict[str, Any]:
    """The skillcdg/1 SKILL dict (name, description, source, rules, edges)."""
    wf = conv.workflow
    name = skill_name(conv.domain, wf)
    description = (
        f"{domain_label} virtual assistant policy for {_title(wf.intent)} requests "
        f"(workflow {wf.index}): universal conduct, the step-by-step workflow"
        + (" (with other workflows of the domain)" if distractors else "")
        + ", and condition-triggered guidelines such as transfers to a human agent."
    )
    w = _Writer()
    # A JSON string is a valid YAML scalar: the description's colons stay plain text.
    w.add(f"---\nname: {name}\ndescription: {json.dumps(description)}\n---\n\n")
    w.add(f"# {domain_label} assistant policy: {_title(wf.intent)} (workflow {wf.index})\n\n")
    w.add("## Universal compliance\n\n")
    for key, text in conv.cat1.items():
        w.add(f"- {key}: ")
        w.rule(f"universal.{key}", "throughout the conversation", text, text)
        w.add("\n")
    workflows = [wf, *distractors]
    order = list(range(len(workflows)))
    random.Random(name).shuffle(order)
    for i in order:
        cur = workflows[i]
        w.add(f"\n## Workflow: {_title(cur.intent)} (variant {cur.index})\n\n")
        w.add(f"Use this workflow for {_title(cur.intent)} requests. Follow the phases in order.\n")
        prev = None
        for phase in sorted(cur.phases):
            text = cur.phases[phase]
            rid = phase_rule_id(cur.intent, cur.index, phase)
            w.add(f"\n### Phase {phase}\n\n")
            w.rule(rid, f"handling a {_title(cur.intent)} request (variant {cur.index}), phase "
                        f"{phase} of {len(cur.phases)}", text, text)
            w.add("\n")
            if prev is not None:
                w.edges.append({"source": rid, "target": prev, "type": "require"})
            prev = rid
    w.add("\n## Condition-triggered guidelines\n\nThese override the workflow when their condition holds.\n")
    for key, text in conv.cat3.items():
        w.add(f"\n### {_title(key)}\n\n")
        cond, action = _split_condition(text)
        w.rule(cond_rule_id(key), cond, action, text)
        w.add("\n")
    return {"name": name, "description": description, "source": w.text,
            "rules": w.rules, "edges": w.edges}


def _gold_of(conv: Conversation, msg: dict[str, Any]) -> dict[str, Any]:
    turn = int(msg["turn_index"])
    wf = conv.workflow

    def rule_of(category: str, key: str, phase: Any) -> str | None:
        if str(category).startswith("Category 3"):
            return cond_rule_id(key)
        if str(category).startswith("Category 2") and phase not in (None, -1):
            return phase_rule_id(key, wf.index, int(phase))
        return None

    governing = {"category": msg.get("category"), "key": msg.get("key"), "phase": msg.get("phase")}
    gold: dict[str, Any] = {
        "source": conv.path.name,
        "turn_index": turn,
        "governing": governing,
        "governing_rule": rule_of(governing["category"], governing["key"], governing["phase"]),
        "violated": None,
        "violated_rule": None,
    }
    if turn in conv.mistakes:
        m = conv.mistakes[turn]
        gold["violated"] = {
            "category": m.get("guidance category"),
            "key": m.get("guidance key"),
            "phase": m.get("guideline_phase"),
            "guideline": m.get("guideline"),
            "evidence": m.get("evidence"),
        }
        gold["violated_rule"] = rule_of(m.get("guidance category"), m.get("guidance key"),
                                        m.get("guideline_phase"))
        # The violated guideline is the one that governed the turn.
        gold["governing_rule"] = gold["violated_rule"] or gold["governing_rule"]
    return gold


def conversation_cases(
    conv: Conversation, skill: str, salt: str | None = None
) -> list[AuditCase]:
    stem = conv.path.stem
    session = pseudonymise(stem, salt) if salt is not None else stem
    cases = []
    history: list[Turn] = []
    for msg in sorted(conv.messages, key=lambda m: int(m["turn_index"])):
        role, content = str(msg.get("role")), str(msg.get("content") or "")
        if role == "assistant":
            turn = int(msg["turn_index"])
            cases.append(AuditCase(
                id=f"{stem}-t{turn:02d}",
                model_response=content,
                session=session,
                label=Label.NEGATIVE if turn in conv.mistakes else Label.POSITIVE,
                skills=[skill],
                context=list(history),
                background=conv.persona,
                extra={"gold": _gold_of(conv, msg)},
            ))
        history.append(Turn(role, content))
    return cases


def import_complibench(
    src: str | Path,
    out: str | Path,
    long: bool = False,
    distractors: int | None = None,
    salt: str | None = None,
    domain_label: str = "Celestar Air",
) -> ImportSummary:
    """Write SKILLs, ``index.json`` and ``cases.jsonl`` under ``out``; see the module doc.

    ``salt``: when given, session ids are pseudonymised (SHA-256 of salt + file stem).
    Raises FileNotFoundError (no conversations) or CompliBenchFormatError.
    """
    src, out = Path(src), Path(out)
    files = sorted(src.rglob("conversation_*.json"))
    if not files:
        raise FileNotFoundError(
            f"{src}: no conversation_*.json files; point at CompliBench's data/<domain> folder"
        )
    convs = [read_conversation(f) for f in files]
    by_domain: dict[str, dict[tuple[str, int], Workflow]] = {}
    for c in convs:
        by_domain.setdefault(c.domain, {}).setdefault(c.workflow.key, c.workflow)
    skills: dict[str, dict[str, Any]] = {}
    built_from: dict[str, Path] = {}
    cases: list[AuditCase] = []
    case_origin: dict[str, Path] = {}  # case id -> the conversation it came from
    for c in convs:
        try:
            name = skill_name(c.domain, c.workflow)
            if name not in skills:
                others: list[Workflow] = []
                if long:
                    others = [w for k, w in sorted(by_domain[c.domain].items())
                              if k != c.workflow.key]
                    if distractors is not None:
                        random.Random(f"distractors:{name}").shuffle(others)
                        others = sorted(others[:distractors], key=lambda w: w.key)
                skills[name] = build_skill(c, others, domain_label)
                built_from[name] = c.path
            made = conversation_cases(c, name, salt)
            case_origin.update((case.id, c.path) for case in made)
            cases.extend(made)
        except (KeyError, TypeError, ValueError, OverflowError, AttributeError) as exc:
            # Messages and mistakes are read lazily: a wrong field surfaces here, and must
            # name the conversation file rather than escape as a traceback.
            raise CompliBenchFormatError(
                f"{c.path}: not a CompliBench conversation ({type(exc).__name__}: "
                f"{str(exc)[:200]}); see shared/corpora/complibench/SOURCES.md"
            ) from None
    # Everything is built and validated before the first file is written.
    try:
        index = PolicyIndex.from_dict({"format": "skillcdg/1", "skills": list(skills.values())},
                                      "complibench import")
    except IndexValidationError as exc:
        # Name the conversation each bad SKILL was built from: that is the file to fix.
        names = list(skills)
        files = sorted({str(built_from[names[int(m.group(1))]]) for p in exc.problems
                        if (m := re.match(r"skills\[(\d+)\]", p.location))})
        raise CompliBenchFormatError(
            f"{', '.join(files) or src}: the conversations give an invalid index: {exc}"
        ) from None
    check_case_lines(cases, case_origin)
    out.mkdir(parents=True, exist_ok=True)
    summary = ImportSummary(conversations=len(convs), skills=len(skills))
    for s in skills.values():
        d = out / "skills" / s["name"]
        d.mkdir(parents=True, exist_ok=True)
        (d / "SKILL.md").write_text(s["source"], encoding="utf-8")
        summary.rules += len(s["rules"])
    index.save(out / "index.json")
    summary.cases = dump_cases(cases, out / "cases.jsonl")
    summary.violations = sum(bool(c.expected_violation) for c in cases)
    summary.files = [str(out / "index.json"), str(out / "cases.jsonl"), str(out / "skills")]
    return summary



def check_case_lines(cases: list[AuditCase], origin: dict[str, Path]) -> None:
    """Refuse, before anything is written, a ``cases.jsonl`` that ``workbench import-cases``
    could not read: a case whose line passes ``MAX_LINE_BYTES`` (each case holds its whole
    history, so a long conversation's last turns make the longest lines), or a file past
    ``MAX_INPUT_BYTES``. :class:`CompliBenchFormatError` names the case and its conversation."""
    total = 0
    for case in cases:
        size = len(json.dumps(case.to_dict(), ensure_ascii=False).encode("utf-8")) + 1
        if size > MAX_LINE_BYTES:
            where = origin.get(case.id, "the input")
            raise CompliBenchFormatError(
                f"{where}: case {case.id} would be a line of {size:,} bytes in cases.jsonl, "
                f"over the {MAX_LINE_BYTES:,} bytes `workbench import-cases` reads in one line "
                "(the case carries every turn before it); nothing was written",
                "shorten that conversation's messages, or import the folder without it")
        total += size
    if total > MAX_INPUT_BYTES:
        raise CompliBenchFormatError(
            f"cases.jsonl would hold {total:,} bytes, over the {MAX_INPUT_BYTES:,} bytes "
            "`workbench import-cases` reads; nothing was written",
            "import the conversations in several folders")
