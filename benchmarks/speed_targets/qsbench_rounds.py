#!/usr/bin/env python3
"""Target: qsbench separates a server that writes 300 log lines per answer from a plain echo server at its
first look (round 5), with the paired interval's low end above 1 + the noise band. The ratio printed is the
chatty server's CPU per document against the echo's, both measured in the same rounds (the baseline).

    .venv/bin/python benchmarks/speed_targets/qsbench_rounds.py [--trials 5] [--count 60]
"""

from __future__ import annotations

import argparse
import sys
import tempfile

from common import REPO, load, summary

from dragnet.measure import decide
from dragnet.qsbench import run as qsbench
from dragnet.servers.discovery import ServerSpec

TESTSERVER = str(REPO / "tests" / "qs_testserver.py")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--count", type=int, default=60)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="dragnet-speed-") as tmp:      # removed however the run ends
        docs = qsbench.load_docs(qsbench.generated_docs_path(a.count, 11, tmp))
    spec = lambda name, *args: ServerSpec(name, "python", (sys.executable, TESTSERVER, *args), "python",  # noqa: E731
                                          source="test")
    view = qsbench.load_view(REPO / "views" / "income", "python")
    ratios, held = [], []
    print(f"load average {load()}; {a.count} documents, {a.trials} trials")
    for t in range(1, a.trials + 1):
        b = qsbench.run_benchmark([(spec("echo", "echo"), view), (spec("chatty", "log", "300"), view)], docs,
                                  warmup=1, reference="echo")
        (pair,) = b.verdicts
        iv = pair.interval
        ok = (b.rounds == decide.MIN_ROUNDS and pair.state == decide.SEPARATED and pair.slower == "chatty"
              and iv.low > 1 + decide.NOISE)
        ratios.append(iv.ratio)
        held.append(ok)
        print(f"trial {t}: rounds {b.rounds} ({b.stopped}), {pair.state}, {pair.slower}/{pair.faster} "
              f"×{iv.ratio:.3f} [{iv.low:.3f} … {iv.high:.3f}] {'held' if ok else 'MISSED'}")
    return summary("chatty/echo CPU per document", ratios, held)


if __name__ == "__main__":
    sys.exit(main())
