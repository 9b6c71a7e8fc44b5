"""The roster and sign-in sessions in the store (issue 35 item 1): a sign-in lasts until it
expires or is signed out (in any tab), the roster gives the role (nobody picks their own
once it exists), and the command line acts as the same people with the same roles."""

from __future__ import annotations

from datetime import timedelta

import pytest

from store import people, repo
from tests.test_store_edge_decisions import skill as desk_skill
from workbench.clock import utcnow
from workbench.identity.roles import COMMAND_LINE, SINGLE_USER, Actor, NotAllowed
from workbench.identity.sign_in import InvalidToken, SignInError

ADA = Actor.signed_in("ada", "admin")


def test_without_a_roster_anyone_signs_in_with_the_role_they_pick(engine):
    assert not people.roster_configured(engine)
    live = people.sign_in(engine, "alice", "annotator")
    back = people.resolve(engine, live.token)
    assert (back.name, back.role) == ("alice", "annotator")
    with pytest.raises(SignInError, match="unknown role"):
        people.sign_in(engine, "alice", "boss")


def test_signing_out_revokes_the_token_everywhere(engine):
    live = people.sign_in(engine, "alice", "author")
    assert people.sign_out(engine, live.token) is True
    with pytest.raises(InvalidToken, match="signed out"):
        people.resolve(engine, live.token)  # a second tab, a pasted link: the same token
    assert people.sign_out(engine, live.token) is False


def test_a_token_expires(engine, monkeypatch):
    monkeypatch.setenv("WORKBENCH_SESSION_HOURS", "1")
    live = people.sign_in(engine, "alice", "author")
    assert live.expires - utcnow() <= timedelta(hours=1)
    people.resolve(engine, live.token, now=utcnow() + timedelta(minutes=59))
    with pytest.raises(InvalidToken, match="expired"):
        people.resolve(engine, live.token, now=utcnow() + timedelta(minutes=61))


def test_a_token_made_with_another_secret_is_refused(engine, monkeypatch):
    live = people.sign_in(engine, "alice", "author")
    monkeypatch.setenv("WORKBENCH_SESSION_SECRET", "x" * 40)
    with pytest.raises(InvalidToken, match="signature"):
        people.resolve(engine, live.token)
    monkeypatch.setenv("WORKBENCH_SESSION_SECRET", "short")
    with pytest.raises(SignInError, match="at least 32"):
        people.resolve(engine, live.token)


def test_with_a_roster_the_roster_gives_the_role_and_checks_the_password(engine):
    with pytest.raises(SignInError, match="first person on the roster must be an admin"):
        people.save_person(engine, "ann", "annotator", actor=COMMAND_LINE)
    people.save_person(engine, "ada", "admin", actor=COMMAND_LINE)
    people.save_person(engine, "ann", "annotator", password="s3cret", actor=ADA)
    assert people.roster_configured(engine)
    assert [(p.name, p.role, p.has_password) for p in people.people(engine)] == [
        ("ada", "admin", False), ("ann", "annotator", True)]
    # The role picked on the form is ignored: the roster says annotator.
    assert people.sign_in(engine, "ann", "admin", "s3cret").role == "annotator"
    for name, password in (("ann", "wrong"), ("ann", ""), ("mallory", "")):
        with pytest.raises(SignInError, match="do not sign anyone in"):
            people.sign_in(engine, name, "admin", password)


def test_a_role_change_or_removal_ends_the_sign_ins_it_made(engine):
    people.save_person(engine, "ada", "admin", actor=COMMAND_LINE)
    people.save_person(engine, "bob", "author", actor=ADA)
    token = people.sign_in(engine, "bob").token
    people.save_person(engine, "bob", "annotator", actor=ADA)
    with pytest.raises(InvalidToken, match="signed out"):
        people.resolve(engine, token)
    token = people.sign_in(engine, "bob").token
    assert people.resolve(engine, token).role == "annotator"
    people.remove_person(engine, "bob", actor=ADA)
    with pytest.raises(InvalidToken):
        people.resolve(engine, token)
    people.save_person(engine, "cy", "viewer", actor=ADA)
    with pytest.raises(SignInError, match="last admin"):
        people.remove_person(engine, "ada", actor=ADA)


def test_only_an_admin_manages_the_roster(engine):
    people.save_person(engine, "ada", "admin", actor=COMMAND_LINE)
    with pytest.raises(NotAllowed, match="manage people"):
        people.save_person(engine, "eve", "admin", actor=Actor.signed_in("eve", "author"))
    with pytest.raises(NotAllowed):
        people.save_person(engine, "eve", "admin", actor=Actor.nobody())
    assert [p.name for p in people.people(engine)] == ["ada"]


def test_the_command_line_acts_as_the_same_people_with_the_same_roles(engine):
    # No roster: the single user, as before roles existed (recorded under --as when given).
    assert people.command_line_actor(engine, None) == COMMAND_LINE
    assert people.command_line_actor(engine, "me") == Actor("me", SINGLE_USER)
    people.save_person(engine, "ada", "admin", actor=COMMAND_LINE)
    people.save_person(engine, "ann", "annotator", actor=ADA)
    # A roster: nobody without --as (every guarded write refused), the roster's role with it.
    nobody = people.command_line_actor(engine, None)
    with pytest.raises(NotAllowed, match="nobody is signed in"):
        repo.save_skill(engine, desk_skill(), actor=nobody)
    ann = people.command_line_actor(engine, "ann")
    assert ann == Actor("ann", "annotator")
    with pytest.raises(NotAllowed, match="ann is signed in as annotator"):
        repo.save_skill(engine, desk_skill(), actor=ann)
    with pytest.raises(NotAllowed, match="not on this workbench's roster"):
        people.command_line_actor(engine, "zed")
    assert repo.save_skill(engine, desk_skill(), actor=people.command_line_actor(engine, "ada")).created
