"""The one error base: WorkbenchError(message, hint), caught once by the CLI, shown once by the
pages' helper, and the one answer to "does this error stop a batch?"."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import pytest

from workbench import cli
from workbench.errors import WorkbenchError, is_fatal

ROOT = Path(__file__).resolve().parents[1]
BUILTIN_BASES = {"Exception", "ValueError", "RuntimeError", "LookupError", "KeyError", "OSError",
                 "TypeError"}
# Signals that never leave their module (the gateway's retry loop; the JSON reader's
# duplicate-key hook, turned into an InputError by its caller).
INTERNAL = {"AttemptError", "_DuplicateKey"}


def test_str_is_message_then_hint() -> None:
    assert str(WorkbenchError("cases.jsonl:3: no id", "give every case an id")) == \
        "cases.jsonl:3: no id; give every case an id"
    assert str(WorkbenchError("no hint here")) == "no hint here"


def test_subclasses_keep_the_builtin_base_callers_catch() -> None:
    from store.repo import NotFound
    from workbench.audit.cases import CaseFormatError
    from workbench.graph.rule_graph import UnknownRule
    from workbench.inputs import InputError

    assert issubclass(CaseFormatError, ValueError) and issubclass(CaseFormatError, WorkbenchError)
    assert issubclass(NotFound, LookupError) and issubclass(UnknownRule, KeyError)
    # KeyError's own str() would quote the message; the base's text wins.
    assert str(UnknownRule(["r9"], "x")) == "unknown rule id(s) in SKILL 'x': r9"
    err = InputError("cases.jsonl", "not UTF-8", line=2, fix="re-save it as UTF-8")
    assert (err.message, err.hint) == ("cases.jsonl:2: not UTF-8", "re-save it as UTF-8")
    assert str(err) == "cases.jsonl:2: not UTF-8; re-save it as UTF-8"


def test_model_call_error_keeps_its_own_hint_attribute() -> None:
    from workbench.llm import ModelCallError

    err = ModelCallError("refused", role="judge", model="m", hint="the API key")
    assert err.hint == "the API key"
    assert str(err) == "judge call to m failed: refused. Check: the API key"


def test_plain_subclass_survives_pickling() -> None:
    # Ray and process pools send exceptions between processes.
    from workbench.audit.cases import CaseFormatError

    back = pickle.loads(pickle.dumps(CaseFormatError("bad case", "fix it")))
    assert (type(back), str(back), back.hint) == (CaseFormatError, "bad case; fix it", "fix it")


def test_every_exception_class_derives_from_the_base() -> None:
    """A new exception class that forgets the base would bypass the CLI's one handler."""
    missing = []
    for path in sorted([*ROOT.glob("workbench/**/*.py"), *ROOT.glob("store/**/*.py")]):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef) or node.name in INTERNAL | {"WorkbenchError"}:
                continue
            bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
            if bases & BUILTIN_BASES and "WorkbenchError" not in bases:
                missing.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert missing == []


def test_fatal_errors_are_the_setup_errors() -> None:
    from workbench.audit.cases import CaseFormatError
    from workbench.audit.dense import DenseUnavailable
    from workbench.audit.runner import RunAborted
    from workbench.llm import EmbeddedModelUnavailable, LlmConfigError, MissingRecording, ModelCallError

    assert is_fatal(LlmConfigError("no judge model configured"))
    assert is_fatal(EmbeddedModelUnavailable("llama-server missing"))
    assert is_fatal(DenseUnavailable("no sentence-transformers"))
    assert is_fatal(RunAborted("3 cases in a row failed"))
    assert is_fatal(MissingRecording("k", "judge", "prompt…", "fixtures/x", "record it"))
    # A failed call or a bad case is about one case: the batch goes on.
    assert not is_fatal(ModelCallError("timeout", role="judge", model="m"))
    assert not is_fatal(CaseFormatError("bad case"))
    assert not is_fatal(RuntimeError("anything else"))


def test_the_runner_stops_on_a_fatal_error_and_keeps_going_on_others() -> None:
    from workbench.audit import runner
    from workbench.audit.cases import AuditCase
    from workbench.llm import LlmConfigError

    case = AuditCase(id="c1", model_response="hi")
    strat = type("S", (), {"name": "cdg"})()

    def boom(exc):
        def audit_case(*_a, **_k):
            raise exc
        return audit_case

    opts = runner.AuditOptions()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner, "audit_case", boom(LlmConfigError("no judge model")))
        with pytest.raises(LlmConfigError):
            runner.audit_one(case, None, strat, None, opts)
        mp.setattr(runner, "audit_case", boom(ValueError("odd case")))
        trace = runner.audit_one(case, None, strat, None, opts)
    assert trace.error.kind == "InternalError" and "odd case" in trace.error.message


def test_cli_prints_a_workbench_error_once_and_exits_nonzero(monkeypatch, capsys) -> None:
    def failing(_args):
        raise WorkbenchError("SKILL 'refunds' is not in the store", "import it first")

    monkeypatch.setattr("workbench.commands.store_io._export", failing)
    code = cli.main(["export-store", "--out", "x.json"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == "error: SKILL 'refunds' is not in the store; import it first\n"


def test_cli_shows_a_domain_error_without_translation(tmp_path, capsys) -> None:
    """ContractError used to be re-raised as CliError(str(exc)); the base handler shows it."""
    bad = tmp_path / "contract.yaml"
    bad.write_text("rules: [\n", encoding="utf-8")
    code = cli.main(["contract", "check", str(bad)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"error: invalid contract {bad}") and err.count("invalid contract") == 1
    assert "Traceback" not in err


def test_page_helper_escapes_and_names_the_fix() -> None:
    from components.errors import error_text

    text = error_text(WorkbenchError("<b>bad</b> case", "fix line 3"), lead="Nothing was stored: ")
    assert text == "Nothing was stored: <b>bad</b> case\n\nWhat to do: fix line 3"
    from components.safe import md

    assert "<b>" not in md(text)



def test_show_error_renders_escaped_text_in_a_real_script() -> None:
    from streamlit.testing.v1 import AppTest

    def script() -> None:
        from components.errors import show_error
        from workbench.errors import WorkbenchError

        show_error(WorkbenchError("[click](http://evil.example) *bad*", "fix line 3"),
                   lead="Nothing was stored: ")
        show_error(WorkbenchError("line 1\nline 2"), "Could not read it:", block=True)

    at = AppTest.from_function(script).run()
    first, second = at.error[0].value, at.error[1].value
    assert "\\[click\\]\\(http" in first and "\\*bad\\*" in first  # no live link, no emphasis
    assert "What to do\\: fix line 3" in first
    assert second == "Could not read it\\:" and at.code[0].value == "line 1\nline 2"
