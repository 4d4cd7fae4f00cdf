"""PNG charts of a report (matplotlib, Agg backend: no display needed).

Each function draws one chart to a file and returns a Chart holding exactly the series it drew, so tests
(and callers) can check the data behind the picture.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from dragnet.extras import require

matplotlib = require("matplotlib", "drawing charts")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from dragnet.report.tables import Group, assign_repeats  # noqa: E402
from dragnet.results.record import Build  # noqa: E402

DPI = 80
COLORS = plt.rcParams["axes.prop_cycle"].by_key()["color"]


@dataclass
class Chart:
    path: Path
    title: str
    series: dict[str, Any] = field(default_factory=dict)


def save_figure(fig, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def rate_series(result: dict) -> tuple[list[float], list[float]]:
    """(seconds since the first poll, all-tasks changes/s) from a result's per_poll records."""
    rows = result.get("per_poll") or []
    ts, ys = [], []
    for row in rows:
        t = row.get("t")
        y = row.get("all_tasks_cps", row.get("all_tasks"))
        if t is None or y is None:
            continue
        ts.append(float(t))
        ys.append(float(y))
    if not ts:
        return [], []
    t0 = ts[0]
    return [t - t0 for t in ts], ys


def _primary_storage(storages: Sequence[str]) -> str:
    return "disk" if "disk" in storages else sorted(storages)[0]


ONE_POLL = ("no results file holds two polls of _active_tasks for a build: no rate over time to draw (a short "
            "build is over within one poll)")


def rate_over_time(results: Sequence[dict], path: Path) -> Chart:
    """Changes/s (all indexer tasks) over time: for each language the run with the median wall time."""
    runs = [Build.of(r) for r in results]
    runs = assign_repeats(runs)
    storage = _primary_storage([r.storage for r in runs])
    by_label: dict[str, list[tuple[Build, dict]]] = {}
    for run, res in zip(runs, results):
        if run.ok and run.storage == storage and run.wall_s is not None:
            by_label.setdefault(run.label, []).append((run, res))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    series = {}
    for i, label in enumerate(sorted(by_label)):
        members = sorted(by_label[label], key=lambda p: p[0].wall_s)
        run, res = members[(len(members) - 1) // 2]  # the lower median: an actual run
        xs, ys = rate_series(res)
        if not xs:
            continue
        if len(xs) < 2:      # one poll of _active_tasks: no line to draw (said on the chart)
            continue
        ax.plot(xs, ys, label=label, color=COLORS[i % len(COLORS)], linewidth=1.4)
        series[label] = {"t": xs, "cps": ys, "source": run.source, "wall_s": run.wall_s}
    ax.set_xlabel("seconds since the build started")
    ax.set_ylabel("changes/s, all indexer tasks")
    title = f"Index build rate over time ({storage})"
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if series:
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, ONE_POLL, ha="center", va="center", transform=ax.transAxes, fontsize=9, wrap=True)
    save_figure(fig, path)
    return Chart(path, title, series)


def total_time(groups: Sequence[Group], path: Path) -> Chart:
    """Median wall time of the build per language with min…max error bars (primary storage). Wall time, from
    the trigger to the view's answer: `_active_tasks`' total time is in whole seconds, 1 for every short build."""
    storage = _primary_storage([g.storage for g in groups])
    gs = [g for g in groups if g.storage == storage and g.wall_s is not None]
    labels = [g.label for g in gs]
    med = [g.wall_s.median for g in gs]
    lo = [g.wall_s.median - g.wall_s.min for g in gs]
    hi = [g.wall_s.max - g.wall_s.median for g in gs]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.bar(range(len(gs)), med, yerr=[lo, hi], capsize=4, color=COLORS[0])
    ax.set_xticks(range(len(gs)), labels, rotation=25, ha="right", fontsize=8)
    ax.set_ylabel("wall time s (median, min…max)")
    title = f"View build time per language ({storage})"
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    save_figure(fig, path)
    return Chart(path, title, {"labels": labels, "median": med, "err_low": lo, "err_high": hi,
                               "n": [g.n for g in gs]})


def resources(groups: Sequence[Group], path: Path) -> Chart:
    """CPU % of a core (the kernel's accounting), peak RSS MB and kB written of beam and of the query-server
    family, per language."""
    storage = _primary_storage([g.storage for g in groups])
    gs = [g for g in groups if g.storage == storage]
    labels = [g.label for g in gs]
    metrics = (("CPU % of a core (kernel)", "beam_cpu", "qs_cpu"), ("RSS MB (peak)", "beam_rss_mb", "qs_rss_mb"),
               ("kB written", "beam_kb_wr", "qs_kb_wr"))
    # files from before the kernel's accounting have no CPU figure: no panel rather than bars of 0
    metrics = tuple(m for m in metrics if m[0] != metrics[0][0]
                    or any(getattr(g, m[1]) is not None or getattr(g, m[2]) is not None for g in gs))
    fig, axes = plt.subplots(1, len(metrics), figsize=(4 * len(metrics), 4.5))
    series: dict[str, Any] = {"labels": labels, "qs_family": [g.qs_family for g in gs]}
    x = list(range(len(gs)))
    w = 0.4
    for ax, (name, beam_attr, qs_attr) in zip(axes, metrics):
        beam = [getattr(g, beam_attr) or 0.0 for g in gs]
        qs = [getattr(g, qs_attr) or 0.0 for g in gs]
        ax.bar([i - w / 2 for i in x], beam, w, label="beam", color=COLORS[0])
        ax.bar([i + w / 2 for i in x], qs, w, label="query server", color=COLORS[1])
        ax.set_xticks(x, labels, rotation=35, ha="right", fontsize=7)
        ax.set_title(name, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        series[name] = {"beam": beam, "query server": qs}
    axes[0].legend(fontsize=8)
    title = f"Resources per process family ({storage})"
    fig.suptitle(title)
    save_figure(fig, path)
    return Chart(path, title, series)


def storage_compare(groups: Sequence[Group], path: Path) -> Chart | None:
    """Median wall time per language measured on several storages, one bar per storage side by side;
    None when no language was measured on two storages."""
    storages = sorted({g.storage for g in groups}, key=lambda s: ({"disk": 0, "tmpfs": 1}.get(s, 2), s))
    if len(storages) < 2:
        return None
    seen: dict[str, set[str]] = {}
    for g in groups:
        if g.wall_s is not None:
            seen.setdefault(g.label, set()).add(g.storage)
    # only languages measured on more than one storage can be compared side by side
    labels = sorted((lab for lab, sts in seen.items() if len(sts) > 1),
                    key=lambda lab: (lab != "erlang_baseline", lab))
    if not labels:
        return None
    by_key = {g.key: g for g in groups}
    fig, ax = plt.subplots(figsize=(8, 4.5))
    w = 0.8 / len(storages)
    series: dict[str, Any] = {"labels": labels}
    for j, st in enumerate(storages):
        med, lo, hi = [], [], []
        for lab in labels:
            g = by_key.get((lab, st))
            s = g.wall_s if g else None
            med.append(s.median if s else 0.0)
            lo.append(s.median - s.min if s else 0.0)
            hi.append(s.max - s.median if s else 0.0)
        xs = [i - 0.4 + w * (j + 0.5) for i in range(len(labels))]
        ax.bar(xs, med, w, yerr=[lo, hi], capsize=3, label=st, color=COLORS[j % len(COLORS)])
        series[st] = {"median": med, "err_low": lo, "err_high": hi}
    ax.set_xticks(range(len(labels)), labels, rotation=25, ha="right", fontsize=8)
    ax.set_ylabel("wall time s (median, min…max)")
    title = "Storage: " + " vs ".join(storages)
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    save_figure(fig, path)
    return Chart(path, title, series)


def disk_matters(rows: Sequence[Any], reference: str, path: Path) -> Chart:
    """Bench scenarios: docs/s of each (language, storage, scenario) as a ratio to the reference scenario's
    median, one bar per scenario (the ratio of medians) and one dot per build; OOM-killed scenarios are
    named on an empty bar. rows: dragnet.axes.scenario.Row."""
    import statistics

    rows = list(rows)
    ref_median = {}
    for r in rows:
        if r.scenario == reference and r.docs_per_sec:
            ref_median[(r.language, r.storage)] = statistics.median(r.docs_per_sec)
    labels = [f"{r.language} {r.storage}\n{r.scenario}" for r in rows]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(rows)), 4.8))
    series: dict[str, Any] = {"labels": labels, "ratio": [], "runs": [], "oom": []}
    for i, r in enumerate(rows):
        base = ref_median.get((r.language, r.storage))
        dots = [v / base for v in r.docs_per_sec] if base else []
        series["ratio"].append(r.ratio)
        series["runs"].append(dots)
        series["oom"].append(r.oom)
        if r.ratio is not None:
            ax.bar(i, r.ratio, 0.6, color=COLORS[0] if r.scenario == reference else COLORS[1])
            ax.text(i, r.ratio, f"×{r.ratio:.2f}", ha="center", va="bottom", fontsize=8)
        elif r.oom:
            ax.text(i, 0.05, f"OOM-killed\n({r.oom})", ha="center", va="bottom", fontsize=8, color="red")
        if dots:
            ax.plot([i] * len(dots), dots, "k.", markersize=5)
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xlim(-0.6, len(rows) - 0.4)     # an OOM-killed row has no bar to widen the axis
    ax.set_xticks(range(len(labels)), labels, rotation=25, ha="right", fontsize=7)
    ax.set_ylabel(f"docs/s ÷ median of {reference}")
    title = "Disk matters? docs/s against the reference scenario (bars: medians, dots: builds)"
    ax.set_title(title, fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    save_figure(fig, path)
    return Chart(path, title, series)


def write_charts(results: Sequence[dict], groups: Sequence[Group], outdir: str | Path) -> list[Chart]:
    """All charts of a report into outdir; returns what was drawn."""
    out = Path(outdir)
    charts = [rate_over_time(results, out / "rate_over_time.png")]
    if groups:     # only design-doc results: their table has no per-language chart yet
        charts += [total_time(groups, out / "total_time.png"), resources(groups, out / "resources.png")]
    st = storage_compare(groups, out / "storage.png")
    if st is not None:
        charts.append(st)
    return charts


__all__ = ["Chart", "rate_series", "rate_over_time", "total_time", "resources", "storage_compare",
           "disk_matters", "write_charts"]
