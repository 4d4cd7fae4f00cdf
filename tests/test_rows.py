"""Comparing two engines' rows: matched by document id (map) or key (reduce), numbers to a tolerance."""

from __future__ import annotations

import gzip
import json

from dragnet.index import rows as rows


def _map_rows(pairs):
    return [{"id": i, "key": k, "value": v} for i, k, v in pairs]


REF = _map_rows([("a", "x", 1), ("a", "y", [1.5, {"n": "a"}]), ("b", 2020, 0.1 + 0.2), ("c", None, "t")])


def test_equal_rows_in_another_order_and_float_noise_are_equal():
    other = list(reversed(REF))
    other[1] = {"id": "b", "key": 2020, "value": 0.30000000000000004 * (1 + 1e-15)}
    c = rows.compare_rows("v.map", REF, other)
    assert (c.compared, c.differences, c.rows_reference, c.rows_other) == (3, 0, 4, 4)


def test_planted_differences_are_each_found_with_both_values():
    other = _map_rows([("a", "x", 1), ("a", "y", [1.5, {"n": "b"}]),       # a: a value changed
                       ("c", None, "t"), ("c", None, "t"),                   # c: a row too many
                       ("d", 1, 1)])                                         # d: only in other; b: missing
    c = rows.compare_rows("v.map", REF, other)
    assert c.differences == 4 and c.compared == 4
    by_doc = {e.where: e for e in c.examples}
    assert by_doc["a"].reference == [["x", 1], ["y", [1.5, {"n": "a"}]]]
    assert [["y", [1.5, {"n": "b"}]]] == [r for r in by_doc["a"].other if r[0] == "y"]
    assert by_doc["b"].other is None and by_doc["d"].reference is None
    assert len(by_doc["c"].other) == 2


def test_types_are_not_confused():
    c = rows.compare_rows("v.map", _map_rows([("a", 1, True)]), _map_rows([("a", 1, 1)]))
    assert c.differences == 1
    c = rows.compare_rows("v.map", _map_rows([("a", "1", 1)]), _map_rows([("a", 1, 1)]))
    assert c.differences == 1


def test_reduce_rows_are_matched_by_key():
    ref = [{"key": ["declarant"], "value": {"sum": 10.0, "count": 2}}, {"key": ["family"], "value": {"sum": 1, "count": 1}}]
    other = [{"key": ["family"], "value": {"sum": 1.0, "count": 1}}, {"key": ["declarant"], "value": {"sum": 10.5, "count": 2}}]
    c = rows.compare_rows("v.group1", ref, other, by="key")
    assert c.differences == 1 and c.examples[0].where == ["declarant"]


def test_compare_files_reads_dumps_and_reports_missing_queries(tmp_path):
    def dump(name, data):
        p = tmp_path / f"{name}.jsonl.gz"
        with gzip.open(p, "wt") as fh:
            for r in data:
                fh.write(json.dumps(r) + "\n")
        return str(p)

    ref = {"v.map": dump("r", REF), "v.group0": dump("rg", [{"key": None, "value": 4}])}
    same = {"v.map": dump("o", list(reversed(REF))), "v.group0": dump("og", [{"key": None, "value": 4}])}
    out = rows.compare_files(ref, same)
    assert out["differences"] == 0 and out["rows_compared"] == 5
    out = rows.compare_files(ref, {"v.map": same["v.map"]})
    assert out["differences"] == 1 and out["queries"]["v.group0"] == {"missing_in": "other", "differences": 1}
