"""Where a CouchDB on this machine keeps its data, how big its files are, and what a build wrote.

These talk to CouchDB (its config, `GET /db`, the design doc's `_info`) and read /proc.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable
from urllib.parse import quote, urlsplit

from dragnet.couchdb.client import Couch, CouchError, db_path, split_credentials
from dragnet.measure.pidstat import listening_pid


def couch_pid(url: str) -> int | None:
    """beam's pid when the URL is a CouchDB on this machine (it listens on the port)."""
    parts = urlsplit(split_credentials(url)[0])
    if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        return None
    return listening_pid(parts.port or 5984)


def data_dir(couch: Couch, pid: int | None) -> Path | None:
    """CouchDB's database_dir (config; relative to beam's working directory), or None when not local."""
    try:
        d = couch.get("/_node/_local/_config/couchdb/database_dir")
    except CouchError:
        return None
    p = Path(str(d))
    if not p.is_absolute():
        if pid is None:
            return None
        try:
            p = Path(os.readlink(f"/proc/{pid}/cwd")) / p
        except OSError:
            return None
    return p if p.is_dir() else None


def sizes(couch: Couch, db: str, ddoc: str | None = None) -> dict:
    """File/active/external sizes of the database (GET /db) and of the design doc's index (_info)."""
    out: dict = {}
    info = couch.get(db_path(db))
    out["db"] = {**(info.get("sizes") or {}), "doc_count": info.get("doc_count")}
    if ddoc:
        try:
            vi = couch.get(f"{db_path(db)}/{quote(ddoc, safe='/')}/_info").get("view_index") or {}
            out["index"] = vi.get("sizes") or {}
        except CouchError as exc:
            if exc.status != 404:
                raise
            out["index"] = None
    return out


def bytes_written(pidstat_samples: Iterable[dict] | None, families: tuple[str, ...] = ("beam",)) -> int | None:
    """Bytes CouchDB wrote: pidstat kB_wr/s of its processes summed over the 1 s intervals."""
    if not pidstat_samples:
        return None
    kb = sum(s.get("kb_wr_s") or 0 for s in pidstat_samples if s.get("family") in families
             and isinstance(s.get("kb_wr_s"), (int, float)))
    return int(kb * 1024)


def write_amplification(written: int | None, index_file_size: int | None) -> float | None:
    if not written or not index_file_size:
        return None
    return written / index_file_size
