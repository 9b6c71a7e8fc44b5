"""Issue 45: permissions at the write, for every writer. The store's writers are found by
reading store/ (a public function or class whose code adds, deletes or commits rows, or calls
such a function of its own module), not from a hand-kept list: each one either guards an
action of the role table and takes ``actor`` as a required keyword (no default identity, so
a caller that forgets it fails instead of writing with full rights), or is named below as
bookkeeping no role guards, with the reason. Every guarded writer is then called as each role
and as nobody on a throw-away database: allowed exactly when ``roles.may`` says so, and a
refusal leaves every table's row count as it was."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import func, select
from sqlmodel import Session, SQLModel

import store
from store import (
    activations,
    alerts,
    annotation,
    audit_repo,
    edge_decisions,
    explanations,
    people,
    repo,
    review,
    thresholds,
)
from store.db import make_engine
from tests.test_store_edge_decisions import skill as desk_skill
from workbench.alerts.rules import AlertRule, RuleKind
from workbench.annotation.labels import RULE_CORRECTNESS, Adjudication, Label
from workbench.audit.cases import case_from_dict
from workbench.audit.trace import AuditTrace
from workbench.decision import DecisionSetting, Explanation
from workbench.decision.features import new_record
from workbench.graph import PolicyIndex
from workbench.identity.roles import COMMAND_LINE, PERMISSIONS, ROLES, Actor, NotAllowed, may
from workbench.review.queue import ReviewDecision

ROOT = Path(__file__).resolve().parents[1]

# writer -> the role-table actions it needs (all of them).
GUARDED: dict[str, tuple[str, ...]] = {
    "repo.save_skill": ("edit graphs",),
    "repo.import_index": ("edit graphs",),
    "repo.delete_skill": ("edit graphs",),
    "edge_decisions.decide_edge": ("edit graphs",),
    "edge_decisions.decide_edges": ("edit graphs",),
    "audit_repo.save_cases": ("import cases",),
    "audit_repo.save_trace": ("store audit results",),
    "audit_repo.save_traces": ("store audit results",),
    "audit_repo.save_case_and_trace": ("import cases", "store audit results"),
    "audit_repo.StoreSink": ("store audit results",),
    "annotation.add_label": ("label",),
    "annotation.add_labels": ("label",),
    "annotation.add_adjudication": ("adjudicate",),
    "review.add_decision": ("decide reviews",),
    "review.add_decisions": ("decide reviews",),
    "review.undo_last": ("decide reviews",),
    "people.save_person": ("manage people",),
    "people.remove_person": ("manage people",),
    "thresholds.save_threshold": ("decide reviews",),
    "activations.save_features": ("store audit results",),
    "explanations.save_explanations": ("store audit results",),
    "alerts.add_rule": ("change settings",),
    "alerts.edit_rule": ("change settings",),
    "alerts.pause_rule": ("change settings",),
    "alerts.remove_rule": ("change settings",),
    "alerts.silence_rule": ("decide reviews",),
    "alerts.acknowledge": ("decide reviews",),
}
PENDING: set[str] = set()  # writers whose actor is not yet required (none)
# The acting identity is passed positionally by the Graph page (pages/_graph_proposals.py),
# so these two keep ``actor`` positional; it is required all the same.
POSITIONAL_ACTOR = {"edge_decisions.decide_edge", "edge_decisions.decide_edges"}

# Writes no role guards, with why.
UNGUARDED: dict[str, str] = {
    "annotation.add_annotator": "registers a name for the annotation tasks; labels and "
                                "adjudications are checked against the roster at their write",
    "annotation.add_task_items": "queues items to label; changes no label or verdict",
    "edge_decisions.save_edge_trust": "provenance of a version just saved by a guarded save_skill",
    "extraction.SqlStepStore": "the extraction's resume cache, keyed by request",
    "llm_cache.SqlResponseCache": "the model response cache, keyed by the full request",
    "llm_cache.SqlUsageLog": "token and latency accounting of model calls",
    "llm_endpoints.SqlEndpointLog": "the endpoint call log",
    "record_log.RecordLog": "the base of the two call logs",
    "model_speed.record_startup": "how long a model took to start (estimates)",
    "people.session_secret": "the sign-in secret, made once",
    "people.sign_in": "signing in checks the roster itself",
    "people.sign_out": "revokes the caller's own token",
    "people.resolve": "reads a sign-in (may make the sign-in secret, session_secret)",
    "llm_cache.persistent_gateway": "a gateway over the response cache and usage log",
    "db.roster_as_stored": "reads only (plain SQL, so the reader cannot tell)",
    "review_views.save_view": "a person's saved filters of the Review queue",
    "review_views.delete_view": "a person's saved filters of the Review queue",
    "skill_trust.add_decisions": "takes an open session of a guarded write (import_index)",
    "skill_trust.replace_trust": "takes an open session of a guarded write (save_skill)",
    "session.insert_all": "the helper guarded writers insert through",
    "session.write_session": "the helper guarded writers write through",
    "db.make_engine": "creates and migrates the schema (db upgrade is checked in the command)",
    "db.migrate": "the migration itself",
    "alerts.check_audited": "records what the rules fire on traces a guarded write just stored",
    "alert_outbox.SqlOutbox": "the webhook outbox's delivery bookkeeping (attempts, delivered, "
                              "per-destination backoff)",
    "alert_outbox.deliverer": "starts the delivery threads over the outbox (SqlOutbox)",
    "alert_outbox.cap_outbox": "drops alerts past the outbox's cap inside check_audited's write",
    "alert_outbox.prune_records": "deletes old closed alerts inside check_audited's write",
}

_WRITE_CALLS = {"add", "add_all", "delete", "commit", "insert_all", "write_session", "execute",
                "exec_driver_sql"}


def _calls(node: ast.AST) -> set[str]:
    return {getattr(n.func, "attr", getattr(n.func, "id", "")) for n in ast.walk(node)
            if isinstance(n, ast.Call)}


def store_writers() -> set[str]:
    """``module.name`` of every public function or class in store/ that writes."""
    found: set[str] = set()
    for path in sorted((ROOT / "store").glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        public = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)
                  and not n.name.startswith("_")}
        private = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)
                   and n.name.startswith("_")}
        writing = {name for name, node in {**public, **private}.items()
                   if (_calls(node) & _WRITE_CALLS) - ({"execute"} if "select" in _calls(node) else set())}
        for _ in range(3):  # a writer calling a writer of its module (add_label -> add_labels)
            writing |= {name for name, node in {**public, **private}.items()
                        if _calls(node) & writing}
        found |= {f"{path.stem}.{name}" for name in public if name in writing}
    return found


def test_every_store_writer_is_guarded_or_named_as_bookkeeping():
    found = store_writers()
    unknown = found - set(GUARDED) - set(UNGUARDED)
    assert unknown == set(), ("a new store writer: give it a required `actor` and an entry in "
                              "GUARDED, or say in UNGUARDED why no role guards it")
    assert set(GUARDED) <= found  # the reader still finds them (it would miss a new pattern)


def _target(qualified: str):
    module, name = qualified.split(".")
    return getattr(getattr(store, module) if hasattr(store, module)
                   else __import__(f"store.{module}", fromlist=[name]), name)


@pytest.mark.parametrize("qualified", sorted(set(GUARDED) - PENDING))
def test_a_guarded_writer_cannot_be_called_without_an_actor(qualified):
    target = _target(qualified)
    signature = inspect.signature(target)  # a class: its __init__ without self
    actor = signature.parameters["actor"]
    assert actor.default is inspect.Parameter.empty, f"{qualified}: actor has a default"
    kind = (inspect.Parameter.POSITIONAL_OR_KEYWORD if qualified in POSITIONAL_ACTOR
            else inspect.Parameter.KEYWORD_ONLY)
    assert actor.kind is kind, f"{qualified}: actor must be keyword-only"
    required = [p for p in signature.parameters.values()
                if p.default is inspect.Parameter.empty and p.name not in {"actor", "self"}]
    with pytest.raises(TypeError, match="actor"):
        signature.bind(*[object()] * sum(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
                                         for p in required),
                       **{p.name: object() for p in required
                          if p.kind is inspect.Parameter.KEYWORD_ONLY})


def test_the_actions_named_are_the_role_tables():
    assert {a for actions in GUARDED.values() for a in actions} <= set(PERMISSIONS)


# -- each guarded writer as each role ---------------------------------------------------------

def _counts(engine) -> dict[str, int]:
    with Session(engine) as session:
        return {name: session.exec(select(func.count()).select_from(table)).one()[0]
                for name, table in SQLModel.metadata.tables.items()}


def _case(cid="c1"):
    return case_from_dict({"id": cid, "model_response": "ok", "label": "positive"})


def _trace(cid="c1"):
    return AuditTrace(id=cid, strategy="cdg")


def _ready(engine) -> int:
    """A SKILL, a case and a trace, an admin on the roster, a reviewer registered."""
    v = repo.save_skill(engine, desk_skill(), author="extract", actor=COMMAND_LINE).version
    edge_decisions.save_edge_trust(engine, "desk", v, desk_skill())
    audit_repo.save_cases(engine, "demo", [_case()], actor=COMMAND_LINE)
    audit_repo.save_traces(engine, [_trace()], "r1", "demo", actor=COMMAND_LINE)
    people.save_person(engine, "root", "admin", "", actor=COMMAND_LINE)
    people.save_person(engine, "other", "viewer", "", actor=Actor.signed_in("root", "admin"))
    for role in ROLES:  # registered for the annotation tasks (adjudicating needs it)
        annotation.add_annotator(engine, f"p-{role}", "reviewer")
    alerts.add_rule(engine, AlertRule("watch", RuleKind.VIOLATION), actor=COMMAND_LINE)
    return v


def _calls_as(engine, v: int, who: Actor):
    """What each guarded writer is asked to do as ``who`` (valid for a role that may)."""
    me = who.name or "nobody"
    label = Label("desk/R:V", RULE_CORRECTNESS, me, "correct")
    decision = ReviewDecision("demo", "r1", "c1", "cdg", me, "confirm", "", True)
    return {
        "repo.save_skill": lambda: repo.save_skill(engine, desk_skill().__class__(
            "desk2", "", desk_skill().source, desk_skill().graph), author=me, actor=who),
        "repo.import_index": lambda: repo.import_index(engine, PolicyIndex([desk_skill().__class__(
            "desk3", "", desk_skill().source, desk_skill().graph)]), actor=who),
        "repo.delete_skill": lambda: repo.delete_skill(engine, "desk", actor=who),
        "edge_decisions.decide_edge": lambda: edge_decisions.decide_edge(
            engine, "desk", v, ("C", "F"), False, who),
        "edge_decisions.decide_edges": lambda: edge_decisions.decide_edges(
            engine, "desk", v, [(("C", "F"), False)], who),
        "audit_repo.save_cases": lambda: audit_repo.save_cases(engine, "demo", [_case("c2")], actor=who),
        "audit_repo.save_trace": lambda: audit_repo.save_trace(engine, _trace("c2"), "r2", "demo",
                                                               actor=who),
        "audit_repo.save_traces": lambda: audit_repo.save_traces(engine, [_trace("c3")], "r2", "demo",
                                                                 actor=who),
        "audit_repo.save_case_and_trace": lambda: audit_repo.save_case_and_trace(
            engine, "demo", _case("c4"), _trace("c4"), "r2", actor=who),
        "audit_repo.StoreSink": lambda: audit_repo.StoreSink(engine, "r3", "demo", actor=who).write(
            _trace("c5")),
        "annotation.add_label": lambda: annotation.add_label(engine, label, actor=who),
        "annotation.add_labels": lambda: annotation.add_labels(engine, [label], actor=who),
        "annotation.add_adjudication": lambda: annotation.add_adjudication(
            engine, Adjudication("desk/R:V", RULE_CORRECTNESS, me, "correct"), actor=who),
        "review.add_decision": lambda: review.add_decision(engine, decision, actor=who),
        "review.add_decisions": lambda: review.add_decisions(engine, [decision], actor=who),
        "review.undo_last": lambda: review.undo_last(engine, "demo", me, actor=who),
        "people.save_person": lambda: people.save_person(engine, "newcomer", "viewer", actor=who),
        "people.remove_person": lambda: people.remove_person(engine, "other", actor=who),
        "activations.save_features": lambda: activations.save_features(
            engine, "demo", [(new_record("c1", "cdg", "s", "m", (2,), 1, 0.1), np.ones((1, 3)))],
            actor=who),
        "explanations.save_explanations": lambda: explanations.save_explanations(
            engine, "demo", [("r1", _trace(), Explanation("R1", reason=me))], actor=who),
        "thresholds.save_threshold": lambda: thresholds.save_threshold(
            engine, f"dataset:{me}", DecisionSetting(0.5), base_version=None, actor=who),
        "alerts.add_rule": lambda: alerts.add_rule(
            engine, AlertRule(f"rule-{me}", RuleKind.SHARE), actor=who),
        "alerts.edit_rule": lambda: alerts.edit_rule(engine, "watch", {"probability": 0.7},
                                                     actor=who),
        "alerts.pause_rule": lambda: alerts.pause_rule(engine, "watch", actor=who),
        "alerts.remove_rule": lambda: alerts.remove_rule(engine, "watch", actor=who),
        "alerts.silence_rule": lambda: alerts.silence_rule(engine, "watch", 5, actor=who),
        "alerts.acknowledge": lambda: alerts.acknowledge(engine, [1], actor=who),
    }


IDENTITIES = [*ROLES, None]


@pytest.mark.parametrize("qualified", sorted(set(GUARDED) - PENDING))
def test_each_guarded_writer_lets_through_exactly_the_roles_the_table_allows(tmp_path, qualified):
    engine = make_engine(f"sqlite:///{tmp_path / 'w.db'}")
    try:
        v = _ready(engine)
        bypasses, refused_but_written, wrongly_refused = [], [], []
        for role in IDENTITIES:
            who = Actor.nobody() if role is None else Actor.signed_in(f"p-{role}", role)
            allowed = role is not None and all(may(role, a) for a in GUARDED[qualified])
            before = _counts(engine)
            try:
                _calls_as(engine, v, who)[qualified]()
            except NotAllowed:
                if allowed:
                    wrongly_refused.append(role)
                if _counts(engine) != before:
                    refused_but_written.append(role)
            else:
                if not allowed:
                    bypasses.append(role)
        assert (bypasses, refused_but_written, wrongly_refused) == ([], [], [])
    finally:
        engine.dispose()
