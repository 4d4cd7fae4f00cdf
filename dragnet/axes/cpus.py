"""The `--cpus 1,2` bench axis: the cores CouchDB (beam and its query servers) may run on.

Local backend: the release starts inside a cpuset cgroup (dragnet.couchdb.limits.cpuset_group; `taskset`
where no cpuset controller is writable), so beam and every query server it spawns inherit it; docker: the
container's cpuset_cpus. Applied by a restart; checked by reading Cpus_allowed_list of beam and of its
running descendants (query servers) from /proc and, with a cgroup, that each is in the group.
"""

from __future__ import annotations

import os
from pathlib import Path

from dragnet.errors import DragnetError, UsageError


def parse(text: str | None, available: int | None = None) -> list[str]:
    """'1,2' -> ['1','2']; a count that is not a whole number from 1 to the cores here is refused."""
    from dragnet.axes.model import parse_list

    available = available if available is not None else len(os.sched_getaffinity(0))
    out = parse_list(text, "--cpus")
    for v in out:
        if not v.isdigit() or not 1 <= int(v) <= available:
            raise UsageError(f"--cpus {v}: a whole number of cores from 1 to {available} (this machine has "
                             f"{available})")
    return out


def cpuset(count: int) -> list[int]:
    """The first `count` cores this process may use (the ones couchdb_local pins to)."""
    return sorted(os.sched_getaffinity(0))[:count]


def cpuset_text(count: int) -> str:
    return ",".join(map(str, cpuset(count)))


def restart_settings(value: str, backend: str, limits: dict | None) -> dict:
    if backend == "docker":
        return {"cpus": None, "limits": {**(limits or {}), "cpuset_cpus": cpuset_text(int(value))}}
    return {"cpus": float(value)}


def parse_cpu_list(text: str) -> set[int]:
    """'0-2,5' -> {0,1,2,5} (Cpus_allowed_list)."""
    out: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def allowed(pid: int, proc: str = "/proc") -> set[int] | None:
    try:
        for line in Path(proc, str(pid), "status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                return parse_cpu_list(line.split(":", 1)[1])
    except OSError:
        return None
    return None


def processes(root: int) -> dict[int, str]:
    """pid -> command name of root and its descendants."""
    from dragnet.couchdb.local import descendants

    out = {}
    for pid in [root, *descendants(root)]:
        try:
            out[pid] = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            pass
    return out


def check(value: str, root_pid: int | None, group: str | None = None) -> dict:
    """Every process of the CouchDB tree runs on the value's cores (and, with a cpuset cgroup, is in that
    group); what was checked, or DragnetError."""
    from dragnet.couchdb.limits import group_members

    if root_pid is None:
        raise DragnetError(f"--cpus {value}: cannot find CouchDB's processes to check the cpuset")
    want = set(cpuset(int(value)))
    members = set(group_members(group)) if group else None
    seen = {}
    for pid, comm in processes(root_pid).items():
        got = allowed(pid)
        if got is None:
            continue
        if got != want:
            raise DragnetError(f"--cpus {value}: {comm} (pid {pid}) may run on cores {sorted(got)}, not "
                               f"{sorted(want)}")
        if members is not None and pid not in members:
            raise DragnetError(f"--cpus {value}: {comm} (pid {pid}) is not in the cpuset group {group}")
        seen[pid] = comm
    return {"cores": sorted(want), "processes": seen, "via": f"cgroup {group}" if group else "affinity"}


def axis(values: list[str], backend: str | None):
    from dragnet.axes.model import CONTAINER, RESTART, Axis

    return Axis("cpus", values, how=CONTAINER if backend == "docker" else RESTART, label=lambda v: f"cpus{v}",
                restart=lambda v, ctx: restart_settings(v, ctx.inst.backend, ctx.original["limits"]),
                # a container's cpuset is set at its creation: a docker node is recreated for any value
                running=lambda v, ctx: ctx.inst.backend == "local" and bool(ctx.inst.cpus)
                and str(int(ctx.inst.cpus)) == v,
                check=lambda v, ctx: check(v, ctx.root_pid(), ctx.group()), check_after_build=True,
                record_as="cpuset")


def _kind():
    from dragnet.axes.model import AxisKind, Option

    return AxisKind("cpus", (Option(("--cpus",), "cpus_text", "N,N",
                                    "Axis: cores CouchDB and its query servers may use (a cpuset; restarts "
                                    "CouchDB)."),),
                    parse=lambda raw: parse(raw.get("cpus_text")), make=lambda v, backend: [axis(v, backend)],
                    restarts=True)


KIND = _kind()
