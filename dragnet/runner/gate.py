"""`bench --ddoc A --ddoc B --gate 5%`: bench two design doc revisions until the regression gate decides.

A warm-up round of both revisions runs first, in `<folder>-warmup`, left out of every figure. The first
batch runs decide.MIN_ROUNDS interleaved rounds (or --repeat, if more); while the comparison along
the ddoc axis cannot tell whether B is slower than A by more than the threshold, another batch runs as
many rounds as the comparison estimates it needs (at least one), up to max_runs rounds in all. Each batch
is one bench folder under the gate's folder; builds are paired by their bench id and round.

What is judged (dragnet.index.revision says what B changes against A): the metric (the query server's
instructions for the views: maps, reduces, rereduces), and CouchDB's side on CPU: a revision that changes
anything outside the map functions must lie below the threshold on CPU too, and any revision fails when its
CPU lies above it. Wall time and the query servers' CPU are looked at as well: a cell whose builds put one of
them wholly above the threshold is not passed, it stays undecided and says which. A revision that changes only
`_id`/`_rev` builds the same index: it passes without a build. A reduce that throws on the sample (run in a
plain query server after the warm-up) is bad input: one line naming the view and the revision, exit 2.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from dragnet.bench.run import Bench, BenchConfig
from dragnet.couchdb.client import connect
from dragnet.errors import DragnetError, UsageError
from dragnet.index import revision
from dragnet.measure import decide
from dragnet.qsbench import instructions
from dragnet.results.load import load_results
from dragnet.report import compare as c


@dataclass
class GateOutcome:
    comparison: c.Comparison | None   # None: nothing to compare (no_change)
    rounds: int
    dirs: list[Path] = field(default_factory=list)
    folder: Path | None = None        # the gate's folder: its batches, comment.md and gate.json
    warmup: Path | None = None        # the warm-up round's folder (not among dirs, never judged)
    manifests: list[dict] = field(default_factory=list)
    changes: str = ""                 # what B changes against A, in words
    no_change: bool = False           # B differs from A only in _id/_rev: passed, nothing built

    @property
    def exit_code(self) -> int:
        return c.PASS if self.comparison is None else self.comparison.exit_code


def roles(changes: revision.Changes) -> dict[str, str]:
    """The figures besides the metric and what each does at the gate (compare.Comparison.roles)."""
    return {"cpu": c.FAILS if changes.maps_only else c.JUDGED, "qs": c.HOLDS, "wall": c.HOLDS,
            "instructions": c.HOLDS}


def check_reduces(config: BenchConfig, on_event: Callable[[str, dict], None] | None = None) -> None:
    """Each revision's reduces run on the database's sample in a plain query server of the language: a
    one-line UsageError naming the revision and the view if one throws (CouchDB stores null and builds on)."""
    try:
        spec = instructions.server_for(config.languages[0])
        docs = instructions.sample_docs(connect(config.url), config.db)
    except DragnetError as exc:   # no local server, or the CouchDB is gone: said, not fatal
        if on_event:
            on_event("warning", {"message": f"gate: the reduces were not tried on the sample ({exc})"})
        return
    for label, design in config.axes.designs().items():
        try:
            instructions.check_reduces(spec, design, docs)
        except instructions.ReduceThrows as exc:
            raise UsageError(f"--gate: revision {label}: {exc}") from None


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
    designs = config.axes.designs()
    old, new = list(designs)
    changed = revision.changes(designs[old].doc, designs[new].doc)
    now = _dt.datetime.now(_dt.timezone.utc)
    stamp, seed = now.strftime("%Y%m%dT%H%M%SZ"), int(now.timestamp() * 1000)
    base = Path(config.results_dir or Path("results") / f"gate-{stamp}")
    if changed.none:
        return GateOutcome(comparison=None, rounds=0, changes=changed.text(), no_change=True, folder=base)
    out = GateOutcome(comparison=None, rounds=0, changes=changed.text(), folder=base)
    batch = min(max(config.repeat, decide.MIN_ROUNDS), max_runs)
    # a warm-up round (both revisions once, beside the gate's folder, never judged): the data's import and
    # the query servers CouchDB spawns are paid here, not by whichever revision the first round runs first
    # (a server spawned during a build puts its start-up into that build's CPU: cpu.query_servers.started)
    out.warmup = Path(f"{base}-warmup")
    Bench(dataclasses.replace(config, repeat=1, results_dir=str(out.warmup), ceiling=False, shuffle_seed=seed - 1),
          on_event=on_event).run()
    check_reduces(config, on_event)
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
                                   metric=metric, along="ddoc", roles=roles(changed), changes=changed.text())
        if out.exit_code != c.UNDECIDED_EXIT or out.rounds >= max_runs:
            return out
        need = out.comparison.rounds_needed
        batch = min(max_runs - out.rounds, max(1, (need or out.rounds + 1) - out.rounds))
        if on_event:
            on_event("warning", {"message": f"gate undecided after {out.rounds} rounds: {batch} more"})
