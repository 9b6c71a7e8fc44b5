"""JSON schemas of the extractor's and fuser's answers, and validation of those answers.

The schemas are tight on purpose: a small model under a server-enforced grammar cannot wander
off when every string and list has a bound. The bounds also cap the answer's length, so a
well-sized block never hits the token limit. Validation then checks what a schema cannot:
unique ids and edge endpoints that exist. Model output is untrusted input: bad edges are
dropped and reported, never trusted.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from workbench.graph import MODALITIES

SCHEMA_VERSION = "1"

# Bounds for one extracted rule. A quote cut by maxLength is still a verbatim prefix of the
# sentence, so it can still be located.
QUOTE_MAX = 300
CLAUSE_MAX = 160
ID_MAX = 6


def _closed_object(properties: dict) -> dict:
    """A JSON-schema object that requires every one of ``properties`` and allows nothing else
    (the form grammar-enforcing servers and the validator both need)."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def extraction_schema(max_rules: int | None = 12, max_edges: int | None = 16) -> dict:
    """Schema of ``{"rules": [...], "edges": [...]}``; ``None`` leaves a list unbounded."""
    rule = _closed_object({
        "id": {"type": "string", "minLength": 2, "maxLength": ID_MAX},
        "quote": {"type": "string", "minLength": 1, "maxLength": QUOTE_MAX},
        "condition": {"type": "string", "minLength": 1, "maxLength": CLAUSE_MAX},
        "action": {"type": "string", "minLength": 1, "maxLength": CLAUSE_MAX},
        "modality": {"type": "string", "enum": list(MODALITIES)},
    })
    edge = _closed_object({end: {"type": "string", "maxLength": ID_MAX} for end in ("source", "target")})
    rules: dict = {"type": "array", "items": rule}
    edges: dict = {"type": "array", "items": edge}
    if max_rules is not None:
        rules["maxItems"] = max_rules
    if max_edges is not None:
        edges["maxItems"] = max_edges
    return _closed_object({"rules": rules, "edges": edges})


def fusion_schema(new_ids: list[str], known_ids: list[str], max_edges: int = 12) -> dict:
    """Schema of ``{"merges": [...], "edges": [...]}`` whose ids are enums of the aliases
    shown, so a grammar-enforcing server cannot produce an unknown id at all."""
    both = [*new_ids, *known_ids]
    merge = _closed_object({
        "new": {"type": "string", "enum": list(new_ids)},
        "known": {"type": "string", "enum": list(known_ids)},
    })
    edge = _closed_object({end: {"type": "string", "enum": both} for end in ("source", "target")})
    return _closed_object({
        "merges": {"type": "array", "maxItems": len(new_ids), "items": merge},
        "edges": {"type": "array", "maxItems": max_edges, "items": edge},
    })


@dataclass(frozen=True)
class LocalRule:
    """A rule as the extractor proposed it, with its block-local id (``R1``...)."""

    id: str
    quote: str
    condition: str
    action: str
    modality: str
    piece: int = 0  # which piece of the block it came from (blocks split after a failure)
    # "model", or "obligation": a sentence the model called "other" whose text states a duty
    # (workbench.extract.sentences.obligation_word), kept so a small model cannot drop it.
    provenance: str = "model"


@dataclass
class BlockExtraction:
    """A validated extractor answer for one block (or the pieces of one block, concatenated)."""

    rules: list[LocalRule] = field(default_factory=list)
    edges: list[tuple[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Character ranges of the pieces, relative to the block; one piece unless the block had to
    # be split because the model could not answer for it whole.
    pieces: list[tuple[int, int]] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> BlockExtraction:
        return cls(
            [LocalRule(**r) for r in data.get("rules", [])],
            [(s, t) for s, t in data.get("edges", [])],
            list(data.get("problems", [])),
            [(a, b) for a, b in data.get("pieces", [])],
        )

    def extend(self, other: BlockExtraction, piece: tuple[int, int]) -> None:
        """Append the answer for one more piece, renumbering its rules after ours."""
        index = len(self.pieces)
        self.pieces.append(piece)
        shift = len(self.rules)
        rename = {r.id: f"R{shift + n}" for n, r in enumerate(other.rules, 1)}
        self.rules.extend(replace(r, id=rename[r.id], piece=index) for r in other.rules)
        self.edges.extend((rename[s], rename[t]) for s, t in other.edges)
        self.problems.extend(f"piece {index + 1}: {p}" for p in other.problems)


def _text(value: object) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def validate_extraction(data: object) -> BlockExtraction:
    """Check an extractor answer and keep what is usable.

    Raises ValueError when the answer's shape is unusable (not an object with ``rules`` and
    ``edges`` lists). Otherwise a rule missing a field or with an unknown modality is dropped;
    a repeated id is renamed (edges naming an ambiguous id are dropped); an edge to an unknown
    id, a self-loop or a repeated edge is dropped. Each of these is listed in ``problems``.
    Rules are renumbered ``R1..Rn`` in order, so later steps see clean local ids.
    """
    if not isinstance(data, dict):
        raise ValueError("the answer must be a JSON object with 'rules' and 'edges'")
    raw_rules, raw_edges = data.get("rules"), data.get("edges", [])
    if not isinstance(raw_rules, list) or not isinstance(raw_edges, list):
        raise ValueError("'rules' and 'edges' must both be lists")
    out = BlockExtraction()
    seen: dict[str, str] = {}  # model id -> clean id; "" marks an ambiguous (repeated) id
    for i, raw in enumerate(raw_rules):
        where = f"rules[{i}]"
        if not isinstance(raw, dict):
            out.problems.append(f"{where}: not an object; dropped")
            continue
        quote = raw.get("quote") if isinstance(raw.get("quote"), str) else ""
        condition, action = _text(raw.get("condition")), _text(raw.get("action"))
        modality = _text(raw.get("modality")).lower()
        if not quote.strip() or not condition or not action:
            out.problems.append(f"{where}: quote, condition or action missing or empty; dropped")
            continue
        if modality not in MODALITIES:
            out.problems.append(f"{where}: modality {modality!r} is not one of {MODALITIES}; dropped")
            continue
        clean = f"R{len(out.rules) + 1}"
        model_id = _text(raw.get("id"))
        if model_id in seen:
            out.problems.append(f"{where}: id {model_id!r} repeats; edges naming it are dropped")
            seen[model_id] = ""
        elif model_id:
            seen[model_id] = clean
        out.rules.append(LocalRule(clean, quote.strip(), condition, action, modality))

    pairs: set[tuple[str, str]] = set()
    for i, raw in enumerate(raw_edges):
        where = f"edges[{i}]"
        if not isinstance(raw, dict):
            out.problems.append(f"{where}: not an object; dropped")
            continue
        ends = [_text(raw.get("source")), _text(raw.get("target"))]
        mapped = [seen.get(x) for x in ends]
        if None in mapped:
            unknown = [x for x, m in zip(ends, mapped, strict=True) if m is None]
            out.problems.append(f"{where}: unknown rule id(s) {unknown}; dropped")
            continue
        if "" in mapped:
            out.problems.append(f"{where}: names a repeated id; dropped")
            continue
        src, tgt = mapped
        if src == tgt:
            out.problems.append(f"{where}: self-loop on {ends[0]!r}; dropped")
            continue
        if (src, tgt) in pairs:
            continue  # a repeated edge carries no information
        pairs.add((src, tgt))
        out.edges.append((src, tgt))
    return out


@dataclass
class FusionAnswer:
    """A validated fuser answer in alias form: merges new→known, edges (source, target)."""

    merges: dict[str, str] = field(default_factory=dict)
    edges: list[tuple[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> FusionAnswer:
        return cls(
            dict(data.get("merges", {})),
            [(s, t) for s, t in data.get("edges", [])],
            list(data.get("problems", [])),
        )


def validate_fusion(data: object, new_ids: list[str], known_ids: list[str]) -> FusionAnswer:
    """Check a fuser answer against the aliases that were shown.

    Raises ValueError when the shape is unusable. A merge naming an unknown alias, or a second
    merge of the same new rule, is dropped; an edge that does not link one new and one known
    rule (after merges) is dropped. Everything dropped is listed in ``problems``.
    """
    if not isinstance(data, dict):
        raise ValueError("the answer must be a JSON object with 'merges' and 'edges'")
    raw_merges, raw_edges = data.get("merges", []), data.get("edges", [])
    if not isinstance(raw_merges, list) or not isinstance(raw_edges, list):
        raise ValueError("'merges' and 'edges' must both be lists")
    new, known = set(new_ids), set(known_ids)
    out = FusionAnswer()
    for i, raw in enumerate(raw_merges):
        n = _text(raw.get("new")) if isinstance(raw, dict) else ""
        k = _text(raw.get("known")) if isinstance(raw, dict) else ""
        if n not in new or k not in known:
            out.problems.append(f"merges[{i}]: {n!r} -> {k!r} names an unknown rule; dropped")
        elif n in out.merges:
            out.problems.append(f"merges[{i}]: {n!r} is already merged into {out.merges[n]!r}; dropped")
        else:
            out.merges[n] = k
    pairs: set[tuple[str, str]] = set()
    for i, raw in enumerate(raw_edges):
        s = _text(raw.get("source")) if isinstance(raw, dict) else ""
        t = _text(raw.get("target")) if isinstance(raw, dict) else ""
        if s not in new | known or t not in new | known:
            out.problems.append(f"edges[{i}]: {s!r} -> {t!r} names an unknown rule; dropped")
            continue
        if (s in new) == (t in new):
            out.problems.append(f"edges[{i}]: {s!r} -> {t!r} does not link a new and a known rule; dropped")
            continue
        if (s, t) not in pairs:
            pairs.add((s, t))
            out.edges.append((s, t))
    return out
