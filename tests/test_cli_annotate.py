"""``workbench annotate agreement`` run in-process on small CSVs."""

from __future__ import annotations

import json

import pytest

from workbench.cli import main


def write(tmp_path, text: str, name: str = "labels.csv", encoding: str = "utf-8"):
    path = tmp_path / name
    path.write_text(text, encoding=encoding)
    return path


# Two annotators, 4 items, one missing label (item 4 by b):
#   1: y/y  2: y/n  3: n/n  4: n/-
TWO = "item,annotator,label\n1,a,y\n1,b,y\n2,a,y\n2,b,n\n3,a,n\n3,b,n\n4,a,n\n4,b,\n"


def run_json(path, capsys) -> dict:
    assert main(["annotate", "agreement", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_two_annotators_json(tmp_path, capsys):
    report = run_json(write(tmp_path, TWO), capsys)
    # Shared items 1-3: p_o = 2/3; a: y 2, n 1; b: y 1, n 2 -> p_e = 4/9
    # kappa = (2/3 - 4/9) / (5/9) = 0.4
    assert report["cohen_kappa"] == pytest.approx(0.4)
    # Item 4 has one label, the others two: Fleiss does not apply.
    assert report["fleiss_kappa"] is None
    # n = 6 pairable values, y 3, n 3; one disagreeing item -> sum o_{c != k} = 2
    # alpha = 1 - 5 * 2 / (36 - 18) = 1 - 10/18 = 4/9
    assert report["krippendorff_alpha"] == pytest.approx(4 / 9)
    assert (report["n_items"], report["n_annotators"], report["n_labels"]) == (4, 2, 7)


def test_text_output_prints_null_with_the_reason(tmp_path, capsys):
    assert main(["annotate", "agreement", str(write(tmp_path, TWO))]) == 0
    out = capsys.readouterr().out
    assert "items: 4  annotators: 2  labels: 7" in out
    assert "cohen_kappa: 0.4000" in out
    assert "fleiss_kappa: null  (needs every labelled item to have the same number" in out
    assert "krippendorff_alpha: 0.4444" in out


def test_three_annotators_have_no_cohen_kappa(tmp_path, capsys):
    rows = ["item,annotator,label"] + [
        f"{item},{coder},{label}"
        for item, labels in enumerate(["aaa", "aab", "bbb", "abb"])
        for coder, label in zip("xyz", labels, strict=True)
    ]
    report = run_json(write(tmp_path, "\n".join(rows) + "\n"), capsys)
    assert report["cohen_kappa"] is None
    assert report["fleiss_kappa"] == pytest.approx(1 / 3)  # worked in test_annotation_agreement
    assert report["krippendorff_alpha"] == pytest.approx(7 / 18)


def test_header_variants_extra_columns_bom_and_blank_lines(tmp_path, capsys):
    text = "\ufeffNote, Item ,Annotator,LABEL\nx,1,a,y\n\nx,1,b,y\ny,2,a,n\ny,2,b,n\n"
    report = run_json(write(tmp_path, text), capsys)
    # One category per item, both agree everywhere: p_o = 1, p_e = 1/2 -> kappa = 1
    assert report["cohen_kappa"] == 1.0 and report["n_labels"] == 4


def test_single_annotator_is_all_null(tmp_path, capsys):
    report = run_json(write(tmp_path, "item,annotator,label\n1,a,y\n2,a,n\n"), capsys)
    assert report["cohen_kappa"] is None
    assert report["fleiss_kappa"] is None
    assert report["krippendorff_alpha"] is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("item,rater,label\n1,a,y\n", "lacks column(s) annotator (found 'item', 'rater', 'label')"),
        ("", "is empty; pass a CSV file with a header row"),
        ("item,annotator,label\n", "has a header but no rows"),
        ("item,annotator,label\n1,,y\n", "line 2: empty annotator"),
        ("item,annotator,label\n1,a,y\n1,a,n\n", "line 3: annotator 'a' already labelled item '1' "
         "on line 2; keep one label per annotator and item"),
        ('item,annotator,label\n1,a,"y\n', "is not valid CSV"),
    ],
)
def test_bad_input_is_a_clear_user_error(tmp_path, capsys, text, message):
    assert main(["annotate", "agreement", str(write(tmp_path, text))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert message in err


def test_unreadable_files(tmp_path, capsys):
    assert main(["annotate", "agreement", str(tmp_path / "missing.csv")]) == 2
    assert "no such labels CSV file; check the path; pass a CSV file with a header row" in \
        capsys.readouterr().err
    assert main(["annotate", "agreement", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    latin = write(tmp_path, "item,annotator,label\n1,a,\xe9\n", "latin.csv", encoding="latin-1")
    assert main(["annotate", "agreement", str(latin)]) == 2
    err = capsys.readouterr().err
    assert "latin.csv:2: byte 0xe9" in err and "re-save it as UTF-8" in err


def test_annotate_without_subcommand_prints_help(capsys):
    assert main(["annotate"]) == 2
    assert "agreement" in capsys.readouterr().out
