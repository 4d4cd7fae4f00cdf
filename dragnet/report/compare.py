"""Two sets of view builds compared cell by cell: did a change make indexing slower?

A *cell* is one combination of axis values: `bench.axes` when a result carries it, otherwise the axes
derived from the result (language, storage, scenario, size, design doc id, its content hash as "ddoc",
the views built, the CouchDB version). Cells are matched between OLD and NEW by every axis, except an
axis whose values differ between the sides one for one (OLD has exactly one value the other lacks, and
NEW too): that is what the two sides compare (two design doc revisions, two CouchDB versions …), so its
values are paired instead of matched. An axis only one side records is left out. The design doc id and
the views built are always matched.

Per cell, over the successful builds' wall times (the same samples `report` ranks by, as docs/s):
- ratio of medians NEW / OLD (above 1: NEW is slower) with a 95% percentile bootstrap interval;
- the two-sided Mann–Whitney U test `report` uses (dragnet.measure.stats);
- a label, as criterion gives one:
  - *regressed* / *improved*: p < 0.05 and the interval excludes 1;
  - *no change*: p >= 0.05 and the interval holds 1;
  - *undecided*: fewer than two builds on a side, too few for the exact test ever to reach p < 0.05
    (fewer than 4 a side with 4 on the other, see stats.min_p_value), or test and interval disagree.
- `threshold` (e.g. 0.05 for --fail-if-slower 5%): a cell *fails* when it regressed and its ratio exceeds
  1 + threshold; it is *too noisy to judge* when undecided, or "no change" with an interval reaching
  past 1 + threshold. A cell whose NEW builds failed where OLD's did not fails too.

Rows: for design-doc builds that dumped their rows (bench --ddoc), the first such build of each side is
compared per view with dragnet.build.rows (rows and reduce results matched by document id / key), so a
revision that changes what a view emits is listed with its row counts.

Everything here is pure over results dicts, except that rows comparisons read the dumped row files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from dragnet.measure import stats as stats
from dragnet.results import schema as rs
from dragnet.errors import UsageError
from dragnet.results.load import axes_of, axes_text, sort_axes, started_at, wall_s

SCHEMA = rs.schema(rs.COMPARE)
METRIC = "wall_time_s"
TEST = ("two-sided Mann-Whitney U over the builds' wall times, alpha 0.05; ratio of medians NEW/OLD with a "
        "95% percentile bootstrap interval")
# what was built: matched, never paired nor left out (a design doc is not a revision of a view file)
IDENTITY = ("design", "view")
REGRESSED, IMPROVED, NO_CHANGE, UNDECIDED = "regressed", "improved", "no change", "undecided"


# ---------------------------------------------------------------- one side's builds

@dataclass
class Side:
    """One side of a cell: its builds' wall times (successful), failures, and where they are recorded."""

    samples: list[float] = field(default_factory=list)
    failed: int = 0
    sources: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def median(self) -> float | None:
        return stats.median(self.samples) if self.samples else None

    def as_dict(self) -> dict:
        return {"n": len(self.samples), "failed": self.failed, "median": self.median, "samples": self.samples,
                "sources": self.sources, "errors": self.errors}


@dataclass
class Cell:
    axes: dict[str, str]
    old: Side
    new: Side
    ratio: float | None = None        # median NEW / median OLD wall time: above 1, NEW is slower
    ci_low: float | None = None
    ci_high: float | None = None
    p: float | None = None
    method: str | None = None
    label: str = UNDECIDED
    why: str = ""                     # for undecided: what is missing
    rows: list[dict] = field(default_factory=list)   # per view, see compare_rows()

    @property
    def change_pct(self) -> float | None:
        return None if self.ratio is None else (self.ratio - 1) * 100

    def as_dict(self) -> dict:
        return {"axes": self.axes, "old": self.old.as_dict(), "new": self.new.as_dict(), "ratio": self.ratio,
                "ci": None if self.ci_low is None else [self.ci_low, self.ci_high], "change_pct": self.change_pct,
                "p": self.p, "test": self.method, "label": self.label, "why": self.why, "rows": self.rows}


def judge(cell: Cell, alpha: float = stats.ALPHA) -> Cell:
    """Fill ratio, interval, p and label from the cell's samples (rules in the module docstring)."""
    x, y = cell.new.samples, cell.old.samples
    if not x or not y:
        cell.label, cell.why = UNDECIDED, "no successful build on " + ("either side" if not x and not y else
                                                                      "the new side" if not x else "the old side")
        return cell
    cell.ratio, cell.ci_low, cell.ci_high = stats.bootstrap_ratio_ci(x, y)
    if len(x) < 2 or len(y) < 2 or stats.min_p_value(len(x), len(y)) >= alpha:
        cell.label, cell.why = UNDECIDED, f"too few builds ({len(y)} old, {len(x)} new) for the test to decide"
        return cell
    mw = stats.mann_whitney_u(x, y)
    cell.p, cell.method = mw.p, f"Mann-Whitney ({mw.method})"
    holds_one = cell.ci_low <= 1 <= cell.ci_high
    if mw.p < alpha and not holds_one:
        cell.label = REGRESSED if cell.ratio > 1 else IMPROVED
    elif mw.p >= alpha and holds_one:
        cell.label = NO_CHANGE
    else:
        cell.label, cell.why = UNDECIDED, "the test and the interval disagree"
    return cell


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

    @property
    def failing(self) -> list[Cell]:
        """Cells that fail --fail-if-slower: significant regressions beyond it, and new failed builds."""
        if self.threshold is None:
            return []
        return [c for c in self.cells
                if (c.label == REGRESSED and c.ratio is not None and c.ratio > 1 + self.threshold)
                or (c.new.failed and not c.old.failed)]

    @property
    def too_noisy(self) -> list[Cell]:
        """Cells that cannot say whether they are past the threshold (every undecided cell without one)."""
        limit = 1 + (self.threshold or 0)
        return [c for c in self.cells if c not in self.failing and (
            c.label == UNDECIDED or (self.threshold is not None and c.label == NO_CHANGE
                                     and c.ci_high is not None and c.ci_high > limit))]

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
            return f"FAIL: {len(self.failing)} cell(s) significantly slower by more than {pct} (or newly failing)"
        noisy = f"; {len(self.too_noisy)} cell(s) too noisy to judge (more rounds)" if self.too_noisy else ""
        return f"pass: no cell significantly slower by more than {pct}{noisy}"

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "old": self.old_label, "new": self.new_label, "metric": METRIC, "test": TEST,
                "varied": self.varied, "along": self.along, "threshold": self.threshold,
                "cells": [c.as_dict() for c in self.cells], "only_old": self.only_old, "only_new": self.only_new,
                "rows_changed": [{"axes": c.axes, **r} for c, r in self.rows_changed],
                "failing": [c.axes for c in self.failing], "too_noisy": [c.axes for c in self.too_noisy],
                "failed": bool(self.failing), "verdict": self.verdict()}


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
            threshold: float | None = None, rows: bool = True, along: str | None = None) -> Comparison:
    """OLD and NEW results (lists of dragnet.addview/1 dicts) compared cell by cell; UsageError (exit 2)
    when no cell is on both sides."""
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
            w = wall_s(r)
            if w is None:
                s.failed += 1
                s.errors.append(str((r.get("summary") or {}).get("error") or (r.get("bench") or {}).get("error")
                                    or "build failed"))
            else:
                s.samples.append(w)
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
        cell = judge(cells[k])
        if rows:
            cell.rows = compare_rows(*by_key[k])
        out.append(cell)
    only = lambda side: [cells[k].axes for k in cells if sides[k] == {side}]  # noqa: E731
    return Comparison(old_label, new_label, out, only("old"), only("new"), varied, threshold, along)


def _pick(results: Sequence[dict], axes: Sequence[dict], key: tuple, varied: dict, side: str) -> dict | None:
    """The first successful build of a cell that dumped its rows."""
    for r, a in zip(results, axes):
        if _key(a, varied, side) == key and wall_s(r) is not None and isinstance(r.get("rows"), dict):
            return r
    return None


# ---------------------------------------------------------------- one folder, two values of an axis

def two_valued_axes(results: Sequence[dict]) -> dict[str, list[str]]:
    """Axes with exactly two values among the results that have them, values in order of first build."""
    first: dict[str, dict[str, float]] = {}
    for r in results:
        t = started_at(r)
        for k, v in axes_of(r).items():
            first.setdefault(k, {})
            first[k][v] = min(first[k].get(v, t), t)
    return {k: sorted(vs, key=lambda v: vs[v]) for k, vs in first.items() if len(vs) == 2}


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
    from dragnet.build.rows import compare_files

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

COLUMNS = ("cell", "old s", "new s", "runs old/new", "change [95% interval]", "p", "verdict")


def _pct(r: float | None) -> str:
    return "–" if r is None else f"{(r - 1) * 100:+.1f}%"


def table_rows(cmp: Comparison) -> list[list[str]]:
    rows = []
    varied = set(cmp.varied) | set(common_axes(cmp))
    for c in cmp.cells:
        fails = lambda s: f" ({s.failed} failed)" if s.failed else ""  # noqa: E731
        mark = c.label + (" FAIL" if c in cmp.failing else " (too noisy)" if c in cmp.too_noisy
                          and cmp.threshold is not None else "")
        rows.append([axes_text(c.axes, varied) or "(all)",
                     "–" if c.old.median is None else f"{c.old.median:.2f}",
                     "–" if c.new.median is None else f"{c.new.median:.2f}",
                     f"{len(c.old.samples)}{fails(c.old)} / {len(c.new.samples)}{fails(c.new)}",
                     "–" if c.ratio is None else f"{_pct(c.ratio)} [{_pct(c.ci_low)} … {_pct(c.ci_high)}]",
                     "–" if c.p is None else f"{c.p:.3f}", mark])
    return rows


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
        if c.label == UNDECIDED and c.why:
            out.append(f"undecided: {axes_text(c.axes, cmp.varied) or '(all)'}: {c.why}")
        for side, s in (("old", c.old), ("new", c.new)):
            out += [f"failed ({side}): {axes_text(c.axes, cmp.varied)}: {e}" for e in s.errors]
    out.append(f"test: {TEST}")
    out.append(f"verdict: {cmp.verdict()}")
    return out


def common_axes(cmp: Comparison) -> dict[str, str]:
    """Axes with one value in every compared cell (shown once, not in every row), when there are several."""
    if len(cmp.cells) < 2:
        return {}
    first = cmp.cells[0].axes
    return {k: v for k, v in first.items() if k not in cmp.varied and all(c.axes.get(k) == v for c in cmp.cells)}


def title(cmp: Comparison) -> str:
    what = "; ".join(f"{k} {o} → {n}" for k, (o, n) in cmp.varied.items())
    same = axes_text(common_axes(cmp))
    return (f"{cmp.old_label} → {cmp.new_label}" + (f" ({what})" if what else "") + ": build wall time per cell"
            + (f"; in every cell {same}" if same else ""))


def to_markdown(cmp: Comparison) -> str:
    from dragnet.report.tables import md_table

    return (f"**{title(cmp)}**\n\n" + md_table(COLUMNS, table_rows(cmp)) + "\n"
            + "".join(f"- {line}\n" for line in notes(cmp)))


def parse_threshold(text: str) -> float:
    """'5%' or '5' -> 0.05; a one-line error otherwise."""
    t = str(text).strip().rstrip("%").strip()
    try:
        v = float(t)
    except ValueError:
        raise UsageError(f"--fail-if-slower {text}: expected a percentage such as 5%") from None
    if not 0 <= v < 1000:
        raise UsageError(f"--fail-if-slower {text}: expected a percentage between 0 and 1000")
    return v / 100
