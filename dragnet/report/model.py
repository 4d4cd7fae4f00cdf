"""The report model: everything `dragnet report` shows, built once from results; report/render/ renders it.

build() reads the results (and the baseline's, for a comparison) and computes every table, ranking, verdict
and section; the renderers (console, Markdown, CSV, JSON, HTML, PNG charts) only format what it holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from dragnet.errors import UsageError


@dataclass
class Report:
    """One report over results files and bench folders."""

    results: tuple[str, ...]               # what was given (files, folders)
    docs: list[dict] = field(default_factory=list, repr=False)   # the addview results read from them
    groups: list = field(default_factory=list)        # tables.Group: view-file rows
    design_groups: list = field(default_factory=list)  # tables.DesignGroup: design-doc rows
    disk_rows: list = field(default_factory=list)      # bench.scenario.Row: "disk matters?"
    disk_reference: str | None = None
    comparison: Any = None                 # report.compare.Comparison against --baseline
    io_rows: list = field(default_factory=list)        # iostat per build (io_table.IoGroup; columns.IO)
    io_notes: list[str] = field(default_factory=list)
    by: list[str] | None = None            # --by axes and their cells (by_axis.compare)
    by_groups: Any = None
    shares: list = field(default_factory=list)         # share.Workload: each engine against the ceiling
    load: dict | None = None               # report.load.section: builds under an application load
    forecasts: list = field(default_factory=list)       # report.forecast_report.ForecastReport
    forecast_only: bool = False            # a forecast folder whose sweep's builds were not kept
    nouveau: dict | None = None            # report.nouveau.section: the Nouveau index builds among the results
    beam: dict | None = None               # report.beam_activity.section: beam's activity per engine


def build(results: Sequence[str], *, baseline: Sequence[str] = (), reference: str | None = None,
          by: str | None = None, forecast_alone: bool = True) -> Report:
    """The report over `results`; with `baseline`, compared as `dragnet compare` does; with `by`, along those
    axes. A folder holding only a forecast is reported as that forecast when `forecast_alone`."""
    from dragnet.axes.scenario import disk_matters, runs_from_results
    from dragnet.report import load as report_load
    from dragnet.report import share, tables
    from dragnet.report.io_table import io_rows
    from dragnet.report import search_text as nouveau
    from dragnet.results.load import is_nouveau, load_results

    results = tuple(results)
    try:
        found = load_results(results, nouveau=True)
    except UsageError:
        forecasts = _forecasts(results)
        if not forecasts or not forecast_alone or by or baseline:
            raise
        return Report(results, forecasts=forecasts, forecast_only=True)
    docs = [d for d in found if not is_nouveau(d)]
    rep = Report(results, docs, nouveau=nouveau.section([d for d in found if is_nouveau(d)]))
    # Nouveau builds only: no view tables; --by and --baseline judge the Nouveau builds instead
    measured = docs or [d for d in found if is_nouveau(d)]
    if by:
        from dragnet.report import by_axis

        rep.by = by_axis.parse_by(by)
        rep.by_groups = by_axis.compare(measured, rep.by)
    searches = [d for d in found if is_nouveau(d)]
    if not docs:
        rep.design_groups = tables.build_design_report(searches, reference)   # one table with views' rows
        if baseline:
            rep.comparison = _against(baseline, measured, results)
        rep.forecasts = _forecasts(results)
        return rep
    sc_runs, rep.disk_reference = runs_from_results(docs)
    rep.disk_rows = disk_matters(sc_runs, rep.disk_reference) if rep.disk_reference else []
    rep.groups = tables.build_report(docs)
    rep.design_groups = tables.build_design_report(docs + searches, reference)   # search indexes: rows too
    if baseline:
        rep.comparison = _against(baseline, docs, results)
    rep.io_rows, rep.io_notes = io_rows(docs)
    rep.shares = share.shown(share.workloads(docs))   # per storage and axis combination, so --by sees its own
    rep.beam = beam_section(docs)
    rep.load = report_load.section(docs)
    rep.forecasts = _forecasts(results)
    return rep


def beam_section(docs: list[dict]) -> dict | None:
    from dragnet.report import beam_activity

    return beam_activity.section(docs)


def _against(baseline: Sequence[str], new: list[dict], results: Sequence[str]):
    """The comparison with --baseline, as `dragnet compare` makes it (views, or Nouveau builds)."""
    from dragnet.report import compare
    from dragnet.results import store

    old = [r for spec in baseline for r in store.load_side(spec, store.default_dir())[1]]
    return compare.compare(old, new, old_label=" ".join(baseline), new_label=" ".join(results))


def _forecasts(results: Sequence[str]) -> list:
    """The forecasts among the results (forecast.json files, or in the folders), each as its report."""
    from dragnet.forecast.run import find_forecasts
    from dragnet.report import forecast_report

    return [forecast_report.build(f) for f in find_forecasts(results)]


# ---------------------------------------------------------------- the report at the end of `dragnet bench`

@dataclass
class BenchReport:
    """What `dragnet bench` shows once its runs are done: the report tables of its folder, the disk verdict
    of its scenarios, the engine share, failures, row differences and the comparison with a saved baseline."""

    folder: Any
    manifest: dict
    docs: list[dict] = field(default_factory=list, repr=False)
    groups: list = field(default_factory=list)
    design_groups: list = field(default_factory=list)
    disk_rows: list = field(default_factory=list)
    disk_reference: str | None = None
    shares: list = field(default_factory=list)
    load: dict | None = None
    comparison: Any = None
    beam: dict | None = None
    nouveau: dict | None = None            # report.nouveau.section: the design doc's Nouveau index builds

    @property
    def runs(self) -> list[dict]:
        return self.manifest["runs"]

    @property
    def failed(self) -> list[dict]:
        return [r for r in self.runs if r["status"] not in ("ok", "oom", "not_applicable")]


def bench_report(folder, manifest: dict, scenarios: Sequence = (), *, store_dir=None, save_as: str | None = None,
                 baseline_entry: dict | None = None, notify=None) -> BenchReport:
    """The report of a finished bench in `folder`; with `save_as` the folder is saved in the store first, and
    with `baseline_entry` compared with that saved run (notify(text): what was saved, as it happens)."""
    from dragnet.report import load as report_load
    from dragnet.report import share, tables
    from dragnet.results.load import load_results

    from dragnet.report import search_text as nouveau
    from dragnet.results.load import is_nouveau

    runs = manifest["runs"]
    found = load_results([folder], nouveau=True) if any(r["result_file"] for r in runs) else []
    docs = [d for d in found if not is_nouveau(d)]
    searches = [d for d in found if is_nouveau(d)]   # a design doc's Nouveau indexes, built after its views
    rep = BenchReport(folder, manifest, docs, tables.build_report(docs), tables.build_design_report(docs + searches))
    rep.nouveau = nouveau.section(searches)
    rep.shares = share.shown(share.workloads(docs))
    rep.beam = beam_section(docs)
    rep.load = report_load.section(docs)
    rep.comparison = saved_runs(folder, docs, store_dir, save_as, baseline_entry, notify)
    if scenarios:
        from dragnet.axes.scenario import disk_matters, reference_label

        rep.disk_reference = reference_label(scenarios)
        rep.disk_rows = disk_matters(runs, rep.disk_reference)
    return rep


def saved_runs(folder, docs, sdir, save_as, baseline_entry, notify=None):
    """--save-baseline: the run into the store; --baseline: its comparison with the saved baseline (or None)."""
    from dragnet.report import compare as c
    from dragnet.results import store as store
    from dragnet.results.load import load_results

    if save_as and docs:     # saved first: a comparison that finds nothing in common loses nothing
        entry = store.save(sdir, folder, save_as)
        if notify:
            notify(f"saved as baseline {save_as} in {sdir} ({entry['path']})")
    if baseline_entry is None or not docs:
        return None
    return c.compare(load_results([sdir / baseline_entry["path"]]), docs, old_label=store.label(baseline_entry),
                     new_label=str(folder))
