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
    from dragnet.measure.datadir import couch_pid, data_dir

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
