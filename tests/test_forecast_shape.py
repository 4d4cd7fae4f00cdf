"""The sample against the target before any build (dragnet.forecast.shape): the pure comparison, the lines it
prints, and rows per document counted by a real query server (couchjs, when DRAGNET_COUCHJS names one)."""

import gzip
import json
import os

import pytest

from dragnet.forecast import shape as s
from dragnet.index.design import Design
from dragnet.report.terminal import sample_check_lines


def test_compare_names_what_differs_beyond_the_goal():
    sample = s.Shape(100, 500.0, {"a": 2.0, "b": 40.0, "c": 1.0})
    target = s.Shape(100, 560.0, {"a": 2.1, "b": 30.0})       # c: not mapped on the target, not compared
    ws = s.compare(sample, target)
    assert [(w["what"], round(w["difference"], 3)) for w in ws] == [
        ("document size", -0.107), ("rows per document of view b", 0.333)]
    assert s.compare(sample, s.Shape(100, 520.0, {"a": 2.1, "b": 41.0})) == []
    msg = s.message(ws[1])
    assert "rows per document of view b 40.00 in the sample, 30.00 in the target (+33%" in msg


def test_a_view_the_target_never_emits_is_infinitely_off():
    ws = s.compare(s.Shape(1, None, {"v": 1.0}), s.Shape(1, None, {"v": 0.0}))
    assert ws[0]["difference"] == float("inf") and "(∞," in s.message(ws[0])


def test_target_docs_alone_says_what_it_could_not_check():
    got = s.unchecked({"url": None, "db": None, "doc_count": 10, "sizes": {}, "q": None}, has_design=True)
    assert any("database size" in g and "forecast from the sweep's databases (±13%)" in g for g in got)
    assert any("document sizes" in g for g in got)
    assert any("rows per document" in g for g in got) and any("--target-q" in g for g in got)
    given = s.unchecked({"url": None, "db": None, "doc_count": 10, "sizes": {"file": 5}, "q": 8}, has_design=False)
    assert len(given) == 1 and "document sizes" in given[0]
    assert s.unchecked({"url": "http://h/db", "db": "db", "doc_count": 10}, has_design=True) == []


def test_mean_rows_and_doc_bytes():
    assert s.mean_rows([[1, 0], [3, 2]], ["x", "y"]) == {"x": 2.0, "y": 1.0}
    assert s.doc_bytes({"_id": "a", "_rev": "1-x", "v": 1}) == len('{"_id":"a","v":1}')


def test_lowest_scored_is_seeded_and_spread():
    docs = [{"_id": f"d{i:04d}"} for i in range(1000)]
    a, b = s.lowest_scored(docs, 50), s.lowest_scored(list(reversed(docs)), 50)
    assert sorted(d["_id"] for d in a) == sorted(d["_id"] for d in b)
    assert max(d["_id"] for d in a) > "d0500"


def test_check_lines():
    checks = {"goal": 0.1, "warnings": [{"message": "the sample is not the target in small: x"}],
              "not_checked": ["y"], "target": {"rows_per_doc": {}}}
    assert sample_check_lines(checks) == ["warning: the sample is not the target in small: x", "not checked: y"]
    ok = {"goal": 0.1, "warnings": [], "not_checked": [], "target": {"rows_per_doc": {"v": 1.0}}}
    assert sample_check_lines(ok) == ["the sample looks like the target: document size and rows per document "
                                      "within 10%"]


def _design() -> Design:
    return Design({"_id": "_design/t", "language": "javascript", "views": {
        "words": {"map": "function (doc) { doc.body.split(' ').forEach(function (w) { emit(w, null); }); }"},
        "one": {"map": "function (doc) { emit(doc._id, 1); }", "reduce": "_count"}}}, "test")


@pytest.mark.skipif(not os.environ.get("DRAGNET_COUCHJS"), reason="DRAGNET_COUCHJS is not set")
def test_rows_per_document_from_couchjs_and_the_warning(tmp_path):
    short, long_ = tmp_path / "short.jsonl.gz", tmp_path / "long.jsonl.gz"
    for path, words in ((short, 3), (long_, 6)):
        with gzip.open(path, "wt") as fh:
            for i in range(200):
                fh.write(json.dumps({"_id": f"d{i}", "body": " ".join(["w"] * words)}) + "\n")
    a, b = s.data_shape(short, _design(), count=50), s.data_shape(long_, _design(), count=50)
    assert a.rows_per_doc == {"words": 3.0, "one": 1.0} and b.rows_per_doc["words"] == 6.0
    assert a.docs == 200
    whats = [w["what"] for w in s.compare(a, b)]
    assert whats == ["document size", "rows per document of view words"]


def test_forecast_text_says_what_differs_what_was_not_checked_and_how_sizes_were_drawn():
    from pathlib import Path

    from dragnet.bench.sizes import draw_record
    from dragnet.report import forecast_report
    from dragnet.report.render import text

    recorded = Path(__file__).resolve().parent.parent / "docs/studies/forecast/backtest32-large100k/forecast.json"
    out = json.loads(recorded.read_text())
    plain = text.forecast(forecast_report.build(out))
    assert "not checked" not in plain and "sizes drawn" not in plain     # an older forecast.json has neither
    w = {"what": "document size", "sample": 400.0, "target": 500.0, "difference": -0.2, "unit": "bytes"}
    out["sample_checks"] = {"goal": 0.1, "warnings": [{**w, "message": s.message(w)}],
                            "not_checked": s.unchecked({"doc_count": 5, "sizes": {}, "q": None}, True)}
    out["draw"] = draw_record("spread")
    lines = text.forecast(forecast_report.build(out)).splitlines()
    assert "warning: the sample is not the target in small: document size 400 bytes in the sample, 500 bytes in " \
           "the target (-20%, more than the goal's 10%); the cost per document it measures may not be the " \
           "target's" in lines
    assert sum(line.startswith("not checked: ") for line in lines) == 4
    assert any(line.startswith("sizes drawn: each size the documents with the lowest sha1") for line in lines)
