"""Scenarios on the docker backend without an engine: what is refused up front, the settings a scenario
gives the container (from a volume's mount point through a sysfs tree built here), the checks of what
the engine and the kernel hold, OOM judged from the container's state, and the shared run_in core."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest

from dragnet.couchdb import control as ctl
from dragnet.measure import iostat as iostat
from dragnet.couchdb import limits as limits
from dragnet.axes import scenario as scenario
from dragnet.axes import scenario_docker as sd
from dragnet.errors import DragnetError

MIB = 1024**2
CID = "4efa87a985a572b598b938c0c223e8113895e4f15c2ad0a05085b9269c127e08"


def _client(mountpoint: Path):
    volume = SimpleNamespace(attrs={"Mountpoint": str(mountpoint)})
    return SimpleNamespace(volumes=SimpleNamespace(get=lambda name: volume))


def _inst(storage="disk") -> ctl.Instance:
    return ctl.Instance(backend="docker", port=15901, storage=storage, container=CID,
                        volume="dragnet-couchdb-15901-data" if storage == "disk" else None)


@pytest.fixture()
def volume_disk(tmp_path):
    """A volume directory, a sysfs naming its file system's device `vdz` and a /dev with vdz's node."""
    data = tmp_path / "volumes" / "v" / "_data"
    data.mkdir(parents=True)
    st = os.stat(data)
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    if major == 0:
        pytest.skip("tmp_path is on a file system without a block device")
    sys = tmp_path / "sys"
    (sys / "devices" / "virtual" / "block" / "vdz").mkdir(parents=True)
    (sys / "devices" / "virtual" / "block" / "vdz" / "dev").write_text(f"{major}:{minor}\n")
    (sys / "dev" / "block").mkdir(parents=True)
    (sys / "dev" / "block" / f"{major}:{minor}").symlink_to("../../devices/virtual/block/vdz")
    dev = tmp_path / "dev"
    dev.mkdir()
    try:
        os.mknod(dev / "vdz", stat.S_IFBLK | 0o600, st.st_dev)
    except OSError:
        pytest.skip("cannot make device nodes here (not root)")
    cg = tmp_path / "cgroup"
    (cg / "memory").mkdir(parents=True)
    (cg / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    (cg / "blkio").mkdir()
    (cg / "blkio" / "blkio.throttle.read_iops_device").write_text("")
    return SimpleNamespace(data=data, sys=str(sys), dev=str(dev), cgroup=cg, majmin=f"{major}:{minor}")


def test_a_volume_scenario_throttles_the_disk_under_its_mount_point(volume_disk):
    v = volume_disk
    sc = scenario.Scenario(64 * MIB, limits.PROFILES["hdd-150iops"], "cold")
    p = sd.prepare(sc, _inst(), env={}, c=_client(v.data), sys=v.sys, dev=v.dev, cgroup_root=str(v.cgroup), euid=0)
    assert p.device.name == "vdz" and p.device.majmin == v.majmin and p.data == v.data
    node = str(Path(v.dev) / "vdz")
    assert p.settings["mem_limit"] == p.settings["memswap_limit"] == 64 * MIB
    assert p.settings["device_read_iops"] == [{"Path": node, "Rate": 150}]
    assert p.cgroup_version == 1
    assert any("memory+swap the same" in e for e in p.enforced)
    assert any(e.startswith("the container's device_read_iops") and "does not throttle buffered writes" in e
               for e in p.enforced)
    # the reference scenario: nothing to set, the disk still found for iostat
    ref = sd.prepare(scenario.Scenario(), _inst(), env={}, c=_client(v.data), sys=v.sys, dev=v.dev,
                     cgroup_root=str(v.cgroup), euid=1000)
    assert ref.settings == {} and ref.enforced == [] and ref.device.name == "vdz"


def test_what_cannot_be_enforced_is_refused_with_the_reason(volume_disk, tmp_path):
    v = volume_disk
    kw = dict(c=_client(v.data), sys=v.sys, dev=v.dev, cgroup_root=str(v.cgroup))
    hdd = limits.PROFILES["hdd-150iops"]
    with pytest.raises(DragnetError, match="its own tmpfs .--storage tmpfs.: no disk to throttle"):
        sd.prepare(scenario.Scenario(None, hdd), _inst("tmpfs"), env={}, euid=0, **kw)
    with pytest.raises(DragnetError, match="cold drops the host's page cache .* needs root; not root"):
        sd.prepare(scenario.Scenario(None, limits.PROFILES["unlimited"], "cold"), _inst(), env={}, euid=1000, **kw)
    remote = {"DOCKER_HOST": "tcp://10.0.0.1:2375"}
    with pytest.raises(DragnetError, match="tcp://10.0.0.1:2375 is not on this machine"):
        sd.prepare(scenario.Scenario(None, hdd), _inst(), env=remote, euid=0, **kw)
    # a memory limit is the engine's to enforce: a remote one takes it
    p = sd.prepare(scenario.Scenario(64 * MIB), _inst(), env=remote, euid=1000, **kw)
    assert p.settings == {"mem_limit": 64 * MIB, "memswap_limit": 64 * MIB} and p.device is None
    # data on a file system without a block device (the sysfs knows no such disk)
    empty = tmp_path / "nosys"
    (empty / "dev" / "block").mkdir(parents=True)
    with pytest.raises(DragnetError, match="hdd-150iops: .* without a block device"):
        sd.prepare(scenario.Scenario(None, hdd), _inst(), env={}, euid=0, **{**kw, "sys": str(empty)})
    with pytest.raises(DragnetError, match="no device node"):
        sd.prepare(scenario.Scenario(None, hdd), _inst(), env={}, euid=0, **{**kw, "dev": str(tmp_path)})


class FakeContainer:
    def __init__(self, host_config: dict, pid: int = 4242):
        self.attrs = {"HostConfig": host_config, "State": {"Pid": pid, "Status": "running", "OOMKilled": False}}

    def reload(self):
        pass


def _target(v, sc, host_config, tmp_path):
    p = sd.prepare(sc, _inst(), env={}, c=_client(v.data), sys=v.sys, dev=v.dev, cgroup_root=str(v.cgroup), euid=0)
    container = FakeContainer(host_config)
    c = SimpleNamespace(containers=SimpleNamespace(get=lambda ref: container), volumes=None)
    proc = tmp_path / "proc"
    (proc / "4242").mkdir(parents=True)
    (proc / "4242" / "cgroup").write_text(f"12:blkio:/docker/{CID}\n9:memory:/docker/{CID}\n")
    mem = v.cgroup / "memory" / "docker" / CID
    blk = v.cgroup / "blkio" / "docker" / CID
    mem.mkdir(parents=True, exist_ok=True)
    blk.mkdir(parents=True, exist_ok=True)
    (mem / "memory.limit_in_bytes").write_text(f"{sc.memory}\n")
    (mem / "memory.max_usage_in_bytes").write_text("59863040\n")
    (mem / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 0\n")
    (mem / "memory.failcnt").write_text("0\n")
    for kind, value in sc.profile.throttles():
        (blk / f"blkio.throttle.{kind}_device").write_text(f"{v.majmin} {value}\n")
    (blk / "blkio.throttle.io_serviced").write_text(f"{v.majmin} Read 814\n{v.majmin} Write 40\n")
    t = sd.DockerTarget(p, _inst(), c=c, cgroup_root=str(v.cgroup), proc=str(proc))
    return t, container, mem, blk


def test_the_target_checks_engine_and_kernel_and_judges_oom_from_the_container(volume_disk, tmp_path):
    v = volume_disk
    sc = scenario.Scenario(64 * MIB, limits.parse_profile("150:0:0:0"))
    node = str(Path(v.dev) / "vdz")
    held = {"Memory": 64 * MIB, "MemorySwap": 64 * MIB, "BlkioDeviceReadIOps": [{"Path": node, "Rate": 150}]}
    t, container, mem, blk = _target(v, sc, held, tmp_path / "a")
    t.start()
    assert t.applied["host_config"] == held
    assert t.applied["cgroup"]["memory.limit_in_bytes"] == str(64 * MIB)
    assert t.applied["cgroup"]["blkio.throttle.read_iops_device"] == f"{v.majmin} 150"
    # the group has lived since the container started: the peak is reset, the counters taken from here
    assert (mem / "memory.max_usage_in_bytes").read_text() == "0"
    (mem / "memory.max_usage_in_bytes").write_text("59863040\n")
    (blk / "blkio.throttle.io_serviced").write_text(f"{v.majmin} Read 1000\n{v.majmin} Write 45\n")
    m = t.finish(0.0, failed=False)
    assert not m.oom and m.use.peak == 59863040
    assert (m.io["read_ios"], m.io["write_ios"]) == (186, 5)
    assert t.record()["container"]["peak_of"] == "the build"
    # the container OOM-killed: its groups are gone, the engine's state says so
    t, container, mem, blk = _target(v, sc, held, tmp_path / "b")
    t.start()
    (mem / "memory.max_usage_in_bytes").write_text("59863040\n")
    t.watch.read()
    container.attrs["State"].update(OOMKilled=True, Status="exited")
    (mem / "memory.max_usage_in_bytes").unlink()
    m = t.finish(0.0, failed=True)
    assert m.oom and m.use.peak == 59863040        # the last reading before the group vanished
    assert "lower bound" in t.record()["container"]["memory_read"]


def test_the_target_refuses_limits_the_container_does_not_hold(volume_disk, tmp_path):
    v = volume_disk
    sc = scenario.Scenario(64 * MIB, limits.parse_profile("150:0:0:0"))
    node = str(Path(v.dev) / "vdz")
    dropped = {"Memory": 64 * MIB, "MemorySwap": 64 * MIB, "BlkioDeviceReadIOps": None}
    t, *_ = _target(v, sc, dropped, tmp_path / "a")
    with pytest.raises(DragnetError, match="does not hold its limits: device_read_iops"):
        t.start()
    held = {"Memory": 64 * MIB, "MemorySwap": 64 * MIB, "BlkioDeviceReadIOps": [{"Path": node, "Rate": 150}]}
    t, container, mem, blk = _target(v, sc, held, tmp_path / "b")
    (blk / "blkio.throttle.read_iops_device").write_text("")
    with pytest.raises(DragnetError, match="blkio.throttle.read_iops_device holds '', not"):
        t.start()


class FakeTarget:
    device = None
    enforced = ["what the fake enforced"]
    cgroup_version = 1

    def __init__(self, oom: bool):
        self.oom = oom
        self.calls: list[str] = []

    def set_cache(self, state):
        self.calls.append(f"cache {state}")
        return "left as it is"

    def start(self):
        self.calls.append("start")

    def finish(self, t0, failed):
        self.calls.append(f"finish failed={failed}")
        return scenario.Measured(limits.MemoryUse(peak=60 * MIB, oom_kills=0), None, [], self.oom)

    def record(self):
        return {"backend": "fake"}


class FakeCouch:
    def get(self, path, **kw):
        return {"sizes": {"file": 10}, "doc_count": 3}


def test_run_in_reports_an_oom_kill_as_the_scenarios_result_and_reraises_other_failures(monkeypatch):
    monkeypatch.setattr(iostat.IostatRunner, "available", classmethod(lambda cls: False))
    sc = scenario.Scenario(64 * MIB)

    def dies():
        raise ConnectionError("connection closed")

    t = FakeTarget(oom=True)
    r = scenario.run_in(sc, FakeCouch(), "http://x", "db", "dd", dies, target=t)
    assert r["summary"] == {"ok": False, "oom_killed": True, "outcome": "CouchDB was OOM-killed at limit 64.0 MiB",
                            "error": "CouchDB was OOM-killed at limit 64.0 MiB"}
    assert r["memory"]["peak"] == 60 * MIB and r["memory"]["limit"] == 64 * MIB
    assert r["scenario"]["backend"] == "fake" and r["scenario"]["enforced"] == ["what the fake enforced"]
    assert t.calls == ["start", "cache None", "finish failed=True"]
    with pytest.raises(ConnectionError):
        scenario.run_in(sc, FakeCouch(), "http://x", "db", "dd", dies, target=FakeTarget(oom=False))


class HeldTarget(FakeTarget):
    """A local target whose group's OOM killer is off: paused at the limit, let go (limits.OomHold)."""

    def __init__(self, held: bool, failcnt: int = 0):
        super().__init__(oom=held)
        self.held, self.failcnt = held, failcnt

    def finish(self, t0, failed):
        self.calls.append(f"finish failed={failed}")
        return scenario.Measured(limits.MemoryUse(peak=64 * MIB, oom_kills=0, failcnt=self.failcnt), None, [],
                                 self.held, held=self.held)


def test_run_in_says_a_held_couchdb_ran_out_of_memory_and_kept_running(monkeypatch):
    monkeypatch.setattr(iostat.IostatRunner, "available", classmethod(lambda cls: False))
    sc = scenario.Scenario(64 * MIB)
    r = scenario.run_in(sc, FakeCouch(), "http://x", "db", "dd", lambda: {"summary": {"ok": True, "docs": 3}},
                        target=HeldTarget(held=True))
    s = r["summary"]
    assert s["oom_held"] and s["oom_killed"] and not s["ok"] and s["docs"] == 3
    assert s["outcome"] == s["error"] == ("CouchDB ran out of memory at limit 64.0 MiB (the kernel would have "
                                          "OOM-killed it; dragnet lifted the limit and CouchDB kept running)")
    assert r["sizes"]["after"] is not None      # CouchDB is up: its sizes are read after the build


def test_run_in_names_the_limit_in_a_failure_at_it(monkeypatch):
    monkeypatch.setattr(iostat.IostatRunner, "available", classmethod(lambda cls: False))

    def refused():
        raise ConnectionError("CouchDB answered 500\nmore")

    with pytest.raises(DragnetError, match=r"^CouchDB answered 500 \(at memory limit 64.0 MiB: the group reached "
                                           r"it 12 times\)$"):
        scenario.run_in(scenario.Scenario(64 * MIB), FakeCouch(), "http://x", "db", "dd", refused,
                        target=HeldTarget(held=False, failcnt=12))
