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

    @classmethod
    def take(cls, root: int, proc: str = "/proc", sys_fs: str = "/sys/fs/cgroup") -> "Snapshot":
        pids = tree(root, proc)
        ticks, run_ns, wait_ns = 0, 0, 0
        names: dict[str, int] = {}
        threads: list[tuple[int, int, int]] = []
        for pid in pids:
            text = _read(f"{proc}/{pid}/stat")
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
        cg = _cgroup_usage_s(root, pids, proc, sys_fs)
        steal = parse_steal(_read(f"{proc}/stat") or "")
        return cls(time.time(), ticks / CLK_TCK, cg[0] if cg else None, cg[1] if cg else None, run_ns / 1e9,
                   wait_ns / 1e9, None if steal is None else steal / CLK_TCK,
                   parse_pressure(_read(f"{proc}/pressure/cpu") or ""), len(pids),
                   tuple(sorted((k, v / CLK_TCK) for k, v in names.items())), tuple(sorted(threads)))


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
            "by_process": {k: round(v - dict(before.by_name).get(k, 0.0), 6) for k, v in after.by_name}}


def _sched_delta(before: Snapshot, after: Snapshot) -> tuple[float, float]:
    """(run s, wait s) the tree's threads spent between two snapshots. Summed per thread over those alive at
    the end: a thread that exited in between takes its counters with it, and subtracting them made the sum
    negative. A thread new since the first snapshot counts whole; a tid reused in between (counters smaller
    than before) counts whole too."""
    if not (before.threads and after.threads):
        return after.run_s - before.run_s, after.wait_s - before.wait_s
    old = {tid: (r, w) for tid, r, w in before.threads}
    run_ns = wait_ns = 0
    for tid, r, w in after.threads:
        r0, w0 = old.get(tid, (0, 0))
        if r < r0 or w < w0:
            r0 = w0 = 0
        run_ns, wait_ns = run_ns + r - r0, wait_ns + w - w0
    return run_ns / 1e9, wait_ns / 1e9


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
    """The query servers' own CPU over a build, exact to the ns: every thread of every query server under a
    CouchDB tree read from schedstat at the start, every `period` s (a server that appears or ends is
    caught) and at the end. CouchDB's own CPU (beam.smp) is not in it: the right figure for a change in the
    map functions, not for a change on CouchDB's side."""

    def __init__(self, root: int, period: float = 0.1, proc: str = "/proc"):
        import threading

        self.root, self.period, self.proc = root, period, proc
        self.first: dict = {}
        self.last: dict = {}
        self.samples = 0
        self.spawners: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="dragnet-qs-cpu", daemon=True)
        self._t0 = 0.0

    def _sample(self, full: bool = False) -> None:
        pids = query_server_pids(self.root, self.proc, None if full else self.spawners)
        now = thread_times(pids, self.proc)
        self.last.update(now)
        self.samples += 1

    def start(self) -> "QueryServerTracker":
        self._t0 = time.time()
        self.spawners = spawners(self.root, self.proc)
        self.first = thread_times(query_server_pids(self.root, self.proc), self.proc)
        self.last = dict(self.first)
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
        return thread_usage(self.first, self.last, time.time() - self._t0, self.samples, self.period)
