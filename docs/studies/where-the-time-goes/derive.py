"""Derive the study's figures from a bench directory's results files (run with dragnet's venv python).

Per build: CPU-seconds per 1,000 documents from the kernel's accounting (beam, query servers), beam's
msacc thread-seconds per activity and reductions per process kind (dragnet.measure.beam), profile stages
where --profile ran, and the machine's load. Per (CouchDB version, engine): medians over the rounds.
Per engine: 3.5.2 ÷ 3.5.0, paired by round, with a 95% t interval on the log ratios.
Usage: python derive.py BENCH_DIR > summary.json   (a results directory, or raw/<bench> here: gzipped results)
"""
import gzip
import json
import math
import re
import statistics
import sys
from pathlib import Path

from dragnet.measure import beam, stages
from dragnet.measure.profile import read_folded

T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571}


def build_row(path: Path) -> dict | None:
    d = json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_text())
    if d.get("kind") and "summary" not in d:
        return None
    s, cpu = d["summary"], d.get("cpu") or {}
    docs = s.get("docs") or 0
    k = docs / 1000 if docs else None
    qs = (cpu.get("query_servers") or {}).get("cpu_s") or 0.0
    beam_cpu = (cpu.get("by_process") or {}).get("beam.smp")
    row = {"file": path.name, "couchdb": d["couchdb"].get("version"), "engine": d["bench"]["language"],
           "round": d["bench"]["repeat"], "docs": docs,
           # the bench's other axes (a --config value, the storage): the levers' benches vary them
           "axes": " ".join(f"{k}={v}" for k, v in sorted((d["bench"].get("axes") or {}).items())
                            if k == "config" or k.startswith("config:") or (k == "storage" and v != "disk")), "wall_s": s.get("wall_time_s"),
           "load1": (d.get("machine") or {}).get("load_average", [None])[0],
           "cpu_s_per_1000": cpu.get("cpu_s_per_1000_docs"),
           "beam_cpu_s_per_1000": beam_cpu / k if beam_cpu is not None and k else None,
           "qs_cpu_s_per_1000": qs / k if k else None,
           "waited_for_core_s": cpu.get("wait_s"),
           "machine_busy_share": (cpu["machine_busy_s"] / (cpu["interval_s"] * cpu["cores"])
                                  if cpu.get("machine_busy_s") and cpu.get("interval_s") else None)}
    ba = d.get("beam_activity") or {}
    nodes = {n: r for n, r in (ba.get("nodes") or {}).items() if "error" not in r}
    if nodes and k:
        acts, reds = {}, {}
        for rec in nodes.values():
            for a, v in beam.activity_seconds(rec).items():
                acts[a] = acts.get(a, 0.0) + v
            for a, v in beam.reductions_by_kind(rec).items():
                reds[a] = reds.get(a, 0) + v
        row["msacc_s_per_1000"] = {a: round(v / k, 5) for a, v in sorted(acts.items())}
        row["msacc_sched_s_per_1000"] = {st: round(us / 1e6 / k, 5) for rec in nodes.values()
                                         for st, us in (rec["msacc_us"].get("scheduler") or {}).items()
                                         if st != "sleep"}
        # msacc is thread time: under load a descheduled thread keeps accruing its state. Its shares of the
        # work, times beam's CPU from the kernel, estimate CPU per activity (busy wait and file I/O left out:
        # the dirty I/O threads' time is mostly blocking, not CPU).
        sched = {a: v for a, v in acts.items() if a not in (beam.BUSY_WAIT, "file I/O")}
        tot = sum(sched.values())
        if tot and row["beam_cpu_s_per_1000"] is not None:
            row["msacc_share_x_beam_cpu_s_per_1000"] = {a: round(v / tot * row["beam_cpu_s_per_1000"], 5)
                                                        for a, v in sorted(sched.items())}
        row["reductions_per_doc"] = {a: round(v / docs, 1) for a, v in sorted(reds.items(), key=lambda x: -x[1])}
        row["reductions_share"] = {a: round(v, 4) for a, v in beam.shares(reds).items()}
    prof = d.get("profile")
    if prof and prof.get("stages"):
        row["profile"] = {"samples": prof.get("samples"), "sampled_cpu_s": prof.get("sampled_cpu_s"),
                          "perf_cpu_s": prof.get("perf_cpu_s"), "erlang_named_share": prof.get("erlang_named_share"),
                          "stage_share": {st: v["share"] for st, v in prof["stages"].items()},
                          "threads": prof.get("threads"), "folded": prof.get("folded")}
        folded = path.parent / (prof.get("folded") or "")
        if not folded.exists():     # the evidence folder keeps the folded stacks apart, in folded/<bench>/
            folded = path.parent.parent.parent / "folded" / path.parent.name / (prof.get("folded") or "")
        if prof.get("folded") and folded.exists():
            row["profile"]["frames"] = frames(read_folded(folded))
    return row


def frames(stacks) -> dict:
    """Per profile: samples by the deepest Erlang frame the JIT named (beam only), and how many beam
    samples name none (only [unknown], [beam.smp], libc or kernel frames)."""
    erl, unnamed, beam_n, split, calls = {}, 0, 0, {}, {}
    for stack, n in stacks.items():
        fs = stack.split(";")
        if fs[0] != stages.BEAM:
            continue
        beam_n += n
        named = [f for f in fs[2:] if stages.is_erlang_frame(f)]
        if named:
            erl[named[-1]] = erl.get(named[-1], 0) + n
        if stages.stage_of(stack) != "unnamed":
            continue
        unnamed += n
        # what the "unnamed" samples are: beam's thread (scheduler numbers dropped) and whether the stack
        # reached a system call (and which), libc, or beam's stripped code only
        thread = re.sub(r"^\d+_|_\d+$", "", fs[1]) if len(fs) > 1 else ""
        sys_ = [f for f in fs if f.startswith("__x64_sys_")]
        where = "syscall" if sys_ else ("libc" if any("libc" in f for f in fs) else "beam code")
        split[f"{thread} {where}"] = split.get(f"{thread} {where}", 0) + n
        if sys_:
            calls[sys_[0]] = calls.get(sys_[0], 0) + n
    top = dict(sorted(erl.items(), key=lambda kv: -kv[1])[:15])
    return {"beam_samples": beam_n, "beam_unnamed_stage": unnamed, "deepest_erlang_frame_top15": top,
            "unnamed_by_thread": dict(sorted(split.items(), key=lambda kv: -kv[1])),
            "unnamed_syscalls_top": dict(sorted(calls.items(), key=lambda kv: -kv[1])[:8])}


def med(xs):
    xs = [x for x in xs if x is not None]
    return round(statistics.median(xs), 5) if xs else None


def paired(a: dict, b: dict) -> dict | None:
    """b ÷ a over the rounds both ran: geometric mean and a 95% t interval on the log ratios."""
    logs = [math.log(b[r] / a[r]) for r in a if r in b and a[r] and b[r]]
    if not logs:
        return None
    m = statistics.fmean(logs)
    if len(logs) < 2:
        return {"ratio": round(math.exp(m), 3), "n": 1}
    h = T95.get(len(logs) - 1, 2.0) * statistics.stdev(logs) / math.sqrt(len(logs))
    return {"ratio": round(math.exp(m), 3), "low": round(math.exp(m - h), 3), "high": round(math.exp(m + h), 3),
            "n": len(logs)}


def main(directory: str) -> None:
    files = sorted(Path(directory).glob("[0-9]*.json")) or sorted(Path(directory).glob("[0-9]*.json.gz"))
    rows = [r for p in files if (r := build_row(p))]
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["couchdb"], r["engine"]), []).append(r)
    by_axes: dict = {}
    for r in rows:
        by_axes.setdefault(f"{r['couchdb']} {r['engine']} {r['axes']}".strip(), []).append(r)
    axes_summary = {}
    if any(r["axes"] for r in rows):
        for key, rs in sorted(by_axes.items()):
            axes_summary[key] = {
                "builds": len(rs), "load1": [r["load1"] for r in rs],
                "cpu_s_per_1000": [r["cpu_s_per_1000"] for r in rs],
                "beam_cpu_s_per_1000": [round(r["beam_cpu_s_per_1000"], 5) for r in rs],
                "gc_cpu_s_per_1000_est": [r.get("msacc_share_x_beam_cpu_s_per_1000", {}).get("garbage collection")
                                          for r in rs],
                "loader_reductions_per_doc": [r.get("reductions_per_doc", {}).get("loader") for r in rs],
                "median_cpu_s_per_1000": med(r["cpu_s_per_1000"] for r in rs)}
    summary = {}
    for (ver, eng), rs in sorted(groups.items()):
        g = {"builds": len(rs), "load1": [r["load1"] for r in rs]}
        for f in ("wall_s", "cpu_s_per_1000", "beam_cpu_s_per_1000", "qs_cpu_s_per_1000", "machine_busy_share"):
            g[f] = med(r[f] for r in rs)
        for f in ("msacc_s_per_1000", "msacc_sched_s_per_1000", "msacc_share_x_beam_cpu_s_per_1000", "reductions_share", "reductions_per_doc"):
            keys = sorted({k for r in rs for k in r.get(f, {})})
            g[f] = {k: med(r.get(f, {}).get(k, 0.0) for r in rs if f in r) for k in keys}
        summary[f"{ver} {eng}"] = g
    versions = sorted({r["couchdb"] for r in rows})
    upgrade = {}
    if len(versions) == 2:
        old, new = versions
        for eng in sorted({r["engine"] for r in rows}):
            by = {v: {r["round"]: r for r in groups.get((v, eng), [])} for v in versions}
            fig = {}
            for f in ("cpu_s_per_1000", "beam_cpu_s_per_1000", "wall_s"):
                fig[f] = paired({k: r[f] for k, r in by[old].items()}, {k: r[f] for k, r in by[new].items()})
            states = sorted({s for v in versions for r in by[v].values() for s in r.get("msacc_s_per_1000", {})})
            fig["msacc_saving_s_per_1000"] = {
                s: round((med(r.get("msacc_s_per_1000", {}).get(s, 0) for r in by[old].values()) or 0)
                         - (med(r.get("msacc_s_per_1000", {}).get(s, 0) for r in by[new].values()) or 0), 5)
                for s in states}
            est = "msacc_share_x_beam_cpu_s_per_1000"
            fig["estimated_cpu_saving_s_per_1000"] = {
                s: round((med(r.get(est, {}).get(s, 0) for r in by[old].values()) or 0)
                         - (med(r.get(est, {}).get(s, 0) for r in by[new].values()) or 0), 5)
                for s in sorted({s for v in versions for r in by[v].values() for s in r.get(est, {})})}
            upgrade[eng] = fig
    # each engine against the Erlang baseline in the same round: the round trip, encoding and per-prompt GC
    # an external engine adds (ceiling), or an Erlang view's map beyond the baseline's
    vs_base = {}
    for ver in versions:
        base = {r["round"]: r for r in groups.get((ver, "erlang_baseline"), [])}
        for eng in sorted({r["engine"] for r in rows} - {"erlang_baseline"}):
            mine = {r["round"]: r for r in groups.get((ver, eng), [])}
            fig = {}
            for f in ("cpu_s_per_1000", "beam_cpu_s_per_1000"):
                fig[f] = paired({k: r[f] for k, r in base.items()}, {k: r[f] for k, r in mine.items()})
                diffs = [mine[k][f] - base[k][f] for k in mine if k in base and mine[k][f] is not None
                         and base[k][f] is not None]
                fig[f + "_minus_baseline"] = [round(x, 5) for x in diffs]
            vs_base[f"{ver} {eng}"] = fig
    json.dump({"directory": directory, "builds": rows, "by_version_engine": summary,
               "upgrade_" + "_to_".join(versions): upgrade, "vs_erlang_baseline": vs_base,
               "by_axes": axes_summary}, sys.stdout, indent=1, sort_keys=False)


if __name__ == "__main__":
    main(sys.argv[1])
