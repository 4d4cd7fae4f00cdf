#!/usr/bin/env python3
"""The beam probe's cost: the same view build with and without it, interleaved, on a CouchDB dragnet started.

Every round builds one fresh view once without the probe and once per arm with it (a new design document each
time, so each build starts from nothing), each arm first in turn round by round. An arm is the probe
(dragnet.measure.beam_probe: every process's reductions every period, msacc on for --msacc-on-ms of each
period; the period itself: throughout). Each build's CPU is the kernel's accounting of CouchDB's process tree
over the build (results' `cpu.cpu_s`: beam and its query servers); the probe's own process is counted apart
(`cpu_during_build_s`). Printed: each round, then per arm the ratio with/without of CouchDB's CPU, and of
CouchDB's CPU plus the probe's, each as a geometric mean with its paired 99% t interval
(dragnet.measure.decide), and the machine's load average before and after.
Target: at most ×1.03 on CouchDB's CPU.

    eval "$(DRAGNET_CI_LIVE_DIR=/tmp/live .ci/live-couchdb start)"
    .venv/bin/python benchmarks/beam_activity_overhead/run.py [--docs 20000] [--repeat 8] [--view erlang]

The database (`dragnet_beam_overhead`, --docs small documents, q=2) is made once and kept; --drop deletes it.

`--per-sample SECONDS` measures one sample's cost instead, where a build's noise cannot hide it: on the idle
node, the probe sampling back to back (a 1 ms period) for SECONDS against nothing for SECONDS, interleaved
--repeat times; beam's CPU (utime + stime of beam.smp) over each, and the difference per sample.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(REPO))

from dragnet.couchdb.client import connect  # noqa: E402
from dragnet.index import addview  # noqa: E402
from dragnet.measure import beam, beam_probe, decide  # noqa: E402

DB = "dragnet_beam_overhead"
DEFAULT_ON_MS = beam_probe.MSACC_ON_MS
TARGET = 1.03
VIEWS = {
    "javascript": ("js", "function (doc) { emit(doc.type, doc.n); } // NONCE"),
    "erlang": ("erl", "%% dragnet: language=erlang\n%% NONCE\nfun({Doc}) -> Emit(proplists:get_value(<<\"type\">>, Doc), null) end."),
}


def ensure_db(couch, n: int) -> None:
    if couch.request("HEAD", f"/{DB}", ok=(200, 404)).status_code == 200:
        if couch.get(f"/{DB}")["doc_count"] == n:
            return
        couch.request("DELETE", f"/{DB}", ok=(200, 202))
    couch.request("PUT", f"/{DB}?q=2", ok=(201, 202))
    for start in range(0, n, 2000):
        docs = [{"_id": f"d{i:07d}", "type": f"t{i % 13}", "n": i, "text": "x" * 100}
                for i in range(start, min(n, start + 2000))]
        couch.request("POST", f"/{DB}/_bulk_docs", json={"docs": docs}, ok=(201,))


def build(url: str, view: str, probe: bool, folder: Path, i: int, msacc_on_ms: int | None = None) -> dict:
    beam_probe.MSACC_ON_MS = DEFAULT_ON_MS if msacc_on_ms is None else msacc_on_ms
    ext, source = VIEWS[view]
    path = folder / f"view-{i}.{ext}"
    path.write_text(source.replace("NONCE", str(time.time_ns())))
    res = addview.benchmark(url=url, db=DB, view_path=str(path), pidstat=False, iostat=False,
                            beam=True if probe else "off: the benchmark's control build")
    if not res["summary"]["ok"]:
        raise SystemExit(f"build failed: {res['summary'].get('error')}")
    rec = res.get("beam_activity") or {}
    if probe and rec.get("absent"):
        raise SystemExit(f"the probe did not run: {rec['absent']}")
    probe_cpu = ((rec.get("probe") or {}).get("cpu_during_build_s") or 0.0) if probe else 0.0
    sampling = sum(n.get("sampling_s", 0.0) for n in (rec.get("nodes") or {}).values()) if probe else 0.0
    got = beam.summary(rec) if probe else None
    return {"cpu_s": res["cpu"]["cpu_s"], "wall_s": res["summary"]["wall_time_s"], "probe_cpu_s": probe_cpu,
            "sampling_s": sampling, "by_process": res["cpu"]["by_process"],
            "msacc_coverage": got and got["msacc_coverage"], "activities": got and got["activities"]}


def per_sample(url: str, seconds: float, rounds: int) -> None:
    from urllib.parse import urlsplit

    from dragnet.couchdb import control as ctl

    inst = ctl.load_state(urlsplit(url).port or 5984)
    if inst is None or inst.backend != "local":
        raise SystemExit("--per-sample needs a local CouchDB dragnet started")
    targets, why = beam_probe.find_targets(url)
    if why:
        raise SystemExit(why)
    with_s, without_s, samples = [], [], []
    for r in range(rounds):
        for probe in ((True, False) if r % 2 == 0 else (False, True)):
            p = beam_probe.Probe(targets[0], period_ms=1).start() if probe else None
            c0 = beam_probe.process_cpu_s(inst.pid)
            time.sleep(seconds)
            c1 = beam_probe.process_cpu_s(inst.pid)
            if p is not None:
                samples.append(next(iter(beam.parse(p.stop()).values()))["samples"])
                with_s.append(c1 - c0)
            else:
                without_s.append(c1 - c0)
    per = (sum(with_s) - sum(without_s)) / sum(samples)
    print(f"beam's CPU over {seconds:g} s: with back-to-back samples {[round(x, 3) for x in with_s]}, without "
          f"{[round(x, 3) for x in without_s]}; {sum(samples)} samples")
    print(f"one sample costs beam {1000 * per:.3f} ms of CPU: at one every {beam_probe.PERIOD_MS} ms, "
          f"{100 * per * 1000 / beam_probe.PERIOD_MS:.2f}% of one core; load average {os.getloadavg()[0]:.1f}")


def fmt(iv: decide.Interval) -> str:
    return f"×{iv.ratio:.3f} [{iv.low:.3f}–{iv.high:.3f}] (n={iv.n})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=8)
    ap.add_argument("--view", choices=sorted(VIEWS), default="javascript")
    ap.add_argument("--period", type=int, default=beam_probe.PERIOD_MS, help="the probe's sample period, ms")
    ap.add_argument("--out", help="write every round's builds here as JSON")
    ap.add_argument("--msacc-on-ms", type=lambda t: [int(x) for x in t.split(",")], default=[DEFAULT_ON_MS],
                    metavar="MS[,MS...]", help="microstate accounting on for MS at the start of every period (the "
                    "period: throughout); several: one arm each, interleaved with the builds without the probe "
                    f"(default {DEFAULT_ON_MS})")
    ap.add_argument("--per-sample", type=float, metavar="SECONDS", help="measure one sample's cost instead")
    ap.add_argument("--drop", action="store_true", help="delete the database afterwards")
    ap.add_argument("--probe-source", metavar="ERL", help="the probe's module from this file (another version of "
                    "beam_probe.erl, to compare)")
    args = ap.parse_args()
    beam_probe.PERIOD_MS = args.period
    if args.probe_source:
        beam_probe.SOURCE = Path(args.probe_source)
    url = os.environ.get("DRAGNET_TEST_COUCHDB_URL")
    if not url:
        raise SystemExit("set DRAGNET_TEST_COUCHDB_URL to a CouchDB dragnet started (.ci/live-couchdb start)")
    if args.per_sample:
        per_sample(url, args.per_sample, args.repeat)
        return
    couch = connect(url)
    ensure_db(couch, args.docs)
    folder = Path(f"/tmp/dragnet-beam-overhead-{os.getpid()}")
    folder.mkdir(exist_ok=True)
    load_before = os.getloadavg()
    arms = [("without", None)] + [(f"msacc {ms} ms of {args.period}", ms) for ms in args.msacc_on_ms]
    rounds = []
    try:
        build(url, args.view, True, folder, -1)      # warm-up: the query server's processes, the caches
        for r in range(args.repeat):
            order = arms[r % len(arms):] + arms[:r % len(arms)]     # each arm first in turn
            got = {name: build(url, args.view, ms is not None, folder, len(arms) * r + k, ms)
                   for k, (name, ms) in enumerate(order)}
            rounds.append({"round": r, "order": [name for name, _ in order], **got})
            print(f"round {r + 1}: " + "; ".join(
                f"{name} {got[name]['cpu_s']:.3f} s CPU" + (f" (+{got[name]['probe_cpu_s']:.3f} s probe)"
                                                            if ms is not None else "") + f" {got[name]['wall_s']:.2f} s wall"
                for name, ms in arms), flush=True)
    finally:
        for p in folder.iterdir():
            p.unlink()
        folder.rmdir()
        if args.drop:
            couch.request("DELETE", f"/{DB}", ok=(200, 202, 404))
    load_after = os.getloadavg()
    print(f"\n{args.view} view, {args.docs:,} documents, {args.repeat} rounds, a sample every {args.period} ms; "
          f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after")
    without = [r["without"]["cpu_s"] for r in rounds]
    out = {"view": args.view, "docs": args.docs, "period_ms": args.period, "arms": [n for n, _ in arms],
           "rounds": rounds, "load": [load_before, load_after], "ratios": {}}
    for name, _ms in arms[1:]:
        with_cpu = [r[name]["cpu_s"] for r in rounds]
        couch_iv = decide.paired_interval(with_cpu, without)
        total_iv = decide.paired_interval([r[name]["cpu_s"] + r[name]["probe_cpu_s"] for r in rounds], without)
        wall_iv = decide.paired_interval([r[name]["wall_s"] for r in rounds], [r["without"]["wall_s"] for r in rounds])
        print(f"{name}: CouchDB's CPU with the probe / without: {fmt(couch_iv)}  (target ≤ ×{TARGET})")
        print(f"{name}: CouchDB's CPU + the probe's own / without: {fmt(total_iv)}")
        print(f"{name}: wall time with / without: {fmt(wall_iv)}")
        bound = sorted(r[name]["sampling_s"] / r["without"]["cpu_s"] for r in rounds)
        print(f"{name}: the samples' rpc round trips (an upper bound of their CPU in beam) / the build's CPU "
              f"without the probe: median {100 * bound[len(bound) // 2]:.2f}%, range {100 * bound[0]:.2f}–"
              f"{100 * bound[-1]:.2f}%")
        verdict = ("met" if couch_iv.high <= TARGET else "not met" if couch_iv.low > TARGET
                   else "not resolved at this spread")
        print(f"{name}: target ×{TARGET} on CouchDB's CPU: {verdict}")
        out["ratios"][name] = {"couchdb_cpu": couch_iv.as_dict(), "with_probe_cpu": total_iv.as_dict(),
                               "wall": wall_iv.as_dict()}
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
