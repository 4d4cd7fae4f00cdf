"""data_prep.normalise: every quirk of the NACP dumps, purity and idempotence."""

from __future__ import annotations

import copy
import json

import pytest

from data_prep.generate import declarations
from data_prep.normalise import (HIDDEN, expand_id, is_hidden_value, items_by_id, normalise, parse_number,
                                 short_id, unwrap)


@pytest.mark.parametrize("text, expected", [
    ("12 345,67", 12345.67),
    ("12\u00a0345,67", 12345.67),       # NBSP thousands separator
    ("1\u202f000", 1000.0),             # narrow NBSP
    ("1,5", 1.5),
    ("1.5", 1.5),
    (" 42 ", 42.0),
    ("1.234,56", 1234.56),
    ("1,234.56", 1234.56),
    ("1,234,567", 1234567.0),
    ("-3,25", -3.25),
    ("0", 0.0),
    (7, 7.0),
    (2.5, 2.5),
])
def test_parse_number_reads_nacp_amounts(text, expected):
    assert parse_number(text) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["-", "", "  ", "[Конфіденційна інформація]", "Не відомо", "abc", "1,2,3x",
                                  "nan", "inf", None, True, [], {}, float("nan")])
def test_parse_number_rejects_non_numbers(text):
    assert parse_number(text) is None


def test_numeric_fields_become_floats_or_zero_with_flag():
    doc = {"_id": "x", "step_11": {"1": {"objectType": "Дивіденди", "person": "1", "sizeIncome": "12 345,67"},
                                   "2": {"objectType": "Подарунок", "person": "2", "sizeIncome": "-"},
                                   "3": {"person": "1", "sizeIncome": "[Конфіденційна інформація]"}},
           "step_3": {"7": {"totalArea": "52,3", "costDate": "Не відомо"}}}
    out = normalise(doc)
    items = out["step_11"]
    assert items["1"]["sizeIncome"] == pytest.approx(12345.67) and "dnt_sizeIncome_hidden" not in items["1"]
    assert items["2"]["sizeIncome"] == 0.0 and items["2"]["dnt_sizeIncome_hidden"] is True
    assert items["3"]["sizeIncome"] == 0.0 and items["3"]["dnt_sizeIncome_hidden"] is True
    assert out["step_3"]["7"]["totalArea"] == pytest.approx(52.3)
    assert out["step_3"]["7"]["costDate"] == 0.0 and out["step_3"]["7"]["dnt_costDate_hidden"] is True
    # text fields keep their strings; "person" is an id, not an amount
    assert items["1"]["person"] == "1" and items["1"]["objectType"] == "Дивіденди"


def test_confidential_and_empty_values_become_one_marker():
    doc = {"step_1": {"lastname": "Коваль", "birthday": "[Конфіденційна інформація]", "street": "",
                      "unzr": "Не відомо", "eng_identic": "[Не застосовується]", "x": "  ",
                      "y": "[Член сім'ї не надав інформацію]", "n": None}}
    step_1 = normalise(doc)["step_1"]
    assert step_1["lastname"] == "Коваль"
    for key in ("birthday", "street", "unzr", "eng_identic", "x", "y"):
        assert step_1[key] == HIDDEN, key
    assert step_1["n"] is None
    assert is_hidden_value(HIDDEN) and not is_hidden_value("Київ")


def test_nested_values_are_normalised():
    doc = {"step_3": {"5": {"rights": {"1": {"percent-ownership": "33,33", "ua_lastname": ""}},
                            "tags": ["", "a"]}}}
    item = normalise(doc)["step_3"]["5"]
    assert item["rights"]["1"]["percent-ownership"] == pytest.approx(33.33)
    assert item["rights"]["1"]["ua_lastname"] == HIDDEN
    assert item["tags"] == [HIDDEN, "a"]


def test_list_sections_become_objects_keyed_by_item_id():
    doc = {"step_2": [{"iteration": "1470000000001", "lastname": "A"}, {"id": 17, "lastname": "B"},
                      {"lastname": "C"}, {"iteration": "1470000000001", "lastname": "D"}]}
    step_2 = normalise(doc)["step_2"]
    assert list(step_2) == ["1470000000001", "17", "2", "3"]
    assert [v["lastname"] for v in step_2.values()] == ["A", "B", "C", "D"]
    assert items_by_id([]) == {}


def test_empty_section_marker_becomes_empty_object():
    doc = {"step_4": {"empty": "Об'єкт декларування відсутній"}, "step_5": {"1": {"empty": "x", "a": "b"}}}
    out = normalise(doc)
    assert out["step_4"] == {}
    assert out["step_5"] == {"1": {"empty": "x", "a": "b"}}  # an item that merely has such a field stays


def test_couchdb_fields_untouched_and_steps_0_1_kept():
    doc = {"_id": "nacp_x", "_rev": "1-abc", "step_0": {"declarationType": "1", "declarationYear1": "2016"}}
    out = normalise(doc)
    assert out == doc


def test_short_id_round_trip_and_shape():
    long_id = "nacp_0000a3f1-5b2c-4d3e-8f90-123456789abc"
    s = short_id(long_id)
    assert len(s) == 23 and s[0] == "d" and "=" not in s
    assert expand_id(s) == long_id
    assert short_id(s) == s                      # idempotent
    assert short_id("other") == "other"
    assert short_id("0000a3f1-5b2c-4d3e-8f90-123456789abc") == s
    assert normalise({"_id": long_id}, compact_id=True)["_id"] == s


def test_unwrap_real_dump_shape():
    wrapped = {"id": "0000a3f1-5b2c-4d3e-8f90-123456789ABC", "created_date": "2016-10-30",
               "data": {"step_0": {"declarationType": "1"}, "step_11": [{"iteration": "9", "sizeIncome": "1,5"}]}}
    out = normalise(wrapped)
    assert out["_id"] == "nacp_0000a3f1-5b2c-4d3e-8f90-123456789abc"
    assert out["dnt_source"] == {"created_date": "2016-10-30"}
    assert out["step_11"] == {"9": {"iteration": "9", "sizeIncome": 1.5}}
    assert normalise(out) == out
    # bare declarations and unrelated "data" fields are left alone
    bare = {"_id": "a", "data": {"step_0": {}}}
    assert unwrap(bare) is bare
    assert unwrap({"data": {"x": 1}}) == {"data": {"x": 1}}


def test_pure_and_idempotent_on_generated_declarations():
    for doc in declarations(60, seed=5):
        before = copy.deepcopy(doc)
        once = normalise(doc)
        assert doc == before                       # input not mutated
        assert normalise(once) == once             # idempotent
        assert normalise(once, compact_id=True) == normalise(normalise(once, compact_id=True), compact_id=True)
        json.dumps(once, allow_nan=False)          # still plain JSON
        for item in once["step_11"].values():
            assert isinstance(item["sizeIncome"], float)
        for section in (f"step_{n}" for n in range(2, 18)):
            assert isinstance(once[section], dict)
