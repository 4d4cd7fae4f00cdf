"""Live: a load beside real builds (bench --load), keepup, and SIGTERM mid-load, against a real CouchDB."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dragnet.couchdb.client import connect, split_credentials

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parent.parent
MIX = "writes=20/s,updates=5/s,reads=20/s,view-reads=2/s,view-waits=1/s"


def _data(tmp_path, n):
    from tests.conftest import normalised_declarations

    p = tmp_path / "d.jsonl"
    p.write_text("".join(json.dumps({**d, "_id": f"gen:{i}"}) + "\n"
                         for i, d in enumerate(normalised_declarations(n, 3))))
    return p


def _run(live_url, tmp_path, *args, wait=True):
    base, user, password = split_credentials(live_url)
    env = {**os.environ, "COUCHDB_USER": user or "", "COUCHDB_PASSWORD": password or "", "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "dragnet", *args[:1], "--url", base, *args[1:]]
    if not wait:
        return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)


def _own_docs(couch, db):
    from dragnet.couchdb.client import CouchError

    try:
        rows = couch.get(f"/{db}/_all_docs?startkey=%22dragnet-load-%22&endkey=%22dragnet-load-%EF%BF%B0%22")["rows"]
    except CouchError as exc:     # not created yet
        if exc.status != 404:
            raise
        return []
    return [r["id"] for r in rows]


def _ddocs(couch, db):
    return [r["id"] for r in couch.get(f"/{db}/_all_docs?startkey=%22_design/%22&endkey=%22_design0%22")["rows"]]


def test_a_load_beside_a_build_is_recorded_checked_and_leaves_the_database_as_it_was(live_url, tmp_path):
    couch = connect(live_url)
    db = f"dragnet_load_{int(time.time())}"
    try:
        r = _run(live_url, tmp_path, "bench", "--db", db, "--data", str(_data(tmp_path, 600)), "--q", "2",
                 "--languages", "javascript", "--repeat", "2", "--no-baseline", "--no-ceiling",
                 "--load", f"none,{MIX}", "--results", str(tmp_path / "out"))
        assert r.returncode == 0, r.stdout + r.stderr
        m = json.loads((tmp_path / "out" / "bench.json").read_text())
        assert [run["axes"]["load"] for run in m["runs"]] == ["none", MIX, "none", MIX]
        assert all(run["status"] == "ok" for run in m["runs"])
        loaded = [json.loads((tmp_path / "out" / run["result_file"]).read_text()) for run in m["runs"]
                  if run["axes"]["load"] != "none"]
        for res in loaded:
            load = res["load"]
            assert load["writes_check"]["acknowledged"] > 0 and load["writes_check"]["lost"] == 0
            assert load["purge"]["left"] == 0 and load["purge"]["purged"] == load["purge"]["written"]
            assert load["kinds"]["writes"]["before"]["ok"] > 0 and load["kinds"]["reads"]["build"]["ok"] > 0
            assert load["kinds"]["view-reads"]["build"]["sent"] > 0 and "before" not in load["kinds"]["view-reads"]
            assert load["cpu_s"] > 0 and load["index"]["db_seq"] >= load["index"]["view_seq"]
            # the load's documents were purged before the rows were read: the same rows as the idle build
            assert res["repeat_comparison"]["differences"] == 0 if "repeat_comparison" in res else True
        # the database holds what it held: no load document, no design document left
        assert couch.get(f"/{db}")["doc_count"] == 600
        assert _own_docs(couch, db) == [] and _ddocs(couch, db) == []
        # the report shows the slowdown within each round and the requests
        rep = subprocess.run([sys.executable, "-m", "dragnet", "report", str(tmp_path / "out")], capture_output=True,
                             text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert "builds under load" in rep.stdout and "× slower" in rep.stdout and "view-reads" in rep.stdout
    finally:
        couch.request("DELETE", f"/{db}", ok=(200, 202, 404))


def test_keepup_steps_the_rate_and_says_up_to_where_the_index_keeps_up(live_url, tmp_path):
    couch = connect(live_url)
    db = f"dragnet_keepup_{int(time.time())}"
    try:
        r = _run(live_url, tmp_path, "keepup", "--db", db, "--data", str(_data(tmp_path, 300)),
                 "--languages", "javascript", "--rates", "5,10", "--window", "10", "--readers", "2/s",
                 "--results", str(tmp_path / "k"))
        assert r.returncode == 0, r.stdout + r.stderr
        assert "javascript, update=true readers at 2/s:" in r.stdout and "tried 5" in r.stdout
        res = json.loads((tmp_path / "k" / "keepup.json").read_text())
        assert res["schema"] == "dragnet.keepup/1"
        (mode,) = res["engines"][0]["modes"]
        first = mode["steps"][0]
        # each sample is three requests: on a loaded machine a 10 s window holds fewer than ten of them
        assert first["rate"] == 5.0 and len(first["samples"]) >= 2 and first["load"]["writes_check"]["acknowledged"] > 0
        assert all(s["lag"] is not None for s in first["samples"])
        steps = mode["steps"]
        if first["kept_up"]:
            assert mode["keeps_up_to"] == (10.0 if len(steps) > 1 and steps[1]["kept_up"] else 5.0)
        else:      # stepping stops at the first rate not kept up with
            assert mode["keeps_up_to"] is None and len(steps) == 1
        assert all(s["load"]["writes_check"]["lost"] == 0 and s["load"]["purge"]["left"] == 0 for s in mode["steps"])
        assert res["engines"][0]["ddoc_deleted"] and _ddocs(couch, db) == [] and _own_docs(couch, db) == []
        assert couch.get(f"/{db}")["doc_count"] == 300
    finally:
        couch.request("DELETE", f"/{db}", ok=(200, 202, 404))


def test_keepup_waits_for_a_full_build_longer_than_couchdbs_request_timeout(live_url):
    # at 40,000 documents a full build outlives [fabric] request_timeout (60 s): CouchDB answers 500 timeout
    # and the view request must be sent again; here the timeout is lowered so a small build outlives it
    from dragnet.bench.keepup import catch_up
    from dragnet.couchdb.client import CouchError
    from tests.conftest import normalised_declarations

    couch = connect(live_url)
    db = f"dragnet_keepup_timeout_{int(time.time())}"
    key = "/_node/_local/_config/fabric/request_timeout"
    try:
        before = couch.get(key)
    except CouchError:
        before = None
    couch.request("PUT", f"/{db}?q=2", ok=(201,))
    try:
        couch.request("POST", f"/{db}/_bulk_docs", json={"docs": list(normalised_declarations(3000, 3))}, ok=(201,))
        couch.request("PUT", f"/{db}/_design/t", ok=(201,), json={"language": "javascript", "views": {"v": {
            "map": "function (doc) { var s = 0; for (var i = 0; i < 50000; i++) { s += i; } emit(doc._id, s); }"}}})
        couch.request("PUT", key, json="1000", ok=(200,))
        try:
            with pytest.raises(CouchError, match="timeout"):    # CouchDB does time the request out
                couch.request("GET", f"/{db}/_design/t/_view/v?limit=1&update=true")
            took = catch_up(couch, f"/{db}/_design/t/_view/v?limit=1", 300)
        finally:
            if before is None:
                couch.request("DELETE", key, ok=(200,))
            else:
                couch.request("PUT", key, json=before, ok=(200,))
        from dragnet.load.spec import seq_number

        view_seq = seq_number(couch.get(f"/{db}/_design/t/_info")["view_index"]["update_seq"])
        assert took > 1 and view_seq == seq_number(couch.get(f"/{db}")["update_seq"]) >= 3000
    finally:
        couch.request("DELETE", f"/{db}", ok=(200, 202, 404))


def test_sigterm_mid_build_stops_the_load_first_and_leaves_nothing(live_url, tmp_path):
    couch = connect(live_url)
    db = f"dragnet_loadterm_{int(time.time())}"
    try:
        p = _run(live_url, tmp_path, "bench", "--db", db, "--data", str(_data(tmp_path, 600)), "--languages",
                 "javascript", "--repeat", "1", "--no-baseline", "--no-ceiling", "--load", "writes=30/s,reads=10/s",
                 "--results", str(tmp_path / "out"), wait=False)
        deadline = time.time() + 180
        while time.time() < deadline and not _own_docs(couch, db):   # the load is writing
            time.sleep(0.2)
        assert _own_docs(couch, db), "the load never wrote"
        time.sleep(6)       # past the window before the build
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 128 + signal.SIGTERM, out
        time.sleep(1)
        assert _own_docs(couch, db) == [] and _ddocs(couch, db) == [], out
        assert couch.get(f"/{db}")["doc_count"] == 600
        # no writer left running: at 30 writes/s a live one would add ~60 changes in these 2 s
        from dragnet.load.spec import seq_number
        seq = seq_number(couch.get(f"/{db}")["update_seq"])
        time.sleep(2)
        assert seq_number(couch.get(f"/{db}")["update_seq"]) == seq
    finally:
        couch.request("DELETE", f"/{db}", ok=(200, 202, 404))
