"""Roles (issue #16, item 11): the permission table the pages consult."""

from __future__ import annotations

import pytest

from workbench.identity.roles import ROLES, RoleError, may, refusal


def test_annotator_cannot_edit_graphs_or_see_other_labels():
    assert not may("annotator", "edit graphs")
    assert not may("annotator", "see all labels")
    assert may("annotator", "label")


def test_analyst_cannot_change_settings_but_decides_reviews():
    assert not may("analyst", "change settings")
    assert may("analyst", "decide reviews")
    assert not may("analyst", "edit graphs")


def test_admin_may_do_everything_and_each_action_has_someone():
    from workbench.identity.roles import PERMISSIONS

    assert all(may("admin", action) for action in PERMISSIONS)
    assert may("author", "edit graphs") and may("reviewer", "adjudicate")
    assert not may("author", "decide reviews")
    assert set().union(*PERMISSIONS.values()) <= set(ROLES)


def test_refusal_names_the_roles_that_may():
    text = refusal("annotator", "edit graphs")
    assert "author or admin" in text and "annotator" in text


def test_unknown_role_or_action_is_an_error():
    with pytest.raises(RoleError, match="unknown role 'boss'"):
        may("boss", "edit graphs")
    with pytest.raises(RoleError, match="unknown action"):
        may("admin", "fly")


def test_require_refuses_with_the_roles_needed_and_single_user_passes():
    from workbench.identity.roles import SINGLE_USER, Actor, NotAllowed, require

    with pytest.raises(NotAllowed) as info:
        require(Actor.signed_in("ann", "annotator"), "store audit results")
    assert info.value.message.startswith("ann is signed in as annotator, which may not store")
    assert "author or analyst or reviewer or admin" in info.value.hint
    require(Actor.single_user(""), "change settings")  # nobody to keep out on one laptop
    assert Actor.single_user("").name == "analyst" and Actor.single_user("").role == SINGLE_USER
    with pytest.raises(RoleError, match="unknown role 'boss'"):
        Actor.signed_in("x", "boss")
    with pytest.raises(RoleError, match="unknown action"):
        require(Actor.single_user("me"), "fly")  # a typo must not pass in single-user mode
