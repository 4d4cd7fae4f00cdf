"""A metric over the runs of a results store, and the steps in it (asv-style step detection, simplified).

Per cell (the same axes compare matches on, minus the design doc's hash when grouping by something
else), the store's runs are put in order of date and grouped: `by="date"` makes each run its own group,
`by="couchdb"|"otp"|"engine"|"ddoc"` pools consecutive runs with the same CouchDB version, OTP version,
JS engine or design doc hash. Each group's samples are the raw per-build values the store kept. A *step*
is flagged between two adjacent groups by the one verdict rule every comparison in dragnet uses
(`measure/decide`): the ratio of their geometric means with a 99% Welch t interval on the logs (the groups
are separate runs, so unpaired), separated when the interval lies beyond 1 ± 2%. Groups too small for an
interval (fewer than 3 builds a side) are shown as "n=2: no interval", never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from dragnet.measure import decide
from dragnet.measure import stats as stats
from dragnet.report.columns import Column
from dragnet.results.load import axes_text
from dragnet.errors import UsageError
from dragnet.results.store import METRICS

BY = ("date", "couchdb", "otp", "engine", "ddoc")
FOLLOWED = ("ddoc", "couchdb")
STEP_TEST = (f"a step: the ratio of neighbouring groups (geometric means) with a {decide.LEVEL:.0%} t interval on "
             f"the logs, unpaired, lies beyond 1 ± {decide.NOISE:.0%} (measure.decide, as compare and report judge)")


@dataclass
class Point:
    label: str                 # the group's value of `by` (the date for by=date)
    date: str                  # first run's date
    runs: list[str]            # store run ids
    samples: list[float]
    step: bool = False         # differs significantly from the previous point
    ratio: float | None = None  # geometric mean / previous geometric mean
    ci: tuple[float, float] | None = None   # None: the builds give no interval
    state: str | None = None   # decide's verdict against the previous point
    note: str = ""

    @property
    def median(self) -> float:
        return stats.median(self.samples)

    def as_dict(self) -> dict:
        return {"label": self.label, "date": self.date, "runs": self.runs, "samples": self.samples,
                "median": self.median, "step": self.step, "ratio": self.ratio,
                "ci": list(self.ci) if self.ci else None, "state": self.state, "note": self.note}


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
           where: dict[str, str] | None = None) -> list[Series]:
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
            detect(prev, cur)
    return list(out.values())


def detect(prev: Point, cur: Point) -> None:
    """decide's unpaired interval of cur ÷ prev; a step where it is separated."""
    if min(len(prev.samples), len(cur.samples)) < 1 or min(prev.samples + cur.samples) <= 0:
        cur.note = "no positive samples to compare"
        return
    iv = decide.unpaired_interval(cur.samples, prev.samples)
    cur.ratio, cur.state = iv.ratio, decide.classify(iv)
    if not decide.has_interval(iv):
        cur.note = f"n={iv.n}: no interval"
        return
    cur.ci = (iv.low, iv.high)
    cur.step = cur.state == decide.SEPARATED


@dataclass(frozen=True)
class Row:
    """One point of a series as a row of the history table."""

    axes: dict[str, str] | None        # the cell's axes on its series' first row, None on the others
    point: Point
    digits: int                        # the median's decimals (docs/s has one, bytes none)


def _change(r: Row) -> str:
    p = r.point
    if p.ratio is None:
        return "–"
    return f"×{p.ratio:.3f} " + (f"[{p.ci[0]:.3f} … {p.ci[1]:.3f}]" if p.ci else p.note)


# the console's table (report.columns.Column); JSON emits the points' as_dict
HISTORY = (
    Column("cell", lambda r: axes_text(r.axes) if r.axes is not None else "", None),
    Column("group", lambda r: r.point.label, None),
    Column("date", lambda r: r.point.date[:19], None),
    Column("builds", lambda r: str(len(r.point.samples)), lambda r: len(r.point.samples)),
    Column("median", lambda r: f"{r.point.median:,.{r.digits}f}", lambda r: r.point.median),
    Column(f"× previous [{decide.LEVEL:.0%}]", _change, lambda r: r.point.ratio),
    Column("verdict", lambda r: r.point.state or "–", None),
    Column("step", lambda r: "STEP" if r.point.step else "", None),
)


def rows(all_series: Sequence[Series], metric: str) -> list[Row]:
    digits = 1 if metric == "docs_s" else 0
    return [Row(s.axes if i == 0 else None, p, digits) for s in all_series for i, p in enumerate(s.points)]


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
