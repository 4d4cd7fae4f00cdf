"""Bench scenarios on the docker backend: the same scenarios, limits and verdict as the local backend
(dragnet.axes.scenario, dragnet.couchdb.limits), applied as the container's own settings.

A container's blkio throttles are fixed when it is created (`docker update` changes memory but no device
throttle), so the bench recreates the container on the same data volume whenever a run's scenario asks
for other limits (`settings` differ), which also starts each scenario with fresh memory counters. The
device is the one holding the volume's mount point (or --data-dir) on this machine; the page cache the
cache state acts on is the host's, which holds the container's file pages.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from dragnet.couchdb import storage as _storage
from dragnet.couchdb import control as ctl
from dragnet.couchdb import docker as dk
from dragnet.couchdb import limits as limits
from dragnet.errors import DragnetError
from dragnet.axes.scenario import Measured, Scenario
from dragnet.couchdb.storage import format_size


@dataclass
class Prepared:
    """A scenario checked against a container's data before any build: the settings to create it with."""

    scenario: Scenario
    settings: dict                          # dk.limit_settings(): {} limits nothing
    device: _storage.BlockDevice | None      # the data's disk: throttled, and watched by iostat
    data: Path | None                       # the data on this machine; None on the container's tmpfs
    enforced: list[str] = field(default_factory=list)
    cgroup_version: int | None = None


def prepare(sc: Scenario, inst: ctl.Instance, *, env: dict | None = None, c=None, sys: str = "/sys",
            dev: str = "/dev", cgroup_root: str = "/sys/fs/cgroup", euid: int | None = None) -> Prepared:
    """Refuse up front, with the reason, what cannot be enforced or measured for this container."""
    c = c if c is not None else dk.client(env)        # no engine: its message says what to do
    euid = os.geteuid() if euid is None else euid
    host = dk.docker_host(env)
    local = host.startswith("unix://")
    if not local and (not sc.profile.unlimited or sc.cache):
        raise DragnetError(f"scenario {sc.label}: the Docker engine at {host} is not on this machine, so "
                           "neither the disk under its volume nor its page cache can be reached")
    data = dk.data_path(c, inst)
    device = node = None
    if not sc.profile.unlimited:
        if data is None:
            raise DragnetError(f"scenario {sc.label}: the container's data is on its own tmpfs "
                               "(--storage tmpfs): no disk to throttle")
        device = limits.data_device(data, sc.profile, sys=sys)
        node = dk.device_node(device, dev)
    elif data is not None and local:
        try:
            device = _storage.device_of(data, sys=sys)    # for iostat only
        except (_storage.NoBlockDevice, OSError):
            device = None
    if sc.cache == "cold" and euid != 0:
        raise DragnetError(f"scenario {sc.label}: --cache cold drops the host's page cache (it holds the "
                           "container's file pages) through /proc/sys/vm/drop_caches: needs root; not root")
    if sc.cache == "warm" and data is not None and not os.access(data, os.R_OK | os.X_OK):
        raise DragnetError(f"scenario {sc.label}: --cache warm pre-reads the data from the host: cannot read "
                           f"{data} (not root?)")
    lim = limits.Limits(sc.memory, sc.profile, device)
    version = limits.detect(cgroup_root).version if local else None
    enforced = []
    if sc.memory is not None:
        enforced.append(f"the container's memory limit {format_size(sc.memory)} with memory+swap the same (it "
                        "cannot swap): beam, the query servers and the page cache the container fills")
    if device is not None and not sc.profile.unlimited:
        kinds = ", ".join(f"device_{k}" for k, _ in sc.profile.throttles())
        enforced.append(f"the container's {kinds} on {node}: " + limits.io_note(device, version or 1))
        enforced.extend(limits.loop_note(device))
    return Prepared(sc, dk.limit_settings(lim, node), device, data, enforced, version)


def container_limits(inst) -> dict:
    """The limits a managed container runs with, as scenario settings compare them (docker backend)."""
    if inst.limits is not None:
        return inst.limits
    return {"mem_limit": inst.memory} if inst.memory else {}


def oom_at_start(p: Prepared, exc: dk.ContainerOOMKilled) -> dict:
    """The result of a run whose container was OOM-killed while CouchDB started (no build ran)."""
    msg = limits.oom_message(p.scenario.memory) if p.scenario.memory else str(exc)
    return {"summary": {"ok": False, "oom_killed": True, "outcome": msg, "error": f"{msg} (while starting)"},
            "scenario": {**p.scenario.to_json(), "enforced": p.enforced, "cgroup_version": p.cgroup_version,
                         "backend": "docker", "container": {"settings": p.settings, "phase": "start"}},
            "memory": {"limit": p.scenario.memory, "peak": None, "anon": None, "oom_kills": None,
                       "failcnt": None, "kernel_log": []}}


class _Watch(threading.Thread):
    """Reads the container's memory and blkio groups every `interval` s: they vanish when the container
    exits, so the last reading before an OOM kill is what remains of the peak. The groups live as long as
    the container, so counters are differences from the build's start, and the v1 peak and failcnt are
    reset there (writing 0, as root) so the peak is the build's, not CouchDB's start-up's."""

    def __init__(self, memory: Path | None, blkio: Path | None, version: int, majmin: str | None,
                 interval: float = 0.25):
        super().__init__(daemon=True, name="dragnet-docker-cgroup-watch")
        self.memory, self.blkio, self.version, self.majmin = memory, blkio, version, majmin
        self.interval = interval
        self.peak_scope = "the container's life"
        self._use: limits.MemoryUse | None = None
        self._io: dict | None = None
        self._base_use = limits.MemoryUse()
        self._base_io: dict = {}
        self._stop_ev = threading.Event()

    def begin(self) -> None:
        if self.memory is not None and self.version == 1:
            try:
                (self.memory / "memory.max_usage_in_bytes").write_text("0")
                (self.memory / "memory.failcnt").write_text("0")
                self.peak_scope = "the build"
            except OSError:
                pass
        self.read()
        self._base_use = self._use or limits.MemoryUse()
        self._base_io = dict(self._io or {})
        self._use = None
        self.read()
        self.start()

    def read(self) -> None:
        if self.memory is not None and self.memory.is_dir():
            u = limits.read_memory(self.memory, self.version)
            old = self._use or limits.MemoryUse()
            self._use = limits.MemoryUse(peak=max(filter(None, (u.peak, old.peak)), default=None),
                                         anon=u.anon if u.anon is not None else old.anon,
                                         oom_kills=max(u.oom_kills, old.oom_kills),
                                         failcnt=max(u.failcnt, old.failcnt))
        if self.blkio is not None and self.majmin and self.blkio.is_dir():
            self._io = limits.read_io(self.blkio, self.version, self.majmin)

    @property
    def use(self) -> limits.MemoryUse | None:
        if self._use is None:
            return None
        u, b = self._use, self._base_use
        failcnt = u.failcnt if self.peak_scope == "the build" else u.failcnt - b.failcnt
        return limits.MemoryUse(peak=u.peak, anon=u.anon, oom_kills=u.oom_kills - b.oom_kills, failcnt=failcnt)

    @property
    def io(self) -> dict | None:
        if self._io is None:
            return None
        return {k: v - self._base_io.get(k, 0) for k, v in self._io.items()}

    def run(self) -> None:
        while not self._stop_ev.wait(self.interval):
            self.read()

    def stop(self) -> None:
        self._stop_ev.set()
        if self.is_alive():
            self.join(timeout=5)
        self.read()


class DockerTarget:
    """One build in a prepared scenario on the container the bench (re)created with its settings:
    checks that the engine and the kernel hold the limits, watches the container's groups, sets the
    host's cache state, and tells an OOM kill (State.OOMKilled, the group's oom_kill count) from a
    failed build."""

    def __init__(self, prepared: Prepared, inst: ctl.Instance, *, env: dict | None = None, c=None,
                 cgroup_root: str = "/sys/fs/cgroup", proc: str = "/proc"):
        self.p = prepared
        self.sc = prepared.scenario
        self.inst = inst
        self.c = c if c is not None else dk.client(env)
        self.cgroup_root, self.proc = cgroup_root, proc
        self.device = prepared.device
        self.enforced = list(prepared.enforced)
        self.cgroup_version = prepared.cgroup_version
        self.container = None
        self.memcg: str | None = None
        self.applied: dict = {}
        self.watch: _Watch | None = None

    def set_cache(self, state: str | None) -> str:
        if not state:
            return "left as it is"
        if state == "cold":
            note = limits.drop_caches()
            if self.p.data is None:
                note += "; the data is on the container's tmpfs, which dropping the page cache does not evict"
            return note
        if self.p.data is None:
            return "the data is on the container's tmpfs: always in memory"
        return (limits.prewarm([self.p.data]) + " from the host (those pages are charged to the host's "
                "cgroup, not to the container's memory limit)")

    def start(self) -> None:
        self.container = self.c.containers.get(self.inst.container or self.inst.container_name)
        self.container.reload()
        hc = self.container.attrs.get("HostConfig") or {}
        missing = dk.limits_not_applied(self.p.settings, hc)
        if missing:
            raise DragnetError(f"scenario {self.sc.label}: the container does not hold its limits: "
                               + "; ".join(missing))
        self.applied["host_config"] = {v: hc.get(v) for k, v in dk.HOST_CONFIG.items() if k in self.p.settings}
        pid = (self.container.attrs.get("State") or {}).get("Pid")
        dirs: dict[str, Path] = {}
        if pid and self.cgroup_version:
            try:
                text = Path(self.proc, str(pid), "cgroup").read_text()
                dirs = dk.cgroup_dirs(text, self.cgroup_root)
                self.memcg = dk.memcg_of(text)
            except OSError:
                dirs = {}
        self.applied["cgroup"] = self._cgroup_files(dirs)
        self.watch = _Watch(dirs.get("memory"), dirs.get("blkio") if self.device else None,
                            self.cgroup_version or 1, self.device.majmin if self.device else None)
        self.watch.begin()

    def _cgroup_files(self, dirs: dict[str, Path]) -> dict:
        """The limits as the kernel holds them in the container's groups; refused when they differ."""
        out: dict = {"memory": str(dirs.get("memory")) if dirs.get("memory") else None,
                     "blkio": str(dirs.get("blkio")) if dirs.get("blkio") else None}
        if not dirs:
            return out
        v2 = self.cgroup_version == 2
        checks: list[tuple[Path, str]] = []
        if self.sc.memory is not None and dirs.get("memory"):
            checks.append((dirs["memory"] / ("memory.max" if v2 else "memory.limit_in_bytes"), str(self.sc.memory)))
        if self.device is not None and dirs.get("blkio"):
            for kind, value in self.sc.profile.throttles():
                if v2:
                    key = {"read_iops": "riops", "write_iops": "wiops", "read_bps": "rbps", "write_bps": "wbps"}[kind]
                    checks.append((dirs["blkio"] / "io.max", f"{key}={value}"))
                else:
                    checks.append((dirs["blkio"] / f"blkio.throttle.{kind}_device", f"{self.device.majmin} {value}"))
        for path, want in checks:
            try:
                text = path.read_text().strip()
            except OSError as e:
                raise DragnetError(f"scenario {self.sc.label}: cannot read {path}: {e.strerror}") from None
            out[path.name] = text
            if path.name.startswith("memory."):    # the kernel rounds a limit down to whole pages
                held = int(text) if text.isdigit() else -1
                ok = 0 <= int(want) - held < 4096
            else:
                ok = want in (text.split() if path.name == "io.max" else text.splitlines())
            if not ok:
                raise DragnetError(f"scenario {self.sc.label}: {path} holds {text!r}, not {want!r}")
        return out

    def finish(self, t0: float, failed: bool) -> Measured:
        if self.watch is not None:
            self.watch.stop()
        oom_killed = self._oom_killed(failed)
        use = self.watch.use if self.watch else None
        # only this container's kills: another container's beam may die at the same time
        lines = limits.kernel_oom_lines(t0, self.memcg) if self.sc.memory and self.memcg else []
        return Measured(use, self.watch.io if self.watch else None, lines,
                        bool(oom_killed or (use and use.oom_kills)))

    def _oom_killed(self, failed: bool, settle: float = 5.0) -> bool:
        """State.OOMKilled; after a failed build, once the engine has seen the container exit."""
        return self.container is not None and dk.oom_killed(self.container, settle=settle if failed else 0)

    def record(self) -> dict:
        return {"backend": "docker", "container": {
            "settings": self.p.settings, **self.applied,
            "memory_read": "every 0.25 s until the container's groups vanish at its exit: after an OOM kill the "
                           "peak is the last reading, a lower bound",
            "peak_of": self.watch.peak_scope if self.watch else None,
            "counters": "the container's IO and OOM counts during the build (differences from its start)"}}
