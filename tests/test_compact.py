"""Compacting an index once built (dragnet.index.compact): when it is over and settled, and against CouchDB."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dragnet.index import compact as cp
from dragnet.cli import main
from dragnet.report.render import build_text as build_text

MIB = 1024 ** 2


def test_settled_is_a_file_little_beyond_its_active_data():
    assert cp.settled({"file": 105 * MIB, "active": 100 * MIB})
    assert not cp.settled({"file": 300 * MIB, "active": 100 * MIB})      # a build's garbage still in it
    # a small index: its shards' headers alone are more than 10 %
    assert cp.settled({"file": 900_000, "active": 200_000})
    assert not cp.settled({"file": 3 * MIB, "active": 200_000})
    assert not cp.settled(None) and not cp.settled({"file": 10})


def test_finished_waits_for_the_compaction_to_show_or_the_grace():
    assert not cp.finished({"compact_running": True}, True, 5.0)
    assert cp.finished({"compact_running": False}, True, 0.0)
    # not seen yet: it may not have begun, or have ended before the first look
    assert not cp.finished({"compact_running": False}, False, 0.5, grace=1.0)
    assert cp.finished({"compact_running": False}, False, 1.0, grace=1.0)


def test_format_line_says_the_final_size_or_why_not():
    line = build_text.format_compaction({"before": {"file": 30 * MIB, "active": 5 * MIB}, "sizes": {"file": 4.5 * MIB,
                           "active": 4.2 * MIB}, "seconds": 1.25, "rounds": 1, "settled": True})
    assert line == ("index once compacted = 4.5 MiB (live data 4.2 MiB; right after the build 30.0 MiB, live "
                    "5.0 MiB), 1.2 s")
    assert build_text.format_compaction({"error": "compacting x: refused"}) == "compaction: compacting x: refused"
    assert "not settled after 3 compactions" in build_text.format_compaction({"rounds": 3, "settled": False})


# ---- live

def _docs(n: int) -> list[dict]:
    return [{"_id": f"d{i:06d}", "n": i, "words": ["w%d" % (i % 97), "v%d" % (i % 31)] * 8} for i in range(n)]


@pytest.mark.live
def test_live_compact_index_leaves_a_settled_file_no_bigger(live_db):
    from dragnet.couchdb.client import db_path

    couch, db = live_db
    couch.request("PUT", f"{db_path(db)}?q=4", ok=(201, 202))
    for i in range(0, 6000, 1000):
        couch.post(f"{db_path(db)}/_bulk_docs", {"docs": _docs(6000)[i:i + 1000]})
    couch.put(f"{db_path(db)}/_design/c", {"views": {"v": {
        "map": "function(doc){ doc.words.forEach(function(w){ emit([w, doc.n], doc.words); }); }"}}})
    couch.get(f"{db_path(db)}/_design/c/_view/v?limit=1", timeout=300)
    out = cp.compact_index(couch, db, "_design/c", timeout=300)
    assert "error" not in out and out["settled"] and out["rounds"] >= 1, out
    assert out["sizes"]["file"] <= out["before"]["file"] and out["seconds"] >= 0
    vi = couch.get(f"{db_path(db)}/_design/c/_info")["view_index"]
    assert not vi["compact_running"] and cp.settled(vi["sizes"])
    # a design document that is not there: one line, no exception
    gone = cp.compact_index(couch, db, "_design/missing", timeout=30)
    assert gone["error"].startswith("compacting _design/missing in ") and "404" in gone["error"]


@pytest.mark.live
def test_live_addview_benchmark_compact_reports_the_final_size(live_url, live_db, tmp_path):
    from dragnet.couchdb.client import db_path

    couch, db = live_db
    couch.request("PUT", db_path(db), ok=(201, 202))
    couch.post(f"{db_path(db)}/_bulk_docs", {"docs": _docs(2000)})
    view = tmp_path / "v.js"
    view.write_text("function(doc){ emit(doc.n, doc.words); }\n")
    r = CliRunner().invoke(main, ["addview", str(view), "--url", live_url, "--db", db, "--benchmark", "--compact",
                                  "--no-pidstat", "--results", str(tmp_path / "res"), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output.strip().splitlines()[-1])
    c = out["compacted"]
    assert c["settled"] and c["sizes"]["file"] > 0 and c["before"]["file"] > 0
    saved = json.loads(Path(out["results_file"]).read_text())
    assert saved["sizes"]["compacted"] == c
    r = CliRunner().invoke(main, ["addview", str(view), "--url", live_url, "--db", db, "--compact"])
    assert r.exit_code != 0 and "--compact goes with --benchmark" in r.output
