"""Which growth shape a quantity follows, chosen by the sweep's own data: each shape is fitted on all sizes
but one and asked to predict the size it was not fitted on (each size but the smallest in turn: the largest
from the smaller ones, an extrapolation, and the ones between, whose curvature a wrong shape misses; three
sizes are left to fit on, as a power's a, b and k need). The shape whose held-out predictions erred least
wins, by their mean |relative error|. Each size is left out in turn, not only the largest, because three
points fit a free power exactly and it overshoots: from the largest alone a power and n log n can err
alike (15.6 % against 16.8 %) where leaving each size out tells them apart (10 % against 17 %).

A shape fixed in advance (model.PRIMARY, what builds of the declarations follow) is kept only where the
sweep cannot tell the shapes apart: no size can be held out (fewer than four sizes), or the fixed shape's
held-out error is within the margin of the best one's (TIE, or the builds' own spread at the held-out sizes
when that is larger), because a fixed shape can be far off a design document's own: one of 16 views whose
docs/s fell 30 % at every doubling was forecast −45 % on build time by n log n and within 7 % by a power.

Pure: points in, a JSON-ready record out.
"""

from __future__ import annotations

import math
from typing import Sequence

from dragnet.forecast.fit import POWER, fit_shape

TIE = 0.02        # held-out errors closer than this share cannot tell two shapes apart
MIN_TRAIN = 3     # sizes a fold is fitted on: a power's a, b and k need three
BEGUN = 0.01      # a size whose value is under this share of the largest size's is not held out


def folds(pts: Sequence[tuple[float, float]]) -> list[int]:
    """The sizes to hold out, largest first: each but the smallest (from below it the shapes' fixed costs
    dominate, and its small values make any relative error huge), when MIN_TRAIN sizes are left to fit on;
    nor one whose value is under BEGUN of the largest size's: a quantity that had not begun there (the
    compaction files of a one-shard build that smoosh had just started: 51 bytes against 98 MB at 20,000
    documents) has no relative error worth the name, and one of 3,600,000 % made an interval of 1.3 TB."""
    sizes = sorted({int(n) for n, _ in pts})
    if len(sizes) <= MIN_TRAIN:
        return []
    top = abs(_mean(pts, sizes[-1]))
    return [n for n in reversed(sizes[1:]) if abs(_mean(pts, n)) >= BEGUN * top]


def _mean(pts: Sequence[tuple[float, float]], size: int) -> float:
    ys = [y for n, y in pts if int(n) == size]
    return math.fsum(ys) / len(ys)


def held_out(pts: Sequence[tuple[float, float]], shapes: Sequence[str], weighting: str = "ordinary") -> dict:
    """Per shape: each held-out size's prediction from the other sizes, its relative error against the
    builds' mean there, and the mean |error| over the folds ("error"; None without a fold)."""
    out: dict[str, dict] = {}
    for shape in shapes:
        rows = []
        for size in folds(pts):
            train = [(n, y) for n, y in pts if n != size]
            fit = fit_shape(train, shape, weighting)
            mean = _mean(pts, size)
            if fit is None or not mean:
                continue
            pred = fit.value(size)
            rows.append({"docs": size, "fitted_on": sorted({int(n) for n, _ in train}), "predicted": pred,
                         "actual": mean, "error": (pred - mean) / mean,
                         **({"k": fit.k} if shape == POWER else {})})
        out[shape] = {"folds": rows,
                      "error": math.fsum(abs(r["error"]) for r in rows) / len(rows) if rows else None}
    return out


def noise(pts: Sequence[tuple[float, float]]) -> float:
    """The builds' own spread where shapes are judged: the largest half-range of repeated builds at a
    held-out size, relative to their mean (0 with one build a size)."""
    worst = 0.0
    for size in folds(pts):
        ys = [y for n, y in pts if n == size]
        mean = math.fsum(ys) / len(ys)
        if len(ys) > 1 and mean:
            worst = max(worst, (max(ys) - min(ys)) / 2 / abs(mean))
    return worst


def choose(pts: Sequence[tuple[float, float]], shapes: Sequence[str], fixed: str,
           weighting: str = "ordinary") -> dict:
    """The shape a quantity is forecast with, and why: JSON-ready.

    chosen: the shape of least held-out error when it beats the fixed one by more than the margin, else
    the fixed one; told_apart: whether the held-out error decided; tied: the shapes whose held-out error is
    within the margin of the chosen one's (all shapes when nothing was held out)."""
    errs = held_out(pts, shapes, weighting)
    scored = {s: e["error"] for s, e in errs.items() if e["error"] is not None}
    margin = max(TIE, noise(pts))
    rec = {"fixed": fixed, "held_out": errs, "margin": margin}
    if fixed not in shapes:
        fixed = shapes[0]
    if not scored or fixed not in scored:
        n = len({int(n) for n, _ in pts})
        return {**rec, "chosen": fixed, "told_apart": False, "tied": list(shapes),
                "reason": f"{n} size{'s' if n != 1 else ''}: none can be held out (it takes {MIN_TRAIN + 1}); "
                          f"{fixed} as fixed in advance"}
    best = min(scored, key=lambda s: scored[s])
    lead = scored[fixed] - scored[best]
    if best != fixed and lead > margin:
        chosen, apart = best, True
        reason = (f"{best} predicted the held-out size{'s' if len(errs[best]['folds']) > 1 else ''} best: "
                  f"{scored[best]:.1%} off against {fixed}'s {scored[fixed]:.1%} (the shape fixed in advance)")
    elif best == fixed:
        second = sorted(v for s, v in scored.items() if s != fixed)
        chosen, apart = fixed, not second or second[0] - scored[fixed] > margin
        reason = f"{fixed} predicted the held-out sizes best: {scored[fixed]:.1%} off" + (
            f", the next {second[0]:.1%}" if second else "") + ("" if apart else
                                                                 f" (within the margin {margin:.1%}: a tie)")
    else:
        chosen, apart = fixed, False
        reason = (f"{best} {scored[best]:.1%} off, {fixed} {scored[fixed]:.1%}: within the margin {margin:.1%}, the "
                  f"sweep cannot tell them apart; {fixed} as fixed in advance")
    tied = [s for s in shapes if s not in scored or scored[s] - scored[chosen] <= margin]
    return {**rec, "chosen": chosen, "told_apart": apart, "tied": tied, "reason": reason}
