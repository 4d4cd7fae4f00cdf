"""CPU a process tree used over an interval, and how contended it was, from kernel accounting.

CPU: the tree's cgroup (cpuacct.usage, nanoseconds) when that group holds nothing but the tree (a
container, a cgroup dragnet made), else /proc: the sum over the live tree of utime + stime + cutime +
cstime. A process that exited was reaped by a member of the tree (query servers by erl_child_setup), so
its time sits in that member's cutime/cstime: exited query servers are counted either way.

Contention: run-queue wait of the tree's threads (/proc/PID/task/TID/schedstat: ns on CPU, ns waiting),
the machine's steal time (/proc/stat) and the CPU pressure stall time (/proc/pressure/cpu, `some`).
A run whose threads waited longer than they ran is flagged.

Parsers are pure; `Snapshot.take` reads the files.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def parse_pid_stat(text: str) -> tuple[int, int, int, int, int]:
    """(ppid, utime, stime, cutime, cstime) in clock ticks from /proc/PID/stat (comm may hold spaces)."""
    rest = text[text.rindex(")") + 2:].split()
    # rest[0] is field 3 (state): ppid is field 4, utime..cstime fields 14..17
    return int(rest[1]), int(rest[11]), int(rest[12]), int(rest[13]), int(rest[14])


def parse_schedstat(text: str) -> tuple[int, int]:
    """(ns on CPU, ns waiting on a run queue) from /proc/PID/task/TID/schedstat."""
    f = text.split()
    return int(f[0]), int(f[1])


def parse_pressure(text: str) -> float | None:
    """Total stall time of `some` in seconds from /proc/pressure/cpu."""
    for line in text.splitlines():
        if line.startswith("some "):
            for part in line.split()[1:]:
                if part.startswith("total="):
                    return int(part[6:]) / 1e6
    return None


def parse_machine(text: str) -> tuple[int, int] | None:
    """(busy, total) jiffies of every core together from the 'cpu' line of /proc/stat. Busy is user, nice,
    system, irq, softirq and steal (guest time is inside user); idle and iowait are not busy."""
    for line in text.splitlines():
        if line.startswith("cpu "):
            f = [int(x) for x in line.split()[1:9]]
            f += [0] * (8 - len(f))
            user, nice, system, idle, iowait, irq, softirq, steal = f
            return user + nice + system + irq + softirq + steal, sum(f)
    return None


def parse_cpu_max(text: str) -> float | None:
    """Cores a v2 group's cpu.max allows ("200000 100000" -> 2.0), None for "max"."""
    f = text.split()
    if len(f) == 2 and f[0] != "max" and f[0].isdigit() and f[1].isdigit() and int(f[1]):
        return int(f[0]) / int(f[1])
    return None


def cores_of(root: int, proc: str = "/proc", sys_fs: str = "/sys/fs/cgroup") -> float | None:
    """The cores a process could use: its CPU affinity, lowered by its group's CPU quota (v2 cpu.max or v1
    cfs_quota_us), None when the process is gone."""
    try:
        cores: float = float(len(os.sched_getaffinity(root)))
    except (OSError, AttributeError):
        return None
    text = _read(f"{proc}/{root}/cgroup") or ""
    v2 = cgroup_path(text, "cpu")
    quotas = []
    if v2 and v2 != "/":
        quotas.append(parse_cpu_max(_read(Path(sys_fs) / v2.lstrip("/") / "cpu.max") or ""))
        base = Path(sys_fs) / "cpu" / v2.lstrip("/")
        quota, period = _read(base / "cpu.cfs_quota_us"), _read(base / "cpu.cfs_period_us")
        if quota and period and int(quota) > 0 and int(period) > 0:
            quotas.append(int(quota) / int(period))
    return min([cores] + [q for q in quotas if q])


def parse_steal(text: str) -> int | None:
    """Steal jiffies from the 'cpu' line of /proc/stat."""
    for line in text.splitlines():
        if line.startswith("cpu "):
            f = line.split()
            return int(f[8]) if len(f) > 8 else None
    return None


def cgroup_path(text: str, controller: str = "cpuacct") -> str | None:
    """The process's group of a v1 controller (or the v2 group) from /proc/PID/cgroup."""
    v2 = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if controller in parts[1].split(","):
            return parts[2]
        if parts[0] == "0" and parts[1] == "":
            v2 = parts[2]
    return v2


def _read(path: str | Path) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def tree(root: int, proc: str = "/proc") -> set[int]:
    """root and all its descendants now."""
    from dragnet.measure.pidstat import process_tree

    return process_tree(root, proc)


def _cgroup_usage_s(root: int, pids: set[int], proc: str, sys_fs: str) -> tuple[str, float] | None:
    """(group, seconds) of the root's cpuacct group (v1) or cpu.stat usage (v2), only if the group holds
    nothing but the tree's processes (so another program's CPU is never counted)."""
    group = cgroup_path(_read(f"{proc}/{root}/cgroup") or "")
    if not group or group == "/":
        return None
    for base, procs_file, read in (
            (Path(sys_fs) / "cpuacct" / group.lstrip("/"), "cgroup.procs", lambda d: int((d / "cpuacct.usage")
                                                                                      .read_text()) / 1e9),
            (Path(sys_fs) / group.lstrip("/"), "cgroup.procs", _v2_usage)):
        try:
            members = {int(x) for x in (base / procs_file).read_text().split()}
            if members and members <= pids:
                return group, read(base)
        except (OSError, ValueError):
            continue
    return None


def _v2_usage(d: Path) -> float:
    for line in (d / "cpu.stat").read_text().splitlines():
        if line.startswith("usage_usec "):
            return int(line.split()[1]) / 1e6
    raise ValueError("no usage_usec")


@dataclass(frozen=True)
class Snapshot:
    """Cumulative counters of one process tree at one moment."""

    t: float
    proc_cpu_s: float            # live tree's utime+stime+cutime+cstime
    cgroup: str | None
    cgroup_cpu_s: float | None
    run_s: float                 # live threads' time on CPU (schedstat)
    wait_s: float                # live threads' run-queue wait (schedstat)
    steal_s: float | None
    pressure_s: float | None
    pids: int
    by_name: tuple = ()          # (comm, utime+stime+cutime+cstime seconds) per process name of the tree
    threads: tuple = ()          # (tid, run ns, wait ns) of every live thread, so usage counts deltas per thread
    machine_busy_s: float | None = None    # /proc/stat: every program's CPU on every core (busy jiffies)
    machine_total_s: float | None = None   # /proc/stat: every core's time, busy or not
    cores: float | None = None   # the cores the tree's root could use (affinity, CPU quota)
    beam_threads: tuple = ()     # (tid, kind) of beam.smp's threads: BEAM_THREADS of their names

    @classmethod
    def take(cls, root: int, proc: str = "/proc", sys_fs: str = "/sys/fs/cgroup") -> "Snapshot":
        pids = tree(root, proc)
        ticks, run_ns, wait_ns = 0, 0, 0
        names: dict[str, int] = {}
        threads: list[tuple[int, int, int]] = []
        beam: list[tuple[int, str]] = []
        for pid in pids:
            text = _read(f"{proc}/{pid}/stat")
            comm = ""
            if text:
                _, u, s, cu, cs = parse_pid_stat(text)
                ticks += u + s + cu + cs
                comm = text[text.index("(") + 1:text.rindex(")")]
                names[comm] = names.get(comm, 0) + u + s + cu + cs
            try:
                tids = os.listdir(f"{proc}/{pid}/task")
            except OSError:
                tids = []
            for tid in tids:
                st = _read(f"{proc}/{pid}/task/{tid}/schedstat")
                if st:
                    r, w = parse_schedstat(st)
                    run_ns, wait_ns = run_ns + r, wait_ns + w
                    threads.append((int(tid), r, w))
                    if comm == "beam.smp":
                        beam.append((int(tid), beam_thread_kind(_read(f"{proc}/{pid}/task/{tid}/comm") or "")))
        cg = _cgroup_usage_s(root, pids, proc, sys_fs)
        stat = _read(f"{proc}/stat") or ""
        steal, machine = parse_steal(stat), parse_machine(stat)
        return cls(time.time(), ticks / CLK_TCK, cg[0] if cg else None, cg[1] if cg else None, run_ns / 1e9,
                   wait_ns / 1e9, None if steal is None else steal / CLK_TCK,
                   parse_pressure(_read(f"{proc}/pressure/cpu") or ""), len(pids),
                   tuple(sorted((k, v / CLK_TCK) for k, v in names.items())), tuple(sorted(threads)),
                   None if machine is None else machine[0] / CLK_TCK,
                   None if machine is None else machine[1] / CLK_TCK,
                   cores_of(root, proc, sys_fs), tuple(sorted(beam)))


def usage(before: Snapshot, after: Snapshot) -> dict:
    """What the tree used between two snapshots (pure): the record a results file keeps."""
    proc_s = after.proc_cpu_s - before.proc_cpu_s
    cg_s = (after.cgroup_cpu_s - before.cgroup_cpu_s
            if after.cgroup_cpu_s is not None and before.cgroup_cpu_s is not None and after.cgroup == before.cgroup
            else None)
    run_s, wait_s = _sched_delta(before, after)
    diff = lambda a, b: None if a is None or b is None else round(a - b, 6)  # noqa: E731
    return {"cpu_s": round(cg_s if cg_s is not None else proc_s, 6),
            "source": f"cgroup {after.cgroup}" if cg_s is not None else "/proc process tree",
            "proc_cpu_s": round(proc_s, 6), "cgroup_cpu_s": None if cg_s is None else round(cg_s, 6),
            "interval_s": round(after.t - before.t, 6), "run_s": round(run_s, 6), "wait_s": round(wait_s, 6),
            "steal_s": diff(after.steal_s, before.steal_s), "pressure_some_s": diff(after.pressure_s, before.pressure_s),
            "waited_more_than_ran": wait_s > run_s > 0, "pids": after.pids,
            # per process name (beam.smp, erl_child_setup holding exited query servers, couchjs …)
            "by_process": {k: round(v - dict(before.by_name).get(k, 0.0), 6) for k, v in after.by_name},
            # every program on the machine over the same interval, for core_time's "other programs"
            "machine_busy_s": diff(after.machine_busy_s, before.machine_busy_s),
            "machine_total_s": diff(after.machine_total_s, before.machine_total_s),
            "cores": after.cores if after.cores is not None else before.cores,
            # beam's CPU per thread kind (its normal schedulers, dirty CPU and dirty I/O schedulers, ...)
            **({"beam_threads": beam_thread_cpu(before, after)} if after.beam_threads else {})}


# beam.smp's threads by name (OTP names them "1_scheduler", "3_dirty_io_sch", "aux", "poll", "erts_dios_1", ...,
# cut to 15 characters), in the order tried
BEAM_THREADS = (("scheduler", ("scheduler", "erts_sched")), ("dirty_cpu", ("dirty_cpu", "erts_dcpus")),
                ("dirty_io", ("dirty_io", "erts_dios")), ("aux", ("aux",)), ("poll", ("poll", "erts_poll")),
                ("async", ("async",)))


def beam_thread_kind(name: str) -> str:
    """A beam thread's kind from its name (pure); "other" for the main thread and the rest."""
    bare = name.strip().lstrip("0123456789").lstrip("_")
    for kind, prefixes in BEAM_THREADS:
        if bare.startswith(prefixes):
            return kind
    return "other"


def beam_thread_cpu(before: Snapshot, after: Snapshot) -> dict[str, float]:
    """Seconds on CPU of beam's threads per kind between two snapshots (schedstat, per thread as
    _thread_deltas counts it), pure."""
    deltas = _thread_deltas(before, after)
    out: dict[str, float] = {}
    for tid, kind in after.beam_threads:
        if tid in deltas:
            out[kind] = out.get(kind, 0.0) + deltas[tid][0] / 1e9
    return {k: round(v, 6) for k, v in sorted(out.items())}


def _thread_deltas(before: Snapshot, after: Snapshot) -> dict[int, tuple[int, int]]:
    """{tid: (run ns, wait ns)} each thread alive at the end spent between two snapshots: a thread that exited
    in between takes its counters with it, and subtracting them made sums negative. A thread new since the
    first snapshot counts whole; a tid reused in between (counters smaller than before) counts whole too."""
    old = {tid: (r, w) for tid, r, w in before.threads}
    out = {}
    for tid, r, w in after.threads:
        r0, w0 = old.get(tid, (0, 0))
        if r < r0 or w < w0:
            r0 = w0 = 0
        out[tid] = (r - r0, w - w0)
    return out


def _sched_delta(before: Snapshot, after: Snapshot) -> tuple[float, float]:
    """(run s, wait s) the tree's threads spent between two snapshots, summed over _thread_deltas."""
    if not (before.threads and after.threads):
        return after.run_s - before.run_s, after.wait_s - before.wait_s
    deltas = _thread_deltas(before, after).values()
    return sum(r for r, _ in deltas) / 1e9, sum(w for _, w in deltas) / 1e9


def schedstat_of(pid: int, proc: str = "/proc") -> tuple[float, float] | None:
    """(s on CPU, s waiting) summed over a live process's threads, or None when it is gone."""
    try:
        tids = os.listdir(f"{proc}/{pid}/task")
    except OSError:
        return None
    run_ns = wait_ns = 0
    for tid in tids:
        st = _read(f"{proc}/{pid}/task/{tid}/schedstat")
        if st:
            r, w = parse_schedstat(st)
            run_ns, wait_ns = run_ns + r, wait_ns + w
    return run_ns / 1e9, wait_ns / 1e9



# CouchDB's own helpers under erl_child_setup: not query servers
HELPERS = ("inet_gethost", "memsup", "cpu_sup", "epmd", "df")


def _children(pid: int, proc: str) -> list[int]:
    """Direct children of a process (/proc/PID/task/TID/children lists those each thread forked)."""
    out: list[int] = []
    try:
        tids = os.listdir(f"{proc}/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        out += [int(x) for x in (_read(f"{proc}/{pid}/task/{tid}/children") or "").split()]
    return out


def _is_helper(pid: int, proc: str) -> bool:
    comm = (_read(f"{proc}/{pid}/comm") or "").strip()
    # disksup runs `sh -s disksup` (and df under it); a query server started through sh is not that
    return comm in HELPERS or (comm == "sh" and "disksup" in (_read(f"{proc}/{pid}/cmdline") or ""))


def query_server_pids(root: int, proc: str = "/proc", spawners: set[int] | None = None) -> set[int]:
    """The query servers under a CouchDB tree now: erl_child_setup's children that are not CouchDB's own
    helpers, with their descendants (a wrapper's child is the server). spawners: erl_child_setup pids
    found before, walked from instead of the root (beam's many threads are not read again)."""
    found: set[int] = set()
    todo = list(spawners) if spawners else [root]
    seen = set(todo)
    while todo:
        pid = todo.pop()
        comm = (_read(f"{proc}/{pid}/comm") or "").strip()
        for child in _children(pid, proc):
            if child in seen:
                continue
            seen.add(child)
            if comm == "erl_child_setup" and _is_helper(child, proc):
                continue
            if pid in found or comm == "erl_child_setup":
                found.add(child)
            todo.append(child)
    return found


def spawners(root: int, proc: str = "/proc") -> set[int]:
    """The erl_child_setup processes under a CouchDB tree (one per node): query servers are their children."""
    from dragnet.measure.pidstat import process_tree

    return {p for p in process_tree(root, proc) if (_read(f"{proc}/{p}/comm") or "").strip() == "erl_child_setup"}


def _start_time(stat_text: str) -> str:
    """Field 22 (start time in ticks): with the pid it names one process even when pids are reused."""
    return stat_text[stat_text.rindex(")") + 2:].split()[19]


def thread_times(pids: set[int], proc: str = "/proc") -> dict[tuple, tuple]:
    """{(pid, start time, tid): (process name, ns on CPU, ns waiting, user ticks, system ticks)} for every
    live thread of the pids."""
    out: dict[tuple, tuple] = {}
    for pid in pids:
        stat = _read(f"{proc}/{pid}/stat")
        if not stat:
            continue
        key, comm = (pid, _start_time(stat)), stat[stat.index("(") + 1:stat.rindex(")")]
        try:
            tids = os.listdir(f"{proc}/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            st = _read(f"{proc}/{pid}/task/{tid}/schedstat")
            ts = _read(f"{proc}/{pid}/task/{tid}/stat")
            if st and ts:
                r, w = parse_schedstat(st)
                _, u, s, _, _ = parse_pid_stat(ts)
                out[(*key, int(tid))] = (comm, r, w, u, s)
    return out


def process_ticks(pids: set[int], proc: str = "/proc") -> dict[tuple, tuple[int, int]]:
    """{(pid, start time): (own ticks, waited-for children's ticks)}: utime+stime and cutime+cstime of each
    live process. A process's own figure keeps its ended threads; its children's figure gains a child's whole
    time when it is reaped."""
    out: dict[tuple, tuple[int, int]] = {}
    for pid in pids:
        stat = _read(f"{proc}/{pid}/stat")
        if stat:
            _, u, s, cu, cs = parse_pid_stat(stat)
            out[(pid, _start_time(stat))] = (u + s, cu + cs)
    return out


def unseen_ticks(first: dict, last: dict, alive: set, reapers_first: dict, reapers_last: dict) -> int:
    """Clock ticks the query servers used that no reading saw (pure): servers that ended after their last
    reading, or started and ended between two readings, and their own children.

    Every tick of the servers' trees is either in a live server's utime+stime+cutime+cstime or, once the
    server is reaped, in its reaper's (erl_child_setup's) cutime+cstime. So the trees used
      Σ reapers' Δ(children's ticks) + Σ servers alive at the end (own + children's ticks)
      − Σ servers at the first reading (own + children's ticks then),
    of which the servers' own ticks between their first and last readings are what the thread readings saw (a
    thread that ends inside a live server keeps only what was read of it). first/last: process_ticks of the
    servers at the first reading and each one's latest; alive: the servers in the final reading; reapers_*:
    process_ticks of the spawners at the first and the final reading (a spawner new at the end counts whole).
    A server new since the first reading counts from zero."""
    total = 0
    for key, (_, kids) in reapers_last.items():
        total += kids - reapers_first.get(key, (0, 0))[1]
    seen = 0
    for key, (own, kids) in last.items():
        own0, kids0 = first.get(key, (0, 0))
        total += (own + kids if key in alive else 0) - own0 - kids0
        seen += own - own0
    return max(0, total - seen)


def thread_usage(first: dict, last: dict, interval_s: float, samples: int, period_s: float) -> dict:
    """What the query servers' threads used between a first and the latest reading of each (pure): a thread
    seen only later started after the first reading, so its whole time counts; a thread that ended loses
    only what it ran after its last reading (at most a period)."""
    run_ns = wait_ns = user = system = 0
    by_name: dict[str, int] = {}
    started = {k[:2] for k in last} - {k[:2] for k in first}
    started_ns = sum(v[1] for k, v in last.items() if k[:2] in started)
    for key, (comm, r, w, u, s) in last.items():
        _, r0, w0, u0, s0 = first.get(key, (comm, 0, 0, 0, 0))
        run_ns, wait_ns, user, system = run_ns + r - r0, wait_ns + w - w0, user + u - u0, system + s - s0
        by_name[comm] = by_name.get(comm, 0) + r - r0
    # user and system time: the kernel's split of the same time, in clock ticks (coarse; for reading only)
    return {"cpu_s": round(run_ns / 1e9, 9), "wait_s": round(wait_ns / 1e9, 9),
            "user_s": round(user / CLK_TCK, 6), "system_s": round(system / CLK_TCK, 6),
            "by_process": {k: round(v / 1e9, 9) for k, v in sorted(by_name.items())},
            "processes": len({k[:2] for k in last}), "threads": len(last),
            # servers spawned during the build: their start-up is in cpu_s (a warm-up round avoids it)
            "started": len(started), "started_cpu_s": round(started_ns / 1e9, 9), "interval_s": round(interval_s, 6),
            "samples": samples, "period_s": period_s, "source": "schedstat of the query servers' threads"}


class QueryServerTracker:
    """The query servers' own CPU over a build: every thread of every query server under a CouchDB tree read
    from schedstat (ns) at the start, every `period` s and at the end; what no reading saw (a server that ended
    after its last reading, or lived between two) from the kernel's accounting of reaped children
    (unseen_ticks, in clock ticks). CouchDB's own CPU (beam.smp) is not in it: the right figure for a change
    in the map functions, not for a change on CouchDB's side. A CouchDB helper (inet_gethost, ...) that ended
    during the build would be counted by its reaper's figure; they live as long as beam."""

    def __init__(self, root: int, period: float = 0.1, proc: str = "/proc"):
        import threading

        self.root, self.period, self.proc = root, period, proc
        self.first: dict = {}
        self.last: dict = {}
        self.procs_first: dict = {}
        self.procs_last: dict = {}
        self.procs_now: dict = {}
        self.reapers_first: dict = {}
        self.reapers_last: dict = {}
        self.samples = 0
        self.spawners: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="dragnet-qs-cpu", daemon=True)
        self._t0 = 0.0

    def _sample(self, full: bool = False) -> None:
        if full:
            self.spawners = spawners(self.root, self.proc)
        pids = query_server_pids(self.root, self.proc, None if full else self.spawners)
        # the reapers first: a server that ends in between is then in the servers' last reading or in these
        # figures' next one, never in both
        reapers = process_ticks(self.spawners, self.proc)
        now = thread_times(pids, self.proc)
        self.procs_now = process_ticks(pids, self.proc)
        self.procs_last.update(self.procs_now)
        self.last.update(now)
        self.reapers_last = reapers
        self.samples += 1

    def start(self) -> "QueryServerTracker":
        self._t0 = time.time()
        self.spawners = spawners(self.root, self.proc)
        self.reapers_first = process_ticks(self.spawners, self.proc)
        pids = query_server_pids(self.root, self.proc, self.spawners or None)
        self.first = thread_times(pids, self.proc)
        self.procs_first = process_ticks(pids, self.proc)
        self.last, self.procs_last = dict(self.first), dict(self.procs_first)
        self.reapers_last = dict(self.reapers_first)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self._sample()
            except (OSError, ValueError, IndexError):   # a process ending while it is read
                continue

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        self._sample(full=True)     # from the root: a spawner that started meanwhile is seen too
        used = thread_usage(self.first, self.last, time.time() - self._t0, self.samples, self.period)
        unseen = unseen_ticks(self.procs_first, self.procs_last, set(self.procs_now), self.reapers_first,
                              self.reapers_last) / CLK_TCK
        return {**used, "cpu_s": round(used["cpu_s"] + unseen, 9), "unseen_cpu_s": round(unseen, 6),
                "source": used["source"] + ", and the reapers' cutime+cstime for what ended unseen"}


# ---------------------------------------------------------------- where a build's core-time goes

# processes of CouchDB's tree that are neither beam nor a query server (erl_child_setup is left out: its
# cutime holds the query servers it reaped)
TREE_HELPERS = HELPERS + ("sh", "tini", "docker-init")


@dataclass(frozen=True)
class CoreTime:
    """One build's interval × the cores CouchDB could use, in seconds, divided among who used it: the query
    servers (their threads' schedstat), beam (utime+stime of beam.smp), CouchDB's helper processes, every
    other program on the machine, and idle. waited_s, the time CouchDB's threads were runnable but not on a
    core, overlaps the others and is shown apart."""

    interval_s: float
    cores: float
    qs_s: float | None        # None: the view runs inside beam (Erlang, Mango)
    beam_s: float
    helpers_s: float
    other_s: float | None     # None: the file records no machine figure (the rest is then all in idle_s)
    idle_s: float
    waited_s: float

    PARTS = (("qs", "query servers"), ("beam", "beam"), ("helpers", "CouchDB's helpers"),
             ("other", "other programs"), ("idle", "idle"))

    @property
    def total_s(self) -> float:
        return self.interval_s * self.cores

    def seconds(self) -> dict[str, float | None]:
        return {"qs": self.qs_s, "beam": self.beam_s, "helpers": self.helpers_s, "other": self.other_s,
                "idle": self.idle_s}

    def fractions(self) -> dict[str, float | None]:
        t = self.total_s or 1.0
        return {k: None if v is None else v / t for k, v in self.seconds().items()} | {"waited": self.waited_s / t}


def core_time(cpu: dict | None, cores: float | None = None, in_beam: bool = False) -> CoreTime | str:
    """The split of one build's core-time from its results file's `cpu` record (dragnet.measure.cpu.usage plus
    its `query_servers`), or why there is none. Pure.

    cores: the cores CouchDB could use when the record does not say (older files: the machine's). Other
    programs are /proc/stat's busy time over the same interval less CouchDB's tree, at most what CouchDB's
    cores left: on a machine with more cores than CouchDB's, some of it ran where CouchDB could not."""
    if not isinstance(cpu, dict) or not isinstance(cpu.get("by_process"), dict):
        return "no kernel accounting in this results file (recorded before dragnet kept it)"
    interval = float(cpu.get("interval_s") or 0.0)
    cores = float(cpu.get("cores") or cores or 0.0)
    if interval <= 0 or cores <= 0:
        return "no interval or no core count recorded"
    by = cpu["by_process"]
    beam = max(0.0, float(by.get("beam.smp") or 0.0))
    helpers = max(0.0, sum(float(v or 0.0) for k, v in by.items() if k in TREE_HELPERS))
    qs_rec = cpu.get("query_servers")
    if in_beam:
        qs = None
    elif isinstance(qs_rec, dict) and qs_rec.get("cpu_s") is not None:
        qs = max(0.0, float(qs_rec["cpu_s"]))
    else:
        return "no query-server accounting in this results file (recorded before dragnet kept it)"
    used = beam + helpers + (qs or 0.0)
    total = interval * cores
    couch = max(used, float(cpu.get("cpu_s") or 0.0))
    busy = cpu.get("machine_busy_s")
    other = None if busy is None else min(max(0.0, float(busy) - couch), max(0.0, total - used))
    idle = max(0.0, total - used - (other or 0.0))
    return CoreTime(interval, cores, qs, beam, helpers, other, idle, max(0.0, float(cpu.get("wait_s") or 0.0)))


def tree_query_servers_s(cpu: dict) -> float:
    """The query servers' CPU as the tree's /proc accounting (by_process) has it: every process that is not
    beam nor a helper, with erl_child_setup, whose cutime holds the servers that exited. Clock ticks: a
    cross-check of the schedstat figure core_time uses."""
    by = cpu.get("by_process") or {}
    return sum(float(v or 0.0) for k, v in by.items() if k != "beam.smp" and k not in TREE_HELPERS)
