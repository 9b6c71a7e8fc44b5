"""Issue 45 item 8: an index whose SKILL source repeats ``name:`` in its front matter was
imported, while the SKILL reader refuses the same text. Both refuse it now, naming the line
and the fix; nothing is stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.graph import PolicyIndex
from workbench.graph.policy_index import front_matter_problem
from workbench.graph.rule_graph import IndexValidationError
from workbench.skill.document import SkillFormatError, parse_skill

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "demo" / "index.json"


def _index_with_source(tmp_path: Path, edit) -> Path:
    data = json.loads(DEMO.read_text(encoding="utf-8"))
    data["skills"][1]["source"] = edit(data["skills"][1]["source"])
    out = tmp_path / "index.json"
    out.write_text(json.dumps(data), encoding="utf-8")
    return out


def _repeat_name(source: str) -> str:
    head, rest = source.split("\n", 1)  # '---', then 'name: ...' on line 2
    name_line = rest.split("\n", 1)[0]
    assert head == "---" and name_line.startswith("name:")
    return source.replace(name_line + "\n", f"{name_line}\nname: another-name\n", 1)


def test_the_skill_reader_and_the_index_refuse_a_repeated_name_alike(tmp_path):
    index = _index_with_source(tmp_path, _repeat_name)
    source = json.loads(index.read_text(encoding="utf-8"))["skills"][1]["source"]
    with pytest.raises(SkillFormatError, match=r"SKILL\.md:3: .*key 'name' appears twice"):
        parse_skill(source, "SKILL.md")
    with pytest.raises(IndexValidationError) as err:
        PolicyIndex.load(index)
    text = str(err.value)
    assert f"{index}: 1 problem(s)" in text
    assert "skills[1].source: line 3 of the SKILL text: the YAML front matter does not parse" \
        in text and "key 'name' appears twice" in text and "fix the block between the '---'" in text


def test_workbench_import_refuses_it_and_stores_nothing(tmp_path, capsys):
    db = tmp_path / "w.db"
    index = _index_with_source(tmp_path, _repeat_name)
    assert main(["import", str(index), "--db", f"sqlite:///{db}"]) == 2
    err = capsys.readouterr().err
    assert "skills[1].source: line 3" in err and "Traceback" not in err
    assert not db.exists()  # refused before the database was opened


def test_front_matter_that_reads_still_imports(tmp_path):
    assert len(PolicyIndex.load(DEMO)) >= 2
    assert front_matter_problem("# Refunds\n\nNo front matter at all.") is None
    assert front_matter_problem("---\nname: a\ndescription: b\n---\n# A\n") is None
    not_a_mapping = _index_with_source(tmp_path, lambda s: "---\n- a\n---\n" + s)
    with pytest.raises(IndexValidationError, match="must be a YAML mapping"):
        PolicyIndex.load(not_a_mapping)
