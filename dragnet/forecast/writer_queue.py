"""The disk a build adds, carried from the sweep by how much the view writer rewrote (pure; no I/O).

couch_mrview_updater's writer takes every row the mapper has queued (at least 100 documents' worth) and merges
them into the view B-trees, rewriting each node they touch in the append-only file. Right after the build, the
file holds the index plus those rewrites. While a shard's batches can grow with it (each batch is what was
mapped while the last one was written), how often its tree is rewritten does not grow with the shard, so the
growth over the final index at the sweep's largest sizes holds at the target (docs/studies/forecast-backtests.md,
"The writer's queue"). The mapper stops when the queue holds [view_updater] queue_memory_cap bytes, 100 KB
before CouchDB 3.5.2 and 10 MiB since (apache/couchdb 2c4b6a1). Beyond the documents that cap holds, a shard's
batches stop growing, every later batch rewrites the tree again, and the ratio rises with the shard: one shard
of 12,500 documents with 5 KB of rows each was 5.7× its live data at 100 KB, 2.0× at 10 MiB and 1.5× at 1 GiB;
up to about twice the documents the queue holds, it stays within the goal (OUTGROWN).
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import fmean
from typing import Iterable, Sequence

from dragnet.axes import config as axis_config
from dragnet.couchdb.client import release

CAP_KEY = "queue_memory_cap"
# how many times the documents the queue holds a shard may hold with its file still within the goal of an
# unbounded queue's: one shard's builds at 2x came within 6 % (aa's rows) and 1 % (w's), at 3x 11 % and 2 %, at
# 4x 12 % and 11 % (benchmarks/forecast_growth/queue-cap/aa352-k, w352-k)
OUTGROWN = 2.0
CAP_352 = 10_485_760      # couch_mrview_updater's default from 3.5.2
CAP_OLD = 100_000         # before


@dataclass(frozen=True)
class Build:
    """One build of the sweep: its documents, the disk it added, its index compacted (the final index) and its
    rows' uncompressed bytes (the index's "external" size: what the writer's queue counts, near enough)."""
    docs: int
    growth: float
    final: float
    external: float | None = None


def queue_cap(couchdb: dict | None, axes_config: Iterable[str | None] = ()) -> tuple[int, str] | None:
    """(bytes, where it came from): the queue cap the sweep's builds ran with. A --config axis value every build
    shared, else what the node was given (its [view_updater] section, recorded by Couch.version), else the
    version's default; None where neither the setting nor the version is known."""
    found = {v for c in axes_config if (v := axis_config.settings_of(c).get(f"view_updater/{CAP_KEY}") or "").isdigit()}
    if len(found) == 1:
        return int(found.pop()), "the sweep's --config"
    given = ((couchdb or {}).get("view_updater") or {}).get(CAP_KEY)
    if given not in (None, ""):
        try:
            return int(given), "set on the node"
        except (TypeError, ValueError):
            return None
    v = release((couchdb or {}).get("version"))
    if v is None:
        return None
    return (CAP_352, f"CouchDB {'.'.join(map(str, v))}'s default") if v >= (3, 5, 2) else \
        (CAP_OLD, f"CouchDB {'.'.join(map(str, v))}'s default")


def by_final(builds: Sequence[Build], final: dict | None, target_docs: int, shards: int | None,
             cap: tuple[int, str] | None, goal: float) -> dict | None:
    """The disk a build of target_docs documents in `shards` shards adds, as the final index's forecast times
    the growth over the final index at the sweep's largest size (the mean of its builds). The interval runs
    from the final index's low times the least ratio at the two largest sizes to its high times the most.
    Decided ("open" None) where those ratios lie within the goal of it and a shard of the target holds at most
    OUTGROWN times the documents the writer's queue holds (cap over the rows' bytes a document at the largest
    size); else "open" says why. None without two sizes of builds or the final index's forecast."""
    sizes = sorted({b.docs for b in builds if b.final > 0})
    if len(sizes) < 2 or not final or final.get("value") is None:
        return None
    top = sizes[-2:]
    at = {n: [b.growth / b.final for b in builds if b.docs == n and b.final > 0] for n in top}
    every = [r for n in top for r in at[n]]
    ratio = fmean(at[top[-1]])
    spread = (max(every) - min(every)) / ratio
    entry: dict = {"value": final["value"] * ratio, "low": final.get("low", final["value"]) * min(every),
                   "high": final.get("high", final["value"]) * max(every), "ratio": ratio, "spread": spread,
                   "ratios": {str(n): at[n] for n in top}, "open": None}
    rows = [b.external / b.docs for b in builds if b.docs == top[-1] and b.external]
    reasons = []
    if cap and rows and shards:
        per_doc, shard_docs = fmean(rows), target_docs / shards
        batch = cap[0] / per_doc
        entry["queue"] = {"cap_bytes": cap[0], "cap_source": cap[1], "row_bytes_per_doc": per_doc,
                          "batch_docs": batch, "target_shard_docs": shard_docs,
                          "sweep_shard_docs": top[-1] / shards, "outgrown": shard_docs > OUTGROWN * batch}
        if entry["queue"]["outgrown"]:
            reasons.append(f"a shard of the target holds {shard_docs:,.0f} documents, more than {OUTGROWN:g} × the "
                           f"{batch:,.0f} the view writer's queue holds ({CAP_KEY} {cap[0]:,} bytes, {cap[1]}, over "
                           f"{per_doc:,.0f} bytes of rows a document): its batches stop growing there and every "
                           f"later one rewrites the index again, so the file grows faster than the sweep shows")
    else:
        reasons.append("the writer's queue cap or the rows' bytes are not known, so whether the target's shards "
                       "outgrow its batches cannot be told")
    if spread > goal:
        reasons.append(f"the growth over the final index at the sweep's two largest sizes spans {spread:.0%} of "
                       f"it, more than the goal ({goal:.0%})")
    entry["open"] = "; ".join(reasons) or None
    return entry
