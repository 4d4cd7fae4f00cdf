"""Nested spread samples of a data file (the forecast's sweep sizes): pure pieces and the files written."""

import gzip
import json

import pytest

from dragnet.bench import sizes as sz
from dragnet.data import sample as s
from dragnet.errors import UsageError


def _source(path, n, drift=False):
    with gzip.open(path, "wt") as fh:
        for i in range(n):
            fh.write(json.dumps({"_id": f"d{i:05d}", "body": "w " * ((i * 10) // n + 1 if drift else 3)}) + "\n")
    return path


def _ids(path):
    return [json.loads(line)["_id"] for line in gzip.open(path)]


def test_line_key_is_the_id_else_the_position():
    assert s.line_key(b'{"a": 1, "_id": "x\\"y"}', 7) == 'x"y'
    assert s.line_key(b'{"a": 1}', 7) == "#7"


def test_thresholds_nest_and_refuse_too_many():
    scores = [0.9, 0.1, 0.5, 0.3, 0.7]
    assert s.spread_thresholds(scores, [2, 4]) == {2: 0.3, 4: 0.7}
    with pytest.raises(UsageError, match="6 documents from 5"):
        s.spread_thresholds(scores, [6])


def test_spread_files_are_nested_seeded_and_cover_the_whole_file(tmp_path):
    src = _source(tmp_path / "d.jsonl.gz", 2000, drift=True)
    out = s.write_spread(src, [100, 400, 1600], tmp_path / "out")
    ids = {n: _ids(p) for n, p in out.items()}
    assert [len(ids[n]) for n in (100, 400, 1600)] == [100, 400, 1600]
    assert set(ids[100]) < set(ids[400]) < set(ids[1600])
    assert ids[400] == sorted(ids[400])                       # the file's own order
    # spread: the sample reaches the file's last tenth, where a prefix of 400 never does
    assert sum(i >= "d01800" for i in ids[400]) > 10
    again = s.write_spread(src, [400], tmp_path / "again")
    assert again[400].read_bytes() == out[400].read_bytes()   # same bytes: the import marker knows it
    other = s.write_spread(src, [400], tmp_path / "other", seed=2)
    assert _ids(other[400]) != ids[400]


def test_spread_sample_keeps_the_shape_a_prefix_loses(tmp_path):
    src = _source(tmp_path / "d.jsonl.gz", 2000, drift=True)
    whole = [len(json.loads(line)["body"]) for line in gzip.open(src)]
    spread = [len(json.loads(line)["body"]) for line in gzip.open(sz.write_sizes(src, [200], tmp_path / "s", "spread")[200])]
    prefix = [len(json.loads(line)["body"]) for line in gzip.open(sz.write_sizes(src, [200], tmp_path / "p", "prefix")[200])]
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    assert abs(mean(spread) / mean(whole) - 1) < 0.1
    assert mean(prefix) / mean(whole) < 0.5


def test_spread_of_more_than_the_data_is_one_line(tmp_path):
    src = _source(tmp_path / "d.jsonl.gz", 50)
    with pytest.raises(UsageError, match="50 documents, fewer than the largest size 60"):
        s.write_spread(src, [10, 60], tmp_path / "o")


def test_draw_record_says_how():
    assert sz.draw_record("spread")["kind"] == "spread" and sz.draw_record("spread")["seed"] == s.SPREAD_SEED
    assert sz.draw_record("prefix") == {"kind": "prefix", "seed": None, "how": "each size the first documents of the data"}
