"""dragnet.index.fault: whose fault a difference is, decided by re-running the functions in the reference engine.

The engine here is a real query-server process (dragnet's Python server, which runs anywhere); the rows
are recorded dumps of the shape dragnet.index.rows writes, with ties in the reduced field."""

from __future__ import annotations

import gzip
import json
import sys

import pytest

from dragnet.index import fault as fault
from dragnet.report.render import build_text as build_text
from dragnet.servers.discovery import PYTHON_QS, ServerSpec
from dragnet.servers.reference_engine import ProcessEngine

# keeps the value with the latest date, replacing it only when a date is strictly greater: ties are won
# by whichever value comes first, so the result depends on the order
LATEST = '''def fun(keys, values, rereduce):
    best = None
    for v in values:
        if best is None or v["date"] > best["date"]:
            best = v
    return best
'''
TOTAL = '''def fun(keys, values, rereduce):
    return sum(v["n"] for v in values) if not rereduce else sum(values)
'''
MAP = '''def fun(doc):
    for i, e in enumerate(doc["events"]):
        yield doc["_id"], {"date": e["date"], "who": e["who"], "n": 1}
'''
RANDOM_MAP = '''import random
def fun(doc):
    yield doc["_id"], random.random()
'''
SPEC = ServerSpec("python3", "python3", (sys.executable, str(PYTHON_QS)), "python")

# one document emits two rows with the same date (the tie), as the app did
DOCS = {
    "a": {"_id": "a", "events": [{"date": "2024-01-02", "who": "ann"}, {"date": "2024-01-02", "who": "bob"}]},
    "b": {"_id": "b", "events": [{"date": "2023-05-01", "who": "cid"}]},
    "c": {"_id": "c", "events": [{"date": "2022-01-01", "who": "dan"}, {"date": "2021-01-01", "who": "eve"}]},
}


def map_rows() -> list[dict]:
    rows = []
    for doc_id, doc in sorted(DOCS.items()):
        for e in doc["events"]:
            rows.append({"id": doc_id, "key": doc_id, "value": {"date": e["date"], "who": e["who"], "n": 1}})
    return rows


def kvs() -> list:
    return [[[r["key"], r["id"]], r["value"]] for r in map_rows()]


@pytest.fixture
def engine():
    with ProcessEngine(SPEC, MAP) as e:
        yield e


def test_feeding_rows_by_group_level():
    rows = [{"id": "1", "key": ["x", 1], "value": 1}, {"id": "2", "key": ["x", 2], "value": 2},
            {"id": "3", "key": ["y", 1], "value": 3}, {"id": "4", "key": "x", "value": 4}]
    assert len(fault.feeding_rows(rows, "group0", None)) == 4
    assert [kv[1] for kv in fault.feeding_rows(rows, "group1", ["x"])] == [1, 2]
    assert [kv[1] for kv in fault.feeding_rows(rows, "exact", ["x", 2])] == [2]
    assert fault.feeding_rows(rows, "exact", "x") == [[["x", "4"], 4]]


def test_tie_breaking_reduce_is_order_dependent_with_a_two_row_example(engine):
    check = fault.check_order(engine, LATEST, kvs())
    assert check.order_dependent
    ex = check.example
    assert ex is not None and len(ex.values) == 2
    # the smallest example is the tie: two rows of document a with the same date
    assert {v[1]["who"] for v in ex.values} == {"ann", "bob"}
    assert {ex.first_result["who"], ex.second_result["who"]} == {"ann", "bob"}


def test_commutative_reduce_is_not_order_dependent(engine):
    check = fault.check_order(engine, TOTAL, kvs())
    assert not check.order_dependent
    assert {json.dumps(t.result) for t in check.trials} == {"5"}
    assert len(check.trials) == 3 + 2 * fault.SHUFFLES


def test_without_ties_the_same_reduce_is_order_independent(engine):
    rows = [kv for kv in kvs() if kv[1]["who"] != "bob"]
    assert not fault.check_order(engine, LATEST, rows).order_dependent


def _dump(path, rows):
    with gzip.open(path, "wt") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    return str(path)


def _comparison(queries: dict) -> dict:
    return {"differences": sum(q["differences"] for q in queries.values()), "queries": queries}


def test_classify_reduce_difference_as_order_dependent(tmp_path, engine):
    files = {"latest.map": _dump(tmp_path / "m.gz", map_rows())}
    cmp = _comparison({
        "latest.map": {"differences": 0, "examples": []},
        "latest.group0": {"differences": 1, "examples": [
            {"view": "latest.group0", "where": None, "reference": [[None, {"who": "ann"}]],
             "other": [[None, {"who": "bob"}]]}]},
    })
    inputs = fault.Inputs(files, {"latest": {"map": MAP, "reduce": LATEST}}, lambda view: engine,
                          fetch_doc=DOCS.get)
    [finding] = fault.classify(cmp, inputs)
    assert finding.cls == fault.ORDER and finding.query == "latest.group0"
    assert len(finding.example["values"]) == 2
    assert not fault.blocking(fault.class_counts([finding]))
    assert fault.blocking(fault.class_counts([finding]), strict=True)


def test_classify_reduce_difference_of_a_sound_reduce_as_engine(tmp_path, engine):
    files = {"total.map": _dump(tmp_path / "m.gz", map_rows())}
    cmp = _comparison({"total.exact": {"differences": 1, "examples": [
        {"view": "total.exact", "where": "a", "reference": [["a", 2]], "other": [["a", 3]]}]}})
    inputs = fault.Inputs(files, {"total": {"map": MAP, "reduce": TOTAL}}, lambda view: engine,
                          fetch_doc=DOCS.get)
    [finding] = fault.classify(cmp, inputs)
    assert finding.cls == fault.ENGINE
    assert fault.blocking(fault.class_counts([finding]))


def test_classify_map_difference_random_vs_deterministic(tmp_path):
    files = {"v.map": _dump(tmp_path / "m.gz", [])}
    cmp = _comparison({"v.map": {"differences": 1, "examples": [
        {"view": "v.map", "where": "a", "reference": [["a", 0.1]], "other": [["a", 0.2]]}]},
        "v.group0": {"differences": 1, "examples": [{"view": "v.group0", "where": None}]}})
    with ProcessEngine(SPEC, RANDOM_MAP) as rnd:
        found = fault.classify(cmp, fault.Inputs(files, {"v": {"map": RANDOM_MAP, "reduce": "_sum"}},
                                                 lambda view: rnd, fetch_doc=DOCS.get))
    assert [f.cls for f in found] == [fault.NONDETERMINISTIC_MAP, fault.NONDETERMINISTIC_MAP]
    assert len(found[0].example["answers"]) == fault.MAP_REPEATS
    with ProcessEngine(SPEC, MAP) as det:
        found = fault.classify(cmp, fault.Inputs(files, {"v": {"map": MAP, "reduce": "_sum"}},
                                                 lambda view: det, fetch_doc=DOCS.get))
    assert [f.cls for f in found] == [fault.ENGINE, fault.ENGINE]


def test_unrunnable_reference_leaves_differences_unclassified_and_blocking():
    cmp = _comparison({"v.map": {"differences": 2, "examples": []}})
    [f] = fault.classify(cmp, fault.Inputs({}, {"v": {"map": "x"}}, None, fetch_doc=DOCS.get,
                                           why_unchecked="no couchjs here"))
    assert f.cls == fault.UNCHECKED and f.reason == "no couchjs here"
    assert fault.blocking({fault.UNCHECKED: 2})


def test_same_engine_differences_are_the_functions():
    assert fault.same_engine_class("v.map") == fault.NONDETERMINISTIC_MAP
    assert fault.same_engine_class("v.group1") == fault.ORDER
    assert not fault.blocking({fault.ORDER: 3, fault.NONDETERMINISTIC_MAP: 1})


def test_describe_shows_the_smallest_example():
    lines = build_text.describe_finding({"query": "v.group0", "cls": fault.ORDER, "differences": 1, "reason": "r",
                            "example": {"values": [[["k", "a"], {"d": 1}], [["k", "a"], {"d": 1, "x": 2}]],
                                        "first": "reduce([row 1, row 2])", "second": "reduce([row 2, row 1])",
                                        "first_result": {"d": 1}, "second_result": {"d": 1, "x": 2}}})
    assert lines[0] == "v.group0: 1 × order-dependent reduce: r"
    assert "smallest example" in lines[1] and "reduce([row 2, row 1]) =" in lines[3]


# -- live: a design doc shaped like the app, over documents that emit ties -------------------

JS_DDOC = {
    "_id": "_design/history", "language": "javascript",
    "views": {
        "latest": {
            "map": "function (doc) { if (doc.events) doc.events.forEach(function (e) { "
                   "emit(doc.owner, {date: e.date, who: e.who}); }); }",
            "reduce": "function (keys, values, rereduce) { var best = null; values.forEach(function (v) { "
                      "if (best === null || v.date > best.date) best = v; }); return best; }"},
        "stamp": {"map": "function (doc) { emit(doc._id, Math.random()); }"},
    },
}


def _tie_docs(n: int = 120) -> list[dict]:
    docs = []
    for i in range(n):
        # every owner's latest date is held by one document that emits it twice: the tie decides
        date = "2030-01-01" if i < 4 else f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}"
        events = [{"date": date, "who": f"w{i}"}] + ([{"date": date, "who": f"x{i}"}] if i % 5 == 0 or i < 4 else [])
        docs.append({"_id": f"d{i:04d}", "owner": f"o{i % 4}", "events": events})
    return docs


def test_live_bench_classifies_the_functions_faults(live_url, live_db, tmp_path):
    from dragnet.bench.run import Bench, BenchConfig
    from dragnet.index.fault import blocking_runs
    from dragnet.index.design import Design
    from dragnet.errors import DragnetError
    from dragnet.servers.reference_engine import spec_for
    from dragnet.index.rows import read_rows

    try:
        couchjs = spec_for("javascript")
    except DragnetError as exc:
        pytest.skip(f"the reference engine must run here: {exc}")
    couch, db = live_db
    couch.put(f"/{db}?q=1")
    couch.post(f"/{db}/_bulk_docs", {"docs": _tie_docs()})
    cfg = BenchConfig(url=live_url, db=db, languages=["javascript", "javascript_quickjs"], repeat=1,
                      baseline=False, design=Design(doc=JS_DDOC, source="test"), results_dir=str(tmp_path / "b"),
                      ceiling=False)
    manifest = Bench(cfg).run()
    ref, other = manifest["runs"]
    assert (ref["status"], other["status"]) == ("ok", "ok")
    classes = other["comparison"]["classes"]
    # Math.random() differs between any two builds: the reference maps a document twice and sees it
    assert classes.get(fault.NONDETERMINISTIC_MAP, 0) >= 1
    # whatever else differs here is the latest-date reduce, and it is its own fault
    assert set(classes) <= {fault.NONDETERMINISTIC_MAP, fault.ORDER}
    assert blocking_runs(manifest["runs"]) == []
    assert blocking_runs(manifest["runs"], strict=True) == [other]
    full = json.loads((tmp_path / "b" / other["result_file"]).read_text())["comparison"]
    stamp = next(f for f in full["findings"] if f["query"] == "stamp.map")
    assert stamp["cls"] == fault.NONDETERMINISTIC_MAP and len(stamp["example"]["answers"]) == fault.MAP_REPEATS
    # the latest-date reduce over the rows CouchDB built, run again in couchjs itself: order-dependent, and
    # the smallest example is two rows with the same date
    rows = list(read_rows(ref["rows"]["latest.map"]))
    with ProcessEngine(couchjs, JS_DDOC["views"]["latest"]["map"]) as engine:
        check = fault.check_order(engine, JS_DDOC["views"]["latest"]["reduce"],
                                  fault.feeding_rows(rows, "group0", None))
    assert check.order_dependent and len(check.example.values) == 2
    a, b = (v[1] for v in check.example.values)
    assert a["date"] == b["date"] and a["who"] != b["who"]


def test_qsbench_check_reduce_names_the_order_dependent_reduce(tmp_path):
    from click.testing import CliRunner

    from dragnet.cli import main

    ddoc = {"_id": "_design/h", "language": "python3",
            "views": {"latest": {"map": MAP, "reduce": LATEST}, "total": {"map": MAP, "reduce": TOTAL}}}
    (tmp_path / "h.json").write_text(json.dumps(ddoc))
    with open(tmp_path / "docs.jsonl", "w") as fh:
        for d in DOCS.values():
            fh.write(json.dumps(d) + "\n")
    res = CliRunner().invoke(main, ["qsbench", "--ddoc", str(tmp_path / "h.json"), "--docs",
                                    str(tmp_path / "docs.jsonl"), "--servers", "python3", "--repeat", "1",
                                    "--warmup", "0", "--check-reduce", "--results", str(tmp_path / "r")],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "latest reduce: 1 × order-dependent reduce: python3 itself gives different results" in res.output
    assert "total reduce: python3 gave one result over 5 rows" in res.output
    [path] = (tmp_path / "r").glob("qsbench-*.json")
    checks = json.loads(path.read_text())["reduce_checks"]
    assert checks["latest"]["order_dependent"] and not checks["total"]["order_dependent"]
    assert len(checks["latest"]["example"]["values"]) == 2
