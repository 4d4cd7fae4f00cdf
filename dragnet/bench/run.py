"""`dragnet bench`: the whole comparison matrix (languages × repeats × storages) in one go.

Pure parts (tested without a server): the language table, the plan (order, interleaving, baseline in every
repeat) and the ratios to the baseline of the same repeat. The rest drives a CouchDB: import the data once
per storage, run the addview benchmark for each planned run with a fresh design document, clean up after
each run, and keep a manifest (bench.json) that is rewritten after every run so an interrupted bench keeps
every finished result.
"""

from __future__ import annotations

import datetime as _dt
import os
import time
from dataclasses import asdict, dataclass, field
from types import SimpleNamespace
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence
from urllib.parse import quote

from dragnet import paths
from dragnet.bench import erlang_baseline
from dragnet.bench.managed import drop_tmpfs_data, managed_instance, restart_on, start_managed, stop_managed
from dragnet.axes.model import REFILL
from dragnet.couchdb.client import Couch, CouchError, connect, db_path, mask_url
from dragnet.couchdb.cluster import cluster_of
from dragnet.data.ensure import ensure_data
from dragnet.measure.pidstat import rss_peaks_kb
from dragnet.errors import DragnetError, UsageError
from dragnet.servers.registry import LANGUAGES as QS_LANGUAGES, ceiling_language, reads_documents
from dragnet.servers.registry import variants as qs_variants
from dragnet.servers.dialects import VIEW_FILES, map_file
from dragnet.servers.dialects import from_filename as dialects_of_file
from dragnet.measure.stats import ratio
from dragnet.results.load import BASELINE_LABEL
from dragnet.results.addview_results import slug
from dragnet.results.record import Build
from dragnet.results.schema import BENCH as BENCH_SCHEMA, BENCH_MANIFEST as MANIFEST, schema
from dragnet.results.schema import write as write_results_file

SCHEMA = schema(BENCH_SCHEMA)
REPO = paths.data_root()  # the checkout, or an installed wheel's copy of views/
DEFAULT_VIEWS = REPO / "views" / "income"
BASELINE_VIEW = REPO / "views" / "baseline" / "map.erl"


# ---------------------------------------------------------------- languages

@dataclass(frozen=True)
class LanguageSpec:
    """A bench language: its name in reports, the CouchDB language it runs on and its view file."""

    name: str
    language: str
    view_file: str   # a file name inside the views folder, or "baseline" for the Erlang baseline map

    def path(self, views_dir: str | Path) -> Path:
        if self.view_file == "baseline":
            own = Path(views_dir).parent / "baseline" / "map.erl"
            return own if own.is_file() else BASELINE_VIEW
        if not reads_documents(self.language):   # the ceiling never looks at the source: any view file does
            files = [Path(views_dir) / f for f in dict.fromkeys((self.view_file, *VIEW_FILES.values()))]
            return next((f for f in files if f.is_file()), files[0])
        own = dialects_of_file(self.view_file)
        return map_file(views_dir, own.name) if own else Path(views_dir) / self.view_file


# one spec per CouchDB language (dragnet.servers.registry.LANGUAGES), plus variants running another view file
LANGUAGES: dict[str, LanguageSpec] = {s.name: s for s in (
    LanguageSpec("erlang_baseline", "erlang", "baseline"),
    *(LanguageSpec(lang.name, lang.name, lang.view_file) for lang in QS_LANGUAGES),
    *(LanguageSpec(*v) for v in qs_variants()),
)}
DEFAULT_LANGUAGES = ("javascript", "javascript_quickjs", "erlang", "python")
CEILING = ceiling_language()   # the null query server's language, built next to the baseline unless --no-ceiling


def with_ceiling(languages: Sequence[str], ceiling: bool = True) -> list[str]:
    """languages with the ceiling first (the baseline still opens each round), unless ceiling is False."""
    languages = list(languages)
    if not ceiling or CEILING is None or CEILING in languages:
        return languages
    return [CEILING, *languages]


def language_spec(name: str) -> LanguageSpec | None:
    """A bench language by name: a built-in one, or a user-given server's (dragnet.servers.user), which
    runs its dialect's file, e.g. map.go."""
    from dragnet.servers import dialects, user

    if name in LANGUAGES:
        return LANGUAGES[name]
    spec = user.find(name)
    return LanguageSpec(spec.name, spec.language, dialects.view_file(spec.dialect)) if spec else None


def user_languages(names: Sequence[str], views_dir: str | Path) -> tuple[list[str], list[str]]:
    """`names` without the user-given servers that have no file for this view, and why each one is skipped
    (a server with no function for a view is skipped, not an error)."""
    from dragnet.servers import user

    kept, skipped = [], []
    for n in names:
        spec = language_spec(n) if n not in LANGUAGES else None
        if spec is not None and user.find(n) and not spec.path(views_dir).is_file():
            skipped.append(f"{n}: {views_dir} has no {spec.view_file}")
        else:
            kept.append(n)
    return kept, skipped


DESIGN = "design"   # view_file of a language that runs the user's design document


def resolve_languages(names: Sequence[str], views_dir: str | Path, *, design: bool = False) -> list[LanguageSpec]:
    """Specs for names; every unknown name and missing view file is reported at once. With a design
    document every name but the baseline is a CouchDB language that runs that document as it is."""
    problems = []
    specs = []
    for n in names:
        if design and n != BASELINE_LABEL:
            from dragnet.index.views import _NAME, canonical_language

            lang = "query" if n == "mango" else canonical_language(n)   # dragnet.mango's builds
            if not _NAME.match(lang):
                problems.append(f"{n!r} is not a language name")
            else:
                specs.append(LanguageSpec(n, lang, DESIGN))
            continue
        spec = language_spec(n)
        if spec is None:
            problems.append(f"unknown language {n!r} (known: {', '.join(LANGUAGES)}, or --server NAME=COMMAND)")
            continue
        if not spec.path(views_dir).is_file():
            problems.append(f"{n}: view file {spec.path(views_dir)} not found")
            continue
        specs.append(spec)
    if problems:
        raise UsageError("; ".join(problems))
    return specs


# ---------------------------------------------------------------- the plan (pure)

@dataclass(frozen=True)
class PlannedRun:
    index: int
    storage: str
    repeat: int
    language: str
    scenario: str = ""     # a dragnet.axes.scenario.Scenario label; "" when the bench has no scenario axis
    axes: dict = field(default_factory=dict)   # the other axes' values (dragnet.axes.model), e.g. {"q": "8"}


def plan(languages: Sequence[str], repeats: int, storages: Sequence[str], *, baseline: bool = True,
         baseline_name: str = BASELINE_LABEL, scenarios: Sequence[str] = ("",),
         axes: Sequence[Any] = (), shuffle_seed: int | None = None) -> list[PlannedRun]:
    """Every run in order: per storage, per repeat, per combination of scenario and `axes`
    (dragnet.axes.model.Axis), every language once (A B C A B C …).

    The Erlang baseline opens each combination of each repeat (unless baseline=False), so each language has a
    baseline measured moments before it in the same combination and repeat. Combinations alternate within a
    repeat, as languages do, so a load that drifts over the bench touches every one alike (storages stay
    outermost: each is a restart and an import). With shuffle_seed each round's order is random instead
    (the baseline still first in each combination).
    """
    from dragnet.axes.model import Axis, plan_product

    if not storages:
        raise UsageError("no storage to benchmark")
    order = [lang for lang in languages if lang != baseline_name]
    if baseline or baseline_name in languages:
        order.insert(0, baseline_name)
    if not order:
        raise UsageError("no language to benchmark")
    extra = [a.name for a in axes]
    points = plan_product([Axis("storage", list(storages), outer=True), Axis("scenario", list(scenarios or ("",))),
                           *axes, Axis("language", order)], repeats, shuffle_seed,
                          baseline_name if order[0] == baseline_name else None)
    return [PlannedRun(p.index, p.values["storage"], p.repeat, p.values["language"], p.values["scenario"],
                       {n: p.values[n] for n in extra}) for p in points]


def ratios(runs: Iterable[dict], baseline_name: str = BASELINE_LABEL, key: str = "docs_per_sec_wall") -> dict[int, float | None]:
    """index -> run[key] / the same figure of the successful baseline run of the same storage, scenario,
    other axes' values and repeat.

    runs are manifest entries: {"index", "storage", "repeat", "language", "status", key[, "scenario", "axes"]}.
    """
    from dragnet.axes.model import pair_baselines

    runs = list(runs)
    base = pair_baselines(runs, baseline_name, key)
    return {r["index"]: (ratio(r.get(key), base[r["index"]]) if r.get("status") == "ok" else None) for r in runs}


# ---------------------------------------------------------------- between runs

def db_tasks(tasks: Iterable[dict], db: str) -> list[dict]:
    """Active tasks working on db (shards/<range>/<db>.<suffix> or the db itself)."""
    out = []
    for t in tasks:
        name = str(t.get("database") or t.get("source") or "")
        if name == db or (name.startswith("shards/") and name.split("/", 2)[-1].rsplit(".", 1)[0] == db):
            out.append(t)
    return out


def cleanup(couch: Couch, db: str, ddoc_id: str, *, timeout: float = 300.0, interval: float = 1.0) -> dict:
    """Delete the run's design doc, ask CouchDB to drop unused index files, wait for db's tasks to end."""
    t0 = time.monotonic()
    path = f"{db_path(db)}/{quote(ddoc_id, safe='/')}"
    deleted = False
    try:
        rev = couch.get(path)["_rev"]
        couch.request("DELETE", f"{path}?rev={rev}", ok=(200, 202, 404))
        deleted = True
    except CouchError as exc:
        if exc.status != 404:
            raise
        deleted = True      # addview deletes its own once measured
    couch.request("POST", f"{db_path(db)}/_view_cleanup", json={}, ok=(200, 202))
    remaining = wait_settled(couch, db, timeout=timeout, interval=interval)
    return {"ddoc_deleted": deleted, "seconds": time.monotonic() - t0, "tasks_left": remaining}


def wait_settled(couch: Couch, db: str, *, timeout: float, interval: float = 1.0) -> int:
    """Poll /_active_tasks until no task of db runs (at most timeout s); returns how many were left."""
    deadline = time.monotonic() + timeout
    while True:
        left = len(db_tasks(couch.get("/_active_tasks"), db))
        if left == 0 or time.monotonic() >= deadline:
            return left
        time.sleep(interval)


# ---------------------------------------------------------------- one run

def default_build(couch: Couch, url: str, db: str, spec: LanguageSpec, view_path: Path | None, ddoc: str,
                  storage_label: str, **design: Any) -> dict:
    """One addview --benchmark build through the addview library; returns its results dict.
    design: `design=` (a dragnet.index.design.Design) and `rows_dir=` for a design document's build."""
    from dragnet.index import addview as addview

    return addview.benchmark(url=url, db=db, view_path=str(view_path or ""), language=spec.language, ddoc=ddoc,
                             storage=storage_label, **design)


# ---------------------------------------------------------------- the bench

@dataclass
class BenchConfig:
    url: str
    db: str
    languages: list[str]
    repeat: int = 3
    storages: list[str] = field(default_factory=list)   # empty: the storage found (no restarts)
    storage_label: str | None = None
    data: str | None = None
    views: str = str(DEFAULT_VIEWS)
    results_dir: str | None = None
    baseline: bool = True
    q: int | None = None
    n: int | None = None          # replicas when creating the database (a cluster)
    settle_timeout: float = 300.0
    backend: str | None = None   # start a CouchDB with this `dragnet couch` backend when none is managed
    design: Any = None           # a dragnet.index.design.Design run on every language instead of the views folder
    reference: str | None = None  # the language whose rows the others must equal [default: the first]
    scenarios: list = field(default_factory=list)   # dragnet.axes.scenario.Scenario; empty: no scenario axis
    size: int | None = None       # documents, when this bench is one size of a `--sizes` sweep
    mango_design: Any = None      # --mango: the index's Mango design doc, built by the "mango" language
    axes: Any = None              # dragnet.bench.switch.AxisOptions: --couchdb, --cpus, --q, --config
    ceiling: bool = True          # also build on the null query server (CEILING) in every round
    shuffle_seed: int | None = None   # each round in a fresh (seeded) random order (bench --gate)
    instructions: bool = False    # count each design-doc build's map functions under valgrind (gate --metric)
    profile: bool = False         # --profile: perf on every build, folded stacks in the bench's folder


def _now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


class Bench:
    """Runs a BenchConfig; events go to on_event(kind, data) for progress display."""

    def __init__(self, config: BenchConfig, *, build: Callable[..., dict] = default_build,
                 on_event: Callable[[str, dict], None] | None = None, env: dict | None = None):
        self.config = config
        self.build = build
        self.on_event = on_event or (lambda kind, data: None)
        self.env = os.environ if env is None else env
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        self.id = f"bench-{stamp}"
        self.dir = Path(config.results_dir or Path("results") / self.id)
        self.manifest: dict[str, Any] = {}
        self.reference: str | None = None
        self._pool: dict | None = None   # revision -> the reference engine's processes that classify differences
        self.labels: dict[str, Callable[[str], str]] = {}   # axis name -> how its values name result files
        self.ceiling_refused: str | None = None   # why this CouchDB cannot run the ceiling, once known
        self.plan_axes: list = []       # dragnet.axes.model.PlanAxis of this bench (storage, scenario)
        self.inst = None                # the CouchDB dragnet manages, as the bench last (re)started it
        self.couch: Couch | None = None
        self.switcher: Any = None
        self.axis_opts: Any = None
        self.keep: str | None = None    # the data the bench found: never removed
        self._ir_docs: tuple[str, Any] | None = None   # (db, its sample) for --metric instructions

    # -- manifest
    def _write_manifest(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        write_results_file(self.dir / MANIFEST, self.manifest)

    def _write_result(self, run: dict, result: dict) -> Path:
        from dragnet.axes.model import file_stem

        return write_results_file(self.dir / f"{file_stem(run, self.labels)}.json", result)

    def languages(self) -> list[str]:
        """The languages built in each round: --languages, and the ceiling unless --no-ceiling or Mango."""
        cfg = self.config
        return with_ceiling(cfg.languages, cfg.ceiling and cfg.mango_design is None)

    # -- what the plan axes (dragnet.axes.model.PlanAxis) call back
    def restart_on(self, storage: str, **keywords: Any) -> None:
        """Restart the CouchDB the bench manages with its data on storage (dragnet.bench.managed.restart_on)."""
        self.inst = restart_on(self.inst, storage, self.config.url, data_size=self._data_size(), env=self.env,
                               **keywords)

    def restart_keywords(self) -> dict:
        """What every plan axis adds to an outer value's restart."""
        kw: dict = {}
        for a in self.plan_axes:
            kw.update(a.restart_keywords(self))
        return kw

    def restarted(self) -> None:
        for a in self.plan_axes:
            a.restarted(self)

    def drop_tmpfs_data(self, inst) -> None:
        drop_tmpfs_data(inst, self.keep)

    def record(self, key: str, value: Any) -> None:
        """A manifest key of a plan axis's, written at once."""
        self.manifest[key] = value
        self._write_manifest()

    def run(self) -> dict:
        cfg = self.config
        languages = self.languages()
        specs = {s.name: s for s in resolve_languages(
            list(dict.fromkeys(([BASELINE_LABEL] if cfg.baseline else []) + languages)), cfg.views,
            design=cfg.design is not None)}
        if cfg.design is not None:
            self.reference = cfg.reference or next(n for n in cfg.languages if n != BASELINE_LABEL)
            if self.reference not in cfg.languages or self.reference == BASELINE_LABEL:
                raise UsageError(f"--reference {self.reference}: not one of --languages "
                                 f"({', '.join(cfg.languages)})")
        self.inst = inst = managed_instance(cfg.url, self.env)
        if inst is not None and cfg.backend and inst.backend != cfg.backend:
            raise UsageError(f"--backend {cfg.backend}: the CouchDB dragnet manages on port {inst.port} runs "
                             f"on {inst.backend}")
        started_here = False
        from dragnet.axes.kinds import PLANNED
        from dragnet.bench.switch import AxisOptions, AxisSwitcher, check_before_start

        self.axis_opts = axis_opts = cfg.axes or AxisOptions()
        self.plan_axes = planned_axes = [make(cfg) for make in PLANNED]
        if inst is not None or cfg.backend:    # before starting anything on one of the axes' values
            check_before_start(axis_opts, inst.backend if inst is not None else cfg.backend, self.env,
                               starts=inst is None)
        if inst is None and cfg.backend:
            start: dict = {}
            for a in planned_axes:
                start.update(a.start_on(self))
            self.on_event("start_couch", {"backend": cfg.backend, "storage": start.get("storage_kind")})
            self.inst = inst = start_managed(cfg.backend, cfg.url, data_size=self._data_size(), env=self.env,
                                             **start, **axis_opts.start_on(cfg.backend))
            started_here = True
        for a in planned_axes:
            a.check(self)
        values = {a.name: a.values(self) for a in planned_axes}
        self.switcher = switcher = AxisSwitcher(axis_opts, url=cfg.url, db=cfg.db, env=self.env, inst=inst,
                                                data=cfg.data, n=cfg.n, data_size=self._data_size,
                                                on_event=self.on_event)
        extra_axes = axis_opts.axes(inst.backend if inst else None)
        own_dbs = any(a.how == REFILL for a in extra_axes)
        self.labels = {a.name: a.label for a in extra_axes}
        self.axis_values = {a.name: [str(v) for v in a.values] for a in extra_axes}
        try:    # the baseline's native query server: off on a CouchDB given by URL, the baseline is left out
            languages, erlang = erlang_baseline.languages(languages, cfg.baseline, cfg.url, inst, self.env)
        except BaseException:
            if started_here:
                stop_managed(inst, env=self.env)
            raise
        if not erlang.get("available", True):
            specs.pop(BASELINE_LABEL, None)
        planned = plan(languages, cfg.repeat, values["storage"],
                       baseline=cfg.baseline and erlang.get("available", True), scenarios=values["scenario"],
                       axes=extra_axes, shuffle_seed=cfg.shuffle_seed)
        from dragnet.measure.machine import machine_info

        self.manifest = {
            "schema": SCHEMA, "id": self.id, "started_at": _now_iso(), "finished_at": None, "interrupted": False,
            "url": mask_url(cfg.url), "db": cfg.db, "data": cfg.data,
            "views": str(cfg.views) if cfg.design is None else None,
            "design": None if cfg.design is None else {"id": cfg.design.id, "source": cfg.design.source,
                                                       "views": cfg.design.view_names,
                                                       "reference": self.reference,
                                                       "revisions": {label: d.source for label, d in
                                                                     axis_opts.designs().items()}},
            "languages": list(specs), "repeat": cfg.repeat,
            **{k: v for a in planned_axes for k, v in a.manifest(self).items()},
            "managed": None if inst is None else {"backend": inst.backend, "port": inst.port},
            "machine": machine_info(), "imports": [], "cleanups": [],
            "order": [f"{p.storage}/{p.scenario + '/' if p.scenario else ''}r{p.repeat}/{p.language}"
                      for p in planned],
            "size": cfg.size,
            "axes": {a.name: a.values for a in extra_axes},
            "runs": [{**asdict(p), "status": "pending", "error": None, "result_file": None,
                      "docs_per_sec_wall": None, "wall_time_s": None, "ratio_to_baseline": None}
                     for p in planned],
        }
        if axis_opts.any:      # refuse what cannot be applied before anything is written or built
            try:
                switcher.check_up_front(connect(cfg.url, env=self.env))
            except BaseException:
                if started_here:
                    stop_managed(inst, env=self.env)
                raise
            if switcher.key_sources:   # what each version's --config keys were checked against
                self.manifest["config_keys"] = switcher.key_sources
        if erlang:
            self.manifest["erlang_baseline"] = erlang
            if not erlang["available"]:   # one line before the first build; the rest runs
                self.on_event("warning", {"message": erlang["why"]})
        self._write_manifest()
        self.on_event("begin", {"dir": str(self.dir), "runs": len(planned)})
        found = None if inst is None else SimpleNamespace(storage=inst.storage, limits=inst.limits)
        self.keep = None if inst is None or started_here else inst.data_dir   # the user's data is never removed
        current = None
        outer = next(a for a in planned_axes if a.outer)
        try:
            for st in outer.values(self):
                for a in planned_axes:
                    a.enter(st, self)
                self.couch = connect(cfg.url, env=self.env)
                if cfg.data and not own_dbs:     # an axis that fills a database per value (--q N,N) does it
                    imp = ensure_data(self.couch, cfg.db, cfg.data, q=cfg.q, n=cfg.n,
                                      progress=lambda m: self.on_event("import", {"message": m}))
                    self.manifest["imports"].append({outer.name: st, **imp})
                    self._write_manifest()
                elif not own_dbs:
                    self.couch.get(db_path(cfg.db))  # a one-line error now rather than in every run
                if not own_dbs:
                    self.manifest["cluster"] = cluster_of(self.couch, cfg.db)
                self._write_manifest()
                for a in planned_axes:
                    a.prepare(self)
                for run in (r for r in self.manifest["runs"] if r[outer.name] == st):
                    current = run
                    failed_start = next((f for f in (a.before(run, self) for a in planned_axes) if f is not None),
                                        None)
                    if failed_start is not None:   # the node could not start with the run's values
                        self._one(self.couch, run, specs[run["language"]], failed_start=failed_start)
                        current = None
                        continue
                    db = cfg.db
                    if run["language"] == CEILING and self.ceiling_refused:
                        run.update(status="not_applicable", error=self.ceiling_refused)
                        self._write_manifest()
                        self.on_event("done", dict(run))
                        current = None
                        continue
                    if axis_opts.any:
                        why = switcher.not_applicable(run["axes"])
                        if why is not None:
                            run.update(status="not_applicable", error=why)
                            self._write_manifest()
                            self.on_event("done", dict(run))
                            current = None
                            continue
                        self.couch, db = switcher.switch(run, st, self.couch)
                        self.inst = switcher.inst
                    self._one(self.couch, run, specs[run["language"]], db=db,
                              axes=axis_opts.recorded(run["axes"]), versions=switcher.versions,
                              beside=switcher.beside(run))
                    self._note_ceiling_refused(run)
                    checked = switcher.verify(run) if run["status"] == "ok" else {}
                    if checked:     # what the axes checked once the build's processes ran (its cores)
                        run.update(checked)
                        self._write_manifest()
                    current = None
                    if run["status"] == "oom" and not run.get("oom_held"):
                        if self.inst is None:
                            raise DragnetError(f"{run['error']}; it is not managed by dragnet, so the bench "
                                               "cannot restart it: remaining runs not done")
                        if any([a.on_oom(self) for a in planned_axes]):   # an axis brings it back itself
                            continue
                        self.on_event("restart", {"storage": st})
                        self.restart_on(st)
                        switcher.restarted(self.inst)
                        self.couch = connect(cfg.url, env=self.env)
        except KeyboardInterrupt:
            self.manifest["interrupted"] = True
            if current is not None and current["status"] == "running":
                current["status"] = "interrupted"
            raise
        finally:
            for pool in (self._pool or {}).values():
                pool.close()
            if switcher.inst is not None:   # it may have restarted it
                self.inst = switcher.inst
            for key in axis_opts.restored_as():   # also on Ctrl-C/SIGTERM: the node's settings as found
                self.manifest[key] = switcher.finish(lambda: connect(cfg.url, env=self.env))
            if not started_here and not self.manifest["interrupted"] and self.inst is not None:
                self.inst = switcher.restore_instance(self.inst.storage)
            self.manifest["finished_at"] = _now_iso()
            self._write_manifest()
            inst = self.inst
            if started_here:
                self.on_event("stop_couch", {"backend": inst.backend})
                stop_managed(inst, env=self.env)
                drop_tmpfs_data(inst, self.keep)
            elif inst is not None and not self.manifest["interrupted"] and \
                    any([a.changed(self, found) for a in planned_axes]):
                # the CouchDB the bench found goes back to its own storage and limits
                self.on_event("restart", {"storage": found.storage or inst.storage})
                restart_on(inst, found.storage or inst.storage, cfg.url, env=self.env, limits=found.limits)
                drop_tmpfs_data(inst, self.keep)
        return self.manifest

    def _note_ceiling_refused(self, run: dict) -> None:
        """A CouchDB given by URL may not know the ceiling's language: said once, its later runs skipped."""
        if run["language"] == CEILING and run["status"] == "error" and "unknown_query_language" in str(run["error"]):
            self.ceiling_refused = (f"this CouchDB has no {CEILING} query server (one dragnet does not manage "
                                    f"cannot be given one): the figures are without the ceiling")
            self.manifest["ceiling"] = self.ceiling_refused
            run.update(status="not_applicable", error=f"{self.ceiling_refused} ({run['error']})")
            self._write_manifest()
            self.on_event("warning", {"message": self.ceiling_refused})

    def _data_size(self) -> int:
        # room to ask for on a tmpfs: the file's size (×6 for gzip, roughly the JSON it expands to)
        if not self.config.data:
            return 0
        p = Path(self.config.data)
        return p.stat().st_size * (6 if p.name.endswith(".gz") else 1)

    def _one(self, couch: Couch, run: dict, spec: LanguageSpec, failed_start: dict | None = None,
             db: str | None = None, axes: dict | None = None, versions: dict | None = None,
             beside: Any = None) -> None:
        """One planned run, built inside what the plan axes put around it (a scenario's limits);
        `failed_start` is the result of a run whose CouchDB died before the build (its container OOM-killed
        while starting), `beside` what runs beside the build (an axis's application load)."""
        cfg = self.config
        db = db or cfg.db
        ddoc = f"dragnet_bench_{slug(spec.name)}_{run['index']}_{int(time.time() * 1000)}"
        run.update(status="running", ddoc=f"_design/{ddoc}", started_at=_now_iso())
        self._write_manifest()
        self.on_event("start", dict(run))
        try:
            more: dict = {}
            for a in self.plan_axes:
                more.update(a.build_keywords(run))
            if beside is not None:
                more["beside"] = beside
            if cfg.profile:
                # named for the engine: the Erlang baseline's folded file apart from an Erlang view's
                more.update(profile=True, profile_dir=str(self.dir), profile_kind=spec.name)

            def build() -> dict:
                if spec.view_file == DESIGN:
                    rows_dir = self.dir / "rows" / f"{run['index']:03d}-{slug(spec.name)}"
                    design = cfg.mango_design if spec.language == "query" and cfg.mango_design \
                        else self._design_of(run)
                    # the ceiling's rows are not the view's: nothing to save or compare
                    rows = str(rows_dir) if reads_documents(spec.language) else None
                    return self.build(couch, cfg.url, db, spec, None, ddoc, run["storage"], design=design,
                                      rows_dir=rows, **more)
                return self.build(couch, cfg.url, db, spec, spec.path(cfg.views), ddoc, run["storage"], **more)
            if self.switcher is not None:     # what the run's axes put around its build
                build = self.switcher.around(run, build)
            if failed_start is not None:
                result = failed_start
            else:
                result = next((r for r in (a.around(run, self, couch, db, ddoc, build) for a in self.plan_axes)
                               if r is not None), None)
                if result is None:
                    result = build()
        except KeyboardInterrupt:
            self._cleanup(couch, run, quick=True, db=db)
            raise
        except Exception as exc:  # a failing language is recorded and the matrix goes on
            run.update(status="error", error=_one_line(exc))
            self._cleanup(couch, run, db=db)
            self._write_manifest()
            self.on_event("done", dict(run))
            return
        result["storage"] = run["storage"]
        from dragnet.axes.model import run_axes

        result["bench"] = {"id": self.id, "index": run["index"], "language": spec.name, "repeat": run["repeat"],
                           "storage_label": run["storage"], "scenario": run["scenario"], "size": cfg.size,
                           "axes": run_axes({**run, "axes": axes or {}}, cfg.size),
                           # each axis's values in the order given (compare's OLD is the first), as shuffled
                           # rounds build them in any order
                           "axis_values": getattr(self, "axis_values", {})}
        from dragnet.axes.couchdb import versions_of

        versions = versions or versions_of(result.get("couchdb"))
        if versions is not None:
            result.setdefault("couchdb", {})["versions"] = versions
        if db != cfg.db:
            result["bench"]["db"] = db
        fig = Build.of(result)
        ok = fig.status == "ok"
        run.update(status=fig.status, error=None if ok else (fig.error or "build failed"), **fig.figures())
        if (result.get("summary") or {}).get("oom_held"):
            run["oom_held"] = True       # paused at its limit and let go: CouchDB is still up
        if result.get("iostat"):
            from dragnet.axes.scenario import iostat_averages
            run["iostat"] = iostat_averages(result)
        run["memory"] = result.get("memory")
        if ok and not (result.get("sizes") or {}).get("after"):
            # index size before cleanup deletes it (a scenario build records it itself; a compacted build
            # brings only its compacted sizes)
            from dragnet.measure.datadir import sizes as _sizes
            try:
                result["sizes"] = {**(result.get("sizes") or {}), "after": _sizes(couch, db, run["ddoc"])}
            except CouchError:
                pass
            # a design doc's copy is deleted by the build itself: its index as read right after the build
            built = (result.get("index") or {}).get("sizes")
            if result.get("sizes") and not result["sizes"]["after"].get("index") and built:
                result["sizes"]["after"]["index"] = built
        run["sizes"] = result.get("sizes")
        if ok and cfg.instructions and spec.view_file == DESIGN and reads_documents(spec.language):
            result["instructions"] = self._count_instructions(couch, db, run, spec)
        run["pidstat_peak_rss_kb"] = rss_peaks_kb((result.get("pidstat") or {}).get("summary")) or None
        for idx, value in ratios(self.manifest["runs"]).items():
            self.manifest["runs"][idx]["ratio_to_baseline"] = value
        result["bench"]["ratio_to_baseline"] = run["ratio_to_baseline"]
        if ok and result.get("rows"):
            run["rows"] = result["rows"]
            from dragnet.bench.fault import summary as comparison_summary
            comparison = self._compare(run, couch, db)
            if comparison is not None:
                result["comparison"] = comparison
                run["comparison"] = comparison_summary(comparison)
            repeats = self._compare_repeats(run, couch, db)
            if repeats is not None:
                result["repeat_comparison"] = repeats
                run["repeat_comparison"] = comparison_summary(repeats)
        run["result_file"] = self._write_result(run, result).name
        self._write_manifest()
        if fig.status == "oom" and not run.get("oom_held"):       # CouchDB is gone: the bench restarts it, which also drops the ddoc's task
            self.on_event("done", dict(run))
            return
        self._cleanup(couch, run, db=db)
        self.on_event("done", dict(run))

    def _count_instructions(self, couch: Couch, db: str, run: dict, spec: LanguageSpec) -> dict:
        """The run's revision's map functions counted under valgrind on the database's sample (the same
        documents for every run), or the reason they could not be."""
        from dragnet.qsbench import instructions

        try:
            if self._ir_docs is None or self._ir_docs[0] != db:
                self._ir_docs = (db, instructions.sample_docs(couch, db))
            server = instructions.server_for(spec.language, dict(self.env))
            out = instructions.count(server, self._design_of(run), self._ir_docs[1], dict(self.env)).as_dict()
        except (DragnetError, CouchError, OSError) as exc:
            out = {"error": _one_line(exc)}
        self.on_event("instructions", dict(out))
        return out

    def _revision(self, run: dict):
        """The design-doc revision a run built (several --ddoc), or None."""
        return self.config.axes.design_label(run.get("axes")) if self.config.axes is not None else None

    def _design_of(self, run: dict):
        """The design document a run built: its revision's (--ddoc A --ddoc B), Mango's, or the bench's."""
        revision = self._revision(run)
        if revision is not None:
            return self.config.axes.designs()[revision]
        return self.config.design

    def _engine_pool(self, run: dict):
        """The reference engine's processes for classifying differences (dragnet.bench.fault), one per
        design-doc revision, kept for the whole bench and closed at its end."""
        revision = self._revision(run)
        if self._pool is None:
            self._pool = {}
        if revision not in self._pool:
            from dragnet.bench.fault import EnginePool

            spec = resolve_languages([self.reference], self.config.views, design=True)[0]
            design = self.config.mango_design if spec.language == "query" and self.config.mango_design \
                else self._design_of(run)
            self._pool[revision] = EnginePool(spec.language, design, self.env)
        return self._pool[revision]

    def _first_with_rows(self, language: str, run: dict) -> list[dict]:
        """Runs of language with rows, of the same design-doc revision as run, in order."""
        revision = self._revision(run)
        return [r for r in self.manifest["runs"] if r["language"] == language and r.get("rows")
                and self._revision(r) == revision]

    def _compare_repeats(self, run: dict, couch: Couch | None = None, db: str | None = None) -> dict | None:
        """A later build of a non-reference engine against that engine's own first build: what differs
        is the function's fault by definition (the reference's repeats are compared in _compare)."""
        if run["language"] == self.reference:
            return None
        first = self._first_with_rows(run["language"], run)[0]
        if first is run:
            return None
        from dragnet.bench.fault import judge
        from dragnet.index.rows import compare_files

        return judge({"reference": run["language"], "reference_run": first["index"],
                      **compare_files(first["rows"], run["rows"])}, first["rows"], same_engine=True,
                     pool=self._engine_pool(run), couch=couch, db=db or self.config.db)

    def _compare(self, run: dict, couch: Couch | None = None, db: str | None = None) -> dict | None:
        """This run's rows against the reference language's first successful run of the same design-doc
        revision (None for that run), each difference classified (dragnet.index.fault)."""
        same = self._first_with_rows(self.reference, run)
        if run["language"] == self.reference:
            first = same[0]
            if first is run:
                return None
        else:
            first = same[0] if same else None
            if first is None:
                return {"reference": self.reference, "differences": None, "rows_compared": 0,
                        "note": f"no successful {self.reference} build to compare with"}
        from dragnet.bench.fault import judge
        from dragnet.index.rows import compare_files

        return judge({"reference": self.reference, "reference_run": first["index"],
                      **compare_files(first["rows"], run["rows"])}, first["rows"],
                     same_engine=run["language"] == self.reference, pool=self._engine_pool(run), couch=couch,
                     db=db or self.config.db)

    def _cleanup(self, couch: Couch, run: dict, quick: bool = False, db: str | None = None) -> None:
        try:
            info = cleanup(couch, db or self.config.db, run["ddoc"],
                           timeout=5.0 if quick else self.config.settle_timeout)
        except DragnetError as exc:
            info = {"error": _one_line(exc)}
        self.manifest["cleanups"].append({"index": run["index"], **info})
        self._write_manifest()


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text if isinstance(exc, DragnetError) else f"{type(exc).__name__}: {text}"
