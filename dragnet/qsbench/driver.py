"""qsbench's timed map loop: each map_doc line sent and its answer read before the next, as CouchDB does."""

from __future__ import annotations

import gc
import time
from typing import Sequence

from dragnet.servers.protocol import QueryServerProcess


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
