"""Importers that stream (issue 45 item 6): a conversation's cases keep a bounded history
(stored characters grow linearly with the messages, not with their square), files are read a
line at a time, ``--limit`` reads no further than it needs, ``import-cases`` stores in
batches, and a case too big is refused with exit 2 naming file:line."""

from __future__ import annotations

import argparse
import json
from itertools import islice

import pytest

from workbench.audit.importers import ImportOptions, parse_cases_upload, stream_cases_file
from workbench.audit.importers.common import (
    ImportFormatError,
    Notes,
    PolicyNames,
)
from workbench.audit.importers.openai_chat import read_openai
from workbench.cli import main
from workbench.inputs import InputError, iter_bytes_lines, iter_input_lines


def _conversation(messages: int, chars: int = 100, cid: str = "c") -> str:
    msgs = [{"role": "system", "content": "be nice"}]
    for i in range(messages):
        role = "user" if i % 2 == 0 else "assistant"
        msgs.append({"role": role, "content": f"{role} {i} ".ljust(chars, "x")})
    return json.dumps({"id": cid, "messages": msgs})


def _stored_chars(text: str, **options) -> int:
    cases = parse_cases_upload(text.encode(), "chat.jsonl",
                               ImportOptions("openai", **options)).cases
    return sum(len(json.dumps(c.to_dict())) for c in cases)


def test_stored_characters_grow_linearly_with_the_messages():
    small = _stored_chars(_conversation(200), history_chars=2_000)
    large = _stored_chars(_conversation(800), history_chars=2_000)
    # 4x the messages: 4x the characters (each case holds at most the budget), where a full
    # copy of the history in every case made it 16x.
    assert 3.5 < large / small < 4.5


def test_the_history_is_the_latest_turns_and_the_cut_is_stated():
    cases = parse_cases_upload(_conversation(60).encode(), "chat.jsonl",
                               ImportOptions("openai", history_chars=1_000)).cases
    first, last = cases[0], cases[-1]
    assert "history_cut" not in first.extra and first.context[0].role == "user"
    cut = last.extra["history_cut"]
    kept = last.context[1:]
    assert last.context[0].role == "note" and "left out when it was imported" in \
        last.context[0].content
    assert cut["turns_kept"] == len(kept) and cut["turns_left_out"] + len(kept) == 59
    assert sum(len(t.content) for t in kept) <= 1_000
    assert kept[-1].content.startswith("user 58 ")  # the turn just before the reply
    # The turns are shared between the cases of the conversation, not copied.
    assert cases[-2].context[-1] is last.context[-3]


def test_one_turn_longer_than_the_budget_keeps_its_end():
    text = _conversation(2, chars=5_000)
    case = parse_cases_upload(text.encode(), "chat.jsonl",
                              ImportOptions("openai", history_chars=1_000)).cases[0]
    (turn,) = case.context
    assert turn.content.startswith("[... 4,000 earlier characters left out at import] ")
    assert case.extra["history_cut"] == {"turns_left_out": 0, "characters_left_out": 4_000,
                                         "turns_kept": 1}


def test_a_mapped_history_is_bounded_too():
    history = json.dumps([{"role": "user", "content": "q" * 800}] * 5)
    row = json.dumps({"h": json.loads(history), "r": "ok"})
    case = parse_cases_upload(row.encode(), "x.jsonl", ImportOptions(
        "map", "history=h,reply=r", history_chars=2_000)).cases[0]
    assert case.context[0].role == "note" and len(case.context) == 3
    assert case.extra["history_cut"]["turns_left_out"] == 3


def test_limit_reads_no_further_than_it_needs():
    def lines():
        for i in range(3):
            yield _conversation(4, cid=f"c{i}") + "\n"
        raise AssertionError("read past the cases that were asked for")

    cases = list(islice(read_openai(lines(), "chat.jsonl", PolicyNames(), Notes()), 4))
    assert [c.id for c in cases] == ["c0:2", "c0:4", "c1:2", "c1:4"]


def test_audit_limit_stops_before_a_bad_line(tmp_path):
    """``read_cases_arg`` honours the command's ``--limit``: ``audit --limit 2`` on a file
    whose third row is broken reads the first two and never meets it."""
    from workbench.commands._case_formats import read_cases_arg

    f = tmp_path / "rows.csv"
    f.write_text("id,answer\na,one\nb,two\nc,\"broken\n", encoding="utf-8")
    args = argparse.Namespace(cases_format="map", cases_map="id=id,reply=answer",
                              cases_policy=[], cases_history_chars=None, limit=2)
    assert [c.id for c in read_cases_arg(args, str(f))] == ["a", "b"]
    args.limit = None
    with pytest.raises(ImportFormatError, match=r"rows\.csv:4"):
        read_cases_arg(args, str(f))


def test_a_stream_reads_again_from_the_start(tmp_path):
    f = tmp_path / "chat.jsonl"
    f.write_text(_conversation(4) + "\n", encoding="utf-8")
    stream = stream_cases_file(f, ImportOptions("openai"))
    assert [c.id for c in stream] == [c.id for c in stream] == ["c:2", "c:4"]
    assert stream.head(1)[0].id == "c:2"


def test_a_reply_too_big_is_exit_2_with_file_and_line(tmp_path, capsys, monkeypatch):
    import workbench.audit.importers.common as common

    monkeypatch.setattr(common, "MAX_REPLY_CHARS", 1_000)
    f = tmp_path / "chat.jsonl"
    f.write_text(_conversation(2) + "\n" + _conversation(2, chars=2_000, cid="d") + "\n",
                 encoding="utf-8")
    code = main(["import-cases", str(f), "--dataset", "d", "--format", "openai",
                 "--db", f"sqlite:///{tmp_path / 'w.db'}"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert f"{f}:2: messages: message 2: the reply is 2,000 characters, more than one case " \
        "may hold (1,000)" in err and "shorten the reply" in err


def test_a_record_too_long_is_exit_2_with_file_and_line(tmp_path, capsys, monkeypatch):
    import workbench.inputs.lines as lines

    monkeypatch.setattr(lines, "MAX_LINE_BYTES", 5_000)
    f = tmp_path / "chat.jsonl"
    f.write_text(_conversation(2) + "\n" + _conversation(100, cid="d") + "\n", encoding="utf-8")
    code = main(["import-cases", str(f), "--dataset", "d", "--format", "openai",
                 "--db", f"sqlite:///{tmp_path / 'w.db'}"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert f"{f}:2: line 2 is longer than 5,000 bytes" in err and "split the record" in err
    assert not (tmp_path / "w.db").exists()  # checked before the database was opened


def test_history_chars_out_of_range_is_exit_2(tmp_path, capsys):
    f = tmp_path / "chat.jsonl"
    f.write_text(_conversation(2) + "\n", encoding="utf-8")
    code = main(["import-cases", str(f), "--dataset", "d", "--format", "openai",
                 "--history-chars", "10", "--db", f"sqlite:///{tmp_path / 'w.db'}"])
    assert code == 2 and "between 1,000 and" in capsys.readouterr().err


def _import_rows(f, db: str, dataset: str, prefix: str, n: int, tail: str = "") -> int:
    """``n`` CSV rows (ids ``<prefix>0`` ...), then ``tail``, written to ``f`` and imported
    into ``dataset`` of ``db`` with ``workbench import-cases``: its exit code."""
    f.write_text("id,answer\n" + "".join(f"{prefix}{i},reply {i}\n" for i in range(n)) + tail,
                 encoding="utf-8")
    return main(["import-cases", str(f), "--dataset", dataset, "--map", "id=id,reply=answer",
                 "--db", db])


def test_import_cases_stores_in_batches_and_all_or_nothing(tmp_path, capsys, monkeypatch):
    from store import audit_repo
    from store.db import make_engine
    from workbench.commands import store_io

    calls = []
    real = audit_repo.save_cases

    def counting(engine, dataset, cases, *, actor):
        calls.append(len(cases))
        return real(engine, dataset, cases, actor=actor)

    monkeypatch.setattr(store_io, "BATCH_CASES", 3)
    monkeypatch.setattr(audit_repo, "save_cases", counting)
    db = f"sqlite:///{tmp_path / 'w.db'}"
    f = tmp_path / "rows.csv"
    assert _import_rows(f, db, "d", "r", 10) == 0
    assert calls == [3, 3, 3, 1]
    assert len(audit_repo.load_cases(make_engine(db), "d")) == 10
    # A bad row at the end: the first pass finds it, no batch is stored.
    calls.clear()
    assert _import_rows(f, db, "e", "s", 10, tail="s10,\"open\n") == 2
    assert calls == [] and audit_repo.load_cases(make_engine(db), "e") == []
    assert "rows.csv:12" in capsys.readouterr().err


def test_a_dataset_past_its_size_is_refused_before_anything_is_stored(tmp_path, capsys,
                                                                      monkeypatch):
    from store import audit_repo
    from store.db import make_engine
    from workbench.commands import store_io

    monkeypatch.setattr(store_io, "MAX_DATASET_CASES", 5)
    db = f"sqlite:///{tmp_path / 'w.db'}"
    f = tmp_path / "rows.csv"
    assert _import_rows(f, db, "d", "r", 9) == 2
    err = capsys.readouterr().err
    assert f"{f}:7: more than 5 cases, what one dataset takes" in err and "split the file" in err
    assert not (tmp_path / "w.db").exists()
    assert _import_rows(f, db, "d", "r", 3) == 0
    assert _import_rows(f, db, "d", "s", 3) == 2
    assert "dataset 'd' holds 3 case(s)" in capsys.readouterr().err
    assert len(audit_repo.load_cases(make_engine(db), "d")) == 3


@pytest.mark.parametrize(("data", "expected"), [
    (b"a\nb\x00c\n", r"x\.jsonl:2: holds a NUL byte \(byte 3\)"),
    (b"ok\n\xe9t\xe9\n", r"x\.jsonl:2: byte 0xe9 at offset 3 is not UTF-8"),
    (b"\xff\xfea\x00", r"x\.jsonl:1: is encoded as UTF-16 \(little-endian\)"),
])
def test_lines_are_checked_as_the_whole_file_decoder_checks_them(data, expected):
    with pytest.raises(InputError, match=expected):
        list(iter_bytes_lines(data, "x.jsonl"))


def test_lines_keep_their_endings_drop_a_bom_and_split_at_newline_only(tmp_path):
    f = tmp_path / "x.jsonl"
    f.write_bytes("\ufeffa\u2028b\r\nc".encode())
    assert list(iter_input_lines(f)) == ["a\u2028b\r\n", "c"]


def test_a_file_holding_too_many_characters_is_refused(tmp_path, capsys, monkeypatch):
    from workbench.commands import store_io

    monkeypatch.setattr(store_io, "MAX_IMPORT_CHARS", 5_000)
    f = tmp_path / "chat.jsonl"
    f.write_text(_conversation(200) + "\n", encoding="utf-8")
    assert main(["import-cases", str(f), "--dataset", "d", "--format", "openai",
                 "--db", f"sqlite:///{tmp_path / 'w.db'}"]) == 2
    err = capsys.readouterr().err
    assert f"{f}:1: cases holding more than 5,000 characters" in err
    assert "--history-chars" in err and not (tmp_path / "w.db").exists()
