"""Role configuration: file, environment, precedence, validation, and API-key handling."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbench.llm import (
    ROLE_NAMES,
    LlmConfigError,
    load_config,
    resolve_api_key,
)
from workbench.llm.config import EMBEDDED_FIELDS, ROLE_FIELDS, api_key_source

EXAMPLE = Path(__file__).resolve().parents[1] / "workbench.toml.example"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "workbench.toml"
    path.write_text(text)
    return path


def test_defaults_without_a_file_use_the_embedded_model(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no ./workbench.toml here
    config = load_config(env={})
    assert set(ROLE_NAMES) <= set(config.roles)
    assert all(r.model == "embedded" for r in config.roles.values())
    # 0.01 for every role, as in the first paper's appendix B
    assert {r.temperature for r in config.roles.values()} == {0.01}
    assert config.embedded.ctx_size == 32768 and config.embedded.parallel == 2
    assert config.source == "built-in defaults"


def test_precedence_file_defaults_role_table_then_environment(tmp_path):
    path = write(
        tmp_path,
        """
[defaults]
model = "openai/base"
api_base = "http://a:1/v1"
timeout = 60

[roles.judge]
model = "openai/judge-model"
max_tokens = 300

[roles.reviewer]
model = "openai/extra-role"
""",
    )
    env = {
        "WORKBENCH_DEFAULT_TIMEOUT": "90",
        "WORKBENCH_JUDGE_TIMEOUT": "30",
        "WORKBENCH_JUDGE_API_BASE": "http://b:2/v1",
    }
    config = load_config(path, env=env)
    judge, fuser = config.role("judge"), config.role("fuser")
    assert judge.model == "openai/judge-model" and judge.max_tokens == 300
    assert judge.api_base == "http://b:2/v1" and judge.timeout == 30.0
    assert fuser.model == "openai/base" and fuser.api_base == "http://a:1/v1"
    assert fuser.timeout == 90.0 and fuser.max_tokens == 2048  # built-in role default kept
    assert config.role("reviewer").model == "openai/extra-role"  # extra roles are allowed
    assert config.source == str(path)


def test_workbench_config_variable_selects_the_file(tmp_path):
    path = write(tmp_path, '[roles.judge]\nmodel = "openai/x"\n')
    assert load_config(env={"WORKBENCH_CONFIG": str(path)}).role("judge").model == "openai/x"
    with pytest.raises(LlmConfigError, match="does not exist"):
        load_config(env={"WORKBENCH_CONFIG": str(tmp_path / "missing.toml")})
    latin = tmp_path / "latin.toml"
    latin.write_bytes('[roles.judge]\nmodel = "openai/caf\u00e9"\n'.encode("latin-1"))
    with pytest.raises(LlmConfigError, match="latin.toml is not UTF-8") as caught:  # was a codec error
        load_config(env={"WORKBENCH_CONFIG": str(latin)})
    assert caught.value.hint == "re-save it as UTF-8"


@pytest.mark.parametrize(
    "text,match",
    [
        ("[roles.judge]\ntemprature = 0.1\n", "unknown setting 'temprature'"),
        ("[roles.judge]\napi_key = 'sk-live-abc'\n", "keys never go in workbench.toml"),
        ("[defaults]\nopenai_api_key = 'sk'\n", "keys never go in workbench.toml"),
        ("[roles.judge]\ntemperature = 3\n", "outside 0..2"),
        ("[roles.judge]\nmax_tokens = 0\n", "max_tokens must be at least 1"),
        ("[roles.judge]\nmax_tokens = 'many'\n", "bad value for max_tokens"),
        ("[embedded]\nctx_size = 4096\nparallel = 4\n", "slots holds only 1024 tokens"),
        ("roles = 3\n", "must be a table"),
        ("[roles.judge\n", "not valid TOML"),
    ],
)
def test_bad_files_are_refused_with_the_reason(tmp_path, text, match):
    with pytest.raises(LlmConfigError, match=re.escape(match)):
        load_config(write(tmp_path, text), env={})


def test_bad_environment_value_names_the_variable(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LlmConfigError, match="WORKBENCH_JUDGE_CONCURRENCY='lots'"):
        load_config(env={"WORKBENCH_JUDGE_CONCURRENCY": "lots"})


def test_slot_check_counts_only_embedded_roles(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = {"WORKBENCH_EMBEDDED_CTX_SIZE": "2048", "WORKBENCH_EMBEDDED_PARALLEL": "1"}
    with pytest.raises(LlmConfigError, match="role 'extractor'"):
        load_config(env=env)
    # Sending the long-answer roles elsewhere makes the small embedded context acceptable.
    env |= {"WORKBENCH_EXTRACTOR_MODEL": "openai/x", "WORKBENCH_FUSER_MODEL": "openai/x"}
    assert load_config(env=env).embedded.slot_ctx == 2048


def test_api_keys_come_from_env_or_secrets_never_from_the_config(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "secrets.toml").write_text('MY_KEY = "from-secrets"\n')
    config = load_config(write(tmp_path, '[roles.judge]\napi_key_env = "MY_KEY"\n'), env={})
    judge = config.role("judge")
    secrets = (Path(".streamlit/secrets.toml"),)
    assert resolve_api_key(judge, env={}, secrets_files=secrets) == "from-secrets"
    assert resolve_api_key(judge, env={"MY_KEY": "from-env"}, secrets_files=secrets) == "from-env"
    direct = {"WORKBENCH_JUDGE_API_KEY": "direct", "MY_KEY": "from-env"}
    assert resolve_api_key(judge, env=direct, secrets_files=secrets) == "direct"
    assert resolve_api_key(config.role("fuser"), env={}, secrets_files=secrets) is None
    # Display says where the key comes from, never what it is.
    shown = api_key_source(judge, env={"MY_KEY": "from-env"})
    assert "MY_KEY" in shown and "from-env" not in shown
    assert "from-secrets" not in repr(config)


def test_example_file_loads_and_documents_every_setting(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load_config(EXAMPLE, env={})
    assert config.role("judge").temperature == 0.01
    assert config.role("extractor").max_tokens == 2048
    text = EXAMPLE.read_text()
    for name in list(ROLE_FIELDS) + list(EMBEDDED_FIELDS):
        # Each setting is explained in a comment line that starts with its name.
        assert re.search(rf"^# {name}: ", text, re.MULTILINE), f"{name} is not documented"
    for role in ROLE_NAMES:
        assert f"[roles.{role}]" in text
