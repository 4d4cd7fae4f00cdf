"""Where CouchDB's data lives: disk or tmpfs, read from /proc/mounts, and whether data fits in memory.

Results files carry a storage label ("disk" or "tmpfs") for the data directory; `dragnet couch up
--storage tmpfs` uses these checks to refuse data that would not fit in free memory.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from dragnet.errors import DragnetError, UsageError

MEMORY_FILESYSTEMS = frozenset({"tmpfs", "ramfs"})
# Memory CouchDB itself needs beside the data (beam, caches, query-server processes).
DEFAULT_RESERVE = 512 * 1024**2
SHM = "/dev/shm"


@dataclass(frozen=True)
class Mount:
    device: str
    mountpoint: str
    fstype: str
    options: tuple[str, ...]

    @property
    def in_memory(self) -> bool:
        return self.fstype in MEMORY_FILESYSTEMS

    @property
    def writable(self) -> bool:
        return "rw" in self.options


def _unescape(field: str) -> str:
    # /proc/mounts writes space, tab, newline and backslash as \040 \011 \012 \134.
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def parse_mounts(text: str) -> list[Mount]:
    mounts = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        mounts.append(Mount(_unescape(parts[0]), _unescape(parts[1]), parts[2], tuple(parts[3].split(","))))
    return mounts


def read_mounts(path: str = "/proc/mounts") -> list[Mount]:
    try:
        return parse_mounts(Path(path).read_text())
    except OSError as exc:
        raise DragnetError(f"cannot read the mount table {path}: {exc.strerror}") from None


def mount_for(path: str | os.PathLike, mounts: list[Mount] | None = None) -> Mount:
    """The mount holding path (which need not exist yet)."""
    mounts = read_mounts() if mounts is None else mounts
    real = os.path.realpath(path)  # resolves the existing part, keeps a not-yet-created rest
    best = None
    for m in mounts:  # later entries shadow earlier ones on the same mountpoint
        mp = m.mountpoint.rstrip("/") or "/"
        if real == mp or real.startswith(mp + "/") or mp == "/":
            if best is None or len(mp) >= len(best.mountpoint.rstrip("/") or "/"):
                best = m
    if best is None:
        raise DragnetError(f"no mount found for {path} in the mount table")
    return best


def is_tmpfs(path: str | os.PathLike, mounts: list[Mount] | None = None) -> bool:
    return mount_for(path, mounts).in_memory


def storage_label(path: str | os.PathLike, mounts: list[Mount] | None = None) -> str:
    """"tmpfs" when path lies on a memory filesystem, else "disk" (what results files record)."""
    return "tmpfs" if is_tmpfs(path, mounts) else "disk"


def available_memory(meminfo: str = "/proc/meminfo") -> int:
    """MemAvailable in bytes: what can be used without swapping (tmpfs pages count as used)."""
    try:
        for line in Path(meminfo).read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError as exc:
        raise DragnetError(f"cannot read {meminfo}: {exc.strerror}") from None
    raise DragnetError(f"{meminfo} has no MemAvailable line")


def free_space(path: str | os.PathLike) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def dir_size(path: str | os.PathLike) -> int:
    """Bytes allocated by the files under path (0 if it does not exist)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.I)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(text: str | int) -> int:
    """'512m', '2G', '1.5GiB', '1048576' -> bytes (binary units, as Docker and tmpfs read them)."""
    if isinstance(text, int):
        return text
    m = _SIZE.match(str(text))
    if not m:
        raise UsageError(f"not a size: {text!r} (expected e.g. 512m, 2g, 1048576)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def format_size(n: int) -> str:
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= factor:
            return f"{n / factor:.1f} {unit}"
    return f"{n} B"


def check_fits(data_size: int, *, memory: int | None = None, space: int | None = None,
               reserve: int = DEFAULT_RESERVE, where: str = "tmpfs") -> None:
    """Refuse data that would not fit in memory: data + reserve must fit in available memory,
    and data in the tmpfs's free space. Pure: callers pass the measured memory and space."""
    if memory is not None and data_size + reserve > memory:
        raise DragnetError(
            f"the data ({format_size(data_size)}) plus {format_size(reserve)} for CouchDB would not fit in "
            f"free memory ({format_size(memory)} available): use --storage disk or free some memory")
    if space is not None and data_size > space:
        raise DragnetError(
            f"the data ({format_size(data_size)}) would not fit on {where} ({format_size(space)} free): "
            f"use --storage disk or a larger tmpfs")


def find_tmpfs(mounts: list[Mount] | None = None) -> str | None:
    """A writable tmpfs to put data on: /dev/shm when it is one."""
    mounts = read_mounts() if mounts is None else mounts
    try:
        m = mount_for(SHM, mounts)
    except DragnetError:
        return None
    if m.in_memory and m.writable and os.access(SHM, os.W_OK):
        return SHM
    return None


def prepare_tmpfs_dir(name: str, data_size: int, *, reserve: int = DEFAULT_RESERVE,
                      mount_root: str | os.PathLike | None = None) -> tuple[Path, bool]:
    """A fresh-or-reused directory on a tmpfs for name, after checking the data fits;
    returns (path, whether dragnet mounted it, so it must unmount it later).

    Uses /dev/shm/dragnet/<name> when /dev/shm is a tmpfs; otherwise, as root, mounts a tmpfs of
    data_size + reserve at mount_root/<name>; otherwise refuses.
    """
    memory = available_memory()
    base = find_tmpfs()
    if base is not None:
        check_fits(data_size, memory=memory, space=free_space(base), reserve=reserve, where=base)
        path = Path(base) / "dragnet" / name
        path.mkdir(parents=True, exist_ok=True)
        return path, False
    check_fits(data_size, memory=memory, reserve=reserve)
    if os.geteuid() != 0:
        raise DragnetError(f"no writable tmpfs found ({SHM} is not one) and mounting one needs root: "
                           "run as root, mount a tmpfs and pass it as --data-dir, or use --storage disk")
    if mount_root is None:
        raise DragnetError("no tmpfs available to mount on: pass --data-dir on a tmpfs")
    path = Path(mount_root) / name
    path.mkdir(parents=True, exist_ok=True)
    if is_tmpfs(path):
        return path, False
    size = data_size + reserve
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise DragnetError(f"cannot mount a tmpfs at {path}: {proc.stderr.strip() or proc.returncode}")
    return path, True


def unmount(path: str | os.PathLike) -> None:
    proc = subprocess.run(["umount", str(path)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise DragnetError(f"cannot unmount the tmpfs at {path}: {proc.stderr.strip() or proc.returncode}")


def require_tmpfs(path: str | os.PathLike, data_size: int, *, reserve: int = DEFAULT_RESERVE) -> None:
    """--storage tmpfs with an explicit --data-dir: it must be on a tmpfs and the data must fit."""
    if not is_tmpfs(path):
        m = mount_for(path)
        raise UsageError(f"--storage tmpfs but {path} is on {m.fstype} ({m.mountpoint}), not a tmpfs")
    check_fits(data_size, memory=available_memory(), space=free_space(_existing(path)), reserve=reserve,
               where=str(path))


def _existing(path: str | os.PathLike) -> Path:
    p = Path(os.path.abspath(path))
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


@dataclass(frozen=True)
class BlockDevice:
    """The whole-disk block device under a path, as cgroup throttles and iostat name it."""

    name: str           # e.g. vda, loop0
    major: int
    minor: int
    kind: str           # disk | loop
    backing: str = ""   # a loop device's backing file

    @property
    def majmin(self) -> str:
        return f"{self.major}:{self.minor}"


class NoBlockDevice(ValueError):
    """The path is on tmpfs/overlay/another pseudo filesystem: nothing to throttle or watch."""


def device_of(path: str | Path, sys: str = "/sys") -> BlockDevice:
    """The whole disk holding path (a partition resolves to its disk: blkio throttles whole disks)."""
    return device_of_dev(os.stat(path).st_dev, sys=sys, what=str(path))


def device_of_dev(st_dev: int, sys: str = "/sys", what: str = "the data") -> BlockDevice:
    """The whole disk of a file system's st_dev, found through sysfs (/sys/dev/block/MAJ:MIN)."""
    major, minor = os.major(st_dev), os.minor(st_dev)
    node = Path(sys) / "dev" / "block" / f"{major}:{minor}"
    if major == 0 or not node.exists():
        raise NoBlockDevice(f"{what} is on a filesystem without a block device (device {major}:{minor}, "
                            "tmpfs or overlay): no disk to throttle")
    real = node.resolve()
    if (real / "partition").exists():
        real = real.parent
        major, minor = (int(x) for x in (real / "dev").read_text().split(":"))
    name = real.name
    backing = ""
    loop = real / "loop" / "backing_file"
    if loop.exists():
        backing = loop.read_text().strip()
    return BlockDevice(name=name, major=major, minor=minor, kind="loop" if name.startswith("loop") else "disk",
                       backing=backing)
