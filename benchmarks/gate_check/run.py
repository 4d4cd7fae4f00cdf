#!/usr/bin/env python3
"""The regression gate, run by hand against a live CouchDB: `bench --ddoc A --ddoc B --gate 5%` repeated, per
class of change.

Each class is a pair of revisions derived here from tests/ddocs/compare/base.json (written to OUT/ddocs, so
each trial's results name the files it built), with what the gate should say:

    rename          a variable renamed in a map (tests/ddocs/compare/renamed.json)    pass
    loop            a 20,000-iteration loop in every map call (loop.json)              fail
    reduce_added    a JavaScript reduce added to by_name                               fail
    reduce_heavier  that reduce with a 2,000-iteration loop per value                  fail
    view_added      a view emitting each of a document's 20 values                     fail
    bigger_value    by_name emits the whole document instead of null                   fail
    option_changed  the design doc's options gain local_seq (CouchDB's side only)      not fail (no cost expected)

Target (issue 47): a true regression above the threshold fails (exit 1) in at least 19 of 20 trials, the
rename passes (exit 0) in at least 19 of 20. One line per trial goes to stdout and to OUT/trials.jsonl (exit,
rounds, seconds, every figure's ratio and interval, the machine's load before and after); --summary reads
that file back. The trials share one count cache (DRAGNET_INSTRUCTIONS_CACHE=OUT/instructions-cache): each
revision is counted under valgrind once, by its class's first trial, and later trials pay only builds
(--no-cache counts in every trial, as a CI run without a kept cache does). On the gate's default metric (instructions) this needs valgrind and DRAGNET_COUCHDB_HOME.

    URL=http://127.0.0.1:5984 COUCHDB_USER=… COUCHDB_PASSWORD=… \\
    .venv/bin/python benchmarks/gate_check/run.py [--trials 20] [--docs 500] [--max-runs 10]
        [--classes rename,reduce_added,…] [--first 0] [--db NAME] [--out /tmp/gate-check]
    .venv/bin/python benchmarks/gate_check/run.py --summary /tmp/gate-check/trials.jsonl [more.jsonl …]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import statistics as st
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
BASE = REPO / "tests" / "ddocs" / "compare" / "base.json"
LIGHT = "function (keys, values, rereduce) {\n  return rereduce ? sum(values) : values.length;\n}"
# 2,000 iterations per value: tens of thousands of instructions a row, against ~160,000 for a document's maps
HEAVY = ("function (keys, values, rereduce) {\n  var h = 7;\n  for (var i = 0; i < values.length; i++) {\n"
         "    for (var j = 0; j < 2000; j++) {\n      h = (h * 31 + j) % 1000003;\n    }\n  }\n"
         "  return (rereduce ? sum(values) : values.length) + (h > 2000000 ? 1 : 0);\n}")
EXPECT = {"rename": "pass", "loop": "fail", "reduce_added": "fail", "reduce_heavier": "fail", "view_added": "fail",
          "bigger_value": "fail", "option_changed": "not fail"}


def revisions(case: str) -> tuple[dict, dict]:
    """The class's revisions A and B."""
    base = json.loads(BASE.read_text())
    a, b = copy.deepcopy(base), copy.deepcopy(base)
    if case == "rename":
        b = json.loads((REPO / "tests" / "ddocs" / "compare" / "renamed.json").read_text())
    elif case == "loop":
        b = json.loads((HERE / "loop.json").read_text())
    elif case == "reduce_added":
        b["views"]["by_name"]["reduce"] = LIGHT
    elif case == "reduce_heavier":
        a["views"]["by_name"]["reduce"] = LIGHT
        b["views"]["by_name"]["reduce"] = HEAVY
    elif case == "view_added":
        b["views"]["by_value"] = {"map": "function (doc) {\n  if (doc.type !== 'item') return;\n"
                                         "  for (var i = 0; i < doc.values.length; i++) {\n"
                                         "    emit(doc.values[i], doc.group);\n  }\n}"}
    elif case == "bigger_value":
        b["views"]["by_name"]["map"] = "function (doc) {\n  if (doc.type === 'item') emit(doc.name, doc);\n}"
    elif case == "option_changed":
        b["options"] = {"local_seq": True}
    else:
        raise ValueError(case)
    return a, b


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


def trial(url: str, db: str, data: Path, case: str, res: Path, args) -> dict:
    ddocs = res.parent / "ddocs"
    ddocs.mkdir(exist_ok=True)
    files = []
    for label, doc in zip("AB", revisions(case)):
        files.append(ddocs / f"{case}-{label}.json")
        files[-1].write_text(json.dumps(doc, indent=1))
    load0, t0 = os.getloadavg()[0], time.monotonic()
    env = dict(os.environ)
    if not args.no_cache:
        env["DRAGNET_INSTRUCTIONS_CACHE"] = str(res.parent / "instructions-cache")
    r = subprocess.run([sys.executable, "-m", "dragnet", "bench", "--url", url, "--db", db, "--data", str(data),
                        "--ddoc", f"A={files[0]}", "--ddoc", f"B={files[1]}", "--languages", "javascript",
                        "--no-baseline", "--gate", args.threshold, "--metric", args.metric,
                        "--max-runs", str(args.max_runs), "--json", "--results", str(res)],
                       capture_output=True, text=True, cwd=REPO, env=env)
    row = {"case": case, "exit": r.returncode, "seconds": round(time.monotonic() - t0, 1), "load_before": load0,
           "load_after": os.getloadavg()[0], "docs": args.docs, "threshold": args.threshold, "metric": args.metric,
           "max_runs": args.max_runs, "results": str(res), "counts_cached": not args.no_cache}
    try:
        out = json.loads(r.stdout)
        cmp = out["comparison"]
        row.update(rounds=out["rounds"], verdict=cmp["verdict"], changes=cmp.get("changes"),
                   figures=cmp["cells"][0].get("figures"), gate=cmp.get("gate"))
    except (ValueError, KeyError, IndexError, TypeError):
        row.update(rounds=None, verdict=(r.stderr.strip().splitlines() or ["?"])[-1][:300])
    return row


def _pct(v: float) -> str:
    return f"{(v - 1) * 100:+.1f}%"


def line(n: int, row: dict) -> str:
    figs = "; ".join(f"{m} {_pct(f[0])} [{_pct(f[1])} … {_pct(f[2])}]" for m, f in (row.get("figures") or {}).items())
    return (f"trial {n} {row['case']}: exit {row['exit']}, {row['rounds']} rounds, {row['seconds']:.0f} s, load "
            f"{row['load_before']:.1f}-{row['load_after']:.1f}; {figs}; {row['verdict']}")


def summary(rows: list[dict]) -> list[str]:
    out = []
    for case in EXPECT:
        mine = [r for r in rows if r["case"] == case]
        if not mine:
            continue
        codes = Counter(r["exit"] for r in mine)
        secs = sorted(r["seconds"] for r in mine)
        loads = sorted(x for r in mine for x in (r["load_before"], r["load_after"]))
        rounds = sorted(r["rounds"] for r in mine if r.get("rounds"))
        out.append(f"{case} (expected: {EXPECT[case]}): {len(mine)} trials, "
                   + ", ".join(f"exit {c}: {n}" for c, n in sorted(codes.items()))
                   + f"; {st.median(secs):.0f} s per trial ({secs[0]:.0f}-{secs[-1]:.0f})"
                   + (f"; rounds {rounds[0]}-{rounds[-1]}" if rounds else "")
                   + f"; load {loads[0]:.1f}-{loads[-1]:.1f}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--docs", type=int, default=500)
    ap.add_argument("--threshold", default="5%")
    ap.add_argument("--out", default="/tmp/gate-check")
    ap.add_argument("--metric", default="instructions", choices=("cpu", "qs", "instructions", "wall"),
                    help="the gate's (default: instructions, as bench --gate's)")
    ap.add_argument("--max-runs", type=int, default=10, help="the gate's bound on rounds")
    ap.add_argument("--first", type=int, default=0, help="number the trials from here (a study split in parts)")
    ap.add_argument("--classes", default="rename,reduce_added,reduce_heavier,view_added,bigger_value,option_changed",
                    help=f"which classes, comma-separated, taken in turn (of {', '.join(EXPECT)})")
    ap.add_argument("--db", default=None, help="the database (default: gate_check_DOCS; another for a second "
                                                "run beside the first)")
    ap.add_argument("--no-cache", action="store_true", help="count every revision in every trial (by default the "
                    "trials share OUT/instructions-cache: a revision is counted under valgrind once)")
    ap.add_argument("--summary", nargs="+", metavar="TRIALS_JSONL", help="only summarise these trials files")
    args = ap.parse_args()
    if args.summary:
        rows = [json.loads(x) for f in args.summary for x in Path(f).read_text().splitlines() if x.strip()]
        print("\n".join(summary(rows)))
        return 0
    url = os.environ.get("URL") or sys.exit("set URL (no credentials; COUCHDB_USER/COUCHDB_PASSWORD)")
    cases = args.classes.split(",")
    if not set(cases) <= set(EXPECT):
        ap.error(f"--classes {args.classes}: expected some of {', '.join(EXPECT)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = data_file(out, args.docs)
    db = args.db or f"gate_check_{args.docs}"
    rows = []
    for t in range(args.first, args.first + args.trials):
        for case in cases:   # the classes in turn, so the load touches each alike
            row = trial(url, db, data, case, out / f"{case}-{t}", args)
            rows.append(row)
            with open(out / "trials.jsonl", "a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(line(t + 1, row), flush=True)
    print("\n".join(summary(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
