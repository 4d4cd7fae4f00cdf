"""A container's resources from its control group: CPU, block I/O and peak memory, cgroup v1 or v2.

Read only for a group that holds nothing but the given process tree (a container's), so another program's
use is never counted; the local JVM shares its session's group and gets None. Parsers are pure; `take`
reads /proc and /sys/fs/cgroup.
"""

from __future__ import annotations

import time
from pathlib import Path

from dragnet.measure.cpu import cgroup_path
from dragnet.measure.pidstat import process_tree


def parse_blkio(text: str) -> tuple[int, int]:
    """(read, written) bytes from v1 blkio.throttle.io_service_bytes ("8:0 Read 4096" lines)."""
    rd = wr = 0
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2].isdigit():
            rd += int(parts[2]) if parts[1] == "Read" else 0
            wr += int(parts[2]) if parts[1] == "Write" else 0
    return rd, wr


def parse_io_stat(text: str) -> tuple[int, int]:
    """(read, written) bytes from v2 io.stat ("8:0 rbytes=4096 wbytes=0 ..." lines)."""
    rd = wr = 0
    for line in text.splitlines():
        for kv in line.split()[1:]:
            k, _, v = kv.partition("=")
            if v.isdigit():
                rd += int(v) if k == "rbytes" else 0
                wr += int(v) if k == "wbytes" else 0
    return rd, wr


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _members(d: Path) -> set[int] | None:
    text = _read(d / "cgroup.procs")
    return None if text is None else {int(x) for x in text.split() if x.isdigit()}


def take(root: int, proc: str = "/proc", sys_fs: str = "/sys/fs/cgroup") -> dict | None:
    """The counters of root's group now: {"group", "t", "cpu_s", "read_bytes", "write_bytes",
    "memory_peak_bytes"}; None when the group is the root or holds other processes."""
    status = _read(Path(proc) / str(root) / "cgroup") or ""
    pids = process_tree(root, proc)
    base = Path(sys_fs)
    mem_group = cgroup_path(status, "memory")
    if not mem_group or mem_group == "/":
        return None
    v1 = base / "memory" / mem_group.lstrip("/")
    if (members := _members(v1)) is not None:      # v1: one folder per controller
        if not members or not members <= pids:
            return None
        cpu_g = cgroup_path(status, "cpuacct") or mem_group
        blk_g = cgroup_path(status, "blkio") or mem_group
        usage = _read(base / "cpuacct" / cpu_g.lstrip("/") / "cpuacct.usage")
        rd, wr = parse_blkio(_read(base / "blkio" / blk_g.lstrip("/") / "blkio.throttle.io_service_bytes") or "")
        peak = _read(v1 / "memory.max_usage_in_bytes")
        return {"group": mem_group, "t": time.time(), "cpu_s": int(usage) / 1e9 if usage else None,
                "read_bytes": rd, "write_bytes": wr, "memory_peak_bytes": int(peak) if peak else None}
    v2 = base / mem_group.lstrip("/")
    members = _members(v2)
    if not members or not members <= pids:
        return None
    stat = _read(v2 / "cpu.stat") or ""
    usec = next((int(line.split()[1]) for line in stat.splitlines() if line.startswith("usage_usec ")), None)
    rd, wr = parse_io_stat(_read(v2 / "io.stat") or "")
    peak = _read(v2 / "memory.peak")
    return {"group": mem_group, "t": time.time(), "cpu_s": None if usec is None else usec / 1e6,
            "read_bytes": rd, "write_bytes": wr, "memory_peak_bytes": int(peak) if peak else None}


def usage(before: dict | None, after: dict | None) -> dict | None:
    """What the group used between two takes (pure); the peak memory is the group's since it began."""
    if not before or not after or before["group"] != after["group"]:
        return None
    diff = lambda k: None if before.get(k) is None or after.get(k) is None else after[k] - before[k]  # noqa: E731
    return {"group": after["group"], "interval_s": round(after["t"] - before["t"], 6), "cpu_s": diff("cpu_s"),
            "read_bytes": diff("read_bytes"), "write_bytes": diff("write_bytes"),
            "memory_peak_bytes": after.get("memory_peak_bytes")}
