"""Why the cost per document grows, where it does: from what a sweep's builds recorded at each
size, how much docs/s falls per doubling and which of the recorded quantities rose with it: beam's CPU per
document (the view updater, B-tree writes and its garbage collection), the query server's, the time the
build's processes waited for a CPU (contention, not cost), beam's peak memory, and the compaction that
ran during the build.

Pure: rows in, a JSON-ready record with one sentence out. dragnet.forecast.run gathers the rows.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

FALLS = 0.10      # docs/s falling more than this per doubling: the cost per document grows
RISES = 0.10      # a per-document quantity rising more than this per doubling goes with it


def row(size: int, run: dict, result: dict | None) -> dict:
    """One build's figures: from its manifest entry (run) and its results file (result, for the CPU)."""
    cpu = (result or {}).get("cpu") or {}
    by = cpu.get("by_process") or {}
    wall = run.get("wall_time_s")
    if not by and wall:   # recorded before the kernel's accounting was kept: pidstat's mean CPU share × time
        by = {("beam.smp" if k == "beam" else k): v["cpu_pct"]["avg"] / 100 * wall
              for k, v in (((result or {}).get("pidstat") or {}).get("summary") or {}).items()
              if isinstance(v, dict) and (v.get("cpu_pct") or {}).get("avg") is not None}
    pk = (run.get("sizes") or {}).get("peak_disk") or {}
    qs = sum(v for k, v in by.items() if k not in ("beam.smp", "erl_child_setup", "inet_gethost", "sh"))
    return {"docs": size, "wall_s": wall, "beam_s": by.get("beam.smp"),
            "query_server_s": qs if by else None, "run_s": cpu.get("run_s"), "wait_s": cpu.get("wait_s"),
            "interval_s": cpu.get("interval_s"),
            "beam_rss_kb": (run.get("pidstat_peak_rss_kb") or {}).get("beam"),
            "compaction_bytes": pk.get("compaction"), "compactions_at_once": pk.get("compactions_at_once")}


def _mean(vals: Iterable) -> float | None:
    v = [x for x in vals if isinstance(x, (int, float))]
    return math.fsum(v) / len(v) if v else None


def per_size(rows: Sequence[dict]) -> list[dict]:
    """The rows' means per size, with docs/s and the per-document CPU (s per 1,000 documents)."""
    out = []
    for n in sorted({r["docs"] for r in rows}):
        at = [r for r in rows if r["docs"] == n]
        m = {k: _mean(r.get(k) for r in at) for k in at[0] if k != "docs"}
        m["docs"] = n
        m["docs_per_s"] = n / m["wall_s"] if m.get("wall_s") else None
        for k, per in (("beam_s", "beam_cpu_per_1000"), ("query_server_s", "query_server_cpu_per_1000")):
            m[per] = m[k] / n * 1000 if m.get(k) is not None else None
        m["wait_per_run"] = m["wait_s"] / m["run_s"] if m.get("run_s") and m.get("wait_s") is not None else None
        out.append(m)
    return out


def per_doubling(first: float | None, last: float | None, n0: int, n1: int) -> float | None:
    """The factor a quantity changed by per doubling of the documents, from n0 to n1 (geometric)."""
    if not first or not last or first <= 0 or last <= 0 or n1 <= n0:
        return None
    return (last / first) ** (1 / math.log2(n1 / n0))


def explain(rows: Sequence[dict]) -> dict:
    """docs/s per doubling and what rose with it; JSON-ready, "sentence" the line the forecast prints."""
    sizes = per_size(rows)
    if len(sizes) < 2:
        return {"sizes": sizes, "sentence": None}
    a, b = sizes[0], sizes[-1]
    n0, n1 = a["docs"], b["docs"]
    rate = per_doubling(a["docs_per_s"], b["docs_per_s"], n0, n1)
    factors = {k: per_doubling(a.get(k), b.get(k), n0, n1)
               for k in ("beam_cpu_per_1000", "query_server_cpu_per_1000", "wait_per_run", "beam_rss_kb")}
    out = {"sizes": sizes, "docs_per_s_per_doubling": rate, "per_doubling": factors}
    if rate is None:
        return {**out, "sentence": None}
    if 1 - rate <= FALLS:
        return {**out, "sentence": f"docs/s holds per doubling ({rate - 1:+.0%}: {a['docs_per_s']:,.0f} at {n0:,}, "
                                   f"{b['docs_per_s']:,.0f} at {n1:,}): the cost per document does not grow"}
    why = []
    names = {"beam_cpu_per_1000": ("beam's CPU per 1,000 documents", "s"),
             "query_server_cpu_per_1000": ("the query server's CPU per 1,000 documents", "s"),
             "wait_per_run": ("the time waiting for a CPU per second on one (contention, not cost)", ""),
             "beam_rss_kb": ("beam's peak memory", " KiB")}
    for k, (name, unit) in names.items():
        f = factors.get(k)
        if f is not None and f - 1 > RISES:
            fmt = (lambda v: f"{v:,.0f}{unit}") if unit == " KiB" else (lambda v: f"{v:,.2f}{unit}")
            why.append(f"{name} rose {f - 1:+.0%} per doubling ({fmt(a[k])} → {fmt(b[k])})")
    held = [names[k][0] for k in ("beam_cpu_per_1000", "query_server_cpu_per_1000")
            if factors.get(k) is not None and factors[k] - 1 <= RISES]
    if held:
        why.append(f"{' and '.join(held)} held")
    compacted = [s["docs"] for s in sizes if (s.get("compaction_bytes") or 0) > 0]
    if compacted:
        why.append(f"compaction ran during the builds of {', '.join(f'{n:,}' for n in compacted)}")
    sentence = (f"docs/s falls {1 - rate:.0%} per doubling ({a['docs_per_s']:,.0f} at {n0:,} → "
                f"{b['docs_per_s']:,.0f} at {n1:,}): each document costs more as the index grows"
                + (f"; {'; '.join(why)}" if why else ""))
    return {**out, "sentence": sentence}
