#!/usr/bin/env python3
"""The gate's looks replayed on the trials' own builds: how often does a change that costs nothing fail on CPU?

For one class (default option_changed: CouchDB's side only, judged on CPU) this reads every trial's builds
(run.py's OUT folders, or a --dump file written before), takes each round's ln(B/A) of the metric, and
prints:
- each trial's looks as the gate took them (a look after each batch: 5 rounds, then as many as it estimated,
  up to --max-runs), with the interval and what it said;
- whether the trials share one true ratio: the spread of the trials' means against what the spread within
  a trial predicts (a one-way analysis of variance; a trial-level offset makes the gate's interval, which
  treats rounds as independent, too narrow);
- the false-fail rate of the gate's looks at a true ratio of 1, by resampling the measured rounds: (a) every
  round drawn from all trials' rounds, centred; (b) the same within-trial noise plus a trial-level offset of
  the measured size. Only the one figure is simulated (the gate also holds on wall time and the query
  servers' CPU, which can only turn a fail into undecided).

    .venv/bin/python benchmarks/gate_check/looks.py OUT [OUT …] [--case option_changed] [--dump builds.jsonl]
    .venv/bin/python benchmarks/gate_check/looks.py --from benchmarks/gate_check/option-changed-builds.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics as st
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE))

from dragnet.measure.decide import LEVEL, MIN_ROUNDS, _betai, paired_interval  # noqa: E402
from dragnet.report.compare import gate_rounds_needed  # noqa: E402
import spread  # noqa: E402


def trial_logs(rows: list[dict], case: str, metric: str) -> dict[tuple[str, int], list[list[float]]]:
    """(source, trial) -> the batches' ln(B/A) per round, in the order the gate judged them."""
    by: dict[tuple, dict] = {}
    for r in rows:
        if r["case"] == case and r["ok"] and r.get(metric) and r.get("round") is not None:
            key = (r.get("source", ""), r["trial"], r["batch"], r["round"])
            by.setdefault(key, {})[r["ddoc"]] = r[metric]
    out: dict[tuple[str, int], dict[str, list[float]]] = {}
    for (src, trial, batch, rnd), v in sorted(by.items(), key=lambda kv: (kv[0][0], kv[0][1], _batch_no(kv[0][2]),
                                                                            kv[0][3])):
        if "A" in v and "B" in v:
            out.setdefault((src, trial), {}).setdefault(batch, []).append(math.log(v["B"] / v["A"]))
    return {k: [b[x] for x in sorted(b, key=_batch_no)] for k, b in out.items()}


def _batch_no(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def verdict(logs: list[float], threshold: float) -> tuple[bool | None, "object"]:
    """The gate's rule on one figure: True fail (whole interval above 1 + threshold), False pass (below), None."""
    iv = paired_interval([math.exp(x) for x in logs], [1.0] * len(logs), LEVEL)
    if iv.low > 1 + threshold:
        return True, iv
    if iv.high < 1 + threshold:
        return False, iv
    return None, iv


def gate(draw, threshold: float, max_runs: int, min_rounds: int = MIN_ROUNDS) -> tuple[int, bool | None, int]:
    """runner/gate.run_gate's batches on one figure: (rounds, verdict, looks). draw() -> one round's ln(B/A)."""
    logs = [draw() for _ in range(min(min_rounds, max_runs))]
    looks = 0
    while True:
        looks += 1
        v, iv = verdict(logs, threshold)
        n = len(logs)
        if v is not None or n >= max_runs:
            return n, v, looks
        need = gate_rounds_needed(iv, threshold)
        logs += [draw() for _ in range(min(max_runs - n, max(1, (need or n + 1) - n)))]


def variance_parts(groups: list[list[float]]) -> dict:
    """One-way analysis of variance of the trials' rounds: within-trial sd, between-trial sd (method of
    moments, 0 if negative) and the F test's p-value that every trial has the same mean."""
    k, n_all = len(groups), sum(len(g) for g in groups)
    grand = math.fsum(x for g in groups for x in g) / n_all
    ssw = math.fsum((x - st.mean(g)) ** 2 for g in groups for x in g)
    ssb = math.fsum(len(g) * (st.mean(g) - grand) ** 2 for g in groups)
    msw, msb = ssw / (n_all - k), ssb / (k - 1)
    n0 = (n_all - sum(len(g) ** 2 for g in groups) / n_all) / (k - 1)
    f = msb / msw
    return {"trials": k, "rounds": n_all, "mean": grand, "within_sd": math.sqrt(msw),
            "between_sd": math.sqrt(max(0.0, (msb - msw) / n0)), "F": f, "p": f_sf(f, k - 1, n_all - k)}


def f_sf(f: float, d1: int, d2: int) -> float:
    """P(F > f) for F(d1, d2): the regularised incomplete beta I_{d2/(d2+d1 f)}(d2/2, d1/2), decide's."""
    if f <= 0:
        return 1.0
    return _betai(d2 / 2, d1 / 2, d2 / (d2 + d1 * f))


def simulate(pool: list[float], threshold: float, max_runs: int, trials: int, seed: int,
             offset_sd: float = 0.0) -> dict:
    """The gate's looks at a true ratio of 1: rounds drawn from `pool` (centred residuals), each simulated trial
    shifted by its own N(0, offset_sd) offset."""
    rng = random.Random(seed)
    fails = passes = 0
    rounds = []
    for _ in range(trials):
        u = rng.gauss(0, offset_sd) if offset_sd else 0.0
        n, v, _ = gate(lambda: u + rng.choice(pool), threshold, max_runs)
        fails += v is True
        passes += v is False
        rounds.append(n)
    return {"trials": trials, "fail": fails, "pass": passes, "undecided": trials - fails - passes,
            "median_rounds": st.median(rounds)}


def _pct(x: float) -> str:
    return f"{(math.exp(x) - 1) * 100:+.1f}%"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="*", help="run.py's --out folders")
    ap.add_argument("--from", dest="source", help="a --dump file instead of the folders")
    ap.add_argument("--dump", help="write this class's builds here (one line each)")
    ap.add_argument("--case", default="option_changed")
    ap.add_argument("--metric", default="cpu", choices=sorted(spread.METRICS))
    ap.add_argument("--threshold", type=float, default=0.05)
    ap.add_argument("--max-runs", type=int, default=10)
    ap.add_argument("--sims", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if args.source:
        rows = [json.loads(x) for x in Path(args.source).read_text().splitlines() if x.strip()]
    elif args.out:
        rows = []
        for o in args.out:
            rows += [dict(r, source=Path(o).name) for r in spread.builds(Path(o)) if r["case"] == args.case]
    else:
        ap.error("give run.py's --out folders or --from FILE")
    if args.dump:
        Path(args.dump).write_text("".join(json.dumps(r) + "\n" for r in rows if r["case"] == args.case))
    trials = trial_logs(rows, args.case, args.metric)
    if len(trials) < 2:
        sys.exit(f"looks: {args.case}: fewer than two trials with {args.metric} in both revisions")
    print(f"{args.case}, {args.metric}, gate at +{args.threshold:.0%}, 99% interval at each look:")
    fails = 0
    for (src, t), batches in sorted(trials.items()):
        logs, looks = [], []
        for b in batches:
            logs += b
            v, iv = verdict(logs, args.threshold)
            looks.append(f"n={len(logs)} {_pct(math.log(iv.ratio))} [{_pct(math.log(iv.low))} … "
                         f"{_pct(math.log(iv.high))}] {'FAIL' if v else 'pass' if v is False else 'undecided'}")
        fails += v is True
        ups = sum(x > 0 for x in logs)
        print(f"  {src} trial {t}: {'; '.join(looks)}; {ups} of {len(logs)} rounds B > A")
    groups = [sum(b, []) for b in trials.values()]
    parts = variance_parts(groups)
    print(f"{parts['trials']} trials, {parts['rounds']} rounds, {fails} failed on {args.metric}; all rounds: "
          f"mean {_pct(parts['mean'])}, within-trial sd of ln(B/A) {parts['within_sd']:.3f}, between-trial sd "
          f"{parts['between_sd']:.3f} (F {parts['F']:.2f}, p {parts['p']:.3f} that the trials share one mean)")
    # each trial's own residuals (scaled back to the noise's size): the within-trial noise, no trial offset
    pool = [(x - st.mean(g)) * math.sqrt(len(g) / (len(g) - 1)) for g in groups for x in g]
    flat = [x - parts["mean"] for g in groups for x in g]
    for name, p, off in (("rounds drawn from all trials' rounds (centred), independent", flat, 0.0),
                         ("within-trial noise + a trial offset of the measured between-trial sd", pool,
                          parts["between_sd"])):
        s = simulate(p, args.threshold, args.max_runs, args.sims, args.seed, off)
        print(f"  true ratio 1, {name}: {s['fail']} of {s['trials']} fail ({s['fail'] / s['trials']:.2%}), "
              f"{s['pass']} pass, {s['undecided']} undecided; median {s['median_rounds']:.0f} rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
