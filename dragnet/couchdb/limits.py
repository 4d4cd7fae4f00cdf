"""Memory limits and disk throttles for a CouchDB under test: profiles, what a scenario limits whatever
enforces it (`Limits`: memory, the profile's throttles, the data's device, and the words the report uses),
a pure cgroup plan (which file gets which value, v1 or v2) for the local backend, applying and removing
it, OOM detection, and the page-cache state; and the cpuset group a local CouchDB runs in with `--cpus`. The docker backend maps the same `Limits` to a container's
settings (dragnet.couchdb.docker.limit_settings).

The plan is pure so it tests without root; `apply` writes it and `remove` undoes it (processes moved
back to the parent group, the group removed) so no cgroup is left behind.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from dragnet.errors import DragnetError, UsageError
from dragnet.couchdb.storage import BlockDevice, NoBlockDevice, device_of
from dragnet.couchdb.storage import format_size, parse_size

UNLIMITED = "unlimited"


@dataclass(frozen=True)
class DiskProfile:
    """Read/write IOPS and bytes/s; 0 means not limited."""

    name: str
    r_iops: int = 0
    w_iops: int = 0
    r_bps: int = 0
    w_bps: int = 0

    @property
    def unlimited(self) -> bool:
        return not (self.r_iops or self.w_iops or self.r_bps or self.w_bps)

    def throttles(self) -> list[tuple[str, int]]:
        """The limited fields as (kind, value): kind names the v1 file blkio.throttle.<kind>_device and
        Docker's device_<kind> setting alike."""
        return [(k, v) for k, v in (("read_iops", self.r_iops), ("write_iops", self.w_iops),
                                    ("read_bps", self.r_bps), ("write_bps", self.w_bps)) if v]


# Typical figures: a SATA SSD under a cloud IOPS cap, a SAN volume, a 7200 rpm disk (random IO).
PROFILES = {
    "unlimited": DiskProfile("unlimited"),
    "ssd-5000iops": DiskProfile("ssd-5000iops", 5000, 5000, 200 * 1024**2, 200 * 1024**2),
    "san-600iops": DiskProfile("san-600iops", 600, 600, 60 * 1024**2, 60 * 1024**2),
    "hdd-150iops": DiskProfile("hdd-150iops", 150, 150, 120 * 1024**2, 120 * 1024**2),
}


def parse_profile(text: str) -> DiskProfile:
    """A built-in name, or `r_iops:w_iops:r_bps:w_bps` (bps take sizes like 50m; 0 = no limit)."""
    text = text.strip()
    if text in PROFILES:
        return PROFILES[text]
    parts = text.split(":")
    if len(parts) != 4:
        raise UsageError(f"unknown disk profile {text!r}: use one of {', '.join(PROFILES)} "
                         "or r_iops:w_iops:r_bps:w_bps")
    try:
        r_iops, w_iops = int(parts[0]), int(parts[1])
    except ValueError:
        raise UsageError(f"disk profile {text!r}: IOPS must be whole numbers") from None
    r_bps, w_bps = parse_size(parts[2]), parse_size(parts[3])
    if min(r_iops, w_iops, r_bps, w_bps) < 0:
        raise UsageError(f"disk profile {text!r}: values must not be negative")
    return DiskProfile(text, r_iops, w_iops, r_bps, w_bps)


def parse_profiles(text: str) -> list[DiskProfile]:
    return [parse_profile(p) for p in text.split(",") if p.strip()]


def parse_memory_limits(text: str) -> list[int | None]:
    """'unlimited,512m,1g' -> [None, 536870912, 1073741824]."""
    out: list[int | None] = []
    for p in (x.strip() for x in text.split(",")):
        if p:
            out.append(None if p == UNLIMITED else parse_size(p))
    return out


def parse_count(text: str) -> int:
    """'10k', '1.5m', '320000' -> documents."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([km]?)\s*", text, re.I)
    if not m:
        raise UsageError(f"not a document count: {text!r} (expected e.g. 10k, 320000)")
    return int(float(m[1]) * {"": 1, "k": 1000, "m": 1000_000}[m[2].lower()])


def parse_sizes(text: str) -> list[int]:
    """'10k,40k' -> sorted distinct counts (each size is a prefix of the largest)."""
    sizes = sorted({parse_count(p) for p in text.split(",") if p.strip()})
    if not sizes or sizes[0] <= 0:
        raise UsageError(f"--sizes {text!r}: give positive document counts, e.g. 10k,40k")
    return sizes


# --- what a scenario limits (backend-neutral) ----------------------------------------------------

@dataclass(frozen=True)
class Limits:
    """A scenario's memory limit and disk throttle on the data's whole disk, before any backend applies
    them (local: a cgroup plan; docker: the container's settings)."""

    memory: int | None = None
    profile: DiskProfile = PROFILES["unlimited"]
    device: BlockDevice | None = None

    @property
    def limited(self) -> bool:
        return self.memory is not None or not self.profile.unlimited


def data_device(data: str | Path, profile: DiskProfile, sys: str = "/sys") -> BlockDevice | None:
    """The whole disk a throttle must name for data kept under `data` (None when the profile limits
    nothing); refused with the reason when there is none (tmpfs, overlay, a missing path)."""
    if profile.unlimited:
        return None
    try:
        return device_of(data, sys=sys)
    except NoBlockDevice as e:
        raise DragnetError(f"cannot enforce disk profile {profile.name}: {e}") from None
    except FileNotFoundError:
        raise DragnetError(f"cannot enforce disk profile {profile.name}: {data} does not exist") from None
    except PermissionError:
        raise DragnetError(f"cannot enforce disk profile {profile.name}: cannot read {data} to find its disk "
                           "(not root?)") from None


def io_note(device: BlockDevice, version: int) -> str:
    """What a throttle on device does under this cgroup version, in words for the report."""
    if version == 2:
        return (f"io.max on {device.name} ({device.majmin}): reads and writes, buffered writes included "
                "(v2 writeback is charged to the cgroup)")
    return (f"blkio.throttle on {device.name} ({device.majmin}): reads and direct/sync writes only; cgroup v1 "
            "does not throttle buffered writes, which the kernel flushes at writeback outside the group")


def loop_note(device: BlockDevice | None) -> list[str]:
    if device is None or device.kind != "loop":
        return []
    return [f"the data is on loop device {device.name} (backing file {device.backing}): the throttle "
            "applies to the loop device, not to the disk under its backing file"]


# --- cgroup detection and plan -------------------------------------------------------------------

@dataclass(frozen=True)
class CgroupLayout:
    """Where the controllers are: v2 (one unified tree) or v1 (one mount per controller)."""

    version: int
    memory: Path | None = None      # v1 memory mount, or the v2 root
    blkio: Path | None = None       # v1 blkio mount, or the v2 root
    cpuset: Path | None = None      # v1 cpuset mount, or the v2 root


def detect(root: str | Path = "/sys/fs/cgroup") -> CgroupLayout:
    root = Path(root)
    if (root / "cgroup.controllers").exists():
        ctrls = (root / "cgroup.controllers").read_text().split()
        return CgroupLayout(2, root if "memory" in ctrls else None, root if "io" in ctrls else None,
                            root if "cpuset" in ctrls else None)
    mem = root / "memory" if (root / "memory" / "memory.limit_in_bytes").exists() else None
    blk = root / "blkio" if (root / "blkio" / "blkio.throttle.read_iops_device").exists() else None
    cpu = root / "cpuset" if (root / "cpuset" / "cpuset.cpus").exists() else None
    return CgroupLayout(1, mem, blk, cpu)


def cpuset_plan(layout: CgroupLayout, name: str, cores: Sequence[int], mems: str | None = None) -> Plan:
    """A cpuset group holding CouchDB's processes on `cores` (pure). v1 needs the group's cpuset.mems set
    before a process may join: the parent's (`mems`, read by the caller)."""
    if layout.cpuset is None:
        raise DragnetError(f"no writable cgroup cpuset controller (cgroup v{layout.version})")
    cpus = ",".join(map(str, sorted(cores)))
    grp = layout.cpuset / name
    p = Plan(layout=layout, groups=[grp])
    if layout.version == 2:
        p.writes.append((layout.cpuset / "cgroup.subtree_control", "+cpuset"))
    else:
        p.writes.append((grp / "cpuset.mems", mems or "0"))
    p.writes.append((grp / "cpuset.cpus", cpus))
    p.enforced.append(f"cpuset.cpus {cpus}")
    return p


def cpuset_group(cores: Sequence[int], port: int, root: str | Path = "/sys/fs/cgroup") -> Plan | None:
    """The cpuset group of the local CouchDB on `port`, made and written (None where no cpuset controller
    is writable: not root, or none mounted; the caller falls back to an affinity mask)."""
    layout = detect(root)
    if layout.cpuset is None or os.geteuid() != 0:
        return None
    mems = None
    if layout.version == 1:
        try:
            mems = (layout.cpuset / "cpuset.mems").read_text().strip()
        except OSError:
            return None
    p = cpuset_plan(layout, f"dragnet-couch-{port}", cores, mems)
    apply(p, [])
    return p


def group_members(path: str | Path) -> list[int]:
    """Processes in a cgroup directory (cgroup.procs)."""
    return _members(Path(path))


def remove_group(path: str | Path) -> None:
    """Processes back to the parent group, the group deleted (a group recorded by path, e.g. in state)."""
    remove(Plan(layout=detect(), groups=[Path(path)]))


@dataclass
class Plan:
    """Directories to create and (file, value) writes in order; `enforced` says what the kernel will
    actually limit, in words for the report."""

    layout: CgroupLayout
    groups: list[Path] = field(default_factory=list)
    writes: list[tuple[Path, str]] = field(default_factory=list)
    enforced: list[str] = field(default_factory=list)
    device: BlockDevice | None = None


def plan(layout: CgroupLayout, name: str, *, memory: int | None, profile: DiskProfile,
         device: BlockDevice | None) -> Plan:
    """Which cgroup files get which values for a memory limit and a disk profile (pure)."""
    p = Plan(layout=layout, device=device)
    need_io = not profile.unlimited
    if memory is not None and layout.memory is None:
        raise DragnetError("cannot limit memory: no writable cgroup memory controller "
                           f"(cgroup v{layout.version})")
    if need_io and layout.blkio is None:
        raise DragnetError(f"cannot enforce disk profile {profile.name}: no cgroup "
                           f"{'io' if layout.version == 2 else 'blkio'} controller")
    if need_io and device is None:
        raise DragnetError(f"cannot enforce disk profile {profile.name}: the data is on no block device")
    if layout.version == 2:
        g = layout.memory or layout.blkio
        grp = g / name
        p.groups.append(grp)
        subtree = g / "cgroup.subtree_control"
        ctrls = (["+memory"] if memory is not None else []) + (["+io"] if need_io else [])
        if ctrls:
            p.writes.append((subtree, " ".join(ctrls)))
        if memory is not None:
            p.writes.append((grp / "memory.max", str(memory)))
            p.writes.append((grp / "memory.swap.max", "0"))
            p.enforced.append(f"memory.max {format_size(memory)} (page cache included, swap 0)")
        if need_io:
            vals = {"riops": profile.r_iops, "wiops": profile.w_iops, "rbps": profile.r_bps, "wbps": profile.w_bps}
            line = device.majmin + " " + " ".join(f"{k}={v or 'max'}" for k, v in vals.items())
            p.writes.append((grp / "io.max", line))
            p.enforced.append(io_note(device, 2))
        return p
    if memory is not None:
        grp = layout.memory / name
        p.groups.append(grp)
        p.writes.append((grp / "memory.limit_in_bytes", str(memory)))
        p.writes.append((grp / "memory.swappiness", "0"))
        # the OOM killer off for the group: at the limit the kernel pauses CouchDB instead of killing it, and
        # OomHold lifts the limit (a CouchDB on this machine may be a team's own, not dragnet's to kill)
        p.writes.append((grp / "memory.oom_control", "1"))
        # v1 charges stay where they were made (move_charge_at_immigrate is refused on recent kernels)
        p.enforced.append(f"memory.limit_in_bytes {format_size(memory)} on memory CouchDB allocates and page "
                          "cache it fills after entering the group (cgroup v1 does not move earlier charges)")
    if need_io:
        grp = layout.blkio / name
        p.groups.append(grp)
        for kind, v in profile.throttles():
            p.writes.append((grp / f"blkio.throttle.{kind}_device", f"{device.majmin} {v}"))
        p.enforced.append(io_note(device, 1))
    return p


def check_enforceable(data_dir: str | Path, *, memory: int | None, profile: DiskProfile,
                      root: str | Path = "/sys/fs/cgroup", sys: str = "/sys") -> Plan:
    """Refuse up front, with the reason, a limit that cannot be enforced; else the plan to apply."""
    if (memory is not None or not profile.unlimited) and os.geteuid() != 0:
        raise DragnetError("memory limits and disk profiles need root (to write cgroups); not root")
    device = data_device(data_dir, profile, sys=sys)
    p = plan(detect(root), f"dragnet-{os.getpid()}", memory=memory, profile=profile, device=device)
    p.enforced.extend(loop_note(device))
    return p


# --- applying, OOM, removing -------------------------------------------------------------------

def apply(p: Plan, pids: list[int]) -> None:
    """Create the groups, write the limits, move the processes in (children follow on fork)."""
    for g in p.groups:
        g.mkdir(exist_ok=True)
    for path, value in p.writes:
        try:
            path.write_text(value)
        except OSError as e:
            remove(p)
            raise DragnetError(f"cannot write {value!r} to {path}: {e.strerror}") from None
    for g in p.groups:
        for pid in pids:
            try:
                (g / "cgroup.procs").write_text(str(pid))
            except ProcessLookupError:
                pass


def _members(g: Path) -> list[int]:
    try:
        return [int(x) for x in (g / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def remove(p: Plan, timeout: float = 10.0) -> None:
    """Move any processes back to the parent group and delete the groups (bounded wait)."""
    for g in p.groups:
        if not g.exists():
            continue
        parent = g.parent / "cgroup.procs"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pids = _members(g)
            for pid in pids:
                try:
                    parent.write_text(str(pid))
                except OSError:
                    pass
            try:
                g.rmdir()
                break
            except OSError:
                time.sleep(0.2)


@dataclass
class MemoryUse:
    peak: int | None = None       # bytes, max usage seen by the group (page cache included)
    anon: int | None = None       # bytes of anonymous memory at read time (rss in v1 memory.stat)
    oom_kills: int = 0
    failcnt: int = 0


def parse_memory_stat(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition(" ")
        if v.strip().isdigit():
            out[k] = int(v)
    return out


def memory_use(p: Plan) -> MemoryUse:
    """Peak usage, anonymous memory and OOM kills of the plan's memory group (v1 or v2)."""
    if p.layout.memory is None or not p.groups:
        return MemoryUse()
    return read_memory(p.groups[0], p.layout.version)


def _reader(g: Path):
    def read(f: str) -> str:
        try:
            return (g / f).read_text()
        except OSError:      # a container's group vanishes when it exits
            return ""
    return read


def read_memory(g: Path, version: int) -> MemoryUse:
    """Peak usage, anonymous memory and OOM kills of one memory cgroup directory (v1 or v2)."""
    use = MemoryUse()
    read = _reader(g)
    if version == 2:
        stat = parse_memory_stat(read("memory.stat"))
        use.anon = stat.get("anon")
        peak = read("memory.peak").strip()
        use.peak = int(peak) if peak.isdigit() else None
        events = parse_memory_stat(read("memory.events"))
        use.oom_kills = events.get("oom_kill", 0)
        use.failcnt = events.get("max", 0)
    else:
        stat = parse_memory_stat(read("memory.stat"))
        use.anon = stat.get("total_rss", stat.get("rss"))
        peak = read("memory.max_usage_in_bytes").strip()
        use.peak = int(peak) if peak.isdigit() else None
        use.oom_kills = parse_memory_stat(read("memory.oom_control")).get("oom_kill", 0)
        fc = read("memory.failcnt").strip()
        use.failcnt = int(fc) if fc.isdigit() else 0
    return use


def parse_blkio_counters(text: str, majmin: str) -> dict[str, int]:
    """v1 `blkio.throttle.io_serviced`/`io_service_bytes` lines of one device: {"Read": n, "Write": n, ...}."""
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 3 and f[0] == majmin and f[2].isdigit():
            out[f[1]] = int(f[2])
    return out


def parse_io_stat(text: str, majmin: str) -> dict[str, int]:
    """v2 `io.stat` line of one device: {"rbytes": n, "wbytes": n, "rios": n, "wios": n, ...}."""
    for line in text.splitlines():
        f = line.split()
        if f and f[0] == majmin:
            return {k: int(v) for k, v in (x.split("=", 1) for x in f[1:]) if v.isdigit()}
    return {}


def io_use(p: Plan) -> dict | None:
    """The group's own reads and writes on the throttled device (what the throttle saw), or None."""
    if p.device is None or p.layout.blkio is None:
        return None
    g = p.groups[0] if p.layout.version == 2 else p.layout.blkio / p.groups[-1].name
    return read_io(g, p.layout.version, p.device.majmin)


def read_io(g: Path, version: int, majmin: str) -> dict:
    """Reads and writes one io/blkio cgroup directory made on one device (v1 or v2)."""
    read = _reader(g)
    if version == 2:
        st = parse_io_stat(read("io.stat"), majmin)
        return {"read_ios": st.get("rios", 0), "write_ios": st.get("wios", 0), "read_bytes": st.get("rbytes", 0),
                "write_bytes": st.get("wbytes", 0)}
    ios = parse_blkio_counters(read("blkio.throttle.io_serviced"), majmin)
    byt = parse_blkio_counters(read("blkio.throttle.io_service_bytes"), majmin)
    return {"read_ios": ios.get("Read", 0), "write_ios": ios.get("Write", 0), "read_bytes": byt.get("Read", 0),
            "write_bytes": byt.get("Write", 0)}


def oom_message(limit: int) -> str:
    return f"CouchDB was OOM-killed at limit {format_size(limit)}"


def held_message(limit: int) -> str:
    return (f"CouchDB ran out of memory at limit {format_size(limit)} (the kernel would have OOM-killed it; "
            "dragnet lifted the limit and CouchDB kept running)")


def under_oom(text: str) -> bool:
    """Whether a v1 `memory.oom_control` says the group's tasks are paused at the limit (pure)."""
    return parse_memory_stat(text).get("under_oom", 0) == 1


class OomHold:
    """Watches a v1 memory group whose OOM killer is off (plan()): when the kernel pauses its tasks at
    the limit, the limit is lifted so they go on, and `held` says it happened."""

    def __init__(self, group: Path, interval: float = 0.02):
        self.group, self.interval, self.held = group, interval, False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="dragnet-oom-hold", daemon=True)

    def start(self) -> "OomHold":
        self._thread.start()
        return self

    def _watch(self) -> None:
        read = _reader(self.group)
        while not self._stop.wait(self.interval):
            if under_oom(read("memory.oom_control")):
                self.held = True
                try:
                    (self.group / "memory.limit_in_bytes").write_text("-1")
                except OSError:
                    pass

    def stop(self) -> bool:
        self._stop.set()
        self._thread.join(timeout=5)
        if not self.held and under_oom(_reader(self.group)("memory.oom_control")):
            self.held = True     # paused between the last look and now
            try:
                (self.group / "memory.limit_in_bytes").write_text("-1")
            except OSError:
                pass
        return self.held


def oom_lines_of(dmesg: str, since: float, memcg: str) -> list[str]:
    """The kernel's OOM-kill lines for one memory cgroup (its path as the kernel prints it, "/dragnet-12")
    since a unix time (pure). Other groups' kills (a container's, another bench's) are not ours: the
    "oom-kill:" line names the group, and the "Killed process" line right after it names the victim."""
    from datetime import datetime
    lines, ours = [], False
    for line in dmesg.splitlines():
        stamp = line.split(" ", 1)[0]
        try:
            t = datetime.fromisoformat(stamp.replace(",", ".")).timestamp()
        except ValueError:
            t = None
        if t is not None and t < since:
            continue
        if "oom-kill:" in line:
            ours = f"oom_memcg={memcg}," in line or line.endswith(f"oom_memcg={memcg}")
            if ours:
                lines.append(line)
        elif "Killed process" in line:
            if ours:
                lines.append(line)
            ours = False
    return lines


def kernel_oom_lines(since: float, memcg: str) -> list[str]:
    """OOM-kill lines of one memory cgroup in the kernel log since a unix time (dmesg)."""
    try:
        out = subprocess.run(["dmesg", "--time-format", "iso"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return oom_lines_of(out, since, memcg)


def memcg_path(p: Plan) -> str | None:
    """The plan's memory group as the kernel names it in OOM reports ("/dragnet-12"), or None."""
    if p.layout.memory is None or not p.groups:
        return None
    try:
        return "/" + str(p.groups[0].relative_to(p.layout.memory))
    except ValueError:
        return None


# --- cache state -------------------------------------------------------------------------------

def drop_caches() -> str:
    """Cold cache: sync and drop the page cache; returns what was done (for the result)."""
    if os.geteuid() != 0:
        return "not dropped: not root (page cache may hold the database)"
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3")
    except OSError as e:
        return f"not dropped: {e.strerror}"
    return "dropped (sync; echo 3 > /proc/sys/vm/drop_caches)"


def prewarm(paths: list[Path], chunk: int = 1 << 20) -> str:
    """Warm cache: read the database files once so they are in the page cache."""
    total = 0
    for path in paths:
        for f in sorted(p for p in ([path] if path.is_file() else path.rglob("*")) if p.is_file()):
            try:
                with open(f, "rb") as fh:
                    while block := fh.read(chunk):
                        total += len(block)
            except OSError:
                continue
    return f"pre-read {format_size(total)}"


def set_cache(state: str, paths: list[Path]) -> str:
    if state == "cold":
        return drop_caches()
    if state == "warm":
        return prewarm(paths)
    raise UsageError(f"--cache must be cold or warm, not {state!r}")
