"""`--update N`: incremental index updates after a full build, and how long new writes take to be visible.

N changes go through `_bulk_docs` in application-sized batches: a share of edits of existing documents
(picked spread over the whole id list) and new documents (copies of existing bodies under fresh ids).
Freshness lag = from the last write's answer until every view answers a `stale=false` (update=true)
query and no indexer task of the design doc is left. Afterwards new documents are deleted and edited
ones get their old body back, so the database holds what it held (plus revisions).
A database counts as dragnet's when it has the `_local/dragnet-import` marker; others need --allow-writes.
"""

from __future__ import annotations

import json
import random
import secrets
import time
from dataclasses import asdict, dataclass
from typing import Callable
from urllib.parse import quote

from dragnet.couchdb.client import Couch, CouchError, db_path
from dragnet.errors import DragnetError, UsageError
from dragnet.measure.poller import indexer_tasks

MARKER = "_local/dragnet-import"
FIELD = "dragnet_update"          # the field an edit adds; bodies are otherwise kept as they are


@dataclass(frozen=True)
class Plan:
    edits: list[str]              # ids of existing docs to edit
    new: int                      # new docs to create
    batch: int

    def batches(self, new_ids: list[str]) -> list[list[tuple[str, str]]]:
        """Interleaved ("edit"|"new", id) ops, cut into batches, as an app's mixed traffic would be."""
        ops, e, n = [], list(self.edits), list(new_ids)
        while e or n:
            if e:
                ops.append(("edit", e.pop(0)))
            if n:
                ops.append(("new", n.pop(0)))
        return [ops[i:i + self.batch] for i in range(0, len(ops), self.batch)]


def plan(ids: list[str], n: int, *, edit_share: float = 0.5, batch: int = 50, seed: int = 1) -> Plan:
    """Which docs to edit and how many to create; edits spread over the whole (sorted) id list."""
    if n < 1:
        raise UsageError(f"--update {n}: needs at least one change")
    if not 0.0 <= edit_share <= 1.0:
        raise UsageError(f"--update-edits {edit_share}: a share between 0 and 1")
    if batch < 1:
        raise UsageError(f"--update-batch {batch}: at least 1")
    want = round(n * edit_share)
    pool = sorted(i for i in ids if not i.startswith("_"))
    if want > len(pool):
        raise UsageError(f"--update {n} with {edit_share:.0%} edits needs {want} documents; the database has "
                         f"{len(pool)}")
    edits = sorted(random.Random(seed).sample(pool, want)) if want else []
    return Plan(edits=edits, new=n - want, batch=batch)


@dataclass
class UpdateResult:
    changes: int
    edits: int
    new: int
    batches: int
    write_s: float                 # first write sent to last write answered
    lag_s: float                   # last write answered to fresh (views answered, no indexer task)
    incremental_docs_per_sec: float | None
    polls: list[dict]              # raw _active_tasks polls during the lag, for reproducing it
    cleaned_up: bool

    def as_dict(self) -> dict:
        return asdict(self)


def owned(couch: Couch, db: str) -> bool:
    try:
        couch.get(f"{db_path(db)}/{MARKER}")
        return True
    except CouchError as exc:
        if exc.status == 404:
            return False
        raise


def check_allowed(couch: Couch, db: str, allow_writes: bool) -> None:
    if not allow_writes and not owned(couch, db):
        raise UsageError(f"--update writes to {db!r}, which dragnet did not create (no {MARKER}); "
                         f"give --allow-writes to allow it")


def _all_ids(couch: Couch, db: str, page: int = 5000) -> list[str]:
    """Every document id, paged by startkey so memory is the id list only."""
    ids, start = [], None
    for _ in range(100_000):
        params = {"limit": page + 1}
        if start is not None:
            params["startkey"] = json.dumps(start)
        rows = couch.get(f"{db_path(db)}/_all_docs", params=params)["rows"]
        ids += [r["id"] for r in rows[:page]]
        if len(rows) <= page:
            return ids
        start = rows[page]["id"]
    return ids


def _bulk(couch: Couch, db: str, docs: list[dict]) -> list[dict]:
    out = couch.post(f"{db_path(db)}/_bulk_docs", {"docs": docs})
    bad = [r for r in out if "error" in r]
    if bad:
        raise DragnetError(f"_bulk_docs on {db} refused {len(bad)} of {len(docs)} writes "
                           f"(first: {bad[0].get('id')}: {bad[0].get('error')} {bad[0].get('reason', '')})")
    return out


def _fetch(couch: Couch, db: str, ids: list[str]) -> dict[str, dict]:
    if not ids:
        return {}
    rows = couch.post(f"{db_path(db)}/_all_docs", {"keys": ids}, params={"include_docs": "true"})["rows"]
    return {r["id"]: r["doc"] for r in rows if r.get("doc")}


def run(couch: Couch, db: str, ddoc_id: str, views: list[str], n: int, *, edit_share: float = 0.5,
        batch: int = 50, allow_writes: bool = False, interval: float = 0.2, timeout: float = 600.0,
        seed: int = 1, on_note: Callable[[str], None] | None = None) -> UpdateResult:
    """Write n changes, measure the freshness lag of ddoc_id's views, then undo the writes."""
    check_allowed(couch, db, allow_writes)
    p = plan(_all_ids(couch, db), n, edit_share=edit_share, batch=batch, seed=seed)
    tag = secrets.token_hex(3)
    new_ids = [f"dragnet_update_{tag}_{i:06d}" for i in range(p.new)]
    batches = p.batches(new_ids)
    template = None
    originals: dict[str, dict] = {}
    written_new: dict[str, str] = {}
    t_first = time.time()
    try:
        for k, ops in enumerate(batches):
            got = _fetch(couch, db, [i for kind, i in ops if kind == "edit"])
            docs = []
            for kind, i in ops:
                if kind == "edit":
                    doc = got[i]
                    originals[i] = dict(doc)
                    docs.append({**doc, FIELD: tag})
                else:
                    if template is None:
                        template = _template(couch, db)
                    docs.append({**template, "_id": i, FIELD: tag})
            for r in _bulk(couch, db, docs):
                if r["id"] in originals:
                    originals[r["id"]]["_rev"] = r["rev"]
                else:
                    written_new[r["id"]] = r["rev"]
        t_last = time.time()
        polls = _wait_fresh(couch, db, ddoc_id, views, interval, timeout)
        t_fresh = time.time()
    finally:
        cleaned = _undo(couch, db, originals, written_new, on_note)
    lag = t_fresh - t_last
    return UpdateResult(changes=n, edits=len(p.edits), new=p.new, batches=len(batches), write_s=t_last - t_first,
                        lag_s=lag, incremental_docs_per_sec=(n / lag) if lag > 0 else None, polls=polls,
                        cleaned_up=cleaned)


def _template(couch: Couch, db: str) -> dict:
    rows = couch.get(f"{db_path(db)}/_all_docs", params={"limit": 50, "include_docs": "true"})["rows"]
    for r in rows:
        if not r["id"].startswith("_"):
            return {k: v for k, v in r["doc"].items() if not k.startswith("_")}
    return {}


def _wait_fresh(couch: Couch, db: str, ddoc_id: str, views: list[str], interval: float,
                timeout: float) -> list[dict]:
    """Query each view with update=true (stale=false), then poll until no indexer task of ours is left."""
    base = f"{db_path(db)}/{quote(ddoc_id, safe='/')}/_view/"
    deadline = time.time() + timeout
    for v in views:
        couch.get(base + quote(v, safe=""), params={"limit": 0, "update": "true"}, timeout=timeout)
    polls = []
    while time.time() < deadline:
        tasks = couch.get("/_active_tasks")
        polls.append({"t": time.time(), "tasks": tasks})
        if not indexer_tasks(tasks, ddoc_id):
            return polls
        time.sleep(interval)
    raise DragnetError(f"indexer tasks of {ddoc_id} still running {timeout:g}s after the last write")


def _undo(couch: Couch, db: str, originals: dict[str, dict], new: dict[str, str],
          on_note: Callable[[str], None] | None) -> bool:
    """Delete the new docs and give edited ones their old body back; False (and a note) if any failed."""
    docs = [{"_id": i, "_rev": rev, "_deleted": True} for i, rev in new.items()]
    docs += [{k: v for k, v in d.items() if k != FIELD} for d in originals.values()]
    try:
        for i in range(0, len(docs), 500):
            _bulk(couch, db, docs[i:i + 500])
        return True
    except DragnetError as exc:
        if on_note:
            on_note(f"could not undo every --update write: {exc}")
        return False
