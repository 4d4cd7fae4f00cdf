"""The least squares fits a forecast is made of: y = a + b·x(n) for the shapes of x a quantity may grow with,
and a fit's prediction interval at another size. Pure; dragnet.forecast.model and dragnet.forecast.choice
use them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from dragnet.measure.decide import t_quantile   # Student t without scipy: one home

LEVEL = 0.95

# ---------------------------------------------------------------- the fit

# The shapes a quantity may grow with: y = a + b·x(n). A fixed cost a and a per-document cost b, where the
# per-document cost may itself grow: with the B-trees' depth (n log n: every row is inserted into a tree of
# depth ∝ log n), or as a power (the garbage an append-only index file keeps grows faster than its rows,
# because each batch of updates rewrites more of a bigger tree until CouchDB compacts it). Memory is the other
# way round: a + b·ln n, growing ever slower, as processes and batches have their own bounds.
LINEAR, NLOGN, POWER, LOG = "linear", "n log n", "power", "log n"
POWERS = [k / 100 for k in range(100, 201, 2)]     # a power's exponent: from 1 (linear) to 2 (quadratic)


def transform(model: str, k: float, n: float) -> float:
    if model == LINEAR:
        return n
    if model == NLOGN:
        return n * math.log(n)
    if model == POWER:
        return n ** k
    if model == LOG:
        return math.log(n)
    raise ValueError(f"model {model!r}: expected one of {LINEAR}, {NLOGN}, {POWER}, {LOG}")


@dataclass(frozen=True)
class LinearFit:
    fixed: float            # a: cost at zero documents
    per_doc: float          # b: cost per unit of x(n) (per document when linear)
    r2: float | None        # None when every y is the same
    points: int
    sizes: int              # distinct document counts
    resid_sd: float         # residual standard deviation (weighted), n − 2 degrees of freedom
    mean_x: float           # weighted mean of x(n)
    sxx: float              # weighted Σ w(x − x̄)²
    sum_w: float
    weighting: str          # "ordinary" or "1/n" (variance grows with the documents)
    model: str = LINEAR     # x(n): n, n·ln n or n^k
    k: float = 1.0          # the power's exponent

    def x(self, n: float) -> float:
        return transform(self.model, self.k, n)

    def value(self, n: float) -> float:
        return self.fixed + self.per_doc * self.x(n)


WEIGHTS: dict[str, Callable[[float], float]] = {"ordinary": lambda n: 1.0, "1/n": lambda n: 1.0 / n}


def fit_linear(points: Iterable[tuple[float, float]], weighting: str = "ordinary", model: str = LINEAR,
               k: float = 1.0) -> LinearFit | None:
    """Least squares of y on x(n) over (n, y) points; None without three points on two distinct sizes (a line
    through two points leaves no residual to size the interval with)."""
    if weighting not in WEIGHTS:
        raise ValueError(f"weighting {weighting!r}: expected one of {', '.join(WEIGHTS)}")
    pts = [(float(n), float(y)) for n, y in points if n is not None and y is not None and n > 1]
    if len(pts) < 3 or len({n for n, _ in pts}) < 2:
        return None
    w = [WEIGHTS[weighting](n) for n, _ in pts]
    xs = [transform(model, k, n) for n, _ in pts]
    sw = math.fsum(w)
    mx = math.fsum(wi * x for wi, x in zip(w, xs)) / sw
    my = math.fsum(wi * y for wi, (_, y) in zip(w, pts)) / sw
    sxx = math.fsum(wi * (x - mx) ** 2 for wi, x in zip(w, xs))
    sxy = math.fsum(wi * (x - mx) * (y - my) for wi, x, (_, y) in zip(w, xs, pts))
    b = sxy / sxx
    a = my - b * mx
    sse = math.fsum(wi * (y - a - b * x) ** 2 for wi, x, (_, y) in zip(w, xs, pts))
    syy = math.fsum(wi * (y - my) ** 2 for wi, (_, y) in zip(w, pts))
    r2 = None if syy == 0 else 1 - sse / syy
    return LinearFit(a, b, r2, len(pts), len({n for n, _ in pts}), math.sqrt(sse / (len(pts) - 2)), mx, sxx, sw,
                     weighting, model, k)


def fit_power(points: Sequence[tuple[float, float]], weighting: str = "ordinary") -> LinearFit | None:
    """a + b·n^k with the k in POWERS that leaves the least squared residual (k = 1 is the line)."""
    fits = power_fits(points, weighting)
    return min(fits, key=lambda f: f.resid_sd) if fits else None


def power_fits(points: Sequence[tuple[float, float]], weighting: str = "ordinary",
               level: float | None = None) -> list[LinearFit]:
    """The power fits over POWERS; with a level, only the exponents the points do not reject (profile
    likelihood: residual squares within (1 + F(1, m − 3)/(m − 3)) of the best, m points), so a forecast can
    carry the exponent's own uncertainty, not only the residuals' at the best k."""
    fits = [f for f in (fit_linear(points, weighting, POWER, k) for k in POWERS) if f is not None]
    if level is None or not fits or fits[0].points <= 3:
        return fits      # three points leave no residual to judge the exponent by
    df = fits[0].points - 3
    sse = {f.k: f.resid_sd ** 2 * (f.points - 2) for f in fits}
    bound = min(sse.values()) * (1 + t_quantile(0.5 + level / 2, df) ** 2 / df)
    return [f for f in fits if sse[f.k] <= bound]


def fit_models(points: Sequence[tuple[float, float]], weighting: str = "ordinary",
               models: Sequence[str] = (LINEAR, NLOGN, POWER)) -> dict[str, LinearFit]:
    """Each model's fit over the same points (none when there are too few points)."""
    out = {m: fit_shape(points, m, weighting) for m in models}
    return {m: f for m, f in out.items() if f is not None}


def fit_shape(points: Sequence[tuple[float, float]], shape: str, weighting: str = "ordinary") -> LinearFit | None:
    """One shape's least squares fit (a power's exponent the best of its grid)."""
    return fit_power(points, weighting) if shape == POWER else fit_linear(points, weighting, shape)


@dataclass(frozen=True)
class Prediction:
    docs: int
    value: float
    low: float
    high: float
    level: float


def predict(fit: LinearFit, n: float, level: float = LEVEL) -> Prediction:
    """The fitted value at n with its prediction interval (a new build's value, not the line's mean). For a
    power the exponent is taken as known, so its interval is conditional on it."""
    w0 = WEIGHTS[fit.weighting](n)
    se = fit.resid_sd * math.sqrt(1 / w0 + 1 / fit.sum_w + (fit.x(n) - fit.mean_x) ** 2 / fit.sxx)
    half = t_quantile(0.5 + level / 2, fit.points - 2) * se
    v = fit.value(n)
    return Prediction(int(n), v, v - half, v + half, level)
