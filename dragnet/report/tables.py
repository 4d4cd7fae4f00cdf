"""The report's groups from addview results: medians over repeats, ratios to the Erlang baseline, spread,
resources, rankings. Pure: it takes the results' dicts (dragnet.results.load reads them) and returns groups;
report/render/ shows them (cells: their text; markdown, csv, json: the formats).

Rules (also in the README):
- A result's *label* is the bench language name (javascript, javascript_quickjs_es2015, erlang_baseline …)
  recorded by `dragnet bench`; for a result made elsewhere it is derived from the view (language, plus
  `_es2015` for an ES2015 source and `erlang_baseline` for the baseline map).
- *Repeat*: the repeat index recorded by the bench; otherwise the rank of the result by start time among
  results of the same label and storage.
- *Ratio to baseline*: docs/s (by wall time) of the result divided by docs/s of the Erlang baseline of the
  same storage and repeat (same bench run when recorded); without a baseline of that repeat, the baseline
  of that storage nearest in start time. The median of the per-repeat ratios is shown.
- *Ranking*: dragnet.report.ranking (decide's separated / tied / unresolved, paired by bench round).
- *--baseline*: the comparison of dragnet.report.compare (per cell: NEW/OLD with a 99% interval, paired by
  round; improved / regressed / no change / undecided).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Iterable, Sequence

from dragnet.results.load import ALL_VIEWS, BASELINE_LABEL
from dragnet.results.record import Build
from dragnet.measure.cpu import CoreTime, core_time
from dragnet.measure.pidstat import WATCHERS
from dragnet.servers.registry import LANGUAGES as QS_LANGUAGES
from dragnet.measure.stats import Summary, median, ratio, summarize
from dragnet.report import ranking as ranking_model

# pidstat command families that are not a query server
INFRA_FAMILIES = WATCHERS | {"beam"}


# ---------------------------------------------------------------- repeats and ratios

def assign_repeats(runs: list[Build]) -> list[Build]:
    """The runs, those without a recorded repeat given their rank by start time within (bench, design doc and
    views, label, storage)."""
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(runs):
        if r.repeat is None:
            groups.setdefault((r.bench_id, r.ddoc, r.views, r.label, r.storage), []).append(i)
    out = list(runs)
    for members in groups.values():
        for rank, i in enumerate(sorted(members, key=lambda i: runs[i].started_at)):
            out[i] = replace(runs[i], repeat=rank)
    return out


def pair_baseline(run: Build, baselines: Sequence[Build]) -> Build | None:
    """The successful baseline run measured with `run`: same bench, storage and repeat, else nearest in time."""
    same_storage = [b for b in baselines if b.ok and b.storage == run.storage and b.docs_per_s]
    if not same_storage:
        return None
    same_bench = [b for b in same_storage if b.bench_id == run.bench_id]
    for b in same_bench:
        if b.repeat == run.repeat:
            return b
    pool = same_bench or same_storage
    return min(pool, key=lambda b: abs(b.started_at - run.started_at))


def assign_ratios(runs: list[Build], baseline_label: str = BASELINE_LABEL) -> list[Build]:
    """The runs with ratio = docs/s of the run / docs/s of its paired Erlang baseline run."""
    baselines = [r for r in runs if r.label == baseline_label]
    out = []
    for r in runs:
        b = pair_baseline(r, baselines) if r.ok else None
        out.append(replace(r, ratio=ratio(r.docs_per_s, b.docs_per_s) if b else None))
    return out


def view_source(result: dict) -> str:
    view = result.get("view") or {}
    return " ".join(str(view.get("source") or "").split())


def split_variants(runs: list[Build], results: Sequence[dict]) -> list[Build]:
    """Results under one label but with different map sources (e.g. a deliberately throwing function) are
    different rows: the most common source keeps the label, the others get "label [view file]"."""
    by_label: dict[str, list[tuple[int, str, str]]] = {}
    for i, (run, res) in enumerate(zip(runs, results)):
        if (res.get("bench") or {}).get("language") or run.ddoc:   # a design doc is its own row already
            continue
        path = str((res.get("view") or {}).get("path") or "")
        by_label.setdefault(run.label, []).append((i, view_source(res), Path(path).stem or "?"))
    out = list(runs)
    for members in by_label.values():
        counts: dict[str, int] = {}
        for _, src, _ in members:
            counts[src] = counts.get(src, 0) + 1
        if len(counts) < 2:
            continue
        main = max(counts, key=lambda src: counts[src])
        for i, src, stem in members:
            if src != main:
                out[i] = replace(runs[i], label=f"{runs[i].label} [{stem}]")
    return out


def prepare(results: Iterable[dict]) -> list[Build]:
    results = list(results)
    runs = split_variants([Build.of(x) for x in results], results)
    return assign_ratios(assign_repeats(runs))


# ---------------------------------------------------------------- groups

@dataclass
class Group:
    """One (language, storage) row of the report."""

    label: str
    storage: str
    n: int
    failed: int
    errors: list[str]
    all_cps: Summary | None
    one_cps: Summary | None
    total_s: Summary | None
    wall_s: Summary | None
    docs_per_s: Summary | None
    ratio: Summary | None
    qs_family: str | None
    beam_cpu: float | None
    beam_rss_mb: float | None
    qs_cpu: float | None
    qs_rss_mb: float | None
    beam_kb_wr: float | None = None
    qs_kb_wr: float | None = None
    builds: list[Build] = field(default_factory=list)   # the successful builds, for the ranking (report.ranking)

    @property
    def key(self) -> tuple[str, str]:
        return (self.label, self.storage)

    def as_dict(self) -> dict:
        return dict(asdict(replace(self, builds=[])), builds=[b.ranked() for b in self.builds])


def _summ(values: Iterable[float | None]) -> Summary | None:
    vals = [v for v in values if v is not None]
    return summarize(vals) if vals else None


def _med(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return median(vals) if vals else None


# CouchDB language -> the pidstat families (dragnet.measure.pidstat.FAMILIES) of its query-server processes, in
# order of preference; pidstat sees every matching process on the machine, so the expected one is
# preferred over whichever family happened to use most CPU
QS_FAMILIES = {lang.name: lang.processes for lang in QS_LANGUAGES if lang.processes}


def qs_family_of(runs: Sequence[Build]) -> str | None:
    """The query-server family of runs: the one expected for their language when pidstat saw it, else the
    non-infrastructure family with most CPU; None for Erlang views, which run inside beam."""
    # Erlang views and Mango indexes (language "query", mango_native_proc) run inside beam
    if not runs or all(r.language in ("erlang", "query") or r.label.startswith("erlang") for r in runs):
        return None
    seen = {fam for r in runs for fam in r.resources}
    for lang in dict.fromkeys(r.language for r in runs):
        for fam in QS_FAMILIES.get(lang, ()):
            if fam in seen:
                return fam
    cpu: dict[str, float] = {}
    for r in runs:
        for fam, s in r.resources.items():
            if fam not in INFRA_FAMILIES:
                cpu[fam] = cpu.get(fam, 0.0) + s.get("cpu_mean", 0.0)
    return max(cpu, key=lambda f: cpu[f]) if cpu else None


def _label_order(label: str) -> tuple:
    return (0 if label == BASELINE_LABEL else 1, label)


def _storage_order(storage: str) -> tuple:
    return ({"disk": 0, "tmpfs": 1}.get(storage, 2), storage)


def kernel_cpu_pct(r: Build, in_beam: bool) -> tuple[float | None, float | None]:
    """(beam, query servers) CPU of one build as % of a core over its interval, from the kernel's accounting
    (dragnet.measure.cpu.core_time); None where the file has none (pidstat's 1 s samples miss short builds)."""
    ct = core_time(r.data.get("cpu") if isinstance(r.data, dict) else None, in_beam=in_beam)
    if not isinstance(ct, CoreTime) or not ct.interval_s:
        return None, None
    pct = lambda v: None if v is None else 100.0 * v / ct.interval_s  # noqa: E731
    return pct(ct.beam_s), pct(ct.qs_s)


def _cpu_pct(r: Build, fam: str | None, which: int) -> float | None:
    pct = kernel_cpu_pct(r, fam is None)[which]
    if pct is None and r.search:
        # a Nouveau build records no core_time but its own kernel split of its wall time, per family
        f = "beam" if which == 0 else fam
        return (r.resources.get(f) or {}).get("cpu_mean") if f else None
    return pct


def _kernel_med(good: Sequence[Build], fam: str | None, which: int) -> float | None:
    return _med(_cpu_pct(r, fam, which) for r in good)


def _index_mb(r: Build) -> float | None:
    size = (r.data.get("summary") or {}).get("disk_size") if r.search and isinstance(r.data, dict) else None
    return size / 1e6 if isinstance(size, (int, float)) else None


def group_runs(runs: Sequence[Build]) -> list[Group]:
    """Median over the successful runs of each (label, storage); baseline first, disk before tmpfs."""
    keys: dict[tuple[str, str], list[Build]] = {}
    for r in runs:
        keys.setdefault((r.label, r.storage), []).append(r)
    out = []
    for (label, storage), members in sorted(keys.items(), key=lambda kv: (_storage_order(kv[0][1]),
                                                                          _label_order(kv[0][0]))):
        good = [r for r in members if r.ok]
        fam = qs_family_of(good)
        res = lambda f, k: _med(r.resources.get(f, {}).get(k) for r in good) if f else None  # noqa: E731
        out.append(Group(
            label=label, storage=storage, n=len(good), failed=len(members) - len(good),
            errors=[str(r.error) for r in members if not r.ok],
            all_cps=_summ(r.all_cps for r in good), one_cps=_summ(r.one_cps for r in good),
            total_s=_summ(r.total_s for r in good), wall_s=_summ(r.wall_s for r in good),
            docs_per_s=_summ(r.docs_per_s for r in good), ratio=_summ(r.ratio for r in good),
            qs_family=fam,
            beam_cpu=_kernel_med(good, fam, 0), beam_rss_mb=res("beam", "rss_peak_mb"),
            qs_cpu=_kernel_med(good, fam, 1), qs_rss_mb=res(fam, "rss_peak_mb"),
            beam_kb_wr=res("beam", "kb_wr"), qs_kb_wr=res(fam, "kb_wr"),
            builds=builds_of(good),
        ))
    return out


def builds_of(good: Sequence[Build]) -> list[Build]:
    """The builds a ranking can read: those with a docs/s."""
    return [r for r in good if r.docs_per_s]


def build_report(results: Iterable[dict]) -> list[Group]:
    """The view-file report; design-doc results are left to build_design_report()."""
    return group_runs([r for r in prepare(results) if r.ddoc is None])


RANKING_TEST = ranking_model.TEST


def ranking(groups: Sequence[Group]) -> list[ranking_model.Ranking]:
    """Per storage, languages cheapest first (dragnet.report.ranking); each adjacent pair judged."""
    out = []
    for storage in dict.fromkeys(g.storage for g in groups):
        r = ranking_model.rank(storage, [(g.label, g.builds) for g in groups if g.storage == storage])
        if r.pairs:
            out.append(r)
    return out


# ---------------------------------------------------------------- design documents (`--ddoc`)
#
# One row per (design doc, view, engine, storage). "view" is ALL_VIEWS for a build of the whole design doc
# (CouchDB maps every view in one pass, so that is what bench measures) and the view's name for a build of
# one view alone (`addview --per-view`). The reference engine is the one the bench compared rows with
# (results' "comparison.reference"); "× ref" is docs/s over the reference engine's run of the same design
# doc, views, storage and repeat (nearest in time without one), median over repeats.


@dataclass
class DesignGroup:
    ddoc: str
    view: str
    label: str
    storage: str
    n: int
    failed: int
    errors: list[str]
    reference: str | None
    total_s: Summary | None
    wall_s: Summary | None
    docs_per_s: Summary | None
    ratio: Summary | None                 # docs/s ÷ the reference engine's
    rows_compared: int | None             # rows of the largest comparison (every run reads the same data)
    differences: int | None               # summed over the compared runs; None: no run was compared
    compared: int                         # runs compared with the reference
    notes: list[str]
    update_lag_s: Summary | None
    incremental_dps: Summary | None
    qs_family: str | None
    beam_cpu: float | None
    beam_rss_mb: float | None
    qs_cpu: float | None
    qs_rss_mb: float | None
    builds: list[Build] = field(default_factory=list)
    # differences by class (dragnet.index.fault), against the reference and between the engine's own builds
    classes: dict[str, int] = field(default_factory=dict)
    repeat_differences: int = 0
    cpu_s_per_1k: Summary | None = None   # CPU-seconds of CouchDB and its query servers (and the JVM) per 1,000 docs
    jvm_cpu: float | None = None          # a Nouveau index: the JVM's CPU % of one core over the build
    index_mb: float | None = None         # a Nouveau index: its size on disk, MB
    index_errors: int | None = None       # a Nouveau index: index() errors, the most of any build

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.ddoc, self.view, self.label, self.storage)

    @property
    def is_reference(self) -> bool:
        return self.label == self.reference

    def as_dict(self) -> dict:
        return dict(asdict(replace(self, builds=[])), builds=[b.ranked() for b in self.builds],
                    is_reference=self.is_reference)


def view_label(run: Build, all_views: set[str]) -> str:
    if run.search:
        return ",".join(run.views)
    return ALL_VIEWS if not run.views or set(run.views) >= all_views else ",".join(run.views)


def design_reference(runs: Sequence[Build]) -> str | None:
    """The engine the bench compared these runs' rows with (the most frequent, should results disagree)."""
    refs = [str(r.comparison["reference"]) for r in runs if r.comparison and r.comparison.get("reference")]
    return max(dict.fromkeys(refs), key=refs.count) if refs else None


def group_design_runs(runs: Sequence[Build], reference: str | None = None) -> list[DesignGroup]:
    """Design-doc runs by (design doc, view, engine, storage): medians over the successful runs; per design
    doc the reference engine first, then the others by name (an order of names, not of speed)."""
    runs = [r for r in runs if r.ddoc]
    out: list[DesignGroup] = []
    for ddoc in sorted({r.ddoc for r in runs}):
        mine = [r for r in runs if r.ddoc == ddoc]
        every = {v for r in mine if not r.search for v in r.views}   # a search index is a row of its own
        ref = reference or design_reference(mine)
        keys: dict[tuple[str, str, str], list[Build]] = {}
        for r in mine:
            keys.setdefault((view_label(r, every), r.storage, r.label), []).append(r)
        order = sorted(keys, key=lambda k: (k[0] != ALL_VIEWS, k[0], _storage_order(k[1]), k[2] != ref, k[2]))
        for view, storage, label in order:
            members = keys[(view, storage, label)]
            good = [r for r in members if r.ok]
            refs = [r for (v, st, lb), rs in keys.items() if (v, st, lb) == (view, storage, ref) for r in rs]
            ratios = []
            for r in good:
                b = pair_baseline(r, refs)
                ratios.append(ratio(r.docs_per_s, b.docs_per_s) if b else None)
            compared = [r.comparison for r in good
                        if r.comparison is not None and r.comparison.get("differences") is not None]
            notes = list(dict.fromkeys(str(r.comparison["note"]) for r in good
                                       if r.comparison and r.comparison.get("note")))
            fam = qs_family_of(good)
            res = lambda f, k: _med(r.resources.get(f, {}).get(k) for r in good) if f else None  # noqa: E731
            out.append(DesignGroup(
                ddoc=ddoc, view=view, label=label, storage=storage, n=len(good), failed=len(members) - len(good),
                errors=[str(r.error) for r in members if not r.ok], reference=ref,
                total_s=_summ(r.total_s for r in good), wall_s=_summ(r.wall_s for r in good),
                docs_per_s=_summ(r.docs_per_s for r in good), ratio=_summ(ratios),
                rows_compared=max((int(c.get("rows_compared") or 0) for c in compared), default=None),
                differences=sum(int(c["differences"]) for c in compared) if compared else None,
                compared=len(compared), notes=notes,
                update_lag_s=_summ(r.update_lag_s for r in good),
                incremental_dps=_summ(r.incremental_dps for r in good),
                qs_family=fam, beam_cpu=_kernel_med(good, fam, 0), beam_rss_mb=res("beam", "rss_peak_mb"),
                qs_cpu=_kernel_med(good, fam, 1), qs_rss_mb=res(fam, "rss_peak_mb"),
                builds=builds_of(good),
                classes=_sum_classes([c for c in compared] + [r.repeat_comparison for r in good
                                                               if r.repeat_comparison]),
                repeat_differences=sum(int((r.repeat_comparison or {}).get("differences") or 0) for r in good),
                cpu_s_per_1k=_summ(r.cpu_s_per_1000 for r in good), jvm_cpu=res("jvm", "cpu_mean"),
                index_mb=_med(_index_mb(r) for r in good),
                index_errors=max((int((r.data.get("summary") or {}).get("index_errors") or 0) for r in good
                                  if r.search), default=None),
            ))
    return out


def _sum_classes(comparisons: Iterable[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in comparisons:
        for cls, n in (c.get("classes") or {}).items():
            out[cls] = out.get(cls, 0) + int(n)
    return out


def build_design_report(results: Iterable[dict], reference: str | None = None) -> list[DesignGroup]:
    return group_design_runs(prepare(results), reference)


def design_ranking(groups: Sequence[DesignGroup]) -> list[tuple[tuple[str, str, str], ranking_model.Ranking]]:
    """Per (design doc, view, storage): engines cheapest first, each adjacent pair judged
    (dragnet.report.ranking). A pair with one run a side stays unresolved: one build orders nothing."""
    out = []
    for where in dict.fromkeys((g.ddoc, g.view, g.storage) for g in groups):
        r = ranking_model.rank(" ".join(where), [(g.label, g.builds) for g in groups
                                                 if (g.ddoc, g.view, g.storage) == where])
        if r.pairs:
            out.append((where, r))
    return out
