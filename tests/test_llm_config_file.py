"""Saving a role's settings to workbench.toml (issue #16: settings an admin can change, and
nobody else can): the write validates with load_config, keeps the rest of the file, refuses
a stale base, a non-admin and anything that would put an API key in the file."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from workbench.identity.roles import Actor, NotAllowed
from workbench.llm import LlmConfigError, load_config
from workbench.llm.config_file import (
    StaleSettings,
    edit_role_table,
    read_settings_file,
    save_role_settings,
    settings_file_path,
)

ADMIN = Actor.signed_in("ada", "admin")
ANALYST = Actor.signed_in("al", "analyst")
ENV: dict[str, str] = {}  # no WORKBENCH_* variables: the file alone decides

ORIGINAL = """\
# Our team's model settings.  (a comment the save must keep)
[defaults]
timeout = 120   # seconds; slow GPU box
concurrency = 2

[roles.judge]
temperature = 0.01  # as in the paper
max_tokens = 512
api_key_env = "OPENAI_API_KEY"

[roles.extractor]
max_tokens = 2048

[embedded]
ctx_size = 32768
"""


@pytest.fixture
def toml(tmp_path) -> Path:
    path = tmp_path / "workbench.toml"
    path.write_text(ORIGINAL, encoding="utf-8")
    return path


def save(path: Path, role: str, changes: dict, actor: Actor = ADMIN, env=None, base=None):
    base = read_settings_file(path).content_hash if base is None else base
    return save_role_settings(path, role, changes, actor=actor, base_hash=base,
                              env=ENV if env is None else env)


def test_a_valid_change_round_trips_through_load_config_and_keeps_the_rest(toml):
    changes = {"model": "openai/Qwen2.5-7B-Instruct", "api_base": "http://gpu-box:8000/v1",
               "temperature": 0.3, "max_tokens": 1024, "concurrency": 8, "timeout": 45.5}
    returned = save(toml, "judge", changes)
    judge = load_config(toml, env=ENV).role("judge")
    for key, value in changes.items():
        assert getattr(judge, key) == value, key
        assert getattr(returned.role("judge"), key) == value, key
    text = toml.read_text()
    # Comments, the other tables and the untouched keys are kept byte for byte.
    assert text.startswith("# Our team's model settings.  (a comment the save must keep)\n"
                           "[defaults]\ntimeout = 120   # seconds; slow GPU box\n")
    assert '[roles.extractor]\nmax_tokens = 2048\n\n[embedded]\nctx_size = 32768\n' in text
    assert 'api_key_env = "OPENAI_API_KEY"\n' in text
    assert load_config(toml, env=ENV).role("extractor").timeout == 120  # [defaults] still apply
    assert judge.api_key_env == "OPENAI_API_KEY"


def test_a_role_without_a_table_gets_one_and_a_missing_file_is_created(tmp_path):
    path = tmp_path / "conf" / "workbench.toml"
    base = read_settings_file(path)
    assert not base.exists
    save(path, "keyworder", {"temperature": 0.5}, base=base.content_hash)
    assert load_config(path, env=ENV).role("keyworder").temperature == 0.5
    assert load_config(path, env=ENV).role("keyworder").max_tokens == 256  # built-in kept
    save(path, "matcher", {"max_tokens": 300})
    config = load_config(path, env=ENV)
    assert config.role("keyworder").temperature == 0.5 and config.role("matcher").max_tokens == 300


def test_clearing_api_base_means_the_providers_default(toml):
    save(toml, "judge", {"api_base": "http://gpu-box:8000/v1"})
    save(toml, "judge", {"api_base": ""})
    assert load_config(toml, env=ENV).role("judge").api_base is None


@pytest.mark.parametrize("changes,named", [
    ({"temperature": 3.5}, "temperature 3.5 is outside 0..2"),
    ({"max_tokens": 0}, "max_tokens must be at least 1"),
    ({"concurrency": 0}, "concurrency must be at least 1"),
    ({"timeout": -1.0}, "timeout must be positive"),
    ({"max_tokens": "lots"}, "bad value for max_tokens"),
    ({"model": ""}, "model must not be empty"),
    ({"temperature": float("nan")}, "temperature = nan is not a finite number"),
    ({"retries": 5}, "'retries' cannot be changed here"),
])
def test_an_invalid_value_is_refused_naming_it_and_the_file_is_unchanged(toml, changes, named):
    before = toml.read_bytes()
    with pytest.raises(LlmConfigError) as err:
        save(toml, "judge", changes)
    assert named in str(err.value)
    assert toml.read_bytes() == before
    assert [p.name for p in toml.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_an_embedded_role_too_big_for_its_slot_is_refused_with_the_fix(toml):
    before = toml.read_bytes()
    with pytest.raises(LlmConfigError, match=r"Raise \[embedded\].ctx_size"):
        save(toml, "judge", {"max_tokens": 16000})  # judge is embedded: 16384-token slots
    assert toml.read_bytes() == before


def test_a_stale_base_is_refused_and_nothing_is_overwritten(toml):
    seen = read_settings_file(toml).content_hash
    save(toml, "judge", {"temperature": 0.2}, base=seen)  # another admin saves first
    after_first = toml.read_bytes()
    with pytest.raises(StaleSettings, match="changed since these settings were read") as err:
        save(toml, "judge", {"max_tokens": 700}, base=seen)
    assert "reload" in err.value.hint
    assert toml.read_bytes() == after_first
    # An edit by hand in between counts the same.
    fresh = read_settings_file(toml).content_hash
    toml.write_text(toml.read_text() + "# edited by hand\n")
    with pytest.raises(StaleSettings):
        save(toml, "judge", {"max_tokens": 700}, base=fresh)
    assert load_config(toml, env=ENV).role("judge").max_tokens == 512


def test_a_file_created_after_reading_none_is_stale(tmp_path):
    path = tmp_path / "workbench.toml"
    absent = read_settings_file(path).content_hash
    path.write_text("")  # created by hand: even an empty file differs from none
    with pytest.raises(StaleSettings):
        save(path, "judge", {"temperature": 0.2}, base=absent)


def test_two_admins_saving_at_once_one_wins_one_is_told_to_reload(toml):
    base = read_settings_file(toml).content_hash
    outcomes: list[str] = []

    def admin(value: float) -> None:
        try:
            save(toml, "judge", {"temperature": value}, base=base)
            outcomes.append("saved")
        except StaleSettings:
            outcomes.append("stale")

    threads = [threading.Thread(target=admin, args=(v,)) for v in (0.2, 0.4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["saved", "stale"]


@pytest.mark.parametrize("actor", [ANALYST, Actor.signed_in("ann", "annotator"),
                                   Actor.signed_in("otto", "author"), Actor.nobody()])
def test_a_non_admin_is_refused_and_nothing_is_written(toml, actor):
    before = toml.read_bytes()
    with pytest.raises(NotAllowed) as err:
        save(toml, "judge", {"temperature": 0.9}, actor=actor)
    assert "change settings" in str(err.value) and "admin" in err.value.hint
    assert toml.read_bytes() == before


def test_single_user_mode_may_change_settings(toml):
    save(toml, "judge", {"temperature": 0.7}, actor=Actor.single_user("me"))
    assert load_config(toml, env=ENV).role("judge").temperature == 0.7


@pytest.mark.parametrize("changes", [{"api_key": "sk-live-123"}, {"openai_api_key": "sk-1"},
                                     {"api_base": "https://me:sk-live-123@api.example.com/v1"}])
def test_an_api_key_is_never_written(toml, changes):
    before = toml.read_bytes()
    with pytest.raises(LlmConfigError, match="never written to workbench.toml"):
        save(toml, "judge", changes)
    assert toml.read_bytes() == before
    assert b"sk-" not in toml.read_bytes()


def test_a_key_in_the_environment_stays_out_of_the_file(toml):
    env = {"WORKBENCH_JUDGE_API_KEY": "sk-env-secret", "OPENAI_API_KEY": "sk-other"}
    save(toml, "judge", {"temperature": 0.2, "model": "openai/gpt-4o-mini"}, env=env)
    text = toml.read_text()
    assert "sk-" not in text and "api_key =" not in text


def test_a_variable_that_overrides_the_setting_is_named_and_nothing_written(toml):
    before = toml.read_bytes()
    env = {"WORKBENCH_JUDGE_TEMPERATURE": "0.05"}
    with pytest.raises(LlmConfigError, match="WORKBENCH_JUDGE_TEMPERATURE='0.05'") as err:
        save(toml, "judge", {"temperature": 0.2}, env=env)
    assert "unset WORKBENCH_JUDGE_TEMPERATURE" in err.value.hint
    assert toml.read_bytes() == before


def test_an_unknown_role_is_refused(toml):
    with pytest.raises(LlmConfigError, match="unknown model role 'jugde'"):
        save(toml, "jugde", {"temperature": 0.2})


def test_a_layout_the_text_edit_cannot_handle_is_refused(tmp_path):
    path = tmp_path / "workbench.toml"
    path.write_text('[roles]\njudge = { temperature = 0.01 }\n')
    with pytest.raises(LlmConfigError, match="edit .* by hand"):
        save(path, "judge", {"temperature": 0.2})
    assert path.read_text() == '[roles]\njudge = { temperature = 0.01 }\n'


def test_strings_are_escaped_as_toml(toml):
    model = 'openai/we"ird\\name\tx'
    save(toml, "judge", {"model": model})
    assert load_config(toml, env=ENV).role("judge").model == model


def test_edit_keeps_the_table_order_and_adds_after_its_last_setting():
    text = "[roles.judge]\n# note\nmax_tokens = 512\n\n# next table\n[roles.fuser]\n"
    assert edit_role_table(text, "judge", {"max_tokens": 600, "concurrency": 4}) == (
        "[roles.judge]\n# note\nmax_tokens = 600\nconcurrency = 4\n\n# next table\n"
        "[roles.fuser]\n")


def test_the_file_is_where_load_config_reads_it(tmp_path, monkeypatch):
    assert settings_file_path({"WORKBENCH_CONFIG": str(tmp_path / "x.toml")}) == tmp_path / "x.toml"
    assert settings_file_path({}) == Path("workbench.toml")


def test_a_file_that_is_not_utf8_is_refused_with_the_fix(tmp_path):
    path = tmp_path / "workbench.toml"
    path.write_bytes(b"[roles.judge]\nmodel = \"caf\xe9\"\n")
    with pytest.raises(LlmConfigError, match="re-save it as UTF-8"):
        read_settings_file(path)


def test_the_documented_example_keeps_every_line_but_the_changed_ones(tmp_path):
    example = Path(__file__).resolve().parents[1] / "workbench.toml.example"
    path = tmp_path / "workbench.toml"
    path.write_text(example.read_text(encoding="utf-8"), encoding="utf-8")
    save(path, "judge", {"temperature": 0.25, "concurrency": 4})
    save(path, "fuser", {"model": "openai/Qwen2.5-7B-Instruct",
                         "api_base": "http://gpu-box:8000/v1"})
    old, new = example.read_text().splitlines(), path.read_text().splitlines()
    removed = [line for line in old if line not in new]
    added = [line for line in new if line not in old]
    assert removed == ["temperature = 0.01"]  # [roles.judge]'s line; [defaults] has none
    assert sorted(added) == sorted(["temperature = 0.25", "concurrency = 4",
                                    'model = "openai/Qwen2.5-7B-Instruct"',
                                    'api_base = "http://gpu-box:8000/v1"'])
    assert len(new) == len(old) + 3
    config = load_config(path, env=ENV)
    assert config.role("judge").concurrency == 4 and config.role("extractor").concurrency == 2
    assert config.role("fuser").api_base == "http://gpu-box:8000/v1"


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(model=st.text(st.characters(exclude_categories=()), min_size=1, max_size=40))
@example(model="judge\ud800")  # a lone surrogate: hypothesis' text() rarely draws one
@example(model='a"\\\n\x7f\x00#[roles.x]')
def test_any_model_text_round_trips_or_is_refused_cleanly(tmp_path_factory, model):
    """Model strings come from a text field: whatever is typed either reads back exactly as
    typed or is refused with an LlmConfigError, and a refusal leaves the file as it was."""
    path = tmp_path_factory.mktemp("fuzz") / "workbench.toml"
    path.write_text(ORIGINAL, encoding="utf-8")
    try:
        save(path, "judge", {"model": model})
    except LlmConfigError:
        assert path.read_text(encoding="utf-8") == ORIGINAL
        return
    assert load_config(path, env=ENV).role("judge").model == model


def test_a_path_that_cannot_be_written_is_explained(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the settings folder should be")
    path = blocker / "workbench.toml"
    with pytest.raises(LlmConfigError, match="cannot write .*nothing was saved") as err:
        save(path, "judge", {"temperature": 0.2}, base="absent")
    assert "WORKBENCH_CONFIG" in err.value.hint
    assert blocker.read_text() == "a file where the settings folder should be"


def test_the_command_line_sets_typed_values_and_refuses_bad_ones(tmp_path, monkeypatch, capsys):
    from workbench.cli import main

    path = tmp_path / "workbench.toml"
    path.write_text(ORIGINAL)
    monkeypatch.setenv("WORKBENCH_CONFIG", str(path))
    for var in ("WORKBENCH_JUDGE_TEMPERATURE", "WORKBENCH_JUDGE_MAX_TOKENS",
                "WORKBENCH_DEFAULT_TEMPERATURE", "WORKBENCH_DEFAULT_MAX_TOKENS"):
        monkeypatch.delenv(var, raising=False)
    assert main(["model", "set", "judge", "temperature=0.2", "max_tokens=700"]) == 0
    assert "temperature = 0.2, max_tokens = 700" in capsys.readouterr().out
    assert "temperature = 0.2\n" in path.read_text() and "max_tokens = 700\n" in path.read_text()
    before = path.read_bytes()
    for bad, said in [("max_tokens=lots", "max_tokens='lots' is not a number"),
                      ("api_key=sk-1", "never written"), ("temperature", "is not SETTING=VALUE"),
                      ("temperature=9", "outside 0..2")]:
        assert main(["model", "set", "judge", bad]) == 2, bad
        assert said in capsys.readouterr().err, bad
        assert path.read_bytes() == before


def test_a_fleet_role_with_a_multi_line_array_gets_the_new_key_after_it(tmp_path):
    path = tmp_path / "workbench.toml"
    path.write_text('[roles.judge]\nmodel = "openai/Qwen2.5-7B-Instruct"\nendpoints = [\n'
                    '    "http://gpu-1:8000/v1",\n    "http://gpu-2:8000/v1",\n]\n\n'
                    '[embedded]\nparallel = 2\n')
    save(path, "judge", {"concurrency": 32})
    judge = load_config(path, env=ENV).role("judge")
    assert judge.concurrency == 32 and len(judge.endpoints) == 2
    assert path.read_text().endswith(']\nconcurrency = 32\n\n[embedded]\nparallel = 2\n')
    with pytest.raises(LlmConfigError, match="either api_base .* or endpoints"):
        save(path, "judge", {"api_base": "http://gpu-3:8000/v1"})  # load_config's own check
