#!/usr/bin/env python3
"""A/A and power check of the separated / tied / unresolved decision (dragnet.measure.decide), run by hand.

    .venv/bin/python benchmarks/aa_check/run.py sim [--trials 2000] [--max-runs 15]
        the adaptive rule (a 99% interval at every look from round 5 to --max-runs) on simulated rounds: a shared
        per-round load (lognormal, sd 20%) times each item's own noise; A/A, a true gap at the noise
        threshold (2%), 5% and 10%; normal noise and noise with 10% of runs 30% slower.
    .venv/bin/python benchmarks/aa_check/run.py qsbench [--server python3] [--trials 20] [--count 1000]
        the same real server listed twice in qsbench --repeat auto, `trials` times, on this machine: how
        often it comes out separated (a false claim), tied or unresolved; then the power for a 5% gap,
        simulated with the spread of the within-round log ratios those real trials measured.

Target: A/A tied or unresolved in at least 95% of trials (separated in at most 5%).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO))

from dragnet.measure import decide  # noqa: E402


def sim_trials(true: float, sd: float, trials: int, contaminated: float = 0.0, seed: int = 0,
               max_runs: int = decide.MAX_RUNS):
    out = []
    for t in range(trials):
        rng = random.Random(f"{seed}-{true}-{sd}-{contaminated}-{t}")
        load: dict[int, float] = {}

        def draw(item, r):
            load.setdefault(r, math.exp(rng.gauss(0, 0.2)))
            x = (1.0 if item == "a" else true) * load[r] * math.exp(rng.gauss(0, sd))
            return x * (1.3 if rng.random() < contaminated else 1.0)

        rounds, pairs = decide.simulate(decide.Plan(["a", "b"], seed=t, max_runs=max_runs), draw)
        out.append((rounds, pairs[0].state))
    return out


def row(label: str, res) -> str:
    c = Counter(s for _, s in res)
    n = len(res)
    rounds = sorted(r for r, _ in res)
    return (f"| {label} | {n} | {c[decide.SEPARATED] / n:.1%} | {c[decide.TIED] / n:.1%} | "
            f"{c[decide.UNRESOLVED] / n:.1%} | {rounds[n // 2]} | {rounds[int(0.9 * (n - 1))]} |")


HEADER = ("| true ratio, per-run noise | trials | separated | tied | unresolved | median rounds | p90 rounds |\n"
          "|---|---|---|---|---|---|---|")


def sim(args) -> None:
    print(HEADER)
    for sd, cont in ((0.01, 0.0), (0.03, 0.0), (0.03, 0.1)):
        for true in (1.0, 1.02, 1.05, 1.10):
            noise = f"sd {sd:.0%}" + (f", {cont:.0%} of runs +30%" if cont else "")
            print(row(f"×{true:.2f}, {noise}", sim_trials(true, sd, args.trials, cont, max_runs=args.max_runs)),
                  flush=True)


def qsbench_trials(args) -> None:
    from dragnet.qsbench import run as qsbench

    specs, _ = qsbench.available_servers()
    spec = next((s for s in specs if s.name == args.server), None)
    if spec is None:
        sys.exit(f"{args.server}: not found here ({', '.join(s.name for s in specs)})")
    import dataclasses

    a, b = dataclasses.replace(spec, name=f"{spec.name}-a"), dataclasses.replace(spec, name=f"{spec.name}-b")
    view = qsbench.load_view(args.view, spec.dialect)
    docs = qsbench.load_docs(qsbench.generated_docs_path(args.count, 1, REPO / "cache"))
    print(f"{args.server} twice, {len(docs)} documents, {args.trials} trials of qsbench --repeat auto "
          f"(metric {args.metric}); load average at start {os.getloadavg()[0]:.1f}", flush=True)
    states, rounds, sds, secs = [], [], [], []
    for t in range(args.trials):
        t0 = time.monotonic()
        bench = qsbench.run_benchmark([(a, view), (b, view)], docs, metric=args.metric, seed=t)
        (pair,) = bench.verdicts
        states.append(pair.state)
        rounds.append(bench.rounds)
        sds.append(pair.interval.sd_log)
        secs.append(time.monotonic() - t0)
        print(f"  trial {t + 1}: {pair.format()} ({bench.rounds} rounds, {secs[-1]:.0f} s, load "
              f"{os.getloadavg()[0]:.1f})", flush=True)
    c = Counter(states)
    n = len(states)
    print(f"A/A on this machine: separated {c[decide.SEPARATED]}/{n}, tied {c[decide.TIED]}/{n}, unresolved "
          f"{c[decide.UNRESOLVED]}/{n}; median rounds {statistics.median(rounds)}, median {statistics.median(secs):.0f} s "
          f"a trial; load average at the end {os.getloadavg()[0]:.1f}")
    sd = statistics.median(sds)
    print(f"median sd of the within-round log ratios: {sd:.4f}; a 5% gap simulated with it "
          f"(sd per run {sd / math.sqrt(2):.4f}), {args.sim_trials} trials:")
    print(HEADER)
    for true in (1.0, 1.05):
        print(row(f"×{true:.2f}, measured spread", sim_trials(true, sd / math.sqrt(2), args.sim_trials)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("sim")
    s.add_argument("--trials", type=int, default=2000)
    s.add_argument("--max-runs", type=int, default=decide.MAX_RUNS, help="the looks' bound (make demo: 25)")
    q = sub.add_parser("qsbench")
    q.add_argument("--server", default="python3")
    q.add_argument("--trials", type=int, default=20)
    q.add_argument("--count", type=int, default=1000)
    q.add_argument("--metric", choices=["cpu", "wall"], default="cpu")
    q.add_argument("--sim-trials", type=int, default=2000)
    q.add_argument("--view", default=str(REPO / "views" / "income"))
    args = ap.parse_args()
    sim(args) if args.mode == "sim" else qsbench_trials(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
