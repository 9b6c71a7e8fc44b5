"""SKILL names that would look like another name on screen, and duplicate front-matter keys
(issue 36): refused where a SKILL enters (front matter, files and zips read together, a
skillcdg/1 index, the store), with the character named."""

from __future__ import annotations

import io
import zipfile

import pytest

from workbench.extract.sources import LookAlikeSkillName, load_sources, load_uploads
from workbench.graph.validation import IndexValidationError
from workbench.identity.roles import COMMAND_LINE
from workbench.inputs import load_yaml
from workbench.skill.document import SkillFormatError, parse_skill
from workbench.skill.names import inferred_skill_name, name_skeleton, skill_name_problem


def skill(name: str, body: str = "Refund to the original payment method.") -> str:
    return f"---\nname: \"{name}\"\ndescription: refunds\n---\n\n# Refunds\n\n{body}\n"


@pytest.mark.parametrize("name, needle", [
    ("retail\u200b-policy", "U+200B ZERO WIDTH SPACE"),
    ("retail-\u202epolicy", "U+202E RIGHT-TO-LEFT OVERRIDE"),
    ("retail\u2066-policy", "U+2066 LEFT-TO-RIGHT ISOLATE"),
    ("retail\u00ad-policy", "U+00AD SOFT HYPHEN"),
    ("\uff52etail-policy", "write it as 'retail-policy'"),  # full-width r
    ("\ufb01nance", "write it as 'finance'"),  # the ligature fi
    ("r\u0435tail-policy", "U+0435 CYRILLIC SMALL LETTER IE"),  # Cyrillic e inside a Latin word
    ("p\u0430yp\u03b1l", "mixes"),  # Latin, Cyrillic and Greek in one word
])
def test_names_that_look_like_another_are_refused_with_the_character_named(name, needle):
    problem = skill_name_problem(name)
    assert problem is not None and needle in problem, problem
    with pytest.raises(SkillFormatError, match="SKILL name"):
        parse_skill(skill(name), "up/SKILL.md")


@pytest.mark.parametrize("name", ["order-refund", "возврат-policy", "Политика возврата Amazon",
                                  "退款政策", "café-refunds", "refunds v2"])
def test_names_in_any_script_stay_allowed(name):
    assert skill_name_problem(name) is None
    assert parse_skill(skill(name), "up/SKILL.md").name == name


def test_a_heading_taken_as_the_name_loses_invisible_and_compatibility_characters():
    assert inferred_skill_name("Retail\u200b \uff30olicy\u202e") == "Retail Policy"
    doc = parse_skill("# Retail\u200b Policy\n\nRefund within 30 days.\n", "up/SKILL.md")
    assert doc.name == "Retail Policy"


def test_the_skeleton_folds_case_compatibility_and_look_alike_letters():
    assert name_skeleton("Retail-Policy") == name_skeleton("retail-policy")
    assert name_skeleton("r\u0435t\u0430il") == name_skeleton("retail")  # Cyrillic е and а
    assert name_skeleton("\uff52etail") == "retail"
    assert name_skeleton("refund-desk") != name_skeleton("refund-disk")


def test_two_skills_read_together_with_look_alike_names_are_refused(tmp_path):
    for folder, name in (("a", "retail-policy"), ("b", "Retail-Policy")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "SKILL.md").write_text(skill(name, f"Rule of {folder}."))
    with pytest.raises(LookAlikeSkillName) as err:
        load_sources([tmp_path / "a", tmp_path / "b"])
    message = str(err.value)
    assert "'retail-policy'" in message and "'Retail-Policy'" in message and "look the same" in message
    docs = load_sources([tmp_path / "a", tmp_path / "b"], rename_duplicates=True)
    assert [d.name for d in docs] == ["retail-policy", "Retail-Policy-2"]
    assert "look-alike name 'retail-policy'" in docs[1].warnings[-1]


def test_a_zip_of_look_alike_names_is_refused_as_an_upload():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("a/SKILL.md", skill("refunds", "Rule a."))
        zf.writestr("b/SKILL.md", skill("REFUNDS", "Rule b."))
    with pytest.raises(LookAlikeSkillName):
        load_uploads([("bundle.zip", buf.getvalue())])


def index_with(*names: str) -> dict:
    from tests.conftest import refund_index_dict

    data = refund_index_dict()
    first = data["skills"][0]
    data["skills"] = [{**first, "name": n} for n in names]
    return data


def test_an_index_with_look_alike_names_is_refused():
    from workbench.graph import PolicyIndex

    with pytest.raises(IndexValidationError, match="looks the same as 'refunds'"):
        PolicyIndex.from_dict(index_with("refunds", "Refunds"))
    with pytest.raises(IndexValidationError, match="invisible or direction-changing"):
        PolicyIndex.from_dict(index_with("refunds\u200b"))


def test_the_store_refuses_a_new_skill_that_looks_like_a_stored_one(engine):
    from store import repo
    from workbench.graph import PolicyIndex

    index = PolicyIndex.from_dict(index_with("refunds"))
    repo.import_index(engine, index, actor=COMMAND_LINE)
    look_alike = PolicyIndex.from_dict(index_with("Refunds"))["Refunds"]
    with pytest.raises(repo.LookAlikeName, match="nothing was saved"):
        repo.save_skill(engine, look_alike, actor=COMMAND_LINE)
    # An import holding a new good name and a look-alike writes nothing at all.
    with pytest.raises(repo.LookAlikeName):
        repo.import_index(engine, PolicyIndex.from_dict(index_with("delays", "REFUNDS")), actor=COMMAND_LINE)
    assert repo.skill_names(engine) == ["refunds"]
    with pytest.raises(repo.LookAlikeName):
        repo.check_new_names(engine, ["refunds", "rEfunds"])
    # The stored name itself still takes new versions.
    edited = PolicyIndex.from_dict(index_with("refunds"))["refunds"]
    edited.description = "refunds, edited"
    assert repo.save_skill(engine, edited, actor=COMMAND_LINE).version == 2


def test_a_duplicate_front_matter_key_is_refused_naming_the_key_and_the_line():
    text = "---\nname: refunds\ndescription: refunds\nname: delays\n---\n\n# Refunds\n\nRule.\n"
    with pytest.raises(SkillFormatError) as err:
        parse_skill(text, "up/SKILL.md")
    message = str(err.value)
    assert "up/SKILL.md:4" in message and "key 'name' appears twice" in message
    assert "first on line 2" in message


def test_duplicate_keys_are_refused_at_any_depth_and_distinct_keys_are_not():
    from workbench.inputs import InputError

    with pytest.raises(InputError, match="key 'id' appears twice"):
        load_yaml("tools:\n  - id: a\n    id: b\n", "contract.yaml")
    with pytest.raises(InputError, match="appears twice"):
        load_yaml("{a: 1, a: 2}", "x.yaml")
    # Equal-looking keys of different types are different keys; merge keys are not keys.
    assert load_yaml("1: a\n'1': b\n", "x.yaml") == {1: "a", "1": "b"}
    assert load_yaml("base: &b {x: 1}\nmore:\n  <<: *b\n  y: 2\n", "x.yaml")["more"] == {"x": 1, "y": 2}
