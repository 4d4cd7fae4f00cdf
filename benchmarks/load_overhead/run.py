#!/usr/bin/env python3
"""The load generator's own cost: CPU per request and the rate it holds, against raw HTTP requests.

In each round (interleaved, `--repeat` rounds) the same open-loop schedule of GET-by-id requests at `--rate`
runs twice for `--seconds` against a live CouchDB: once through dragnet.load (aiohttp in its thread, every
request recorded) and once through a bare asyncio client (hand-written HTTP/1.1 over keep-alive sockets,
nothing recorded: the least any client can spend). Printed per run: CPU of the sending thread as a share of
one core, requests per second achieved, and the ratio of the two CPUs. Targets: dragnet.load under 10% of a
core at 500 requests/s, and the achieved rate within 5% of the asked one (when the machine is not saturated:
the load average is printed).

    DRAGNET_TEST_COUCHDB_URL=http://admin:…@127.0.0.1:5984 .venv/bin/python benchmarks/load_overhead/run.py \
        [--rate 500] [--seconds 10] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import random
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(REPO))

from dragnet.couchdb.client import connect, split_credentials  # noqa: E402
from dragnet.load import spec as S  # noqa: E402
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
            conn = idle.pop() if idle else await asyncio.open_connection(host, int(port))
            r, w = conn
            w.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{header}\r\n".encode())
            head = await r.readuntil(b"\r\n\r\n")
            length = int(next(x.split(b":")[1] for x in head.split(b"\r\n") if x.lower().startswith(b"content-length")))
            await r.readexactly(length)
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


def load_run(couch, rate: float, seconds: float) -> dict:
    load = Load(couch, DB, S.parse(f"reads={rate:g}/s"), max_seconds=seconds + 60, before_s=0)
    load.prepare()
    load.start()
    load.begin_build(None)
    time.sleep(seconds)
    load.build_ended()
    rec = load.stop()
    load.purge()
    w = rec["kinds"]["reads"]["build"]
    return {"cpu_share": rec["cpu_share_of_core"], "achieved": w["achieved_per_s"], "ok": w["ok"],
            "p99_ms": (w["latency"] or {}).get("p99_ms"), "not_sent": w["not_sent"],
            "cpu_ms_per_request": 1000 * rec["cpu_s"] / max(1, w["ok"])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default=os.environ.get("DRAGNET_TEST_COUCHDB_URL"))
    ap.add_argument("--rate", type=float, default=500.0)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if not args.url:
        sys.exit("give --url or DRAGNET_TEST_COUCHDB_URL (a CouchDB on loopback)")
    couch = connect(args.url)
    couch.request("PUT", f"/{DB}", ok=(201, 202, 412))
    couch.post(f"/{DB}/_bulk_docs", {"docs": [{"_id": f"d{i:04d}", "n": i, "s": "x" * 200} for i in range(1000)]})
    ids = [f"d{i:04d}" for i in range(1000)]
    print(f"GET by id at {args.rate:g}/s for {args.seconds:g} s, {args.repeat} interleaved rounds; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    rows = []
    try:
        for r in range(args.repeat):
            order = ["dragnet.load", "raw"] if r % 2 == 0 else ["raw", "dragnet.load"]
            got = {}
            for who in order:
                got[who] = load_run(couch, args.rate, args.seconds) if who == "dragnet.load" else \
                    raw_run(args.url, couch.session.auth, ids, args.rate, args.seconds)
            rows.append(got)
            g, b = got["dragnet.load"], got["raw"]
            print(f"round {r + 1}: dragnet.load {g['cpu_share']:.1%} of a core, {g['achieved']:.1f}/s sent, "
                  f"{g['ok']} answered, {g['not_sent']} not sent (512 waiting), p99 {g['p99_ms']:.1f} ms, "
                  f"{g['cpu_ms_per_request']:.2f} ms CPU/request; raw {b['cpu_share']:.1%}, {b['achieved']:.1f}/s sent, "
                  f"{b['ok']} answered, {b['cpu_ms_per_request']:.2f} ms CPU/request; "
                  f"× raw CPU per request {g['cpu_ms_per_request'] / b['cpu_ms_per_request']:.2f}")
    finally:
        couch.request("DELETE", f"/{DB}", ok=(200, 202, 404))
    shares = sorted(x["dragnet.load"]["cpu_share"] for x in rows)
    rates = sorted(x["dragnet.load"]["achieved"] for x in rows)
    med_share, med_rate = shares[len(shares) // 2], rates[len(rates) // 2]
    ok_cpu, ok_rate = med_share < CPU_TARGET, abs(med_rate - args.rate) <= RATE_TARGET * args.rate
    print(f"median: dragnet.load {med_share:.1%} of a core (target < {CPU_TARGET:.0%}: {'met' if ok_cpu else 'NOT met'}), "
          f"{med_rate:.1f}/s of {args.rate:g}/s asked (target within {RATE_TARGET:.0%}: {'met' if ok_rate else 'NOT met'}); "
          f"load average now {os.getloadavg()[0]:.1f}")
    return 0 if ok_cpu and ok_rate else 1


if __name__ == "__main__":
    sys.exit(main())
