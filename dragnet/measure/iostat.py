"""Per-device IO with sysstat's `iostat -dxyt`: a pure parser and summaries, plus a runner.

Run with LC_ALL=C, TZ=UTC and S_TIME_FORMAT=ISO, each interval starts with an ISO timestamp line and a
`Device ...` header; devices may appear mid-run (a loop device set up during a build), so columns are
taken from each header and samples are keyed by device, never by position.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from dragnet.measure.sysstat import SysstatRunner

# iostat column -> our sample key
COLUMNS = {
    "r/s": "r_s", "w/s": "w_s", "rkB/s": "rkb_s", "wkB/s": "wkb_s", "r_await": "r_await",
    "w_await": "w_await", "aqu-sz": "aqu_sz", "%util": "util_pct", "rrqm/s": "rrqm_s", "wrqm/s": "wrqm_s",
    "rareq-sz": "rareq_sz", "wareq-sz": "wareq_sz", "d/s": "d_s", "dkB/s": "dkb_s", "f/s": "f_s",
}
# What the summary reports (average and peak over intervals, per device).
METRICS = ("r_s", "w_s", "rkb_s", "wkb_s", "r_await", "w_await", "aqu_sz", "util_pct")

_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}([+-]\d{4}|Z)?$")


@dataclass
class Parsed:
    header: str = ""
    samples: list[dict] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)   # lines not understood (kept so nothing goes missing)


def _epoch(stamp: str) -> float | None:
    try:
        return datetime.strptime(stamp.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S%z").timestamp()
    except ValueError:
        return None


def parse(text: str) -> Parsed:
    """Samples (dicts with COLUMNS keys, 'device', 'interval', 't') from `iostat -dxyt` output."""
    parsed = Parsed()
    cols: list[str] | None = None
    interval, t = -1, None
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("Linux ") and not parsed.header:
            parsed.header = line
            continue
        if _TIMESTAMP.match(line):
            interval, t, cols = interval + 1, _epoch(line), None
            continue
        if line.startswith("Device"):
            cols = line.split()
            if interval < 0:        # no -t: each header starts an interval
                interval = 0
            continue
        fields = line.split()
        if cols is None or len(fields) != len(cols):
            parsed.skipped.append(raw)
            continue
        sample: dict = {"device": fields[0], "interval": interval, "t": t}
        try:
            for name, tok in zip(cols[1:], fields[1:]):
                sample[COLUMNS.get(name, name)] = float(tok)
        except ValueError:
            parsed.skipped.append(raw)
            continue
        parsed.samples.append(sample)
    return parsed


def summarize(samples: list[dict], devices: set[str] | None = None, *, t_from: float | None = None,
              t_to: float | None = None) -> dict:
    """Per device: intervals seen and average/peak of METRICS, plus total kB read and written
    (rate x 1 s interval summed, so it reproduces from the raw samples at the runner's interval)."""
    out: dict[str, dict] = {}
    by_dev: dict[str, list[dict]] = {}
    for s in samples:
        if devices is not None and s["device"] not in devices:
            continue
        t = s.get("t")
        if t is not None and ((t_from is not None and t < t_from) or (t_to is not None and t > t_to)):
            continue
        by_dev.setdefault(s["device"], []).append(s)
    for dev, rows in sorted(by_dev.items()):
        entry: dict = {"intervals": len(rows)}
        for m in METRICS:
            vals = [r[m] for r in rows if isinstance(r.get(m), float)]
            entry[m] = {"avg": sum(vals) / len(vals), "peak": max(vals)} if vals else {"avg": None, "peak": None}
        entry["read_kb"] = sum(r.get("rkb_s", 0.0) for r in rows)
        entry["written_kb"] = sum(r.get("wkb_s", 0.0) for r in rows)
        out[dev] = entry
    return out


class IostatRunner(SysstatRunner):
    """Runs `iostat -dxyt INTERVAL` (all devices; summaries pick the data's) until stop()."""

    tool = "iostat"

    @property
    def argv(self) -> list[str]:
        return ["iostat", "-dxyt", str(self.interval)]

