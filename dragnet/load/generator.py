"""The load beside a build: requests at fixed rates to CouchDB over loopback, through aiohttp (talks HTTP).

It runs in a thread with its own asyncio loop, so the build's poller in the main thread is never waiting on
it, and counts its own CPU (the thread's CPU time). Every request kind has its own open-loop schedule
(dragnet.load.spec): a request is sent when due, whether or not the ones before it were answered, up to
MAX_IN_FLIGHT waiting at once (a request due beyond that is counted as not sent, never silently dropped).
The load stops by itself after `max_seconds`, and `stop()` ends it at once.

Afterwards every acknowledged write is looked up by id and `_rev` (a write the database does not have as
acknowledged fails the run), then every document the load wrote is purged, so the database holds what it
held before: its later builds index the same documents as the first.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import quote, urlsplit

from dragnet.couchdb.client import Couch, CouchError, CouchUnreachable, db_path
from dragnet.errors import DragnetError, UsageError
from dragnet.load import spec as S


LOOPBACK = {"127.0.0.1", "localhost", "::1"}
_JSON = {"Content-Type": "application/json"}
BEFORE, BUILD, AFTER = "before", "build", "after"
TIMEOUT_S = 60.0          # a request that waits longer is counted as timed out (view-waits: the whole load)
GRACE_S = 3.0             # at stop, answers still awaited this long before the rest is cancelled
STOP_S = 600.0            # the thread must have ended by then: a load still writing cannot be checked
PURGE_BATCH = 100         # CouchDB's [purge] max_document_id_number default
KEYS_BATCH = 500
TEMPLATES = 50            # documents sampled as the shape of new ones
READ_IDS = 2000           # ids sampled for reads by id


@dataclass(slots=True)     # one per request sent: no __dict__ each
class Request:
    kind: str
    due: float
    sent: float | None = None
    end: float | None = None
    status: int | None = None
    reason: str | None = None       # set when it failed


@dataclass
class _State:
    in_flight: dict = field(default_factory=dict)    # kind -> count
    busy: set = field(default_factory=set)           # document ids being updated
    requests: list = field(default_factory=list)
    not_sent: list = field(default_factory=list)     # (kind, due): the in-flight limit was reached
    acked: dict = field(default_factory=dict)        # id -> last acknowledged rev
    attempted: set = field(default_factory=set)      # every id the load tried to write
    own: list = field(default_factory=list)          # ids of the load's documents (updates pick from them)


def event_loop_factory(name: str = "uvloop") -> tuple[Callable[[], asyncio.AbstractEventLoop], str]:
    """The loop the load runs on and its name: uvloop (libuv: 5 to 22% less CPU per request than asyncio's
    loop, benchmarks/load_overhead) unless it cannot load here, then asyncio's own."""
    if name == "uvloop":
        try:
            import uvloop

            return uvloop.new_event_loop, f"uvloop {uvloop.__version__}"
        except ImportError:
            pass
    return asyncio.new_event_loop, "asyncio"


def require_loopback(url: str) -> None:
    host = urlsplit(url).hostname or ""
    if host not in LOOPBACK:
        raise UsageError(f"--load: CouchDB must be on this machine (loopback), not {host!r}: the load is "
                         "measured next to the build, not across a network")


class Load:
    """One run of a LoadSpec against db: prepare(), start(), begin_build(view_query), stop() -> record."""

    driver = "aiohttp"      # dragnet.load.compiled.GoLoad: "go"

    def __init__(self, couch: Couch, db: str, spec: S.LoadSpec, *, max_seconds: float, tag: str | None = None,
                 seed: int = 0, before_s: float = 5.0, on_note: Callable[[str], None] | None = None,
                 event_loop: str = "uvloop"):
        require_loopback(couch.url)
        self.couch, self.db, self.spec = couch, db, spec
        self.max_seconds, self.before_s = max_seconds, before_s
        self.tag = tag or f"{int(time.time() * 1000):x}"
        self.rng = random.Random(seed)
        self.note = on_note or (lambda _m: None)
        self.st = _State()
        self.templates: list[dict] = []
        self.read_ids: list[str] = []
        self.view_query: str | None = None
        self.t_start = self.t_build = self.t_build_end = self.t_stop = None
        self.cpu_s: float | None = None
        self.seeded = 0
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._n = 0
        self._stopping = False
        self._loop_factory, self.event_loop = event_loop_factory(event_loop)

    # -- before
    def prepare(self) -> None:
        """Templates and ids from the database, and a few documents of the load's own for the updates
        (written with _bulk_docs before anything is timed)."""
        rows = self.couch.get(f"{db_path(self.db)}/_all_docs?include_docs=true&limit={TEMPLATES * 2}")["rows"]
        self.templates = [_shape(r["doc"]) for r in rows if not r["id"].startswith("_design/")][:TEMPLATES]
        if not self.templates and self.spec.writes:
            self.templates = [{"dragnet_load": True}]
        ids = self.couch.get(f"{db_path(self.db)}/_all_docs?limit={READ_IDS}")["rows"]
        self.read_ids = [r["id"] for r in ids if not r["id"].startswith("_design/")]
        n_seed = max(20, int(self.spec.rate(S.UPDATES) * 2)) if self.spec.rate(S.UPDATES) else 0
        if n_seed:
            docs = [self._new_doc() for _ in range(n_seed)]
            self.st.attempted.update(d["_id"] for d in docs)
            answer = self.couch.post(f"{db_path(self.db)}/_bulk_docs", {"docs": docs})
            for row in answer:
                if row.get("rev") and not row.get("error"):
                    self.st.acked[row["id"]] = row["rev"]
                    self.st.own.append(row["id"])
            self.seeded = len(self.st.own)

    def _new_doc(self) -> dict:
        """A template under a fresh id: a shallow copy, as nothing changes it before it is serialised."""
        self._n += 1
        return {"_id": f"dragnet-load-{self.tag}-{self._n:07d}", **self.rng.choice(self.templates)}

    # -- running
    def start(self) -> None:
        """Start the kinds that need no view; returns once they run (the `before` window starts)."""
        self._thread = threading.Thread(target=self._run, name="dragnet-load", daemon=True)
        self._thread.start()
        self._ready.wait(30)
        if self._error is not None:
            raise DragnetError(f"the load could not start: {self._error}")

    def begin_build(self, view_query: str | None = None) -> None:
        """The build starts now: the view kinds start too (on `view_query`, a view path with its query)."""
        self.t_build = time.monotonic()
        self.view_query = view_query
        if self._loop is not None and self.spec.reads_view and view_query:
            self._loop.call_soon_threadsafe(self._start_kinds, S.VIEW_KINDS)

    def build_ended(self) -> None:
        self.t_build_end = time.monotonic()

    def _run(self) -> None:
        try:
            with asyncio.Runner(loop_factory=self._loop_factory) as runner:
                runner.run(self._main())
        except BaseException as exc:   # recorded; stop() reports it
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        import aiohttp
        import yarl

        c0 = time.thread_time()
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        auth = self.couch.session.auth
        headers = {"Accept": "application/json", "User-Agent": "dragnet-load"}
        if auth:     # encoded once, not per request
            headers["Authorization"] = auth.header()
        conn = aiohttp.TCPConnector(limit=0, force_close=False)
        # no cookies to keep and nothing compressed: per-request work the load does not need
        async with aiohttp.ClientSession(self.couch.url, connector=conn, headers=headers,
                                         cookie_jar=aiohttp.DummyCookieJar(), auto_decompress=False) as session:
            self.session = session
            # reads by id: their URLs parsed and joined once, not per request
            base = yarl.URL(self.couch.url)
            self._read_urls = [base.join(yarl.URL(f"{db_path(self.db)}/{quote(i, safe='')}")) for i in self.read_ids]
            self._timeout = aiohttp.ClientTimeout(total=TIMEOUT_S)
            self._drivers: list[asyncio.Task] = []
            self._tasks: set[asyncio.Task] = set()
            self.t_start = time.monotonic()
            self._start_kinds([k for k, _ in self.spec.rates if k not in S.VIEW_KINDS])
            self._ready.set()
            try:
                await asyncio.wait_for(self._stop.wait(), self.max_seconds)
            except asyncio.TimeoutError:
                self.note(f"the load stopped by itself after {self.max_seconds:g} s")
            self._stopping = True
            for d in self._drivers:
                d.cancel()
            if self._tasks:
                await asyncio.wait(list(self._tasks), timeout=GRACE_S)
            for t in list(self._tasks):
                t.cancel()
            if self._tasks:
                await asyncio.wait(list(self._tasks), timeout=GRACE_S)
        self.cpu_s = time.thread_time() - c0

    def _start_kinds(self, kinds) -> None:
        now = time.monotonic()
        until = self.t_start + self.max_seconds
        for k in kinds:
            rate = self.spec.rate(k)
            if rate > 0:
                self._drivers.append(asyncio.ensure_future(self._drive(k, rate, now, until)))

    async def _drive(self, kind: str, rate: float, t0: float, until: float) -> None:
        """Open loop: request i is due at t0 + i/rate; sent when due, whatever the earlier ones did."""
        for due in S.due_times(rate, t0, until):
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            if self.st.in_flight.get(kind, 0) >= S.MAX_IN_FLIGHT:
                self.st.not_sent.append((kind, due))
                continue
            self.st.in_flight[kind] = self.st.in_flight.get(kind, 0) + 1
            task = asyncio.ensure_future(self._one(kind, due))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _one(self, kind: str, due: float) -> None:
        if self._stopping:     # due before the stop, started after it: not sent
            self.st.in_flight[kind] -= 1
            self.st.not_sent.append((kind, due))
            return
        req = Request(kind, due, sent=time.monotonic())
        self.st.requests.append(req)
        target = None
        try:
            if kind == S.WRITES:
                doc = self._new_doc()
                target = doc["_id"]
                self.st.attempted.add(target)
                await self._write(req, doc)
                if req.reason is None:
                    self.st.own.append(target)
            elif kind == S.UPDATES:
                target = self._free_own()
                if target is None:
                    req.reason = "nothing to update"
                    return
                self.st.busy.add(target)
                await self._update(req, target)
            elif kind == S.READS:
                if self._read_urls:
                    await self._get(req, self.rng.choice(self._read_urls))
                else:
                    await self._get(req, f"{db_path(self.db)}/{quote(self.rng.choice(self.st.own), safe='')}")
            else:
                flag = "false" if kind == S.VIEW_READS else "true"
                await self._get(req, f"{self.view_query}&update={flag}",
                                timeout=self.max_seconds if kind == S.VIEW_WAITS else None)
        except asyncio.CancelledError:
            req.reason = "cancelled at stop"
            raise
        except Exception as exc:     # the connection's failure, by reason; the load goes on
            req.reason = _conn_reason(exc)
        finally:
            req.end = time.monotonic()
            self.st.in_flight[kind] -= 1
            if kind == S.UPDATES and target is not None:
                self.st.busy.discard(target)

    def _free_own(self, tries: int = 20) -> str | None:
        """One of the load's documents no update is writing now (a few random picks, not a scan)."""
        own = self.st.own
        for _ in range(tries if own else 0):
            i = own[self.rng.randrange(len(own))]
            if i not in self.st.busy:
                return i
        return None

    async def _answer(self, req: Request, resp) -> Any:
        req.status = resp.status
        body = await resp.read()
        if resp.status >= 400:
            import json

            try:
                err = json.loads(body).get("error")
            except (ValueError, AttributeError):
                err = None
            req.reason = S.reason_of(resp.status, err)
            return None
        return body

    async def _get(self, req: Request, path, timeout: float | None = None) -> Any:
        import aiohttp

        t = self._timeout if timeout is None else aiohttp.ClientTimeout(total=timeout)
        async with self.session.get(path, timeout=t) as resp:
            return await self._answer(req, resp)

    async def _write(self, req: Request, doc: dict) -> None:
        import orjson

        path = f"{db_path(self.db)}/{quote(doc['_id'], safe='')}"
        async with self.session.put(path, data=orjson.dumps(doc), headers=_JSON, timeout=self._timeout) as resp:
            body = await self._answer(req, resp)
        if body is not None:
            rev = orjson.loads(body).get("rev")
            if rev:
                self.st.acked[doc["_id"]] = rev

    async def _update(self, req: Request, doc_id: str) -> None:
        import orjson

        body = await self._get(req, f"{db_path(self.db)}/{quote(doc_id, safe='')}")
        if body is None:
            req.reason = f"read: {req.reason}"
            return
        doc = orjson.loads(body)
        doc["dragnet_load_updates"] = int(doc.get("dragnet_load_updates") or 0) + 1
        await self._write(req, doc)

    def stop(self) -> dict:
        """Stop the load (at once), check every acknowledged write, purge the load's documents; the record."""
        if self.t_build is not None and self.t_build_end is None:
            self.t_build_end = time.monotonic()
        self.t_stop = time.monotonic()
        self._halt()
        record = self.record()
        record["writes_check"] = self.verify()
        return record

    def _halt(self) -> None:
        """Stop sending and wait until nothing can write any more (the writes are checked after)."""
        if self._loop is not None and self._stop is not None:
            try:
                self._loop.call_soon_threadsafe(self._stop.set)
            except RuntimeError:     # the loop already ended (max_seconds)
                pass
        if self._thread is not None:
            # on a saturated machine cancelling hundreds of waiting requests takes a while
            self._thread.join(STOP_S)
            if self._thread.is_alive():
                raise DragnetError(f"the load did not stop within {STOP_S:g} s: its writes cannot be checked")

    # -- afterwards
    def verify(self) -> dict:
        """Every acknowledged write, by id and _rev, against what the database has now."""
        found = self._revs(sorted(self.st.acked))
        later = {}
        for i, rev in self.st.acked.items():    # a newer rev: was the acknowledged one its ancestor?
            if found.get(i) and found[i] != rev and S.rev_generation(found[i]) > S.rev_generation(rev):
                later[i] = self.couch.get(f"{db_path(self.db)}/{quote(i, safe='')}?revs=true").get("_revisions")
        lost = S.lost_writes(self.st.acked, found, later)
        return {"acknowledged": len(self.st.acked), "checked": len(found), "lost": len(lost),
                "superseded_unanswered": sum(1 for i in later if S.descends(self.st.acked[i], later[i])),
                "lost_writes": lost[:20]}

    def _revs(self, ids: list[str]) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for i in range(0, len(ids), KEYS_BATCH):
            rows = self.couch.post(f"{db_path(self.db)}/_all_docs", {"keys": ids[i:i + KEYS_BATCH]})["rows"]
            for r in rows:
                if "key" in r:
                    value = r.get("value") or {}
                    out[r["key"]] = None if r.get("error") or value.get("deleted") else value.get("rev")
        return out

    def purge(self) -> dict:
        """Remove every document the load wrote (acknowledged or not): the database as it was."""
        revs = {i: r for i, r in self._revs(sorted(self.st.attempted)).items() if r}
        purged = 0
        error = None
        items = sorted(revs.items())
        for i in range(0, len(items), PURGE_BATCH):
            try:
                answer = self.couch.post(f"{db_path(self.db)}/_purge", dict((k, [v]) for k, v in items[i:i + PURGE_BATCH]))
                purged += sum(1 for v in (answer.get("purged") or {}).values() if v)
            except (CouchError, CouchUnreachable) as exc:
                error = str(exc).splitlines()[0]
                break
        left = [i for i, r in self._revs(sorted(revs)).items() if r] if revs else []
        return {"written": len(revs), "purged": purged, "left": len(left), "error": error}

    def coverage(self, ddoc_path: str) -> dict:
        """The database's update sequence against the view's (update=false: nothing is built by asking):
        the changes not in the index when the build ended."""
        db_seq = S.seq_number(self.couch.get(db_path(self.db)).get("update_seq"))
        view_seq = S.seq_number((self.couch.get(f"{ddoc_path}/_info").get("view_index") or {}).get("update_seq"))
        return {"db_seq": db_seq, "view_seq": view_seq,
                "changes_not_indexed": None if db_seq is None or view_seq is None else max(0, db_seq - view_seq)}

    def record(self) -> dict:
        """What the load asked and did, per kind and window (`before` the build, during the `build`)."""
        if self._error is not None:
            raise DragnetError(f"the load failed: {self._error}")
        windows = {BEFORE: (self.t_start, self.t_build), BUILD: (self.t_build, self.t_build_end)}
        kinds = {}
        for kind, rate in self.spec.rates:
            per = {}
            for name, (a, b) in windows.items():
                if a is None or b is None or (kind in S.VIEW_KINDS and name == BEFORE):
                    continue
                per[name] = window_figures(self.st.requests, self.st.not_sent, kind, rate, a, b)
            kinds[kind] = {"asked_per_s": rate, **per}
        wall = (self.t_stop or time.monotonic()) - (self.t_start or 0)
        return {"spec": self.spec.text(), "kinds": kinds, "seconds": wall,
                "before_s": (self.t_build - self.t_start) if self.t_build and self.t_start else None,
                "build_s": (self.t_build_end - self.t_build) if self.t_build and self.t_build_end else None,
                "driver": self.driver, "event_loop": self.event_loop, "cpu_s": self.cpu_s, "cpu_share_of_core": (self.cpu_s / wall) if self.cpu_s and wall > 0 else None,
                "seeded": self.seeded, "writes_acknowledged": len(self.st.acked),
                "written_during_build": sum(1 for r in self.st.requests if r.kind in S.WRITE_KINDS and r.reason is None
                                            and r.status and self.t_build and self.t_build_end
                                            and self.t_build <= r.due < self.t_build_end),
                "not_held": [k for k, v in kinds.items() for w in v.values()
                             if isinstance(w, dict) and w.get("held") is False]}


def window_figures(requests: list[Request], not_sent: list, kind: str, rate: float, a: float, b: float) -> dict:
    """One kind in one window [a, b): due, sent, answered, errors by reason (conflicts apart), latency from
    the time due and from the time sent, asked and achieved rate."""
    mine = [r for r in requests if r.kind == kind and a <= r.due < b]
    skipped = sum(1 for k, d in not_sent if k == kind and a <= d < b)
    done = [r for r in mine if r.end is not None and r.reason is None]
    errors: dict[str, int] = {}
    for r in mine:
        if r.reason is not None:
            errors[r.reason] = errors.get(r.reason, 0) + 1
    seconds = b - a
    # achieved: what left in the window (a generator that falls behind sends fewer than were due)
    got = S.achieved(sum(1 for r in requests if r.kind == kind and a <= r.sent < b), seconds)
    return {"seconds": seconds, "due": S.due_count(rate, seconds), "sent": len(mine), "not_sent": skipped,
            "ok": len(done), "conflicts": errors.pop(S.CONFLICT, 0), "errors": errors,
            "achieved_per_s": got, "held": S.held(rate, got) if seconds * rate >= 20 else None,
            "late": S.latency_summary([r.sent - r.due for r in mine]),
            "latency": S.latency_summary([r.end - r.due for r in done]),
            "service": S.latency_summary([r.end - r.sent for r in done])}


def _shape(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if not k.startswith("_")}


def _conn_reason(exc: BaseException) -> str:
    import aiohttp

    if isinstance(exc, asyncio.TimeoutError):
        return "timeout"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return "refused"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "dropped"
    if isinstance(exc, aiohttp.ClientOSError):
        return "reset"
    return type(exc).__name__
