"""Reading SKILLs from files, folders and zips; duplicate names."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from workbench.extract.sources import DuplicateSkillName, SkillSourceError, load_sources

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "extract"


def test_file_and_folder_and_folder_of_folders():
    assert [d.name for d in load_sources([FIX / "refund-desk" / "SKILL.md"])] == ["refund-desk"]
    assert [d.name for d in load_sources([FIX / "refund-desk"])] == ["refund-desk"]
    names = [d.name for d in load_sources([FIX], rename_duplicates=True)]
    assert names == ["refund-desk", "refunds", "refunds-2", "support-call", "support-call-headings"]


def test_two_skills_with_one_name_is_a_clear_error():
    with pytest.raises(DuplicateSkillName) as err:
        load_sources([FIX / "same-name-a", FIX / "same-name-b"])
    msg = str(err.value)
    for needle in ("'refunds'", "same-name-a", "same-name-b", "--rename-duplicates"):
        assert needle in msg


def test_same_skill_twice_is_read_once():
    docs = load_sources([FIX / "refund-desk", FIX / "refund-desk" / "SKILL.md"])
    assert len(docs) == 1 and "read once" in docs[0].warnings[-1]


def test_zip_with_skills_and_junk(tmp_path):
    z = tmp_path / "skills.zip"
    with zipfile.ZipFile(z, "w") as archive:
        archive.write(FIX / "refund-desk" / "SKILL.md", "pack/refund-desk/SKILL.md")
        archive.writestr("__MACOSX/pack/._SKILL.md", b"\x00\x01")
        archive.writestr("pack/README.txt", "not a skill")
        archive.writestr("pack/cafe/SKILL.md", (FIX / "latin1.md").read_bytes())
    docs = load_sources([z])
    assert [d.name for d in docs] == ["cafe", "refund-desk"]
    assert docs[0].path.endswith("skills.zip!pack/cafe/SKILL.md")
    assert any("not UTF-8" in w for w in docs[0].warnings)


def test_bad_inputs_say_what_to_do(tmp_path):
    with pytest.raises(SkillSourceError, match="no such file"):
        load_sources([tmp_path / "missing"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(SkillSourceError, match="no SKILL.md"):
        load_sources([tmp_path / "empty"])
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(SkillSourceError, match="zip"):
        load_sources([bad])


def test_edge_case_files_parse():
    (fm_only,) = load_sources([FIX / "front-matter-only.md"])
    assert fm_only.name == "placeholder" and fm_only.blocks == []
    (flat,) = load_sources([FIX / "no-headings.md"])
    assert [b.heading for b in flat.blocks] == [None]


def test_uploads_of_files_and_zips(tmp_path):
    from workbench.extract import load_uploads

    z = tmp_path / "u.zip"
    with zipfile.ZipFile(z, "w") as archive:
        archive.write(FIX / "same-name-a" / "SKILL.md", "a/SKILL.md")
    desk = (FIX / "refund-desk" / "SKILL.md").read_bytes()
    docs = load_uploads([("SKILL.md", desk), ("skills.zip", z.read_bytes())])
    assert [d.name for d in docs] == ["refund-desk", "refunds"]
    assert docs[1].path == "skills.zip!a/SKILL.md"
    with pytest.raises(DuplicateSkillName):
        load_uploads([("a.md", (FIX / "same-name-a" / "SKILL.md").read_bytes()),
                      ("b.md", (FIX / "same-name-b" / "SKILL.md").read_bytes())])
