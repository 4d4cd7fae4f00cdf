"""`bench --repeat auto` on a live CouchDB: two engines of one design doc, a warm-up round apart, then rounds
paired by round until decided or --max-runs (small data, so it is short)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import live_password

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.live


def test_auto_rounds_rank_two_engines_paired_by_round(live_url, tmp_path):
    from urllib.parse import unquote, urlsplit

    from dragnet.couchdb.client import connect, db_path, split_credentials

    rng = random.Random(3)
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps({"_id": f"item-{i:04d}", "type": "item", "group": f"g{i % 7}",
                                        "name": f"n{rng.randrange(10**6)}", "values": [rng.randrange(99)] * 5}) + "\n"
                            for i in range(300)))
    db = f"dragnet_test_auto_{int(time.time())}"
    base, _, _ = split_credentials(live_url)
    parts = urlsplit(live_url)
    env = {**os.environ, "COUCHDB_USER": unquote(parts.username) if parts.username else "admin",
           "COUCHDB_PASSWORD": live_password(live_url)}
    out = tmp_path / "auto"
    try:
        r = subprocess.run([sys.executable, "-m", "dragnet", "bench", "--url", base, "--db", db, "--data", str(data),
                            "--ddoc", str(REPO / "tests" / "ddocs" / "compare" / "base.json"),
                            "--languages", "javascript,javascript_quickjs", "--no-baseline", "--no-ceiling",
                            "--max-runs", "5", "--results", str(out), "--json"],
                           env=env, capture_output=True, text=True, timeout=900, cwd=REPO)
    finally:
        connect(live_url).request("DELETE", db_path(db), ok=(200, 202, 404))
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout)["auto"]
    assert doc["rounds"] == 5 and doc["stopped"] in ("decided", "max-runs")
    (pair,) = doc["pairs"]
    assert {pair["faster"], pair["slower"]} == {"javascript", "javascript_quickjs"}
    assert pair["interval"]["paired"] and pair["interval"]["n"] == 5 and pair["metric"] == "cpu"
    # the warm-up built both once, apart; every round folder holds one build of each, with the round's own id
    warm = sorted(Path(doc["warmup"]).glob("*.json"))
    assert len([w for w in warm if w.name != "bench.json"]) == 2
    for d in doc["rounds_dirs"]:
        builds = [json.loads(f.read_text()) for f in Path(d).glob("*.json") if f.name != "bench.json"]
        assert sorted(b["bench"]["language"] for b in builds) == ["javascript", "javascript_quickjs"]
        assert len({b["bench"]["id"] for b in builds}) == 1
        assert all(b["summary"]["cpu_s_per_1000_docs"] > 0 for b in builds)
        # the query servers' own CPU, from their threads: some, and less than CouchDB's and theirs together
        for b in builds:
            qs = b["cpu"]["query_servers"]
            assert 0 < qs["cpu_s"] and qs["processes"] >= 1 and qs["samples"] >= 1
            assert 0 < b["summary"]["qs_cpu_s_per_1000_docs"] < b["summary"]["cpu_s_per_1000_docs"] * 1.2
