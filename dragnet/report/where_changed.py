"""`compare`'s "where it changed": which stage of the view build (dragnet.measure.stages, from `--profile`)
grew or shrank between OLD and NEW, so that a regression comes with its place.

Per cell of a comparison (report.compare), each build's stage cost is its CPU-seconds per 1,000 documents
(the stage's samples × the CPU each sample stands for, over the build's documents). NEW / OLD per stage is
decide's interval, paired by bench round where both sides have the round (ratio_interval), and labelled
separated / tied / unresolved as everywhere else. Reads the cells' results files again (their `profile`
entry); pure otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from dragnet.errors import DragnetError
from dragnet.measure import decide
from dragnet.measure import stages as _stages
from dragnet.measure import stats
from dragnet.report.compare import Comparison, round_key
from dragnet.results.load import load_results

MIN_SHARE = 0.05     # stages below this share of the sampled CPU on both sides are not judged


def stage_costs(result: dict) -> dict[str, float] | None:
    """CPU-seconds per 1,000 documents of each profiled stage of one build; None without a profile."""
    p = result.get("profile") if isinstance(result.get("profile"), dict) else None
    docs = (result.get("summary") or {}).get("docs")
    if not p or p.get("absent") or not p.get("samples") or not docs:
        return None
    per_sample = (p.get("sampled_cpu_s") or 0) / p["samples"]
    return {s: v.get("samples", 0) * per_sample / docs * 1000 for s, v in (p.get("stages") or {}).items()}


def _shares(costs: Sequence[dict[str, float]]) -> dict[str, float]:
    total = sum(sum(c.values()) for c in costs)
    out: dict[str, float] = {}
    for c in costs:
        for s, v in c.items():
            out[s] = out.get(s, 0.0) + v / total if total else 0.0
    return out


@dataclass(frozen=True)
class StageChange:
    axes: dict
    stage: str
    old: float                    # median CPU-s per 1,000 docs
    new: float
    interval: decide.Interval     # NEW / OLD
    label: str                    # decide: separated, tied, unresolved

    @property
    def grew(self) -> bool:
        return self.label == decide.SEPARATED and self.interval.ratio > 1

    def as_dict(self) -> dict:
        return {"axes": self.axes, "stage": self.stage, "label": self.label, "grew": self.grew,
                "old_cpu_s_per_1000_docs": round(self.old, 6), "new_cpu_s_per_1000_docs": round(self.new, 6),
                "ratio": self.interval.ratio, "ci": [self.interval.low, self.interval.high],
                "paired": self.interval.paired, "n": self.interval.n}


@dataclass
class WhereChanged:
    changes: list[StageChange]
    notes: list[str]

    def as_dict(self) -> dict:
        return {"test": f"NEW/OLD CPU-s per 1,000 docs per stage, decide's {decide.LEVEL:.0%} interval, paired "
                        f"by round where both sides have it", "changes": [c.as_dict() for c in self.changes], "notes": self.notes}


def _keyed(results: Sequence[dict]) -> dict[Any, dict[str, float]]:
    out: dict[Any, dict[str, float]] = {}
    for i, r in enumerate(results):
        costs = stage_costs(r)
        if costs is not None:
            k = round_key(r)
            out[k if k is not None and k not in out else ("unpaired", i)] = costs
    return out


def judge_cell(axes: dict, old: Sequence[dict], new: Sequence[dict]) -> list[StageChange]:
    """Every stage with a share of at least MIN_SHARE on either side, judged NEW / OLD."""
    a, b = _keyed(old), _keyed(new)
    if not a or not b:
        return []
    shares = {s: max(_shares(list(a.values())).get(s, 0), _shares(list(b.values())).get(s, 0))
              for s in _stages.STAGES}
    out = []
    for s in _stages.STAGES:
        if shares[s] < MIN_SHARE:
            continue
        va = {k: c[s] for k, c in a.items() if c.get(s, 0) > 0}
        vb = {k: c[s] for k, c in b.items() if c.get(s, 0) > 0}
        if not va or not vb:
            continue
        iv = decide.ratio_interval(vb, va)
        label = decide.classify(iv) if math.isfinite(iv.high) else decide.UNRESOLVED
        out.append(StageChange(axes, s, stats.median(list(va.values())), stats.median(list(vb.values())), iv, label))
    return out


def _load(paths: list[str]) -> list[dict]:
    # Nouveau builds are cells of a comparison too (they carry no profile); a side may have no file at all
    return load_results(paths, nouveau=True) if paths else []


def where(cmp: Comparison, load: Callable[[list[str]], list[dict]] = _load) -> WhereChanged:
    changes: list[StageChange] = []
    notes: list[str] = []
    for cell in cmp.cells:
        try:
            old, new = load(list(dict.fromkeys(cell.old.sources))), load(list(dict.fromkeys(cell.new.sources)))
        except DragnetError as exc:      # moved or rewritten since the comparison read them
            notes.append(f"where it changed ({_axes(cell.axes)}): {exc}")
            continue
        have_old, have_new = any(stage_costs(r) for r in old), any(stage_costs(r) for r in new)
        if have_old != have_new:
            notes.append(f"where it changed: only {cmp.old_label if have_old else cmp.new_label} was built with "
                         f"--profile ({_axes(cell.axes)}): run both sides with --profile to see which stage changed")
            continue
        changes += judge_cell(cell.axes, old, new)
    return WhereChanged(changes, notes)


def _axes(axes: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in axes.items()) or "all"


def _pct(r: float) -> str:
    return f"{(r - 1) * 100:+.0f}%" if math.isfinite(r) else "?"


def lines(w: WhereChanged) -> list[str]:
    """Per cell, the stages that separated first (grown, then shrunk), each with its interval."""
    out = list(w.notes)
    by_cell: dict[str, list[StageChange]] = {}
    for c in w.changes:
        by_cell.setdefault(_axes(c.axes), []).append(c)
    for cell, cs in by_cell.items():
        cs = sorted(cs, key=lambda c: (c.label != decide.SEPARATED, -(c.new - c.old)))
        parts = []
        for c in cs:
            iv = c.interval
            band = f"[{_pct(iv.low)}, {_pct(iv.high)}]" if math.isfinite(iv.high) else "(n<2: no interval)"
            parts.append(f"{_stages.LABELS[c.stage]} {_pct(iv.ratio)} {band} {c.label}, "
                         f"{'paired' if iv.paired else 'unpaired'} n={iv.n} ({c.old:.3f} → {c.new:.3f} CPU-s/1k docs)")
        grown = [c for c in cs if c.grew]
        head = (f"grew: {', '.join(_stages.LABELS[c.stage] for c in grown)}" if grown else "no stage separated upward")
        out.append(f"where it changed ({cell}): {head}")
        out += [f"  {p}" for p in parts]
    return out
