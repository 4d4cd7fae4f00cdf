"""`bench --gate` on a live CouchDB, on what the instruction count alone did not see (issue 47): a JavaScript
reduce added to a view fails; a reduce that throws is bad input (one line naming the view and the revision,
exit 2, nothing passed); a revision that changes only `_id`/`_rev` passes without a build.

Small data (300 documents): the gate's decisions here are far from the threshold.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from conftest import live_password, write_items

REPO = Path(__file__).resolve().parent.parent
BASE = REPO / "tests" / "ddocs" / "compare" / "base.json"


@pytest.fixture(scope="module")
def items(live_url, tmp_path_factory):
    """A data file of 300 small documents and a database name (the bench imports it; deleted afterwards)."""
    from dragnet.couchdb.client import connect, db_path

    data = write_items(tmp_path_factory.mktemp("items") / "items.jsonl", 300)
    db = f"dragnet_test_gate_{int(time.time())}"
    yield data, db
    connect(live_url).request("DELETE", db_path(db), ok=(200, 202, 404))


def _revision(tmp_path: Path, name: str, edit) -> Path:
    doc = json.loads(BASE.read_text())
    edit(doc)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return path


def _gate(live_url, items, new: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    from dragnet.couchdb.client import split_credentials

    base, _, _ = split_credentials(live_url)
    parts = urlsplit(live_url)
    env = {**os.environ, "COUCHDB_USER": unquote(parts.username) if parts.username else "admin",
           "COUCHDB_PASSWORD": live_password(live_url), "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "dragnet", "bench", "--url", base, "--db", items[1], "--data",
                           str(items[0]), "--ddoc", f"A={BASE}", "--ddoc", f"B={new}", "--languages", "javascript",
                           "--no-baseline", "--gate", "5%", "--max-runs", "8", "--results", str(out), *extra],
                          env=env, capture_output=True, text=True, timeout=1500)


@pytest.mark.live
def test_live_gate_fails_a_reduce_added(live_url, items, tmp_path):
    # the case: the maps are the same, the reduce CouchDB now calls in the query server is counted
    new = _revision(tmp_path, "reduce", lambda d: d["views"]["by_name"].update(
        reduce="function (keys, values, rereduce) { return rereduce ? sum(values) : values.length; }"))
    r = _gate(live_url, items, new, tmp_path / "gate", "--json")
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    out = json.loads(r.stdout)
    cmp = out["comparison"]
    assert "reduce of by_name added" in out["changes"] and cmp["roles"]["cpu"] == "judged"
    cell = cmp["cells"][0]
    assert cell["metric"] == "instructions" and cell["ci"][0] > 1.05 and "FAIL" in cmp["verdict"]
    builds = list((tmp_path / "gate").rglob("*-ddoc-B-*-javascript.json"))
    counts = [json.loads(b.read_text())["instructions"] for b in builds]
    assert counts and all(c["reduce_calls"] > 1 and c["counts"] == "maps, reduces and rereduces" for c in counts)
    assert live_password(live_url) not in r.stdout + r.stderr
    # the pull request's comment is the gate's own decision, what it judged on included; gate.json is --json's
    comment = (tmp_path / "gate" / "comment.md").read_text()
    assert "- changes: reduce of by_name added" in comment and "judged on instructions per document and CPU per document" in comment
    assert f"- verdict: {cmp['verdict']}" in comment
    assert json.loads((tmp_path / "gate" / "gate.json").read_text()) == out


@pytest.mark.live
def test_live_gate_refuses_a_throwing_reduce_in_one_line(live_url, items, tmp_path):
    new = _revision(tmp_path, "throws", lambda d: d["views"]["by_name"].update(
        reduce="function (keys, values, rereduce) { return values.nope.length; }"))
    r = _gate(live_url, items, new, tmp_path / "gate")
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-2000:]
    lines = r.stderr.strip().splitlines()
    assert lines[-1].startswith("dragnet: error: --gate: revision B: view by_name's reduce throws on the sample"), r.stderr
    assert "pass" not in r.stdout and not (tmp_path / "gate").exists()   # nothing judged, nothing passed


@pytest.mark.live
def test_live_gate_passes_an_id_only_revision_unbuilt(live_url, items, tmp_path):
    new = _revision(tmp_path, "other-id", lambda d: d.update({"_id": "_design/other", "_rev": "2-abc"}))
    r = _gate(live_url, items, new, tmp_path / "gate")
    assert r.returncode == 0 and "no change (only _id or _rev differ)" in r.stdout, r.stdout + r.stderr
    # nothing built: the folder holds only the decision
    assert sorted(p.name for p in (tmp_path / "gate").iterdir()) == ["comment.md", "gate.json"]
    assert not (tmp_path / "gate-warmup").exists()
    assert "no change (only _id or _rev differ)" in (tmp_path / "gate" / "comment.md").read_text()
