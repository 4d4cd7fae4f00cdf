"""Bench scenarios (memory limit x disk profile x cache state): measuring one build inside one, and the
"disk matters?" rows computed from the runs (their memory advice and verdict in words: report/scenario_table).

A build in a scenario: refuse what cannot be enforced, set the cache state, put CouchDB's process tree
in the cgroup plan, record iostat and the db/index sizes around the build, read the group's memory
use and OOM counters, then always remove the groups.
"""

from __future__ import annotations

import itertools
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from dragnet.measure import iostat as _iostat
from dragnet.couchdb import storage as _storage
from dragnet.couchdb import limits as limits
from dragnet.couchdb.client import Couch
from dragnet.errors import DragnetError, UsageError
from dragnet.measure.datadir import bytes_written, couch_pid, data_dir, sizes, write_amplification
from dragnet.measure.pidstat import own_memory, process_tree, rss_peaks_kb
from dragnet.results.load import scenario_label
from dragnet.results.record import Build
from dragnet.couchdb.storage import format_size


@dataclass(frozen=True)
class Scenario:
    memory: int | None = None
    profile: limits.DiskProfile = limits.PROFILES["unlimited"]
    cache: str | None = None          # cold | warm | None (left as it is)

    @property
    def label(self) -> str:
        mem = "mem-unlimited" if self.memory is None else f"mem-{format_size(self.memory).replace(' ', '')}"
        return f"{mem}/{self.profile.name}/{self.cache or 'cache-asis'}"

    @property
    def is_reference(self) -> bool:
        """The unthrottled, unlimited, warm run every other scenario is compared with."""
        return self.memory is None and self.profile.unlimited and self.cache in ("warm", None)

    @property
    def limited(self) -> bool:
        return self.memory is not None or not self.profile.unlimited

    def to_json(self) -> dict:
        p = self.profile
        return {"label": self.label, "memory_limit": self.memory, "cache": self.cache,
                "disk_profile": {"name": p.name, "r_iops": p.r_iops, "w_iops": p.w_iops, "r_bps": p.r_bps,
                                 "w_bps": p.w_bps}}


def expand(memories: list[int | None], profiles: list[limits.DiskProfile], caches: list[str]) -> list[Scenario]:
    """Every combination, in the order given (the first is the one the others are compared with)."""
    for c in caches:
        if c not in ("cold", "warm"):
            raise UsageError(f"--cache {c}: expected cold or warm")
    return [Scenario(m, p, c) for m, p, c in
            itertools.product(memories or [None], profiles or [limits.PROFILES["unlimited"]], caches or [None])]


def reference_label(scenarios: list[Scenario]) -> str:
    """The scenario the others are compared with: unlimited memory, unthrottled, warm (else the first)."""
    return next((s.label for s in scenarios if s.is_reference), scenarios[0].label)


IOSTAT_AVERAGES = ("r_s", "rkb_s", "r_await", "util_pct")


def iostat_averages(result: dict) -> dict | None:
    """A scenario build's iostat averages on the data's device, as the "disk matters?" table shows them."""
    io = result.get("iostat") or {}
    dev = (io.get("summary") or {}).get(io.get("device") or "") or {}
    return {k: (dev.get(k) or {}).get("avg") for k in IOSTAT_AVERAGES} if dev else None


def reference_of(scenarios: list[dict]) -> str:
    """reference_label() from scenarios as JSON (a manifest's, or the results' in the bench's order):
    unlimited memory, unthrottled, warm or as-is; else the first."""
    return next((sc["label"] for sc in scenarios if sc.get("memory_limit") is None
                 and sc["disk_profile"]["name"] == "unlimited" and sc.get("cache") in ("warm", None)),
                scenarios[0]["label"])


def runs_from_results(results: Iterable[dict]) -> tuple[list[dict], str | None]:
    """Scenario builds' results files as the rows disk_matters() reads (what the bench's manifest holds
    of each run), and the reference scenario's label as the bench chose it (reference_of() over the
    scenarios in the order their first builds started). ([], None) when no result ran in a scenario."""
    runs, first = [], {}
    for r in results:
        label = scenario_label(r)
        if not label:
            continue
        s = Build.of(r)
        b = r.get("bench") or {}
        runs.append({"language": b.get("language") or s.language or "?",
                     "storage": str(b.get("storage_label") or r.get("storage") or "unknown"),
                     "scenario": label, "status": s.status, "docs_per_sec_wall": s.docs_per_s,
                     "iostat": iostat_averages(r), "memory": r.get("memory"),
                     "pidstat_peak_rss_kb": rss_peaks_kb((r.get("pidstat") or {}).get("summary"))})
        sc = r["scenario"] if isinstance(r.get("scenario"), dict) else {"label": label}
        first.setdefault(label, (str(r.get("started_at") or ""), {"disk_profile": {"name": "unlimited"}, **sc}))
    if not runs:
        return [], None
    return runs, reference_of([sc for _, sc in sorted(first.values(), key=lambda v: v[0])])


# ---------------------------------------------------------------- one build in a scenario

def prepare(sc: Scenario, couch: Couch, url: str) -> tuple[limits.Plan | None, int | None, Path | None]:
    """Refuse up front what cannot be enforced (not local, not root, no controller, no block device)."""
    pid = couch_pid(url)
    ddir = data_dir(couch, pid) if pid else None
    if not sc.limited:
        return None, pid, ddir
    if pid is None:
        raise DragnetError(f"scenario {sc.label}: limits need a CouchDB on this machine (none listens on the "
                           "URL's port here)")
    if ddir is None:
        raise DragnetError(f"scenario {sc.label}: cannot find CouchDB's database_dir")
    return limits.check_enforceable(ddir, memory=sc.memory, profile=sc.profile), pid, ddir


@dataclass
class Measured:
    """What a target read after a build: the memory group's use, the group's own IO on the device,
    kernel OOM lines, and whether CouchDB was OOM-killed."""

    use: limits.MemoryUse | None = None
    io: dict | None = None
    oom_lines: list[str] = field(default_factory=list)
    oom: bool = False
    held: bool = False      # paused at the limit, not killed: the limit was lifted and CouchDB went on


class LocalTarget:
    """A scenario on a CouchDB running on this machine: a cgroup plan applied to its process tree for the
    build and removed after it. (The docker backend's is dragnet.axes.scenario_docker.DockerTarget.)"""

    def __init__(self, sc: Scenario, couch: Couch, url: str):
        self.sc = sc
        self.plan, self.pid, self.ddir = prepare(sc, couch, url)
        self.device = None
        if self.ddir is not None:
            try:
                self.device = _storage.device_of(self.ddir)
            except _storage.NoBlockDevice:
                pass
        self.enforced = self.plan.enforced if self.plan else []
        self.cgroup_version = self.plan.layout.version if self.plan else None
        self.hold: limits.OomHold | None = None

    def set_cache(self, state: str | None) -> str:
        if not state:
            return "left as it is"
        if self.ddir is None:
            return "not set: CouchDB's data directory is not on this machine"
        return limits.set_cache(state, [self.ddir])

    def start(self) -> None:
        if self.plan is not None:
            limits.apply(self.plan, sorted(process_tree(self.pid)))
            if self.sc.memory and self.plan.layout.version == 1:
                self.hold = limits.OomHold(self.plan.groups[0]).start()

    def finish(self, t0: float, failed: bool) -> Measured:
        if self.plan is None:
            return Measured()
        try:
            held = self.hold.stop() if self.hold is not None else False
            use, io = limits.memory_use(self.plan), limits.io_use(self.plan)
            memcg = limits.memcg_path(self.plan) if self.sc.memory else None
            lines = limits.kernel_oom_lines(t0, memcg) if memcg else []
        finally:
            limits.remove(self.plan)
        killed = bool(use.oom_kills or any("beam" in ln for ln in lines))
        return Measured(use, io, lines, killed or held, held=held and not killed)

    def record(self) -> dict:
        return {}


def run_in(sc: Scenario, couch: Couch, url: str, db: str, ddoc: str, build: Callable[[], dict],
           target=None) -> dict:
    """One build in scenario sc: its results dict with "scenario", "iostat", "sizes", "memory" and, when
    CouchDB was OOM-killed, summary.oom_killed with "CouchDB was OOM-killed at limit X" as the outcome.
    target applies the limits (default: a LocalTarget, cgroups on this machine's CouchDB)."""
    target = target if target is not None else LocalTarget(sc, couch, url)
    device = target.device
    runner = _iostat.IostatRunner() if _iostat.IostatRunner.available() else None
    t0 = time.time()
    error = None
    result: dict = {}
    before: dict | None = None
    cache_note = None
    m = Measured()
    try:
        # inside the try: an interrupt at any point still removes the limits and stops iostat, and a
        # container that dies at its limit before the build (reading sizes) is judged like one during it
        target.start()
        before = sizes(couch, db)
        cache_note = target.set_cache(sc.cache)
        if runner is not None:
            runner.start()
        result = build()
    except Exception as exc:       # beam killed mid-build drops the connection: judged below
        error = exc
    finally:
        text = runner.stop() if runner else ""
        m = target.finish(t0, error is not None or not (result.get("summary") or {}).get("ok", True))
        t1 = time.time()
    if error is not None and not m.oom:
        if sc.memory and m.use is not None and m.use.failcnt:   # said with the failure: it ran at its limit
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise DragnetError(f"{first} (at memory limit {format_size(sc.memory)}: the group reached it "
                               f"{m.use.failcnt} times)") from error
        raise error
    use, group_io = m.use, m.io
    parsed = _iostat.parse(text)
    devices = {device.name} if device else None
    result.setdefault("summary", {})
    result["scenario"] = {**sc.to_json(), "cache_state": cache_note, "enforced": target.enforced,
                          "device": None if device is None else {"name": device.name, "majmin": device.majmin,
                                                                  "kind": device.kind, "backing": device.backing},
                          "cgroup_version": target.cgroup_version, **target.record()}
    result["iostat"] = {"argv": runner.argv if runner else None, "device": device.name if device else None,
                        "samples": parsed.samples, "skipped": parsed.skipped,
                        "summary": _iostat.summarize(parsed.samples, devices, t_from=t0)}
    # the group's own IO: on a shared machine iostat's device figures include other processes
    result["iostat"]["cgroup"] = None if not group_io else {
        **group_io, "seconds": t1 - t0, "read_ios_per_s": group_io["read_ios"] / max(t1 - t0, 1e-9)}
    result["memory"] = None if use is None else {"limit": sc.memory, "peak": use.peak, "anon": use.anon,
                                                 "oom_kills": use.oom_kills, "failcnt": use.failcnt,
                                                 "kernel_log": m.oom_lines[-5:]}
    if m.held:      # CouchDB is alive: the build went on unlimited, so its figures are not this scenario's
        msg = limits.held_message(sc.memory)
        result["summary"].update(ok=False, oom_killed=True, oom_held=True, outcome=msg, error=msg)
    elif m.oom:
        msg = limits.oom_message(sc.memory) if sc.memory else "CouchDB was OOM-killed"
        result["summary"].update(ok=False, oom_killed=True, outcome=msg, error=msg)
        result["sizes"] = {**(result.get("sizes") or {}), "before": before, "after": None}
        return result
    after = sizes(couch, db, f"_design/{ddoc}")
    built = (result.get("sizes") or {}).get("after")   # what the build itself read (a watched build's)
    if built and built.get("index") and not after.get("index"):
        after["index"] = built["index"]
    written = bytes_written((result.get("pidstat") or {}).get("samples"))
    index_file = ((after.get("index") or {}).get("file"))
    # kept: what the build recorded itself (a forecast's peak disk and growth)
    result["sizes"] = {**(result.get("sizes") or {}), "before": before, "after": after, "bytes_written": written,
                       "write_amplification": write_amplification(written, index_file)}
    return result


# ---------------------------------------------------------------- disk matters? (pure)

@dataclass
class Row:
    language: str
    storage: str
    scenario: str
    docs_per_sec: list[float]
    ratio: float | None            # median docs/s over the reference's median
    slower_every_round: bool       # every run slower than every reference run
    oom: int = 0
    iostat: dict | None = None     # mean of per-run averages: r_s, rkb_s, r_await, util_pct
    memory_limit: int | None = None
    own_memory: int | None = None  # largest own_memory() of this row's successful builds


def _rates(runs: Iterable[dict]) -> list[float]:
    """docs/s of the successful runs among manifest run entries."""
    entries = [Build.of_entry(r) for r in runs]
    return [e.docs_per_s for e in entries if e.status == "ok" and e.docs_per_s]


def disk_matters(runs: Iterable[dict], reference: str) -> list[Row]:
    """Rows per (language, storage, scenario) from manifest runs ({"language","storage","scenario",
    "status","docs_per_sec_wall","iostat","memory","pidstat_peak_rss_kb"}); ratio to the reference scenario
    of the same language and storage."""
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        groups.setdefault((r["language"], r["storage"], r.get("scenario") or reference), []).append(r)
    rows = []
    for (lang, st, sc), rs in groups.items():
        ok = _rates(rs)
        ref = _rates(groups.get((lang, st, reference), []))
        ratio = statistics.median(ok) / statistics.median(ref) if ok and ref else None
        io = [r["iostat"] for r in rs if r.get("iostat")]
        io_mean = {k: statistics.mean(i[k] for i in io) for k in io[0]} if io else None
        limit = next((r["memory"]["limit"] for r in rs if (r.get("memory") or {}).get("limit")), None)
        own = [m for m in (own_memory(r.get("pidstat_peak_rss_kb")) for r in rs if r.get("status") == "ok") if m]
        rows.append(Row(lang, st, sc, ok, ratio, bool(ok and ref and max(ok) < min(ref)),
                        sum(1 for r in rs if r.get("status") == "oom"), io_mean, limit, max(own, default=None)))
    return rows
