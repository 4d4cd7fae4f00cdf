#!/usr/bin/env python3
"""Target: with a 25 ms send tick at 200 reads/s dragnet-loadgen sends requests in bursts (bursts per request
under 0.5, and under 2/3 of the per-request sender's) and later (median lateness above a quarter tick and above
the per-request sender's). The baseline is the per-request sender (tick 0), run in the same trial against the
same database. Each run is `_ticked` of tests/test_load_compiled.py, which also checks its record.

    DRAGNET_TEST_COUCHDB_URL=http://admin:…@127.0.0.1:5984 .venv/bin/python benchmarks/speed_targets/load_tick.py [--trials 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from common import load, summary

from dragnet.couchdb.client import connect
from dragnet.load import compiled as C
from test_load_compiled import _ticked


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=5)
    a = ap.parse_args()
    url = os.environ.get("DRAGNET_TEST_COUCHDB_URL")
    if not url:
        print("load_tick: DRAGNET_TEST_COUCHDB_URL is not set", file=sys.stderr)
        return 2
    if C.resolve() != "go":
        print("load_tick: dragnet-loadgen is not built (make servers)", file=sys.stderr)
        return 2
    couch = connect(url)
    db = f"dragnet_speed_tick_{os.getpid()}"
    rate, tick = 200.0, 0.025
    ratios, held = [], []
    print(f"load average {load()}; {rate:g} reads/s, tick {tick * 1000:g} ms, {a.trials} trials")
    try:
        couch.request("PUT", f"/{db}", ok=(201, 202))
        couch.post(f"/{db}/_bulk_docs", {"docs": [{"_id": f"d{i:03d}"} for i in range(20)]})
        for t in range(1, a.trials + 1):
            per_request, late_0 = _ticked(couch, db, rate, 0.0)
            per_tick, late_tick = _ticked(couch, db, rate, tick)
            ok = per_tick < 0.5 and per_tick * 1.5 < per_request and late_tick > tick / 4 and late_tick > late_0
            ratios.append(per_tick / per_request)
            held.append(ok)
            print(f"trial {t}: bursts per request {per_tick:.3f} ticked / {per_request:.3f} per request "
                  f"= ×{per_tick / per_request:.3f}; median lateness {late_tick * 1000:.1f} / {late_0 * 1000:.1f} ms "
                  f"{'held' if ok else 'MISSED'}")
            time.sleep(0.1)
    finally:
        couch.request("DELETE", f"/{db}", ok=(200, 202, 404))
    return summary("ticked/per-request bursts per request", ratios, held)


if __name__ == "__main__":
    sys.exit(main())
