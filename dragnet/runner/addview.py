"""`dragnet addview` as one library call: `addview(request, on_event)` checks the options, puts the view or
design document, or benchmarks it (plain, --per-view, --mango, --nouveau), and returns what a renderer in
report/render/ prints (console.addview_outcome, json.addview_outcome).

A build-stage module: what addview shows is the build's own results and per-view rows (worded by
report.render.build_text); the renderers above add the load section and Nouveau's lines.

Progress and notices go to on_event(kind, data) as they happen: "building" (a build begins; data["label"]
is the view of a --per-view pass, else None), "poll" (data["tracker"], data["poll"]: one /_active_tasks
poll), "note" and "warning" (data["message"]), and "mango_built" (one --mango index built: data["index"],
data["outcome"], data["warning"], data["language"], data["db"]).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

from dragnet.index import addview as av
from dragnet.errors import UsageError
from dragnet.measure.pidstat import DEFAULT_PATTERN

PUT_DESIGN, ADD_VIEW, BENCHMARK, PER_VIEW, MANGO, NOUVEAU = \
    "put_design", "add_view", "benchmark", "per_view", "mango", "nouveau"

Events = Callable[[str, dict], None]


@dataclass(frozen=True)
class AddviewRequest:
    """The options of `dragnet addview`, as given (`addview` checks them)."""

    url: str
    db: str
    view_path: str | None = None
    ddoc: str | None = None
    mango_source: str | None = None
    view: str | None = None
    language: str | None = None
    reduce: str | None = None
    benchmark: bool = False
    update: int | None = None
    update_edits: float = 0.5
    update_batch: int = 50
    allow_writes: bool = False
    per_view: bool = False
    compact: bool = False
    load_text: str | None = None
    interval: float = 1.0
    timeout: float | None = None
    pidstat: bool = True
    pidstat_pattern: str = DEFAULT_PATTERN
    couchdb_log: str | None = None
    storage: str = "auto"
    results_dir: str = "results"
    nouveau_source: str | None = None
    queries: tuple = ()
    argv: list = field(default_factory=lambda: ["dragnet", "addview"])
    profile: bool = False      # --profile: perf on CouchDB during the build (index.build_profile)


@dataclass
class AddviewOutcome:
    """What addview did, for a renderer. `saved`: the design doc put (put_design, add_view); `design`: the
    loaded --ddoc SOURCE; `outcome`: a benchmark's build.addview.Outcome; `beside`: load ran beside it;
    `per_view`: the rows of --per-view; `mango`: [(index, Outcome, warning)]; `nouveau`: the build's results."""

    mode: str
    db: str
    saved: dict | None = None
    design: Any = None
    outcome: Any = None
    beside: bool = False
    per_view: list | None = None
    mango: list | None = None
    language: str | None = None
    nouveau: dict | None = None


def addview(r: AddviewRequest, on_event: Events | None = None) -> AddviewOutcome:
    """Check the request (a one-line UsageError before anything runs), then run it."""
    on_event = on_event or (lambda kind, data: None)
    from dragnet.couchdb.client import connect

    design = None
    ddoc, view = r.ddoc, r.view
    if r.profile and (r.nouveau_source or r.mango_source or r.per_view):
        raise UsageError("--profile goes with one view or design document build, not --nouveau, --mango or "
                         "--per-view")
    if r.nouveau_source:
        if (r.view_path or ddoc or r.reduce or r.update or r.per_view or r.compact or r.mango_source
                or r.load_text is not None or not r.benchmark):
            raise UsageError("--nouveau goes with --benchmark, without VIEW_PATH, --ddoc, --mango, --reduce, "
                             "--update, --per-view, --compact or --load")
        return _nouveau(r)
    if r.queries:
        raise UsageError("--query goes with --nouveau")
    beside = None
    if r.load_text is not None:
        from dragnet.load.beside import Beside
        from dragnet.load.generator import require_loopback
        from dragnet.load.spec import parse as parse_load

        if not r.benchmark or r.mango_source or r.per_view:
            raise UsageError("--load goes with --benchmark (not with --mango or --per-view)")
        spec = parse_load(r.load_text)
        require_loopback(r.url)
        beside = Beside(spec, on_note=lambda m: on_event("warning", {"message": m})) if not spec.idle else None
    if r.mango_source:
        if r.view_path or ddoc or r.reduce or r.update or r.per_view or not r.benchmark:
            raise UsageError("--mango goes with --benchmark, without VIEW_PATH, --ddoc, --reduce, --update or "
                             "--per-view")
        return _mango(r, on_event)
    if r.view_path is None:
        if not ddoc:
            raise UsageError("give a VIEW_PATH, or a whole design document with --ddoc SOURCE")
        from dragnet.index import design as dsg

        design = dsg.load(ddoc, views=[v.strip() for v in view.split(",") if v.strip()] if view else None)
        ddoc = view = None
        if r.reduce:
            raise UsageError("--reduce goes with a VIEW_PATH; a design document brings its own reduces")
    cfg = av.Config(view_path=r.view_path or "", db=r.db, ddoc=ddoc, view=view, language=r.language,
                    reduce=r.reduce, interval=r.interval, timeout=r.timeout, pidstat=r.pidstat,
                    pidstat_pattern=r.pidstat_pattern, couchdb_log=r.couchdb_log, storage=r.storage,
                    results_dir=r.results_dir, design=design, update=r.update or 0, update_edits=r.update_edits,
                    update_batch=r.update_batch, allow_writes=r.allow_writes, compact=r.compact, beside=beside,
                    argv=list(r.argv), profile=r.profile)
    if r.profile and not r.benchmark:
        raise UsageError("--profile goes with --benchmark")
    if r.update and not r.benchmark:
        raise UsageError("--update goes with --benchmark")
    if r.compact and not r.benchmark:
        raise UsageError("--compact goes with --benchmark")
    if r.per_view and (design is None or not r.benchmark):
        raise UsageError("--per-view goes with --ddoc SOURCE and --benchmark")
    couch = connect(r.url)
    if not r.benchmark and design is not None:
        return AddviewOutcome(PUT_DESIGN, r.db, saved=av.put_design(couch, cfg), design=design)
    if not r.benchmark:
        return AddviewOutcome(ADD_VIEW, r.db, saved=av.add_view(couch, cfg))

    def on_poll(tracker, poll) -> None:
        on_event("poll", {"tracker": tracker, "poll": poll})

    def on_note(msg: str) -> None:
        on_event("note", {"message": msg})

    if r.per_view:
        from dragnet.index import per_view as pv

        def build(sub, label):
            on_event("building", {"label": label})
            o = av.run_benchmark(couch, replace(cfg, design=sub), on_poll=on_poll, on_note=on_note)
            return o.results, (str(o.path) if o.path else None)

        rows, _ = pv.run(design, build)
        return AddviewOutcome(PER_VIEW, r.db, design=design, per_view=rows)
    on_event("building", {"label": None})
    out = av.run_benchmark(couch, cfg, on_poll=on_poll, on_note=on_note)
    return AddviewOutcome(BENCHMARK, r.db, outcome=out, beside=beside is not None)


def _mango(r: AddviewRequest, on_event: Events) -> AddviewOutcome:
    """addview --mango --benchmark: each index built by Mango (or, with --language, as JavaScript)."""
    from dragnet.index import mango as mango
    from dragnet.index.views import LANGUAGES, canonical_language
    from dragnet.couchdb.client import connect

    language = r.language
    indexes = mango.load(r.mango_source)
    couch = connect(r.url)
    if language in (None, mango.LANGUAGE, mango.ENGINE):
        designs = [(ix, mango.validated_design(couch, ix)) for ix in indexes]    # CouchDB judges all first
        language = None
    else:
        if LANGUAGES.get(canonical_language(language), ("js",))[0] != "js":
            raise UsageError(f"--mango --language {language}: the equivalent view is JavaScript")
        designs = [(ix, mango.js_design(ix)) for ix in indexes]
    out = []
    for ix, design in designs:
        cfg = av.Config(view_path="", db=r.db, language=language, interval=r.interval, timeout=r.timeout,
                        pidstat=r.pidstat, pidstat_pattern=r.pidstat_pattern, couchdb_log=r.couchdb_log,
                        storage=r.storage, results_dir=r.results_dir, design=design, argv=list(r.argv))
        o = av.run_benchmark(couch, cfg)
        warning = mango.empty_warning(ix, o.results["summary"].get("rows"))
        out.append((ix, o, warning))
        on_event("mango_built", {"index": ix, "outcome": o, "warning": warning, "language": language, "db": r.db})
    return AddviewOutcome(MANGO, r.db, mango=out, language=language)


def _nouveau(r: AddviewRequest) -> AddviewOutcome:
    from dragnet.index import search_build as nv
    from dragnet.couchdb.client import connect

    indexes = nv.load_indexes(r.nouveau_source)
    if len(indexes) != 1:
        raise UsageError("--nouveau: addview builds one index; give bench --nouveau a file of several")
    cfg = nv.Config(url=r.url, db=r.db, index=indexes[0], language=r.language or "javascript",
                    queries=tuple(r.queries) or nv.DEFAULT_QUERIES, interval=r.interval,
                    timeout=r.timeout or nv.Config.timeout, couchdb_log=r.couchdb_log, results_dir=r.results_dir)
    return AddviewOutcome(NOUVEAU, r.db, nouveau=nv.build(connect(r.url), cfg))
