"""The query servers side by side (`forecast --chase`, issue 49): q processes of the design document's language,
each mapping its own documents at once, as a q-shard build runs them, against one alone, as the chase's
one-shard builds run it.

A query-server process alone on the cores spends less CPU a document than q of them taking turns on the same
cores: on 2 cores, 16 couchjs spent 1.4–1.8× as much a document as one alone, 8 of them 1.1–1.4×, 2 of them no
more (benchmarks/forecast_growth/qs_side_by_side, back-test t's design doc and data). The chase's sum of its
one-shard builds' query-server CPU came out low on all six back-tests (−6 % to −46 %,
benchmarks/forecast_growth/chase_parts), so the chase's query-server part is scaled by the factor measured here.

A query server also spends more a document the longer it waits between documents (its caches gone cold): 3.5.2's
couchjs on back-test v's orders spent 0.17 ms a document fed one after another, as the chase's one-shard build
feeds it, and 0.36–0.39 ms side by side fed one every 12.8 ms, as each of the target's sixteen shards fed it
(the target: 0.39). So each process is paced (gaps()): side by side at the target's time between a shard's
documents, alone at the chase's.

No CouchDB build: real query-server processes, started as CouchDB starts a shard's indexer (reset, the
library, an add_fun per map), fed one map_doc at a time and waited for, each its own share of a spread draw of
the data; their CPU is the kernel's (each thread's /proc/<pid>/task/<tid>/schedstat). They are this machine's,
or, for a CouchDB in a container, the container's own (couchdb.container_qs): its query server may be another
build (3.5.2's couchjs runs SpiderMonkey 128, a bookworm host's 102) and cost another factor. Each repeat runs q
side by side and one alone, the order alternating. `factor` is pure.
"""

from __future__ import annotations

import math
import os
import statistics
import threading
import time
from typing import Callable, Sequence

SHARE = 5                 # the processes side by side map a fifth of the target's documents in all
REPEATS = 3               # at least: one pair a few seconds long moves by a quarter on a shared machine
FILE = "side-by-side.json"


def docs_each(target_docs: int, q: int) -> int:
    """The documents each of the q processes maps: a fifth of the target's over q."""
    return max(1, math.ceil(target_docs / (SHARE * q)))


def per_doc_ms(run: dict) -> float:
    """One run's CPU a document (ms), its processes' CPU over every document they mapped."""
    spent = sum(p["cpu_after_s"] - p["cpu_before_s"] for p in run["processes"])
    return 1000 * spent / sum(p["docs"] for p in run["processes"])


def factor(record: dict) -> dict | None:
    """The CPU a document of q processes side by side over one alone, per repeat (each repeat's pair measured
    minutes apart at most): {"value", "low", "high", "per_repeat"}, or None when no repeat has both."""
    by_rep: dict[int, dict[int, dict]] = {}
    for run in record.get("runs") or []:
        by_rep.setdefault(int(run["repeat"]), {})[int(run["procs"])] = run
    q = int(record["q"])
    ratios = [per_doc_ms(r[q]) / per_doc_ms(r[1]) for _, r in sorted(by_rep.items())
              if q in r and 1 in r and per_doc_ms(r[1]) > 0]
    if not ratios:
        return None
    return {"value": statistics.fmean(ratios), "low": min(ratios), "high": max(ratios), "per_repeat": ratios}


def gaps(m: dict) -> dict:
    """The time between one process's documents (s) that the measurement keeps: side by side, the target's, its
    build time by chase (m: the chase's model over the sweep's cores, the factor not yet in it) over the documents
    a shard maps; alone, the chase's one-shard builds', their wall time over theirs."""
    docs = int(m["shard_docs"])
    walls = [b["wall_s"] for b in m["builds"]]
    return {"side_s": m["build_time"]["value"] / docs, "alone_s": statistics.fmean(walls) / docs}


def _cpu_s(pid: int) -> float:
    """The live process's CPU so far, its threads' time on a CPU by the scheduler (stat's ticks are 10 ms,
    coarse for a small target's few documents a process)."""
    from dragnet.measure.cpu import schedstat_of

    return schedstat_of(pid)[0]


def _run(start: Callable[[], object], slices: Sequence[Sequence[bytes]], gap_s: float = 0.0) -> dict:
    servers = []
    try:
        for _ in slices:
            servers.append(start())
        before = [_cpu_s(qs.pid) for qs in servers]
        after: list[float | None] = [None] * len(servers)
        failed: list[BaseException] = []

        def feed(i: int) -> None:
            try:
                # a document every gap_s at most, the processes' phases spread over one gap
                due = time.monotonic() + gap_s * i / len(servers)
                for line in slices[i]:
                    if gap_s:
                        wait = due - time.monotonic()
                        if wait > 0:
                            time.sleep(wait)
                        due = max(due, time.monotonic()) + gap_s
                    servers[i].prompt_raw(line)
                after[i] = _cpu_s(servers[i].pid)
            except BaseException as exc:      # noqa: BLE001 - re-raised below, in the caller's thread
                failed.append(exc)

        t0 = time.monotonic()
        threads = [threading.Thread(target=feed, args=(i,), daemon=True) for i in range(len(servers))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - t0
        if failed:
            raise failed[0]
    finally:
        for qs in servers:
            qs.close()
    return {"procs": len(servers), "wall_s": round(wall, 6), "gap_ms": round(1000 * gap_s, 3),
            "load_1m": os.getloadavg()[0],
            "processes": [{"docs": len(s), "cpu_before_s": b, "cpu_after_s": a}
                          for s, b, a in zip(slices, before, after)]}


def measure(design, lines: Sequence[bytes], q: int, repeat: int, *, env: dict | None = None,
            on_event: Callable[[str, dict], None] = lambda *_: None, timeout: float = 60.0,
            container: str | None = None, paced: dict | None = None) -> dict:
    """q processes side by side, each mapping every q-th of lines (map_doc lines, a spread draw), and one alone
    mapping the first process's share, `repeat` times: the record chase.json keeps (JSON-ready, every figure
    recomputable from it). The processes are this machine's, or with `container` (a CouchDB's container, by
    name or id) that container's own, started by a Docker exec. `paced` (gaps()): each process gets a document
    no more often than its build would give it one. A DragnetError (no query server of the language) is the
    caller's to report."""
    from dragnet.qsbench import ddoc as qd
    from dragnet.qsbench import instructions

    groups = qd.map_groups(design)
    lib = design.doc["views"].get("lib")
    start, server, about = instructions.starter(design.language, lib, groups, timeout, env, container)
    slices = [list(lines[i::q]) for i in range(q)]
    record = {"q": q, "server": server, "language": design.language, "docs_each": len(slices[0]),
              "share": f"a fifth of the target's documents over q (1/{SHARE})", **about,
              **({"paced": dict(paced)} if paced else {}), "runs": []}
    for rep in range(1, repeat + 1):
        for procs in ((q, 1) if rep % 2 else (1, q)):
            on_event("side_by_side", {"repeat": rep, "procs": procs, "docs_each": len(slices[0])})
            gap = ((paced or {}).get("side_s") if procs == q else (paced or {}).get("alone_s")) or 0.0
            run = _run(start, slices if procs == q else slices[:1], gap)
            record["runs"].append({"repeat": rep, **run})
    return record
