#!/usr/bin/env python3
"""The regression gate, run by hand against a live CouchDB: `bench --ddoc A --ddoc B --gate 5%` repeated.

B is tests/ddocs/compare/base.json with a 20,000-iteration loop in every map call (loop.json here, same
rows); the rename is tests/ddocs/compare/renamed.json. Target (issue 31): the gate fails the loop (exit 1)
in at least 19 of 20 trials, passes the rename (exit 0) in at least 19 of 20, each decision in at most 6
rounds. On the gate's default metric (instructions) this needs valgrind and DRAGNET_COUCHDB_HOME (couchjs).

    URL=http://127.0.0.1:5984 COUCHDB_USER=… COUCHDB_PASSWORD=… \\
    .venv/bin/python benchmarks/gate_check/run.py [--trials 20] [--docs 3000] [--metric instructions|qs|cpu|wall]
        [--max-runs 15] [--first 0] [--cases loop,rename] [--db NAME]
        [--out /tmp/gate-check]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
BASE = REPO / "tests" / "ddocs" / "compare" / "base.json"
CASES = {"loop": HERE / "loop.json", "rename": REPO / "tests" / "ddocs" / "compare" / "renamed.json"}


def data_file(out: Path, n: int) -> Path:
    path = out / f"items-{n}.jsonl"
    if not path.exists():
        rng = random.Random(7)
        with open(path, "w") as fh:
            for i in range(n):
                fh.write(json.dumps({"_id": f"item-{i:06d}", "type": "item", "group": f"g{i % 37}",
                                     "name": f"name {rng.randrange(10**6)}",
                                     "values": [rng.randrange(1000) for _ in range(20)]}) + "\n")
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--docs", type=int, default=3000)
    ap.add_argument("--threshold", default="5%")
    ap.add_argument("--out", default="/tmp/gate-check")
    ap.add_argument("--metric", default="instructions", choices=("cpu", "qs", "instructions", "wall"),
                    help="the gate's (default: instructions, as bench --gate's)")
    ap.add_argument("--max-runs", type=int, default=15, help="the gate's bound on rounds (6: the target's)")
    ap.add_argument("--first", type=int, default=0, help="number the trials from here (a study split in parts)")
    ap.add_argument("--cases", default="loop,rename", help="which cases, comma-separated (default: both)")
    ap.add_argument("--db", default=None, help="the database (default: gate_check_DOCS; another for a second "
                                                "run beside the first)")
    args = ap.parse_args()
    url = os.environ.get("URL") or sys.exit("set URL (no credentials; COUCHDB_USER/COUCHDB_PASSWORD)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = data_file(out, args.docs)
    db = args.db or f"gate_check_{args.docs}"
    if not set(args.cases.split(",")) <= set(CASES):
        ap.error(f"--cases {args.cases}: expected some of {', '.join(CASES)}")
    cases = {c: CASES[c] for c in args.cases.split(",")}
    tally: dict[str, list[tuple[int, int, float]]] = {c: [] for c in cases}
    for t in range(args.first, args.first + args.trials):
        for case, ddoc in cases.items():   # alternate the cases, so the load touches both alike
            res = out / f"{case}-{t}"
            t0 = time.monotonic()
            r = subprocess.run([sys.executable, "-m", "dragnet", "bench", "--url", url, "--db", db, "--data", str(data),
                                "--ddoc", f"A={BASE}", "--ddoc", f"B={ddoc}", "--languages", "javascript",
                                "--no-baseline", "--gate", args.threshold, "--metric", args.metric, "--max-runs", str(args.max_runs), "--json", "--results", str(res)],
                               capture_output=True, text=True, cwd=REPO)
            secs = time.monotonic() - t0
            try:
                rounds = json.loads(r.stdout)["rounds"]
                cell = json.loads(r.stdout)["comparison"]["cells"][0]
                what = f"{(cell['ratio'] - 1) * 100:+.1f}% [{(cell['ci'][0] - 1) * 100:+.1f}% … {(cell['ci'][1] - 1) * 100:+.1f}%]"
            except (ValueError, KeyError, IndexError, TypeError):
                rounds, what = -1, r.stderr.strip().splitlines()[-1:] or ["?"]
            tally[case].append((r.returncode, rounds, secs))
            print(f"trial {t + 1} {case}: exit {r.returncode}, {rounds} rounds, {secs:.0f} s, {what}, load "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
    for case, rows in tally.items():
        codes = Counter(c for c, _, _ in rows)
        decided = sorted(r for c, r, _ in rows if c in (0, 1))
        print(f"{case}: " + ", ".join(f"exit {c}: {n}" for c, n in sorted(codes.items()))
              + (f"; rounds where decided: median {decided[len(decided) // 2]}, max {decided[-1]}" if decided else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
