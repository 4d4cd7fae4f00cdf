#!/usr/bin/env python3
"""The load generator's own cost: CPU per request and the rate it holds, against raw HTTP requests.

In each round (interleaved, `--repeat` rounds) the same open-loop schedule of GET-by-id requests at `--rate`
runs three times for `--seconds` against a live CouchDB: through dragnet.load as the tools run it
(dragnet-loadgen, the compiled generator, where `make servers` built it; `--driver` chooses), through
dragnet.load's aiohttp generator (in its thread on uvloop: the fallback), and through a bare asyncio client
(hand-written HTTP/1.1 over keep-alive sockets, nothing recorded). Every request of dragnet.load is
recorded either way. Printed per run: CPU of the sending thread as a share of one core, requests per
second achieved, and CPU per request against the bare client's. Targets: dragnet.load under 10% of a
core at 500 requests/s, and the achieved rate within 5% of the asked one (when the machine is not saturated:
the load average is printed).

    DRAGNET_TEST_COUCHDB_URL=http://admin:…@127.0.0.1:5984 .venv/bin/python benchmarks/load_overhead/run.py \
        [--rate 500] [--seconds 10] [--repeat 3] [--before integ] [--mix writes=100/s,reads=400/s]

`--before REF` adds a fourth client in every round: dragnet.load's generator as it was at git REF, so a
change to it is measured against the code before it in the same run. `--loadgen-before PATH` (repeatable)
does the same for dragnet-loadgen: a build of it kept from before a change (e.g. `cp query_servers/loadgen/build/
dragnet-loadgen /tmp/loadgen-before` before `make servers`), driven by today's dragnet.load.compiled.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import importlib.util
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(REPO))

from dragnet.couchdb.client import connect, split_credentials  # noqa: E402
from dragnet.load import spec as S  # noqa: E402
from dragnet.load.compiled import DRIVERS, GoLoad, new_load  # noqa: E402
from dragnet.load.generator import Load  # noqa: E402

DB = "dragnet_load_overhead"
CPU_TARGET, RATE_TARGET = 0.10, 0.05


def raw_run(url: str, auth: tuple | None, ids: list[str], rate: float, seconds: float) -> dict:
    """The same schedule through bare sockets in a thread of its own; its thread CPU and the rate."""
    out: dict = {}
    base, _, _ = split_credentials(url)
    host, port = base.split("//", 1)[1].split(":")
    header = f"Authorization: Basic {base64.b64encode(':'.join(auth).encode()).decode()}\r\n" if auth else ""
    rng = random.Random(1)

    async def main():
        idle: list = []
        sent = ok = 0

        async def one(path):
            nonlocal ok
            try:
                conn = idle.pop() if idle else await asyncio.open_connection(host, int(port))
                r, w = conn
                w.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{header}\r\n".encode())
                head = await r.readuntil(b"\r\n\r\n")
                length = int(next(x.split(b":")[1] for x in head.split(b"\r\n")
                                  if x.lower().startswith(b"content-length")))
                await r.readexactly(length)
            except (OSError, asyncio.IncompleteReadError):   # a refused or dropped connection: not answered
                return
            ok += 1
            idle.append(conn)

        c0 = time.thread_time()
        t0 = time.monotonic()
        tasks = set()
        for due in S.due_times(rate, t0, t0 + seconds):
            d = due - time.monotonic()
            if d > 0:
                await asyncio.sleep(d)
            sent += 1
            t = asyncio.ensure_future(one(f"/{DB}/{rng.choice(ids)}"))
            tasks.add(t)
            t.add_done_callback(tasks.discard)
        wall = time.monotonic() - t0
        if tasks:
            await asyncio.wait(list(tasks), timeout=10)
        out.update(cpu_s=time.thread_time() - c0, wall=wall, sent=sent, ok=ok)
        for r, w in idle:
            w.close()

    th = threading.Thread(target=lambda: asyncio.run(main()))
    th.start()
    th.join()
    return {"cpu_share": out["cpu_s"] / out["wall"], "achieved": out["sent"] / out["wall"], "ok": out["ok"],
            "cpu_ms_per_request": 1000 * out["cpu_s"] / max(1, out["ok"]), "not_sent": 0}


def before_load(ref: str):
    """dragnet.load's Load as it was at git `ref` (loaded beside today's, not instead of it)."""
    src = subprocess.run(["git", "-C", str(REPO), "show", f"{ref}:dragnet/load/generator.py"], check=True,
                         capture_output=True, text=True).stdout
    spec = importlib.util.spec_from_loader("dragnet_load_before", loader=None)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod     # dataclasses look their module up there
    exec(compile(src, f"{ref}:dragnet/load/generator.py", "exec"), mod.__dict__)
    return mod.Load


def load_run(couch, spec: str, seconds: float, event_loop: str | None, cls=Load) -> dict:
    kw = {"event_loop": event_loop} if event_loop else {}
    load = cls(couch, DB, S.parse(spec), max_seconds=seconds + 60, before_s=0, **kw)
    return _timed(load, seconds)


def _timed(load, seconds: float) -> dict:
    load.prepare()
    load.start()
    load.begin_build(None)
    time.sleep(seconds)
    load.build_ended()
    rec = load.stop()
    load.purge()
    ws = [k["build"] for k in rec["kinds"].values()]     # one kind, or every kind of a --mix summed
    ok = sum(w["ok"] for w in ws)
    return {"loop": rec.get("driver", "aiohttp") + " " + rec.get("event_loop", "asyncio"),
            "cpu_share": rec["cpu_share_of_core"], "achieved": sum(w["achieved_per_s"] for w in ws), "ok": ok,
            "p99_ms": max((w["latency"] or {}).get("p99_ms") or 0 for w in ws),
            "not_sent": sum(w["not_sent"] for w in ws), "cpu_ms_per_request": 1000 * rec["cpu_s"] / max(1, ok)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default=os.environ.get("DRAGNET_TEST_COUCHDB_URL"))
    ap.add_argument("--rate", type=float, default=500.0)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--driver", choices=DRIVERS, default="auto", help="the generator `dragnet.load` runs on")
    ap.add_argument("--before", metavar="REF", help="also run dragnet.load as it was at this git ref (e.g. integ)")
    ap.add_argument("--mix", metavar="SPEC", help="run dragnet.load on this mix of kinds, e.g. "
                    "writes=100/s,updates=50/s,reads=350/s (no view kinds), instead of reads at --rate")
    ap.add_argument("--loadgen-before", metavar="PATH", action="append", default=[],
                    help="also run this older build of dragnet-loadgen (repeatable)")
    args = ap.parse_args()
    if not args.url:
        sys.exit("give --url or DRAGNET_TEST_COUCHDB_URL (a CouchDB on loopback)")
    couch = connect(args.url)
    couch.request("PUT", f"/{DB}", ok=(201, 202, 412))
    couch.post(f"/{DB}/_bulk_docs", {"docs": [{"_id": f"d{i:04d}", "n": i, "s": "x" * 200} for i in range(1000)]})
    ids = [f"d{i:04d}" for i in range(1000)]
    # --mix: dragnet.load runs that mix (rates summed into --rate); the bare client reads by id at that rate
    spec = args.mix or f"reads={args.rate:g}/s"
    if args.mix:
        args.rate = S.parse(args.mix).total
        if S.parse(args.mix).reads_view:
            sys.exit("--mix: no view kinds (this benchmark builds no view)")
    print(f"{spec} (bare client: GET by id at {args.rate:g}/s) for {args.seconds:g} s, {args.repeat} interleaved rounds; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    # dragnet.load as it runs (uvloop where it loads), on asyncio's own loop (the loop it had before), and raw
    clients = (["dragnet.load", "dragnet.load/aiohttp"] + ([f"dragnet.load@{args.before}"] if args.before else [])
               + [f"dragnet-loadgen@{Path(p).name}" for p in args.loadgen_before] + ["raw"])
    builds = {f"dragnet-loadgen@{Path(p).name}": p for p in args.loadgen_before}
    old_cls = before_load(args.before) if args.before else None
    rows = []
    try:
        for r in range(args.repeat):
            order = clients[r % len(clients):] + clients[:r % len(clients)]
            got = {}
            for who in order:
                if who == "raw":
                    got[who] = raw_run(args.url, couch.session.auth, ids, args.rate, args.seconds)
                elif who in builds:
                    load = GoLoad(couch, DB, S.parse(spec), max_seconds=args.seconds + 60, before_s=0)
                    load.binary = builds[who]
                    got[who] = dict(_timed(load, args.seconds), loop="go, an older build")
                elif "@" in who:
                    got[who] = load_run(couch, spec, args.seconds, None, old_cls)
                elif who.endswith("/aiohttp"):
                    got[who] = load_run(couch, spec, args.seconds, "uvloop")
                else:   # as the tools run it: dragnet-loadgen where it is built, else aiohttp
                    got[who] = _timed(new_load(couch, DB, S.parse(spec), driver=args.driver,
                                               max_seconds=args.seconds + 60, before_s=0), args.seconds)
            rows.append(got)
            b = got["raw"]
            line = [f"round {r + 1}:"]
            for who in clients[:-1]:
                g = got[who]
                line.append(f"{who} ({g['loop']}) {g['cpu_share']:.1%} of a core, {g['achieved']:.1f}/s sent, "
                            f"{g['ok']} answered, {g['not_sent']} not sent (512 waiting), p99 {g['p99_ms']:.1f} ms, "
                            f"{g['cpu_ms_per_request']:.3f} ms CPU/request (× raw {g['cpu_ms_per_request'] / b['cpu_ms_per_request']:.2f});")
            line.append(f"raw {b['cpu_share']:.1%}, {b['achieved']:.1f}/s sent, {b['ok']} answered, "
                        f"{b['cpu_ms_per_request']:.3f} ms CPU/request")
            print("\n  ".join(line), flush=True)
    finally:
        couch.request("DELETE", f"/{DB}", ok=(200, 202, 404))
    shares = sorted(x["dragnet.load"]["cpu_share"] for x in rows)
    rates = sorted(x["dragnet.load"]["achieved"] for x in rows)
    med_share, med_rate = shares[len(shares) // 2], rates[len(rates) // 2]
    per = sorted(x["dragnet.load"]["cpu_ms_per_request"] for x in rows)[len(rows) // 2]
    raw = sorted(x["raw"]["cpu_ms_per_request"] for x in rows)[len(rows) // 2]
    print(f"median: raw {raw:.3f} ms CPU/request; dragnet.load {per:.3f} ms CPU/request")
    ok_cpu, ok_rate = med_share < CPU_TARGET, abs(med_rate - args.rate) <= RATE_TARGET * args.rate
    for who in clients[1:-1]:
        share = sorted(x[who]["cpu_share"] for x in rows)[len(rows) // 2]
        per = sorted(x[who]["cpu_ms_per_request"] for x in rows)[len(rows) // 2]
        print(f"median: {who} {share:.1%} of a core, {per:.3f} ms CPU/request")
    print(f"median: dragnet.load {med_share:.1%} of a core (target < {CPU_TARGET:.0%}: {'met' if ok_cpu else 'NOT met'}), "
          f"{med_rate:.1f}/s of {args.rate:g}/s asked (target within {RATE_TARGET:.0%}: {'met' if ok_rate else 'NOT met'}); "
          f"load average now {os.getloadavg()[0]:.1f}")
    return 0 if ok_cpu and ok_rate else 1


if __name__ == "__main__":
    sys.exit(main())
