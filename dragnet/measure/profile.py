"""`--profile`: a sampling profile by function of CouchDB's processes during one build.

`perf record -e cpu-clock -g -a` runs for the build's interval; its samples are then kept only for
CouchDB's process tree (beam and the query servers it started, gathered at every poll) and folded into
the standard folded-stack format (`thread;root;...;leaf count`, one line per distinct stack), gzip'd
beside the results. beam started with `+JPperf true` (dragnet's local and docker backends do) writes
`/tmp/perf-PID.map`, which names the Erlang functions its JIT compiled; beam's own C code stays
unnamed where the binary is stripped. perf.data lives in a temporary directory removed after folding;
perf is bounded by a `sleep` it runs, so even a dragnet killed with SIGKILL leaves no perf running.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

FREQUENCY = 499          # Hz: off the kernel's tick multiples, ~2 ms between samples per core
EVENT = "cpu-clock"      # a software event: works in VMs and containers without hardware counters
PARANOID = Path("/proc/sys/kernel/perf_event_paranoid")
STOP_TIMEOUT = 60.0


# ------------------------------------------------------------------ can it run here (pure, then I/O)

def why_not(perf: str | None, paranoid: int | None, privileged: bool) -> str | None:
    """The one line saying why no function profile can be taken, or None when it can."""
    if perf is None:
        return "perf not found (install linux-perf): no function profile; the other figures are still reported"
    # system-wide sampling (-a) needs perf_event_paranoid <= 0 unless the process has CAP_PERFMON/SYS_ADMIN
    if paranoid is not None and paranoid > 0 and not privileged:
        return (f"kernel.perf_event_paranoid is {paranoid} (needs 0 or less, or root): no function profile; "
                f"the other figures are still reported")
    return None


def read_paranoid(path: Path = PARANOID) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def unavailable() -> str | None:
    return why_not(shutil.which("perf"), read_paranoid(), os.geteuid() == 0)


def jit_map(beam_pid: int, proc: str = "/proc") -> Path | None:
    """beam's JIT perf map as this machine sees it: /tmp/perf-PID.map, or inside a container's own root
    under the PID beam has in its namespace (what perf itself looks for)."""
    direct = Path(f"/tmp/perf-{beam_pid}.map")
    if direct.exists():
        return direct
    try:
        status = Path(f"{proc}/{beam_pid}/status").read_text()
    except OSError:
        return None
    m = re.search(r"^NSpid:\s+(.*)$", status, re.M)
    if m:
        inner = m.group(1).split()[-1]
        p = Path(f"{proc}/{beam_pid}/root/tmp/perf-{inner}.map")
        if p.exists():
            return p
    return None


# ------------------------------------------------------------------ folding perf script's output (pure)

_HEADER = re.compile(r"^(?P<comm>\S.*?)\s+(?P<pid>-?\d+)/(?P<tid>-?\d+)\s+(?P<period>\d+)\s*$")
_FRAME = re.compile(r"^\s+(?P<addr>[0-9a-f]+)\s+(?P<sym>.*?)\s+\((?P<dso>[^()]*)\)\s*$")


@dataclass
class Folded:
    """Folded stacks of the samples kept, with what was left out."""

    stacks: Counter = field(default_factory=Counter)
    samples: int = 0
    period_ns: int = 0            # CPU time the kept samples stand for
    dropped: int = 0              # samples of processes outside the kept set
    by_pid: Counter = field(default_factory=Counter)

    @property
    def cpu_s(self) -> float:
        return self.period_ns / 1e9


def frame_name(sym: str, dso: str) -> str:
    """A frame's name: the symbol without its offset, or [dso] for an unnamed address."""
    sym = re.sub(r"\+0x[0-9a-f]+$", "", sym.strip())
    if sym and sym != "[unknown]":
        return sym.replace(";", ":")
    base = os.path.basename(dso) if dso and dso != "[unknown]" else "unknown"
    if re.fullmatch(r"\[?perf-\d+\.map\]?", base):      # a JIT's code perf has no name for (the pid would split stacks)
        return "[jit]"
    return f"[{base.strip('[]')}]"


def fold(lines: Iterable[str], pids: set[int] | None = None, names: Mapping[int, str] | None = None) -> Folded:
    """perf script's output (`comm pid/tid period`, then frames leaf first) into folded stacks rooted at
    the process's name then the thread's (`beam.smp;1_scheduler;...`); the process name is `names[pid]`,
    else its main thread's name. Samples of processes not in `pids` are counted as dropped."""
    out = Folded()
    raw: Counter = Counter()          # (pid, thread;frames) -> samples
    main: dict[int, str] = {}
    head: re.Match | None = None
    frames: list[str] = []

    def clean(name: str) -> str:
        return name.replace(";", ":").replace(" ", "_")

    def flush() -> None:
        if head is None:
            return
        pid, tid = int(head["pid"]), int(head["tid"])
        if pids is not None and pid not in pids:
            out.dropped += 1
            return
        if pid == tid:
            main[pid] = clean(head["comm"])
        # runs of one unnamed frame (a walk through code without frame pointers) folded into one
        chain = [f for i, f in enumerate(reversed(frames)) if i == 0 or f != frames[len(frames) - i]
                 or not f.startswith("[")]
        raw[(pid, ";".join([clean(head["comm"]), *chain]))] += 1
        out.samples += 1
        out.period_ns += int(head["period"])
        out.by_pid[pid] += 1

    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            flush()
            head, frames = None, []
            continue
        m = _HEADER.match(line)
        if m and not line.startswith((" ", "\t")):
            flush()
            head, frames = m, []
            continue
        f = _FRAME.match(line)
        if f and head is not None:
            frames.append(frame_name(f["sym"], f["dso"]))
    flush()
    names = names or {}
    for (pid, rest), n in raw.items():
        process = clean(names.get(pid) or main.get(pid) or rest.split(";", 1)[0])
        out.stacks[f"{process};{rest}"] += n
    return out


def write_folded(stacks: Counter, path: Path) -> Path:
    """Folded stacks gzip'd, heaviest first (deterministic bytes: no name or time in the gzip header)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(f"{s} {n}\n" for s, n in sorted(stacks.items(), key=lambda kv: (-kv[1], kv[0])))
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        gz.write(body.encode())
    return path


def read_folded(path: str | Path) -> Counter:
    """A folded file (gzip'd or plain); a bad line is an error naming its number."""
    p = Path(path)
    opener = gzip.open if p.suffix == ".gz" else open
    out: Counter = Counter()
    with opener(p, "rt", encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, count = line.rpartition(" ")
            if not stack or not count.isdigit():
                raise ValueError(f"{p}:{n}: not a folded line (expected 'frame;frame count')")
            out[stack] += int(count)
    return out


# ------------------------------------------------------------------ the recorder (I/O)

def _cpu_of(rusage) -> float:
    return rusage.ru_utime + rusage.ru_stime


def _die_with_parent() -> None:
    """In the child before exec: SIGINT (perf's own stop) when dragnet dies, however it dies."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGINT)      # PR_SET_PDEATHSIG
    except OSError:      # not Linux's libc: the sleep bound still ends perf
        pass


class Profiler:
    """perf record system-wide for one build. start() before the build, stop() right after it (also from
    an interrupt's cleanup), then fold(pids) once CouchDB's processes are known."""

    def __init__(self, *, bound_s: float, frequency: int = FREQUENCY, perf: str = "perf"):
        self.perf = perf
        self.frequency = frequency
        self.bound_s = max(1, int(bound_s) + 60)
        self.dir: Path | None = None
        self.proc: subprocess.Popen | None = None
        self.t0 = self.t1 = None
        self.cpu_s: float | None = None      # perf record's own CPU (user + system), from its rusage
        self.error: str | None = None

    @property
    def data(self) -> Path:
        assert self.dir is not None
        return self.dir / "perf.data"

    def argv(self) -> list[str]:
        return [self.perf, "record", "-e", EVENT, "-F", str(self.frequency), "-g", "-a", "-q",
                "-o", str(self.data), "--", "sleep", str(self.bound_s)]

    def start(self) -> "Profiler":
        self.dir = Path(tempfile.mkdtemp(prefix="dragnet-perf-"))
        self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, start_new_session=True, preexec_fn=_die_with_parent)
        self.t0 = time.time()
        # perf needs a moment to open its events on every CPU; a refusal shows as an early exit
        deadline = time.time() + 2.0
        while time.time() < deadline and not self._ready():
            if os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                self._finish()
                return self
            time.sleep(0.02)
        return self

    def _ready(self) -> bool:
        try:
            return self.data.stat().st_size > 0
        except OSError:
            return False

    def stop(self) -> None:
        """SIGINT ends perf record (it writes its file and ends its sleep); it is waited for in fold() or
        cleanup(), so the build's own figures are not held up. Safe to call twice."""
        if self.proc is None or self.t1 is not None:
            return
        self.t1 = time.time()
        if self.proc.returncode is None:
            try:
                os.kill(self.proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass

    def _finish(self) -> None:
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        if self.t1 is None:
            self.t1 = time.time()
        deadline = time.time() + STOP_TIMEOUT
        status = rusage = None
        while time.time() < deadline:
            pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            time.sleep(0.05)
        else:     # not Popen.kill(): its poll() would reap perf before wait4 reads its CPU
            os.kill(proc.pid, signal.SIGKILL)
            pid, status, rusage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        self.cpu_s = _cpu_of(rusage)
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        if proc.stderr:
            proc.stderr.close()
        if not self._ready():
            last = [ln for ln in err.splitlines() if ln.strip()]
            self.error = (f"perf record failed ({last[-1].strip() if last else f'exit {proc.returncode}'}): "
                          f"no function profile; the other figures are still reported")

    def fold(self, pids: set[int] | None, names: Mapping[int, str] | None = None) -> Folded:
        """perf script over the recording, kept for `pids`; the recording is removed afterwards."""
        try:
            self.stop()
            self._finish()
            if self.error or self.dir is None:
                return Folded()
            with subprocess.Popen([self.perf, "script", "-i", str(self.data), "-F", "comm,pid,tid,period,ip,sym,dso"],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                  errors="replace") as script:
                assert script.stdout is not None
                return fold(script.stdout, pids, names)
        finally:
            self.cleanup()

    def cleanup(self) -> None:
        self.stop()
        self._finish()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    @property
    def wall_s(self) -> float | None:
        return (self.t1 - self.t0) if self.t0 and self.t1 else None
