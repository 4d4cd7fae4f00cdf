"""--update: the plan of edits and new docs (no server), and a live run that reports a lag and undoes its writes."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import normalised_declarations

from dragnet.index import update as update
from dragnet.errors import UsageError

APP = Path(__file__).resolve().parent / "ddocs" / "app"


def test_plan_half_edits_spread_over_the_ids_in_batches():
    ids = [f"doc{i:04d}" for i in range(1000)] + ["_design/app"]
    p = update.plan(ids, 500, batch=40)
    assert len(p.edits) == 250 and p.new == 250 and len(set(p.edits)) == 250
    assert "_design/app" not in p.edits
    assert p.edits[0] < "doc0100" and p.edits[-1] > "doc0900"       # not the first 250 ids
    batches = p.batches([f"n{i}" for i in range(p.new)])
    assert [len(b) for b in batches] == [40] * 12 + [20]
    kinds = [k for b in batches for k, _ in b]
    assert kinds.count("edit") == 250 and kinds.count("new") == 250 and kinds[:4] == ["edit", "new"] * 2


def test_plan_mix_and_bad_input():
    assert update.plan(["a", "b"], 10, edit_share=0.0).new == 10
    assert update.plan(["a", "b", "c", "d"], 4, edit_share=1.0).edits == ["a", "b", "c", "d"]
    with pytest.raises(UsageError, match="needs 3 documents; the database has 2"):
        update.plan(["a", "b"], 3, edit_share=1.0)
    with pytest.raises(UsageError, match="a share between 0 and 1"):
        update.plan(["a"], 1, edit_share=1.5)


@pytest.mark.live
def test_live_update_reports_a_lag_and_undoes_its_writes(live_url, tmp_path):
    from dragnet.data import ensure as ensure
    from dragnet.data import importer as importer
    from dragnet.cli import main
    from dragnet.couchdb.client import connect, db_path

    couch = connect(live_url)
    db = f"dragnet_test_update_{int(time.time())}"
    docs = normalised_declarations(300, 7)
    importer.import_documents(couch, db, ((f"gen:{i}", json.dumps(d)) for i, d in enumerate(docs)),
                              importer.ImportOptions(q=2))
    try:
        args = ["addview", "--url", live_url, "--db", db, "--ddoc", str(APP), "--benchmark", "--update", "500",
                "--no-pidstat", "--results", str(tmp_path), "--json"]
        refused = CliRunner().invoke(main, args)
        assert refused.exit_code == 2 and "--allow-writes" in refused.output
        couch.put(f"{db_path(db)}/{ensure.IMPORT_MARKER}", {"test": True})       # as bench's import leaves it
        before = couch.get(db_path(db))["doc_count"]
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 0, r.output
        res = json.loads(next(tmp_path.glob("addview-*.json")).read_text())
        u = res["update"]
        assert u["changes"] == 500 and u["edits"] == 250 and u["new"] == 250 and u["cleaned_up"]
        assert u["lag_s"] > 0 and res["summary"]["update_lag_s"] == u["lag_s"] and u["polls"]
        assert couch.get(db_path(db))["doc_count"] == before
        edited = couch.get(f"{db_path(db)}/_all_docs", params={"include_docs": "true"})["rows"]
        assert not any(update.FIELD in row["doc"] for row in edited)
        assert couch.get(f"{db_path(db)}/_design_docs")["rows"] == []          # the copy is gone
    finally:
        couch.request("DELETE", db_path(db), ok=(200, 202, 404))
