"""Upload guards (issue #16, item 7 and 6): junk .md files are refused before any model call,
with the uploaded file's name; extraction time is estimated; temp paths never shown."""

from __future__ import annotations

import random
from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.test_page_skills_graph import db  # noqa: F401  (fixture)
from workbench.skill.upload import (
    describe_duration,
    extraction_seconds,
    public_text,
    screen_upload,
)

POLICY = b"---\nname: refunds\ndescription: refund rules\n---\n# Refunds\nRefund only to the " \
         b"original card, and only after verifying the customer's identity.\n"


def test_a_real_policy_passes():
    assert screen_upload("SKILL.md", POLICY) is None
    assert screen_upload("SKILL.md", "Politique: rembourser uniquement sur la carte d'origine "
                         "après vérification de l'identité du client.".encode()) is None


def test_empty_and_whitespace_files_are_refused_by_name():
    for data in (b"", b"\n \n\t"):
        problem = screen_upload("my-policy.md", data)
        assert problem and problem.startswith("my-policy.md is empty")


def test_random_bytes_are_refused():
    data = random.Random(7).randbytes(4096)
    problem = screen_upload("noise.md", data)
    assert problem and problem.startswith("noise.md ")
    assert "UTF-8" in problem


def test_front_matter_only_or_markup_only_has_no_policy_text():
    problem = screen_upload("SKILL.md", b"---\nname: x\ndescription: y\n---\n# \n- \n")
    assert problem and "no policy text" in problem


def test_one_stray_byte_does_not_refuse_a_policy():
    assert screen_upload("SKILL.md", POLICY.replace(b"original", b"orig\xe9nal")) is None


def test_estimates_and_durations():
    # 24,470 blocks at 12 s plus 10 % fusion: 323,004 s, about 4 days (the 2 MB upload)
    assert extraction_seconds(24_470) == 24_470 * 12 * 1.1
    assert describe_duration(extraction_seconds(24_470)) == "about 4 days"
    assert describe_duration(extraction_seconds(3)) == "about 40 s"
    assert describe_duration(600) == "about 10 min"
    assert describe_duration(5 * 3600) == "about 5.0 h"


def test_public_text_names_the_upload_not_the_temp_path():
    paths = {"/tmp/tmpab/000/SKILL.md": "refunds/SKILL.md", "/tmp/tmpab/001/SKILL.md": "b.md"}
    text = "/tmp/tmpab/001/SKILL.md: same text as /tmp/tmpab/000/SKILL.md; read once"
    assert public_text(text, paths) == "b.md: same text as refunds/SKILL.md; read once"


# -- the Skills page ----------------------------------------------------------------------------

SKILLS = str(Path(__file__).resolve().parents[1] / "pages" / "skills.py")


def test_skills_page_refuses_junk_uploads_and_saves_nothing(db):  # noqa: F811
    from store import repo

    at = AppTest.from_file(SKILLS, default_timeout=60).run()
    at.file_uploader(key="skills_upload").set_value([
        ("empty.md", b"", "text/markdown"),
        ("noise.md", random.Random(1).randbytes(2048), "text/markdown")]).run()
    assert not at.exception
    errors = [e.value.replace("\\", "") for e in at.error]
    assert any(e.startswith("empty.md is empty") for e in errors)
    assert any(e.startswith("noise.md ") and "Nothing was saved" in e for e in errors)
    assert not [b for b in at.button if b.key == "skills_extract"]  # nothing left to extract
    assert repo.skill_names(db) == ["refunds"]


def test_skills_page_asks_before_a_long_extraction(db):  # noqa: F811
    from store import repo

    sentences = "".join(f"Rule {i}: when case {i} applies the agent must do step {i}.\n\n"
                        for i in range(3000))
    big = ("---\nname: huge\ndescription: a long policy\n---\n# Policy\n" + sentences).encode()
    at = AppTest.from_file(SKILLS, default_timeout=120).run()
    at.file_uploader(key="skills_upload").set_value([("huge.md", big, "text/markdown")])
    at.number_input(key="skills_max_block").set_value(200).run()
    at.button(key="skills_extract").click().run()
    assert not at.exception
    warning = next(w.value for w in at.warning if "This extraction is big" in w.value)
    assert "blocks" in warning and "Extract anyway" in warning
    assert at.checkbox(key="skills_confirm_big").value is False
    assert repo.skill_names(db) == ["refunds"]  # nothing started, nothing saved
