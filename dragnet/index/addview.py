"""`dragnet addview`: put a view into a design document, or benchmark building it from scratch.

Benchmark flow: a fresh design document (never indexed, `"autoupdate": false`) is saved — CouchDB 3.5
compiles the map function then, so a syntax error ends the run here — then a view request in a
background thread starts the build and blocks until it is done, while the main thread polls
`/_active_tasks` every `interval` seconds and pidstat records the processes. Done means: the view
request answered 200 and no indexer task of this design document is left. Any error answer of the view
request ends the run at once with CouchDB's message; `timeout` bounds the whole run.
"""

from __future__ import annotations

import datetime as _dt
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote, urlsplit

from dragnet.index import ddoc as _ddoc
from dragnet.measure import pidstat as _pidstat
from dragnet.measure import poller as poller
from dragnet.results import addview_results as _results
from dragnet.results.record import Build
from dragnet.index import views as _views
from dragnet.index.design import BUILTIN_REDUCES
from dragnet.couchdb.client import Couch, CouchError, CouchUnreachable, db_path, mask_url
from dragnet.errors import DragnetError, UsageError
from dragnet.measure.machine import machine_info
from dragnet.servers.discovery import given_couchdb_home
from dragnet.servers.registry import reads_documents

DEFAULT_TIMEOUT = 6 * 3600.0
STORAGE_CHOICES = ("disk", "tmpfs", "auto")
_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}
# After the view answered, the design document's tasks that were listed then are replicas the answer did not
# wait for (n > 1) or shards mapping their last batch (couch_mrview_updater counts a batch into changes_done
# before mapping it), so the build goes on while they are listed; only tasks that have not changed for this
# long are taken as stuck and left behind. Tasks that start after the answer (a load's view reads updating
# the index) are not the build's.
LINGER_S = 60.0


@dataclass
class Config:
    view_path: str
    db: str
    ddoc: str | None = None
    view: str | None = None
    language: str | None = None
    reduce: str | None = None
    interval: float = 1.0
    timeout: float | None = None
    pidstat: bool = True
    pidstat_pattern: str = _pidstat.DEFAULT_PATTERN
    couchdb_log: str | None = None
    storage: str = "auto"
    results_dir: str | None = "results"
    argv: list[str] = field(default_factory=list)
    # a whole design document (dragnet.index.design.Design) instead of view_path's single view
    design: Any = None
    # save every view's rows (and reduce results) here after the build, for comparing engines
    rows_dir: str | None = None
    # --update N after the build (dragnet.index.update): changes, edit share, batch size, --allow-writes
    update: int = 0
    update_edits: float = 0.5
    update_batch: int = 50
    allow_writes: bool = False
    # iostat on the data's disk during the build (dragnet.measure.build_iostat); off where a scenario records its own
    iostat: bool = True
    # compact the index once built and record its compacted sizes (dragnet.index.compact): the final index size
    compact: bool = False
    # called once the build has ended, before anything after it (a disk sampler stops there: the compaction,
    # rows and updates are not the build's)
    on_built: Callable[[], None] | None = None
    # an application load beside the build (dragnet.load.beside.Beside): started before it, stopped after it
    beside: Any = None
    # beam's activity by the probe (dragnet.measure.beam_probe): True, or why it is off (a memory-limit scenario)
    beam: bool | str = True
    # --profile: perf on CouchDB's processes during the build, folded beside the results (index.build_profile);
    # profile_dir: where the folded file goes when the caller writes the results itself (a bench's folder)
    profile: bool = False
    profile_dir: str | None = None
    profile_kind: str | None = None     # the folded file's name says it (a bench's engine); default the language


# ------------------------------------------------------------------ helpers (pure)

def mask_argv(argv: list[str]) -> list[str]:
    """The command line as it may be recorded: passwords in URLs replaced by ***."""
    out = []
    for a in argv:
        if "://" in a and "@" in a:
            key, sep, val = a.partition("=") if a.startswith("--") else ("", "", a)
            a = f"{key}{sep}{mask_url(val)}"
        out.append(a)
    return out


def is_local(url: str) -> bool:
    return (urlsplit(url).hostname or "") in _LOCAL_HOSTS


def view_query_path(db: str, ddoc: str, view: str, reduce: bool) -> str:
    from urllib.parse import quote

    q = "limit=1" + ("&reduce=false" if reduce else "")
    return f"{_ddoc.ddoc_path(db, ddoc)}/_view/{quote(view, safe='')}?{q}"


# ------------------------------------------------------------------ plain add

def add_view(couch: Couch, cfg: Config) -> dict:
    """Create or update the design document (keeping its other views); returns what was saved."""
    view = _views.load(cfg.view_path, cfg.language)
    view_name = cfg.view or _views.default_view_name(cfg.view_path)
    ddoc_name = cfg.ddoc or view_name
    reduce = _views.load_reduce(cfg.reduce)
    _require_db(couch, cfg.db)
    saved = _ddoc.create_or_update(couch, cfg.db, ddoc_name, view_name, view, reduce=reduce)
    return {"db": cfg.db, "ddoc": saved.ddoc, "view": view_name, "rev": saved.rev, "created": saved.created,
            "views": saved.views, "language": view.language, "known_language": view.known,
            "detected_from": view.detected_from}


def put_design(couch: Couch, cfg: Config) -> dict:
    """Create or replace cfg.design's document in cfg.db (the whole document, as loaded)."""
    design = cfg.design
    _require_db(couch, cfg.db)
    doc = dict(design.doc)
    if cfg.language:
        doc["language"] = _views.design_view(design, cfg.language).language
    existing = _ddoc.get(couch, cfg.db, design.id)
    if existing is not None:
        doc["_rev"] = existing["_rev"]
    try:
        rev = couch.put(_ddoc.ddoc_path(cfg.db, design.id), doc)["rev"]
    except CouchError as exc:
        raise _ddoc.save_error(exc, cfg.db, design.id) from None
    return {"db": cfg.db, "ddoc": design.id, "rev": rev, "created": existing is None, "views": design.view_names,
            "language": doc["language"], "source": design.source}


def _require_db(couch: Couch, db: str) -> dict:
    try:
        return couch.get(db_path(db))
    except CouchError as exc:
        if exc.status == 404:
            raise DragnetError(f"database {db!r} does not exist") from None
        raise


# ------------------------------------------------------------------ environment

def _config(couch: Couch, section: str, key: str) -> str | None:
    try:
        resp = couch.request("GET", f"/_node/_local/_config/{section}/{key}", ok=(200, 404), timeout=10)
    except (CouchError, CouchUnreachable):
        return None
    return resp.json() if resp.status_code == 200 else None


def _resolve(path: str, home: str | None) -> Path:
    p = Path(path)
    return p if p.is_absolute() or not home else Path(home) / p


def detect_storage(couch: Couch, given: str, env: dict | None = None) -> str:
    """The given label; else what the backend that started this CouchDB recorded (`dragnet couch up`: a local
    data dir, a Docker volume or a tmpfs); else, for a local CouchDB, the filesystem of its database_dir;
    else "unknown"."""
    if given in ("disk", "tmpfs"):
        return given
    if not is_local(couch.url):
        return "unknown"
    recorded = _managed_storage(couch.url, env)
    if recorded:
        return recorded
    from dragnet.couchdb.storage import storage_label

    home = given_couchdb_home(env)
    candidates = []
    configured = _config(couch, "couchdb", "database_dir")
    if configured:
        candidates.append(_resolve(configured, home))
    if home:
        candidates.append(Path(home) / "data")
    for c in candidates:
        if c.is_dir():
            try:
                return storage_label(c)
            except DragnetError:
                return "unknown"
    return "unknown"


def find_log(couch: Couch, explicit: str | None, env: dict | None = None) -> Path | None:
    """CouchDB's log file: --couchdb-log; else, for a local CouchDB, the log of one started by
    `dragnet couch up`, the configured [log] file, DRAGNET_COUCHDB_HOME/var/log/couchdb.log or couchdb.log."""
    if explicit:
        p = Path(explicit)
        if not p.is_file():
            raise UsageError(f"CouchDB log not found: {p}")
        return p
    if not is_local(couch.url):
        return None
    home = given_couchdb_home(env)
    candidates = []
    managed = _managed_log(couch.url, env)       # a CouchDB started by `dragnet couch up` logs to a file
    if managed:
        candidates.append(managed)
    if _config(couch, "log", "writer") == "file":
        f = _config(couch, "log", "file")
        if f:
            candidates.append(_resolve(f, home))
    if home:
        candidates += [Path(home) / "var" / "log" / "couchdb.log", Path(home) / "couchdb.log"]
    return next((c for c in candidates if c.is_file()), None)


def _managed(url: str, env: dict | None):
    """The instance `dragnet couch up` recorded for the CouchDB at url, or None."""
    from dragnet.couchdb import control as ctl

    try:
        return ctl.load_state(urlsplit(url).port or 5984, env)
    except DragnetError:
        return None


def _managed_storage(url: str, env: dict | None) -> str | None:
    inst = _managed(url, env)
    return inst.storage if inst is not None and inst.storage in ("disk", "tmpfs") else None


def _managed_log(url: str, env: dict | None) -> Path | None:
    inst = _managed(url, env)
    return Path(inst.log) if inst is not None and inst.backend == "local" and inst.log else None


def _user_server(language: str) -> dict:
    """{"query_server": ...} when a user-given server (--server) runs `language`: what ran and its version."""
    from dragnet.servers import user

    own = user.find(language)
    if own is None:
        return {}
    return {"query_server": {"name": own.name, "language": own.language, "command": list(own.argv),
                             "dialect": own.dialect, "source": own.source, "version": user.probe_version(own)}}


def _managed_container(url: str, env: dict | None) -> bool:
    """Whether the CouchDB at url is a container dragnet started (`couch up --backend docker`)."""
    inst = _managed(url, env)
    return inst is not None and inst.backend == "docker"


class ContainerLogWatch:
    """Reads what a CouchDB container dragnet started writes from now on (its log goes to the container's
    output, and so does its query servers' stderr)."""

    def __init__(self, port: int, env: dict | None):
        self.port, self.env, self.since = port, env, time.time()
        self.path = f"the output of the container on port {port}"   # what the results name as the log

    def new_lines(self) -> list[str] | None:
        from dragnet.couchdb.docker import container_log_lines

        return container_log_lines(self.port, self.since, self.env)


class LogWatch:
    """Reads what CouchDB appends to its log from now on."""

    def __init__(self, path: Path | None):
        self.path = path
        self.offset = 0
        if path is not None:
            try:
                self.offset = path.stat().st_size
            except OSError:
                self.path = None

    def new_lines(self) -> list[str] | None:
        if self.path is None:
            return None
        try:
            with open(self.path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                fh.seek(self.offset if size >= self.offset else 0)   # rotated: read the new file whole
                data = fh.read()
        except OSError:
            return None
        return data.decode("utf-8", errors="replace").splitlines()


def couchdb_root_pid(port: int) -> int | None:
    """The local CouchDB's root process: the port's listener, or, when that is Docker's port proxy, the
    init process of the container dragnet published on the port (so beam and query servers are seen)."""
    pid = _pidstat.listening_pid(port)
    if pid is not None and _pidstat.process_name(pid) == "docker-proxy":
        from dragnet.couchdb import docker as couchdb_docker

        return couchdb_docker.container_root_pid(port)
    return pid


def _cpu_snapshot(root: int | None):
    from dragnet.measure import cpu as _cpu

    if root is None:
        return None
    try:
        return _cpu.Snapshot.take(root)
    except OSError:   # CouchDB gone meanwhile: the build fails on its own
        return None


def _cpu_record(before, after, docs: int | None) -> dict | None:
    """CPU of CouchDB and its query servers over the build (dragnet.measure.cpu), per 1,000 documents."""
    from dragnet.measure import cpu as _cpu

    if before is None or after is None:
        return None
    out = _cpu.usage(before, after)
    out["cpu_s_per_1000_docs"] = round(out["cpu_s"] / docs * 1000, 6) if docs else None
    return out


def _qs_tracker(root: int | None):
    """The query servers' own CPU over the build (dragnet.measure.cpu.QueryServerTracker), or None."""
    from dragnet.measure import cpu as _cpu

    return _cpu.QueryServerTracker(root).start() if root is not None else None


def _beam_probe(url: str, setting: bool | str, env: dict | None):
    """beam's activity over the build (dragnet.measure.beam_probe), not yet started; off says why in the results."""
    from dragnet.measure.beam_probe import BuildBeam

    paused = setting if isinstance(setting, str) else None if setting else "turned off for this build"
    return BuildBeam(url, env, paused=paused)


def _per_1000(used: dict, docs: int | None) -> dict:
    return {**used, "cpu_s_per_1000_docs": round(used["cpu_s"] / docs * 1000, 9) if docs else None}


class ProcessScope:
    """The local CouchDB's processes (beam and its descendants), gathered at every poll so query servers
    that come and go are caught; pidstat's summary is limited to them on a shared machine. On a local
    cluster dragnet started (dragnet.couchdb.cluster), every node's processes, kept apart per node."""

    def __init__(self, url: str, env: dict | None = None):
        from dragnet.couchdb import cluster as cluster

        port = urlsplit(url).port or 5984
        self.root = couchdb_root_pid(port) if is_local(url) else None
        recorded = cluster.recorded(port, env) if self.root is not None else None
        self.roots: dict[str, int] = {}
        for node in (recorded or {}).get("nodes", []):
            pid = couchdb_root_pid(node["port"])
            if pid is not None:
                self.roots[node["name"]] = pid
        self.by_node: dict[str, set[int]] = {name: set() for name in self.roots}
        self.pids: set[int] = set()
        self.refresh()

    def refresh(self) -> None:
        for name, root in ([("", self.root)] if self.root is not None else []) + list(self.roots.items()):
            try:
                tree = _pidstat.process_tree(root)
            except OSError:
                continue
            self.pids |= tree
            if name:
                self.by_node[name] |= tree

    def as_dict(self) -> dict | None:
        if self.root is None:
            return None
        out: dict = {"root_pid": self.root, "pids": sorted(self.pids)}
        if self.roots:
            out["nodes"] = {name: {"root_pid": self.roots[name], "pids": sorted(pids)}
                            for name, pids in self.by_node.items()}
        return out


# ------------------------------------------------------------------ the view request

def is_request_timeout(exc: CouchError) -> bool:
    """CouchDB's own answer when a view request outlives [fabric] request_timeout while the index builds."""
    return exc.status == 500 and exc.error == "timeout"


def get_until_built(couch: Couch, path: str, timeout: float, *, ok: tuple[int, ...] | None = None,
                    on_reissue: Callable[[], None] | None = None):
    """GET a view path that waits for its index, sent again each time CouchDB gives up waiting ([fabric]
    request_timeout, 60 s by default: the indexer goes on regardless), until `timeout` seconds are spent."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return couch.request("GET", path, ok=ok, timeout=max(1.0, deadline - time.monotonic()))
        except CouchError as exc:
            if not (is_request_timeout(exc) and time.monotonic() < deadline - 1):
                raise
            if on_reissue is not None:
                on_reissue()


class ViewRequest(threading.Thread):
    """GET _view/<v>?limit=1 in the background: it returns only once the index is built."""

    def __init__(self, couch: Couch, path: str, timeout: float):
        super().__init__(daemon=True, name="dragnet-view-request")
        # a session of its own: requests sessions are not shared across threads
        self.couch = Couch(url=couch.url, user=couch.user, timeout=timeout)
        self.couch.session.auth = couch.session.auth
        self.couch.session.headers.update(couch.session.headers)
        self.path, self.timeout = path, timeout
        self.t_trigger: float | None = None
        self.t_return: float | None = None
        self.status: int | None = None
        self.body: dict | None = None
        self.error: DragnetError | None = None
        # times CouchDB gave up waiting for the index (fabric's request timeout, 60 s by default) and
        # the request was sent again: the indexer goes on regardless, so a long build is not a failure
        self.reissued_at: list[float] = []
        self.done = threading.Event()

    def run(self) -> None:
        self.t_trigger = time.time()
        try:
            resp = get_until_built(self.couch, self.path, self.timeout, ok=(200,),
                                   on_reissue=lambda: self.reissued_at.append(time.time()))
            self.status = resp.status_code
            self.body = resp.json()
        except CouchError as exc:
            self.status, self.error = exc.status, exc
        except CouchUnreachable as exc:
            self.error = exc
        except Exception as exc:     # noqa: BLE001 - any failure must end the run, not hang it
            self.error = DragnetError(f"view request failed: {exc}")
        finally:
            self.t_return = time.time()
            self.done.set()


# ------------------------------------------------------------------ benchmark

PollCallback = Callable[[poller.Tracker, dict], None]


@dataclass
class Outcome:
    results: dict
    path: Path | None
    figures: poller.BuildFigures


class BuildFailed(DragnetError):
    """The build started but failed; .results holds everything recorded up to the failure."""

    def __init__(self, message: str, results: dict, path: Path | None):
        super().__init__(message)
        self.results, self.path = results, path


def benchmark(*, url: str, db: str, view_path: str, language: str | None = None, ddoc: str | None = None,
              view: str | None = None, reduce: str | None = None, storage: str = "auto", interval: float = 1.0,
              timeout: float | None = None, pidstat: bool = True, pidstat_pattern: str = _pidstat.DEFAULT_PATTERN,
              couchdb_log: str | None = None, results_dir: str | None = None,
              argv: list[str] | None = None, design: Any = None, rows_dir: str | None = None,
              iostat: bool = True, compact: bool = False, on_built: Callable[[], None] | None = None,
              beside: Any = None, beam: bool | str = True, profile: bool = False,
              profile_dir: str | None = None, profile_kind: str | None = None) -> dict:
    """One benchmark build as a library call: the results dict, also for a build that failed midway
    (summary.ok false). Errors before the build starts (bad file, compilation error) raise DragnetError."""
    from dragnet.couchdb.client import connect

    cfg = Config(view_path=view_path, db=db, ddoc=ddoc, view=view, language=language, reduce=reduce,
                 interval=interval, timeout=timeout, pidstat=pidstat, pidstat_pattern=pidstat_pattern,
                 couchdb_log=couchdb_log, storage=storage if storage in STORAGE_CHOICES else "auto",
                 results_dir=results_dir, argv=argv or ["dragnet.index.addview.benchmark", view_path], design=design,
                 rows_dir=rows_dir, iostat=iostat, compact=compact, on_built=on_built, beside=beside,
                 beam=beam, profile=profile, profile_dir=profile_dir, profile_kind=profile_kind)
    try:
        out = run_benchmark(connect(url), cfg)
    except BuildFailed as exc:
        return exc.results
    if storage not in STORAGE_CHOICES and storage != "unknown":     # a caller's own label is kept as given
        out.results["storage"] = out.results["summary"]["storage"] = storage
    return out.results


def run_benchmark(couch: Couch, cfg: Config, *, on_poll: PollCallback | None = None,
                  on_note: Callable[[str], None] | None = None, env: dict | None = None) -> Outcome:
    """Build the view from scratch and measure it. Raises BuildFailed (after writing the results file)
    when the build started and failed, DragnetError when it could not start."""
    note = on_note or (lambda _msg: None)
    if cfg.update:
        from dragnet.index import update as _update

        _update.check_allowed(couch, cfg.db, cfg.allow_writes)    # before the build, not after it
    if cfg.interval <= 0:
        raise UsageError(f"--interval must be positive, got {cfg.interval}")
    if cfg.storage not in STORAGE_CHOICES:
        raise UsageError(f"--storage must be one of {', '.join(STORAGE_CHOICES)}, got {cfg.storage!r}")
    timeout = cfg.timeout if cfg.timeout else DEFAULT_TIMEOUT
    t_begin = time.time()
    deadline = t_begin + timeout

    design = cfg.design
    if design is not None:
        view = _views.design_view(design, cfg.language)
        view_name = cfg.view or design.view_names[0]     # querying one view builds all of them
        reduce = design.reduce_of(view_name)
    else:
        view = _views.load(cfg.view_path, cfg.language)
        view_name = cfg.view or _views.default_view_name(cfg.view_path)
        reduce = _views.load_reduce(cfg.reduce)
    maps_only = not reads_documents(view.language)
    if maps_only:       # the ceiling: CouchDB's own built-in reduces stay, a reduce function cannot run on it
        reduce = reduce if reduce in BUILTIN_REDUCES else None
        note(f"{view.language}: reads no document and emits one fixed row per document; only the maps (and "
             f"built-in reduces) are built on it")
    ddoc_name = cfg.ddoc or _ddoc.unique_name(view.language, view_name if design is None
                                              else design.id[len("_design/"):])
    ident = _ddoc.ddoc_id(ddoc_name)
    if not view.known:
        note(f"language {view.language!r} is not one dragnet knows; CouchDB will judge it")

    server = couch.version()
    db_info = _require_db(couch, cfg.db)
    storage = detect_storage(couch, cfg.storage, env)
    if cfg.couchdb_log or not _managed_container(couch.url, env):
        log = LogWatch(find_log(couch, cfg.couchdb_log, env))
    else:   # a container dragnet started logs to its output, not to a file
        log = ContainerLogWatch(urlsplit(couch.url).port or 5984, env)

    nonce = f"{time.time():.6f}-{os.getpid()}-{ident}"
    if design is not None:
        from dragnet.index import design as _design

        doc = _design.benchmark_copy(design, ident, language=view.language, nonce=nonce, maps_only=maps_only)
    else:
        doc = _ddoc.build(ident, view_name, view, reduce=reduce, autoupdate=False, nonce=nonce)
    qs_before = _qs_stats(couch)
    saved = _ddoc.create_fresh(couch, cfg.db, doc)      # compilation errors end the run here
    runner: _pidstat.PidstatRunner | None = None
    io = None
    beam = None
    prof = None
    try:
        if log.path is None:   # said only once the ddoc compiled, so an error stays the first line
            note("CouchDB's log is not visible here: exceptions raised by the map function are not counted "
                 "(give --couchdb-log FILE)")
        info_before = _safe_get(couch, f"{_ddoc.ddoc_path(cfg.db, ident)}/_info") or {}
        seq_before = (info_before.get("view_index") or {}).get("update_seq")
        if seq_before not in (None, 0, "0"):
            raise DragnetError(f"the index of {ident} is not new (update_seq {seq_before}): CouchDB shares it with "
                               f"another design doc; nothing to measure")

        # the probe first: its start (a second or so) stays out of the load's window, pidstat's and iostat's
        beam = _beam_probe(couch.url, cfg.beam, env)
        beam.start()      # bound first: a signal during the start still finds it to abort
        if cfg.beside is not None:      # the window before the build: the load alone
            cfg.beside.start(couch, cfg.db)
        pidstat_note = None
        scope = ProcessScope(couch.url) if cfg.pidstat else None
        if cfg.pidstat:
            if _pidstat.PidstatRunner.available():
                # bound before it starts, so an interrupt at any point after finds it to stop
                runner = _pidstat.PidstatRunner(cfg.pidstat_pattern, max(1, round(cfg.interval)))
                runner.start()
            else:
                pidstat_note = "pidstat not found (install sysstat): no process resources recorded"
                note(pidstat_note)
        else:
            pidstat_note = "disabled (--no-pidstat)"

        if cfg.iostat:
            from dragnet.measure.build_iostat import BuildIostat

            io = BuildIostat(couch, couch.url, env).start()
        path = view_query_path(cfg.db, ident, view_name, reduce is not None)
        request = ViewRequest(couch, path, timeout=max(1.0, deadline - time.time()))
        tracker = poller.Tracker(ident)
        polls: list[dict] = []
        error: DragnetError | None = None
        cpu_root = scope.root if scope else ProcessScope(couch.url).root
        beam.begin()
        cpu_before = _cpu_snapshot(cpu_root)
        qs_cpu = _qs_tracker(cpu_root)
        if cfg.profile:
            from dragnet.index.build_profile import BuildProfile

            prof = BuildProfile(couch.url, cpu_root, bound_s=deadline - time.time())
            prof.start()      # bound first: a signal during the start still finds it to clean up
        request.start()
        if cfg.beside is not None:
            cfg.beside.begin(path)
        try:
            error = _poll_until_done(couch, request, tracker, polls, cfg.interval, deadline, timeout, on_poll,
                                     scope.refresh if scope else None)
        finally:
            t_end = time.time()
            if prof is not None:
                prof.stop()
            cpu_after = _cpu_snapshot(cpu_root)
            qs_cpu_used = qs_cpu.stop() if qs_cpu is not None else None
            text = runner.stop() if runner else None     # pidstat covers exactly the build
            io_text = io.stop() if io else ""
            beam_record = beam.stop()
            if cfg.on_built is not None:
                cfg.on_built()
        load_record = None
        if cfg.beside is not None:    # stopped, checked and purged before anything reads the view again
            load_record, lost = cfg.beside.end(_ddoc.ddoc_path(cfg.db, ident))
            error = error or (DragnetError(lost) if lost else None)
        qs_after = _qs_stats(couch)

        samples = summary_ps = None
        per_node_ps: dict = {}
        if text is not None:
            parsed = _pidstat.parse(text)
            samples = parsed.samples
            scope.refresh()
            summary_ps = _pidstat.summarize(samples, exclude_pids={os.getpid(), runner.pid or -1},
                                            only_pids=scope.pids if scope.root is not None else None)
            per_node_ps = {name: _pidstat.summarize(samples, only_pids=pids)
                           for name, pids in scope.by_node.items()}
            if not samples:
                pidstat_note = f"pidstat saw no process matching {cfg.pidstat_pattern!r}"

        rows = (request.body or {}).get("total_rows") if request.status == 200 else None
        after = _safe_get(couch, db_path(cfg.db)) or {}
        info = _safe_get(couch, f"{_ddoc.ddoc_path(cfg.db, ident)}/_info") or {}
        lines = log.new_lines()
        exceptions = (_results.count_logged_exceptions(lines, (request.t_trigger or t_begin) - 1, t_end + 1)
                      if lines is not None else None)
        ok = error is None
        # a failed build: what its query servers wrote to stderr (in the log of a CouchDB logging to stderr)
        qs_stderr = _results.stderr_lines(lines) if error is not None and lines is not None else None
        wall = (request.t_return - request.t_trigger) if ok and request.t_return and request.t_trigger else None
        res = _results.build_results(
            started_at=_dt.datetime.fromtimestamp(request.t_trigger or t_begin, _dt.timezone.utc).isoformat(),
            command=mask_argv(cfg.argv),
            couchdb=server,
            machine=machine_info(),
            storage=storage,
            db={"name": cfg.db, "doc_count": after.get("doc_count", db_info.get("doc_count")),
                "shards": (db_info.get("cluster") or {}).get("q"), "replicas": (db_info.get("cluster") or {}).get("n"),
                "nodes": (_safe_get(couch, "/_membership") or {}).get("cluster_nodes"), "url": couch.url},
            view={"path": design.source if design is not None else cfg.view_path, "language": view.language,
                  "ddoc": ident, "view": view_name, "reduce": reduce, "source": view.source, "dialect": view.dialect,
                  "detected_from": view.detected_from, "rev": saved.rev,
                  **({"maps_only": {v: (d.get("reduce") or None) for v, d in doc["views"].items() if v != "lib"}}
                     if maps_only else {}),
                  **({"design": {"id": design.id, "source": design.source, "views": design.view_names,
                                 "reduces": {v: design.reduce_of(v) for v in design.view_names},
                                 "lib": design.has_lib(), "options": design.doc.get("options"),
                                 "language": design.language, "doc": design.doc}}
                     if design is not None else {})},
            polls=polls,
            wall_time_s=wall,
            docs=after.get("doc_count") if ok else None,
            rows=rows,
            ok=ok,
            error=(f"{error}; query server stderr: {qs_stderr.splitlines()[-1]}" if error and qs_stderr
                   else str(error) if error else None),
            pidstat_samples=samples,
            pidstat_summary=summary_ps,
            pidstat_note=pidstat_note,
            qs_before=qs_before,
            qs_after=qs_after,
            exceptions_logged=exceptions,
            query_server_stderr=qs_stderr,
            extra={"trigger": {"path": path, "t_trigger": request.t_trigger, "t_return": request.t_return,
                               "status": request.status, "t_end": t_end, "reissued_at": request.reissued_at},
                   "index": info.get("view_index"),
                   "pidstat_command": runner.argv if runner else None,
                   "pidstat_scope": scope.as_dict() if scope else None,
                   "couchdb_log": str(log.path) if log.path else None,
                   **_user_server(view.language)},
        )
        if io is not None:
            res["iostat"] = io.record(io_text)
        res["beam_activity"] = beam_record
        if prof is not None:
            from dragnet.index.build_profile import folded_name

            if scope is not None:
                scope.refresh()
            pids = scope.pids if scope is not None else (_pidstat.process_tree(cpu_root) if cpu_root else set())
            res["profile"] = prof.record(pids, cfg.profile_dir or cfg.results_dir,
                                         folded_name(cfg.db, cfg.profile_kind or view.language))
        if load_record is not None:
            res["load"] = load_record
        res["cpu"] = _cpu_record(cpu_before, cpu_after, res["summary"].get("docs"))
        res["summary"]["cpu_s_per_1000_docs"] = (res["cpu"] or {}).get("cpu_s_per_1000_docs")
        if res["cpu"] is not None and qs_cpu_used is not None:
            res["cpu"]["query_servers"] = _per_1000(qs_cpu_used, res["summary"].get("docs"))
            res["summary"]["qs_cpu_s_per_1000_docs"] = res["cpu"]["query_servers"]["cpu_s_per_1000_docs"]
        if not error and cfg.compact:
            from dragnet.index.compact import compact_index

            compacted = compact_index(couch, cfg.db, ident, timeout=max(60.0, deadline - time.time()))
            res["sizes"] = {**(res.get("sizes") or {}), "compacted": compacted}
            if compacted.get("error"):
                note(compacted["error"])
        if per_node_ps and res.get("pidstat") is not None:
            res["pidstat"]["per_node"] = per_node_ps
        if error:
            # a failed build's design doc is of no use and would hold a half-built index: remove it
            res["view"]["deleted_after_failure"] = _delete_ddoc(couch, cfg.db, ident, saved.rev)
        if not error and cfg.rows_dir:
            from dragnet.index import rows as _rows

            res["rows"] = _rows.dump(couch, db_path(cfg.db), ident, doc["views"], Path(cfg.rows_dir))
        if not error and cfg.update:
            from dragnet.index import update as _update

            upd = _update.run(couch, cfg.db, ident, [v for v in doc["views"] if v != "lib"], cfg.update,
                              edit_share=cfg.update_edits, batch=cfg.update_batch, allow_writes=cfg.allow_writes,
                              on_note=on_note)
            res["update"] = upd.as_dict()
            res["summary"]["update_lag_s"] = upd.lag_s
            res["summary"]["incremental_docs_per_sec"] = upd.incremental_docs_per_sec
        if not error and (design is not None or cfg.ddoc is None):
            # the benchmark's own design doc (a fresh name, or a design doc's copy) and its index are deleted
            # once measured: the database keeps only what it had, and what the user named
            res["view"]["deleted_after_benchmark"] = _delete_ddoc(couch, cfg.db, ident, saved.rev)
    except BaseException:
        # interrupted (Ctrl-C, SIGTERM, SIGHUP) or crashed mid-build: the load stops first, then pidstat and
        # the fresh design doc go too
        # each step on its own: one that fails (a tool caught half-started) never skips the rest, nor hides
        # the interrupt; the load's documents are named by their id prefix
        steps = [cfg.beside.abort if cfg.beside is not None else None,
                 (lambda: runner.stop(first_report=False)) if runner is not None else None,
                 (lambda: io.stop(first_report=False)) if io is not None else None,
                 beam.abort if beam is not None else None,
                 prof.abort if prof is not None else None,
                 lambda: _delete_ddoc(couch, cfg.db, ident, saved.rev)]
        for step in filter(None, steps):
            try:
                step()
            except Exception:      # noqa: BLE001
                pass
        raise
    out = _results.write_results(res, cfg.results_dir) if cfg.results_dir else None
    if error:
        where = f" (results in {out})" if out else ""
        raise BuildFailed(f"{error}{where}", res, out)
    return Outcome(results=res, path=out, figures=poller.analyze(polls, ident))


def _delete_ddoc(couch: Couch, db: str, ident: str, rev: str) -> bool:
    """Delete the design doc dragnet created and ask CouchDB to drop the index files no design doc uses any
    more (they stay on disk until then); False when CouchDB could not be told."""
    try:
        couch.request("DELETE", f"{_ddoc.ddoc_path(db, ident)}?rev={rev}", ok=(200, 202, 404, 409), timeout=30)
    except (CouchError, CouchUnreachable):
        return False
    try:
        couch.request("POST", f"{db_path(db)}/_view_cleanup", json={}, ok=(200, 202), timeout=30)
    except (CouchError, CouchUnreachable):
        pass        # the files then wait for CouchDB's own cleanup; the design doc is gone either way
    return True


def task_states(tasks: list[dict]) -> tuple:
    """What a poll shows of the tasks, to see whether any moved since the last poll."""
    return tuple(sorted((*poller.task_key(t), t.get("changes_done"), t.get("updated_on")) for t in tasks))


def build_over(left: list[dict], now: float, answered_at: float, changed_at: float) -> bool:
    """After the view answered: over when none of the tasks listed at the answer is left, or when those left
    have not moved for LINGER_S since the answer (or since they last moved, if later)."""
    return not left or now - max(answered_at, changed_at) > LINGER_S


def _poll_until_done(couch: Couch, request: ViewRequest, tracker: poller.Tracker, polls: list[dict],
                     interval: float, deadline: float, timeout: float,
                     on_poll: PollCallback | None, each_poll: Callable[[], None] | None = None) -> DragnetError | None:
    answered_at: float | None = None
    left: set[tuple[str, str]] = set()      # the tasks listed when the view answered
    seen: tuple = ()
    changed_at = 0.0
    next_poll = time.time()
    while True:
        t = time.time()
        try:
            tasks = couch.get("/_active_tasks", timeout=max(30.0, 5 * interval))  # 5 s timed out at load 80
        except CouchUnreachable as exc:
            return DragnetError(f"CouchDB stopped answering during the build: {exc}")
        except CouchError as exc:
            return exc
        poll = {"t": t, "tasks": tasks if isinstance(tasks, list) else []}
        polls.append(poll)
        tracker.add(poll)
        if each_poll:
            each_poll()
        if on_poll:
            on_poll(tracker, poll)
        ours = poller.indexer_tasks(poll["tasks"], tracker.ddoc)
        if request.done.is_set():
            if request.error is not None:
                return request.error
            if answered_at is None:
                answered_at, left = time.time(), {poller.task_key(x) for x in ours}
            mine = [x for x in ours if poller.task_key(x) in left]
            if (now_seen := task_states(mine)) != seen:
                seen, changed_at = now_seen, t
            if build_over(mine, time.time(), answered_at, changed_at):
                return None
        now = time.time()
        if now >= deadline:
            return DragnetError(f"the build did not finish within --timeout {timeout:g} s "
                                f"({tracker.changes_done} of {tracker.total_changes} changes done)")
        next_poll += interval
        if next_poll < now:
            next_poll = now
        # wake early when the view answers, so the end is seen at once
        if not request.done.is_set():
            request.done.wait(max(0.0, min(next_poll, deadline) - now))
        else:
            time.sleep(max(0.0, min(next_poll, deadline) - now))


def _qs_stats(couch: Couch) -> dict | None:
    """Query-server counters as recorded: {"t", "status", "body"}; None when the node does not answer.
    On a cluster, every node's counters summed in "body" (each node's own under "per_node")."""
    t = time.time()
    try:
        nodes = (_safe_get(couch, "/_membership") or {}).get("cluster_nodes") or []
        if len(nodes) > 1:
            per_node = {n: couch.get(f"/_node/{quote(n, safe='@.')}/_stats/couchdb/query_server", timeout=10)
                        for n in nodes}
            return {"t": t, "status": 200, "body": _results.sum_counters(list(per_node.values())),
                    "per_node": per_node}
        resp = couch.request("GET", "/_node/_local/_stats/couchdb/query_server", ok=(200,), timeout=10)
    except (CouchError, CouchUnreachable):
        return None
    return {"t": t, "status": resp.status_code, "body": resp.json()}


def _safe_get(couch: Couch, path: str) -> dict | None:
    try:
        got = couch.get(path, timeout=30)
    except (CouchError, CouchUnreachable):
        return None
    return got if isinstance(got, dict) else None
