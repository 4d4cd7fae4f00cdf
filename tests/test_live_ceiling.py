"""The ceiling inside a real CouchDB: a bench builds it next to the engines, maps only and without a row
check, and the report gives each engine's share. Needs DRAGNET_TEST_COUCHDB_URL (a CouchDB started by
`dragnet couch up`, which registers the ceiling)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from test_live_design import APP_JSON, N_DOCS, app_db  # noqa: F401  (app_db: the same module fixture)

from dragnet.bench import run as bench
from dragnet.cli import main


def _bench(live_url, db, out, *extra):
    r = CliRunner().invoke(main, ["bench", "--url", live_url, "--db", db, "--ddoc", str(APP_JSON), "--languages",
                                  "javascript", "--repeat", "2", "--no-baseline", "--results", str(out), *extra])
    return r, json.loads((out / "bench.json").read_text())


@pytest.mark.live
def test_live_bench_builds_the_ceiling_maps_only_and_reports_the_share(live_url, app_db, tmp_path):
    couch, db = app_db
    r, manifest = _bench(live_url, db, tmp_path / "b")
    assert r.exit_code == 0, r.output
    runs = [x for x in manifest["runs"] if x["language"] == bench.CEILING]
    if any("unknown_query_language" in (x.get("error") or "") for x in runs):
        pytest.skip("this CouchDB was not started by `dragnet couch up`: no ceiling query server")
    assert [x["status"] for x in manifest["runs"]] == ["ok"] * 4
    assert [x["language"] for x in manifest["runs"]] == ["ceiling", "javascript"] * 2
    for run in runs:
        res = json.loads((tmp_path / "b" / run["result_file"]).read_text())
        # one fixed row per document for each of the design doc's three maps, nothing compared
        assert res["summary"]["rows"] == N_DOCS and "rows" not in run and "comparison" not in run
        # what was built on it: every map, the built-in reduce kept, the JavaScript one left out
        assert res["view"]["maps_only"] == {"by_year": "_stats", "income_by_person": None, "name_words": None}
        assert res["pidstat"]["summary"].get("ceiling", {}).get("intervals", 1) >= 1
    assert "engine share" in r.output and "javascript" in r.output
    # the report's JSON: javascript against the ceiling, paired over the two rounds, which give a share but
    # no interval (n=2), as every figure of dragnet
    rep = CliRunner().invoke(main, ["report", str(tmp_path / "b"), "--format", "json"])
    assert rep.exit_code == 0, rep.output
    (load,) = json.loads(rep.output)["engine_share"]
    js = next(e for e in load["engines"] if e["engine"] == "javascript")
    assert js["share"]["paired"] and js["share"]["n"] == 2 and js["share"]["point"] < 1
    assert js["share"]["lo"] is None and js["share"]["hi"] is None
    assert "[n=2: no interval]" in r.output
    assert js["x_ceiling"] is not None and js["split"]["builds"] == 2
    # no copy of the design doc is left, the ceiling's included
    assert [row["id"] for row in couch.get(f"/{db}/_design_docs")["rows"]] == []


@pytest.mark.live
def test_live_no_ceiling_builds_none(live_url, app_db, tmp_path):
    _couch, db = app_db
    r, manifest = _bench(live_url, db, tmp_path / "b", "--no-ceiling", "--repeat", "1")
    assert r.exit_code == 0, r.output
    assert [x["language"] for x in manifest["runs"]] == ["javascript"]
