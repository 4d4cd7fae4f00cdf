"""When do repeated runs support an order? Separated, tied or unresolved, decided on ratios (pure).

Every figure here is a *cost*: lower is better (CPU-seconds or wall seconds per 1,000 documents). Two
items are compared by the ratio of their costs, slower ÷ faster, from the logs of the runs:

- *paired* (both items ran in the same rounds): the within-round log ratios ln(a_r / b_r), their mean and
  a Student t interval. Both members of a round saw about the same load, so the ratio drifts far less
  than either sample does.
- *unpaired* (no shared rounds): Welch's t interval on the difference of the mean logs.

A pair is *separated* when the interval (99% by default) lies entirely beyond the noise threshold
(1 ± 2%), *tied* when it lies inside 1 ± 5%, *unresolved* otherwise. Looks repeat (every round from
the fifth), each at the full 99% level; docs/statistics.md gives the error rate this has, checked by
simulation (tests/test_decide.py and benchmarks/aa_check).
"""

from __future__ import annotations

import functools
import math
import random
from dataclasses import asdict, dataclass, field
from typing import Callable, Mapping, Sequence

NOISE = 0.02          # a difference smaller than this is noise, never "separated"
TIE = 0.05            # an interval inside 1 ± TIE is "tied"
LEVEL = 0.99          # interval level at every look
MIN_ROUNDS = 5        # first look
MAX_RUNS = 15         # default bound on measured runs per item
MIN_INTERVAL_N = 3    # fewer pairs give no interval worth a verdict: at n=2 a 99% t interval spans about ×60
SEPARATED, TIED, UNRESOLVED = "separated", "tied", "unresolved"
TOO_NOISY, TOO_CLOSE, BUDGET, TOO_FEW = "too noisy", "too close", "budget", "too few runs"


# ---------------------------------------------------------------- Student t, without scipy

def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-14:
            break
    return h


def _betai(a: float, b: float, x: float) -> float:
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(lbt) * _betacf(a, b, x) / a
    return 1 - math.exp(lbt) * _betacf(b, a, 1 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with df degrees of freedom."""
    tail = 0.5 * _betai(df / 2, 0.5, df / (df + t * t))
    return 1 - tail if t > 0 else tail


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t (bisection on t_cdf; 1e-10 is plenty for an interval)."""
    if not 0 < p < 1 or df <= 0:
        raise ValueError(f"t_quantile({p}, {df})")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-10:
            break
    return (lo + hi) / 2


# ---------------------------------------------------------------- intervals

@dataclass(frozen=True)
class Interval:
    """Ratio a / b of two costs (geometric means), with its interval at `level`."""

    ratio: float
    low: float
    high: float
    n: int            # pairs (paired) or the smaller sample (unpaired)
    paired: bool
    level: float
    sd_log: float     # sd of the log ratios (paired) or the pooled-ish sd of logs (unpaired)

    def as_dict(self) -> dict:
        return asdict(self)


def _mean_sd(v: Sequence[float]) -> tuple[float, float]:
    m = math.fsum(v) / len(v)
    return m, (math.sqrt(math.fsum((x - m) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else math.inf)


def _logs(values: Sequence[float], what: str) -> list[float]:
    if any(not (v > 0) or math.isinf(v) for v in values):
        raise ValueError(f"{what}: every value must be positive and finite")
    return [math.log(v) for v in values]


def paired_interval(a: Sequence[float], b: Sequence[float], level: float = LEVEL) -> Interval:
    """a[i] / b[i] are the same round's two costs: mean of the log ratios with a t interval."""
    if len(a) != len(b) or not a:
        raise ValueError("paired interval needs two samples of the same, non-zero length")
    d = [x - y for x, y in zip(_logs(a, "a"), _logs(b, "b"))]
    m, sd = _mean_sd(d)
    n = len(d)
    if n < 2:
        return Interval(math.exp(m), 0.0, math.inf, n, True, level, sd)
    half = t_quantile(1 - (1 - level) / 2, n - 1) * sd / math.sqrt(n)
    return Interval(math.exp(m), math.exp(m - half), math.exp(m + half), n, True, level, sd)


def unpaired_interval(a: Sequence[float], b: Sequence[float], level: float = LEVEL) -> Interval:
    """Two independent samples: Welch's t interval on the difference of mean logs."""
    if not a or not b:
        raise ValueError("unpaired interval of an empty sample")
    (ma, sa), (mb, sb) = _mean_sd(_logs(a, "a")), _mean_sd(_logs(b, "b"))
    m, n = ma - mb, min(len(a), len(b))
    if len(a) < 2 or len(b) < 2:
        return Interval(math.exp(m), 0.0, math.inf, n, False, level, math.inf)
    va, vb = sa * sa / len(a), sb * sb / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return Interval(math.exp(m), math.exp(m), math.exp(m), n, False, level, 0.0)
    df = (va + vb) ** 2 / (va * va / (len(a) - 1) + vb * vb / (len(b) - 1))
    half = t_quantile(1 - (1 - level) / 2, df) * se
    return Interval(math.exp(m), math.exp(m - half), math.exp(m + half), n, False, level,
                    se * math.sqrt(n / 2))


def ratio_interval(a: Mapping[object, float], b: Mapping[object, float], level: float = LEVEL) -> Interval:
    """a / b from runs keyed by round: paired over the rounds both have (at least two), else unpaired."""
    shared = [r for r in a if r in b]
    if len(shared) >= 2:
        return paired_interval([a[r] for r in shared], [b[r] for r in shared], level)
    return unpaired_interval(list(a.values()), list(b.values()), level)


# ---------------------------------------------------------------- classification

def has_interval(iv: Interval) -> bool:
    """Whether the runs give an interval at all (shown as "n=2: no interval" where they do not)."""
    return iv.n >= MIN_INTERVAL_N and math.isfinite(iv.high) and iv.low > 0


def classify(iv: Interval, noise: float = NOISE, tie: float = TIE) -> str:
    if not has_interval(iv):
        return UNRESOLVED
    if iv.low > 1 + noise or iv.high < 1 - noise:
        return SEPARATED
    if iv.low >= 1 - tie and iv.high <= 1 + tie:
        return TIED
    return UNRESOLVED


def why_unresolved(iv: Interval, tie: float = TIE) -> str:
    """too noisy: the interval is wider than the tie band, so it could be neither; too close: it straddles
    the noise threshold; too few runs: no interval (fewer than MIN_INTERVAL_N pairs)."""
    if not has_interval(iv):
        return TOO_FEW
    if math.log(iv.high / iv.low) > 2 * math.log1p(tie):
        return TOO_NOISY
    return TOO_CLOSE


def rounds_needed(iv: Interval, noise: float = NOISE, tie: float = TIE, level: float = LEVEL,
                  cap: int = 200) -> int | None:
    """Pairs that would likely decide, if the ratio and spread stay as measured: the smallest n whose
    half-width fits between the point and the nearest boundary; None beyond `cap` or if the spread is
    unknown."""
    if iv.n < 2 or not math.isfinite(iv.sd_log) or iv.ratio <= 0:
        return None
    m = abs(math.log(iv.ratio))
    room = max(m - math.log1p(noise), math.log1p(tie) - m)
    if room <= 0:
        return None
    if iv.sd_log == 0:
        return max(2, iv.n)
    for n in range(max(2, iv.n), cap + 1):
        if t_quantile(1 - (1 - level) / 2, n - 1) * iv.sd_log / math.sqrt(n) < room:
            return n
    return None


@dataclass(frozen=True)
class Pair:
    """Adjacent pair of an order, lower cost first: `ratio` = cost(slower) / cost(faster)."""

    faster: str
    slower: str
    metric: str
    interval: Interval
    state: str
    why: str = ""                 # for unresolved: too noisy, too close, too few runs, budget
    needed: int | None = None     # pairs that would likely decide it

    @property
    def ratio(self) -> float:
        return self.interval.ratio

    @property
    def decided(self) -> bool:
        return self.state != UNRESOLVED

    def as_dict(self) -> dict:
        d = asdict(self)
        d["ratio"] = self.ratio
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Pair":
        return cls(d["faster"], d["slower"], d["metric"], Interval(**d["interval"]), d["state"], d.get("why", ""),
                   d.get("needed"))


def geomean(values: Sequence[float]) -> float:
    return math.exp(math.fsum(_logs(values, "geomean")) / len(values))


def judge_pair(faster: str, slower: str, a: Mapping[object, float], b: Mapping[object, float], *, metric: str,
               noise: float = NOISE, tie: float = TIE, level: float = LEVEL) -> Pair:
    """Costs of `slower` (a) against `faster` (b), keyed by round."""
    iv = ratio_interval(a, b, level)
    state = classify(iv, noise, tie)
    if state != UNRESOLVED:
        return Pair(faster, slower, metric, iv, state)
    return Pair(faster, slower, metric, iv, state, why_unresolved(iv, tie), rounds_needed(iv, noise, tie, level))


def order(costs: Mapping[str, Mapping[object, float]], *, metric: str, noise: float = NOISE, tie: float = TIE,
          level: float = LEVEL) -> tuple[list[str], list[Pair]]:
    """Items by geometric mean cost, lowest first, and each adjacent pair judged."""
    names = sorted((n for n in costs if costs[n]), key=lambda n: geomean(list(costs[n].values())))
    pairs = [judge_pair(f, s, costs[s], costs[f], metric=metric, noise=noise, tie=tie, level=level)
             for f, s in zip(names, names[1:])]
    return names, pairs


def order_text(names: Sequence[str], pairs: Sequence[Pair]) -> str:
    """'bun > couchpy ≈ python3 ? pypy3': > separated, ≈ tied, ? unresolved (faster on the left)."""
    if not names:
        return ""
    sign = {SEPARATED: " > ", TIED: " ≈ ", UNRESOLVED: " ? "}
    return names[0] + "".join(sign[p.state] + p.slower for p in pairs)


def supported(pairs: Sequence[Pair]) -> bool:
    return all(p.state != UNRESOLVED for p in pairs)


def disagreements(primary: Sequence[Pair], other: Sequence[Pair]) -> list[tuple[Pair, Pair]]:
    """Separated pairs of one metric that the other metric separates the other way round."""
    by = {frozenset((p.faster, p.slower)): p for p in other if p.state == SEPARATED}
    return [(p, by[k]) for p in primary if p.state == SEPARATED
            and (k := frozenset((p.faster, p.slower))) in by and by[k].faster != p.faster]


# ---------------------------------------------------------------- adaptive rounds

@dataclass
class Plan:
    """Adaptive interleaved rounds (pure): which items run in the next round, and when to stop."""

    items: list[str]
    min_rounds: int = MIN_ROUNDS
    max_runs: int = MAX_RUNS
    fixed: int | None = None       # --repeat N: exactly N rounds of every item, no looks
    seed: int = 0
    noise: float = NOISE
    tie: float = TIE
    level: float = LEVEL
    rounds: int = 0
    stopped: str | None = None     # "decided", "max-runs", "budget", "repeat", "failed"
    rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.fixed is None and self.max_runs < self.min_rounds:
            raise ValueError(f"--max-runs {self.max_runs} is below the {self.min_rounds} rounds the first look needs")
        self.rng = random.Random(self.seed)

    def next_round(self, costs: Mapping[str, Mapping[object, float]], runs: Mapping[str, int]) -> list[str]:
        """Items to run next, in a fresh random order; [] once stopped (self.stopped says why).

        costs: each item's cost by round so far (failed runs absent); runs: measured runs attempted per item.
        """
        live = [i for i in self.items if i in costs]
        if len(live) < 1:
            self.stopped = "failed"
            return []
        if self.fixed is not None:
            todo = [i for i in live if runs.get(i, 0) < self.fixed]
            if not todo:
                self.stopped = "repeat"
        elif self.rounds < self.min_rounds:
            todo = list(live)
        else:
            names = sorted((n for n in live if costs[n]), key=lambda n: geomean(list(costs[n].values())))
            open_ = [(f, s) for f, s in zip(names, names[1:])
                     if classify(ratio_interval(costs[s], costs[f], self.level), self.noise, self.tie) == UNRESOLVED]
            todo = [i for i in live if any(i in p for p in open_)]
            if not todo:
                self.stopped = "decided"
            else:
                todo = [i for i in todo if runs.get(i, 0) < self.max_runs]
                if not todo:
                    self.stopped = "max-runs"
        if self.stopped:
            return []
        self.rng.shuffle(todo)
        self.rounds += 1
        return todo


def drive(plan: Plan, state: Callable[[], tuple[Mapping[str, Mapping[object, float]], Mapping[str, int]]],
          measure: Callable[[str, int], None], over_budget: Callable[[], bool] = lambda: False) -> None:
    """Run a plan: state() -> (costs by round, runs attempted) so far; measure(item, round) runs one item;
    over_budget() is asked before every round after the first."""
    drive_rounds(plan, state, lambda todo, r: [measure(item, r) for item in todo], lambda todo: over_budget())


def drive_rounds(plan: Plan, state: Callable[[], tuple[Mapping[str, Mapping[object, float]], Mapping[str, int]]],
                 run_round: Callable[[list[str], int], object],
                 over_budget: Callable[[list[str]], bool] = lambda todo: False) -> None:
    """drive() for a runner that measures a whole round at once: run_round(items in order, round);
    over_budget(items of the next round) is asked before every round after the first."""
    while True:
        costs, runs = state()
        todo = plan.next_round(costs, runs)
        if not todo:
            return
        if plan.rounds > 1 and over_budget(todo):
            plan.rounds -= 1
            plan.stopped = "budget"
            return
        run_round(todo, plan.rounds)


def simulate(plan: Plan, draw: Callable[[str, int], float], *, budget_rounds: int | None = None) -> tuple[int, list[Pair]]:
    """Drive a plan with draw(item, round) -> cost (a simulation or a test): (rounds run, final pairs)."""
    costs: dict[str, dict[int, float]] = {i: {} for i in plan.items}
    runs: dict[str, int] = {i: 0 for i in plan.items}

    def measure(item: str, r: int) -> None:
        costs[item][r] = draw(item, r)
        runs[item] += 1

    drive(plan, lambda: (costs, runs), measure,
          lambda: budget_rounds is not None and plan.rounds >= budget_rounds)
    _, pairs = order(costs, metric="sim", noise=plan.noise, tie=plan.tie, level=plan.level)
    return plan.rounds, pairs
