"""Peak disk during a view build: the database and view files (and their .compact files) sampled while it runs.

CouchDB reports the database's file size (GET /db, sizes.file) and the index's (/db/_design/x/_info,
view_index.sizes.file), but not the .compact files a compaction writes beside them; when CouchDB's data
directory is on this machine, the bytes of the database's and the index's files under it are summed too. The
peak is the largest sum seen. A sampler thread runs beside the build; `watched_build` wraps a bench build
function so every build of a sweep records `sizes.peak_disk` (and `sizes.bytes_written` from pidstat).

When the filesystem fills, the build fails with CouchDB's own error; `out_of_disk` turns that into one line
naming the filesystem, its free space and the peak so far.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote

from dragnet.couchdb.client import Couch, CouchError, connect, db_path
from dragnet.errors import DragnetError
from dragnet.measure.poller import ddoc_id
from dragnet.measure.datadir import bytes_written, couch_pid, data_dir, sizes

INTERVAL = 0.5


def files_bytes(root: Path, db: str, ddoc_sig_dirs: bool = True, exclude: frozenset[str] = frozenset()) -> int:
    """Bytes of the database's shard files and its view index files (.compact included) under root, but for
    the files named in exclude."""
    return files_split(root, db, ddoc_sig_dirs, exclude)[0]


def files_split(root: Path, db: str, ddoc_sig_dirs: bool = True,
                exclude: frozenset[str] = frozenset()) -> tuple[int, int]:
    """(all bytes, bytes of compaction files) of the database's shard and view index files under root, but for
    the files named in exclude.

    Shards live in shards/<range>/<db>.<suffix>.couch[.compact...]; their indexes in
    .shards/<range>/<db>.<suffix>_design/mrview/<sig>.view, compacted into <sig>.compact.view."""
    total = compact = 0
    for top in ("shards", ".shards"):
        base = root / top
        if not base.is_dir():
            continue
        for rng in base.iterdir():
            try:
                entries = list(rng.iterdir())
            except OSError:
                continue
            for e in entries:
                if not e.name.startswith(db + "."):
                    continue
                try:
                    if e.is_file():
                        size = e.stat().st_size
                        total += size
                        compact += size if ".compact" in e.name else 0
                    elif e.is_dir() and ddoc_sig_dirs:
                        for dirpath, _, names in os.walk(e):
                            for n in names:
                                path = os.path.join(dirpath, n)
                                if path in exclude:
                                    continue
                                try:
                                    size = os.stat(path).st_size
                                except OSError:
                                    continue
                                total += size
                                compact += size if ".compact" in n else 0
                except OSError:
                    pass
    return total, compact


def view_files(root: Path, db: str) -> list[Path]:
    """The database's view index files (.shards/<range>/<db>.<suffix>_design/mrview/*)."""
    base = root / ".shards"
    return [f for f in base.glob(f"*/{db}.*_design/mrview/*") if f.is_file()] if base.is_dir() else []


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:     # removed by view cleanup meanwhile
        return 0


def reported_bytes(couch: Couch, db: str, ddoc: str) -> int:
    """sizes.file of the database plus the index's (0 while the design document has none yet)."""
    total = int((couch.get(db_path(db)).get("sizes") or {}).get("file") or 0)
    try:
        vi = couch.get(f"{db_path(db)}/{quote(ddoc, safe='/')}/_info").get("view_index") or {}
        total += int((vi.get("sizes") or {}).get("file") or 0)
    except CouchError as exc:
        if exc.status != 404:
            raise
    return total


class Sampler:
    """Samples the disk the build uses every `interval` seconds in a thread; keeps the peak.

    The view files already there when it starts are other indexes (an earlier build's, which CouchDB's view
    cleanup had not yet removed: up to 313 MiB of them at the start of a 200,000-document build here): they
    are left out, so the start is the database and the peak the database plus this build's index."""

    def __init__(self, couch: Couch, db: str, ddoc: str, root: Path | None, interval: float = INTERVAL,
                 others: list[Path] | None = None):
        self.couch, self.db, self.ddoc, self.root, self.interval = couch, db, ddoc, root, interval
        if others is None:
            others = view_files(root, db) if root is not None else []
        self.others = frozenset(str(f) for f in others)
        self.other_bytes = sum(_size(f) for f in others)
        self.peak_reported = 0
        self.peak_files = 0
        self.compaction_at_peak = 0   # of peak_files, the compaction's files (smoosh compacting the index)
        self.start_reported: int | None = None   # before the build: what the database already takes
        self.start_files: int | None = None
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="disk-peak", daemon=True)

    def sample(self) -> None:
        try:
            self.peak_reported = max(self.peak_reported, reported_bytes(self.couch, self.db, self.ddoc))
        except Exception:   # a poll that fails (CouchDB busy, disk full) loses one sample, not the build
            pass
        if self.root is not None:
            total, compact = files_split(self.root, self.db, exclude=self.others)
            if total > self.peak_files:
                self.peak_files, self.compaction_at_peak = total, compact
        if self.samples == 0:
            self.start_reported, self.start_files = self.peak_reported, self.peak_files
        self.samples += 1

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> "Sampler":
        self.sample()
        self._thread.start()
        return self

    def stop(self) -> None:
        """The build has ended: the last sample, and none after (idempotent)."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self.sample()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def peak(self) -> int:
        return max(self.peak_reported, self.peak_files)

    @property
    def start(self) -> int | None:
        if self.start_reported is None:
            return None
        return max(self.start_reported, self.start_files or 0)

    def as_dict(self) -> dict:
        # growth: the free disk the build needed beyond the database it started from
        return {"peak": self.peak, "start": self.start,
                "growth": self.peak - self.start if self.start is not None else None,
                "reported_peak": self.peak_reported,
                "files_peak": self.peak_files if self.root is not None else None,
                "compaction": self.compaction_at_peak if self.root is not None else None,
                "data_dir": str(self.root) if self.root is not None else None,
                "other_indexes": self.other_bytes if self.root is not None else None,
                "samples": self.samples, "interval_s": self.interval}


def compactions_at_once(polls: list[dict], ddoc: str) -> int:
    """The most shards of this index that CouchDB's compaction daemon compacted at once while it was built
    (view_compaction tasks in the _active_tasks polls)."""
    return max((sum(1 for t in p.get("tasks") or [] if t.get("type") == "view_compaction"
                    and t.get("design_document") == ddoc) for p in polls), default=0)


def databases_compacted(polls: list[dict]) -> list[str]:
    """The databases smoosh compacted while a build ran (database_compaction tasks in the _active_tasks polls),
    by name: a task names one shard's file, shards/<range>/<name>.<created>."""
    names = {str(t.get("database") or "").split("/")[-1].rsplit(".", 1)[0]
             for p in polls for t in p.get("tasks") or [] if t.get("type") == "database_compaction"}
    return sorted(n for n in names if n)


def compaction_polls(polls: list[dict]) -> int:
    """How many of the _active_tasks polls saw a view_compaction task (any index): 0 for a build the
    compaction daemon never reached."""
    return sum(1 for p in polls if any(t.get("type") == "view_compaction" for t in p.get("tasks") or []))


def filesystem(path: Path) -> tuple[str, int]:
    """(mount point, free bytes) of the filesystem holding path."""
    p = Path(path).resolve()
    while not os.path.ismount(p):
        p = p.parent
    return str(p), shutil.disk_usage(p).free


def out_of_disk(result: dict, root: Path | None, peak: int, *, low: int = 64 * 1024 ** 2) -> str | None:
    """One line when a failed build ran out of disk (error mentions enospc, or the filesystem is nearly full)."""
    if (result.get("summary") or {}).get("ok") or root is None:
        return None
    err = str((result.get("summary") or {}).get("error") or "").lower()
    mount, free = filesystem(root)
    if "enospc" in err or "no space" in err or free < low:
        return (f"out of disk: filesystem {mount} has {free / 1024 ** 2:,.1f} MiB free; the build's peak so far "
                f"{peak / 1024 ** 2:,.1f} MiB")
    return None


def watched_build(inner: Callable[..., dict]) -> Callable[..., dict]:
    """A bench build function that records the build's peak disk and bytes written in result["sizes"]."""
    def build(couch: Couch, url: str, db: str, spec: Any, view_path: Any, ddoc: str, storage_label: str,
              **design: Any) -> dict:
        root = data_dir(couch, couch_pid(url))
        ddoc = ddoc_id(ddoc)
        before = view_files(root, db) if root is not None else []
        with Sampler(connect(url), db, ddoc, root, others=before) as s:
            try:
                # the sampler stops when the build ends: a compaction after it is not the rebuild's disk
                result = inner(couch, url, db, spec, view_path, ddoc, storage_label, on_built=s.stop, **design)
            except DragnetError as exc:   # e.g. a 500 on PUT of the design document: the disk is already full
                full = out_of_disk({"summary": {"ok": False, "error": str(exc)}}, root, s.peak)
                if full:
                    raise DragnetError(full) from None
                raise
        peak = {**s.as_dict(), "compactions_at_once": compactions_at_once(result.get("polls") or [], ddoc)}
        full = out_of_disk(result, root, s.peak)
        if full:
            summary = result.setdefault("summary", {})
            summary["ok"] = False
            summary["error"] = full
            # the failed index's files fill the disk, so CouchDB cannot even delete the design document:
            # drop the files this build created (its indexer died on the full disk), then the bench cleans up
            for f in set(view_files(root, db)) - set(before):
                try:
                    f.unlink()
                except OSError:
                    pass
        after = None
        if (result.get("summary") or {}).get("ok"):
            try:
                after = sizes(couch, db, ddoc)
            except CouchError:
                pass
            built = (result.get("index") or {}).get("sizes")
            if after is not None and built:     # a design-doc build deletes its copy itself: its _info at the end
                after["index"] = built
        written = bytes_written((result.get("pidstat") or {}).get("samples"))
        result["sizes"] = {**(result.get("sizes") or {}), "after": after, "peak_disk": peak,
                           "bytes_written": written}
        return result
    return build

