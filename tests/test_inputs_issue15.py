"""Issue 15 (input side): each reproduction from the issue, run through the real CLI.

Every bad file must end in exit code 2 with a message naming the file (and line where there
is one) and what to do: never a traceback, a hang or a partial write.
"""

from __future__ import annotations

import copy
import io
import json
import time
import zipfile
from pathlib import Path

import pytest

from workbench.cli import main

FIX = Path(__file__).resolve().parent.parent / "fixtures"
INDEX = FIX / "audit" / "merchant_index.json"
CASES = FIX / "audit" / "merchant_cases.jsonl"
CONTRACT = FIX / "contracts" / "airline.yaml"

BOMB = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{b}: &{b} [" + ",".join([f"*{a}"] * 9) + "]" for a, b in zip("abcdefgh", "bcdefghi", strict=True)]
) + "\n"


@pytest.fixture
def db(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'wb.db'}"
    monkeypatch.setenv("WORKBENCH_DB", url)
    return url


def _read_store(url: str, read):
    from store.db import make_engine

    engine = make_engine(url)
    try:
        return read(engine)
    finally:
        engine.dispose()


def stored_skills(url: str) -> list[str]:
    from store import repo

    return _read_store(url, repo.skill_names)


def stored_cases(url: str) -> list[str]:
    from store import audit_repo

    return _read_store(url, audit_repo.datasets)


def run_cli(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


# -- defect 1: a lone surrogate -------------------------------------------------------------

SURROGATE_CASE = '{"id": "a\\udc80", "model_response": "x"}\n'


def test_lone_surrogate_case_id_is_a_located_error_in_audit_and_import_cases(tmp_path, capsys, db):
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "ok", "model_response": "x"}\n' + SURROGATE_CASE)
    out = tmp_path / "traces.jsonl"
    code, err = run_cli(capsys, "audit", "--index", str(INDEX), "--cases", str(cases),
                        "--strategy", "cdg", "--no-judge", "--out", str(out), "--store", "ds")
    assert code == 2 and f"{cases}:2:" in err and "lone surrogate" in err
    code, err = run_cli(capsys, "import-cases", str(cases), "--dataset", "ds")
    assert code == 2 and f"{cases}:2:" in err and "surrogate" in err
    assert stored_cases(db) == []


def test_a_trace_with_invalid_unicode_is_written_escaped_not_crashing(tmp_path):
    from workbench.audit import AuditCase, AuditIndex, run_audit
    from workbench.audit.pipeline import AuditOptions
    from workbench.graph import PolicyIndex

    out = tmp_path / "t.jsonl"
    case = AuditCase(id="a\udc80", model_response="x")  # built in code, not read from a file
    summary = run_audit([case], AuditIndex(PolicyIndex.load(INDEX)), "cdg", out,
                        options=AuditOptions(judge_mode="none"))
    assert summary.done == 1
    assert "\\udc80" in out.read_text(encoding="utf-8")
    assert run_audit([case], AuditIndex(PolicyIndex.load(INDEX)), "cdg", out,
                     options=AuditOptions(judge_mode="none")).skipped == 1


def two_skill_index(second_source: str) -> dict:
    data = json.loads(INDEX.read_text(encoding="utf-8"))
    first = data["skills"][0]
    second = copy.deepcopy(first)
    second["name"] = first["name"] + "-copy"
    second["source"] = second_source
    second["rules"], second["edges"] = [], []
    data["skills"] = [first, second]
    return data


def test_import_of_a_two_skill_index_writes_nothing_when_the_second_is_bad(tmp_path, capsys, db):
    path = tmp_path / "index.json"
    # ensure_ascii keeps the lone surrogate as the escape a foreign tool would write.
    path.write_text(json.dumps(two_skill_index("bad \udc80 text")), encoding="ascii")
    code, err = run_cli(capsys, "import", str(path))
    assert code == 2 and "surrogate" in err and str(path) in err
    assert stored_skills(db) == []


# -- defect 4: the YAML alias bomb ----------------------------------------------------------

def test_alias_bomb_fails_fast_in_contract_check(tmp_path, capsys):
    path = tmp_path / "bomb.yaml"
    # The anchors sit in an ignored x- key; 'tools' names the top one, whose items used to be
    # put in the error message with repr(): 9**8 nested lists, over a minute and 2.4 GB.
    path.write_text("contract: x\nx-bomb:\n" + "".join("  " + line + "\n" for line in BOMB.splitlines())
                    + "tools: *i\n")
    assert len(path.read_bytes()) < 600
    started = time.perf_counter()
    code, err = run_cli(capsys, "contract", "check", str(path))
    assert time.perf_counter() - started < 5
    assert code == 2 and "too large" in err and f"{path}:" in err
    assert len(err) < 2000


def test_alias_bomb_in_skill_front_matter_fails_fast(tmp_path):
    from workbench.skill.document import SkillFormatError, read_skill

    path = tmp_path / "SKILL.md"
    path.write_text("---\nname: x\ndescription: y\nz:\n"
                    + "".join("  " + line + "\n" for line in BOMB.splitlines()) + "---\n# T\nBody\n")
    started = time.perf_counter()
    with pytest.raises(SkillFormatError, match="too large"):
        read_skill(path)
    assert time.perf_counter() - started < 5


# -- defect 5: encodings and odd inputs -----------------------------------------------------

def encodings(text: str) -> dict[str, bytes]:
    return {
        "latin-1": text.replace("order", "ordér").encode("latin-1"),
        "cp1252": text.replace("order", "order\u2019s").encode("cp1252"),
        "utf-16": text.encode("utf-16"),
        "utf-32": text.encode("utf-32"),
        "utf-16-no-bom": text.encode("utf-16-le"),
        "binary": bytes(range(256)) * 4,
    }


INDEX_TEXT = INDEX.read_text(encoding="utf-8")
CASES_TEXT = CASES.read_text(encoding="utf-8")


@pytest.mark.parametrize("encoding", list(encodings("x")))
@pytest.mark.parametrize("command", ["graph stats", "import", "import-cases", "audit"])
def test_bad_encodings_are_errors_that_say_re_save_as_utf8(tmp_path, capsys, db, command, encoding):
    if command in ("graph stats", "import"):
        path = tmp_path / "index.json"
        path.write_bytes(encodings(INDEX_TEXT)[encoding])
        argv = [*command.split(), str(path)]
    else:
        path = tmp_path / "cases.jsonl"
        path.write_bytes(encodings(CASES_TEXT)[encoding])
        argv = (["import-cases", str(path), "--dataset", "d"] if command == "import-cases" else
                ["audit", "--index", str(INDEX), "--cases", str(path), "--strategy", "cdg",
                 "--no-judge", "--out", str(tmp_path / "t.jsonl")])
    code, err = run_cli(capsys, *argv)
    assert code == 2, err
    assert str(path) in err and "UTF-8" in err
    assert stored_skills(db) == [] and stored_cases(db) == []


@pytest.mark.parametrize("payload, message", [
    ("[" * 100_000 + "]" * 100_000, "nested more than"),
    ('{"format": "skillcdg/1", "skills": [], "n": ' + "9" * 5000 + "}", "more than 4300 digits"),
])
def test_deep_json_and_huge_integers_are_located_errors(tmp_path, capsys, payload, message):
    path = tmp_path / "index.json"
    path.write_text(payload)
    code, err = run_cli(capsys, "graph", "stats", str(path))
    assert code == 2 and message in err and str(path) in err
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "a", "model_response": "x"}\n' + payload + "\n")
    code, err = run_cli(capsys, "import-cases", str(cases), "--dataset", "d")
    assert code == 2 and message in err and f"{cases}:2:" in err


@pytest.mark.parametrize("yaml_text, message", [
    ("contract: x\nversion: " + "9" * 5000 + "\n", "more than 4300 digits"),
    ("contract: x\nphases: " + "[" * 50_000 + "]" * 50_000 + "\n", "nested more than"),
])
def test_huge_yaml_integers_and_deep_yaml_are_errors(tmp_path, capsys, yaml_text, message):
    path = tmp_path / "c.yaml"
    path.write_text(yaml_text)
    code, err = run_cli(capsys, "contract", "check", str(path))
    assert code == 2 and message in err


@pytest.mark.parametrize("front", [
    "version: " + "9" * 5000, "x: " + "[" * 50_000 + "]" * 50_000, "x: a\x00b"])
def test_odd_skill_front_matter_is_a_skill_error(tmp_path, front):
    from workbench.extract.sources import load_sources
    from workbench.skill.document import SkillFormatError

    path = tmp_path / "SKILL.md"
    path.write_text(f"---\nname: ok\n{front}\n---\n# T\nBody\n")
    with pytest.raises(SkillFormatError, match=str(path)):
        load_sources([path])


# -- defect 6: a torn last line inside a multi-byte character ------------------------------

def test_torn_multibyte_last_line_is_skipped_by_audit_and_metrics(tmp_path, capsys):
    from workbench.audit import read_traces

    out = tmp_path / "t.jsonl"
    args = ["audit", "--index", str(INDEX), "--cases", str(CASES), "--strategy", "cdg",
            "--no-judge", "--out", str(out)]
    assert main([*args, "--limit", "2"]) == 0
    whole = out.read_bytes()
    torn = json.dumps({"id": "zzz", "strategy": "cdg", "reason": "café"}, ensure_ascii=False)
    out.write_bytes(whole + torn.encode("utf-8")[: torn.encode("utf-8").index("é".encode()) + 1])
    assert len(read_traces(out)[0]) == 2
    assert main(["metrics", str(out)]) == 0
    assert main(args) == 0  # resumes: the two good traces stay, the rest is audited
    assert len(read_traces(out)[0]) == len(CASES_TEXT.strip().splitlines())
    capsys.readouterr()


# -- defect 9: silently accepted garbage ---------------------------------------------------

def zip_with_front_matter(name_line: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("x/SKILL.md", f"---\n{name_line}\ndescription: d\n---\n# Title\nBody.\n")
    return buf.getvalue()


@pytest.mark.parametrize("name_line, message", [
    ('name: "../../../x"', "looks like a file path"),
    ('name: "a/b"', "looks like a file path"),
    ('name: ".."', "looks like a file path"),
    ('name: "' + "n" * 65 + '"', "more than 64"),
])
def test_bad_skill_names_are_refused_from_zip_front_matter(tmp_path, capsys, name_line, message):
    from workbench.extract.sources import load_uploads
    from workbench.skill.document import SkillFormatError

    with pytest.raises(SkillFormatError, match=message):
        load_uploads([("bundle.zip", zip_with_front_matter(name_line))])
    bundle = tmp_path / "bundle.zip"
    bundle.write_bytes(zip_with_front_matter(name_line))
    code, err = run_cli(capsys, "extract", str(bundle), "--out", str(tmp_path / "out.json"))
    assert code == 2 and message in err


@pytest.mark.parametrize("name", ["", "../../../x", "a\\b"])
def test_bad_skill_names_are_refused_in_an_index(tmp_path, capsys, name):
    data = json.loads(INDEX_TEXT)
    data["skills"][0]["name"] = name
    path = tmp_path / "index.json"
    path.write_text(json.dumps(data))
    code, err = run_cli(capsys, "graph", "stats", str(path))
    assert code == 2 and "skills[0].name" in err


@pytest.mark.parametrize("version", ["2024-01-01", "!!binary aGVsbG8=", "0", "true", "1.5"])
def test_contract_version_must_be_a_whole_number(tmp_path, capsys, version):
    text = CONTRACT.read_text(encoding="utf-8")
    assert "\nversion: 1\n" in text
    path = tmp_path / "c.yaml"
    path.write_text(text.replace("\nversion: 1\n", f"\nversion: {version}\n", 1))
    code, err = run_cli(capsys, "contract", "check", str(path))
    assert code == 2 and "version" in err and "whole number" in err


def test_a_valid_contract_version_is_kept(tmp_path):
    from workbench.contracts import load_contract

    path = tmp_path / "c.yaml"
    path.write_text(CONTRACT.read_text(encoding="utf-8").replace("\nversion: 1\n", "\nversion: 3\n", 1))
    assert load_contract(path).version == 3


def test_duplicate_json_keys_are_errors_with_their_line(tmp_path, capsys):
    index = tmp_path / "index.json"
    index.write_text(INDEX_TEXT.replace('"format": "skillcdg/1"',
                                        '"format": "skillcdg/1",\n "format": "skillcdg/1"', 1))
    code, err = run_cli(capsys, "graph", "stats", str(index))
    assert code == 2 and "'format' appears twice" in err and "line 3" in err
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "a", "model_response": "x"}\n{"id": "b", "id": "c", "model_response": "x"}\n')
    code, err = run_cli(capsys, "import-cases", str(cases), "--dataset", "d")
    assert code == 2 and f"{cases}:2:" in err and "'id' appears twice" in err


def test_utf8_bom_is_accepted_alike_in_json_jsonl_csv_and_yaml(tmp_path, capsys, db):
    bom = b"\xef\xbb\xbf"
    index = tmp_path / "index.json"
    index.write_bytes(bom + INDEX_TEXT.encode())
    cases = tmp_path / "cases.jsonl"
    cases.write_bytes(bom + CASES_TEXT.encode())
    contract = tmp_path / "c.yaml"
    contract.write_bytes(bom + CONTRACT.read_bytes())
    labels = tmp_path / "labels.csv"
    labels.write_bytes(bom + b"item,annotator,label\n1,a,x\n1,b,x\n2,a,y\n2,b,y\n")
    for argv in (["graph", "stats", str(index)], ["import", str(index)],
                 ["import-cases", str(cases), "--dataset", "d"],
                 ["contract", "check", str(contract)], ["annotate", "agreement", str(labels)]):
        code, err = run_cli(capsys, *argv)
        assert code == 0, (argv, err)


def test_a_violation_citing_only_unknown_ids_is_recorded_as_an_invalid_citation(tmp_path):
    from tests.test_audit_judge import gateway
    from workbench.audit import AuditIndex, load_cases
    from workbench.audit.pipeline import AuditOptions, audit_case
    from workbench.graph import PolicyIndex

    answers = [{"violation": True, "violated_rules": ["R999"],
                "evidence": [], "reason": "Breaks [R999]."}] * 2
    gw, script = gateway(lambda request: answers.pop(0), tmp_path)
    case = load_cases(CASES)[0]
    trace = audit_case(case, AuditIndex(PolicyIndex.load(INDEX)), "cdg", gw,
                       AuditOptions(judge_mode="whole"))
    assert len(script.requests) == 2  # the one repair attempt was made
    assert trace.verdict is None and trace.violation is None
    assert trace.error is not None and "invalid citation" in trace.error.message
    assert "R999" in trace.error.message
