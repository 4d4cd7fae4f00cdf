"""`bench --repeat auto`: adaptive interleaved rounds over builds, as qsbench runs them over server runs.

A warm-up round (every language once, in its own folder `<results>-warmup`, left out of every figure) starts
the query servers and fills the caches. Then rounds, each one `Bench` of one round over the languages still
open, in a fresh seeded random order (dragnet.measure.decide.Plan, the same controller qsbench uses): every
round is its own folder `round-NN` with its own bench id, so its builds are paired by round. From the fifth
round on each adjacent pair of languages (cheapest first, on CPU per 1,000 documents where every build
recorded it, else wall time) is judged with dragnet.measure.decide; only the languages of unresolved pairs
run again. The rounds stop when no pair is unresolved, when a language reached max_runs, or before a round
that would overrun the budget (estimated from the slowest build each language took so far).

A language's cost in a round is the geometric mean of its builds in that round (one per storage, scenario or
axis value the bench varies besides the language).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping

from dragnet.bench.run import BASELINE_LABEL, CEILING, Bench, BenchConfig
from dragnet.errors import UsageError
from dragnet.measure import decide
from dragnet.results.record import Build

BUDGET_S = 20 * 60     # the default --budget of bench --repeat auto: a bench is builds, not server runs
FALLBACK_ROUNDS = 3    # --repeat auto where it does not apply (one language, another axis varied): as before


def applies(config: BenchConfig, storages, scenarios, axes) -> bool:
    """auto ranks languages: two or more of them in a plain bench (one storage, no scenario, no other axis)."""
    return len(judged(config.languages)) >= 2 and len(storages or ()) <= 1 and not scenarios and not list(axes)


def parse_repeat(text: str | int | None) -> int | None:
    """--repeat: "auto" (None) or a positive number of rounds; anything else a one-line error."""
    if text is None or str(text).strip().lower() == "auto":
        return None
    try:
        n = int(str(text))
    except ValueError:
        raise UsageError(f"--repeat {text}: expected auto or a number of rounds") from None
    if n < 1:
        raise UsageError(f"--repeat {text}: at least 1 round")
    return n


def check(max_runs: int, budget_s: float) -> None:
    """Bad input, before anything runs."""
    if max_runs < decide.MIN_ROUNDS:
        raise UsageError(f"--max-runs {max_runs}: --repeat auto needs at least {decide.MIN_ROUNDS} rounds "
                         f"(its first look)")
    if not budget_s > 0:
        raise UsageError(f"--budget {budget_s:g}: must be above 0 seconds")


def judged(languages: Iterable[str]) -> list[str]:
    """The languages ranked: not the Erlang baseline nor the ceiling (references, built beside them)."""
    return [lang for lang in languages if lang not in (BASELINE_LABEL, CEILING)]


def round_costs(results: Iterable[dict], metric: str) -> dict[str, float]:
    """{language: cost of this round} from one round's results (pure): the geometric mean over the language's
    successful builds; a language with a failed build in the round has no cost for it."""
    per: dict[str, list[float | None]] = {}
    for r in results:
        b = Build.of(r)
        v = None
        if b.ok and b.docs:
            v = b.cpu_s_per_1000 if metric == "cpu" else (b.wall_s / b.docs * 1000 if b.wall_s else None)
        per.setdefault(b.language, []).append(v if v is not None and v > 0 else None)
    return {lang: math.exp(sum(math.log(v) for v in vs) / len(vs)) for lang, vs in per.items()
            if vs and None not in vs}


def round_metric(results: Iterable[dict]) -> str:
    """cpu when every successful build of the round recorded its CPU, else wall."""
    bs = [Build.of(r) for r in results]
    return "cpu" if all(b.cpu_s_per_1000 for b in bs if b.ok) else "wall"


def over_budget(elapsed_s: float, budget_s: float, todo: Iterable[str], build_s: Mapping[str, float]) -> bool:
    """Would the next round overrun the budget? Each language's slowest whole build so far estimates its next."""
    return elapsed_s + sum(build_s.get(lang, 0.0) for lang in todo) > budget_s


@dataclass
class AutoOutcome:
    folder: Path
    rounds: int = 0
    stopped: str = ""
    metric: str = "cpu"
    pairs: list = field(default_factory=list)       # decide.Pair, adjacent, cheapest first
    order: str = ""
    dirs: list[Path] = field(default_factory=list)  # the rounds' folders (warm-up not among them)
    warmup: Path | None = None
    failed: list[str] = field(default_factory=list)  # "language round N: error"
    runs: list[dict] = field(default_factory=list)     # every round's manifest entries (warm-up not among them)

    @property
    def supported(self) -> bool:
        return decide.supported(self.pairs)

    def as_dict(self) -> dict:
        return {"folder": str(self.folder), "rounds": self.rounds, "stopped": self.stopped, "metric": self.metric,
                "order": self.order, "supported": self.supported, "pairs": [p.as_dict() for p in self.pairs],
                "rounds_dirs": [str(d) for d in self.dirs], "warmup": str(self.warmup) if self.warmup else None,
                "failed": self.failed}


def run_auto(config: BenchConfig, *, max_runs: int = decide.MAX_RUNS, budget_s: float = BUDGET_S,
             seed: int | None = None, on_event: Callable[[str, dict], None] | None = None,
             bench: Callable[[BenchConfig], tuple[dict, Path]] | None = None) -> AutoOutcome:
    """Run `config`'s languages in adaptive rounds (module docstring); bench(config) -> (manifest, folder)
    runs one Bench (the default runs dragnet.bench.run.Bench)."""
    from dragnet.results.load import load_results

    check(max_runs, budget_s)
    items = judged(config.languages)
    if len(items) < 2:
        raise UsageError("--repeat auto ranks languages: give at least two (--languages), or a number of rounds")
    note = on_event or (lambda kind, data: None)
    now = _dt.datetime.now(_dt.timezone.utc)
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    seed = int(now.timestamp() * 1000) if seed is None else seed
    base = Path(config.results_dir or Path("results") / f"bench-{stamp}")
    out = AutoOutcome(folder=base)

    def one(cfg: BenchConfig, bench_id: str, keep: bool = True) -> list[dict]:
        if bench is not None:
            manifest, folder = bench(cfg)
        else:
            b = Bench(cfg, on_event=on_event)
            b.id = bench_id    # unique per round: the round's builds are paired by it
            manifest, folder = b.run(), b.dir
        if keep:
            out.runs.extend(manifest.get("runs") or [])
        return load_results([folder])

    def languages_for(todo: list[str]) -> list[str]:
        refs = [lang for lang in config.languages if lang not in items]     # baseline, ceiling: as configured
        return refs + todo

    def with_reference(todo: list[str]) -> dict:
        # rows are compared with the reference in every round it runs; where it does not, the first open one
        if config.design is None:
            return {}
        ref = config.reference or items[0]
        return {"reference": ref if ref in todo else todo[0]}

    t0 = time.monotonic()
    build_s: dict[str, float] = {}
    # the warm-up round: every language once, kept apart and never judged
    warm = Path(f"{base}-warmup")
    note("warning", {"message": f"--repeat auto: a warm-up round first ({warm}), not counted"})
    one(dataclasses.replace(config, repeat=1, results_dir=str(warm), shuffle_seed=seed, **with_reference(items)),
        f"bench-{stamp}-warmup", keep=False)
    out.warmup = warm
    if time.monotonic() - t0 > budget_s:
        raise UsageError(f"--budget {budget_s:g}: the warm-up round alone took {time.monotonic() - t0:.0f} s "
                         f"(its results: {warm})")
    costs: dict[str, dict[int, float]] = {i: {} for i in items}
    runs: dict[str, int] = {i: 0 for i in items}
    metric_seen: set[str] = set()
    plan = decide.Plan(items, max_runs=max_runs, seed=seed)

    def run_round(todo: list[str], r: int) -> None:
        folder = base / f"round-{r:02d}"
        started = time.monotonic()
        results = one(dataclasses.replace(config, languages=languages_for(todo), repeat=1, results_dir=str(folder),
                                          shuffle_seed=seed + r, **with_reference(todo)), f"bench-{stamp}-r{r:02d}")
        out.dirs.append(folder)
        mine = [x for x in results if Build.of(x).language in todo]
        metric_seen.add(round_metric(mine))
        got = round_costs(mine, "cpu" if metric_seen == {"cpu"} else "wall")
        took = time.monotonic() - started
        for lang in todo:
            runs[lang] += 1
            if lang in got:
                costs[lang][r] = got[lang]
            else:
                err = next((Build.of(x).error for x in mine if Build.of(x).language == lang and not Build.of(x).ok),
                           None)
                out.failed.append(f"{lang} round {r}: {err or 'build failed'}")
                note("warning", {"message": f"--repeat auto: {lang} failed in round {r}, left out of its pairs"})
            build_s[lang] = max(build_s.get(lang, 0.0), took / len(todo))

    def state():
        # an item whose every build failed has no costs: it drops out of the order (Plan leaves it out)
        return {i: c for i, c in costs.items() if c or runs[i] == 0}, runs

    decide.drive_rounds(plan, state, run_round, lambda todo: over_budget(time.monotonic() - t0, budget_s, todo,
                                                                         build_s))
    if metric_seen != {"cpu"}:
        # CPU missing from some round (a remote CouchDB): every round judged on wall time alike
        costs = {i: {} for i in items}
        for r, folder in enumerate(out.dirs, start=1):
            for lang, v in round_costs(load_results([folder]), "wall").items():
                if lang in costs:
                    costs[lang][r] = v
    out.metric = "cpu" if metric_seen == {"cpu"} else "wall"
    names, out.pairs = decide.order({i: c for i, c in costs.items() if c}, metric=out.metric)
    if plan.stopped in ("budget", "max-runs"):
        out.pairs = [dataclasses.replace(p, why=f"{p.why}; stopped by {plan.stopped}")
                     if p.state == decide.UNRESOLVED else p for p in out.pairs]
    out.order = decide.order_text(names, out.pairs)
    out.rounds, out.stopped = plan.rounds, plan.stopped or ""
    return out

