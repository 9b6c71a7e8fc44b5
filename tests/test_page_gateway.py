"""The app's model gateway (pages._state.model_gateway): built once per configuration and
shared across reruns and pages, the old one closed when the configuration changes (issue #17
item 5: the Settings page and the pages built a gateway on every click and never closed it)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.test_page_settings import PAGE as SETTINGS
from tests.test_page_settings import env  # noqa: F401  (fixture)
from workbench.llm import Gateway


@pytest.fixture
def built(monkeypatch):
    """Every app gateway built, and every gateway closed, while the test runs. (A connection
    check runs on a no-retry copy, ``Gateway.with_config``: that copy is not counted.)"""
    import pages._state

    pages._state._gateway.clear()  # start empty: earlier tests leave their gateway
    made: list[Gateway] = []
    closed: list[Gateway] = []
    build, close = pages._state.persistent_gateway, Gateway.close

    def counting_build(*args, **kwargs):
        made.append(build(*args, **kwargs))
        return made[-1]

    def counting_close(self):
        closed.append(self)
        close(self)

    monkeypatch.setattr(pages._state, "persistent_gateway", counting_build)
    monkeypatch.setattr(Gateway, "close", counting_close)
    return made, closed


def test_settings_checks_share_one_gateway_until_the_configuration_changes(
        env, built, monkeypatch):  # noqa: F811
    made, closed = built
    at = AppTest.from_file(SETTINGS, default_timeout=60).run()
    assert made == []  # drawing the page builds none
    at.button(key="settings_test_judge").click().run()
    at.button(key="settings_test_matcher").click().run()
    at.button(key="settings_test_judge").click().run()
    assert not at.exception and len(env.requests) == 3
    assert len(made) == 1 and closed == []
    first = made[0]
    # A changed setting is a new configuration: a new gateway, and the old one is closed.
    monkeypatch.setenv("WORKBENCH_JUDGE_TEMPERATURE", "0.5")
    at.button(key="settings_test_judge").click().run()
    assert not at.exception and len(env.requests) == 4
    assert env.requests[-1]["temperature"] == pytest.approx(0.5)
    assert len(made) == 2 and closed == [first]


def test_the_fingerprint_follows_settings_and_mode_not_keys():
    from pages._state import config_fingerprint
    from workbench.llm import load_config

    config = load_config(env={})
    base = config_fingerprint(config, {})
    assert config_fingerprint(config, {"WORKBENCH_JUDGE_API_KEY": "sk-1"}) == base
    assert config_fingerprint(config, {"WORKBENCH_LLM_MODE": "replay"}) != base
    assert config_fingerprint(config.with_role("judge", temperature=0.7), {}) != base
