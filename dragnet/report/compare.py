"""Two sets of view builds compared cell by cell: did a change make indexing slower?

Nouveau index builds (dragnet.nouveau/1) are compared the same way, their cells labelled by the index, the
engine running index(), the CouchDB version, live settings and heap (results.load.nouveau_axes); builds of
one `bench --nouveau` folder are paired by round. The index name is matched like a design doc id.

A *cell* is one combination of axis values: `bench.axes` when a result carries it, otherwise the axes
derived from the result (language, storage, scenario, size, design doc id, its content hash as "ddoc",
the views built, the CouchDB version). Cells are matched between OLD and NEW by every axis, except an
axis whose values differ between the sides one for one (OLD has exactly one value the other lacks, and
NEW too): that is what the two sides compare (two design doc revisions, two CouchDB versions …), so its
values are paired instead of matched. An axis only one side records is left out. The design doc id and
the views built are always matched.

Per cell, over the successful builds' cost on the chosen metric (`cpu`: CPU-seconds of CouchDB and its query
servers per 1,000 documents, recorded by addview; `qs`: the query servers' own CPU-seconds per 1,000 documents,
without CouchDB's; `wall`: the build's wall time), decided as
dragnet.measure.decide decides a pair:
- ratio NEW / OLD (above 1: NEW is slower) with a 99% t interval on the log ratios, paired by round
  (builds of one bench with the same `bench.id` and `bench.repeat`) where both sides have such rounds;
- a label: *regressed* / *improved*: the interval lies beyond 1 ± 2% (separated); *no change*: it lies
  inside 1 ± 5% (tied); *undecided* otherwise (too noisy, too close, too few builds).
- the wall-time ratio with its own interval, always, beside the metric's.
- `threshold` (e.g. 0.05 for --fail-if-slower 5%): a cell *fails* when its whole interval lies above
  1 + threshold, *passes* when it lies below, and is *undecided* otherwise, with the rounds that would likely
  decide it. A cell whose NEW builds failed where OLD's did not fails too.
- the gate's other figures (`roles`, set by dragnet.runner.gate): every figure both sides recorded is
  interval-judged too; a JUDGED one must also lie below the threshold to pass and fails above it, a FAILS one
  fails above it, a HOLDS one wholly above it keeps the cell undecided and is named: a cell is never passed
  over a separated regression beyond the threshold on anything it recorded.

Rows: for design-doc builds that dumped their rows (bench --ddoc), the first such build of each side is
compared per view with dragnet.index.rows (rows and reduce results matched by document id / key), so a
revision that changes what a view emits is listed with its row counts.

Everything here is pure over results dicts, except that rows comparisons read the dumped row files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from dragnet.measure import decide as decide
from dragnet.measure import stats as stats
from dragnet.report.columns import Column, text_rows
from dragnet.results import schema as rs
from dragnet.errors import UsageError
from dragnet.results.load import axes_of, axes_text, is_nouveau, sort_axes, started_at, wall_s
from dragnet.results.record import Build

SCHEMA = rs.schema(rs.COMPARE)
METRICS = ("cpu", "qs", "instructions", "wall")
METRIC_FIELD = {"cpu": "cpu_s_per_1000_docs", "qs": "qs_cpu_s_per_1000_docs",
                "instructions": "instructions_per_1000_docs", "wall": "wall_time_s"}
TEST = (f"ratio NEW/OLD with a {decide.LEVEL:.0%} t interval on the log ratios, paired by round where possible; "
        f"separated beyond ±{decide.NOISE:.0%}, tied inside ±{decide.TIE:.0%}")
PASS, FAIL, UNDECIDED_EXIT = 0, 1, 3     # exit codes of the gate (2 is bad input)
# what was built: matched, never paired nor left out (a design doc is not a revision of a view file)
IDENTITY = ("design", "view", "index")
REGRESSED, IMPROVED, NO_CHANGE, UNDECIDED = "regressed", "improved", "no change", "undecided"
# what a figure other than the one decided on does at the gate (Comparison.roles): JUDGED lies below the
# threshold to pass and fails above it, FAILS only fails above it, HOLDS keeps the cell undecided above it
JUDGED, FAILS, HOLDS = "judged", "fails", "holds"
FIGURE_NAMES = {"cpu": "CPU per document", "qs": "query-server CPU per document",
                "instructions": "instructions per document", "wall": "wall time"}


# ---------------------------------------------------------------- one side's builds

def cpu_per_1000(result: dict) -> float | None:
    """CPU-seconds of CouchDB and its query servers per 1,000 documents (addview's `cpu` record), or None."""
    v = Build.of(result).cpu_s_per_1000
    return v if v is not None and v > 0 else None


def round_key(result: dict) -> tuple | None:
    """Builds of one bench round share this key: paired across the sides."""
    bench = result.get("bench") or {}
    if bench.get("id") is not None and bench.get("repeat") is not None:
        return (str(bench["id"]), int(bench["repeat"]))
    if is_nouveau(result) and isinstance(result.get("round"), int) and result.get("_source"):
        # a bench --nouveau folder is one bench: its round numbers pair builds within it
        return (str(Path(str(result["_source"])).parent), int(result["round"]))
    return None


@dataclass
class Side:
    """One side of a cell: its successful builds' wall times and CPU per 1,000 docs, each with its round key,
    failures, and where they are recorded."""

    samples: list[float] = field(default_factory=list)
    cpu: list[float | None] = field(default_factory=list)
    qs: list[float | None] = field(default_factory=list)     # the query servers' own CPU per 1,000 docs
    ir: list[float | None] = field(default_factory=list)     # the map functions' instructions per 1,000 docs
    keys: list[Any] = field(default_factory=list)
    failed: int = 0
    sources: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def median(self) -> float | None:
        return stats.median(self.samples) if self.samples else None

    @property
    def cpu_median(self) -> float | None:
        v = [x for x in self.cpu if x is not None]
        return stats.median(v) if v else None

    def costs(self, metric: str) -> dict[Any, float]:
        """The metric's values by round key (builds without one keyed by their position: never paired)."""
        vals = {"cpu": self.cpu, "qs": self.qs, "instructions": self.ir}.get(metric, self.samples)
        out: dict[Any, float] = {}
        for i, (k, v) in enumerate(zip(self.keys or [None] * len(vals), vals)):
            if v is not None:
                out[k if k is not None and k not in out else ("unpaired", id(self), i)] = v
        return out

    def as_dict(self) -> dict:
        return {"n": len(self.samples), "failed": self.failed, "median": self.median, "samples": self.samples,
                "cpu_s_per_1000_docs": self.cpu, "cpu_median": self.cpu_median, "qs_cpu_s_per_1000_docs": self.qs,
                "instructions_per_1000_docs": self.ir,
                "rounds": [list(k) if isinstance(k, tuple) else k for k in self.keys],
                "sources": self.sources, "errors": self.errors}


@dataclass
class Cell:
    axes: dict[str, str]
    old: Side
    new: Side
    ratio: float | None = None        # NEW / OLD on the metric: above 1, NEW is slower
    ci_low: float | None = None
    ci_high: float | None = None
    metric: str | None = None         # what it was decided on: cpu or wall
    paired: bool = False
    label: str = UNDECIDED
    why: str = ""                     # for undecided: what is missing
    needed: int | None = None         # rounds that would likely decide it (the label, or the gate)
    wall: list[float] | None = None   # wall-time ratio NEW / OLD and its interval, always
    # every figure both sides recorded for every build: {metric: [ratio, low, high]} (the gate's other looks)
    figures: dict[str, list[float]] = field(default_factory=dict)
    n: int | None = None              # pairs (or the smaller side) the interval rests on
    rows: list[dict] = field(default_factory=list)   # per view, see compare_rows()

    @property
    def change_pct(self) -> float | None:
        return None if self.ratio is None else (self.ratio - 1) * 100

    def as_dict(self) -> dict:
        return {"axes": self.axes, "old": self.old.as_dict(), "new": self.new.as_dict(), "ratio": self.ratio,
                "ci": None if self.ci_low is None else [self.ci_low, self.ci_high], "change_pct": self.change_pct,
                "metric": self.metric, "paired": self.paired, "wall": self.wall, "figures": self.figures,
                "label": self.label, "n": self.n,
                "why": self.why, "rounds_needed": self.needed, "rows": self.rows}


def judge(cell: Cell, metric: str = "cpu", threshold: float | None = None) -> Cell:
    """Fill ratio, interval, label (rules in the module docstring). The cpu metric falls back to wall when a
    side has a build without CPU recorded (older results, a remote CouchDB)."""
    if not cell.new.samples or not cell.old.samples:
        x, y = cell.new.samples, cell.old.samples
        cell.label, cell.why = UNDECIDED, "no successful build on " + ("either side" if not x and not y else
                                                                      "the new side" if not x else "the old side")
        return cell
    fallback = ""
    if metric == "instructions" and (None in cell.new.ir or None in cell.old.ir or not cell.new.ir):
        metric, fallback = "qs", "no instruction count for every build: judged on the query servers' CPU"
    if metric == "qs" and (None in cell.new.qs or None in cell.old.qs or not cell.new.qs):
        metric, fallback = "cpu", "no query-server CPU recorded for every build: judged on CouchDB's CPU"
    if metric == "cpu" and (None in cell.new.cpu or None in cell.old.cpu or not cell.new.cpu):
        metric, fallback = "wall", "no CPU recorded for every build: judged on wall time"
    cell.metric = metric
    wall = decide.ratio_interval(cell.new.costs("wall"), cell.old.costs("wall"))
    cell.wall = [wall.ratio, wall.low, wall.high]
    cell.figures = {}
    for m in METRICS:
        values = {"cpu": (cell.new.cpu, cell.old.cpu), "qs": (cell.new.qs, cell.old.qs),
                  "instructions": (cell.new.ir, cell.old.ir)}.get(m, (cell.new.samples, cell.old.samples))
        if all(v and None not in v for v in values):
            fiv = decide.ratio_interval(cell.new.costs(m), cell.old.costs(m))
            cell.figures[m] = [fiv.ratio, fiv.low, fiv.high]
    iv = decide.ratio_interval(cell.new.costs(metric), cell.old.costs(metric))
    cell.ratio, cell.ci_low, cell.ci_high, cell.paired, cell.n = iv.ratio, iv.low, iv.high, iv.paired, iv.n
    if not decide.has_interval(iv):     # "n=2: no interval": none kept, so no gate decides on one
        cell.ci_low = cell.ci_high = None
    state = decide.classify(iv)
    if state == decide.SEPARATED:
        cell.label = REGRESSED if iv.ratio > 1 else IMPROVED
    elif state == decide.TIED:
        cell.label = NO_CHANGE
    else:
        cell.label, cell.why = UNDECIDED, decide.why_unresolved(iv)
        cell.needed = decide.rounds_needed(iv)
    if threshold is not None and gate_of(cell, threshold) is None:
        cell.needed = gate_rounds_needed(iv, threshold)
    if fallback:
        cell.why = f"{cell.why}; {fallback}" if cell.why else fallback
    return cell


def gate_of(cell: Cell, threshold: float) -> bool | None:
    """True: slower beyond the threshold (the whole interval above it); False: the whole interval below it;
    None: cannot tell yet."""
    if cell.ci_low is None or cell.ci_high is None:
        return None
    if cell.ci_low > 1 + threshold:
        return True
    if cell.ci_high < 1 + threshold:
        return False
    return None


def figure_gate(cell: Cell, metric: str, threshold: float) -> bool | None:
    """gate_of on another figure the cell recorded (None where it did not record it)."""
    f = cell.figures.get(metric)
    if not f or f[1] is None or f[2] is None:
        return None
    return True if f[1] > 1 + threshold else False if f[2] < 1 + threshold else None


def figure_interval(cell: Cell, metric: str) -> "decide.Interval":
    return decide.ratio_interval(cell.new.costs(metric), cell.old.costs(metric))


def figure_text(cell: Cell, metric: str) -> str:
    r, lo, hi = cell.figures[metric]
    return f"{FIGURE_NAMES[metric]} {_pct(r)} [{_pct(lo)} … {_pct(hi)}]"


def gate_rounds_needed(iv: "decide.Interval", threshold: float, cap: int = 200) -> int | None:
    """Rounds that would likely put the interval on one side of 1 + threshold, spread and ratio as measured."""
    room = abs(math.log(iv.ratio) - math.log1p(threshold)) if iv.ratio > 0 else 0
    if iv.n < 2 or not math.isfinite(iv.sd_log) or room <= 0:
        return None
    for n in range(max(2, iv.n + 1), cap + 1):
        if decide.t_quantile(1 - (1 - iv.level) / 2, n - 1) * iv.sd_log / math.sqrt(n) < room:
            return n
    return None


# ---------------------------------------------------------------- matching two sides

@dataclass
class Comparison:
    old_label: str
    new_label: str
    cells: list[Cell]
    only_old: list[dict]              # axes of cells OLD has and NEW lacks
    only_new: list[dict]
    varied: dict[str, list[str]]      # axis -> [old value, new value]: what the two sides compare
    threshold: float | None = None    # --fail-if-slower as a fraction
    along: str | None = None          # one-folder comparison: the axis with two values
    metric: str = "cpu"               # asked for; a cell without CPU recorded falls back to wall
    # the gate's other figures and what each does (JUDGED, FAILS, HOLDS); empty: only the metric decides
    roles: dict[str, str] = field(default_factory=dict)
    changes: str = ""                 # what the new revision changes, in words (the gate)

    def _others(self, cell: Cell, *roles: str) -> list[str]:
        """The cell's other figures with one of these roles (CPU not recorded: wall takes its role)."""
        out = []
        for m, role in self.roles.items():
            if role in roles and m != cell.metric:
                m = m if m in cell.figures or m != "cpu" else "wall"
                if m != cell.metric and m not in out:
                    out.append(m)
        return out

    def failing_figures(self, cell: Cell) -> list[str]:
        """The figures whose whole interval lies above the threshold and that fail the cell."""
        if self.threshold is None:
            return []
        out = [cell.metric] if gate_of(cell, self.threshold) is True else []
        return out + [m for m in self._others(cell, JUDGED, FAILS) if figure_gate(cell, m, self.threshold) is True]

    def held(self, cell: Cell) -> list[str]:
        """Figures that hold the cell undecided: a separated regression beyond the threshold on a figure the
        gate does not decide on (the cell never passes with one)."""
        if self.threshold is None or self.failing_figures(cell):
            return []
        return [m for m in self._others(cell, HOLDS) if figure_gate(cell, m, self.threshold) is True]

    def pending(self, cell: Cell) -> list[str]:
        """Judged figures whose interval does not lie below the threshold yet (the metric included)."""
        if self.threshold is None:
            return []
        out = [cell.metric] if gate_of(cell, self.threshold) is not False else []
        return out + [m for m in self._others(cell, JUDGED) if figure_gate(cell, m, self.threshold) is not False]

    @property
    def failing(self) -> list[Cell]:
        """Cells that fail --fail-if-slower: the whole interval above it (on the metric or a judged figure),
        and new failed builds."""
        if self.threshold is None:
            return []
        return [c for c in self.cells if self.failing_figures(c) or (c.new.failed and not c.old.failed)]

    @property
    def too_noisy(self) -> list[Cell]:
        """Cells the gate cannot decide yet (undecided cells, without a threshold): a judged figure not below
        the threshold yet, or a figure that holds it."""
        if self.threshold is None:
            return [c for c in self.cells if c.label == UNDECIDED]
        failing = self.failing
        return [c for c in self.cells if c not in failing and (self.pending(c) or self.held(c))]

    @property
    def exit_code(self) -> int:
        """0 pass, 1 slower beyond the threshold (or newly failing), 3 cannot decide yet."""
        if self.failing:
            return FAIL
        return UNDECIDED_EXIT if self.threshold is not None and self.too_noisy else PASS

    @property
    def rounds_needed(self) -> int | None:
        """The most rounds any undecided cell likely needs (None if one cannot be estimated)."""
        if self.threshold is None:
            need = [c.needed for c in self.too_noisy]
            return None if not need or None in need else max(need)
        need = []
        for c in self.too_noisy:
            if self.held(c):
                need.append(None)
                continue
            need += [c.needed] if c.metric in self.pending(c) else []
            need += [gate_rounds_needed(figure_interval(c, m), self.threshold) for m in self.pending(c) if m != c.metric]
        return None if not need or None in need else max(need)

    @property
    def rows_changed(self) -> list[tuple[Cell, dict]]:
        seen, out = set(), []
        for c in self.cells:
            for r in c.rows:
                key = (c.axes.get("design"), r["view"])
                if r["differences"] and key not in seen:
                    seen.add(key)
                    out.append((c, r))
        return out

    def verdict(self) -> str:
        if self.threshold is None:
            counts = {lab: sum(1 for c in self.cells if c.label == lab)
                      for lab in (REGRESSED, IMPROVED, NO_CHANGE, UNDECIDED)}
            return ", ".join(f"{n} {lab}" for lab, n in counts.items() if n) or "no cells"
        pct = f"{self.threshold * 100:g}%"
        if self.failing:
            on = sorted({FIGURE_NAMES[m] for c in self.failing for m in self.failing_figures(c)})
            return (f"FAIL: {len(self.failing)} cell(s) slower by more than {pct} (whole interval"
                    + (f", on {' and '.join(on)}" if on else "") + "), or newly failing")
        if self.too_noisy:
            held = sorted({figure_text(c, m) for c in self.too_noisy for m in self.held(c)})
            if held:
                return (f"UNDECIDED: {len(self.too_noisy)} cell(s) pass on what the gate judges, but "
                        f"{'; '.join(held)} lies above +{pct}: not passed")
            need = self.rounds_needed
            more = f"; about {need} rounds would likely decide" if need else ""
            return f"UNDECIDED: {len(self.too_noisy)} cell(s) cannot tell yet whether slower by more than {pct}{more}"
        judged = sorted({FIGURE_NAMES[m] for c in self.cells for m in [c.metric, *self._others(c, JUDGED)]})
        return (f"pass: every cell's interval lies below +{pct}"
                + (f" on {' and '.join(judged)}" if self.roles else ""))

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "old": self.old_label, "new": self.new_label, "metric": self.metric,
                "metrics": sorted({c.metric for c in self.cells if c.metric}), "test": TEST,
                "varied": self.varied, "along": self.along, "threshold": self.threshold,
                "cells": [c.as_dict() for c in self.cells], "only_old": self.only_old, "only_new": self.only_new,
                "rows_changed": [{"axes": c.axes, **r} for c, r in self.rows_changed],
                "failing": [c.axes for c in self.failing], "too_noisy": [c.axes for c in self.too_noisy],
                "failed": bool(self.failing), "exit_code": self.exit_code, "rounds_needed": self.rounds_needed,
                "roles": self.roles, "changes": self.changes,
                "gate": {"failing_on": [self.failing_figures(c) for c in self.cells],
                         "held_by": [self.held(c) for c in self.cells],
                         "pending": [self.pending(c) for c in self.cells]} if self.roles else None,
                "verdict": self.verdict()}


def varied_axes(old: Sequence[dict], new: Sequence[dict]) -> dict[str, list[str]]:
    """Axes whose values differ between the sides one for one: {axis: [old value, new value]}."""
    out = {}
    for k in sort_axes({k for a in [*old, *new] for k in a} - set(IDENTITY)):
        vo, vn = {a.get(k) for a in old}, {a.get(k) for a in new}
        only_o, only_n = vo - vn, vn - vo
        if len(only_o) == 1 and len(only_n) == 1 and None not in only_o | only_n:
            out[k] = [only_o.pop(), only_n.pop()]
    return out


def _key(axes: dict[str, str], varied: dict[str, list[str]], side: str) -> tuple:
    a = dict(axes)
    for k, (o, n) in varied.items():
        if side == "new" and a.get(k) == n:
            a[k] = o        # the new value stands for the old one: paired, not matched
    return tuple(sorted(a.items()))


def compare(old: Iterable[dict], new: Iterable[dict], *, old_label: str = "OLD", new_label: str = "NEW",
            threshold: float | None = None, rows: bool = True, along: str | None = None,
            metric: str = "cpu", roles: dict[str, str] | None = None, changes: str = "") -> Comparison:
    """OLD and NEW results (lists of dragnet.addview/1 dicts) compared cell by cell; UsageError (exit 2)
    when no cell is on both sides. `roles`: the gate's other figures (Comparison.roles)."""
    old, new = list(old), list(new)
    ax_old, ax_new = [axes_of(r) for r in old], [axes_of(r) for r in new]
    # an axis only one side records (older results without a version, say) cannot match anything: left out;
    # what was built (design doc, views) always has to match
    shared = ({k for a in ax_old for k in a} & {k for a in ax_new for k in a}) | set(IDENTITY)
    ax_old = [{k: v for k, v in a.items() if k in shared} for a in ax_old]
    ax_new = [{k: v for k, v in a.items() if k in shared} for a in ax_new]
    varied = varied_axes(ax_old, ax_new)
    cells: dict[tuple, Cell] = {}
    sides: dict[tuple, set[str]] = {}
    for side, results, axes in (("old", old, ax_old), ("new", new, ax_new)):
        for r, a in sorted(zip(results, axes), key=lambda ra: started_at(ra[0])):
            key = _key(a, varied, side)
            cell = cells.setdefault(key, Cell(axes=dict(key), old=Side(), new=Side()))
            sides.setdefault(key, set()).add(side)
            s = getattr(cell, side)
            b = Build.of(r)
            if not (b.ok and b.wall_s is not None and b.wall_s > 0):
                s.failed += 1
                s.errors.append(str(b.error or "build failed"))
            else:
                s.samples.append(b.wall_s)
                s.cpu.append(b.cpu_s_per_1000 if b.cpu_s_per_1000 is not None and b.cpu_s_per_1000 > 0 else None)
                s.qs.append(b.qs_cpu_s_per_1000 if b.qs_cpu_s_per_1000 is not None and b.qs_cpu_s_per_1000 > 0
                            else None)
                s.ir.append(b.instructions_per_1000)
                s.keys.append(round_key(r))
            if r.get("_source"):
                s.sources.append(str(r["_source"]))
    both = [k for k in cells if sides[k] == {"old", "new"}]
    if not both:
        show = lambda axes: "; ".join(sorted({axes_text(a) for a in axes})) or "nothing"  # noqa: E731
        raise UsageError(f"{old_label} and {new_label} have no cell in common: {old_label} has {show(ax_old)}, "
                         f"{new_label} has {show(ax_new)}")
    by_key = {k: (_pick(old, ax_old, k, varied, "old"), _pick(new, ax_new, k, varied, "new")) for k in both}
    out = []
    for k in sorted(both, key=lambda k: [(sort_axes([n]), v) for n, v in k]):
        cell = judge(cells[k], metric, threshold)
        if rows:
            cell.rows = compare_rows(*by_key[k])
        out.append(cell)
    only = lambda side: [cells[k].axes for k in cells if sides[k] == {side}]  # noqa: E731
    return Comparison(old_label, new_label, out, only("old"), only("new"), varied, threshold, along, metric,
                      dict(roles or {}), changes)


def _pick(results: Sequence[dict], axes: Sequence[dict], key: tuple, varied: dict, side: str) -> dict | None:
    """The first successful build of a cell that dumped its rows."""
    for r, a in zip(results, axes):
        if _key(a, varied, side) == key and wall_s(r) is not None and isinstance(r.get("rows"), dict):
            return r
    return None


# ---------------------------------------------------------------- one folder, two values of an axis

def two_valued_axes(results: Sequence[dict]) -> dict[str, list[str]]:
    """Axes with exactly two values among the results that have them, values in the order the bench was
    given them (`bench.axis_values`) where recorded, else in order of first build."""
    first: dict[str, dict[str, float]] = {}
    given: dict[str, list[str]] = {}
    for r in results:
        t = started_at(r)
        for k, vals in ((r.get("bench") or {}).get("axis_values") or {}).items():
            given.setdefault(k, list(vals))
        for k, v in axes_of(r).items():
            first.setdefault(k, {})
            first[k][v] = min(first[k].get(v, t), t)

    def key(k: str, v: str) -> tuple:
        return (given[k].index(v), 0.0) if v in given.get(k, ()) else (len(given.get(k, ())), first[k][v])
    return {k: sorted(vs, key=lambda v: key(k, v)) for k, vs in first.items() if len(vs) == 2}


def choose_axis(results: Sequence[dict], along: str | None = None) -> tuple[str, list[str]]:
    """The axis a single results set is compared along: `along`, else the one axis with two values (language
    only when no other has two: report already ranks engines)."""
    two = two_valued_axes(results)
    if along:
        if along not in two:
            values = sorted({axes_of(r).get(along) for r in results} - {None})
            raise UsageError(f"--along {along}: needs exactly two values, these results have "
                             f"{len(values)}{': ' + ', '.join(values) if values else ''}")
        return along, two[along]
    candidates = [k for k in two if k != "language"] or list(two)
    if not candidates:
        raise UsageError("no axis has exactly two values in these results: nothing to compare "
                         "(give two results sets: dragnet compare OLD NEW)")
    if len(candidates) > 1:
        raise UsageError(f"several axes have two values ({', '.join(sort_axes(candidates))}): choose one with "
                         f"--along")
    return candidates[0], two[candidates[0]]


def compare_along(results: Sequence[dict], along: str | None = None, **kw: Any) -> Comparison:
    """One results set (e.g. a bench of two design doc revisions) compared along its two-valued axis: the
    value built first is OLD. Results without that axis (the Erlang baseline) are left out."""
    axis, (a, b) = choose_axis(results, along)
    old = [r for r in results if axes_of(r).get(axis) == a]
    new = [r for r in results if axes_of(r).get(axis) == b]
    return compare(old, new, old_label=f"{axis}={a}", new_label=f"{axis}={b}", along=axis, **kw)


def compare_sets(old: str, new: str | None = None, *, along: str | None = None, store_dir=None,
                 **kw: Any) -> Comparison:
    """`dragnet compare OLD [NEW]`: each side read (a results file, a bench folder or a baseline name in the
    store); with OLD alone, compared along its two-valued axis (`along`, or the one found)."""
    from dragnet.results import store

    sdir = store.default_dir(store_dir)
    old_label, old_results = store.load_side(old, sdir)
    if new is None:
        return compare_along(old_results, along, **kw)
    if along:
        raise UsageError("--along is for one results set (dragnet compare RESULTS --along AXIS)")
    new_label, new_results = store.load_side(new, sdir)
    return compare(old_results, new_results, old_label=old_label, new_label=new_label, **kw)


# ---------------------------------------------------------------- rows

def rows_files(result: dict) -> dict[str, str]:
    """A build's dumped row files: the copy next to its results file (bench folders are copied into the store
    and into docs), else the path recorded."""
    out = {}
    src = Path(str(result.get("_source") or "."))
    for name, p in (result.get("rows") or {}).items():
        near = src.parent / "rows" / Path(p).parent.name / Path(p).name
        out[name] = str(near if near.is_file() else Path(p))
    return out


def compare_rows(old: dict | None, new: dict | None) -> list[dict]:
    """Per view: rows of OLD's and NEW's map query and the differences over all its queries."""
    if old is None or new is None:
        return []
    from dragnet.index.rows import compare_files

    fo, fn = rows_files(old), rows_files(new)
    missing = [p for p in [*fo.values(), *fn.values()] if not Path(p).is_file()]
    if missing:
        return [{"view": "?", "differences": None, "old_rows": None, "new_rows": None,
                 "note": f"row files missing: {missing[0]}"}]
    res = compare_files(fo, fn)
    views: dict[str, dict] = {}
    for name, q in res["queries"].items():
        view, query = name.rsplit(".", 1)
        v = views.setdefault(view, {"view": view, "differences": 0, "old_rows": None, "new_rows": None,
                                    "queries": {}})
        v["differences"] += int(q.get("differences") or 0)
        v["queries"][query] = {k: q.get(k) for k in ("differences", "missing_in", "rows_reference", "rows_other")}
        if query == "map":
            v["old_rows"], v["new_rows"] = q.get("rows_reference"), q.get("rows_other")
        if q.get("missing_in"):
            v["note"] = f"{query} only in {'NEW' if q['missing_in'] == 'reference' else 'OLD'}"
    return list(views.values())


# ---------------------------------------------------------------- text

def _pct(r: float | None) -> str:
    return "–" if r is None else f"{(r - 1) * 100:+.1f}%"


def _num(v: float | None, digits: int = 2) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


@dataclass(frozen=True)
class Row:
    """One row of the compare table: a cell of compare's JSON (Cell.as_dict), with the whole document, which says
    which axes vary and which cells fail the gate. The console, Markdown and the HTML page (which reads
    `compare --json` files) all draw these."""
    cell: dict
    doc: dict


def rows(doc: dict) -> list[Row]:
    return [Row(c, doc) for c in doc.get("cells") or []]


def _side(r: Row, side: str, key: str) -> Any:
    return (r.cell.get(side) or {}).get(key)


def _runs(r: Row) -> str:
    def one(side: str) -> str:
        failed = _side(r, side, "failed")
        return f"{_side(r, side, 'n') or 0}" + (f" ({failed} failed)" if failed else "")
    return f"{one('old')} / {one('new')}"


def metric_ci(cell: dict) -> list | None:
    """The interval on the metric (older compare files wrote ci_low and ci_high)."""
    ci = cell.get("ci") or [cell.get("ci_low"), cell.get("ci_high")]
    return ci if ci[0] is not None else None


def _interval(r: Row, ratio: float | None, ci: Sequence | None) -> str:
    if ratio is None:
        return "–"
    return f"{_pct(ratio)} " + (f"[{_pct(ci[0])} … {_pct(ci[1])}]" if metric_ci(r.cell) and ci
                                else f"n={r.cell.get('n', '?')}: no interval")


def _wall_change(r: Row) -> str:
    wall = r.cell.get("wall")
    return "–" if not wall else _interval(r, wall[0], wall[1:])


def _change(r: Row) -> str:
    c = r.cell
    return "–" if c.get("ratio") is None else _interval(r, c["ratio"], metric_ci(c)) \
        + f" ({c.get('metric')}{', paired' if c.get('paired') else ''})"


def _mark(r: Row) -> str:
    c, doc = r.cell, r.doc
    if c.get("axes") in (doc.get("failing") or []):
        return f"{c.get('label')} FAIL"
    held = (c.get("axes") in (doc.get("too_noisy") or []) and doc.get("threshold") is not None
            and c.get("label") != UNDECIDED)
    return f"{c.get('label')}" + (" (gate undecided)" if held else "")


def _cell_text(r: Row) -> str:
    shown = set(r.doc.get("varied") or {}) | set(common_axes(r.doc))
    return axes_text(r.cell.get("axes") or {}, shown) or "(all)"


# compare's one table: the console's, Markdown's and the HTML page's (where the cell's axes are a column each)
COMPARE = (
    Column("cell", _cell_text, None, left=True),
    Column("old s", lambda r: _num(_side(r, "old", "median")), lambda r: _side(r, "old", "median")),
    Column("new s", lambda r: _num(_side(r, "new", "median")), lambda r: _side(r, "new", "median")),
    Column("old CPU s/1k", lambda r: _num(_side(r, "old", "cpu_median"), 3), lambda r: _side(r, "old", "cpu_median")),
    Column("new CPU s/1k", lambda r: _num(_side(r, "new", "cpu_median"), 3), lambda r: _side(r, "new", "cpu_median")),
    Column("runs old/new", _runs, None),
    Column("wall change [99%]", _wall_change, lambda r: (r.cell.get("wall") or [None])[0], left=True),
    Column("change [99%] (metric)", _change, lambda r: r.cell.get("ratio")),
    Column("verdict", _mark, None),
)


def page_columns(doc: dict) -> tuple[Column, ...]:
    """The page's columns: one per axis any cell has, in order met, then COMPARE's figures."""
    axes = dict.fromkeys(k for c in doc.get("cells") or [] for k in (c.get("axes") or {}))
    return tuple(Column(a, lambda r, a=a: str((r.cell.get("axes") or {}).get(a, "")), None) for a in axes) \
        + COMPARE[1:]


def table_rows(cmp: Comparison) -> list[list[str]]:
    return text_rows(COMPARE, rows(cmp.to_json()))


def notes(cmp: Comparison) -> list[str]:
    """Lines under the table: rows that changed, cells on one side only, undecided reasons, the verdict."""
    out = []
    for c, r in cmp.rows_changed:
        counts = ("" if r.get("old_rows") is None else
                  f" ({r['old_rows']:,} → {r['new_rows']:,} map rows"
                  + (f", ×{r['new_rows'] / r['old_rows']:.2f}" if r['old_rows'] else "") + ")")
        out.append(f"rows changed: {c.axes.get('design', '')} view {r['view']}: {r['differences']:,} "
                   f"differences{counts}" + (f"; {r['note']}" if r.get("note") else ""))
    out += [f"only in {cmp.old_label}: {axes_text(a)}" for a in cmp.only_old]
    out += [f"only in {cmp.new_label}: {axes_text(a)}" for a in cmp.only_new]
    for c in cmp.cells:
        if c.why:
            need = f"; about {c.needed} rounds would likely decide" if c.needed and c in cmp.too_noisy else ""
            out.append(f"{c.label}: {axes_text(c.axes, cmp.varied) or '(all)'}: {c.why}{need}")
        if c.wall and c.ratio is not None and c.metric == "cpu" and _disagree(c):
            out.append(f"cpu and wall disagree: {axes_text(c.axes, cmp.varied) or '(all)'}: CPU {_pct(c.ratio)}, "
                       f"wall {_pct(c.wall[0])} (CPU ranks efficiency, wall ranks speed)")
        for side, s in (("old", c.old), ("new", c.new)):
            out += [f"failed ({side}): {axes_text(c.axes, cmp.varied)}: {e}" for e in s.errors]
    out += gate_lines(cmp)
    out.append(f"test: {TEST}")
    out.append(f"verdict: {cmp.verdict()}")
    return out


def gate_lines(cmp: Comparison) -> list[str]:
    """What the gate judged each cell on, and the figures that fail or hold it."""
    if not cmp.roles or cmp.threshold is None:
        return []
    out = [f"changes: {cmp.changes}"] if cmp.changes else []
    for c in cmp.cells:
        where = axes_text(c.axes, cmp.varied) or "(all)"
        judged = [c.metric, *cmp._others(c, JUDGED)]
        out.append(f"gate: {where}: judged on {' and '.join(FIGURE_NAMES[m] for m in judged)}"
                   + "".join(f"; {figure_text(c, m)}" for m in judged if m != c.metric and m in c.figures))
        out += [f"gate: {where}: fails on {figure_text(c, m)}" for m in cmp.failing_figures(c)
                if m != c.metric]
        out += [f"gate: {where}: held undecided: {figure_text(c, m)} lies above +{cmp.threshold * 100:g}%"
                for m in cmp.held(c)]
    return out


def _direction(low: float, high: float) -> int | None:
    """+1 separated slower, -1 separated faster, 0 tied, None unresolved."""
    iv = decide.Interval(1.0, low, high, 2, True, decide.LEVEL, 0.0)
    state = decide.classify(iv)
    return None if state == decide.UNRESOLVED else 0 if state == decide.TIED else (1 if low > 1 else -1)


def _disagree(c: Cell) -> bool:
    a, b = _direction(c.ci_low, c.ci_high), _direction(c.wall[1], c.wall[2])
    return a is not None and b is not None and a != b


def common_axes(cmp: Comparison | dict) -> dict[str, str]:
    """Axes with one value in every compared cell (shown once, not in every row), when there are several; of a
    Comparison or of its JSON."""
    if isinstance(cmp, dict):
        cells, varied = [c.get("axes") or {} for c in cmp.get("cells") or []], cmp.get("varied") or {}
    else:
        cells, varied = [c.axes for c in cmp.cells], cmp.varied
    if len(cells) < 2:
        return {}
    return {k: v for k, v in cells[0].items() if k not in varied and all(c.get(k) == v for c in cells)}


def _metric_title(cmp: Comparison) -> str:
    used = {c.metric for c in cmp.cells if c.metric} or {cmp.metric}
    return " / ".join({"cpu": "CPU per document", "qs": "query-server CPU per document",
                        "instructions": "instructions per document (valgrind)", "wall": "wall time"}[m]
                       for m in sorted(used))


def title(cmp: Comparison) -> str:
    what = "; ".join(f"{k} {o} → {n}" for k, (o, n) in cmp.varied.items())
    same = axes_text(common_axes(cmp))
    return (f"{cmp.old_label} → {cmp.new_label}" + (f" ({what})" if what else "") + f": build {_metric_title(cmp)} per cell"
            + (f"; in every cell {same}" if same else ""))


def parse_threshold(text: str, option: str = "--fail-if-slower") -> float:
    """'5%' or '5' -> 0.05; a one-line error otherwise (0 too: no interval can lie below a zero slowdown)."""
    t = str(text).strip().rstrip("%").strip()
    try:
        v = float(t)
    except ValueError:
        raise UsageError(f"{option} {text}: expected a percentage such as 5%") from None
    if not 0 < v < 1000:
        raise UsageError(f"{option} {text}: expected a percentage above 0 and below 1000")
    return v / 100
