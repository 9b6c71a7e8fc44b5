"""The smaller hostile inputs of issue 36: inputs that are not regular files, files of which
no line is valid, trace fields outside the vocabulary, ids holding control characters."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.special_inputs import RESCUE_AFTER_S, released_after
from workbench.audit.cases import AuditCase, CaseFormatError, case_from_dict, iter_cases
from workbench.audit.trace import AuditTrace, TraceFormatError
from workbench.audit.trace_file import read_traces
from workbench.cli import main
from workbench.identity.roles import COMMAND_LINE
from workbench.inputs import InputError, open_regular, read_input_bytes

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "fixtures" / "demo" / "traces_cdg.jsonl"
CASES = ROOT / "fixtures" / "audit" / "merchant_cases.jsonl"


# -- not a regular file -----------------------------------------------------------------------

def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "cases.jsonl"
    os.mkfifo(fifo)
    with released_after(fifo, RESCUE_AFTER_S) as fired:
        with pytest.raises(InputError, match=r"is a named pipe \(FIFO\), not a cases file"):
            read_input_bytes(fifo, "cases file")
    assert not fired  # refused at once: nobody had to write to it


def test_a_device_and_a_folder_are_refused_and_a_link_to_a_file_is_read(tmp_path):
    (tmp_path / "zero").symlink_to("/dev/zero")
    with pytest.raises(InputError, match="is a device"):
        read_input_bytes(tmp_path / "zero")
    with pytest.raises(InputError, match="is a folder"):
        read_input_bytes(tmp_path)
    (tmp_path / "real.txt").write_bytes(b"ok")
    (tmp_path / "link.txt").symlink_to(tmp_path / "real.txt")
    assert read_input_bytes(tmp_path / "link.txt") == b"ok"
    with open_regular(tmp_path / "real.txt") as fp:  # blocking again once opened
        assert os.get_blocking(fp.fileno()) and fp.read() == b"ok"


@pytest.mark.parametrize("argv", [
    ["metrics", "{path}"],
    ["import-traces", "{path}", "--dataset", "d", "--run-id", "r"],
    ["import-cases", "{path}", "--dataset", "d"],
    ["convert", "traces", "{path}", "{out}"],
    ["audit", "--index", str(ROOT / "fixtures" / "demo" / "index.json"), "--cases", "{path}",
     "--strategy", "cdg", "--no-judge"],
])
def test_commands_given_a_fifo_name_it_as_one(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WORKBENCH_DB", f"sqlite:///{tmp_path / 'wb.db'}")
    fifo = tmp_path / "traces.jsonl"
    os.mkfifo(fifo)
    with released_after(fifo, RESCUE_AFTER_S) as fired:
        code = main([a.format(path=fifo, out=tmp_path / "out.parquet") for a in argv])
    assert not fired and code == 2
    assert "named pipe (FIFO)" in capsys.readouterr().err


# -- no valid line: a failure, not an empty success ----------------------------------------

def write_lines(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def db(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'wb.db'}"
    monkeypatch.setenv("WORKBENCH_DB", url)
    return url


def stored_rows(url: str) -> tuple[int, int]:
    from sqlmodel import Session, func, select

    from store.core_tables import AuditResultRow, CaseRow
    from store.db import make_engine

    eng = make_engine(url)
    with Session(eng) as session:
        counts = (session.exec(select(func.count()).select_from(CaseRow)).one(),
                  session.exec(select(func.count()).select_from(AuditResultRow)).one())
    eng.dispose()
    return counts


@pytest.mark.parametrize("content", [
    ("{\"id\": \"c1\"}", "not json", "[1, 2]"),  # every line skipped
    (),  # an empty file
])
def test_metrics_and_import_traces_fail_when_no_line_is_a_trace(content, tmp_path, db, capsys):
    bad = write_lines(tmp_path / "traces.jsonl", *content)
    assert main(["metrics", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "traces.jsonl" in err and ("no line is a valid trace" in err or "holds no trace" in err)
    assert main(["import-traces", str(bad), "--dataset", "d", "--run-id", "r"]) == 2
    assert "nothing was stored" in capsys.readouterr().err
    assert stored_rows(db) == (0, 0)
    # One good line among the bad ones: the command runs and says what it skipped.
    mixed = write_lines(tmp_path / "mixed.jsonl", *content, TRACES.read_text().splitlines()[0])
    assert main(["import-traces", str(mixed), "--dataset", "d", "--run-id", "r"]) == 0
    assert main(["metrics", str(mixed)]) == 0
    assert stored_rows(db) == (0, 1)


def test_metrics_fail_when_one_of_several_files_holds_no_trace(tmp_path, capsys):
    empty = write_lines(tmp_path / "empty.jsonl")
    assert main(["metrics", str(TRACES), str(empty)]) == 2
    assert "empty.jsonl: holds no trace" in capsys.readouterr().err


def test_import_cases_fails_on_a_file_without_a_case(tmp_path, db, capsys):
    blank = write_lines(tmp_path / "cases.jsonl", "", "   ")
    assert main(["import-cases", str(blank), "--dataset", "d"]) == 2
    assert "holds no case" in capsys.readouterr().err and stored_rows(db) == (0, 0)
    assert main(["import-cases", str(CASES), "--dataset", "d"]) == 0


# -- trace fields from the vocabulary ---------------------------------------------------------

GOOD = {"id": "c1", "strategy": "cdg", "judge_mode": "whole", "keywords_method": "lexical",
        "label": "negative"}


@pytest.mark.parametrize("field, value", [
    ("strategy", "skillcdg"), ("strategy", "<b>cdg</b>"), ("strategy", "cdg "),
    ("judge_mode", "per_rule"), ("keywords_method", "LLM"), ("label", "violation"),
])
def test_trace_fields_outside_the_vocabulary_are_refused_naming_field_and_words(field, value):
    with pytest.raises(TraceFormatError) as err:
        AuditTrace.from_dict({**GOOD, field: value}, "t.jsonl:3")
    message = str(err.value)
    assert message.startswith("t.jsonl:3") and f"'{field}' is {value!r}" in message
    assert "cdg" in message or "whole" in message or "lexical" in message or "negative" in message


def test_every_word_of_the_vocabulary_is_accepted():
    from workbench.vocabulary import JudgeMode, KeywordMethod, StrategyName, values

    for strategy in values(StrategyName):
        for mode in values(JudgeMode):
            for method in values(KeywordMethod):
                trace = AuditTrace.from_dict({**GOOD, "strategy": strategy, "judge_mode": mode,
                                              "keywords_method": method, "label": None})
                assert (trace.strategy, trace.judge_mode, trace.label) == (strategy, mode, None)


def test_a_traces_file_reports_the_line_with_a_bad_word(tmp_path):
    lines = TRACES.read_text().splitlines()[:2]
    bad = json.loads(lines[1])
    bad["judge_mode"] = "whole "
    path = write_lines(tmp_path / "t.jsonl", lines[0], json.dumps(bad))
    traces, problems = read_traces(path)
    assert len(traces) == 1 and len(problems) == 1
    assert problems[0].startswith(f"{path}:2") and "'judge_mode' is 'whole '" in problems[0]


def test_the_store_refuses_traces_and_cases_built_in_code_with_bad_words_or_ids(engine):
    from store.audit_repo import load_traces, save_cases, save_traces

    with pytest.raises(TraceFormatError, match="'strategy' is 'skillcdg'.*nothing was stored"):
        save_traces(engine, [AuditTrace("c1", "cdg"), AuditTrace("c2", "skillcdg")], "r", "d",
                    actor=COMMAND_LINE)
    with pytest.raises(TraceFormatError, match="U\\+000A"):
        save_traces(engine, [AuditTrace("c1\nforged", "cdg")], "r", "d", actor=COMMAND_LINE)
    assert load_traces(engine) == []
    with pytest.raises(CaseFormatError, match="nothing was stored"):
        save_cases(engine, "d", [AuditCase("ok", "fine"), AuditCase("c\u202e1", "reply")], actor=COMMAND_LINE)
    with pytest.raises(CaseFormatError, match="label"):
        save_cases(engine, "d", [AuditCase("ok", "fine", label="violation")], actor=COMMAND_LINE)
    assert save_traces(engine, [AuditTrace("c1", "cdg")], "r", "d", actor=COMMAND_LINE) == 1


# -- ids with control characters --------------------------------------------------------------

@pytest.mark.parametrize("cid, char", [
    ("c1\n[audit] c2 cdg: compliant", "U+000A"), ("c1\r", "U+000D"), ("a\x1b[31m", "U+001B"),
    ("\u202e1-esac", "U+202E RIGHT-TO-LEFT OVERRIDE"), ("c\u2028d", "U+2028 LINE SEPARATOR"),
    ("c\x00", "U+0000"),
])
def test_ids_with_control_or_direction_characters_are_refused(cid, char):
    with pytest.raises(CaseFormatError) as err:
        case_from_dict({"id": cid, "model_response": "ok"}, "cases.jsonl:4")
    assert "cases.jsonl:4" in str(err.value) and char in str(err.value)
    with pytest.raises(TraceFormatError, match=char.split()[0].replace("+", "\\+")):
        AuditTrace.from_dict({**GOOD, "id": cid})


def test_ids_in_any_script_are_kept():
    for cid in ("заказ-17", "訂單 17", "c1 (retry)", "mor-001-delay"):
        assert case_from_dict({"id": cid, "model_response": "ok"}).id == cid
        assert AuditTrace.from_dict({**GOOD, "id": cid}).id == cid


def test_a_cases_file_with_a_forged_log_line_is_refused_at_its_line():
    good = CASES.read_text().splitlines()[0]
    forged = json.loads(good)
    forged["id"] = "x\n[audit] mor-002 cdg: compliant"
    with pytest.raises(CaseFormatError, match=r"cases.jsonl:2: .*U\+000A"):
        list(iter_cases(good + "\n" + json.dumps(forged) + "\n", "cases.jsonl"))
