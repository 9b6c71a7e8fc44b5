"""The Settings page, headless (AppTest), against a fake model server and a temp database."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from workbench.llm.fake_server import FakeChatServer, reply, role_env, status

ROOT = Path(__file__).resolve().parents[1]
PAGE = str(ROOT / "pages" / "settings.py")


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WORKBENCH_DB", f"sqlite:///{tmp_path / 'settings.db'}")
    for var in ("WORKBENCH_CONFIG", "WORKBENCH_LLM_MODE", "WORKBENCH_LLM_RECORDINGS"):
        monkeypatch.delenv(var, raising=False)
    with FakeChatServer(default=reply({"ok": True}, prompt_tokens=26, completion_tokens=6)) as srv:
        for name, value in role_env(srv.api_base, role="judge").items():
            monkeypatch.setenv(name, value)
        for name, value in role_env(srv.api_base, role="matcher").items():
            monkeypatch.setenv(name, value)
        yield srv


def all_text(at: AppTest) -> str:
    parts = [
        str(e.value)
        for kind in ("markdown", "caption", "success", "error", "code", "info")
        for e in getattr(at, kind)
    ]
    parts += [at.dataframe[i].value.to_csv() for i in range(len(at.dataframe))]
    return "\n".join(parts)


def test_lists_roles_and_never_shows_keys(env, monkeypatch):
    monkeypatch.setenv("WORKBENCH_JUDGE_API_KEY", "sk-very-secret")
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    roles = at.dataframe[0].value
    assert list(roles["role"]) == ["extractor", "fuser", "keyworder", "judge", "matcher"]
    judge = roles[roles["role"] == "judge"].iloc[0]
    assert judge["model"] == "openai/fake-model" and judge["endpoint"] == env.api_base
    assert judge["temperature"] == pytest.approx(0.01)
    assert "WORKBENCH_JUDGE_API_KEY" in judge["API key"]
    assert "sk-very-secret" not in all_text(at)
    assert env.requests == []  # nothing is sent until a button is pressed
    assert "No model calls recorded" in at.info[0].value


def test_test_connection_reports_and_totals_update(env):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.button(key="settings_test_judge").click().run()
    assert not at.exception
    assert len(env.requests) == 1 and env.requests[0]["max_tokens"] == 16
    assert any("26 prompt + 6 completion tokens" in s.value for s in at.success)
    usage = at.dataframe[1].value
    row = usage[usage["role"] == "judge"].iloc[0]
    assert row["calls"] == 1 and row["prompt tokens (live)"] == 26


def test_failed_connection_shows_what_to_check(env):
    env.push(status(503, "overloaded"))
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.button(key="settings_test_matcher").click().run()
    assert not at.exception
    assert at.error[0].value == "failed"
    assert "overloaded" in at.code[0].value and env.api_base in at.code[0].value


def test_invalid_configuration_is_explained(env, monkeypatch):
    monkeypatch.setenv("WORKBENCH_JUDGE_MAX_TOKENS", "lots")
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    assert "invalid" in at.error[0].value
    assert "WORKBENCH_JUDGE_MAX_TOKENS" in at.code[0].value


def test_embedded_url_is_shown_as_the_embedded_roles_endpoint(env, monkeypatch):
    monkeypatch.setenv("WORKBENCH_EMBEDDED_URL", "http://127.0.0.1:8091")
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    roles = at.dataframe[0].value
    extractor = roles[roles["role"] == "extractor"].iloc[0]
    assert extractor["model"] == "embedded" and extractor["endpoint"] == "http://127.0.0.1:8091/v1"
    assert any("running `workbench model serve` at http://127.0.0.1:8091/v1" in c.value for c in at.caption)


def test_each_role_shows_which_embedded_model_it_uses(env, monkeypatch):
    monkeypatch.setenv("WORKBENCH_KEYWORDER_MODEL", "embedded:small")
    monkeypatch.setenv("WORKBENCH_EMBEDDED_SMALL_URL", "http://127.0.0.1:8767")
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    roles = at.dataframe[0].value.set_index("role")
    assert roles.loc["keyworder", "runs"] == "Qwen2.5-Coder-0.5B-Instruct (Q4_K_M), embedded"
    assert roles.loc["keyworder", "endpoint"] == "http://127.0.0.1:8767/v1"
    assert roles.loc["extractor", "runs"] == "Qwen2.5-Coder-1.5B-Instruct (Q4_K_M), embedded"
    assert roles.loc["extractor", "endpoint"] != "http://127.0.0.1:8767/v1"
    assert roles.loc["judge", "runs"] == "openai/fake-model"
    captions = [c.value for c in at.caption]
    assert any(c.startswith("Embedded model Qwen2.5-Coder-0.5B-Instruct (Q4_K_M) (used by keyworder)")
               and "serve --model small` at http://127.0.0.1:8767/v1" in c for c in captions)
    assert any(c.startswith("Embedded model Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) (used by "
                            "extractor, fuser)") and "not started" in c for c in captions)


def test_judge_context_window_is_shown_or_asked_for(env, monkeypatch):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    captions = [c.value.replace("\\", "") for c in at.caption]  # Markdown-escaped
    # litellm does not know the fake model; the setting to give is named as code
    assert any("Judge context window: unknown" in c and "`context_window` under `[roles.judge]`"
               in c for c in captions)
    monkeypatch.setenv("WORKBENCH_JUDGE_CONTEXT_WINDOW", "12000")
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert any("Judge context window: 12,000 tokens" in c.value.replace("\\", "")
               for c in at.caption)


def test_a_fleet_role_shows_each_endpoints_health_and_share(env, monkeypatch):
    dead = "http://127.0.0.1:9/v1"  # discard port: nothing listens
    with FakeChatServer(default=reply({"ok": True})) as other:
        live = [env.api_base, other.api_base]
        monkeypatch.setenv("WORKBENCH_KEYWORDER_MODEL", "openai/fake-model")
        monkeypatch.setenv("WORKBENCH_KEYWORDER_ENDPOINTS", ",".join([*live, dead]))
        at = AppTest.from_file(PAGE, default_timeout=90).run()
        assert not at.exception
        for _ in range(4):
            at.button(key="settings_test_keyworder").click().run()
        assert not at.exception
        fleet = at.dataframe[1].value.set_index("endpoint")
        served = {env.api_base: len(env.requests), other.api_base: len(other.requests)}
    assert list(fleet.index) == [*live, dead]
    # A connection test has no retries: each of the 4 went to one endpoint, ok or not.
    assert fleet["calls"].sum() == 4 and fleet.loc[dead, "failures"] == fleet.loc[dead, "calls"]
    answered = sum(served.values())
    for base, n in served.items():
        assert fleet.loc[base, "calls"] == n
        assert fleet.loc[base, "share"] == pytest.approx(n / answered, abs=1e-3)
        assert fleet.loc[base, "health"] == ("ok" if n else "unused")
    assert fleet.loc[dead, "share"] == 0.0
    if fleet.loc[dead, "calls"]:  # random routing may or may not have picked it
        assert fleet.loc[dead, "health"] == "cooling down"
        assert fleet.loc[dead, "last failure"] == "connection"


# -- changing settings (issue #16: an admin may, nobody else) -------------------------------

def signed_in(role: str | None) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    if role is not None:
        at.session_state["identity"] = {"name": f"the {role}", "role": role}
    return at.run()


def plain(markdown: str) -> str:
    """Text the page Markdown-escaped (components.safe.md), as the reader sees it."""
    return markdown.replace("\\", "")


def field(at: AppTest, label: str):
    found = [w for kind in ("number_input", "text_input") for w in getattr(at, kind)
             if w.label == label]
    assert len(found) == 1, f"no single field labelled {label!r}"
    return found[0]


def save_button(at: AppTest):
    return next(b for b in at.button if b.label == "Save settings")


@pytest.fixture
def toml(env, tmp_path, monkeypatch):
    path = tmp_path / "conf" / "workbench.toml"
    monkeypatch.setenv("WORKBENCH_CONFIG", str(path))
    path.parent.mkdir()
    path.write_text("# kept\n[roles.judge]\nmax_tokens = 512\n")
    return path


def test_an_admin_changes_a_role_and_the_next_model_call_uses_it(env, toml):
    at = signed_in("admin")
    assert not at.exception
    at.selectbox(key="settings_edit_role").set_value("judge").run()
    field(at, "Temperature").set_value(0.3)
    field(at, "Max tokens").set_value(300)
    save_button(at).click().run()
    assert not at.exception
    flash = [plain(s.value) for s in at.success]
    assert flash == ["Saved judge: temperature = 0.3, max_tokens = 300"]
    assert toml.read_text() == "# kept\n[roles.judge]\nmax_tokens = 300\ntemperature = 0.3\n"
    judge = at.dataframe[0].value.set_index("role").loc["judge"]
    assert judge["temperature"] == pytest.approx(0.3) and judge["max tokens"] == 300
    assert field(at, "Temperature").value == pytest.approx(0.3)  # the form shows the file
    # The page's cached gateway follows the new configuration: the request carries it.
    at.button(key="settings_test_judge").click().run()
    assert not at.exception and len(env.requests) == 1
    assert env.requests[0]["temperature"] == pytest.approx(0.3)


def test_a_setting_from_the_environment_is_shown_but_not_changeable(env, toml):
    at = signed_in("admin")
    at.selectbox(key="settings_edit_role").set_value("judge").run()
    assert field(at, "Timeout (s)").disabled  # role_env sets WORKBENCH_JUDGE_TIMEOUT
    assert not field(at, "Temperature").disabled
    assert any("timeout (WORKBENCH_JUDGE_TIMEOUT)" in plain(c.value) for c in at.caption)


def test_an_invalid_value_is_explained_and_nothing_saved(env, toml):
    before = toml.read_bytes()
    at = signed_in(None)  # single-user mode: allowed, like the other guarded writes
    at.selectbox(key="settings_edit_role").set_value("keyworder").run()
    field(at, "Model").set_value("")
    save_button(at).click().run()
    assert not at.exception
    assert any("Not saved" in e.value and "model must not be empty" in e.value for e in at.error)
    assert toml.read_bytes() == before


def test_a_save_over_a_newer_file_is_refused_with_reload(env, toml):
    at = signed_in("admin")
    at.selectbox(key="settings_edit_role").set_value("judge").run()
    toml.write_text(toml.read_text() + "concurrency = 3\n")  # another admin, or by hand
    field(at, "Temperature").set_value(0.5)
    save_button(at).click().run()
    assert not at.exception
    assert any("changed since these settings were read" in e.value for e in at.error)
    assert "temperature" not in toml.read_text() and "concurrency = 3" in toml.read_text()
    at.button(key="settings_reload").click().run()
    assert not at.exception and not at.warning
    field(at, "Temperature").set_value(0.5)
    save_button(at).click().run()
    assert "temperature = 0.5" in toml.read_text() and "concurrency = 3" in toml.read_text()


@pytest.mark.parametrize("role", ["analyst", "author", "annotator", "reviewer"])
def test_a_non_admin_sees_the_settings_read_only_and_who_may_change_them(env, toml, role):
    at = signed_in(role)
    assert not at.exception
    assert len(at.number_input) == 0 and len(at.text_input) == 0
    assert not [b for b in at.button if b.label == "Save settings"]
    assert [plain(i.value) for i in at.info if "change settings" in i.value] == [
        f"Signed in as {role}: to change settings you need the role admin. Sign in with that "
        "role (sidebar) or ask an admin."]
    assert at.dataframe[0].value.set_index("role").loc["judge", "max tokens"] == 512
