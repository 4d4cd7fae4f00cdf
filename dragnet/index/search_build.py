"""One Nouveau (search) index build in CouchDB, measured like a view build.

A fresh design document holds the `nouveau` index; one search request (`q=*:*`, which waits until the index
is up to date) triggers the build. Meanwhile `/_active_tasks` (CouchDB's `search_indexer` task per shard:
changes_done of total_changes) and `/db/_design/D/_nouveau_info/NAME` (the index's num_docs and disk_size as
the JVM reports them) are polled. CPU comes from the kernel's counters (/proc or the cgroup) of beam's tree
(beam and the query servers it spawned) and of the JVM, taken before the trigger and after the answer.
Exceptions raised by index() are counted from CouchDB's log, one line per document, as CouchDB logs them.
Afterwards a few queries record their hit counts and ids, so builds on different engines can be compared.

Talks to CouchDB over HTTP and reads /proc; `per_shard`, `split`, `count_index_errors` and `compare_answers`
are pure.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable
from urllib.parse import quote, urlsplit

from dragnet.index import addview as _addview
from dragnet.couchdb import search_server as _server
from dragnet.couchdb.client import Couch, CouchError, CouchUnreachable, db_path, mask_url
from dragnet.errors import DragnetError, UsageError
from dragnet.measure import cgroup as _cgroup
from dragnet.measure import cpu as _cpu
from dragnet.measure import pidstat as _pidstat
from dragnet.measure.machine import load_average, machine_info
from dragnet.measure.poller import shard_range, task_key
from dragnet.results import schema as _schema

LANGUAGES = ("javascript", "javascript_quickjs")
DEFAULT_QUERIES = ("*:*",)
HITS_LIMIT = 200          # hits fetched per check query: ids compared when all hits fit
TASK_TYPE = "search_indexer"
PROGRESS_SOURCE = ("/_active_tasks (search_indexer tasks, per shard) and /db/_design/D/_nouveau_info/NAME "
                   "(num_docs, disk_size)")
# beam's tree minus what is not the query servers' (erl_child_setup's counters hold exited children)
_NOT_QS = frozenset({"beam.smp", "epmd", "memsup", "cpu_sup", "inet_gethost", "sh", "couchdb", "tini"})
JVM_FAMILY = "jvm"        # the Nouveau server's processes in the pidstat summary
_INDEX_ERROR = re.compile(r"function raised exception .* with doc\._id (\S+)")


@dataclass(frozen=True)
class Index:
    """One Nouveau index definition: its name and the design doc's `nouveau` entry."""

    name: str
    definition: dict


def load_indexes(path: str | os.PathLike) -> list[Index]:
    """A `.js` file is one index() function (named after the file); a `.json` file is a design doc's
    `nouveau` section ({"NAME": {"index": "function (doc) {...}", ...}}) or a design doc holding one."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--nouveau {p}: cannot read it ({exc.strerror})") from None
    if p.suffix == ".json":
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise UsageError(f"--nouveau {p}: not JSON ({exc})") from None
        section = data.get("nouveau") if isinstance(data, dict) and "nouveau" in data else data
        if not isinstance(section, dict) or not section or not all(
                isinstance(v, dict) and isinstance(v.get("index"), str) for v in section.values()):
            raise UsageError(f"--nouveau {p}: expected {{\"NAME\": {{\"index\": \"function (doc) {{...}}\"}}}}")
        return [Index(k, dict(v)) for k, v in section.items()]
    if "function" not in text:
        raise UsageError(f"--nouveau {p}: no index function in it")
    name = re.sub(r"[^A-Za-z0-9_]", "_", p.stem) or "search"
    return [Index(name, {"index": text.strip()})]


# ------------------------------------------------------------------ pure

def fresh_definition(definition: dict, nonce: str) -> dict:
    """The index with an analyzer for a field no document has: CouchDB names a Nouveau index by the hash of
    its default analyzer, field analyzers and function (not the language), so without it a second build of
    the same function, on any engine, would reuse the first one's index and measure nothing."""
    analyzers = dict(definition.get("field_analyzers") or {})
    analyzers[f"dragnet_nonce_{nonce}"] = "keyword"
    return {**definition, "field_analyzers": analyzers}


@dataclass
class Shard:
    shard: str
    node: str
    total_changes: int
    changes_done: int
    started_on: float
    updated_on: float

    @property
    def seconds(self) -> float:
        return max(0.0, self.updated_on - self.started_on)

    @property
    def docs_per_s(self) -> float | None:
        return self.changes_done / self.seconds if self.seconds > 0 else None


def search_tasks(tasks: Iterable[dict], ddoc_id: str, name: str | None = None) -> list[dict]:
    return [t for t in tasks if isinstance(t, dict) and t.get("type") == TASK_TYPE
            and t.get("design_document") == ddoc_id and (name is None or t.get("index") == name)]


def per_shard(polls: Iterable[dict], ddoc_id: str, name: str) -> list[Shard]:
    """The latest observation of each search_indexer task (by node and pid). A task gone from a later poll
    ran to its end: its changes_done is then its total_changes."""
    seen: dict[tuple[str, str], dict] = {}
    finished: set[tuple[str, str]] = set()
    for poll in polls:
        now = {task_key(t): t for t in search_tasks(poll.get("tasks") or [], ddoc_id, name)}
        finished |= set(seen) - set(now)
        finished -= set(now)
        seen.update(now)
    out = []
    for key, t in seen.items():
        total, done = int(t.get("total_changes") or 0), int(t.get("changes_done") or 0)
        out.append(Shard(shard_range(str(t.get("database", ""))), key[0], total,
                         max(done, total) if key in finished else done,
                         float(t.get("started_on") or 0), float(t.get("updated_on") or 0)))
    return sorted(out, key=lambda s: (s.shard, s.node))


def count_index_errors(lines: Iterable[str]) -> dict:
    """index() exceptions as CouchDB's main.js logs them ("function raised exception … with doc._id X"):
    one per document and index function."""
    ids = [m.group(1) for line in lines if (m := _INDEX_ERROR.search(line))]
    return {"count": len(ids), "docs": len(set(ids)), "first_ids": sorted(set(ids))[:5]}


def split(wall_s: float, cores: int, qs_cpu_s: float | None, beam_cpu_s: float | None,
          jvm_cpu_s: float | None) -> dict:
    """Core-time of one build (wall × cores) split into the query servers', beam's and the JVM's CPU and
    the rest (waiting: I/O, HTTP round trips, the run queue, idle cores); also each as a share of the wall
    (a pipeline's slowest stage is the one near 100% of it)."""
    parts = {"qs_cpu_s": qs_cpu_s, "beam_cpu_s": beam_cpu_s, "jvm_cpu_s": jvm_cpu_s}
    busy = sum(v for v in parts.values() if v is not None)
    total = wall_s * cores
    out = {**{k: None if v is None else round(v, 4) for k, v in parts.items()},
           "waiting_s": round(max(0.0, total - busy), 4), "wall_s": round(wall_s, 4), "cores": cores}
    out["of_core_time"] = {k[:-2]: None if v is None or not total else round(v / total, 4)
                           for k, v in [*parts.items(), ("waiting_s", out["waiting_s"])]}
    out["of_wall"] = {k[:-2]: None if v is None or not wall_s else round(v / wall_s, 4) for k, v in parts.items()}
    return out


def process_summary(samples: list[dict], couchdb_pids: set[int], jvm_pids: set[int],
                    exclude: set[int] = frozenset()) -> dict:
    """pidstat's samples of this build's processes only (beam's tree, the JVM's), summed per family, the
    JVM's under its own family beside beam's and the query servers'."""
    mine = [{**x, "family": JVM_FAMILY} if x.get("pid") in jvm_pids else x for x in samples]
    return _pidstat.summarize(mine, exclude_pids=set(exclude), only_pids=set(couchdb_pids) | set(jvm_pids))


def answers_of(result: dict) -> dict[str, dict]:
    return {a["q"]: a for a in result.get("answers") or [] if isinstance(a, dict) and "q" in a}


def compare_answers(reference: dict, other: dict) -> list[str]:
    """Where two builds' check queries disagree: total hits, and the hit ids when all hits were fetched."""
    ref, oth = answers_of(reference), answers_of(other)
    out = []
    for q in sorted(set(ref) | set(oth)):
        a, b = ref.get(q), oth.get(q)
        if a is None or b is None:
            out.append(f"{q}: asked of one build only")
        elif a.get("error") or b.get("error"):
            if a.get("error") != b.get("error"):
                out.append(f"{q}: {a.get('error') or 'answered'} vs {b.get('error') or 'answered'}")
        elif a.get("relation", "EQUAL_TO") != "EQUAL_TO" or b.get("relation", "EQUAL_TO") != "EQUAL_TO":
            continue   # Lucene stopped counting (at least N hits): nothing exact to compare
        elif a.get("total_hits") != b.get("total_hits"):
            out.append(f"{q}: {a.get('total_hits')} hits vs {b.get('total_hits')}")
        elif a.get("ids") is not None and b.get("ids") is not None and a["ids"] != b["ids"]:
            out.append(f"{q}: same count ({a.get('total_hits')}), different hits")
    return out


# ------------------------------------------------------------------ I/O

@dataclass
class Config:
    url: str
    db: str
    index: Index
    language: str = "javascript"
    queries: tuple[str, ...] = DEFAULT_QUERIES
    interval: float = 1.0
    timeout: float = 6 * 3600.0
    couchdb_log: str | None = None
    results_dir: str | None = "results"
    keep: bool = False
    extra: dict = field(default_factory=dict)


def nouveau_config(couch: Couch) -> dict:
    """[nouveau] as the node has it; a one-line error when search is off or its server does not answer."""
    try:
        conf = couch.get("/_node/_local/_config/nouveau", timeout=10)
    except CouchError:
        conf = {}
    version = (couch.version() or {}).get("version")
    if str((conf or {}).get("enable", "false")).lower() != "true":
        raise DragnetError(f"Nouveau is off on {mask_url(couch.url)} ([nouveau] enable is not true): start it with "
                           f"`dragnet couch up --backend local --nouveau` or set [nouveau] enable and url")
    url = conf.get("url") or "http://127.0.0.1:5987"
    ours = _server.load(urlsplit(couch.url).port or 5984) if _addview.is_local(couch.url) else None
    if ours is not None and ours.url == url:
        if not _server.healthy(ours.health_url):   # a container's URL resolves only on its network
            raise DragnetError(f"the Nouveau server at {url} does not answer its health check "
                               f"({ours.health_url}); expected Nouveau {version}")
    elif urlsplit(url).hostname in ("127.0.0.1", "localhost", "::1"):
        _server.check_reachable(url, version)
    return {"url": url, "couchdb_version": version, **{k: v for k, v in conf.items() if k not in ("url",)}}


def _jvm_pid(nouveau_url: str, couch_port: int) -> int | None:
    """The JVM serving nouveau_url: the one dragnet started for this CouchDB (a container's java is its
    first process), else the listener on a loopback URL's port."""
    server = _server.load(couch_port)
    if server is not None and server.url == nouveau_url and Path(f"/proc/{server.pid}").exists():
        return server.pid
    host_port = urlsplit(nouveau_url)
    if host_port.hostname not in ("127.0.0.1", "localhost", "::1"):
        return None
    return _pidstat.listening_pid(host_port.port or 5987)


def _snap(pid: int | None):
    if pid is None:
        return None
    try:
        return _cpu.Snapshot.take(pid)
    except OSError:
        return None


def _group(pid: int | None) -> dict | None:
    if pid is None:
        return None
    try:
        return _cgroup.take(pid)
    except (OSError, ValueError):
        return None


def _peak_rss_mb(pid: int | None) -> float | None:
    """The JVM's peak resident memory since it started (VmHWM)."""
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        return None
    return None


def _java_of(pid: int | None) -> dict | None:
    if pid is None:
        return None
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    argv = [a.decode(errors="replace") for a in argv if a]
    heap = next((a[4:] for a in argv if a.startswith("-Xmx")), None)
    return {"pid": pid, "java": argv[0] if argv else None, "heap": heap,
            "jar": next((os.path.basename(a) for a in argv if a.endswith(".jar")), None)}


class _Search(threading.Thread):
    """The search request that triggers the build and returns once the index is up to date."""

    def __init__(self, couch: Couch, path: str, timeout: float):
        super().__init__(daemon=True)
        self.couch, self.path, self.timeout = couch, path, timeout
        self.done = threading.Event()
        self.error: DragnetError | None = None
        self.answer: dict | None = None
        self.t_return: float | None = None

    def run(self) -> None:
        try:
            self.answer = self.couch.get(self.path, timeout=self.timeout)
        except (CouchError, CouchUnreachable) as exc:
            self.error = exc
        finally:
            self.t_return = time.time()
            self.done.set()


def query(couch: Couch, db: str, ddoc_id: str, name: str, q: str, limit: int = HITS_LIMIT) -> dict:
    path = f"{db_path(db)}/{ddoc_id}/_nouveau/{quote(name)}?q={quote(q)}&limit={limit}"
    try:
        got = couch.get(path, timeout=600)
    except CouchError as exc:
        return {"q": q, "error": f"{exc.status} {exc.error}: {exc.reason}"[:200]}
    hits = got.get("hits") or []
    total = got.get("total_hits")
    return {"q": q, "total_hits": total, "relation": got.get("total_hits_relation"),
            "ids": sorted(h.get("id") for h in hits) if isinstance(total, int) and total <= limit else None}


def build(couch: Couch, cfg: Config, *, on_poll: Callable[[dict], None] | None = None) -> dict:
    """Build cfg.index on cfg.language in a fresh design doc and measure it; the result (also written to
    cfg.results_dir). The design doc is deleted afterwards (also on Ctrl-C) unless cfg.keep."""
    db_info = couch.get(db_path(cfg.db), timeout=30)
    search = nouveau_config(couch)
    port = urlsplit(couch.url).port or 5984
    local = _addview.is_local(couch.url)
    beam_root = _addview.couchdb_root_pid(port) if local else None
    jvm = _jvm_pid(search["url"], port) if local else None
    log = (_addview.ContainerLogWatch(port, None) if local and not cfg.couchdb_log and _addview._managed_container(
        couch.url, None) else _addview.LogWatch(_addview.find_log(couch, cfg.couchdb_log)))
    nonce = secrets.token_hex(4)
    ddoc_id = f"_design/dragnet-nouveau-{cfg.language}-{nonce}"
    body = {"language": cfg.language, "nouveau": {cfg.index.name: fresh_definition(cfg.index.definition, nonce)},
            "autoupdate": False}
    rev = couch.put(f"{db_path(cfg.db)}/{ddoc_id}", body)["rev"]
    polls: list[dict] = []
    infos: list[dict] = []
    runner = None
    pidstat_text: str | None = None
    seen_pids: set[int] = set(_pidstat.process_tree(beam_root)) if beam_root else set()
    info_path = f"{db_path(cfg.db)}/{ddoc_id}/_nouveau_info/{quote(cfg.index.name)}"
    try:
        load_before = load_average()
        beam0, jvm0, group0 = _snap(beam_root), _snap(jvm), _group(jvm)
        if local and _pidstat.PidstatRunner.available():    # the JVM is `java`, beside beam and the servers
            runner = _pidstat.PidstatRunner(f"{_pidstat.pidstat_pattern()}|java", max(1, round(cfg.interval)))
            runner.start()
        ps_pid = runner.pid if runner else None
        t0 = time.time()
        req = _Search(couch, f"{db_path(cfg.db)}/{ddoc_id}/_nouveau/{quote(cfg.index.name)}?q=*:*&limit=1",
                      cfg.timeout)
        req.start()
        deadline = t0 + cfg.timeout
        while not req.done.is_set():
            t = time.time()
            try:
                tasks = couch.get("/_active_tasks", timeout=30)
                info = couch.get(info_path, timeout=30)
            except CouchUnreachable as exc:
                raise DragnetError(f"CouchDB stopped answering during the Nouveau build: {exc}") from None
            except CouchError:   # the info 404s until the index exists
                tasks, info = [], None
            poll = {"t": t, "tasks": search_tasks(tasks if isinstance(tasks, list) else [], ddoc_id)}
            polls.append(poll)
            if isinstance(info, dict):
                infos.append({"t": t, **(info.get("search_index") or {})})
            if beam_root:    # query servers come and go: every process of beam's tree seen during the build
                seen_pids |= _pidstat.process_tree(beam_root)
            if on_poll:
                on_poll(poll)
            if t > deadline:
                raise DragnetError(f"the Nouveau build did not finish within --timeout {cfg.timeout:g} s")
            req.done.wait(cfg.interval)
        t1 = req.t_return or time.time()
        beam1, jvm1, group1 = _snap(beam_root), _snap(jvm), _group(jvm)
        pidstat_text = runner.stop() if runner else None
        try:   # one poll after the answer: the tasks gone from it ran to their end
            tasks = couch.get("/_active_tasks", timeout=30)
            polls.append({"t": time.time(), "tasks": search_tasks(tasks if isinstance(tasks, list) else [], ddoc_id)})
        except (CouchError, CouchUnreachable):
            pass
        if req.error is not None:
            raise DragnetError(f"the Nouveau build of {cfg.index.name} on {cfg.language} failed: {req.error}")
        final = couch.get(info_path, timeout=60).get("search_index") or {}
        answers = [query(couch, cfg.db, ddoc_id, cfg.index.name, q) for q in cfg.queries]
        errors = count_index_errors(log.new_lines() or [])
    finally:
        if runner is not None and pidstat_text is None:
            runner.stop(first_report=False)
        if not cfg.keep:
            _addview._delete_ddoc(couch, cfg.db, ddoc_id, rev)
            try:
                couch.post(f"{db_path(cfg.db)}/_nouveau_cleanup", {}, timeout=60)
            except (CouchError, CouchUnreachable):
                pass   # the index files go at CouchDB's next cleanup
    wall = t1 - t0
    docs = int(db_info.get("doc_count") or 0)
    beam_cpu = _cpu.usage(beam0, beam1) if beam0 and beam1 else None
    jvm_cpu = _cpu.usage(jvm0, jvm1) if jvm0 and jvm1 else None
    by = (beam_cpu or {}).get("by_process") or {}
    cores = os.cpu_count() or 1
    shards = per_shard(polls, ddoc_id, cfg.index.name)
    result = {
        "schema": _schema.schema(_schema.NOUVEAU),
        "kind": "nouveau",
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "couchdb": {"url": mask_url(couch.url), "version": search.get("couchdb_version")},
        "nouveau": {"url": search["url"], "batch_size": search.get("batch_size"), "jvm": _java_of(jvm)},
        "db": cfg.db, "doc_count": docs,
        "q": len(shards) or None,
        "index": {"name": cfg.index.name, "definition": cfg.index.definition, "ddoc": ddoc_id},
        "language": cfg.language,
        "progress_source": PROGRESS_SOURCE,
        "summary": {"ok": True, "wall_time_s": round(wall, 4),
                    "docs_per_s": round(docs / wall, 2) if wall > 0 else None,
                    "num_docs": final.get("num_docs"), "disk_size": final.get("disk_size"),
                    "index_errors": errors["count"], "index_error_docs": errors["docs"],
                    "cpu_s_per_1000_docs": _per_1000(beam_cpu, jvm_cpu, docs)},
        "shards": [{"shard": s.shard, "node": s.node, "changes": s.changes_done, "total_changes": s.total_changes,
                    "seconds": round(s.seconds, 3),
                    "docs_per_s": None if s.docs_per_s is None else round(s.docs_per_s, 2)} for s in shards],
        "split": split(wall, cores,
                       sum(v for k, v in by.items() if k not in _NOT_QS) if beam_cpu else None,
                       by.get("beam.smp") if beam_cpu else None,
                       (jvm_cpu or {}).get("cpu_s")),
        "cpu": {"couchdb": beam_cpu, "jvm": jvm_cpu, "jvm_peak_rss_mb": _peak_rss_mb(jvm)},
        # the Nouveau container's group (docker backend): its CPU, block I/O and peak memory
        "jvm_cgroup": _cgroup.usage(group0, group1),
        "pidstat": (process_summary(_pidstat.parse(pidstat_text).samples, seen_pids,
                                    _pidstat.process_tree(jvm) if jvm else set(), {os.getpid(), ps_pid or -1})
                    if pidstat_text is not None else None),
        "pidstat_note": None if pidstat_text is not None else (
            "pidstat not found (install sysstat)" if local else "a CouchDB on another machine: no processes here"),
        "index_errors": {**errors, "log": str(log.path) if log.path else None},
        "answers": answers,
        "trigger": {"t_trigger": t0, "t_return": t1},
        "polls": polls, "info_polls": infos,
        "machine": {**machine_info(), "load_before": load_before, "load_after": load_average()},
        **cfg.extra,
    }
    if cfg.results_dir:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        path = Path(cfg.results_dir) / f"nouveau-{cfg.language}-{stamp}-{secrets.token_hex(2)}.json"
        _schema.write(path, result)
        result["results_file"] = str(path)
    return result


def _per_1000(beam_cpu: dict | None, jvm_cpu: dict | None, docs: int) -> float | None:
    if beam_cpu is None or not docs:
        return None
    total = beam_cpu["cpu_s"] + ((jvm_cpu or {}).get("cpu_s") or 0.0)
    return round(total / docs * 1000, 6)
