"""A metric over the runs of a results store, and the steps in it (asv-style step detection, simplified).

Per cell (the same axes compare matches on, minus the design doc's hash when grouping by something
else), the store's runs are put in order of date and grouped: `by="date"` makes each run its own group,
`by="couchdb"|"otp"|"engine"|"ddoc"` pools consecutive runs with the same CouchDB version, OTP version,
JS engine or design doc hash. Each group's samples are the raw per-build values the store kept. A *step*
is flagged between two adjacent groups when their samples differ significantly: two-sided Mann–Whitney
p < 0.05 and the 95% bootstrap interval of the ratio of medians excludes 1 (the test `compare` and
`report` use). A step cannot be flagged between groups too small for the test (fewer than 4 builds a
side in total); those are shown as such, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from dragnet.measure import stats as stats
from dragnet.results.load import axes_text
from dragnet.errors import UsageError
from dragnet.results.store import METRICS

BY = ("date", "couchdb", "otp", "engine", "ddoc")
FOLLOWED = ("ddoc", "couchdb")
STEP_TEST = ("a step: two-sided Mann-Whitney p < 0.05 between neighbouring groups and the 95% bootstrap interval "
             "of the ratio of their medians excludes 1")


@dataclass
class Point:
    label: str                 # the group's value of `by` (the date for by=date)
    date: str                  # first run's date
    runs: list[str]            # store run ids
    samples: list[float]
    step: bool = False         # differs significantly from the previous point
    ratio: float | None = None  # median / previous median
    ci: tuple[float, float] | None = None
    p: float | None = None
    note: str = ""

    @property
    def median(self) -> float:
        return stats.median(self.samples)

    def as_dict(self) -> dict:
        return {"label": self.label, "date": self.date, "runs": self.runs, "samples": self.samples,
                "median": self.median, "step": self.step, "ratio": self.ratio,
                "ci": list(self.ci) if self.ci else None, "p": self.p, "note": self.note}


@dataclass
class Series:
    axes: dict[str, str]
    points: list[Point] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"axes": self.axes, "points": [p.as_dict() for p in self.points]}


def group_value(entry: dict, cell: dict, by: str) -> str:
    if by == "date":
        return f"{str(entry.get('date'))[:19]}" + (f" {entry['name']}" if entry.get("name") else "")
    if by == "ddoc":
        return str(cell["axes"].get("ddoc") or "-")
    return str(entry.get(by) or "-")


def series(entries: Sequence[dict], metric: str = "docs_s", by: str = "date",
           where: dict[str, str] | None = None, alpha: float = stats.ALPHA) -> list[Series]:
    """The metric's series per cell, steps flagged (see the module docstring)."""
    if metric not in METRICS:
        raise UsageError(f"--metric {metric}: expected one of {', '.join(METRICS)}")
    if by not in BY:
        raise UsageError(f"--by {by}: expected one of {', '.join(BY)}")
    out: dict[tuple, Series] = {}
    for e in sorted(entries, key=lambda e: str(e.get("date"))):
        for cell in e.get("cells") or []:
            # versions and revisions are what a history follows, not separate cells
            axes = {k: v for k, v in cell["axes"].items() if k not in FOLLOWED}
            if where and any(axes.get(k) != v for k, v in where.items()):
                continue
            values = [float(v) for v in cell.get(metric) or []]
            if not values:
                continue
            s = out.setdefault(tuple(sorted(axes.items())), Series(axes))
            label = group_value(e, cell, by)
            if s.points and s.points[-1].label == label:
                s.points[-1].samples += values
                s.points[-1].runs.append(e["id"])
            else:
                s.points.append(Point(label, str(e.get("date")), [e["id"]], values))
    for s in out.values():
        for prev, cur in zip(s.points, s.points[1:]):
            detect(prev, cur, alpha)
    return list(out.values())


def detect(prev: Point, cur: Point, alpha: float = stats.ALPHA) -> None:
    cur.ratio, lo, hi = stats.bootstrap_ratio_ci(cur.samples, prev.samples)
    cur.ci = (lo, hi)
    if stats.min_p_value(len(prev.samples), len(cur.samples)) >= alpha:
        cur.note = f"too few builds to test ({len(prev.samples)} before, {len(cur.samples)} after)"
        return
    cur.p = stats.mann_whitney_u(cur.samples, prev.samples).p
    cur.step = cur.p < alpha and not lo <= 1 <= hi


COLUMNS = ("cell", "group", "date", "builds", "median", "× previous [95%]", "p", "step")


def table_rows(all_series: Sequence[Series], metric: str) -> list[list[str]]:
    digits = 1 if metric == "docs_s" else 0
    rows = []
    for s in all_series:
        for i, p in enumerate(s.points):
            rows.append([axes_text(s.axes) if i == 0 else "", p.label, p.date[:19], str(len(p.samples)),
                         f"{p.median:,.{digits}f}",
                         "–" if p.ratio is None else f"×{p.ratio:.3f} [{p.ci[0]:.3f} … {p.ci[1]:.3f}]",
                         "–" if p.p is None else f"{p.p:.3f}",
                         "STEP" if p.step else ("too few" if p.note else "")])
    return rows


@dataclass
class History:
    """`dragnet history`: the series of a metric over a store's saved runs, and their chart if drawn."""

    store: str
    metric: str
    by: str
    series: list[Series]
    saved: int                         # runs in the store
    chart: object = None               # charts.Chart

    def as_json(self) -> dict:
        return {"store": self.store, "metric": self.metric, "by": self.by, "test": STEP_TEST,
                "series": [s.as_dict() for s in self.series], "chart": str(self.chart.path) if self.chart else None}


def parse_where(where: Sequence[str]) -> dict[str, str]:
    """--where AXIS=VALUE (repeatable) -> {axis: value}; a one-line error otherwise."""
    filters = {}
    for w in where:
        if "=" not in w:
            raise UsageError(f"--where {w}: expected AXIS=VALUE")
        k, v = w.split("=", 1)
        filters[k] = v
    return filters


def history(store_dir=None, metric: str = "docs_s", by: str = "date", where: Sequence[str] = (),
            plot_path=None) -> History:
    """The store's saved runs as series of `metric` grouped `by`, only the cells matching `where`; with
    plot_path, their chart drawn there."""
    from dragnet.results import store

    sdir = store.default_dir(store_dir)
    filters = parse_where(where)
    entries = store.read_index(sdir)
    if not entries:
        raise UsageError(f"{sdir}: no saved runs (bench --save-baseline NAME saves one)")
    all_series = series(entries, metric, by, filters)
    if not all_series:
        raise UsageError(f"{sdir}: no cell has {metric} values" + (" matching --where" if filters else ""))
    drawn = chart(all_series, metric, plot_path) if plot_path else None
    return History(str(sdir), metric, by, all_series, len(entries), drawn)


def chart(all_series: Sequence[Series], metric: str, path) -> object:
    """One line per cell (median, min…max bars) over the groups; steps marked. Returns charts.Chart."""
    from pathlib import Path

    from dragnet.report.charts import Chart, save_figure, plt

    fig, ax = plt.subplots(figsize=(10, 5))
    drawn: dict = {}
    labels: list[str] = []
    for s in all_series:
        for p in s.points:
            if p.label not in labels:
                labels.append(p.label)
    for s in all_series:
        xs = [labels.index(p.label) for p in s.points]
        meds = [p.median for p in s.points]
        err = [[m - min(p.samples) for m, p in zip(meds, s.points)],
               [max(p.samples) - m for m, p in zip(meds, s.points)]]
        name = axes_text(s.axes)
        ax.errorbar(xs, meds, yerr=err, marker="o", capsize=3, label=name)
        steps = [(x, m) for x, m, p in zip(xs, meds, s.points) if p.step]
        if steps:
            ax.scatter([x for x, _ in steps], [m for _, m in steps], s=160, facecolors="none", edgecolors="red",
                       zorder=5)
        drawn[name] = {"x": [labels[x] for x in xs], "median": meds, "steps": [labels[x] for x, _ in steps]}
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels([lb[:40] for lb in labels], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(METRICS[metric])
    ax.set_title(f"{METRICS[metric]} over runs (red circle: a significant step)")
    if len(all_series) <= 8:
        ax.legend(fontsize=7)
    save_figure(fig, Path(path))
    return Chart(Path(path), ax.get_title(), drawn)
