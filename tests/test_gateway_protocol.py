"""The seam between the stages and the model gateway (issue 49 item 5): ``ModelGateway``
names what the audit, extraction, annotation and the API call on a gateway; the real
``Gateway`` must have each member with the same signature, and a double missing one is not
a gateway. The roles are one enum whose members are the configuration's plain strings."""

from __future__ import annotations

import inspect
import json

import pytest

from tests.scripted import ScriptedTransport, replay_gateway, scripted_gateway
from workbench.llm import ROLE_NAMES, Gateway, ModelGateway, load_config
from workbench.llm.protocol import ModelGateway as FromItsModule
from workbench.vocabulary import ModelRole, values

METHODS = ("complete_json", "complete_text", "build_request", "close")
PROPERTIES = ("config", "usage_log")


def protocol_members() -> set[str]:
    return {name for name in vars(ModelGateway) if not name.startswith("_")}


def test_the_protocol_is_exported_once():
    assert ModelGateway is FromItsModule
    assert protocol_members() == set(METHODS) | set(PROPERTIES)


def test_the_real_gateway_satisfies_it():
    gw = scripted_gateway(ScriptedTransport(lambda request: {"ok": True}))
    try:
        assert isinstance(gw, ModelGateway)
        assert all(hasattr(Gateway, name) for name in METHODS)
    finally:
        gw.close()


def test_a_replaying_gateway_satisfies_it(tmp_path):
    (tmp_path / "calls.jsonl").write_text("")
    gw = replay_gateway(tmp_path / "calls.jsonl", tmp_path)
    assert isinstance(gw, ModelGateway)


@pytest.mark.parametrize("name", METHODS)
def test_each_method_has_the_gateways_signature(name):
    """isinstance sees names only: the parameters (names, kinds, defaults) must match too,
    so a caller typed against the protocol calls the real gateway as written."""
    want = inspect.signature(getattr(ModelGateway, name))
    got = inspect.signature(getattr(Gateway, name))
    shape = [(p.name, p.kind, p.default, str(p.annotation)) for p in want.parameters.values()]
    assert shape == [(p.name, p.kind, p.default, str(p.annotation)) for p in got.parameters.values()]
    assert str(want.return_annotation) == str(got.return_annotation)


def test_a_double_answering_everything_satisfies_it():
    class Double:
        config = load_config(env={})
        usage_log: list = []

        def complete_json(self, role, messages, schema, schema_name="answer", step="",
                          validate=None, use_cache=True, *, logprobs=None, sample=None,
                          max_tokens=None):
            raise NotImplementedError

        def complete_text(self, role, messages, step="", validate=None, use_cache=True):
            raise NotImplementedError

        def build_request(self, role, messages, schema=None, schema_name="answer", extra=None):
            return {}

        def close(self):
            pass

    assert isinstance(Double(), ModelGateway)


@pytest.mark.parametrize("missing", METHODS + PROPERTIES)
def test_a_double_missing_a_member_fails_it(missing):
    members = {name: (lambda self, *a, **k: None) for name in METHODS}
    members.update({name: None for name in PROPERTIES})
    del members[missing]
    partial = type("Partial", (), members)()
    assert not isinstance(partial, ModelGateway)


def test_only_complete_json_is_not_a_gateway():
    class JustJson:  # the shape of an ad hoc fake: it answers, but a stage reads config too
        def complete_json(self, **kwargs):
            return None

    assert not isinstance(JustJson(), ModelGateway)


def test_roles_are_the_configurations_plain_strings():
    assert ROLE_NAMES == values(ModelRole) == ("extractor", "fuser", "keyworder", "judge", "matcher")
    assert all(type(name) is str for name in ROLE_NAMES)
    config = load_config(env={})
    assert all(type(name) is str and type(config.role(name).name) is str for name in config.roles)
    role = config.role(ModelRole.JUDGE)  # a member looks up the same role as its string
    assert role is config.role("judge") and type(role.name) is str


def test_a_role_member_writes_as_its_string():
    assert ModelRole.JUDGE == "judge" and f"{ModelRole.KEYWORDER}" == "keyworder"
    assert json.dumps({ModelRole.FUSER: ModelRole.EXTRACTOR}) == '{"fuser": "extractor"}'


def test_usage_of_a_call_by_member_names_the_role_as_a_string():
    gw = scripted_gateway(ScriptedTransport(lambda request: {"ok": True}))
    res = gw.complete_json(ModelRole.JUDGE, [{"role": "user", "content": "hi"}],
                           {"type": "object"}, step="t")
    assert res.usage.role == "judge" and type(res.usage.role) is str
    assert [u.role for u in gw.usage_log] == ["judge"]
