"""A team's design document benchmarked on several engines against a real CouchDB (DRAGNET_TEST_COUCHDB_URL).

The original design document and its index stay as they were; every engine's rows and reduce results are
compared with the reference engine's; an engine that answers differently is caught.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import generated_db, live_password

from dragnet.cli import main
from dragnet.couchdb.client import db_path

APP_JSON = Path(__file__).resolve().parent / "ddocs" / "app.json"
N_DOCS = 200


@pytest.fixture(scope="module")
def app_db(live_url):
    with generated_db(live_url, "dragnet_test_design", N_DOCS, 31) as (couch, name, _docs):
        yield couch, name


def _bench(live_url, db, source, languages, out):
    r = CliRunner().invoke(main, ["bench", "--url", live_url, "--db", db, "--ddoc", source, "--languages", languages,
                                  "--repeat", "1", "--no-baseline", "--no-ceiling", "--results", str(out)])
    manifest = json.loads((out / "bench.json").read_text())
    missing = [x for x in manifest["runs"] if "unknown_query_server" in (x.get("error") or "")]
    if missing:
        pytest.skip(f"this CouchDB lacks a query server: {missing[0]['error']}")
    return r, manifest


@pytest.mark.live
def test_live_design_doc_on_three_engines_equal_rows_and_original_untouched(live_url, app_db, tmp_path):
    couch, db = app_db
    original = json.loads(APP_JSON.read_text())
    original.pop("_rev")
    rev = couch.put(f"{db_path(db)}/_design/app", original)["rev"]
    view = f"{db_path(db)}/_design/app/_view/by_year"
    rows_before = couch.get(view, params={"reduce": "false"})["rows"]     # its index exists
    info_before = couch.get(f"{db_path(db)}/_design/app/_info")["view_index"]

    r, manifest = _bench(live_url, db, f"{live_url}/{db}/_design/app", "javascript,javascript_quickjs,chakra",
                         tmp_path / "b")
    assert r.exit_code == 0, r.output
    password = live_password(live_url)
    assert password not in r.output and password not in (tmp_path / "b" / "bench.json").read_text()
    runs = {x["language"]: x for x in manifest["runs"]}
    assert all(x["status"] == "ok" for x in runs.values()), manifest["runs"]
    assert "comparison" not in runs["javascript"]          # the reference
    for lang in ("javascript_quickjs", "chakra"):
        cmp = runs[lang]["comparison"]
        assert cmp["reference"] == "javascript" and cmp["differences"] == 0
        assert cmp["rows_compared"] > N_DOCS
        res = json.loads((tmp_path / "b" / runs[lang]["result_file"]).read_text())
        queries = res["comparison"]["queries"]
        # map rows of every view, and the reduces at group_level 0, 1 and exact
        assert {"by_year.map", "by_year.group0", "by_year.group1", "by_year.exact", "income_by_person.exact",
                "name_words.map"} <= set(queries)
        assert queries["by_year.group0"]["rows_other"] == 1 and queries["name_words.map"]["compared"] == N_DOCS
    # the original design document and its index are as they were; no copy is left
    assert couch.get(f"{db_path(db)}/_design/app")["_rev"] == rev
    info_after = couch.get(f"{db_path(db)}/_design/app/_info")["view_index"]
    assert info_after["signature"] == info_before["signature"]
    # the copies' own saves and deletions are changes of the database that the original's index may
    # catch up on (CouchDB's background indexer), but its rows stay the same
    assert info_before["update_seq"] <= info_after["update_seq"] <= info_before["update_seq"] + 2 * len(manifest["runs"])
    assert couch.get(view, params={"reduce": "false", "stale": "ok"})["rows"] == rows_before
    assert [row["id"] for row in couch.get(f"{db_path(db)}/_design_docs")["rows"]] == ["_design/app"]


@pytest.mark.live
def test_live_engine_that_answers_differently_is_caught(live_url, app_db, tmp_path):
    couch, db = app_db
    doc = json.loads(APP_JSON.read_text())
    # optional chaining in a lib (ChakraCore lacks it) and Intl (QuickJS lacks it)
    doc["views"]["lib"]["modern"] = "exports.year = function (d) { return d.step_0?.declarationYear1 ?? null; };"
    doc["views"]["engine"] = {"map": "function (doc) { var m = require('views/lib/modern');"
                                     " emit(doc._id, [m.year(doc), typeof Intl]); }"}
    source = tmp_path / "modern.json"
    source.write_text(json.dumps(doc))
    r, manifest = _bench(live_url, db, str(source), "javascript,chakra,javascript_quickjs", tmp_path / "b")
    assert r.exit_code == 1, r.output
    runs = {x["language"]: x for x in manifest["runs"]}
    assert all(x["status"] == "ok" for x in runs.values()), manifest["runs"]
    assert runs["chakra"]["comparison"]["differences"] == N_DOCS        # every doc: the lib fails to compile
    assert runs["javascript_quickjs"]["comparison"]["differences"] == N_DOCS   # typeof Intl
    assert "DIFFERENT: chakra" in r.output and "DIFFERENT: javascript_quickjs" in r.output
    assert '"object"' in r.output and '"undefined"' in r.output        # both values shown
