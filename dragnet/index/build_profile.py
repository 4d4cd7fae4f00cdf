"""`--profile` around one build: perf on this machine's CouchDB, folded beside the results, stages counted.

The results' `profile` entry holds the folded file's name (in the results' directory), the samples per
stage (dragnet.measure.stages) and per thread kind, perf's own CPU, and one line for each missing part:
no perf or a kernel that forbids it (no function profile), no JIT map (no Erlang names), a CouchDB on
another machine (no profile). The other figures of the build are recorded either way.
"""

from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path
from urllib.parse import urlsplit

from dragnet.measure import pidstat as _pidstat
from dragnet.measure import profile as _profile
from dragnet.measure import stages as _stages

LOCAL = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:60] or "x"


def folded_name(db: str, language: str) -> str:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    return f"profile-{_slug(db)}-{_slug(language)}-{stamp}.folded.gz"


def beam_pid(pids) -> int | None:
    for pid in sorted(pids):
        if _pidstat.process_name(pid) == "beam.smp":
            return pid
    return None


def _cores(pid: int | None) -> int | None:
    """The cores beam may run on (its affinity: a cpuset or taskset), else the machine's."""
    import os

    try:
        return len(os.sched_getaffinity(pid)) if pid else os.cpu_count()
    except OSError:
        return os.cpu_count()


class BuildProfile:
    """start() right before the build's trigger, stop() right after it (and in any cleanup),
    record() once the build's processes are known."""

    def __init__(self, url: str, root: int | None, *, bound_s: float):
        host = urlsplit(url).hostname or ""
        self.notes: list[str] = []
        self.profiler: _profile.Profiler | None = None
        if host not in LOCAL:
            self.why = f"CouchDB at {host} is not on this machine: no profile; the other figures are still reported"
        elif root is None:
            self.why = "CouchDB's process is not visible on this machine: no profile; the other figures are still reported"
        else:
            self.why = _profile.unavailable()
        if self.why is None:
            self.profiler = _profile.Profiler(bound_s=bound_s)

    def start(self) -> "BuildProfile":
        if self.profiler is not None:
            self.profiler.start()
            if self.profiler.error:
                self.why = self.profiler.error
        return self

    def stop(self) -> None:
        if self.profiler is not None:
            self.profiler.stop()

    def abort(self) -> None:
        """An interrupted build: perf stopped and its recording removed."""
        if self.profiler is not None:
            self.profiler.cleanup()

    def record(self, pids: set[int], results_dir: str | None, name: str) -> dict:
        """The results' `profile` entry; the folded file written into results_dir as `name`."""
        if self.profiler is None or self.why:
            if self.profiler is not None:
                self.profiler.cleanup()
            return {"absent": self.why}
        prof = self.profiler
        self.stop()
        beam = beam_pid(pids)
        names = {pid: n for pid in pids if (n := _pidstat.process_name(pid))}
        if beam is None:
            self.notes.append("no beam.smp among CouchDB's processes: no Erlang names")
        elif _profile.jit_map(beam) is None:
            self.notes.append("no JIT perf map for beam (a CouchDB dragnet did not start, or one without "
                              "+JPperf): no Erlang function names; C and query-server frames only")
        folded = prof.fold(pids, names)
        if prof.error:
            return {"absent": prof.error}
        shares = _stages.shares(folded.stacks)
        per_sample = folded.cpu_s / folded.samples if folded.samples else None
        cores = _cores(beam)
        core_s = prof.wall_s * cores if prof.wall_s and cores else None
        out: dict = {
            "tool": "perf record", "event": _profile.EVENT, "frequency_hz": prof.frequency, "scope": "system-wide, "
            "kept for CouchDB's process tree", "samples": folded.samples, "sampled_cpu_s": round(folded.cpu_s, 4),
            "dropped_samples": folded.dropped, "perf_cpu_s": round(prof.cpu_s, 4) if prof.cpu_s is not None else None,
            "wall_s": round(prof.wall_s, 4) if prof.wall_s else None,
            "erlang_named_share": round(shares.named / shares.beam, 4) if shares.beam else None,
            "cores": cores, "stages": shares.as_dict(per_sample, core_s), "threads": _stages.by_thread(folded.stacks),
            "notes": self.notes,
        }
        if folded.samples and results_dir:
            path = _profile.write_folded(folded.stacks, Path(results_dir) / name)
            out["folded"] = path.name
        elif not folded.samples:
            self.notes.append("perf recorded no sample of CouchDB's processes during the build")
        return out
