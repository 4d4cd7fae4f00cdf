"""Rankings of builds in `report` (by language, by engine of a design doc, by an axis): items ordered by cost per
1,000 documents and each adjacent pair judged by dragnet.measure.decide, paired by bench round (pure).

The metric is CPU-seconds of CouchDB and its query servers per 1,000 documents where every build of the
ranking recorded it (`cpu_s_per_1000_docs`), else wall seconds per 1,000 documents; the pairs are judged on
the other metric too, and a pair the two metrics order the other way round is said so. Builds of one
`dragnet bench` round (same bench id and repeat) are paired; others are compared unpaired (Welch).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from dragnet.measure import decide
from dragnet.results.record import Build  # a ranking reads the one build record

TEST = (f"ratio of costs per 1,000 docs, {decide.LEVEL:.0%} t interval on the log ratios, paired by bench round "
        f"where both ran in it; separated beyond ±{decide.NOISE:.0%}, tied inside ±{decide.TIE:.0%}")
METRIC_TEXT = {"cpu": "CPU s of CouchDB and its query servers per 1,000 docs", "wall": "wall s per 1,000 docs"}



def pair_text(p: decide.Pair) -> str:
    """One verdict of decide in words: the ratio, its interval, how it was paired, the state and why."""
    iv = p.interval
    how = "paired by round" if iv.paired else "unpaired"
    extra = f", {p.why}" if p.state == decide.UNRESOLVED and p.why else ""
    if p.state == decide.UNRESOLVED and p.needed:
        extra += f", ~{p.needed} rounds would likely decide"
    if not decide.has_interval(iv):
        return f"{p.faster} vs {p.slower}: ×{iv.ratio:.3f} {p.metric}, {how}, {interval_text(iv)}: {p.state}{extra}"
    return (f"{p.faster} vs {p.slower}: ×{iv.ratio:.3f} [{iv.low:.3f} … {iv.high:.3f}] "
            f"{p.metric}, {iv.level:.0%} {how}, n={iv.n}: {p.state}{extra}")


def interval_text(iv: decide.Interval, digits: int = 3) -> str:
    """An interval in words: "[0.950 … 1.020]", or "n=2: no interval" where the runs cannot give one."""
    if not decide.has_interval(iv):
        return f"n={iv.n}: no interval"
    return f"[{iv.low:.{digits}f} … {iv.high:.{digits}f}]"

def costs(builds: Sequence[Build], metric: str, name: str) -> dict[Any, float]:
    """A member's costs keyed by round (a build without one, or a second one in a round, keyed apart)."""
    out: dict[Any, float] = {}
    for i, b in enumerate(builds):
        v = b.cpu_s_per_1000 if metric == "cpu" else (1000 / b.docs_per_s if b.docs_per_s else None)
        if v is None or not v > 0:
            continue
        key = b.round if b.round is not None and b.round not in out else ("unpaired", name, i)
        out[key] = v
    return out


@dataclass
class Ranking:
    where: str
    metric: str
    names: list[str]
    pairs: list[decide.Pair]
    other: list[decide.Pair] = field(default_factory=list)    # the same pairs on the other metric

    @property
    def order(self) -> str:
        return decide.order_text(self.names, self.pairs)

    @property
    def supported(self) -> bool:
        return decide.supported(self.pairs)

    def lines(self, indent: str = "  ") -> list[str]:
        head = f"[{self.where}] " if self.where else ""
        out = [f"{indent}{head}{self.order}  (on {METRIC_TEXT[self.metric]})"]
        out += [f"{indent}  {pair_text(p)}" for p in self.pairs]
        if self.pairs:
            if self.supported:
                out.append(f"{indent}  the whole order is supported")
            else:
                left = [f"{p.faster} vs {p.slower} ({p.why})" for p in self.pairs if not p.decided]
                out.append(f"{indent}  not supported: unresolved {', '.join(left)} (more --repeat rounds)")
        for p, q in decide.disagreements(self.pairs, self.other):
            out.append(f"{indent}  CPU and wall disagree: by {p.metric} {p.faster} is ahead of {p.slower}, by "
                       f"{q.metric} {q.faster} is (CPU ranks efficiency, wall ranks speed)")
        return out

    def as_dict(self) -> dict:
        return {"where": self.where, "metric": self.metric, "names": self.names, "order": self.order,
                "supported": self.supported, "pairs": [p.as_dict() for p in self.pairs],
                "other_pairs": [p.as_dict() for p in self.other]}

    @classmethod
    def from_dict(cls, d: dict) -> "Ranking":
        return cls(d["where"], d["metric"], list(d["names"]), [decide.Pair.from_dict(p) for p in d["pairs"]],
                   [decide.Pair.from_dict(p) for p in d.get("other_pairs") or ()])


def rank(where: str, members: Sequence[tuple[str, Sequence[Build]]], metric: str | None = None) -> Ranking:
    """Members (name, successful builds) ordered cheapest first; `metric` None: cpu where every build has it."""
    members = [(n, list(b)) for n, b in members if b]
    if metric is None:
        metric = "cpu" if all(x.cpu_s_per_1000 for _, b in members for x in b) else "wall"
    other_metric = "wall" if metric == "cpu" else "cpu"
    names, pairs = decide.order({n: costs(b, metric, n) for n, b in members}, metric=metric)
    by = {n: costs(b, other_metric, n) for n, b in members}
    other = []
    for p in pairs:   # the same pairs, each oriented cheapest first on the other metric
        if by[p.faster] and by[p.slower]:
            q = decide.judge_pair(p.faster, p.slower, by[p.slower], by[p.faster], metric=other_metric)
            other.append(q if q.ratio >= 1 else
                         decide.judge_pair(p.slower, p.faster, by[p.faster], by[p.slower], metric=other_metric))
    return Ranking(where, metric, names, pairs, other)
