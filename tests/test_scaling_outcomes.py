"""Outcomes table loading and validation: errors name the row and the column."""

from __future__ import annotations

import json

import numpy as np
import pytest

from workbench.scaling import OutcomesError, load_outcomes, outcomes_from_records

HEADER = "instance,dataset,session,params_b,complexity,correct"


def _row(**over):
    row = {
        "instance": "i1",
        "dataset": "airlines",
        "session": "s1",
        "params_b": 2,
        "complexity": 0.4,
        "correct": 1,
    }
    row.update(over)
    return row


def test_records_are_typed_and_extra_columns_kept():
    frame = outcomes_from_records(
        [
            _row(correct=True, label="violation"),
            _row(instance="i2", params_b="9", correct="0", complexity=np.float64(1.5)),
            _row(instance="i2", params_b=4.0, correct=np.int64(1), complexity=1.5),
        ]
    )
    assert list(frame.columns)[:6] == ["instance", "dataset", "session", "params_b", "complexity", "correct"]
    assert frame["correct"].tolist() == [1, 0, 1]
    assert frame["params_b"].tolist() == [2.0, 9.0, 4.0]
    assert frame["label"].tolist()[0] == "violation"


@pytest.mark.parametrize(
    ("override", "column", "fragment"),
    [
        ({"correct": 2}, "correct", "expected 0 or 1"),
        ({"correct": "yes please"}, "correct", "expected 0 or 1"),
        ({"params_b": 0}, "params_b", "must be > 0"),
        ({"params_b": "seven"}, "params_b", "expected a number"),
        ({"complexity": -1}, "complexity", "must be >= 0"),
        ({"complexity": float("nan")}, "complexity", "finite"),
        ({"session": ""}, "session", "empty"),
        ({"instance": None}, "instance", "missing"),
    ],
)
def test_bad_value_names_record_and_column(override, column, fragment):
    with pytest.raises(OutcomesError) as err:
        outcomes_from_records([_row(), _row(**({"instance": "i2"} | override))])
    message = str(err.value)
    assert message.startswith("record 2, column ") and repr(column) in message
    assert fragment in message


def test_missing_column_is_named():
    row = _row()
    del row["complexity"]
    with pytest.raises(OutcomesError, match=r"record 1: missing column\(s\) 'complexity'"):
        outcomes_from_records([row])


def test_empty_and_non_dict_records():
    with pytest.raises(OutcomesError, match="no rows"):
        outcomes_from_records([])
    with pytest.raises(OutcomesError, match="record 1: expected an object"):
        outcomes_from_records([["i1", "d"]])


def test_instance_must_keep_one_complexity_and_session_across_judges():
    with pytest.raises(OutcomesError, match=r"record 1, column 'complexity': instance 'i1'"):
        outcomes_from_records([_row(params_b=2), _row(params_b=9, complexity=0.9)])
    with pytest.raises(OutcomesError, match="column 'session'"):
        outcomes_from_records([_row(params_b=2), _row(params_b=9, session="s2")])


def _outcomes_csv(tmp_path, text: str):
    path = tmp_path / "o.csv"
    path.write_text(text)
    return path


def test_csv_errors_give_row_and_file_line(tmp_path):
    path = _outcomes_csv(tmp_path, f"{HEADER}\ni1,a,s1,2,0.5,1\ni2,a,s1,2,0.5,maybe\n")
    with pytest.raises(OutcomesError) as err:
        load_outcomes(path)
    assert "row 2 (line 3), column 'correct'" in str(err.value)
    assert str(path) in str(err.value)


def test_csv_header_missing_column(tmp_path):
    path = _outcomes_csv(tmp_path, "instance,dataset,session,params_b,correct\ni1,a,s1,2,1\n")
    with pytest.raises(OutcomesError, match="header: missing column.*'complexity'"):
        load_outcomes(path)


def test_csv_empty_cell_is_missing(tmp_path):
    path = _outcomes_csv(tmp_path, f"{HEADER}\ni1,a,,2,0.5,1\n")
    with pytest.raises(OutcomesError, match="row 1 \\(line 2\\), column 'session': value is missing"):
        load_outcomes(path)


def test_jsonl_round_trip_and_bad_line(tmp_path):
    good = tmp_path / "o.jsonl"
    good.write_text(json.dumps(_row()) + "\n\n" + json.dumps(_row(instance="i2")) + "\n")
    assert len(load_outcomes(good)) == 2
    bad = tmp_path / "b.jsonl"
    bad.write_text(json.dumps(_row()) + "\n{not json\n")
    with pytest.raises(OutcomesError, match="line 2: not valid JSON"):
        load_outcomes(bad)


def test_unknown_extension_and_missing_file(tmp_path):
    with pytest.raises(OutcomesError, match="name the file .csv or .jsonl"):
        load_outcomes(tmp_path / "o.xlsx")
    with pytest.raises(OutcomesError, match="no such file"):
        load_outcomes(tmp_path / "absent.csv")
