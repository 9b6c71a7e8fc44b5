"""The Graph page's selected rule and the writes made on it, as plain values (issue 44 item 1).

An edge was once saved on a rule the author never chose: the page kept its selection in a
select box whose value travels as its *label* ("MOR-S006 — first share the tracking…"); a
save that edited the rule's action changed the label, the browser sent the old one back on
the next full rerun, it matched no option, and Streamlit silently fell back to the box's
default rule, which every writing widget then followed. So here:

- the selection is one value (a rule id) that only an author's act changes: a click, a pick,
  a link, a search that hides it; anything else a widget sends is not a pick
  (:func:`accept_pick`), and a rule the version lacks is shown with a note, never adopted;
- each write on the selected rule is an :class:`EdgeWrite` or a rule save whose button text
  names its rules and whose widget key encodes them (:func:`write_key`), so a press can only
  ever write the pair its button showed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from workbench.graph.rule_graph import RuleGraph

NOT_CHOSEN = "…"  # an end of an edge not chosen yet, on a button


def default_rule(graph: RuleGraph, candidates: Sequence[str]) -> str | None:
    """The rule a SKILL opens on when nothing was chosen: the candidate with the most
    prerequisites (its closure shows the graph's structure best), the first on a tie."""
    if not candidates:
        return None
    return max(candidates, key=lambda r: len(graph.requires(r)))


@dataclass(frozen=True)
class Shown:
    """The rule the page shows, and why it is not the chosen one when it is not."""

    rule: str | None
    note: str | None = None


def shown_rule(graph: RuleGraph, chosen: str | None, candidates: Sequence[str]) -> Shown:
    """The chosen rule when this graph has it (a search that no longer matches it does not
    hide it), else the default among ``candidates`` with a note saying why."""
    if chosen is not None and chosen in graph.rules:
        return Shown(chosen)
    fallback = default_rule(graph, candidates)
    if chosen is None or fallback is None:
        return Shown(fallback)
    return Shown(fallback, f"Rule {chosen} is not in this version; showing {fallback}.")


def after_search(graph: RuleGraph, chosen: str | None, hits: Sequence[str]) -> str | None:
    """The selection after the author typed a search: kept while it matches (or nothing
    matches), else the default among the hits, since the author narrowed the list."""
    if not hits or chosen in hits:
        return chosen
    return default_rule(graph, hits)


def accept_pick(graph: RuleGraph, value: object) -> str | None:
    """A select box's value as a pick: a rule id of this graph, else ``None`` (not a pick).
    A browser can send back a label from before a save, which names no option."""
    return value if isinstance(value, str) and value in graph.rules else None


def select_options(shown: str, hits: Sequence[str]) -> list[str]:
    """The Rule box's options: the hits, with the shown rule first when they lack it, so the
    box always shows the rule the panel edits."""
    return list(hits) if shown in hits else [shown, *hits]


@dataclass(frozen=True)
class EdgeWrite:
    """One edge added or removed on the selected rule; ``None`` for an end not chosen yet."""

    kind: str  # "add" or "remove"
    source: str | None
    target: str | None

    def __post_init__(self) -> None:
        if self.kind not in ("add", "remove"):
            raise ValueError(f"edge write kind {self.kind!r} is unknown; use 'add' or 'remove'")

    @property
    def complete(self) -> bool:
        return self.source is not None and self.target is not None

    @property
    def label(self) -> str:
        """The button text: what a press writes, both ends by id."""
        verb = "Add edge" if self.kind == "add" else "Remove edge"
        return f"{verb} {self.source or NOT_CHOSEN} → {self.target or NOT_CHOSEN}"

    @property
    def note(self) -> str:
        """The version note of the saved edit."""
        verb = "added edge" if self.kind == "add" else "removed edge"
        return f"{verb} {self.source} -> {self.target}"

    def key(self, skill: str, version: int) -> str:
        return write_key(f"graph_{self.kind}_edge", skill, version, self.source or "",
                         self.target or "")


def write_key(action: str, skill: str, version: int, *rule_ids: str) -> str:
    """A widget key naming what a press writes: the widget of another rule or version is
    another widget, so a press can never be read as a write on a rule it did not show."""
    return "|".join([action, skill, str(version), *rule_ids])
