"""Compacting an index once it is built, for the size it settles at: the final index size a forecast gives.

Right after a build the index's file holds the garbage its batched updates left and whatever CouchDB's
compaction daemon (smoosh) had compacted, and even its live data depends on how the batches fell: 8 shards
built side by side held 2.6-4.5 % more than the same shards built one at a time (docs/studies/forecast.md). A
compaction copies the B-trees in key order into a new file, so what it leaves depends on the rows alone.
A compaction smoosh began during the build catches up by updating its new file in batches like a build,
so it is waited for, and the index is then compacted once more, from its finished state."""

from __future__ import annotations

import time
from typing import Callable
from urllib.parse import quote

from dragnet.couchdb.client import Couch, CouchError, CouchUnreachable, db_path

INTERVAL = 0.5
GRACE = 1.0        # a compaction can end before its first _info shows it running (0.3 s for 20,000 rows)
ROUNDS = 3
# compacted: the file within this share of its live data (or SLACK bytes: every shard's headers)
SHARE = 0.10
SLACK = 1024 ** 2


# ---------------------------------------------------------------- pure

def settled(sizes: dict | None) -> bool:
    """Whether an index's sizes are those of a compacted file: little beyond its live data."""
    file, active = (sizes or {}).get("file"), (sizes or {}).get("active")
    if not isinstance(file, (int, float)) or not isinstance(active, (int, float)):
        return False
    return file - active <= max(SHARE * active, SLACK)


def finished(view_index: dict, seen_running: bool, waited: float, grace: float = GRACE) -> bool:
    """Whether the compaction asked for is over: not running, once seen running or after the grace."""
    return not view_index.get("compact_running") and (seen_running or waited >= grace)


# ---------------------------------------------------------------- against CouchDB

def _view_index(couch: Couch, db: str, ddoc: str) -> dict:
    return couch.get(f"{db_path(db)}/{quote(ddoc, safe='/')}/_info").get("view_index") or {}


def compact_index(couch: Couch, db: str, ddoc: str, *, timeout: float = 3600.0, interval: float = INTERVAL,
                  grace: float = GRACE, clock: Callable[[], float] = time.monotonic,
                  sleep: Callable[[float], None] = time.sleep) -> dict:
    """Wait for any compaction of ddoc's index, compact it (POST /db/_compact/name, every shard) and wait
    until it is over; again, up to ROUNDS times, while the file is not settled. JSON-ready: the sizes
    before and after, seconds, rounds, whether it settled; {"error": line} when CouchDB refused or it did not
    end within timeout (the build's results stay good without it)."""
    name = ddoc[len("_design/"):] if ddoc.startswith("_design/") else ddoc
    t0 = clock()
    deadline = t0 + timeout
    out: dict = {"before": None, "sizes": None, "seconds": None, "rounds": 0, "settled": False,
                 "waited_for_smoosh_s": 0.0}

    def wait(asked: bool) -> dict:
        start, seen = clock(), False
        while True:
            vi = _view_index(couch, db, ddoc)
            seen = seen or bool(vi.get("compact_running"))
            if finished(vi, seen, clock() - start, grace if asked else 0.0):
                return vi
            if clock() > deadline:
                raise TimeoutError
            sleep(interval)

    try:
        vi = _view_index(couch, db, ddoc)
        out["before"] = vi.get("sizes")
        if vi.get("compact_running"):        # smoosh's, begun during the build
            wait(False)
            out["waited_for_smoosh_s"] = clock() - t0
        for _ in range(ROUNDS):
            couch.request("POST", f"{db_path(db)}/_compact/{quote(name, safe='')}", json={}, ok=(200, 202))
            out["rounds"] += 1
            vi = wait(True)
            out["sizes"] = vi.get("sizes")
            if settled(out["sizes"]):
                out["settled"] = True
                break
    except TimeoutError:
        out["error"] = f"the compaction of {ddoc} in {db} did not end within {timeout:,.0f} s"
    except (CouchError, CouchUnreachable) as exc:
        out["error"] = f"compacting {ddoc} in {db}: {exc}"
    out["seconds"] = clock() - t0
    return out
