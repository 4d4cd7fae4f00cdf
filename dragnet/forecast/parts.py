"""The build's CPU-seconds and its build time by part (issue 49): the query servers' CPU and beam's CPU each
forecast with its own shape, chosen by the held-out sizes as every quantity's is (dragnet.forecast.choice),
and summed; beam's CPU split once more where the sweep shows compaction beginning as a step; the build time
that sum over the share of the cores the sweep's builds got.

Why by part: one shape through the sum bends wrong when the parts grow apart. On a JavaScript reduce the
query server's CPU per document grows (its reduces rerun over every B-tree node a batch rewrites) while
beam's barely does; on many rows a document beam's grows and the query server's holds; and where smoosh
starts compacting the shards at the sweep's largest size, beam's CPU steps up there, which the held-out
sizes of the total read as a power of 2 (docs/studies/forecast-growth.md).

The parts, each with the shape fixed in advance that the held-out sizes must beat (PARTS):
- the query servers: linear (a map runs once a document; a reduce that grows shows in the held-out sizes);
- beam: n log n (each row goes into a B-tree of depth log n).

The compaction step (step): where the sweep's first sizes ran no compaction during the build (at least
STEP_QUIET of them) and the larger ones did, beam's CPU is a line of n log n through the quiet sizes plus a
CPU per byte of compaction files (the larger sizes' excess over that line, over their compaction files at
the peak), times the target's compaction files as the disk forecast counts them (model.growth_forecast's
compaction part). Without such a sweep, or without that part, beam is one part as above.

The build time assumes the target's build gets the share of the cores the sweep's largest size's builds got
(its CPU-seconds over its wall time): the machine as loaded as when the sweep ended. Its interval runs from
the CPU's low over the largest share seen to its high over the smallest.

Pure: runs in (each with its CPU by process, dragnet.forecast.run.runs_with_cpu), a JSON-ready record out.
"""

from __future__ import annotations

import math
from typing import Sequence

from dragnet.forecast import model as fc
from dragnet.forecast.fit import LEVEL, LINEAR, NLOGN, fit_linear

# part -> (the run's key, the shape fixed in advance)
PARTS = {"query_servers": ("cpu_query_servers_s", LINEAR), "beam": ("cpu_beam_s", NLOGN)}
STEP_QUIET = 3     # sizes without compaction a step's line needs (a line with a residual: 3 points)


def _recorded(runs: Sequence[dict], key: str) -> list[dict]:
    """The successful builds that recorded key."""
    return [r for r in runs if r.get("status") == "ok" and r.get("size") and isinstance(r.get(key), (int, float))]


def part_points(runs: Sequence[dict], key: str) -> list[tuple[int, float]]:
    """(documents, value) of every successful build that recorded key (zeros kept: a query server that got no
    work, an Erlang view, used none)."""
    return sorted((int(r["size"]), float(r[key])) for r in _recorded(runs, key))


def step(builds: Sequence[tuple[int, float, float | None]], target_docs: int,
         target_compaction: float | None) -> dict | None:
    """beam's CPU as a line of n log n through the sizes whose builds ran no compaction, plus a CPU per byte of
    compaction files from the builds that did; None where the sweep does not show that step (fewer than
    STEP_QUIET quiet sizes, none compacting, or no compaction forecast at the target).
    builds: (documents, beam's CPU-seconds, compaction files at the peak or None) of each build."""
    quiet = [(n, y) for n, y, c in builds if c == 0]
    busy = [(n, y, c) for n, y, c in builds if (c or 0) > 0]
    if len({n for n, _ in quiet}) < STEP_QUIET or not busy or target_compaction is None:
        return None
    line = fit_linear(quiet, model=NLOGN)
    if line is None:
        return None
    # the CPU a byte of compaction files costs: the compacting builds' excess over the line, pooled
    per_byte = max(0.0, math.fsum(y - line.value(n) for n, y, _ in busy) / math.fsum(c for _, _, c in busy))
    base = line.value(target_docs)
    extra = per_byte * target_compaction
    return {"quiet_sizes": sorted({n for n, _ in quiet}), "compacting_sizes": sorted({n for n, _, _ in busy}),
            "line": {"fixed": line.fixed, "per_doc": line.per_doc, "model": NLOGN},
            "per_mib": per_byte * 1024 ** 2, "target_compaction": target_compaction,
            "base": base, "compaction": extra, "value": max(0.0, base + extra)}


def forecast(runs: Sequence[dict], target_docs: int, *, target_compaction: float | None = None,
             weighting: str = "ordinary", level: float = LEVEL) -> dict:
    """The CPU-seconds and build time by part at target_docs; {} where the builds recorded no CPU by process.
    target_compaction: the compaction files at the target's peak (the disk forecast's part), for the step.
    JSON-ready: "parts" (each part's forecast as model.quantity_forecast makes it), "step" (beam's, where the
    sweep shows one), "build_cpu" and "build_time" (each a prediction: value, low, high)."""
    parts = {}
    for name, (key, fixed) in PARTS.items():
        pts = part_points(runs, key)
        if pts:
            entry = fc.quantity_forecast(pts, f"{name} CPU", target_docs, weighting=weighting, level=level,
                                         unit="s", primary=fixed)
            if entry.get("prediction"):
                parts[name] = entry
    if set(parts) != set(PARTS):
        return {}
    compaction = fc.PARTS["compaction"][1]
    stepped = step([(int(r["size"]), float(r["cpu_beam_s"]), compaction(r)) for r in _recorded(runs, "cpu_beam_s")],
                   target_docs, target_compaction)
    preds = {n: dict(e["prediction"]) for n, e in parts.items()}
    if stepped:
        b = preds["beam"]
        # the step's value, inside the beam part's own interval widened to reach it
        preds["beam"] = {**b, "value": stepped["value"], "low": min(b["low"], stepped["value"]),
                         "high": max(b["high"], stepped["value"]), "model": "step"}
    cpu = {"docs": target_docs, "level": level, "model": "parts",
           "value": math.fsum(p["value"] for p in preds.values()),
           # the parts are built side by side under one load: their errors are taken not to cancel
           "low": math.fsum(p["low"] for p in preds.values()),
           "high": math.fsum(p["high"] for p in preds.values())}
    return {"parts": parts, "step": stepped, "build_cpu": cpu,
            "shapes": {n: p["model"] for n, p in preds.items()}, **over_the_sweeps_share(runs, cpu)}


def over_the_sweeps_share(runs: Sequence[dict], cpu: dict) -> dict:
    """A CPU-seconds forecast as the build time ("build_time") over the share of the cores the sweep's largest
    size's builds got, and that share ("cores_share"); {} where the builds recorded no CPU."""
    shares = fc.cores_share(fc.points(runs, "build_time"), fc.points(runs, "build_cpu"))
    if not shares:
        return {}
    return {"build_time": fc.over_share(cpu, shares),
            "cores_share": {"assumed": shares[max(shares)], "at_docs": max(shares),
                            "per_size": {str(n): v for n, v in shares.items()},
                            "assumption": "the target's build gets the share of the cores the sweep's largest "
                                          "size's builds got"}}


# ---------------------------------------------------------------- by bytes

def nonnegative_fit(rows: Sequence[tuple[float, float, float]]) -> tuple[float, float]:
    """(a, b) ≥ 0 that minimise Σ (y − a·x1 − b·x2)² over rows of (x1, x2, y): the least squares where both
    are non-negative, else the better of the two one-term fits (the constrained optimum lies on an axis)."""
    s11 = math.fsum(x1 * x1 for x1, _, _ in rows)
    s22 = math.fsum(x2 * x2 for _, x2, _ in rows)
    s12 = math.fsum(x1 * x2 for x1, x2, _ in rows)
    s1y = math.fsum(x1 * y for x1, _, y in rows)
    s2y = math.fsum(x2 * y for _, x2, y in rows)
    det = s11 * s22 - s12 * s12
    if det > 1e-12 * s11 * s22:
        a, b = (s1y * s22 - s2y * s12) / det, (s2y * s11 - s1y * s12) / det
        if a >= 0 and b >= 0:
            return a, b

    def sse(ab: tuple[float, float]) -> float:
        return math.fsum((y - ab[0] * x1 - ab[1] * x2) ** 2 for x1, x2, y in rows)
    return min(((max(0.0, s1y / s11) if s11 else 0.0, 0.0), (0.0, max(0.0, s2y / s22) if s22 else 0.0)), key=sse)


def by_bytes(runs: Sequence[dict], target_docs: int, index_bytes: dict | None) -> dict:
    """The CPU-seconds and build time from what a build does: each part's CPU as a cost per document plus a cost
    per byte appended to the view indexes (a·docs + b·bytes, a, b ≥ 0, fitted on the sweep's builds), at the
    target's documents and the bytes the disk forecast gives its index files (model.growth_forecast: q × one
    shard of D/q from the one-shard sweep, which reaches the target's shard size, so an interpolation).

    Why: CouchDB's view B-trees are append-only and a batch rewrites every node it touches, so as a shard
    grows each document rewrites more of it; beam's CPU follows those bytes (compression, collation of the
    nodes, writes, a reduce rerun over each node) where a shape through the sweep's CPU extrapolates 5×
    (docs/studies/forecast-backtests.md). Interval: the bytes' own low and high, widened by the fit's largest
    relative miss on the sweep's own builds. {} where the builds recorded no CPU by process or no index
    growth, or without index_bytes (no one-shard sweep). index_bytes: {"value", "low", "high"}."""
    if not index_bytes or not index_bytes.get("value"):
        return {}
    grown = fc.PARTS["index_growth"][1]
    parts, miss = {}, 0.0
    for name, (key, _shape) in PARTS.items():
        rows = [(float(r["size"]), float(g), float(r[key])) for r in _recorded(runs, key)
                if (g := grown(r) or 0) > 0]
        if len({n for n, _, _ in rows}) < 2:
            return {}
        a, b = nonnegative_fit(rows)
        miss = max([miss, *(abs(a * n + b * g - y) / y for n, g, y in rows if y > 0)])
        parts[name] = {"per_doc": a, "per_byte": b, "per_1000_docs": a * 1000, "per_gib": b * 1024 ** 3,
                       "builds": len(rows),
                       **{k: a * target_docs + b * float(index_bytes[k]) for k in ("value", "low", "high")}}
    cpu = {"docs": target_docs, "model": "bytes", "value": math.fsum(p["value"] for p in parts.values()),
           "low": max(0.0, math.fsum(p["low"] for p in parts.values()) * (1 - miss)),
           "high": math.fsum(p["high"] for p in parts.values()) * (1 + miss)}
    return {"parts": parts, "index_bytes": dict(index_bytes), "fit_miss": miss, "build_cpu": cpu,
            **over_the_sweeps_share(runs, cpu)}
