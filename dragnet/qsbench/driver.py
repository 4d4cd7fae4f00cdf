"""qsbench's timed map loop: each map_doc line sent and its answer read before the next, as CouchDB does.

Two loops do the same: dragnet-qsdriver (C, query_servers/qsdriver, built by `make servers`), which costs a
few µs per document, and the Python loop below, the fallback where the C one is not built. Which one ran is
recorded with every run, since the harness's share of a fast server's wall time differs between them.
"""

from __future__ import annotations

import gc
import subprocess
import time
from dataclasses import dataclass
from typing import Sequence

from dragnet import paths
from dragnet.servers.protocol import BadAnswer, ProtocolError, QueryServerProcess


def map_timed(qs: "QueryServerProcess", lines: Sequence[bytes]) -> tuple[list[bytes], list[int], int]:
    """Send each map_doc line and time it: (answers, latencies in ns, total ns). Each latency runs from the
    previous answer to this one (write + read + the loop's own step), so they add up to the total."""
    n = len(lines)
    latencies, answers = [0] * n, [b""] * n
    prompt, clock = qs.prompt_raw, time.perf_counter_ns
    gc_was_on = gc.isenabled()
    gc.disable()  # no collector pauses inside the timed loop (it allocates only bytes and ints)
    try:
        t_first = t0 = clock()
        for i in range(n):
            answers[i] = prompt(lines[i])
            t1 = clock()
            latencies[i] = t1 - t0
            t0 = t1
    finally:
        if gc_was_on:
            gc.enable()
    return answers, latencies, t0 - t_first


# -- the compiled loop ------------------------------------------------------------------------

# query_servers/qsdriver (`make servers`): next to its source in a checkout, in the user cache when installed
QSDRIVER = paths.build_root() / "qsdriver" / "build" / "dragnet-qsdriver"
DRIVERS = ("auto", "c", "python")


def resolve(driver: str = "auto") -> str:
    """The loop that will run: "c" (dragnet-qsdriver, when built) or "python"; "c" asked for and not built
    is bad input."""
    return paths.compiled_or_fallback(driver, DRIVERS, QSDRIVER, "the map loop (driver)", "the C map loop")


@dataclass
class MapLoop:
    answers: list[bytes]
    latencies_ns: list[int]
    map_ns: int
    driver_cpu_s: float     # the loop's own CPU while it ran (the harness's share of the wall time)
    driver: str             # "c" or "python"


def map_loop(qs: QueryServerProcess, lines: Sequence[bytes], driver: str = "auto") -> MapLoop:
    """The timed map loop on `driver` (resolve); failures raise as QueryServerProcess.prompt_raw's do."""
    if resolve(driver) == "python":
        cpu0 = time.thread_time()
        answers, latencies, map_ns = map_timed(qs, lines)
        return MapLoop(answers, latencies, map_ns, time.thread_time() - cpu0, "python")
    return _map_native(qs, lines)


def _map_native(qs: QueryServerProcess, lines: Sequence[bytes]) -> MapLoop:
    """dragnet-qsdriver on the server's own pipes (inherited, same numbers); qsbench waits meanwhile."""
    to, frm = qs.proc.stdin.fileno(), qs.proc.stdout.fileno()
    timeout_ms = max(1, int(qs.timeout * 1000))
    try:
        proc = subprocess.run([str(QSDRIVER), str(to), str(frm), str(timeout_ms)], input=b"".join(lines),
                              capture_output=True, pass_fds=(to, frm), check=False)
    except OSError as exc:
        raise ProtocolError(f"cannot run {QSDRIVER}: {exc.strerror}", qs.name) from None
    head, _, rest = proc.stdout.partition(b"\n")
    word, *fields = head.split() or [b""]
    if proc.returncode != 0 or not word:
        why = proc.stderr.decode("utf-8", "replace").strip() or f"exit code {proc.returncode}"
        raise ProtocolError(f"{QSDRIVER} failed: {why}", qs.name)
    if word == b"ok":
        n, logs, cpu_ns = (int(f) for f in fields)
        parts = rest.split(b"\n", n)
        latencies = [int(x) for x in parts[:n]]
        answers = parts[n].split(b"\n")[:n] if n else []
        qs.log_count += logs
        return MapLoop(answers, latencies, sum(latencies), cpu_ns / 1e9, "c")
    what = word.decode("ascii", "replace")
    if what in ("command", "timeout", "died-reading", "died-writing"):
        # a failure at document int(fields[0]): raise what prompt_raw raises for it
        qs.fail_as(what, rest.rstrip(b"\n") if what == "command" else rest)
        raise BadAnswer(f"query server {qs.name} answered map_doc with {rest[:200]!r}", qs.name)
    raise ProtocolError(f"{QSDRIVER} gave an unknown result: {head[:100]!r}", qs.name)
