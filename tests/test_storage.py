"""dragnet.couchdb.storage on this machine's real mount table and memory, plus the pure fit checks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dragnet.couchdb import storage as storage
from dragnet.errors import DragnetError, UsageError

MOUNTS = r"""proc /proc proc rw,relatime 0 0
/dev/vda / ext4 rw,relatime 0 0
tmpfs /dev/shm tmpfs rw,nosuid,nodev,size=1024k 0 0
tmpfs /run/my\040space tmpfs rw,size=10k 0 0
/dev/vdb /srv/data xfs ro,relatime 0 0
tmpfs /srv/data/fast tmpfs rw 0 0
"""


def _shm_is_tmpfs() -> bool:
    return any(m.mountpoint == "/dev/shm" and m.fstype == "tmpfs" for m in storage.read_mounts())


needs_shm = pytest.mark.skipif(not _shm_is_tmpfs(), reason="/dev/shm is not a tmpfs on this machine")


def test_parse_mounts_unescapes_and_splits_options():
    mounts = storage.parse_mounts(MOUNTS)
    assert [m.mountpoint for m in mounts] == ["/proc", "/", "/dev/shm", "/run/my space", "/srv/data",
                                              "/srv/data/fast"]
    assert mounts[2].options == ("rw", "nosuid", "nodev", "size=1024k")
    assert mounts[2].in_memory and not mounts[1].in_memory
    assert not mounts[4].writable


def test_mount_for_picks_the_deepest_mountpoint():
    mounts = storage.parse_mounts(MOUNTS)
    assert storage.mount_for("/srv/data/fast/couch/shards", mounts).mountpoint == "/srv/data/fast"
    assert storage.mount_for("/srv/data/slow", mounts).mountpoint == "/srv/data"
    assert storage.mount_for("/srv/datafast", mounts).mountpoint == "/"  # a prefix is not a parent
    assert storage.storage_label("/srv/data/fast/x", mounts) == "tmpfs"
    assert storage.storage_label("/srv/data/x", mounts) == "disk"


@needs_shm
def test_real_mount_table_shm_is_tmpfs_root_is_not(tmp_path):
    assert storage.is_tmpfs("/dev/shm")
    assert storage.storage_label("/dev/shm/dragnet/does/not/exist/yet") == "tmpfs"
    assert storage.storage_label("/") == "disk"
    assert storage.find_tmpfs() == "/dev/shm"


def test_real_mount_table_knows_the_root():
    root = storage.mount_for("/")
    assert root.mountpoint == "/"
    assert root.fstype not in ("", None)


def test_available_memory_is_read_from_proc_meminfo(tmp_path):
    fake = tmp_path / "meminfo"
    fake.write_text("MemTotal:       2048 kB\nMemFree:  100 kB\nMemAvailable:    1536 kB\n")
    assert storage.available_memory(str(fake)) == 1536 * 1024
    real = storage.available_memory()
    assert 0 < real <= os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    fake.write_text("MemTotal: 1 kB\n")
    with pytest.raises(DragnetError, match="MemAvailable"):
        storage.available_memory(str(fake))


@pytest.mark.parametrize("text,expected", [
    ("1048576", 1048576), ("512m", 512 * 1024**2), ("2G", 2 * 1024**3), ("1.5GiB", 1536 * 1024**2),
    ("10k", 10240), (" 3 MB ", 3 * 1024**2), (7, 7),
])
def test_parse_size(text, expected):
    assert storage.parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "lots", "-1g", "2x", "1.2.3g"])
def test_parse_size_rejects_garbage(text):
    with pytest.raises(UsageError, match="not a size"):
        storage.parse_size(text)


def test_check_fits():
    gib = 1024**3
    storage.check_fits(2 * gib, memory=4 * gib, space=3 * gib, reserve=gib)
    with pytest.raises(DragnetError, match=r"would not fit in free memory \(4.0 GiB available\)"):
        storage.check_fits(3 * gib + 1, memory=4 * gib, reserve=gib)
    with pytest.raises(DragnetError, match="would not fit on /dev/shm"):
        storage.check_fits(2 * gib, memory=100 * gib, space=gib, where="/dev/shm")


@needs_shm
def test_prepare_tmpfs_dir_uses_shm_and_refuses_what_does_not_fit():
    name = f"test-{os.getpid()}"
    path, mounted = storage.prepare_tmpfs_dir(name, 1024**2)
    try:
        assert path == Path("/dev/shm/dragnet") / name and path.is_dir() and not mounted
        assert storage.storage_label(path) == "tmpfs"
    finally:
        path.rmdir()
    too_big = storage.available_memory() + 1024**3
    with pytest.raises(DragnetError, match="would not fit in free memory"):
        storage.prepare_tmpfs_dir(name + "-big", too_big)
    assert not (Path("/dev/shm/dragnet") / (name + "-big")).exists()


@needs_shm
def test_require_tmpfs():
    storage.require_tmpfs("/dev/shm/dragnet/new", 1024)
    with pytest.raises(DragnetError, match="would not fit"):
        storage.require_tmpfs("/dev/shm/dragnet/new", storage.available_memory() + 1)
    repo = Path(__file__).resolve().parent
    if storage.is_tmpfs(repo):
        pytest.skip("the repository itself is on a tmpfs")
    with pytest.raises(UsageError, match=r"--storage tmpfs but .* is on .*, not a tmpfs"):
        storage.require_tmpfs(repo / "data", 0)


def test_dir_size_counts_allocated_bytes(tmp_path):
    assert storage.dir_size(tmp_path / "missing") == 0
    (tmp_path / "a").write_bytes(b"x" * 100_000)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b").write_bytes(b"y" * 50_000)
    assert 150_000 <= storage.dir_size(tmp_path) < 150_000 + 4 * 65536


def test_format_size():
    assert storage.format_size(512) == "512 B"
    assert storage.format_size(1536 * 1024**2) == "1.5 GiB"
