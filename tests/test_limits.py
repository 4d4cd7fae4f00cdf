"""Disk profiles, memory/size parsing and the cgroup plan (v1 and v2 file trees built in tmp_path)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dragnet.couchdb import limits as limits
from dragnet.errors import DragnetError, UsageError
from dragnet.couchdb.storage import BlockDevice

VDA = BlockDevice("vda", 254, 0, "disk")


def test_builtin_and_custom_profiles():
    hdd = limits.parse_profile("hdd-150iops")
    assert (hdd.r_iops, hdd.w_iops) == (150, 150) and not hdd.unlimited
    assert limits.parse_profile("unlimited").unlimited
    custom = limits.parse_profile("300:100:50m:0")
    assert (custom.r_iops, custom.w_iops, custom.r_bps, custom.w_bps) == (300, 100, 50 * 1024**2, 0)
    assert [p.name for p in limits.parse_profiles("unlimited, hdd-150iops")] == ["unlimited", "hdd-150iops"]


@pytest.mark.parametrize("bad,why", [("floppy", "unknown disk profile 'floppy'"), ("1:2:3", "unknown disk"),
                                     ("a:1:0:0", "whole numbers"), ("-1:0:0:0", "negative"),
                                     ("1:1:lots:0", "not a size")])
def test_bad_profiles_say_what(bad, why):
    with pytest.raises(UsageError, match=why):
        limits.parse_profile(bad)


def test_memory_and_sizes():
    assert limits.parse_memory_limits("unlimited,512m,1g") == [None, 512 * 1024**2, 1024**3]
    assert limits.parse_sizes("40k,10k,320k,10000") == [10_000, 40_000, 320_000]
    with pytest.raises(UsageError, match="document count"):
        limits.parse_sizes("10k,many")


def v1_tree(root: Path, memory=True, blkio=True) -> Path:
    if memory:
        (root / "memory").mkdir(parents=True)
        (root / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    if blkio:
        (root / "blkio").mkdir(parents=True)
        (root / "blkio" / "blkio.throttle.read_iops_device").write_text("")
    return root


def v2_tree(root: Path, controllers="cpu io memory pids") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "cgroup.controllers").write_text(controllers + "\n")
    return root


def test_plan_v1_writes_memory_and_blkio_files(tmp_path):
    layout = limits.detect(v1_tree(tmp_path))
    assert layout.version == 1
    p = limits.plan(layout, "g", memory=256 * 1024**2, profile=limits.PROFILES["hdd-150iops"], device=VDA)
    assert p.groups == [tmp_path / "memory" / "g", tmp_path / "blkio" / "g"]
    writes = {str(path.relative_to(tmp_path)): v for path, v in p.writes}
    assert writes == {
        "memory/g/memory.limit_in_bytes": str(256 * 1024**2),
        "memory/g/memory.swappiness": "0",
        "memory/g/memory.oom_control": "1",
        "blkio/g/blkio.throttle.read_iops_device": "254:0 150",
        "blkio/g/blkio.throttle.write_iops_device": "254:0 150",
        "blkio/g/blkio.throttle.read_bps_device": f"254:0 {120 * 1024**2}",
        "blkio/g/blkio.throttle.write_bps_device": f"254:0 {120 * 1024**2}",
    }
    # v1 cannot throttle buffered writes: the plan says so, for the report
    assert any("does not throttle buffered writes" in e for e in p.enforced)


def test_plan_v1_custom_profile_skips_unlimited_fields(tmp_path):
    layout = limits.detect(v1_tree(tmp_path))
    p = limits.plan(layout, "g", memory=None, profile=limits.parse_profile("150:0:0:0"), device=VDA)
    assert [(path.name, v) for path, v in p.writes] == [("blkio.throttle.read_iops_device", "254:0 150")]
    assert p.groups == [tmp_path / "blkio" / "g"]


def test_plan_v2_writes_memory_max_and_io_max(tmp_path):
    layout = limits.detect(v2_tree(tmp_path))
    assert layout.version == 2
    p = limits.plan(layout, "g", memory=10**9, profile=limits.parse_profile("150:75:0:10m"), device=VDA)
    assert p.groups == [tmp_path / "g"]
    assert [(str(path.relative_to(tmp_path)), v) for path, v in p.writes] == [
        ("cgroup.subtree_control", "+memory +io"),
        ("g/memory.max", "1000000000"),
        ("g/memory.swap.max", "0"),
        ("g/io.max", f"254:0 riops=150 wiops=75 rbps=max wbps={10 * 1024**2}"),
    ]


def test_plan_refuses_what_cannot_be_enforced(tmp_path):
    no_blkio = limits.detect(v1_tree(tmp_path / "a", blkio=False))
    with pytest.raises(DragnetError, match="no cgroup blkio controller"):
        limits.plan(no_blkio, "g", memory=None, profile=limits.PROFILES["hdd-150iops"], device=VDA)
    no_mem = limits.detect(v2_tree(tmp_path / "b", controllers="cpu io"))
    with pytest.raises(DragnetError, match="no writable cgroup memory controller"):
        limits.plan(no_mem, "g", memory=10**9, profile=limits.PROFILES["unlimited"], device=None)
    with pytest.raises(DragnetError, match="no block device"):
        limits.plan(no_mem, "g", memory=None, profile=limits.PROFILES["hdd-150iops"], device=None)
    # unlimited everything needs nothing
    assert limits.plan(no_blkio, "g", memory=None, profile=limits.PROFILES["unlimited"], device=None).writes == []


def test_check_enforceable_refuses_tmpfs_data():
    if os.geteuid() != 0:
        with pytest.raises(DragnetError, match="need root"):
            limits.check_enforceable("/dev/shm", memory=None, profile=limits.PROFILES["hdd-150iops"])
        return
    if os.major(os.stat("/dev/shm").st_dev) != 0:
        pytest.skip("/dev/shm is not tmpfs here")
    with pytest.raises(DragnetError, match="hdd-150iops: /dev/shm is on a filesystem without a block device"):
        limits.check_enforceable("/dev/shm", memory=None, profile=limits.PROFILES["hdd-150iops"])


def test_memory_use_reads_v1_and_v2_oom_counters(tmp_path):
    v1 = limits.detect(v1_tree(tmp_path / "v1"))
    p1 = limits.Plan(layout=v1, groups=[tmp_path / "v1" / "memory" / "g"])
    p1.groups[0].mkdir()
    (p1.groups[0] / "memory.stat").write_text("cache 100\nrss 4096\ntotal_rss 8192\n")
    (p1.groups[0] / "memory.max_usage_in_bytes").write_text("397410304\n")
    (p1.groups[0] / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
    (p1.groups[0] / "memory.failcnt").write_text("5313\n")
    u = limits.memory_use(p1)
    assert (u.peak, u.anon, u.oom_kills, u.failcnt) == (397410304, 8192, 1, 5313)
    v2 = limits.detect(v2_tree(tmp_path / "v2"))
    p2 = limits.Plan(layout=v2, groups=[tmp_path / "v2" / "g"])
    p2.groups[0].mkdir()
    (p2.groups[0] / "memory.stat").write_text("anon 123\nfile 456\n")
    (p2.groups[0] / "memory.peak").write_text("789\n")
    (p2.groups[0] / "memory.events").write_text("low 0\nhigh 0\nmax 17\noom 1\noom_kill 2\n")
    u = limits.memory_use(p2)
    assert (u.peak, u.anon, u.oom_kills, u.failcnt) == (789, 123, 2, 17)
    assert limits.oom_message(230 * 1024**2) == "CouchDB was OOM-killed at limit 230.0 MiB"


def test_oom_lines_are_only_the_groups_own():
    # real kernel lines: beam killed in a bench's group, then beam killed in someone's container
    text = (Path(__file__).parent / "fixtures" / "dmesg" / "oom-two-groups.txt").read_text()
    ours = limits.oom_lines_of(text, 0, "/dragnet-1714")
    assert len(ours) == 2
    assert "oom_memcg=/dragnet-1714," in ours[0] and "Killed process 5586 (beam.smp)" in ours[1]
    # a container's kill is not this group's, though its victim is beam.smp too
    assert limits.oom_lines_of(text, 0, "/dragnet-99") == []
    assert limits.oom_lines_of(text, 0, "/dragnet-171") == []      # a prefix is another group
    # only kills since the build started
    from datetime import datetime
    later = datetime.fromisoformat("2026-11-23T11:00:00+00:00").timestamp()
    assert limits.oom_lines_of(text, later, "/dragnet-1714") == []
    docker = "/docker/23ba58ac269f6d2ee6c4f5abd1872284e6240334021ddd4db8e5d84b4f15fb63"
    assert [ln.split(" ", 1)[0] for ln in limits.oom_lines_of(text, later, docker)] == [
        "2026-11-23T12:14:46,006662+00:00", "2026-11-23T12:14:46,006740+00:00"]


def test_memcg_path_names_the_memory_group_as_the_kernel_does(tmp_path):
    v1 = limits.detect(v1_tree(tmp_path / "v1"))
    p = limits.plan(v1, "dragnet-12", memory=256 * 1024**2, profile=limits.PROFILES["unlimited"], device=None)
    assert limits.memcg_path(p) == "/dragnet-12"
    v2 = limits.detect(v2_tree(tmp_path / "v2"))
    p = limits.plan(v2, "dragnet-12", memory=256 * 1024**2, profile=limits.PROFILES["unlimited"], device=None)
    assert limits.memcg_path(p) == "/dragnet-12"
    assert limits.memcg_path(limits.Plan(layout=v1)) is None
def fake_sysfs(root: Path) -> Path:
    """/sys/dev/block links as the kernel makes them: vda with partition vda1, and loop3 with its backing file."""
    blk = root / "devices" / "virtual" / "block"
    (blk / "vda" / "vda1").mkdir(parents=True)
    (blk / "vda" / "dev").write_text("254:0\n")
    (blk / "vda" / "vda1" / "dev").write_text("254:1\n")
    (blk / "vda" / "vda1" / "partition").write_text("1\n")
    (blk / "loop3" / "loop").mkdir(parents=True)
    (blk / "loop3" / "dev").write_text("7:3\n")
    (blk / "loop3" / "loop" / "backing_file").write_text("/var/tmp/disk.img\n")
    (root / "dev" / "block").mkdir(parents=True)
    for majmin, target in (("254:0", "vda"), ("254:1", "vda/vda1"), ("7:3", "loop3")):
        (root / "dev" / "block" / majmin).symlink_to(f"../../devices/virtual/block/{target}")
    return root


def test_device_of_an_st_dev_resolves_partitions_and_loop_devices_through_sysfs(tmp_path):
    from dragnet.couchdb.storage import NoBlockDevice, device_of_dev

    sys = str(fake_sysfs(tmp_path))
    # blkio throttles name whole disks: a file system on vda1 is throttled on vda
    assert device_of_dev(os.makedev(254, 1), sys=sys) == VDA
    assert device_of_dev(os.makedev(254, 0), sys=sys) == VDA
    loop = device_of_dev(os.makedev(7, 3), sys=sys)
    assert (loop.name, loop.majmin, loop.kind, loop.backing) == ("loop3", "7:3", "loop", "/var/tmp/disk.img")
    with pytest.raises(NoBlockDevice, match="the volume is on a filesystem without a block device .device 0:51"):
        device_of_dev(os.makedev(0, 51), sys=sys, what="the volume")
    with pytest.raises(NoBlockDevice, match="device 8:0"):
        device_of_dev(os.makedev(8, 0), sys=sys)


def test_limits_are_backend_neutral_and_shared_refusals(tmp_path):
    hdd = limits.PROFILES["hdd-150iops"]
    assert hdd.throttles() == [("read_iops", 150), ("write_iops", 150), ("read_bps", 120 * 1024**2),
                               ("write_bps", 120 * 1024**2)]
    assert limits.parse_profile("0:75:0:0").throttles() == [("write_iops", 75)]
    assert limits.PROFILES["unlimited"].throttles() == []
    assert not limits.Limits().limited and limits.Limits(memory=1).limited
    assert limits.data_device(tmp_path, limits.PROFILES["unlimited"]) is None   # nothing to throttle: no lookup
    with pytest.raises(DragnetError, match="hdd-150iops: .*/gone does not exist"):
        limits.data_device(tmp_path / "gone", hdd)
    # the same words for the report whichever backend applies the throttle
    assert "does not throttle buffered writes" in limits.io_note(VDA, 1)
    assert "buffered writes included" in limits.io_note(VDA, 2)
    loop = BlockDevice("loop3", 7, 3, "loop", "/var/tmp/disk.img")
    assert limits.loop_note(VDA) == [] and "/var/tmp/disk.img" in limits.loop_note(loop)[0]


def test_read_memory_of_a_group_that_vanished_is_empty(tmp_path):
    use = limits.read_memory(tmp_path / "gone", 1)
    assert (use.peak, use.anon, use.oom_kills, use.failcnt) == (None, None, 0, 0)
    g = tmp_path / "blkio"
    g.mkdir()
    (g / "blkio.throttle.io_serviced").write_text("254:0 Read 814\n254:0 Write 40\n7:3 Read 9\n")
    (g / "blkio.throttle.io_service_bytes").write_text("254:0 Read 37871616\n254:0 Write 98304\n")
    assert limits.read_io(g, 1, "254:0") == {"read_ios": 814, "write_ios": 40, "read_bytes": 37871616,
                                             "write_bytes": 98304}


def test_under_oom_reads_v1_oom_control():
    assert limits.under_oom("oom_kill_disable 1\nunder_oom 1\noom_kill 0\n")
    assert not limits.under_oom("oom_kill_disable 1\nunder_oom 0\noom_kill 0\n")
    assert not limits.under_oom("")


def _v1_memory_root() -> Path | None:
    layout = limits.detect()
    if os.geteuid() != 0 or layout.version != 1 or layout.memory is None:
        return None
    return layout.memory


def test_a_process_over_its_v1_limit_is_paused_and_let_go_not_killed():
    """The kernel's own behaviour with the group's OOM killer off: a process that needs 64 MiB in a
    16 MiB group is paused, OomHold lifts the limit, and the process finishes alive."""
    import subprocess
    import sys

    root = _v1_memory_root()
    if root is None:
        pytest.skip("needs root and a writable cgroup v1 memory controller")
    p = limits.plan(limits.detect(), f"dragnet-{os.getpid()}-hold", memory=16 * 1024**2,
                    profile=limits.PROFILES["unlimited"], device=None)
    # the child waits on stdin until it is in the group, then touches 64 MiB of anonymous memory
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.readline(); "
                              "b = bytearray(64 * 1024 * 1024); b[::4096] = b'x' * (len(b) // 4096); print('done')"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        limits.apply(p, [child.pid])
        hold = limits.OomHold(p.groups[0]).start()
        out, _ = child.communicate("go\n", timeout=60)
        held = hold.stop()
        use = limits.memory_use(p)
    finally:
        child.kill()
        limits.remove(p)
    assert child.returncode == 0 and out.strip() == "done"
    assert held and use.oom_kills == 0
    assert not p.groups[0].exists()
