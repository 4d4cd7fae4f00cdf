#!/usr/bin/env python3
"""The qsbench harness's ceiling: how many map_doc round trips per second it can drive at all.

It runs qsbench's own measuring loops, the C one (dragnet-qsdriver, `make servers`) and the Python fallback,
interleaved, against echo_server.c (compiled on the fly with cc into a temporary directory: reads a line,
writes a fixed answer, parses nothing), on the same documents as the real servers, then the real servers
(on the C loop when built), and prints each loop's ceiling next to the fastest real server, and each
server's harness share (the loop's own CPU over the map loop's wall time). Target: the ceiling of the loop
qsbench uses >= 10x the fastest real server, so the harness is not what the table measures.

    .venv/bin/python benchmarks/qsbench_overhead/run.py [--count 2000] [--seed 1] [--repeat 3] [--servers a,b]
                                                         [--loops c,python]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO))

from dragnet.qsbench import run as qsbench  # noqa: E402
from dragnet.servers.discovery import ServerSpec  # noqa: E402

TARGET = 10.0


def build_echo(tmp: str) -> list[str]:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        sys.exit("needs a C compiler (cc) to build the echo server")
    exe = os.path.join(tmp, "echo_server")
    subprocess.run([cc, "-O2", "-o", exe, str(HERE / "echo_server.c")], check=True)
    return [exe]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--servers", help="real servers to compare with (default: every one found)")
    ap.add_argument("--view", default=str(REPO / "views" / "income"))
    ap.add_argument("--loops", default="c,python", help="the map loops to time on echo; the first one drives "
                                                          "the real servers (default c,python)")
    args = ap.parse_args()
    loops = [d.strip() for d in args.loops.split(",")]
    for d in loops:
        qsbench.resolve_driver(d)   # c not built: say so before anything runs

    docs = qsbench.load_docs(qsbench.generated_docs_path(args.count, args.seed, REPO / "cache"))
    print(f"{len(docs)} documents, {sum(docs.sizes) / 1e6:.1f} MB; {args.repeat} runs each after 1 warm-up")

    with tempfile.TemporaryDirectory(prefix="dragnet-echo-") as tmp:
        echo = ServerSpec("echo", "echo", tuple(build_echo(tmp)), "python", source="benchmark")
        # the echo server never looks at the function; any view file will do for add_fun
        view = qsbench.load_view(args.view, "python")
        # echo runs are short, so take more of them: cheap, and steadier; the loops alternate run by run
        runs: dict[str, list] = {d: [] for d in loops}
        for _ in range(1 + max(10, args.repeat)):
            for d in loops:
                ceiling = qsbench.measure_server(echo, view, docs, repeat=1, warmup=0, driver=d)
                if ceiling.error:
                    sys.exit(f"echo server failed on the {d} loop: {ceiling.error}")
                runs[d] += ceiling.measured
        # the first run of each loop is its warm-up
        ceil_rows = {d: qsbench.summarize_runs(f"echo ({d} loop)", rs[1:]) for d, rs in runs.items()}

    specs, skipped = qsbench.available_servers()
    names = [n.strip() for n in args.servers.split(",")] if args.servers else None
    chosen, skipped = qsbench.select_servers(specs, skipped, names, args.view)
    for s in skipped:
        print(f"  skipped {s.name}: {s.reason}")
    bench = qsbench.run_benchmark(chosen, docs, repeat=args.repeat, warmup=1, driver=loops[0])
    for r in bench.failed:
        print(f"  {r.spec.name}: {r.status}: {r.error or f'{r.mismatch_count} docs differ'}")
    if not bench.rows:
        sys.exit("no real server finished; nothing to compare with")

    share = lambda r: "" if r.harness_share is None else f"{r.harness_share:>8.0%}"  # noqa: E731
    print(f"\n{'':24}{'msgs or docs/s':>16}  {'mean ± σ [min … max]':>34}  {'p50 µs':>8}  {'harness':>8}")
    for d, ceil_row in ceil_rows.items():
        print(f"{f'ceiling, {d} loop (echo)':24}{ceil_row.docs_per_sec:>16,.0f}  "
              f"{ceil_row.rate.format(digits=0):>34}  {ceil_row.p50_ms * 1000:>8.1f}  {share(ceil_row)}")
    for row in bench.rows:
        print(f"{row.name:24}{row.docs_per_sec:>16,.0f}  {row.rate.format(digits=0):>34}  {row.p50_ms * 1000:>8.1f}"
              f"  {share(row)}")
    fastest = bench.rows[0]
    print(f"\nthe real servers ran on the {bench.driver} loop")
    for d, ceil_row in ceil_rows.items():
        ratio = ceil_row.docs_per_sec / fastest.docs_per_sec
        best = ceil_row.rate.max / fastest.rate.max
        verdict = "OK" if ratio >= TARGET else "BELOW TARGET"
        print(f"{d} loop's ceiling / fastest real server ({fastest.name}): {ratio:.1f}x by median, {best:.1f}x "
              f"best run vs best run  (target >= {TARGET:g}x by median: {verdict})")
    for d, rs in runs.items():
        # CPU, not wall: what the loop itself costs per document, steady under load where rates are not
        us = sorted(sum(sh.driver_cpu_s for sh in r.shards) / r.docs * 1e6 for r in rs[1:])
        print(f"{d} loop's own CPU per round trip: {us[len(us) // 2]:.2f} µs median [{us[0]:.2f} … {us[-1]:.2f}]; "
              f"p50 round trip with echo {ceil_rows[d].p50_ms * 1000:.1f} µs, {fastest.name}'s "
              f"{fastest.p50_ms * 1000:.1f} µs ({fastest.p50_ms / ceil_rows[d].p50_ms:.1f}x)")
    ratio = ceil_rows[loops[0]].docs_per_sec / fastest.docs_per_sec
    load = os.getloadavg()[0]
    print(f"load average {load:.2f} on {os.cpu_count()} CPUs")
    if load > (os.cpu_count() or 1) * 0.5:
        # every echo round trip needs two processes scheduled, so a busy machine hits the ceiling hardest
        print(f"warning: load average {load:.1f} on {os.cpu_count()} CPUs: measure on a quiet machine")
    return 0 if ratio >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
