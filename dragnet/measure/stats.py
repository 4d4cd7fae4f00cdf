"""Summary statistics shared by every benchmark: mean ± σ, median, percentiles, min … max."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Iterable, Sequence


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0..100) with linear interpolation between closest ranks (numpy's default)."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= p <= 100:
        raise ValueError(f"percentile must be within 0..100, got {p}")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100.0
    lo, hi = math.floor(rank), math.ceil(rank)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (rank - lo)


def median(values: Sequence[float]) -> float:
    return percentile(values, 50)


def mean(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("mean of no values")
    return math.fsum(values) / len(values)


def stdev(values: Sequence[float]) -> float:
    """Sample standard deviation (n - 1); 0 for a single value, as hyperfine shows it."""
    n = len(values)
    if n < 2:
        return 0.0
    m = mean(values)
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / (n - 1))


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    stdev: float
    median: float
    min: float
    max: float

    def as_dict(self) -> dict:
        return asdict(self)

    def format(self, unit: str = "", digits: int = 1) -> str:
        """hyperfine style: '812.3 ± 12.1 c/s  [min 790.0 … max 830.2]'."""
        u = f" {unit}" if unit else ""
        return (f"{self.mean:.{digits}f} ± {self.stdev:.{digits}f}{u}  "
                f"[min {self.min:.{digits}f} … max {self.max:.{digits}f}]")


def summarize(values: Iterable[float]) -> Summary:
    vals = [float(v) for v in values]
    if not vals:
        raise ValueError("summary of no values")
    return Summary(n=len(vals), mean=mean(vals), stdev=stdev(vals), median=median(vals),
                   min=min(vals), max=max(vals))


# -- is a difference real? ---------------------------------------------------------------------

def _ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties given their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _exact_u_cdf(n1: int, n2: int) -> list[float]:
    """P(U <= u) for u = 0..n1*n2 under H0, no ties (counts of arrangements by recursion)."""
    # f[i][j][u]: number of sequences of i x's and j y's with U = u; built with a rolling table
    from functools import lru_cache

    @lru_cache(maxsize=None)
    def count(i: int, j: int, u: int) -> int:
        if u < 0:
            return 0
        if i == 0 or j == 0:
            return 1 if u == 0 else 0
        return count(i - 1, j, u - j) + count(i, j - 1, u)

    total = math.comb(n1 + n2, n1)
    cdf, acc = [], 0
    for u in range(n1 * n2 + 1):
        acc += count(n1, n2, u)
        cdf.append(acc / total)
    return cdf


@dataclass(frozen=True)
class MannWhitney:
    u: float          # U of the first sample
    p: float          # two-sided
    method: str       # "exact" or "normal"


def mann_whitney_u(x: Sequence[float], y: Sequence[float]) -> MannWhitney:
    """Two-sided Mann–Whitney U test; exact distribution for small samples without ties, else the
    normal approximation with tie and continuity correction (as scipy's method='auto')."""
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("Mann-Whitney U needs two non-empty samples")
    r = _ranks(list(x) + list(y))
    u1 = sum(r[:n1]) - n1 * (n1 + 1) / 2
    ties = len(set(list(x) + list(y))) < n1 + n2
    if not ties and n1 <= 8 and n2 <= 8:
        cdf = _exact_u_cdf(n1, n2)
        u_small = min(u1, n1 * n2 - u1)
        return MannWhitney(u1, min(1.0, 2 * cdf[int(u_small)]), "exact")
    n = n1 + n2
    counts: dict[float, int] = {}
    for v in list(x) + list(y):
        counts[v] = counts.get(v, 0) + 1
    tie_term = sum(t ** 3 - t for t in counts.values()) / (n * (n - 1))
    sigma = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term))
    if sigma == 0:
        return MannWhitney(u1, 1.0, "normal")
    z = (abs(u1 - n1 * n2 / 2) - 0.5) / sigma
    return MannWhitney(u1, min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2))), "normal")


def min_p_value(n1: int, n2: int) -> float:
    """The smallest two-sided p the exact test can give: below alpha, no pair of this size can be decided."""
    return min(1.0, 2 / math.comb(n1 + n2, n1))


def bootstrap_ratio_ci(x: Sequence[float], y: Sequence[float], *, level: float = 0.95,
                       resamples: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """median(x) / median(y) and its percentile-bootstrap interval (seeded, so reproducible)."""
    import random

    if not x or not y:
        raise ValueError("bootstrap of an empty sample")
    rng = random.Random(seed)
    point = median(x) / median(y)
    ratios = []
    for _ in range(resamples):
        bx = [x[rng.randrange(len(x))] for _ in x]
        by = [y[rng.randrange(len(y))] for _ in y]
        ratios.append(median(bx) / median(by))
    return (point, *_interval(ratios, level))


def paired_ratio_ci(x: Sequence[float], y: Sequence[float], *, level: float = 0.95,
                    resamples: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """median of x[i] / y[i] and its percentile-bootstrap interval, resampling the pairs (seeded).

    For runs made back to back in pairs: both members saw about the same load on a shared machine, so
    the per-pair ratio drifts far less than either sample does."""
    import random

    if len(x) != len(y) or not x:
        raise ValueError("paired ratio needs two samples of the same, non-zero length")
    ratios = [a / b for a, b in zip(x, y)]
    rng = random.Random(seed)
    n = len(ratios)
    boot = [median([ratios[rng.randrange(n)] for _ in range(n)]) for _ in range(resamples)]
    return (median(ratios), *_interval(boot, level))


def _interval(boot: Sequence[float], level: float) -> tuple[float, float]:
    """The percentile interval holding `level` of bootstrap replicates."""
    tail = (1 - level) / 2 * 100
    return percentile(boot, tail), percentile(boot, 100 - tail)


@dataclass(frozen=True)
class PairVerdict:
    """Adjacent pair in a ranking (faster first) and whether the runs support the order."""

    faster: str
    slower: str
    ratio: float      # median(faster) / median(slower)
    ci_low: float
    ci_high: float
    p: float
    method: str
    decided: bool     # p < alpha

    def as_dict(self) -> dict:
        return asdict(self)

    def format(self) -> str:
        verdict = "significant" if self.decided else "NOT significant"
        return (f"{self.faster} vs {self.slower}: ×{self.ratio:.2f} [{self.ci_low:.2f} … {self.ci_high:.2f}] "
                f"(Mann–Whitney p={self.p:.3f}, {verdict})")


ALPHA = 0.05


def compare_adjacent(ranked: Sequence[tuple[str, Sequence[float]]], alpha: float = ALPHA) -> list[PairVerdict]:
    """For a ranking (name, samples of a higher-is-better figure), fastest first, test each adjacent pair."""
    out = []
    for (a, xa), (b, xb) in zip(ranked, ranked[1:]):
        ratio, lo, hi = bootstrap_ratio_ci(list(xa), list(xb))
        mw = mann_whitney_u(list(xa), list(xb))
        out.append(PairVerdict(a, b, ratio, lo, hi, mw.p, mw.method, mw.p < alpha))
    return out


# -- hyperfine-style warnings --------------------------------------------------------------------

CV_LIMIT = 0.05          # coefficient of variation above which the spread is worth a warning
FIRST_RUN_FACTOR = 1.2   # first run this much slower than the median of the rest
OUTLIER_Z = 3.5          # modified z-score (Iglewicz and Hoaglin) beyond which a run is an outlier
OTHER_LOAD_LIMIT = 0.25  # fraction of the machine's CPU used by others during the run


def outliers(values: Sequence[float], z: float = OUTLIER_Z) -> list[int]:
    """Indexes of values whose modified z-score |0.6745 (x - median) / MAD| exceeds z."""
    if len(values) < 3:
        return []
    med = median(values)
    mad = median([abs(v - med) for v in values])
    if mad == 0:
        return []
    return [i for i, v in enumerate(values) if abs(0.6745 * (v - med) / mad) > z]


def cv(values: Sequence[float]) -> float:
    m = mean(values)
    return stdev(values) / m if m else 0.0


def noise_warnings(name: str, times: Sequence[float], *, cv_limit: float = CV_LIMIT,
                   first_factor: float = FIRST_RUN_FACTOR) -> list[str]:
    """Warnings about one command's measured durations (seconds or any lower-is-better unit)."""
    out = []
    idx = outliers(times)
    if idx:
        out.append(f"{name}: {len(idx)} statistical outlier(s) among {len(times)} runs (runs "
                   f"{', '.join(str(i + 1) for i in idx)}); other programs or caches may have interfered")
    if len(times) >= 2 and cv(times) > cv_limit:
        out.append(f"{name}: coefficient of variation {cv(times):.1%} > {cv_limit:.0%}; "
                   f"the runs disagree, use more runs or a quieter machine")
    if len(times) >= 3 and times[0] > first_factor * median(times[1:]):
        out.append(f"{name}: the first run was {times[0] / median(times[1:]):.2f}× slower than the rest; "
                   f"caches were cold, consider more --warmup")
    return out


def read_proc_stat(text: str) -> tuple[int, int]:
    """(busy, total) jiffies from the 'cpu' line of /proc/stat."""
    for line in text.splitlines():
        if line.startswith("cpu "):
            f = [int(v) for v in line.split()[1:]]
            idle = f[3] + (f[4] if len(f) > 4 else 0)
            total = sum(f[:8])
            return total - idle, total
    raise ValueError("no 'cpu' line in /proc/stat")


def other_load(before: tuple[int, int], after: tuple[int, int], own_cpu_s: float, clk_tck: int = 100) -> float:
    """Fraction of the machine's CPU time used by other processes between two /proc/stat samples."""
    busy = after[0] - before[0]
    total = after[1] - before[1]
    if total <= 0:
        return 0.0
    return max(0.0, (busy - own_cpu_s * clk_tck) / total)


def load_warning(fraction: float, limit: float = OTHER_LOAD_LIMIT) -> str | None:
    if fraction > limit:
        return (f"other processes used {fraction:.0%} of the machine's CPU during the benchmark; "
                f"the numbers may be skewed")
    return None


def ratio(value: float | None, baseline: float | None) -> float | None:
    """value / baseline, None when either is missing or the baseline is 0."""
    if value is None or baseline is None or baseline == 0:
        return None
    return value / baseline
