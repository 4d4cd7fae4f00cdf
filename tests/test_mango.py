"""dragnet.index.mango: index definitions, and the JavaScript map that emits what the Mango index holds.

The generated map runs in a real JavaScript engine (dragnet's Node.js query server) over documents whose
expected rows follow CouchDB 3.5's mango_selector/mango_doc rules; the live test builds an index with
Mango and with couchjs and compares their rows."""

from __future__ import annotations

import json
import os
import statistics
import time

import pytest

from dragnet.index import mango as mango
from dragnet.bench import mango as mango_bench
from dragnet.report import mango as report_mango
from dragnet.errors import DragnetError, UsageError


def test_parse_post_bodies_and_listing():
    [a] = mango.parse_indexes({"index": {"fields": ["a", {"b.c": "desc"}]}, "name": "ab"}, "f.json")
    assert a.fields == ("a", "b.c") and a.partial_filter_selector is None
    listing = {"total_rows": 2, "indexes": [
        {"ddoc": None, "name": "_all_docs", "type": "special", "def": {"fields": [{"_id": "asc"}]}},
        {"ddoc": "_design/x", "name": "p", "type": "json",
         "def": {"fields": [{"a": "asc"}], "partial_filter_selector": {"t": "x"}}}]}
    [p] = mango.parse_indexes(listing, "URL")
    assert p.name == "p" and p.partial_filter_selector == {"t": "x"} and p.ddoc == "_design/x"
    assert p.body() == {"index": {"fields": ["a"], "partial_filter_selector": {"t": "x"}}, "name": "p",
                        "type": "json"}


@pytest.mark.parametrize("body, message", [
    ({"index": {"fields": []}, "name": "e"}, "index 'e': \"fields\" must be a non-empty list"),
    ({"index": {"fields": ["a"]}, "name": "t", "type": "text"}, "only Mango JSON indexes"),
    ({"index": {"fields": ["a"], "partial_filter_selector": {"a": {"$regex": "^x"}}}, "name": "r"},
     "operator $regex is not translated"),
    ({"index": {"fields": [{"a": "up"}]}, "name": "d"}, "sort direction must be asc or desc"),
    ({"index": {"fields": ["a\\.b"]}, "name": "x"}, "not a dotted path"),
])
def test_bad_definitions_are_one_line_errors(body, message):
    with pytest.raises(UsageError, match=message.replace("$", r"\$")):
        mango.parse_indexes(body, "f.json")


def test_duplicate_names_refused(tmp_path):
    f = tmp_path / "i.json"
    f.write_text(json.dumps([{"index": {"fields": ["a"]}, "name": "n"}, {"index": {"fields": ["b"]}, "name": "n"}]))
    with pytest.raises(UsageError, match="'n' given twice"):
        mango.load(str(f))
    with pytest.raises(UsageError, match="no such file"):
        mango.load(str(tmp_path / "missing.json"))


def test_js_design_shares_the_report_id():
    ix = mango.Index("by type/x", ("t",))
    d = mango.js_design(ix)
    assert d.id == ix.design_id == "_design/mango-by_type_x"
    assert d.doc["views"]["by type/x"]["reduce"] == "_count"


def test_versus_ratio_and_significance():
    vs = mango_bench.versus("ix", {"mango": [200.0, 210, 190, 205], "javascript": [100.0, 98, 105, 101],
                                   "bun": [200.0, 205, 195, 210]})
    by = {v.engine: v for v in vs}
    assert by["javascript"].ratio == pytest.approx(statistics.geometric_mean([200.0, 210, 190, 205])
                                                   / statistics.geometric_mean([100.0, 98, 105, 101]))
    assert by["javascript"].decided
    assert not by["bun"].decided
    line = report_mango.versus_lines([v.as_dict() for v in vs])[0]
    assert "Mango ×1.99 javascript [" in line and "unpaired, 4 vs 4 runs: separated" in line


# documents and the rows Mango's rules give them (key [a, b.c] for those with both fields and t > 3)
DOCS = [
    {"_id": "1", "a": 1, "b": {"c": 2}, "t": 5},              # indexed
    {"_id": "2", "a": 1, "t": 5},                             # no b.c: not indexed
    {"_id": "3", "a": "s", "b": {"c": None}, "t": "z"},      # null is present; a string is > 3 in collation
    {"_id": "4", "a": 2, "b": {"c": 1}, "t": 3},              # t not > 3
    {"_id": "5", "a": 2, "b": [{"c": 1}], "t": 9},            # b.c through an array without an index: missing
    {"_id": "6", "a": [1], "b": {"c": {"d": 1}}, "t": [0]},  # arrays sort after numbers
    {"_id": "7", "a": 1, "b": {"c": 1}},                      # no t: fails $gt
]
EXPECTED = {"1": [[1, 2]], "3": [["s", None]], "6": [[[1], {"d": 1}]]}


def _node_engine(map_source):
    from dragnet.servers.reference_engine import ProcessEngine, spec_for

    try:
        spec = spec_for("node")
    except DragnetError as exc:
        pytest.skip(str(exc))
    return ProcessEngine(spec, map_source)


def test_generated_map_follows_mango_rules_in_a_js_engine():
    ix = mango.Index("ab", ("a", "b.c"), {"t": {"$gt": 3}})
    with _node_engine(mango.js_map(ix)) as engine:
        got = {d["_id"]: [row[0] for row in engine.map_doc(d)[0]] for d in DOCS}
        first = engine.map_doc(DOCS[0])
    assert {k: v for k, v in got.items() if v} == EXPECTED
    assert first == [[[[1, 2], None]]]          # one row, value null, as Mango's


SELECTORS = [
    ({"t": {"$in": [5, 9]}}, {"1", "2", "5"}),
    ({"t": {"$nin": [5, 9]}}, {"3", "4", "6"}),             # missing t fails $nin too
    ({"t": {"$exists": False}}, {"7"}),
    ({"$or": [{"t": 3}, {"a": "s"}]}, {"3", "4"}),
    ({"$nor": [{"t": 5}, {"t": 9}]}, {"3", "4", "6"}),      # negated to $ne: a missing t fails
    ({"$not": {"t": {"$exists": True}}}, {"7"}),
    ({"$not": {"$or": [{"t": 5}, {"a": 1}]}}, {"3", "4", "5", "6"}),
    ({"$not": {"b": {"c": 1}}}, {"1", "3", "6"}),
    ({"t": {"$not": {"$lt": 5}}}, {"1", "2", "3", "5", "6"}),
    ({"b": {"c": 1}}, {"4", "7"}),                           # nested object: the dotted field b.c
    ({"t": {"$gte": 3, "$lte": 5}}, {"1", "2", "4"}),
    ({"t": [0]}, {"6"}),
    ({"t": {"$ne": 5}}, {"3", "4", "5", "6"}),
]


@pytest.mark.parametrize("selector, ids", SELECTORS)
def test_selector_operators(selector, ids):
    ix = mango.Index("one", ("_id",), selector)
    with _node_engine(mango.js_map(ix)) as engine:
        got = {d["_id"] for d in DOCS if engine.map_doc(d)[0]}
    assert got == ids


def test_live_mango_and_javascript_give_the_same_rows(live_url, live_db, tmp_path):
    from dragnet.bench.run import BenchConfig

    couch, db = live_db
    couch.put(f"/{db}")
    couch.post(f"/{db}/_bulk_docs", {"docs": DOCS})
    indexes = [mango.Index("ab", ("a", "b.c"), {"t": {"$gt": 3}}), mango.Index("none", ("nowhere",))]
    cfg = BenchConfig(url=live_url, db=db, languages=["javascript"], repeat=1, baseline=False,
                      results_dir=str(tmp_path / "res"))
    summary = mango_bench.run(cfg, indexes)
    by = {ix["name"]: ix for ix in summary["indexes"]}
    assert by["ab"]["rows"] == 3 and by["none"]["rows"] == 0
    runs = by["ab"]["manifest"]["runs"]
    assert [(r["language"], r["status"]) for r in runs] == [("mango", "ok"), ("javascript", "ok")]
    assert runs[1]["comparison"]["differences"] == 0 and runs[1]["comparison"]["rows_compared"] > 0
    assert all(r["sizes"]["after"]["index"]["file"] > 0 for r in runs)     # read before the copy went
    assert summary["warnings"] == [mango.empty_warning(indexes[1], 0)]
    assert [v["engine"] for v in summary["versus"]] == ["javascript", "javascript"]
    assert (tmp_path / "res" / "mango.json").is_file()
    # the benchmark's design docs are gone
    left = couch.get(f"/{db}/_all_docs", params={"startkey": '"_design/"', "endkey": '"_design0"'})["rows"]
    assert left == []
    with pytest.raises(UsageError, match="mango index 'bad': CouchDB refused it: invalid_operator"):
        mango_bench.prepare(live_url, [mango.Index("bad", ("a",), {"a": {"$foo": 1}})])


def test_live_selectors_match_couchdbs_own_find(live_url, live_db):
    """The expectations above are CouchDB's: _find with each selector returns the same documents; and a
    live URL/db/_index listing reads back as the definitions."""
    couch, db = live_db
    couch.put(f"/{db}")
    couch.post(f"/{db}/_bulk_docs", {"docs": DOCS})
    for selector, ids in SELECTORS:
        found = couch.post(f"/{db}/_find", {"selector": selector, "fields": ["_id"], "limit": 100})["docs"]
        assert {d["_id"] for d in found} == ids, selector
    couch.post(f"/{db}/_index", {"index": {"fields": ["a"], "partial_filter_selector": {"t": {"$gt": 3}}},
                                 "name": "a-gt3", "ddoc": "idx"})
    # GET _index once listed none right after POST _index answered (CouchDB caches the list): wait for it
    deadline = time.monotonic() + 30
    while True:
        try:
            [ix] = mango.load(f"{live_url}/{db}/_index")
            break
        except UsageError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    assert (ix.name, ix.fields, ix.partial_filter_selector) == ("a-gt3", ("a",), {"t": {"$gt": 3}})


def test_report_puts_mango_builds_inside_beam():
    from dragnet.report.tables import qs_family_of
    from dragnet.results.record import Build as Run

    leftover = {"beam": {"cpu_mean": 60.0}, "quickjs": {"cpu_mean": 3.0}}   # idle servers of earlier builds
    assert qs_family_of([Run("mango", "disk", 0.0, True, language="query", resources=leftover)]) is None
    assert qs_family_of([Run("javascript_quickjs", "disk", 0.0, True, language="javascript_quickjs",
                             resources=leftover)]) == "quickjs"


def test_versus_per_round_ratio():
    runs = [{"language": lang, "status": "ok", "storage": "disk", "repeat": rep, "docs_per_sec_wall": dps}
            for rep, (m, j) in enumerate([(200.0, 100.0), (100.0, 50.0), (300.0, 150.0), (120.0, 60.0)])
            for lang, dps in (("mango", m), ("javascript", j))]
    [v] = mango_bench.versus("ix", mango_bench.rates_of(runs), mango_bench.rounds_of(runs))
    assert v.ratio == pytest.approx(2.0)
    # every round Mango twice as fast: decide's paired interval has no spread at all
    assert v.paired and v.state == "separated" and (v.ci_low, v.ci_high) == pytest.approx((2.0, 2.0))
    assert "Mango ×2.00 javascript [2.00 … 2.00] (99% paired by round, 4 vs 4 runs: separated)" == \
        report_mango.versus_text(v)
