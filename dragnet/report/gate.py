"""`bench --ddoc A --ddoc B --gate 5%`: bench two design doc revisions until the regression gate decides.

A warm-up round of both revisions runs first, in `<folder>-warmup`, left out of every figure. The first
batch runs decide.MIN_ROUNDS interleaved rounds (or --repeat, if more); while the comparison along
the ddoc axis cannot tell whether B is slower than A by more than the threshold, another batch runs as
many rounds as the comparison estimates it needs (at least one), up to max_runs rounds in all. Each batch
is one bench folder under the gate's folder; builds are paired by their bench id and round.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from dragnet.bench.run import Bench, BenchConfig
from dragnet.errors import UsageError
from dragnet.measure import decide
from dragnet.qsbench import instructions
from dragnet.results.load import load_results
from dragnet.report import compare as c


@dataclass
class GateOutcome:
    comparison: c.Comparison
    rounds: int
    dirs: list[Path] = field(default_factory=list)
    warmup: Path | None = None        # the warm-up round's folder (not among dirs, never judged)
    manifests: list[dict] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return self.comparison.exit_code


def check(config: BenchConfig, threshold: float, max_runs: int, metric: str = "instructions") -> None:
    """Bad input, before anything runs."""
    revisions = config.axes.designs() if config.axes is not None else {}
    if len(revisions) != 2:
        raise UsageError(f"--gate needs exactly two --ddoc revisions (got {len(revisions) or 1})")
    if len(config.languages) != 1:
        raise UsageError("--gate: give one language (--languages), the gate judges one cell")
    if not threshold > 0:
        raise UsageError("--gate: the threshold must be above 0%")
    if max_runs < decide.MIN_ROUNDS:
        raise UsageError(f"--max-runs {max_runs}: the gate needs at least {decide.MIN_ROUNDS} rounds")
    if metric == "instructions":
        instructions.check(config.languages)


def run_gate(config: BenchConfig, threshold: float, *, metric: str = "instructions", max_runs: int = decide.MAX_RUNS,
             on_event: Callable[[str, dict], None] | None = None) -> GateOutcome:
    check(config, threshold, max_runs, metric)
    old, new = list(config.axes.designs())
    now = _dt.datetime.now(_dt.timezone.utc)
    stamp, seed = now.strftime("%Y%m%dT%H%M%SZ"), int(now.timestamp() * 1000)
    base = Path(config.results_dir or Path("results") / f"gate-{stamp}")
    out = GateOutcome(comparison=None, rounds=0)  # type: ignore[arg-type]
    batch = min(max(config.repeat, decide.MIN_ROUNDS), max_runs)
    # a warm-up round (both revisions once, beside the gate's folder, never judged): the data's import and
    # the query servers CouchDB spawns are paid here, not by whichever revision the first round runs first
    # (a server spawned during a build puts its start-up into that build's CPU: cpu.query_servers.started)
    out.warmup = Path(f"{base}-warmup")
    Bench(dataclasses.replace(config, repeat=1, results_dir=str(out.warmup), ceiling=False, shuffle_seed=seed - 1),
          on_event=on_event).run()
    while True:
        folder = base / f"batch-{len(out.dirs) + 1}"
        # a fresh random order each round: a build that leaves work behind for the next does not always
        # burden the same revision
        # seeded by the gate's start time: each gate its own orders, each bench.json records the one it ran
        # the gate judges one cell: no ceiling builds beside it (a second cell that `compare` would judge too)
        # with --metric instructions every judged build also counts its revision's map functions
        bench = Bench(dataclasses.replace(config, repeat=batch, results_dir=str(folder), ceiling=False,
                                          shuffle_seed=seed + len(out.dirs),
                                          instructions=metric == "instructions"), on_event=on_event)
        out.manifests.append(bench.run())
        out.dirs.append(bench.dir)
        out.rounds += batch
        # the gate's one cell: its language's builds of the two revisions (not the Erlang baseline)
        results = [r for r in load_results(out.dirs) if c.axes_of(r).get("ddoc") in (old, new)
                   and c.axes_of(r).get("language") == config.languages[0]]
        out.comparison = c.compare([r for r in results if c.axes_of(r)["ddoc"] == old],
                                   [r for r in results if c.axes_of(r)["ddoc"] == new],
                                   old_label=f"ddoc={old}", new_label=f"ddoc={new}", threshold=threshold,
                                   metric=metric, along="ddoc")
        if out.exit_code != c.UNDECIDED_EXIT or out.rounds >= max_runs:
            return out
        need = out.comparison.rounds_needed
        batch = min(max_runs - out.rounds, max(1, (need or out.rounds + 1) - out.rounds))
        if on_event:
            on_event("warning", {"message": f"gate undecided after {out.rounds} rounds: {batch} more"})
