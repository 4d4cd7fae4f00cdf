#!/usr/bin/env python3
"""Target: a cold Erlang-baseline build inside a small memory group (12 MiB, so the database cannot sit in the
page cache) and the `hdd-150iops` throttle is slower than an unlimited warm build of the same database (the
baseline, run in the same trial), and CouchDB's own reads, counted by the throttled group, stay at the
throttle's rate (≤ 150 × 1.2 per second). The database (--docs of ~10 KB of incompressible text) must be over
twice the memory limit. Needs root, a live CouchDB on this machine whose data is on a block device, and
writable memory and blkio/io cgroups (the same as tests/test_scenario.py's live test).

    DRAGNET_TEST_COUCHDB_URL=http://admin:…@127.0.0.1:5984 .venv/bin/python benchmarks/speed_targets/scenario.py [--trials 3]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import tempfile
from pathlib import Path

from common import load, summary

from dragnet.axes import scenario
from dragnet.bench import run as bench
from dragnet.couchdb import limits
from dragnet.couchdb.client import connect
from dragnet.data import ensure


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--docs", type=int, default=10000)
    ap.add_argument("--limit-mib", type=float, default=12.0)
    a = ap.parse_args()
    url = os.environ.get("DRAGNET_TEST_COUCHDB_URL")
    couch = connect(url) if url else None
    pid = scenario.couch_pid(url) if url else None
    ddir = scenario.data_dir(couch, pid) if pid else None
    layout = limits.detect()
    if ddir is None or os.major(os.stat(ddir).st_dev) == 0 or layout.memory is None or layout.blkio is None:
        print("scenario: needs DRAGNET_TEST_COUCHDB_URL of a CouchDB on this machine on a block device, and "
              "writable memory and blkio cgroups (root)", file=sys.stderr)
        return 2
    db, limit = f"dragnet_speed_disk_{os.getpid()}", int(a.limit_mib * 1024**2)
    tmp = tempfile.TemporaryDirectory(prefix="dragnet-speed-")     # cleaned up at exit, however the run ends
    data = Path(tmp.name) / "docs.jsonl"
    with data.open("w") as fh:
        for i in range(a.docs):
            fh.write(json.dumps({"_id": f"d{i:06d}", "n": i, "pad": base64.b64encode(os.urandom(7500)).decode()}) + "\n")
    ratios, held = [], []
    try:
        ensure.ensure_data(couch, db, data, q=2)
        size = couch.get(f"/{db}")["sizes"]["file"]
        print(f"load average {load()}; database {size / 1024**2:.0f} MiB, memory limit {a.limit_mib:g} MiB, "
              f"{a.trials} trials")
        if size <= 2 * limit:
            print(f"scenario: the database ({size:,} bytes) must be over twice the limit: raise --docs", file=sys.stderr)
            return 2
        for t in range(1, a.trials + 1):
            res = {}
            for sc in (scenario.Scenario(None, limits.PROFILES["unlimited"], "warm"),
                       scenario.Scenario(limit, limits.PROFILES["hdd-150iops"], "cold")):
                ddoc = f"t_{sc.profile.name.replace('-', '_')}"
                res[sc.profile.name] = scenario.run_in(sc, couch, url, db, ddoc, lambda: bench.default_build(
                    couch, url, db, bench.LANGUAGES["erlang_baseline"], bench.BASELINE_VIEW, ddoc, "disk"))
                bench.cleanup(couch, db, f"_design/{ddoc}", timeout=60)
            fast, slow = res["unlimited"]["summary"], res["hdd-150iops"]["summary"]
            if not (fast.get("ok") and slow.get("ok")):
                print(f"trial {t}: a build failed: {slow.get('outcome') or fast.get('outcome')}")
                held.append(False)
                continue
            ratio = fast["docs_per_sec_wall"] / slow["docs_per_sec_wall"]
            iops = res["hdd-150iops"]["iostat"]["cgroup"]["read_ios_per_s"]
            ok = ratio > 1 and iops <= 150 * 1.2
            ratios.append(ratio)
            held.append(ok)
            print(f"trial {t}: warm unlimited {fast['docs_per_sec_wall']:,.0f} docs/s, cold throttled "
                  f"{slow['docs_per_sec_wall']:,.0f} docs/s: ×{ratio:.2f} slower; CouchDB's reads {iops:.0f}/s "
                  f"{'held' if ok else 'MISSED'}")
    finally:
        couch.request("DELETE", f"/{db}", ok=(200, 202, 404))
    return summary("warm/cold docs per second", ratios, held)


if __name__ == "__main__":
    sys.exit(main())
