"""iostat on every build whose data device is known, with the same summary as scenario builds.

Where CouchDB keeps its data: a CouchDB listening on this machine's port gives its database_dir (beam's
working directory for a relative one; a local cluster's first node), a Docker CouchDB that dragnet
started gives its volume's mount point (or --data-dir) when the engine is on this machine. The disk under
that directory is the device iostat is summarised for. When it cannot be known the results say why
(`iostat.absent`), so an empty column in the report has a reason.
"""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlsplit

from dragnet.measure import iostat as _iostat
from dragnet.couchdb import storage as _storage
from dragnet.couchdb.client import Couch, split_credentials


def data_device(couch: Couch, url: str, env: dict | None = None) -> tuple[_storage.BlockDevice | None, str | None, str]:
    """(the data's disk, its directory, why not) for the CouchDB at url."""
    from dragnet.couchdb import control as ctl
    from dragnet.bench.scenario import couch_pid, data_dir

    parts = urlsplit(split_credentials(url)[0])
    if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        return None, None, f"CouchDB at {parts.hostname} is not on this machine"
    data: Path | None = None
    try:
        inst = ctl.load_state(parts.port or 5984, env)
    except Exception:      # noqa: BLE001 - an unreadable state file only means: not dragnet's
        inst = None
    if inst is not None and inst.backend == "docker":
        from dragnet.couchdb import docker as dk

        if not dk.docker_host(env).startswith("unix://"):
            return None, None, "the Docker engine is not on this machine"
        try:
            data = dk.data_path(dk.client(env), inst)
        except Exception as exc:      # noqa: BLE001 - no engine: say so instead of failing the build
            return None, None, f"cannot ask the Docker engine for the container's data: {exc}"
        if data is None:
            return None, None, "the container's data is on its own tmpfs: no block device"
    else:
        pid = couch_pid(url)
        data = data_dir(couch, pid) if pid else None
        if data is None:
            return None, None, "CouchDB's database_dir is not visible on this machine"
    try:
        return _storage.device_of(data), str(data), ""
    except _storage.NoBlockDevice as exc:
        return None, str(data), str(exc)
    except OSError as exc:
        return None, str(data), f"cannot stat {data}: {exc.strerror}"


class BuildIostat:
    """Start before the build, stop after it; record() gives the results' "iostat" entry."""

    def __init__(self, couch: Couch, url: str, env: dict | None = None):
        self.device, self.data, self.why = data_device(couch, url, env)
        self.runner = None
        self.t0: float | None = None
        if self.device is not None and not _iostat.IostatRunner.available():
            self.why = "iostat not found (install sysstat)"
        if self.device is not None and not self.why:
            self.runner = _iostat.IostatRunner()

    def start(self) -> "BuildIostat":
        self.t0 = time.time()
        if self.runner is not None:
            self.runner.start()
        return self

    def stop(self, first_report: bool = True) -> str:
        return self.runner.stop(first_report=first_report) if self.runner is not None else ""

    def record(self, text: str) -> dict:
        if self.runner is None:
            return {"argv": None, "device": None, "data_dir": self.data, "absent": self.why}
        parsed = _iostat.parse(text)
        dev = self.device
        return {"argv": self.runner.argv, "device": dev.name, "data_dir": self.data,
                "device_info": {"name": dev.name, "majmin": dev.majmin, "kind": dev.kind, "backing": dev.backing},
                "samples": parsed.samples, "skipped": parsed.skipped,
                "summary": _iostat.summarize(parsed.samples, {dev.name}, t_from=self.t0)}


# ---------------------------------------------------------------- the report's view (pure)

IO_COLUMNS = ("design doc / view", "engine", "storage", "builds", "device", "r/s", "rkB/s", "w/s", "wkB/s",
              "r_await ms", "%util")
_IO_KEYS = ("r_s", "rkb_s", "w_s", "wkb_s", "r_await", "util_pct")


def io_rows(results) -> tuple[list[list[str]], list[str]]:
    """Per design doc (or view file), engine and storage: medians over builds of each build's iostat
    averages on the data's disk; and one note per reason iostat is absent from builds. Scenario builds
    are left to the "disk matters?" table."""
    from dragnet.report.tables import result_label
    from dragnet.measure.stats import median

    groups: dict[tuple, list[dict]] = {}
    devices: dict[tuple, set] = {}
    absent: dict[str, int] = {}
    for r in results:
        if r.get("scenario"):
            continue
        io = r.get("iostat")
        if not isinstance(io, dict):
            continue
        if io.get("absent"):
            absent[io["absent"]] = absent.get(io["absent"], 0) + 1
            continue
        dev = (io.get("summary") or {}).get(io.get("device") or "")
        if not dev:
            continue
        view = r.get("view") or {}
        where = ((view.get("design") or {}).get("id")) or view.get("path") or "?"
        key = (str(where), result_label(r), str((r.get("bench") or {}).get("storage_label") or r.get("storage")))
        groups.setdefault(key, []).append({k: (dev.get(k) or {}).get("avg") for k in _IO_KEYS})
        devices.setdefault(key, set()).add(io["device"])
    rows = []
    for key, avgs in sorted(groups.items()):
        cells = []
        for k in _IO_KEYS:
            vals = [a[k] for a in avgs if isinstance(a.get(k), (int, float))]
            cells.append(f"{median(vals):,.1f}" if vals else "–")
        rows.append([*key, str(len(avgs)), ",".join(sorted(devices[key])), *cells])
    notes = [f"iostat absent from {n} build(s): {why}" for why, n in sorted(absent.items())]
    return rows, notes
