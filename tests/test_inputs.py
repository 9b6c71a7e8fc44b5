"""The input layer on its own: decoding, JSON and YAML bounds, and where errors point."""

from __future__ import annotations

import time

import pytest

from workbench.inputs import (
    MAX_JSON_DEPTH,
    InputError,
    decode_text,
    iter_jsonl,
    load_yaml,
    loads_json,
    read_input_bytes,
    split_jsonl_lines,
)


def test_utf8_with_and_without_bom_decode_the_same():
    assert decode_text(b"\xef\xbb\xbfname: x", "f") == decode_text(b"name: x", "f") == ("name: x", [])


@pytest.mark.parametrize("data, encoding", [
    ("a: 1".encode("utf-16"), "UTF-16"), ("a: 1".encode("utf-32"), "UTF-32"),
    ("a: 1".encode("utf-16-be"), None), ("a: 1".encode("utf-32-le"), None),
])
def test_utf16_and_utf32_are_named_or_caught_as_nul_bytes(data, encoding):
    with pytest.raises(InputError) as err:
        decode_text(data, "in.yaml")
    text = str(err.value)
    assert text.startswith("in.yaml:1: ") and "re-save it as UTF-8" in text
    assert (encoding in text) if encoding else "NUL byte" in text


def test_latin1_is_an_error_at_its_line_or_a_warning_when_lenient():
    data = "line one\nr\xe9sum\xe9\n".encode("latin-1")
    with pytest.raises(InputError, match=r"^f:2: byte 0xe9 at offset 10 is not UTF-8"):
        decode_text(data, "f")
    text, warnings = decode_text(data, "f", lenient=True)
    assert text == "line one\nr\ufffdsum\ufffd\n"
    assert warnings and warnings[0].startswith("f:2: ") and "re-save it as UTF-8" in warnings[0]


def test_nul_bytes_are_refused_even_when_lenient():
    with pytest.raises(InputError, match=r"^f:3: holds a NUL byte"):
        decode_text(b"a\nb\nc\x00", "f", lenient=True)


def test_oversized_missing_and_folder_inputs(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b"x" * 101)
    with pytest.raises(InputError, match="101 bytes is more than a cases file may have"):
        read_input_bytes(big, "cases file", max_bytes=100)
    with pytest.raises(InputError, match="no such cases file"):
        read_input_bytes(tmp_path / "none.json", "cases file")
    with pytest.raises(InputError, match="is a folder"):
        read_input_bytes(tmp_path, "cases file")


def test_duplicate_keys_are_located_at_the_second_one():
    text = '{\n "a": 1,\n "b": {"c": 1},\n "a": 2\n}'
    with pytest.raises(InputError, match=r"^f:4: key 'a' appears twice"):
        loads_json(text, "f")
    # The same key in different objects is fine.
    assert loads_json('[{"a": 1}, {"a": 2}]', "f") == [{"a": 1}, {"a": 2}]


def test_surrogate_pairs_are_text_and_lone_surrogates_errors():
    assert loads_json('{"x": "\\ud83d\\ude00"}', "f") == {"x": "\U0001F600"}
    with pytest.raises(InputError, match=r"^f:2: a string holds a lone surrogate"):
        loads_json('{"ok": "\\ud83d\\ude00",\n "id": "a\\udc80"}', "f")
    with pytest.raises(InputError, match="lone surrogate"):
        loads_json('{"\\ud800": 1}', "f")  # in a key too
    assert loads_json('"a\\udc80"', "f", allow_surrogates=True) == "a\udc80"


def test_depth_limit_is_exact_and_deep_input_does_not_recurse():
    ok = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert loads_json(ok, "f") is not None
    too_deep = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    with pytest.raises(InputError, match=f"nested more than {MAX_JSON_DEPTH} levels"):
        loads_json(too_deep, "f")
    with pytest.raises(InputError, match="nested more than"):
        loads_json("[" * 200_000 + "]" * 200_000, "f")


def test_integers_past_python_digit_limit_name_their_line():
    with pytest.raises(InputError, match=r"^f:2: a number has more than 4300 digits"):
        loads_json('{"a": 1,\n "b": ' + "7" * 4301 + "}", "f")
    assert loads_json('{"b": ' + "7" * 4300 + "}", "f")["b"] > 0


def test_jsonl_lines_split_at_newline_only_and_errors_carry_the_file_line():
    text = '{"a": "x\u2028y"}\n\n{"a": 2}\r\n{bad\n'
    assert split_jsonl_lines(text)[:3] == ['{"a": "x\u2028y"}', "", '{"a": 2}']
    lines = iter_jsonl(text, "c.jsonl")
    assert next(lines) == (1, {"a": "x\u2028y"})
    assert next(lines) == (3, {"a": 2})
    with pytest.raises(InputError, match=r"^c.jsonl:4: not valid JSON"):
        next(lines)


BOMB = (
    "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
)


def test_yaml_alias_bomb_is_refused_before_expansion():
    started = time.perf_counter()
    with pytest.raises(InputError, match=r"^b.yaml:\d+: invalid YAML: the document \(aliases "
                       r"expanded\) is too large"):
        load_yaml(BOMB, "b.yaml")
    assert time.perf_counter() - started < 2


def test_yaml_one_long_string_aliased_many_times_is_bounded_too():
    text = "s: &s " + "x" * 100_000 + "\nl: [" + ", ".join(["*s"] * 200) + "]\n"
    with pytest.raises(InputError, match="too large"):
        load_yaml(text, "f")


def test_yaml_ordinary_anchors_still_work():
    data = load_yaml("base: &b {turns: 3}\nother:\n  <<: *b\n  extra: 1\nlist: [*b, *b]\n", "f")
    assert data["other"] == {"turns": 3, "extra": 1} and data["list"] == [{"turns": 3}] * 2


@pytest.mark.parametrize("text, message", [
    ("a: &a [*a]\n", "recursive structure"),
    ("a: " + "[" * 500 + "]" * 500 + "\n", "nested more than"),
    ("v: " + "9" * 5000 + "\n", "more than 4300 digits"),
    ("a: 1\nb: x\x19y\n", r"control character U\+0019"),
    ("a: [1,\n", "invalid YAML"),
])
def test_yaml_bounds_and_errors(text, message):
    with pytest.raises(InputError, match=message) as err:
        load_yaml(text, "f.yaml")
    assert str(err.value).startswith("f.yaml")


def test_yaml_control_character_names_its_line():
    with pytest.raises(InputError, match=r"^f:2: "):
        load_yaml("a: 1\nb: x\x19y\n", "f")


def test_yaml_first_line_offsets_front_matter_errors():
    with pytest.raises(InputError, match=r"^SKILL.md:4: "):
        load_yaml("name: x\ndesc: [\n", "SKILL.md", first_line=2)


def test_yaml_lone_surrogate_escape_is_refused_like_in_json():
    with pytest.raises(InputError, match=r"^S.md:3: .*lone surrogate"):
        load_yaml('name: ok\ndescription: "a\\udc80"\n', "S.md", first_line=2)
    assert load_yaml('d: "\\U0001F600"', "f") == {"d": "\U0001F600"}


def test_names_inferred_from_a_heading_are_made_usable_not_refused():
    from workbench.skill.document import parse_skill
    from workbench.skill.names import MAX_SKILL_NAME, skill_name_problem

    long = "Refund and cancellation policy for merchant orders placed in the EU and UK regions"
    doc = parse_skill(f"# {long}\nBody.\n", "x/SKILL.md")
    assert len(doc.name) <= MAX_SKILL_NAME and long.startswith(doc.name) and not doc.name.endswith(" ")
    assert parse_skill("# Returns/exchanges\nBody.\n", "SKILL.md").name == "Returns-exchanges"
    assert skill_name_problem(doc.name) is None
