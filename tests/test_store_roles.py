"""Issue #16: the role checks live in the store writes themselves, not only on the pages, so a
page that forgets to ask cannot get past the role. Each write refuses a role without the
permission (``roles.NotAllowed`` naming the role needed) and leaves nothing behind; the
single-user actor (nobody signed in, the command line) keeps working as before roles."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from store import audit_repo, edge_decisions, repo
from tests.test_store_edge_decisions import saved
from tests.test_store_edge_decisions import skill as desk_skill
from workbench.audit.cases import case_from_dict
from workbench.audit.trace import AuditTrace
from workbench.errors import WorkbenchError
from workbench.graph import RuleGraph, SkillGraph
from workbench.identity.roles import COMMAND_LINE, Actor, NotAllowed

ROOT = Path(__file__).resolve().parents[1]
ANNOTATOR = Actor.signed_in("ann", "annotator")
ANALYST = Actor.signed_in("al", "analyst")
AUTHOR = Actor.signed_in("otto", "author")


def _refused(call, role_needed: str) -> NotAllowed:
    with pytest.raises(NotAllowed) as info:
        call()
    assert isinstance(info.value, WorkbenchError) and isinstance(info.value, PermissionError)
    assert "nothing was saved" in info.value.message
    assert f"you need the role {role_needed}" in info.value.hint
    return info.value


def test_an_analyst_cannot_delete_a_skill_an_author_can(engine):
    repo.save_skill(engine, desk_skill(), actor=COMMAND_LINE)
    err = _refused(lambda: repo.delete_skill(engine, "desk", actor=ANALYST), "author or admin")
    assert "al is signed in as analyst" in err.message
    assert repo.skill_names(engine) == ["desk"]
    assert [h.summary for h in repo.edit_history(engine, "desk")] == []
    assert repo.delete_skill(engine, "desk", actor=AUTHOR) == 1
    assert repo.skill_names(engine) == []
    assert [h.author for h in repo.edit_history(engine, "desk")] == ["otto"]


def test_an_annotator_cannot_save_a_graph_version(engine):
    v = repo.save_skill(engine, desk_skill(), actor=COMMAND_LINE).version
    base = desk_skill()
    edited = SkillGraph(base.name, base.description, base.source,
                        RuleGraph(base.graph.rules.values(), []))  # the edge removed
    _refused(lambda: repo.save_skill(engine, edited, author="ann", base_version=v,
                                     actor=ANNOTATOR), "author or admin")
    assert [r.version for r in repo.versions(engine, "desk")] == [v]
    saved_by_author = repo.save_skill(engine, edited, author="otto", base_version=v, actor=AUTHOR)
    assert saved_by_author.version == v + 1


@pytest.mark.parametrize("accept", [True, False])
def test_an_analyst_cannot_decide_a_proposed_edge(engine, accept):
    v = saved(engine)
    _refused(lambda: edge_decisions.decide_edge(engine, "desk", v, ("C", "F"), accept, ANALYST),
             "author or admin")
    assert [r.version for r in repo.versions(engine, "desk")] == [v]
    decided = edge_decisions.load_edge_decisions(engine, "desk")
    assert decided.accepted == decided.rejected == set()  # a rejection steers extraction: none


def _case():
    return case_from_dict({"id": "c1", "model_response": "ok", "label": "positive"})


@pytest.mark.parametrize("actor", [ANNOTATOR, AUTHOR], ids=["annotator", "author"])
def test_only_analysts_reviewers_and_admins_import_cases(engine, actor):
    _refused(lambda: audit_repo.save_cases(engine, "demo", [_case()], actor=actor),
             "analyst or reviewer or admin")
    assert audit_repo.datasets(engine) == []
    assert audit_repo.save_cases(engine, "demo", [_case()], actor=ANALYST) == 1


def test_an_annotator_cannot_store_audit_results_an_analyst_can(engine):
    trace = AuditTrace(id="c1", strategy="cdg")
    _refused(lambda: audit_repo.save_trace(engine, trace, "replay-c1", "demo", actor=ANNOTATOR),
             "author or analyst or reviewer or admin")
    _refused(lambda: audit_repo.save_traces(engine, [trace], "loaded", "demo", actor=ANNOTATOR),
             "author or analyst or reviewer or admin")
    # A batch run is refused before it starts, not after its first model call.
    _refused(lambda: audit_repo.StoreSink(engine, "review-1", "demo", actor=ANNOTATOR),
             "author or analyst or reviewer or admin")
    assert audit_repo.runs(engine) == []
    assert audit_repo.save_trace(engine, trace, "replay-c1", "demo", actor=ANALYST) == 1
    sink = audit_repo.StoreSink(engine, "review-1", "demo", actor=ANALYST)
    sink.write(trace)
    assert audit_repo.runs(engine) == ["replay-c1", "review-1"]


def test_nobody_signed_in_under_oidc_is_refused_and_told_to_sign_in(engine):
    with pytest.raises(NotAllowed, match="nobody is signed in") as info:
        audit_repo.save_trace(engine, AuditTrace(id="c1", strategy="cdg"), "r", "demo",
                              actor=Actor.nobody())
    assert "sign in" in info.value.hint


def test_single_user_mode_and_the_command_line_may_do_every_write(engine):
    me = Actor.single_user("me")
    v = saved(engine)
    assert edge_decisions.decide_edge(engine, "desk", v, ("C", "F"), True, me) == v + 1
    assert repo.edit_history(engine, "desk")[-1].author == "me"
    assert audit_repo.save_cases(engine, "demo", [_case()], actor=me) == 1
    assert audit_repo.save_trace(engine, AuditTrace(id="c1", strategy="cdg"), "r", "demo",
                                 actor=COMMAND_LINE) == 1
    assert repo.delete_skill(engine, "desk", actor=COMMAND_LINE) == 2


def _guarded_writes() -> tuple[set[str], set[str]]:
    """(writes whose ``actor`` has a default, writes that require it), read from the store's
    and components' own signatures so a new guarded write is checked the day it is added (a
    hand-kept list had missed ``decide_edges`` and ``save_threshold``). A class whose
    ``__init__`` takes ``actor`` counts under the class name."""
    defaulted: set[str] = set()
    required: set[str] = set()
    for path in [*ROOT.glob("store/*.py"), *ROOT.glob("components/*.py")]:
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                inits = [f for f in node.body
                         if isinstance(f, ast.FunctionDef) and f.name == "__init__"]
                funcs = [(node.name, f) for f in inits]
            elif isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                funcs = [(node.name, node)]
            else:
                continue
            for name, func in funcs:
                args = func.args
                positional = args.posonlyargs + args.args
                defaults = dict(zip([a.arg for a in positional][len(positional) - len(args.defaults):],
                                    args.defaults, strict=True))
                defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
                                 if d is not None})
                names = [a.arg for a in positional + args.kwonlyargs]
                if "actor" in names:
                    (defaulted if "actor" in defaults else required).add(name)
    return defaulted, required


def test_the_guarded_writes_are_found_in_the_store():
    """Issue 45: no writer defaults to an all-powerful identity (a forgotten ``actor=`` wrote
    with full rights). ``save_threshold`` is the one left, changed with the calibration work;
    tests/test_store_writers.py checks every writer's signature and refusals."""
    defaulted, required = _guarded_writes()
    assert defaulted <= {"save_threshold"}
    assert {"delete_skill", "decide_edge", "decide_edges", "save_traces", "add_decisions",
            "StoreSink", "save_person", "remove_person", "save_skill"} <= required


def test_every_page_write_passes_the_acting_identity():
    """A page or component must pass the signed-in identity, or the store could not refuse
    it. A write whose ``actor`` has no default (all but those still listed as defaulted) is
    Python's to refuse when it is missing."""
    defaulted, _required = _guarded_writes()
    missing = []
    for path in sorted([*ROOT.glob("pages/*.py"), *ROOT.glob("components/*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name in defaulted and not any(k.arg == "actor" for k in node.keywords):
                missing.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}")
    assert missing == [], "pass actor=identity.actor(...) to these writes"
