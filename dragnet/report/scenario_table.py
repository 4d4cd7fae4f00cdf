"""The "disk matters?" table: cells of dragnet.axes.scenario's rows, the memory advice and the verdict, for every
renderer."""

from __future__ import annotations

import statistics

from dragnet.axes.scenario import Row


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


def memory_advice(rows: list[Row], reference: str) -> list[str]:
    """What a memory limit must leave CouchDB, from the builds without one: per language, its own memory
    (own_memory()) in the reference scenario, and each limited scenario whose limit is below it (an OOM
    kill there says nothing about the disk)."""
    from dragnet.couchdb.storage import format_size
    own = {(r.language, r.storage): r.own_memory for r in rows
           if r.scenario == reference and r.own_memory and r.memory_limit is None}
    lines = []
    for (lang, st), m in own.items():
        lines.append(f"CouchDB's own memory in {reference} ({lang}, {st}): {format_size(m)} "
                     "(beam + query servers, RSS peaks); a memory limit must hold this plus the page cache it "
                     "means to leave")
    for r in rows:
        m = own.get((r.language, r.storage))
        if r.memory_limit and m and r.memory_limit < m:
            lines.append(f"{r.scenario} ({r.language}): the limit {format_size(r.memory_limit)} is below "
                         f"CouchDB's own {format_size(m)}"
                         + (f"; its {r.oom} OOM kill(s) say nothing about the disk" if r.oom else
                            "; builds that finished under it had less page cache than the limit suggests"))
    return lines


def disk_summary(rows: list[Row], reference: str) -> dict:
    """The "disk matters?" rows, memory lines and verdict, as --json gives them."""
    from dataclasses import asdict
    return {"disk_matters": [asdict(r) for r in rows], "memory_advice": memory_advice(rows, reference),
            "verdict": verdict(rows, reference)}


def verdict(rows: list[Row], reference: str, *, threshold: float = 0.9) -> str:
    """One line from the numbers: the slowest scenario when it was slower than the reference in every
    round and by more than 1-threshold, else that the runs show no disk effect."""
    ooms = [r for r in rows if r.oom]
    cands = [r for r in rows if r.scenario != reference and r.ratio is not None]
    head = ""
    if ooms:
        head = "; ".join(f"OOM-killed in {r.scenario} ({r.language})" for r in ooms) + "; "
    if not cands:
        return head + "no scenario to compare with the reference"
    worst = min(cands, key=lambda r: r.ratio)
    if worst.ratio < threshold and worst.slower_every_round:
        return head + f"disk-bound in {worst.scenario} ({worst.language}, {worst.storage}): ×{worst.ratio:.2f}"
    return head + (f"disk does not matter in these runs: slowest scenario {worst.scenario} ({worst.language}) "
                   f"×{worst.ratio:.2f}, not slower in every round by more than {1 - threshold:.0%}")
