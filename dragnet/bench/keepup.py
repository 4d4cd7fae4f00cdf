"""`dragnet keepup`: the highest write rate at which each engine's index stays fresh (talks to CouchDB).

Per engine: a design document with the view (ken, CouchDB's background indexer, may build it: autoupdate on),
a full build (a view request that waits for it), then steps of writes at rising rates (dragnet.load, open-loop,
every acknowledged write checked and purged afterwards). During each step the database's and the view's update
sequences are sampled every `interval` s (and whether an indexer task of the view runs, from `/_active_tasks`);
a step keeps up when the lag stays bounded (dragnet.load.lag). Stepping stops at the first rate not kept up
with, or one the load could not drive. Each reader mode is stepped on its own: `none` leaves the index to ken
and its settings (recorded), `N/s` adds readers that query the view with update=true at N/s.
Between steps a view request brings the index up to date, so every step starts from no lag.
"""

from __future__ import annotations

import datetime as _dt
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from dragnet.couchdb.client import Couch, CouchError, connect, db_path
from dragnet.errors import DragnetError, UsageError
from dragnet.load import lag as L
from dragnet.load import spec as S
from dragnet.results.schema import KEEPUP, schema, write as write_results

NO_READERS = "none"


@dataclass
class KeepupConfig:
    url: str
    db: str
    languages: list[str]
    rates: list[float]
    views: str | None = None
    window_s: float = 30.0
    readers: list[str] = field(default_factory=lambda: [NO_READERS])
    interval: float = 1.0
    build_timeout: float = 3600.0
    results_dir: str | None = None
    data: str | None = None       # imported first unless already there (dragnet.data.ensure)
    q: int | None = None


def parse_readers(text: str) -> list[str]:
    """'none,2/s' -> ['none', '2/s'] (readers at update=true per second, or none: ken alone)."""
    out = []
    for part in (p.strip() for p in (text or "").split(",")):
        if not part:
            continue
        if part.lower() == NO_READERS:
            out.append(NO_READERS)
            continue
        S.parse_rate(part if "/" in part else f"{part}/s", "--readers")
        out.append(part if "/" in part else f"{part}/s")
    if not out:
        raise UsageError("--readers: none, or a rate of update=true readers (e.g. none,2/s)")
    return out


def _seqs(couch: Couch, db: str, ddoc_path: str) -> tuple[int | None, int | None]:
    db_seq = S.seq_number(couch.get(db_path(db)).get("update_seq"))
    view_seq = S.seq_number((couch.get(f"{ddoc_path}/_info").get("view_index") or {}).get("update_seq"))
    return db_seq, view_seq


def _indexing(couch: Couch, ddoc_id: str) -> dict:
    tasks = [t for t in couch.get("/_active_tasks") if t.get("type") == "indexer" and t.get("design_document") == ddoc_id]
    return {"tasks": len(tasks), "changes_done": sum(int(t.get("changes_done") or 0) for t in tasks),
            "total_changes": sum(int(t.get("total_changes") or 0) for t in tasks)}


def step(couch: Couch, db: str, ddoc_id: str, view_query: str, rate: float, readers: str, window_s: float,
         interval: float, on_note: Callable[[str], None]) -> dict:
    """One rate for one window: the load, the lag samples, the verdict."""
    from dragnet.load.compiled import new_load

    kinds = f"writes={rate:g}/s" + ("" if readers == NO_READERS else f",view-waits={readers}")
    load = new_load(couch, db, S.parse(kinds), max_seconds=window_s + 30, before_s=0, on_note=on_note)
    load.prepare()
    ddoc_path = f"{db_path(db)}/{ddoc_id}"
    samples = []
    load.start()
    load.begin_build(view_query)
    t0 = time.monotonic()    # the window starts with the writes (starting the load's thread takes a while)
    try:
        nxt = t0
        while True:
            now = time.monotonic()
            if now - t0 > window_s:
                break
            db_seq, view_seq = _seqs(couch, db, ddoc_path)
            samples.append({"t": now - t0, "db_seq": db_seq, "view_seq": view_seq, "lag": L.lag(db_seq, view_seq),
                            **_indexing(couch, ddoc_id)})
            nxt += interval
            time.sleep(max(0.0, nxt - time.monotonic()))
        load.build_ended()
        record = load.stop()
    except BaseException:
        load.stop()
        load.purge()
        raise
    record["purge"] = load.purge()
    v = L.verdict(samples, rate)
    writes = (record["kinds"].get(S.WRITES) or {}).get("build") or {}
    driven = writes.get("held")
    out = {"rate": rate, "readers": readers, "achieved_per_s": writes.get("achieved_per_s"), "driven": driven,
           **v, "samples": samples, "load": record}
    if record["writes_check"]["lost"]:
        raise DragnetError(f"keepup at {rate:g}/s: the load lost {record['writes_check']['lost']} acknowledged "
                           f"write(s)")
    if driven is False:
        out["kept_up"] = None
        out["why"] = (f"the load drove {writes.get('achieved_per_s') or 0:.1f}/s of the {rate:g}/s asked: this "
                      f"machine cannot say whether the index keeps up at this rate")
    return out


def catch_up(couch: Couch, view_query: str, timeout: float) -> float:
    """A view request that waits for the index: the seconds it took.

    CouchDB answers `500 timeout` when the index is not built within `[fabric] request_timeout` (60 s by
    default; a full build of 40,000 documents takes minutes): the indexer goes on, so the request is sent
    again until `timeout`, as a bench build's view request is."""
    from dragnet.index.addview import get_until_built

    t = time.monotonic()
    get_until_built(couch, f"{view_query}&update=true", timeout)
    return time.monotonic() - t


def run(cfg: KeepupConfig, *, on_event: Callable[[str, dict], None] | None = None, env: dict | None = None) -> dict:
    """Every engine, every reader mode, rising rates; the results dict (also written to the results folder)."""
    from dragnet.bench.run import DEFAULT_VIEWS, resolve_languages
    from dragnet.index import ddoc as _ddoc
    from dragnet.index import views as _views
    from dragnet.load.generator import require_loopback
    from dragnet.measure.machine import machine_info

    emit = on_event or (lambda _k, _d: None)
    require_loopback(cfg.url)
    if cfg.window_s < 5 * cfg.interval:
        raise UsageError(f"--window {cfg.window_s:g}: at least five samples ({5 * cfg.interval:g} s)")
    views = cfg.views or str(DEFAULT_VIEWS)
    specs = resolve_languages(cfg.languages, views)
    couch = connect(cfg.url, env=env)
    if cfg.data:
        from dragnet.data.ensure import ensure_data

        ensure_data(couch, cfg.db, cfg.data, q=cfg.q, progress=lambda m: emit("import", {"message": m}))
    info = couch.get(db_path(cfg.db))
    started = _dt.datetime.now(_dt.timezone.utc)
    try:
        ken = couch.get("/_node/_local/_config/ken")
    except CouchError:
        ken = None
    out: dict[str, Any] = {"schema": schema(KEEPUP), "started_at": started.isoformat(timespec="seconds"),
                           "db": {"name": cfg.db, "doc_count": info.get("doc_count"),
                                  "q": (info.get("cluster") or {}).get("q")},
                           "couchdb": couch.version(), "ken": ken, "machine": machine_info(),
                           "rates": cfg.rates, "readers": cfg.readers, "window_s": cfg.window_s,
                           "interval_s": cfg.interval, "growth": L.GROWTH, "floor_s": L.FLOOR_S, "engines": []}
    for spec in specs:
        view = _views.load(spec.path(views), spec.language)
        name = _views.default_view_name(spec.path(views))
        ident = _ddoc.ddoc_id(f"dragnet_keepup_{spec.name}_{int(time.time() * 1000)}")
        doc = _ddoc.build(ident, name, view, autoupdate=True, nonce=f"keepup-{time.time():.6f}")
        saved = _ddoc.create_fresh(couch, cfg.db, doc)
        query = f"{_ddoc.ddoc_path(cfg.db, ident)}/_view/{name}?limit=1"
        engine: dict[str, Any] = {"engine": spec.name, "language": spec.language, "ddoc": ident, "modes": []}
        out["engines"].append(engine)
        try:
            emit("build", {"engine": spec.name})
            engine["full_build_s"] = catch_up(couch, query, cfg.build_timeout)
            for readers in cfg.readers:
                steps: list[dict] = []
                mode = {"readers": readers, "steps": steps}
                engine["modes"].append(mode)
                for rate in cfg.rates:
                    catch_up(couch, query, cfg.build_timeout)
                    emit("step", {"engine": spec.name, "readers": readers, "rate": rate})
                    s = step(couch, cfg.db, ident, query, rate, readers, cfg.window_s, cfg.interval,
                             lambda m: emit("warning", {"message": m}))
                    steps.append(s)
                    emit("stepped", {"engine": spec.name, "readers": readers, **{k: s[k] for k in ("rate", "kept_up", "why")}})
                    if not s["kept_up"]:
                        break
                mode["keeps_up_to"] = L.keeps_up_to(steps)
                if readers == NO_READERS:
                    mode["never_updated"] = L.never_updated(steps)
                mode["not_driven"] = any(s.get("driven") is False for s in steps)
        finally:
            try:
                couch.request("DELETE", f"{_ddoc.ddoc_path(cfg.db, ident)}?rev={saved.rev}", ok=(200, 202, 404))
                couch.request("POST", f"{db_path(cfg.db)}/_view_cleanup", json={}, ok=(200, 202))
                engine["ddoc_deleted"] = True
            except DragnetError:
                engine["ddoc_deleted"] = False
    out["finished_at"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    folder = Path(cfg.results_dir or Path("results") / f"keepup-{started.strftime('%Y%m%dT%H%M%SZ')}")
    out["file"] = str(write_results(folder / "keepup.json", out))
    return out

