"""The "disk matters?" table: cells of dragnet.bench.scenario's rows, for every renderer."""

from __future__ import annotations

import statistics

from dragnet.bench.scenario import Row


DISK_COLUMNS = ("language", "storage", "scenario", "runs", "docs/s median", "× reference", "slower every round",
                "OOM", "r/s", "rkB/s", "r_await ms", "%util")


def disk_rows(rows: list[Row]) -> list[list[str]]:
    """Table cells for the "disk matters?" table (iostat: per-build averages on the data's device)."""
    def f(v, fmt):
        return "–" if v is None else format(v, fmt)
    out = []
    for r in rows:
        io = r.iostat or {}
        out.append([r.language, r.storage, r.scenario, str(len(r.docs_per_sec)),
                    f(statistics.median(r.docs_per_sec) if r.docs_per_sec else None, ".0f"),
                    f(r.ratio, ".2f"), "yes" if r.slower_every_round else "no", str(r.oom),
                    f(io.get("r_s"), ".0f"), f(io.get("rkb_s"), ".0f"), f(io.get("r_await"), ".2f"),
                    f(io.get("util_pct"), ".1f")])
    return out
