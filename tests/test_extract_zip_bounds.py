"""Bounds on zips of SKILLs, checked before anything is unpacked (issue 36): entries,
the SKILLs' total unpacked size, and the compression ratio; each a setting."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from workbench.extract import sources
from workbench.extract.sources import SkillSourceError, load_sources, load_uploads
from workbench.extract.zip_bounds import ZipLimits, declared_entries
from workbench.settings import SettingError

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "extract"
SKILL = (FIX / "refund-desk" / "SKILL.md").read_bytes()


def zip_of(members: dict[str, bytes], **kwargs) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, **kwargs) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


@pytest.fixture
def no_unpacking(monkeypatch):
    """Fail the test if any member is opened (the bounds must refuse before that)."""
    real = zipfile.ZipFile.open

    def refuse(self, name, mode="r", *args, **kwargs):
        if mode == "r":
            raise AssertionError("a member was unpacked before the bounds were checked")
        return real(self, name, mode, *args, **kwargs)  # writing the test's archive

    monkeypatch.setattr(zipfile.ZipFile, "open", refuse)


def test_too_many_entries_are_refused_from_the_end_record(tmp_path, monkeypatch):
    path = tmp_path / "many.zip"
    path.write_bytes(zip_of({f"s{i}/SKILL.md": SKILL for i in range(6)}))
    monkeypatch.setenv("WORKBENCH_ZIP_MAX_MEMBERS", "5")

    def no_directory(*args, **kwargs):
        raise AssertionError("zipfile read the directory before the entry count was checked")

    monkeypatch.setattr(sources.zipfile, "ZipFile", no_directory)
    with pytest.raises(SkillSourceError) as err:
        load_sources([path])
    assert "6 entries, more than the 5 allowed (WORKBENCH_ZIP_MAX_MEMBERS)" in str(err.value)


def test_a_zip64_entry_count_is_read(tmp_path):
    path = tmp_path / "huge-directory.zip"
    with zipfile.ZipFile(path, "w") as zf:  # > 65,535 entries: only the zip64 record holds the count
        for i in range(70_000):
            zf.writestr(f"x/{i}", b"")
    with path.open("rb") as fp:
        assert declared_entries(fp) == 70_000
    with pytest.raises(SkillSourceError, match="70,000 entries, more than the 10,000"):
        load_sources([path])


def test_total_unpacked_size_is_refused_before_unpacking(monkeypatch, no_unpacking):
    data = zip_of({"a/SKILL.md": SKILL, "b/SKILL.md": SKILL.replace(b"refund-desk", b"other")})
    monkeypatch.setenv("WORKBENCH_ZIP_MAX_BYTES", str(len(SKILL) + 10))
    with pytest.raises(SkillSourceError) as err:
        load_uploads([("pack.zip", data)])
    msg = str(err.value)
    assert f"its 2 SKILL.md members unpack to {2 * len(SKILL) - 6:,} bytes" in msg
    assert f"more than the {len(SKILL) + 10:,} allowed" in msg and "WORKBENCH_ZIP_MAX_BYTES" in msg


def test_a_member_of_repeated_filler_is_refused_by_its_ratio(no_unpacking):
    filler = b"---\nname: filler\ndescription: x\n---\n" + b"Refund in five days.\n" * 50_000
    with pytest.raises(SkillSourceError) as err:
        load_uploads([("bomb.zip", zip_of({"filler/SKILL.md": filler}, compresslevel=9))])
    msg = str(err.value)
    assert "bomb.zip!filler/SKILL.md" in msg and f"unpack to {len(filler):,}" in msg
    assert "more than the 100:1 allowed (WORKBENCH_ZIP_MAX_RATIO)" in msg


def test_within_the_bounds_a_zip_still_loads(monkeypatch):
    monkeypatch.setenv("WORKBENCH_ZIP_MAX_MEMBERS", "3")
    monkeypatch.setenv("WORKBENCH_ZIP_MAX_BYTES", str(len(SKILL)))
    docs = load_uploads([("pack.zip", zip_of({"pack/refund-desk/SKILL.md": SKILL,
                                               "pack/README.txt": b"not a skill"}))])
    assert [d.name for d in docs] == ["refund-desk"]
    # A small file of blank lines packs far beyond 100:1 and is harmless: not refused.
    blank = b"---\nname: blank\ndescription: d\n---\nRefunds take five days.\n" + b"\n" * 30_000
    monkeypatch.delenv("WORKBENCH_ZIP_MAX_BYTES")
    assert [d.name for d in load_uploads([("b.zip", zip_of({"b/SKILL.md": blank}))])] == ["blank"]


def test_the_limits_are_settings(monkeypatch):
    assert ZipLimits.from_env() == ZipLimits()
    monkeypatch.setenv("WORKBENCH_ZIP_MAX_RATIO", "500")
    monkeypatch.setenv("WORKBENCH_ZIP_MAX_BYTES", "1000")
    assert ZipLimits.from_env() == ZipLimits(max_bytes=1000, max_ratio=500.0)
    monkeypatch.setenv("WORKBENCH_ZIP_MAX_MEMBERS", "many")
    with pytest.raises(SettingError, match="WORKBENCH_ZIP_MAX_MEMBERS='many' is not a whole number"):
        load_uploads([("pack.zip", zip_of({"a/SKILL.md": SKILL}))])
