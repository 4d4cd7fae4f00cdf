"""`dragnet bench` as one library call: `bench(request, on_event)` checks the options, runs what they ask for
(the matrix, the gate, Mango, a size sweep or Nouveau) and returns what a renderer in report/render/ prints.

It is a report-stage module because what `bench` shows at its end is built here: the report model of its
folder (model.bench_report), the gate's verdict (runner.gate, report.compare), the sweep's report
(sizes_table). bench/ below runs the builds and knows nothing of reports; the command only parses options,
calls `bench` and hands the outcome to a renderer.

Progress, warnings and notices go to on_event(kind, data) as they happen (report.terminal.bench_progress
shows them): "plan" (the runs planned, before any), "skipped" (a server without a file for this view),
"saved" (the run saved as a baseline), "nouveau_build" (one Nouveau build begun or done), and the bench's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from dragnet.axes.model import parse_list
from dragnet.errors import UsageError

MATRIX, GATE, MANGO, SIZES, NOUVEAU, AUTO = "matrix", "gate", "mango", "sizes", "nouveau", "auto"

Events = Callable[[str, dict], None]


@dataclass(frozen=True)
class BenchRequest:
    """The options of `dragnet bench`, as given (text lists unparsed: `bench` checks them)."""

    url: str
    db: str
    data: str | None = None
    views: str | None = None
    ddoc_sources: tuple = ()
    mango_source: str | None = None
    view_names: str | None = None
    strict: bool = False
    reference: str | None = None
    languages: str | None = None
    repeat: int | str = "auto"   # auto: adaptive rounds where they apply (bench.auto), else 3
    budget: float | None = None
    storages: str | None = None
    storage_label: str | None = None
    backend: str | None = None
    results_dir: str | None = None
    no_baseline: bool = False
    no_ceiling: bool = False
    n: int | None = None
    memories: str | None = None
    profiles: str | None = None
    caches: str | None = None
    function_profile: bool = False   # --profile: perf on every build (dragnet.index.build_profile)
    sizes_text: str | None = None
    plot_path: str | None = None
    save_baseline: str | None = None
    gate: str | None = None
    metric: str = "instructions"   # the gate judges two revisions of the map functions: their instructions
    max_runs: int = 15
    baseline_name: str | None = None
    store_dir: str | None = None
    nouveau_source: str | None = None
    queries: tuple = ()
    axis_raw: dict = field(default_factory=dict)   # the axis kinds' options by dest (cli.options.axis_options)


@dataclass
class BenchOutcome:
    """What a bench ran and what its renderer shows: `report` is a model.BenchReport (matrix), a
    gate.GateOutcome, a MangoReport, a sweep's report (sizes_table.sweep_report) or the Nouveau manifest.
    `interrupted`: Ctrl-C or SIGTERM stopped it; what was kept (then `report` is None)."""

    mode: str
    report: Any = None
    exit_code: int = 0
    interrupted: str | None = None
    folder: Any = None


@dataclass
class MangoReport:
    """`bench --mango`: the design-doc rows of every index's bench, Mango against each engine, the runs."""

    summary: dict
    runs: list[dict]
    design_groups: list


def bench(request: BenchRequest, on_event: Events | None = None) -> BenchOutcome:
    """Check the request (a one-line UsageError before anything runs), run it, build its report."""
    on_event = on_event or (lambda kind, data: None)
    from dataclasses import replace

    from dragnet.bench import auto as auto

    rounds = auto.parse_repeat(request.repeat)     # None: auto
    b_s = request.budget
    if b_s is not None and (rounds is not None or not b_s > 0):
        raise UsageError(f"--budget {b_s:g}: must be above 0 seconds" if rounds is None or not b_s > 0
                         else "--budget goes with --repeat auto")
    r = replace(request, repeat=rounds if rounds is not None else auto.FALLBACK_ROUNDS)
    if r.function_profile and r.nouveau_source:
        raise UsageError("--profile goes with view builds, not --nouveau")
    if r.nouveau_source:
        others = [o for o, v in (("--views", r.views), ("--ddoc", r.ddoc_sources),
                                 ("--mango", r.mango_source), ("--storage", r.storages), ("--sizes", r.sizes_text),
                                 ("--gate", r.gate), ("--memory", r.memories), ("--disk-profile", r.profiles),
                                 ("--cache", r.caches), ("--config-restart", r.axis_raw.get("restart_configs")))
                  if v]
        if others:
            raise UsageError(f"--nouveau with {', '.join(others)}: not combinable yet (--data, --languages, "
                             f"--repeat, --config, --query and --results are)")
        return _nouveau(r, on_event)
    if r.queries:
        raise UsageError("--query goes with --nouveau")
    from dragnet.bench import run as b
    from dragnet.results import store as store
    from dragnet.servers import user

    sdir = store.default_dir(r.store_dir)
    baseline_entry = store.baseline(sdir, r.baseline_name) if r.baseline_name else None   # a missing name: now
    from dragnet.axes import scenario_axis, storage

    st = storage.parse(r.storages, r.storage_label)
    design = None
    revisions: dict = {}
    if r.ddoc_sources:
        from dragnet.index import design as dsg
        from dragnet.axes.ddoc import revision_labels

        if r.views:
            raise UsageError("--ddoc and --views: give one of them")
        labelled = revision_labels(r.ddoc_sources)
        loaded = {label: dsg.load(src, views=parse_list(r.view_names, "--view")) for label, src in labelled.items()}
        design = next(iter(loaded.values()))
        if len(loaded) > 1:      # two or more: a revision axis, each build labelled with its revision
            revisions = loaded
    elif r.view_names or r.reference:
        raise UsageError("--view and --reference go with --ddoc")
    indexes = None
    languages = r.languages
    if r.mango_source:
        from dragnet.index import mango as mango

        if r.ddoc_sources or r.views or r.sizes_text:
            raise UsageError("--mango: not with --ddoc, --views or --sizes")
        indexes = mango.load(r.mango_source)
        languages = languages or "javascript"
    if languages is None:
        languages = design.language if design is not None else ",".join(
            [*b.DEFAULT_LANGUAGES, *(s.name for s in user.active())])
    langs = parse_list(languages, "--languages")
    if design is None and not r.mango_source:
        langs, skipped = b.user_languages(langs, r.views or str(b.DEFAULT_VIEWS))
        for why in skipped:
            on_event("skipped", {"message": why})
    if not langs:
        raise UsageError("--languages: no language given")
    scenarios = scenario_axis.parse(r.memories, r.profiles, r.caches)
    from dragnet.axes import q as axis_q
    from dragnet.bench.switch import AxisOptions

    qs = axis_q.parse(r.axis_raw.get("q_text"))
    q = int(qs[0]) if len(qs) == 1 else None     # one --q is the database's shards
    axis_opts = AxisOptions.from_options(r.axis_raw, ddoc=revisions)
    if r.mango_source and axis_opts.get("load"):
        from dragnet.axes.load import refuse_view_reads

        refuse_view_reads(axis_opts.get("load"), "--mango builds Mango indexes, which have no view to query")
    if (len(qs) > 1 or revisions) and r.sizes_text is not None:   # each size is its own database already
        raise UsageError("--sizes with --q N,N or several --ddoc: not combinable yet")
    config = b.BenchConfig(url=r.url, db=r.db, languages=langs, repeat=r.repeat, storages=st,
                           storage_label=r.storage_label, data=r.data, views=r.views or str(b.DEFAULT_VIEWS),
                           results_dir=r.results_dir, baseline=not r.no_baseline, q=q, n=r.n, backend=r.backend,
                           design=design, reference=r.reference, scenarios=scenarios, axes=axis_opts,
                           ceiling=not r.no_ceiling, profile=r.function_profile)
    if r.plot_path and not r.sizes_text:
        raise UsageError("--plot goes with --sizes (for a bench's charts: dragnet report DIR --plot)")
    if r.sizes_text is not None:
        from dragnet.bench import sizes as sz

        counts = sz.parse_sizes(r.sizes_text)    # a bad size is a one-line error before anything runs
        if r.baseline_name:    # --save-baseline saves the sweep (every size a cell); comparing is a step of its own
            raise UsageError(f"--sizes with --baseline: not combinable; compare the sweep afterwards: "
                             f"dragnet compare {r.baseline_name} SWEEP_DIR")
        if st:
            raise UsageError("--sizes and --storage: give one of them (label the storage with --storage-label)")

    if r.gate is not None:
        return _gate(config, r, on_event)
    if indexes is not None:
        return _mango(config, indexes, r.strict, on_event)
    search = _search_plan(design, r, st, scenarios, axis_opts, langs, on_event)
    if rounds is None and auto.applies(config, st, scenarios, axis_opts.axes(r.backend)) \
            and not (r.save_baseline or r.baseline_name):
        return _with_search(_auto(config, r, on_event), search, config, r, on_event)
    if r.sizes_text is not None:
        on_event("plan", {"runs": len(b.plan(b.with_ceiling(langs, not r.no_ceiling), r.repeat, ["x"],
                                             baseline=not r.no_baseline,
                                             scenarios=[s.label for s in scenarios] or [""]))})
        return _sizes(config, counts, r, sdir, on_event)
    run = b.Bench(config, on_event=on_event)
    on_event("plan", {"runs": len(b.plan(run.languages(), r.repeat, st or ["x"], baseline=not r.no_baseline,
                                         scenarios=[s.label for s in scenarios] or [""],
                                         axes=axis_opts.axes(r.backend)))})
    try:
        manifest = run.run()
    except KeyboardInterrupt as exc:    # Ctrl-C, or SIGTERM/SIGHUP as dragnet.signals.Terminated
        manifest = run.manifest
        done = sum(1 for x in manifest.get("runs", []) if x["status"] in ("ok", "error"))
        return BenchOutcome(MATRIX, exit_code=getattr(exc, "exit_code", 130), folder=run.dir,
                            interrupted=f"interrupted: {done} finished runs kept in {run.dir}")
    from dragnet.index import fault
    from dragnet.report import model

    try:
        searched = _search(search, config, r, run.dir, on_event)
    except KeyboardInterrupt as exc:     # the views are built: kept, as the finished Nouveau builds are
        return BenchOutcome(MATRIX, exit_code=getattr(exc, "exit_code", 130), folder=run.dir,
                            interrupted=f"interrupted during the Nouveau builds: the views' runs and the finished "
                                        f"builds are kept in {run.dir}")
    rep = model.bench_report(run.dir, manifest, scenarios, store_dir=sdir, save_as=r.save_baseline,
                             baseline_entry=baseline_entry, notify=_saved(on_event))
    runs, failed = rep.runs, rep.failed
    bad = (failed and len(failed) == len(runs)) or fault.blocking_runs(runs, r.strict) or _differ(searched)
    return BenchOutcome(MATRIX, rep, exit_code=1 if bad else 0, folder=run.dir)


def _search_plan(design, r: BenchRequest, st, scenarios, axis_opts, langs, on_event: Events) -> list[str] | None:
    """The languages a design doc's `nouveau` indexes are built on after its views, or None (none to build,
    or skipped: said in one line)."""
    if design is None or not design.nouveau:
        return None
    from dragnet.bench import search_rounds as nb
    from dragnet.couchdb.client import connect

    names = ", ".join(design.nouveau)
    restarts = [o for o, v in (("--storage", st), ("--memory/--disk-profile/--cache", scenarios),
                               ("--backend", r.backend), ("--sizes", r.sizes_text), ("--gate", r.gate),
                               ("axes", axis_opts.axes(r.backend))) if v]
    if restarts:
        on_event("skipped", {"message": f"Nouveau indexes {names} of {design.id} skipped: not built with "
                                        f"{', '.join(restarts)} yet (bench them alone: bench --nouveau FILE)"})
        return None
    why = nb.unavailable(connect(r.url))
    if why is not None:
        on_event("skipped", {"message": f"Nouveau indexes {names} of {design.id} skipped: Nouveau is not running "
                                        f"(start it with: dragnet couch up --nouveau)"})
        return None
    return nb.languages_for(langs, design.language)


def _search(languages: list[str] | None, config, r: BenchRequest, folder, on_event: Events) -> list[dict]:
    """The design doc's Nouveau indexes, built after its views on the same database (bench.nouveau)."""
    if not languages:
        return []
    from dragnet.bench import search_rounds as nb
    from dragnet.couchdb.client import connect

    def shown(rnd, variant, res) -> None:
        on_event("nouveau_build", {"round": rnd, "rounds": r.repeat, "label": variant.label,
                                   "summary": None if res is None else res["summary"]})

    return nb.beside_views(connect(r.url), db=config.db, design=config.design.id, indexes=config.design.nouveau, languages=languages,
                           rounds=r.repeat, folder=folder, on_build=shown)


def _differ(manifests: list[dict]) -> bool:
    return any(c["differences"] for m in manifests for c in m["checks"])


def _with_search(outcome: BenchOutcome, languages, config, r: BenchRequest, on_event: Events) -> BenchOutcome:
    """An adaptive bench's outcome with the design doc's Nouveau indexes built after it, in its report."""
    if not languages or outcome.interrupted:
        return outcome
    from dragnet.report import model

    try:
        searched = _search(languages, config, r, outcome.folder, on_event)
    except KeyboardInterrupt as exc:
        return BenchOutcome(AUTO, exit_code=getattr(exc, "exit_code", 130), folder=outcome.folder,
                            interrupted=f"interrupted during the Nouveau builds: the rounds and the finished builds "
                                        f"are kept in {outcome.folder}")
    rep, out = outcome.report
    outcome.report = (model.build([str(outcome.folder)]), out)
    outcome.exit_code = max(outcome.exit_code, 1 if _differ(searched) else 0)
    return outcome


def _auto(config, r: BenchRequest, on_event: Events) -> BenchOutcome:
    """`--repeat auto` (bench.auto): rounds until every adjacent pair of languages is decided; the report of
    its folder and the rounds' outcome."""
    from dragnet.bench import auto as auto
    from dragnet.index import fault
    from dragnet.report import model

    on_event("plan", {"runs": "auto"})
    out = auto.run_auto(config, max_runs=r.max_runs, budget_s=auto.BUDGET_S if r.budget is None else r.budget,
                        on_event=on_event)
    rep = model.build([str(out.folder)])
    bad = not out.order or fault.blocking_runs(out.runs, r.strict)     # nothing built, or rows that differ
    return BenchOutcome(AUTO, (rep, out), exit_code=1 if bad else 0, folder=out.folder)


def _saved(on_event: Events) -> Callable[[str], None]:
    return lambda text: on_event("saved", {"message": text})


def _gate(config, r: BenchRequest, on_event: Events) -> BenchOutcome:
    from dragnet.report import compare as c
    from dragnet.runner import gate as g

    threshold = c.parse_threshold(r.gate, "--gate")
    g.check(config, threshold, r.max_runs, r.metric)
    try:
        outcome = g.run_gate(config, threshold, metric=r.metric, max_runs=r.max_runs, on_event=on_event)
    except KeyboardInterrupt as exc:
        return BenchOutcome(GATE, exit_code=getattr(exc, "exit_code", 130),
                            interrupted="interrupted: the finished rounds are kept in their bench folders")
    return BenchOutcome(GATE, outcome, exit_code=outcome.exit_code)


def _mango(config, indexes, strict: bool, on_event: Events) -> BenchOutcome:
    """bench --mango: one bench per index, then the design table and Mango against each engine."""
    from dragnet.bench import mango as mb
    from dragnet.bench import run as b
    from dragnet.index import fault
    from dragnet.report import tables as rp
    from dragnet.results.load import load_results

    on_event("plan", {"runs": len(b.plan(["mango", *config.languages], config.repeat, config.storages or ["x"],
                                         baseline=False))})
    try:
        summary = mb.run(config, indexes, on_event=on_event)
    except KeyboardInterrupt as exc:
        return BenchOutcome(MANGO, exit_code=getattr(exc, "exit_code", 130),
                            interrupted="interrupted: finished runs are kept")
    runs = [x for ix in summary["indexes"] for x in ix["manifest"]["runs"]]
    dgroups = rp.build_design_report(load_results([ix["dir"] for ix in summary["indexes"]]))
    bad = fault.blocking_runs(runs, strict) or not any(x["status"] == "ok" for x in runs)
    return BenchOutcome(MANGO, MangoReport(summary, runs, dgroups), exit_code=1 if bad else 0,
                        folder=summary["dir"])


def _sizes(config, counts, r: BenchRequest, sdir, on_event: Events) -> BenchOutcome:
    """The size sweep: run it, save it as a baseline (save_baseline: each size its own cells), its report."""
    from dragnet.bench import sizes as sz

    try:
        summary = sz.run_sweep(config, counts, on_event=on_event)
    except KeyboardInterrupt as exc:
        return BenchOutcome(SIZES, exit_code=getattr(exc, "exit_code", 130),
                            interrupted="interrupted: finished sizes are kept (sizes.json)")
    if r.save_baseline:
        from dragnet.report.model import saved_runs
        from dragnet.results.load import load_results

        saved_runs(summary["dir"], load_results([summary["dir"]]), sdir, r.save_baseline, None,
                   notify=_saved(on_event))
    return sizes_outcome(summary["dir"], r.plot_path)


def sizes_outcome(folder, plot_path=None) -> BenchOutcome:
    """A sweep's report from its folder alone (table, "disk matters?" per size, slopes, memory marks, chart)."""
    from pathlib import Path

    from dragnet.report import sizes_table

    rep = sizes_table.sweep_report(Path(folder), plot_path)
    return BenchOutcome(SIZES, rep, exit_code=1 if rep["runs"] and rep["n_ok"] == 0 else 0, folder=Path(folder))


def _nouveau(r: BenchRequest, on_event: Events) -> BenchOutcome:
    import time

    from dragnet.axes import config as axis_config
    from dragnet.bench import search_rounds as nb
    from dragnet.index import search_build as nv
    from dragnet.couchdb.client import connect

    indexes = nv.load_indexes(r.nouveau_source)
    if len(indexes) != 1:
        raise UsageError(f"--nouveau {r.nouveau_source}: one index per bench for now ({len(indexes)} given)")
    langs = parse_list(r.languages or ",".join(nv.LANGUAGES), "--languages")
    out = r.results_dir or f"results/nouveau-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"

    def shown(rnd, variant, res) -> None:
        on_event("nouveau_build", {"round": rnd, "rounds": r.repeat, "label": variant.label,
                                   "summary": None if res is None else res["summary"]})

    couch = connect(r.url)
    if r.data:    # imported once, as a view bench imports it (known again by its marker)
        from dragnet.axes import q as axis_q
        from dragnet.data.ensure import ensure_data

        qs = axis_q.parse(r.axis_raw.get("q_text"))
        ensure_data(couch, r.db, r.data, q=int(qs[0]) if len(qs) == 1 else None, n=r.n,
                    progress=lambda text: on_event("import", {"message": text}))
    manifest = nb.run(couch, db=r.db, index=indexes[0], languages=langs,
                      settings=axis_config.parse_all(list(r.axis_raw.get("configs") or [])), rounds=r.repeat,
                      queries=tuple(r.queries) or nv.DEFAULT_QUERIES, results_dir=out, on_build=shown)
    bad = any(c["differences"] for c in manifest["checks"])
    return BenchOutcome(NOUVEAU, manifest, exit_code=1 if bad else 0, folder=f"{out}/{nb.MANIFEST}")
