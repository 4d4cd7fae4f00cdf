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

Each arm's ratio is also printed per query-server CPU-second (CouchDB's CPU over its query servers': the probe
never runs in them, so their CPU counts the work at the speed the machine gave that build).
`--segments PERIODS` measures within builds instead: one probe per build works PERIODS periods, rests as long,
and so on, and CouchDB's CPU per byte sent to its query servers is compared between the two kinds of segment.
`--from FILE` recomputes and prints a run recorded with --out.

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
QUERY_SERVERS = ("couchjs",)     # the javascript view's, in the results' `cpu.by_process`
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


# --segments: the probe's own loop, replaced (one probe, one home: the rest of beam_probe.erl runs as it is) by
# one that works for SEG periods as the probe does, then rests for SEG periods, and so on from the build's start,
# saying "seg on" or "seg off" at each change
SEGMENTED_LOOP = """loop(States, Period, OnMs) ->
    receive
        stop -> [finish(S) || S <- States];
        begin_build ->
            Begun = [rebase(S) || S <- States],
            out(["begun"]),
            out(["seg", FIRST]),
            case FIRST of
                on -> window_end(Begun, Period, OnMs);
                off -> [msacc(S, false) || S <- Begun]
            end,
            segment(Begun, Period, OnMs, FIRST, 1)
    end.

segment(States, Period, OnMs, Mode, K) ->
    Wait = case Mode of on -> gap(Period, OnMs); off -> Period end,
    receive
        stop -> [finish(S) || S <- States]
    after Wait ->
        Next = case K rem SEG of 0 -> flip(Mode); _ -> Mode end,
        Next =/= Mode andalso out(["seg", Next]),
        case Next of
            on ->
                Sampled = [resample(S) || S <- States],
                [msacc(S, true) || S <- Sampled, OnMs < Period],
                window_end(Sampled, Period, OnMs),
                segment(Sampled, Period, OnMs, on, K + 1);
            off ->
                segment(States, Period, OnMs, off, K + 1)
        end
    end.

flip(on) -> off;
flip(off) -> on.

"""


def segmented_source(periods: int, first: str, folder: Path) -> Path:
    """beam_probe.erl with its loop replaced by SEGMENTED_LOOP (periods a segment, the first one `first`)."""
    src = beam_probe.SOURCE.read_text()
    start, end = src.index("loop(States, Period, OnMs) ->"), src.index("%% the wait between the end of one window")
    loop = SEGMENTED_LOOP.replace("FIRST", first).replace("SEG", str(periods))
    path = folder / f"segmented-{first}.erl"
    path.write_text(src[:start] + loop + src[end:])
    return path


def couchdb_counters(beam_pid: int, spawners: set[int]) -> dict:
    """The kernel's counters of a CouchDB now: beam's CPU, and each query server's CPU and bytes read (its
    input: the documents sent to it), by (pid, start time). spawners: its erl_child_setup (cpu.spawners), found
    once, so that each reading walks from them rather than through all of beam's threads."""
    from dragnet.measure import cpu

    qs = {}
    for pid in cpu.query_server_pids(beam_pid, spawners=spawners):
        try:
            start = cpu._start_time(Path(f"/proc/{pid}/stat").read_text())
            rchar = int(Path(f"/proc/{pid}/io").read_text().split("rchar:")[1].split()[0])
        except (OSError, IndexError):
            continue
        run = cpu.schedstat_of(pid)
        if run is not None:
            qs[(pid, start)] = (run[0], rchar)
    return {"t": time.monotonic(), "beam_s": (cpu.schedstat_of(beam_pid) or (0.0, 0.0))[0], "qs": qs}


def segment_figures(marks: list[tuple[str, dict]]) -> list[dict]:
    """Each whole segment between two marks: its mode, seconds, beam's and the query servers' CPU, and the bytes
    the query servers read (a query server new in the segment counts from 0)."""
    out = []
    for (mode, a), (_next, b) in zip(marks, marks[1:]):
        qs_s = read = 0.0
        for key, (run, rchar) in b["qs"].items():
            run0, rchar0 = a["qs"].get(key, (0.0, 0))
            qs_s, read = qs_s + run - run0, read + rchar - rchar0
        out.append({"mode": mode, "s": b["t"] - a["t"], "beam_s": b["beam_s"] - a["beam_s"], "qs_s": qs_s,
                    "read": read})
    return out


def per_build_segments(segments: list[dict], probe_cpu_s: float = 0.0) -> tuple[float, float] | None:
    """(CouchDB's CPU per byte the query servers read in the probe's working segments, in its resting ones) of
    one build. The first segment (the query servers' start) is left out, and so is any segment whose query
    servers read less than half the median segment's bytes (the build's end falls in it). probe_cpu_s: the
    probe process's own CPU over the build, added to the working segments kept in their share of all working
    time (it idles while resting)."""
    body = segments[1:]
    if not body:
        return None
    reads = sorted(s["read"] for s in body)
    full = [s for s in body if s["read"] >= reads[len(reads) // 2] / 2 and s["read"] > 0]
    sums = {m: [sum(s["beam_s"] + s["qs_s"] for s in full if s["mode"] == m),
                sum(s["read"] for s in full if s["mode"] == m)] for m in ("on", "off")}
    if not sums["on"][1] or not sums["off"][1]:
        return None
    if probe_cpu_s:
        working = sum(s["s"] for s in segments if s["mode"] == "on")
        sums["on"][0] += probe_cpu_s * sum(s["s"] for s in full if s["mode"] == "on") / working
    return sums["on"][0] / sums["on"][1], sums["off"][0] / sums["off"][1]


def segmented(url: str, view: str, folder: Path, builds: int, periods: int, out_path: str | None) -> None:
    """One probe per build, alternating between working and resting every `periods` periods, with the kernel's
    counters read at each change; each build starts in the other mode than the one before (a trend within a
    build then cancels over builds)."""
    from urllib.parse import urlsplit

    from dragnet.couchdb import control as ctl

    inst = ctl.load_state(urlsplit(url).port or 5984)
    if inst is None or inst.backend != "local" or not inst.pid:
        raise SystemExit("--segments needs a local CouchDB dragnet started")
    from dragnet.measure import cpu

    spawners = cpu.spawners(inst.pid)
    marks: list[tuple[str, dict]] = []
    plain_line = beam_probe.Probe._line

    def line(self, raw: bytes) -> None:
        fields = raw.split()
        if fields[:1] == [b"seg"]:
            marks.append((fields[1].decode(), couchdb_counters(inst.pid, spawners)))
            return
        plain_line(self, raw)

    beam_probe.Probe._line = line
    load_before = os.getloadavg()
    runs = []
    source = beam_probe.SOURCE
    try:
        for i in range(builds):
            first = "on" if i % 2 == 0 else "off"
            beam_probe.SOURCE = segmented_source(periods, first, folder)
            marks.clear()
            b = build(url, view, True, folder, i)
            segs = segment_figures(marks)
            got = per_build_segments(segs)
            runs.append({"build": i, "first": first, "cpu_s": b["cpu_s"], "wall_s": b["wall_s"],
                         "probe_cpu_s": b["probe_cpu_s"], "segments": segs,
                         "per_byte": got and {"on": got[0], "off": got[1]}})
            print(f"build {i + 1}: {len(segs)} segments, {b['wall_s']:.1f} s wall"
                  + (f", CPU per byte working / resting ×{got[0] / got[1]:.3f}" if got else ", too short"),
                  flush=True)
    finally:
        beam_probe.Probe._line, beam_probe.SOURCE = plain_line, source
    run = {"view": view, "period_ms": beam_probe.PERIOD_MS, "msacc_on_ms": beam_probe.MSACC_ON_MS,
           "segment_periods": periods, "builds": runs, "load": [load_before, os.getloadavg()]}
    summarize_segments(run)
    if out_path:
        Path(out_path).write_text(json.dumps(run, indent=1, default=str) + "\n")


def pool_segmented(runs: list[dict]) -> dict:
    """Several segmented runs as one: their builds in order, the load before the first and after the last.
    Runs of other segment lengths or sample periods are refused: their segments are not the same measure."""
    if any("segment_periods" not in r for r in runs):
        raise SystemExit("--from with several files pools segmented runs only (--segments)")
    keys = {(r["view"], r["period_ms"], r["segment_periods"]) for r in runs}
    if len(keys) > 1:
        raise SystemExit(f"--from: the runs differ in view, sample period or segment length: {sorted(keys)}")
    return {**runs[0], "builds": [b for r in runs for b in r["builds"]],
            "load": [runs[0]["load"][0], runs[-1]["load"][1]], "pooled": len(runs)}


def summarize_segments(run: dict) -> decide.Interval:
    """Print a segmented run's ratios, recomputed from its segments; return CouchDB's."""
    pairs = [per_build_segments(b["segments"]) for b in run["builds"]]
    pairs = [p for p in pairs if p]
    iv = decide.paired_interval([a for a, _ in pairs], [b for _, b in pairs])
    segs = [s for b in run["builds"] for s in b["segments"][1:]]
    probe = sorted(b["probe_cpu_s"] / b["cpu_s"] for b in run["builds"] if b["cpu_s"])
    totals = [per_build_segments(b["segments"], b["probe_cpu_s"]) for b in run["builds"]]
    totals = [p for p in totals if p]
    total_iv = decide.paired_interval([a for a, _ in totals], [b for _, b in totals])
    print(f"\n{run['view']} view, {len(run['builds'])} builds, segments of {run['segment_periods']} periods of "
          f"{run['period_ms']} ms ({len(segs)} after the first of each build); load average "
          f"{run['load'][0][0]:.1f} before, {run['load'][1][0]:.1f} after")
    print(f"CouchDB's CPU per byte sent to the query servers, the probe working / resting, within the same builds: "
          f"{fmt(iv)}  (target ≤ ×{TARGET}): {verdict(iv)}")
    print(f"the probe's own process (its CPU over the build) / CouchDB's CPU: median "
          f"{100 * probe[len(probe) // 2]:.2f}%, range {100 * probe[0]:.2f}–{100 * probe[-1]:.2f}%")
    print(f"the same with the probe's own process added to its working segments: {fmt(total_iv)}  "
          f"(target ≤ ×{TARGET}): {verdict(total_iv)}")
    return iv


def per_query_server(rounds: list[dict], arm: str) -> decide.Interval | None:
    """CouchDB's CPU over its query servers' CPU, with the probe against without, paired by round.

    The probe runs in beam and never in a query server, whose CPU for one build's documents is the same work
    each time; so the query servers' CPU counts the work done, at the speed the machine gave that build. Divided
    by it, a build's CPU no longer follows the machine's swings (the same builds' couchjs CPU moved 14% between
    rounds at load 20), and the ratio's excess over 1 is still the probe's cost as a share of the build's CPU.
    None for a view without a query server (an Erlang view)."""
    def ratio(b: dict) -> float | None:
        qs = sum(s for name, s in b["by_process"].items() if name in QUERY_SERVERS)
        return b["cpu_s"] / qs if qs > 0 else None
    pairs = [(ratio(r[arm]), ratio(r["without"])) for r in rounds]
    if not pairs or any(a is None or b is None for a, b in pairs):
        return None
    return decide.paired_interval([a for a, _ in pairs], [b for _, b in pairs])


def verdict(iv: decide.Interval) -> str:
    return "met" if iv.high <= TARGET else "not met" if iv.low > TARGET else "not resolved at this spread"


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
    ap.add_argument("--segments", type=int, metavar="PERIODS", help="measure within builds instead: the probe "
                    "works for PERIODS periods, then rests as long, and so on; --repeat builds")
    ap.add_argument("--from", dest="recorded", metavar="FILE", nargs="+", help="recompute and print the ratios "
                    "of a run recorded with --out, building nothing; several segmented runs: their builds pooled")
    ap.add_argument("--drop", action="store_true", help="delete the database afterwards")
    ap.add_argument("--probe-source", metavar="ERL", help="the probe's module from this file (another version of "
                    "beam_probe.erl, to compare)")
    args = ap.parse_args()
    if args.recorded:
        runs = [json.loads(Path(f).read_text()) for f in args.recorded]
        if len(runs) > 1:
            summarize_segments(pool_segmented(runs))
        else:
            summarize_segments(runs[0]) if "segment_periods" in runs[0] else summarize(runs[0])
        return
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
    if args.segments:
        try:
            build(url, args.view, True, folder, -1)      # warm-up
            segmented(url, args.view, folder, args.repeat, args.segments, args.out)
        finally:
            for p in folder.iterdir():
                p.unlink()
            folder.rmdir()
        return
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
    out = {"view": args.view, "docs": args.docs, "period_ms": args.period, "arms": [n for n, _ in arms],
           "rounds": rounds, "load": [load_before, load_after]}
    out["ratios"] = summarize(out)
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1, default=str) + "\n")


def summarize(run: dict) -> dict:
    """Print a run's ratios, recomputed from its rounds, and return them by arm."""
    rounds, (load_before, load_after) = run["rounds"], run["load"]
    print(f"\n{run['view']} view, {run['docs']:,} documents, {len(rounds)} rounds, a sample every "
          f"{run['period_ms']} ms; load average {load_before[0]:.1f} before, {load_after[0]:.1f} after")
    without = [r["without"]["cpu_s"] for r in rounds]
    ratios = {}
    for name in run["arms"][1:]:
        with_cpu = [r[name]["cpu_s"] for r in rounds]
        couch_iv = decide.paired_interval(with_cpu, without)
        total_iv = decide.paired_interval([r[name]["cpu_s"] + r[name]["probe_cpu_s"] for r in rounds], without)
        wall_iv = decide.paired_interval([r[name]["wall_s"] for r in rounds], [r["without"]["wall_s"] for r in rounds])
        per_qs_iv = per_query_server(rounds, name)
        print(f"{name}: CouchDB's CPU with the probe / without: {fmt(couch_iv)}  (target ≤ ×{TARGET})")
        print(f"{name}: CouchDB's CPU + the probe's own / without: {fmt(total_iv)}")
        print(f"{name}: wall time with / without: {fmt(wall_iv)}")
        if per_qs_iv is not None:
            print(f"{name}: CouchDB's CPU per query-server CPU-second, with / without: {fmt(per_qs_iv)}")
        bound = sorted(r[name]["sampling_s"] / r["without"]["cpu_s"] for r in rounds)
        print(f"{name}: the samples' rpc round trips (an upper bound of their CPU in beam) / the build's CPU "
              f"without the probe: median {100 * bound[len(bound) // 2]:.2f}%, range {100 * bound[0]:.2f}–"
              f"{100 * bound[-1]:.2f}%")
        print(f"{name}: target ×{TARGET} on CouchDB's CPU: {verdict(couch_iv)}")
        ratios[name] = {"couchdb_cpu": couch_iv.as_dict(), "with_probe_cpu": total_iv.as_dict(),
                        "wall": wall_iv.as_dict()}
        if per_qs_iv is not None:
            print(f"{name}: target ×{TARGET} on CouchDB's CPU per query-server CPU-second: {verdict(per_qs_iv)}")
            ratios[name]["couchdb_cpu_per_query_server_cpu"] = per_qs_iv.as_dict()
    return ratios


if __name__ == "__main__":
    main()
