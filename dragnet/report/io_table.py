"""The report's table of iostat on every build (dragnet.measure.build_iostat records it): pure."""

from __future__ import annotations

from dragnet.measure.stats import median
from dragnet.results.load import result_label


IO_COLUMNS = ("design doc / view", "engine", "storage", "builds", "device", "r/s", "rkB/s", "w/s", "wkB/s",
              "r_await ms", "%util")
_IO_KEYS = ("r_s", "rkb_s", "w_s", "wkb_s", "r_await", "util_pct")


def io_rows(results) -> tuple[list[list[str]], list[str]]:
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
        cells = []
        for k in _IO_KEYS:
            vals = [a[k] for a in avgs if isinstance(a.get(k), (int, float))]
            cells.append(f"{median(vals):,.1f}" if vals else "–")
        rows.append([*key, str(len(avgs)), ",".join(sorted(devices[key])), *cells])
    notes = [f"iostat absent from {n} build(s): {why}" for why, n in sorted(absent.items())]
    return rows, notes
