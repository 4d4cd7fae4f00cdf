"""data_prep.generate and `dragnet generate`: determinism, shape and size distribution."""

from __future__ import annotations

import gzip
import json
import re

import pytest
from click.testing import CliRunner

from data_prep.generate import (CONFIDENTIAL, EMPTY_SECTION, ITEM_SECTIONS, TARGET, count_items, declaration_lines,
                                declarations, generate_file)
from data_prep.normalise import normalise
from dragnet.cli import main
from dragnet.measure.stats import mean, percentile

N = 2000


@pytest.fixture(scope="module")
def sample() -> list[dict]:
    return list(declarations(N, seed=11))


def test_same_seed_byte_identical_plain_and_gz(tmp_path):
    a, b, c = tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl.gz", tmp_path / "c.jsonl"
    generate_file(str(a), 300, 3)
    generate_file(str(b), 300, 3)
    generate_file(str(c), 300, 3)
    assert a.read_bytes() == b.read_bytes()
    assert gzip.decompress(a.read_bytes()) == c.read_bytes()
    assert c.read_bytes().count(b"\n") == 300


def test_different_seed_differs():
    assert list(declaration_lines(20, 1)) != list(declaration_lines(20, 2))
    ids_1 = {json.loads(line)["_id"] for line in declaration_lines(200, 1)}
    ids_2 = {json.loads(line)["_id"] for line in declaration_lines(200, 2)}
    assert len(ids_1) == 200 and not ids_1 & ids_2


def test_prefix_stable_when_count_grows():
    assert list(declaration_lines(50, 9)) == list(declaration_lines(120, 9))[:50]


def test_document_shape(sample):
    uuid_re = re.compile(r"^nacp_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
    list_sections = 0
    for doc in sample[:300]:
        assert uuid_re.match(doc["_id"])
        assert list(doc) == ["_id"] + [f"step_{n}" for n in range(18)]
        step_0, step_1 = doc["step_0"], doc["step_1"]
        assert step_0["declarationType"] in {"1", "2", "3", "4"}
        assert step_0["declarationYear1"] in {"2015", "2016"}
        for key in ("lastname", "firstname", "middlename", "workPost", "workPlace"):
            assert isinstance(step_1[key], str) and step_1[key]
        persons = {"1"} | set(doc["step_2"] if isinstance(doc["step_2"], dict) else
                              (m["iteration"] for m in doc["step_2"]))
        incomes = doc["step_11"]
        assert isinstance(incomes, dict) and len(incomes) >= 2
        for key, item in incomes.items():
            assert item["iteration"] == key
            assert item["person"] in persons
            assert isinstance(item["objectType"], str) and isinstance(item["sizeIncome"], str)
        for s in ITEM_SECTIONS:
            value = doc[s]
            assert isinstance(value, (dict, list))
            if isinstance(value, list):
                list_sections += 1
                assert value and all(isinstance(v, dict) and "iteration" in v for v in value)
            elif value != EMPTY_SECTION:
                assert all(isinstance(v, dict) and v["iteration"] == k for k, v in value.items())
    assert list_sections > 0


def test_raw_quirks_present(sample):
    text = "\n".join(json.dumps(d, ensure_ascii=False) for d in sample[:200])
    assert re.search(r'"sizeIncome": "\d{1,3}( \d{3})+,\d\d"', text)     # "12 345,67"
    assert CONFIDENTIAL in text and "Не відомо" in text and "[Не застосовується]" in text
    assert json.dumps(EMPTY_SECTION, ensure_ascii=False) in text
    odd = [i["sizeIncome"] for d in sample for i in d["step_11"].values() if not re.match(r"^[\d ]+,\d\d$", i["sizeIncome"])]
    assert 0 < len(odd) < 0.1 * sum(len(d["step_11"]) for d in sample)


def test_distribution_matches_recorded_study(sample):
    sizes = [len(json.dumps(d, ensure_ascii=False).encode()) for d in sample]
    assert mean(sizes) == pytest.approx(TARGET["mean"], rel=0.08)
    assert percentile(sizes, 50) == pytest.approx(TARGET["median"], rel=0.06)
    assert percentile(sizes, 90) == pytest.approx(TARGET["p90"], rel=0.08)
    assert percentile(sizes, 99) > 1.2 * percentile(sizes, 90)   # a long tail (p99 needs more docs; below)
    assert min(sizes) > 5000
    items = mean([count_items(d) for d in sample])
    assert items == pytest.approx(TARGET["items"], rel=0.12)
    type1 = [d for d in sample if d["step_0"]["declarationType"] == "1"]
    assert len(type1) / N == pytest.approx(TARGET["type1_share"], abs=0.025)
    changes = sum("changesYear" in d["step_0"] for d in type1) / len(type1)
    assert changes == pytest.approx(TARGET["changes_share_of_type1"], abs=0.02)


def test_long_tail_reaches_hundreds_of_kb():
    sizes = [len(line.encode()) for line in declaration_lines(8000, 4)]
    assert max(sizes) > 200_000
    assert TARGET["p99"] * 0.7 < percentile(sizes, 99) < TARGET["p99"] * 1.5
    assert sum(s > 45_000 for s in sizes) / len(sizes) == pytest.approx(0.011, abs=0.004)


def test_normalised_incomes_have_mixed_persons_and_floats(sample):
    mixed = 0
    for doc in sample[:300]:
        items = normalise(doc)["step_11"].values()
        assert all(isinstance(i["sizeIncome"], float) for i in items)
        mixed += len({i["person"] for i in items}) > 1
    assert mixed > 100


def test_cli_generate_stats_and_normalise(tmp_path):
    out = tmp_path / "d.jsonl.gz"
    res = CliRunner().invoke(main, ["generate", "--count", "150", "--seed", "2", "--output", str(out), "--stats"])
    assert res.exit_code == 0, res.output
    assert "wrote 150 declarations" in res.output and "p99" in res.output and "declarationType" in res.output
    lines = gzip.decompress(out.read_bytes()).decode().splitlines()
    assert lines == list(declaration_lines(150, 2))

    norm = tmp_path / "n.jsonl"
    res = CliRunner().invoke(main, ["generate", "-n", "40", "--seed", "2", "-o", str(norm), "--normalise",
                                    "--stats", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert summary["count"] == 40 and summary["normalised"] is True
    assert set(summary["size"]) >= {"mean", "median", "p90", "p99", "max"}
    docs = [json.loads(line) for line in norm.read_text().splitlines()]
    assert docs == [normalise(d) for d in declarations(40, 2)]


def test_normalised_file_is_normalise_of_raw_byte_for_byte(tmp_path):
    # --normalise assembles pre-normalised fragments; it must equal serialising normalise(raw) exactly
    raw, norm, compact = tmp_path / "r.jsonl", tmp_path / "n.jsonl.gz", tmp_path / "c.jsonl"
    generate_file(str(raw), 400, 5)
    result = generate_file(str(norm), 400, 5, normalise=True)
    generate_file(str(compact), 60, 5, normalise=True, compact_id=True)
    docs = [json.loads(line) for line in raw.read_text().splitlines()]
    expected = [json.dumps(normalise(d), ensure_ascii=False) for d in docs]
    assert gzip.decompress(norm.read_bytes()).decode().splitlines() == expected
    assert compact.read_text().splitlines() == [json.dumps(normalise(d, compact_id=True), ensure_ascii=False)
                                                for d in docs[:60]]
    assert result.sizes == [len(e.encode()) for e in expected]
    assert result.items == sum(count_items(d) for d in docs)
    assert result.type1 == sum(d["step_0"]["declarationType"] == "1" for d in docs)
