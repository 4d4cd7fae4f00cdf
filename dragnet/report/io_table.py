"""The report's table of iostat on every build (dragnet.measure.build_iostat records it): pure."""

from __future__ import annotations

from dataclasses import dataclass

from dragnet.measure.stats import median
from dragnet.results.load import result_label

_IO_KEYS = ("r_s", "rkb_s", "w_s", "wkb_s", "r_await", "util_pct")


@dataclass(frozen=True)
class IoGroup:
    """One row of the iostat table (its columns: report.columns.IO): medians over builds of their averages."""
    where: str                  # design doc id, or the view file's path
    engine: str
    storage: str
    builds: int
    devices: str                # the data's device(s), comma-joined
    r_s: float | None
    rkb_s: float | None
    w_s: float | None
    wkb_s: float | None
    r_await: float | None
    util_pct: float | None


def io_rows(results) -> tuple[list[IoGroup], list[str]]:
    """Per design doc (or view file), engine and storage: medians over builds of each build's iostat
    averages on the data's disk; and one note per reason iostat is absent from builds. Scenario builds
    are left to the "disk matters?" table."""
    groups: dict[tuple, list[dict]] = {}
    devices: dict[tuple, set] = {}
    absent: dict[str, int] = {}
    for r in results:
        if r.get("scenario"):
            continue
        io = r.get("iostat")
        if not isinstance(io, dict):
            continue
        if io.get("absent"):
            absent[io["absent"]] = absent.get(io["absent"], 0) + 1
            continue
        dev = (io.get("summary") or {}).get(io.get("device") or "")
        if not dev:
            continue
        view = r.get("view") or {}
        where = ((view.get("design") or {}).get("id")) or view.get("path") or "?"
        key = (str(where), result_label(r), str((r.get("bench") or {}).get("storage_label") or r.get("storage")))
        groups.setdefault(key, []).append({k: (dev.get(k) or {}).get("avg") for k in _IO_KEYS})
        devices.setdefault(key, set()).add(io["device"])
    rows = []
    for key, avgs in sorted(groups.items()):
        meds = {}
        for k in _IO_KEYS:
            vals = [a[k] for a in avgs if isinstance(a.get(k), (int, float))]
            meds[k] = median(vals) if vals else None
        rows.append(IoGroup(*key, builds=len(avgs), devices=",".join(sorted(devices[key])), **meds))
    notes = [f"iostat absent from {n} build(s): {why}" for why, n in sorted(absent.items())]
    return rows, notes
