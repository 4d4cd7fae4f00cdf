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
