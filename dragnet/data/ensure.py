"""The data a bench builds on: a file imported once into its database, and known again by a marker.

`_local/dragnet-import` records the file's sha256 and line count and the database's doc_count right
after the import, so a later bench re-imports only when the database no longer holds that file's documents.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import hashlib
import time
from pathlib import Path
from typing import Callable

from dragnet.couchdb.client import Couch, CouchError, db_path
from dragnet.errors import DragnetError, UsageError

IMPORT_MARKER = "_local/dragnet-import"


def file_fingerprint(path: str | Path) -> dict:
    """sha256 and document count of a JSON-lines file (gzip or plain)."""
    p = Path(path)
    h = hashlib.sha256()
    count = 0
    opener = gzip.open if p.name.endswith(".gz") else open
    try:
        with open(p, "rb") as raw:
            for chunk in iter(lambda: raw.read(1 << 20), b""):
                h.update(chunk)
        with opener(p, "rb") as fh:
            for line in fh:
                if line.strip():
                    count += 1
    except FileNotFoundError:
        raise UsageError(f"data file not found: {p}") from None
    except (OSError, EOFError) as exc:
        raise UsageError(f"cannot read data file {p}: {exc}") from None
    return {"sha256": h.hexdigest(), "count": count, "file": p.name, "bytes": p.stat().st_size}


def import_needed(marker: dict | None, db_info: dict | None, fingerprint: dict) -> str | None:
    """Why the data must be (re)imported, or None when the database already holds this file's documents.

    The marker (`_local/dragnet-import`) records the file's sha256 and line count and the database's
    doc_count right after the import; fewer documents now means some were lost or deleted.
    """
    if db_info is None:
        return "the database does not exist"
    if not marker:
        return "the database was not imported by dragnet"
    if marker.get("sha256") != fingerprint["sha256"] or marker.get("count") != fingerprint["count"]:
        return f"the database holds another data file ({marker.get('file')})"
    now, then = int(db_info.get("doc_count") or 0), int(marker.get("doc_count") or 0)
    if now < then:
        return f"the database holds {now} documents, {then} after the import"
    return None


def ensure_data(couch: Couch, db: str, data: str | Path, *, q: int | None = None, n: int | None = None,
                progress: Callable[[str], None] | None = None) -> dict:
    """Import data into db unless the `_local/dragnet-import` marker says it is already there."""
    fp = file_fingerprint(data)
    try:
        info = couch.get(db_path(db))
    except CouchError as exc:
        if exc.status != 404:
            raise
        info = None
    marker = None
    if info is not None:
        try:
            marker = couch.get(f"{db_path(db)}/{IMPORT_MARKER}")
        except CouchError as exc:
            if exc.status != 404:
                raise
    if info is not None and not marker and int(info.get("doc_count") or 0) > 0:
        # never drop a database dragnet did not fill
        raise DragnetError(f"database {db} already holds {info.get('doc_count')} documents that dragnet did not "
                           f"import: choose another --db, or leave out --data to benchmark it as it is")
    why = import_needed(marker, info, fp)
    if why is None:
        return {"imported": False, "reason": "already imported", **fp}
    if progress:
        progress(f"importing {fp['count']} documents into {db}: {why}")
    if info is not None:
        couch.delete(db_path(db))
    t0 = time.monotonic()
    summary = _import(couch, db, data, q, n)
    seconds = time.monotonic() - t0
    doc_count = int(couch.get(db_path(db)).get("doc_count") or 0)
    couch.put(f"{db_path(db)}/{IMPORT_MARKER}", {**fp, "doc_count": doc_count, "seconds": seconds,
                                                   "at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")})
    return {"imported": True, "reason": why, "seconds": seconds, "doc_count": doc_count, **summary, **fp}


def _import(couch: Couch, db: str, data: str | Path, q: int | None, n: int | None = None) -> dict:
    """Load the file with dragnet.data.importer (creates the database with q shards, n replicas); returns its counts."""
    from dragnet.data import importer as importer

    summary = importer.import_documents(couch, db, str(data), importer.ImportOptions(q=q, n=n))
    if summary.rejected:
        raise DragnetError(f"import of {data} into {db}: {summary.rejected} documents refused "
                           f"({', '.join(f'{k}: {v}' for k, v in summary.reasons.items())})")
    return {"read": summary.read, "rejected": summary.rejected}
