"""`dragnet forecast`: what a view build of N documents will cost, from a size sweep of smaller builds.

Each quantity (build time, index size, peak disk, bytes written, peak memory) is fitted against documents as a
fixed plus a per-document cost, y = a + b·n, by least squares (ordinary, or weighted), over every successful
build of the sweep. The forecast at the target is the fitted line there with a prediction interval from the
residuals (Student t, n − 2 degrees of freedom), so a noisy or curved sweep shows as a wide interval and a low
r², not as a confident number. Warnings say when the forecast is an extrapolation it cannot vouch for.

Pure: the points come from the sweep's manifests (dragnet.bench.sizes), nothing here talks to CouchDB.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable, Iterable, Sequence

from dragnet.bench.sizes import peak_memory

SCHEMA = "dragnet.forecast/1"
SUMMARY = "forecast.json"
LEVEL = 0.95
FAR = 10.0            # target beyond this many times the largest measured size: an extrapolation too far
POOR_R2 = 0.9         # below this the line does not describe the sweep
LOADED = 1.0          # load average per CPU above which the timings are suspect (runnable tasks queue)


# ---------------------------------------------------------------- Student t (no scipy in the project)

def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularised incomplete beta (Numerical Recipes, modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((a + m2 - 1) * (a + m2)),
                    -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _betai(a: float, b: float, x: float) -> float:
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1 - x) / b


def t_cdf(t: float, df: float) -> float:
    tail = 0.5 * _betai(df / 2, 0.5, df / (df + t * t))
    return 1 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with df degrees of freedom (bisection on the cdf)."""
    if not 0 < p < 1 or df <= 0:
        raise ValueError(f"t_quantile({p}, {df})")
    lo, hi = -1e6, 1e6
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


# ---------------------------------------------------------------- the fit

@dataclass(frozen=True)
class LinearFit:
    fixed: float            # a: cost at zero documents
    per_doc: float          # b: cost per document
    r2: float | None        # None when every y is the same
    points: int
    sizes: int              # distinct document counts
    resid_sd: float         # residual standard deviation (weighted), n − 2 degrees of freedom
    mean_x: float           # weighted mean of the document counts
    sxx: float              # weighted Σ w(x − x̄)²
    sum_w: float
    weighting: str          # "ordinary" or "1/n" (variance grows with the documents)

    def value(self, n: float) -> float:
        return self.fixed + self.per_doc * n


WEIGHTS: dict[str, Callable[[float], float]] = {"ordinary": lambda n: 1.0, "1/n": lambda n: 1.0 / n}


def fit_linear(points: Iterable[tuple[float, float]], weighting: str = "ordinary") -> LinearFit | None:
    """Least squares of y on n over (n, y) points; None without three points on two distinct sizes (a line
    through two points leaves no residual to size the interval with)."""
    if weighting not in WEIGHTS:
        raise ValueError(f"weighting {weighting!r}: expected one of {', '.join(WEIGHTS)}")
    pts = [(float(x), float(y)) for x, y in points if x is not None and y is not None and x > 0]
    if len(pts) < 3 or len({x for x, _ in pts}) < 2:
        return None
    w = [WEIGHTS[weighting](x) for x, _ in pts]
    sw = math.fsum(w)
    mx = math.fsum(wi * x for wi, (x, _) in zip(w, pts)) / sw
    my = math.fsum(wi * y for wi, (_, y) in zip(w, pts)) / sw
    sxx = math.fsum(wi * (x - mx) ** 2 for wi, (x, _) in zip(w, pts))
    sxy = math.fsum(wi * (x - mx) * (y - my) for wi, (x, y) in zip(w, pts))
    b = sxy / sxx
    a = my - b * mx
    sse = math.fsum(wi * (y - a - b * x) ** 2 for wi, (x, y) in zip(w, pts))
    syy = math.fsum(wi * (y - my) ** 2 for wi, (_, y) in zip(w, pts))
    r2 = None if syy == 0 else 1 - sse / syy
    return LinearFit(a, b, r2, len(pts), len({x for x, _ in pts}), math.sqrt(sse / (len(pts) - 2)), mx, sxx, sw,
                     weighting)


@dataclass(frozen=True)
class Prediction:
    docs: int
    value: float
    low: float
    high: float
    level: float


def predict(fit: LinearFit, n: float, level: float = LEVEL) -> Prediction:
    """The fitted value at n with its prediction interval (a new build's value, not the line's mean)."""
    w0 = WEIGHTS[fit.weighting](n)
    se = fit.resid_sd * math.sqrt(1 / w0 + 1 / fit.sum_w + (n - fit.mean_x) ** 2 / fit.sxx)
    half = t_quantile(0.5 + level / 2, fit.points - 2) * se
    v = fit.value(n)
    return Prediction(int(n), v, v - half, v + half, level)


# ---------------------------------------------------------------- the quantities of a build

def _index_file(run: dict) -> float | None:
    return (((run.get("sizes") or {}).get("after") or {}).get("index") or {}).get("file")


def _peak_disk(run: dict) -> float | None:
    return ((run.get("sizes") or {}).get("peak_disk") or {}).get("peak")


def _bytes_written(run: dict) -> float | None:
    return (run.get("sizes") or {}).get("bytes_written")


# how a quantity's unit is shown: divide by this, call it that
SCALE = {"s": (1.0, "s"), "bytes": (1024 ** 2, "MiB")}

QUANTITIES: dict[str, tuple[str, Callable[[dict], float | None]]] = {
    "build_time": ("s", lambda r: r.get("wall_time_s")),
    "index_size": ("bytes", _index_file),
    "peak_disk": ("bytes", _peak_disk),
    "bytes_written": ("bytes", _bytes_written),
    "peak_memory": ("bytes", lambda r: peak_memory(r)[0]),
}


def points(runs: Iterable[dict], quantity: str) -> list[tuple[int, float]]:
    """(documents, value) of every successful build that recorded the quantity (runs carry their "size")."""
    get = QUANTITIES[quantity][1]
    out = []
    for r in runs:
        if r.get("status") == "ok" and r.get("size"):
            v = get(r)
            if isinstance(v, (int, float)) and v > 0:
                out.append((int(r["size"]), float(v)))
    return sorted(out)


# ---------------------------------------------------------------- warnings

def warnings(*, target_docs: int, measured: Sequence[int], fit: LinearFit | None = None, quantity: str = "",
             memory_bytes: int | None = None, db_bytes: dict[int, int] | None = None,
             target_db_bytes: int | None = None, other_load: float | None = None) -> list[str]:
    """Why the forecast may not hold: far extrapolation, the page-cache edge, a poor fit, a loaded machine."""
    out = []
    top = max(measured) if measured else 0
    if top and target_docs > FAR * top:
        out.append(f"target {target_docs:,} documents is {target_docs / top:.0f}× the largest measured "
                   f"({top:,}): an extrapolation beyond {FAR:.0f}×")
    if memory_bytes and db_bytes and target_db_bytes:
        largest = db_bytes.get(top)
        if largest and largest <= memory_bytes < target_db_bytes:
            out.append(f"page cache: the largest measured database ({_mib(largest)}) fits in memory "
                       f"({_mib(memory_bytes)}) but the target's ({_mib(target_db_bytes)}) does not; builds that "
                       "read from disk can be slower than the line says")
    if fit is not None and fit.r2 is not None and fit.r2 < POOR_R2:
        out.append(f"{quantity or 'fit'}: poor fit (r² {fit.r2:.2f} < {POOR_R2}): the sweep is not a straight line")
    if other_load is not None and other_load > LOADED:
        out.append(f"loaded machine: load average {other_load:.1f} per CPU during the sweep; times may not hold "
                   "on a quiet machine")
    return out


def _mib(n: float) -> str:
    return f"{n / 1024 ** 2:,.0f} MiB"


# ---------------------------------------------------------------- the forecast of one sweep

def forecast_sweep(runs: Sequence[dict], target_docs: int, *, weighting: str = "ordinary", level: float = LEVEL,
                   memory_bytes: int | None = None, db_bytes: dict[int, int] | None = None,
                   target_db_bytes: int | None = None, other_load: float | None = None) -> dict:
    """Per language: every quantity's fit and prediction at target_docs, with the warnings; JSON-ready.
    runs: the sweep's manifest runs, each with "size" and "language" (dragnet.bench.sizes.sweep_runs)."""
    langs: dict[str, list[dict]] = {}
    for r in runs:
        langs.setdefault(r.get("language") or "?", []).append(r)
    out = {}
    for lang, rs in langs.items():
        measured = sorted({int(r["size"]) for r in rs if r.get("status") == "ok" and r.get("size")})
        common = warnings(target_docs=target_docs, measured=measured, memory_bytes=memory_bytes, db_bytes=db_bytes,
                          target_db_bytes=target_db_bytes, other_load=other_load)
        qs = {}
        for q, (unit, _) in QUANTITIES.items():
            pts = points(rs, q)
            fit = fit_linear(pts, weighting)
            entry: dict = {"unit": unit, "points": [list(p) for p in pts], "fit": asdict(fit) if fit else None}
            if fit is not None:
                entry["prediction"] = asdict(predict(fit, target_docs, level))
                entry["warnings"] = warnings(target_docs=target_docs, measured=[], fit=fit, quantity=q)
            qs[q] = entry
        out[lang] = {"measured_sizes": measured, "quantities": qs, "warnings": common}
    return out


def forecast(sweeps: dict[str, Sequence[dict]], target_docs: int, **kw) -> dict:
    """One forecast per axis value: sweeps maps a label (e.g. "cpus=2", or "" for one sweep) to its runs."""
    return {label: forecast_sweep(runs, target_docs, **kw) for label, runs in sweeps.items()}


def error_against(pred: dict, actual: float) -> dict:
    """How a prediction (asdict(Prediction)) did against a real build's value: relative error, inside or not."""
    return {"actual": actual, "predicted": pred["value"], "error": (pred["value"] - actual) / actual,
            "inside": pred["low"] <= actual <= pred["high"]}


# ---------------------------------------------------------------- sizes for --sizes auto

def auto_sizes(*, first_docs: int, first_seconds: float, budget_s: float, max_docs: int, count: int = 4,
               ratio: float = 2.0) -> list[int]:
    """Geometric sizes (each ratio× the last, the first build's size first) whose builds, at the first build's
    per-document time, fit the budget; as many as fit (at least `count` when the budget allows), none above
    max_docs. Fewer than two means the budget is too small."""
    per_doc = first_seconds / first_docs
    sizes, spent, n = [], first_seconds, first_docs
    sizes.append(n)
    while True:
        nxt = int(round(n * ratio))
        if nxt > max_docs or spent + per_doc * nxt > budget_s:
            break
        sizes.append(nxt)
        spent += per_doc * nxt
        n = nxt
    if len(sizes) < count and len(sizes) >= 2:   # squeeze: a smaller ratio, still geometric, to get `count`
        span = sizes[-1] / sizes[0]
        r = span ** (1 / (count - 1))
        if r > 1.05:
            sizes = sorted({int(round(sizes[0] * r ** i)) for i in range(count)})
    return sizes
