#!/usr/bin/env python3
"""The gate trials' builds, per metric: how much the within-round ratio B/A moved (run by hand after run.py).

Reads the folders run.py wrote (OUT/CLASS-N; or a --dump file written before) and prints, per
case and metric, the spread (sd of ln(B/A) over a trial's rounds) across trials, and the rounds a rename
would need to pass at that spread (X = --threshold). --dump FILE keeps one line per build (the figures the
spreads come from), small enough to commit beside the log.

    .venv/bin/python benchmarks/gate_check/spread.py /tmp/gate-check [--dump builds.jsonl]
    .venv/bin/python benchmarks/gate_check/spread.py --from builds.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics as st
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(REPO))

from dragnet.measure.decide import LEVEL, t_quantile  # noqa: E402
from dragnet.results.record import Build  # noqa: E402

METRICS = {"instructions": "map functions' instructions (valgrind)", "qs": "query servers' own CPU (schedstat)", "cpu": "CouchDB + query servers' CPU",
           "beam": "beam.smp's CPU", "wall": "wall time"}


def builds(out: Path) -> list[dict]:
    rows = []
    for d in sorted(out.iterdir()):
        m = re.fullmatch(r"([a-z_]+)-(\d+)", d.name)
        if not m or not d.is_dir():
            continue
        for f in sorted(d.rglob("*-javascript.json")):
            r = json.loads(f.read_text())
            s, c, b = r.get("summary") or {}, r.get("cpu") or {}, r.get("bench") or {}
            q = c.get("query_servers") or {}
            rows.append({"case": m.group(1), "trial": int(m.group(2)), "batch": f.parent.name, "round": b.get("repeat"),
                         "ddoc": (b.get("axes") or {}).get("ddoc"), "ok": bool(s.get("ok", True)), "docs": s.get("docs"),
                         "wall": s.get("wall_time_s"), "cpu": c.get("cpu_s"), "qs": q.get("cpu_s"),
                         "qs_wait": q.get("wait_s"), "qs_started": q.get("started"), "beam": (c.get("by_process") or {}).get("beam.smp"),
                         "cpu_source": c.get("source"), "started_at": r.get("started_at"),
                         "instructions": Build.of(r).instructions_per_1000})
    return rows


def spreads(rows: list[dict], metric: str) -> dict[tuple[str, int], float]:
    by: dict[tuple, dict] = {}
    for r in rows:
        if r["ok"] and r.get(metric):
            by.setdefault((r["case"], r["trial"], r["batch"], r["round"]), {})[r["ddoc"]] = r[metric]
    logs: dict[tuple[str, int], list[float]] = {}
    for (case, trial, _, _), v in by.items():
        if "A" in v and "B" in v:
            logs.setdefault((case, trial), []).append(math.log(v["B"] / v["A"]))
    return {k: st.stdev(v) for k, v in logs.items() if len(v) > 1}


def rounds_to_pass(sd: float, threshold: float, cap: int = 500) -> int | None:
    """Rounds after which a 99% t interval of a true ratio 1 lies below 1 + threshold, at this spread."""
    for n in range(2, cap + 1):
        if t_quantile(1 - (1 - LEVEL) / 2, n - 1) * sd / math.sqrt(n) < math.log1p(threshold):
            return n
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--from", dest="source", help="a --dump file instead of run.py's folders")
    ap.add_argument("--dump")
    ap.add_argument("--threshold", type=float, default=0.05)
    args = ap.parse_args()
    if args.source:
        rows = [json.loads(line) for line in Path(args.source).read_text().splitlines() if line.strip()]
    elif args.out:
        rows = builds(Path(args.out))
    else:
        ap.error("give run.py's --out folder or --from FILE")
    if args.dump:
        Path(args.dump).write_text("".join(json.dumps(r) + "\n" for r in rows))
    for case in sorted({r["case"] for r in rows}):
        trials = sorted({r["trial"] for r in rows if r["case"] == case})
        if not trials:
            continue
        mine = [r for r in rows if r["case"] == case]
        spawned = [r for r in mine if r.get("qs_started")]
        print(f"{case}: {len(trials)} trials, {len(mine)} builds"
              + (f", {len(spawned)} with a query server spawned during the build" if spawned else ""))
        for metric, what in METRICS.items():
            sd = sorted(v for (c, _), v in spreads(rows, metric).items() if c == case)
            if not sd:
                continue
            med = st.median(sd)
            need = rounds_to_pass(med, args.threshold) if case == "rename" else None
            print(f"  {what:38s} sd of ln(B/A) within a trial: median {med * 100:5.1f}%, "
                  f"range {sd[0] * 100:.1f}–{sd[-1] * 100:.1f}%"
                  + (f"; a rename would pass +{args.threshold:.0%} after ~{need} rounds" if need else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
