"""`bench --repeat auto`'s rounds as text (bench.auto.AutoOutcome); the rounds themselves are decided in bench/."""

from __future__ import annotations

from dragnet.bench.auto import AutoOutcome
from dragnet.report.ranking import pair_text


def auto_lines(rounds: AutoOutcome) -> list[str]:
    """What the rounds support, as text (the CLI prints it under the report)."""
    why = {"decided": "every pair decided", "max-runs": "--max-runs reached", "budget": "--budget reached",
           "failed": "every language failed"}.get(rounds.stopped, rounds.stopped)
    out = [f"--repeat auto: {rounds.rounds} rounds after a warm-up round ({why}), on "
           f"{'CPU' if rounds.metric == 'cpu' else 'wall'} seconds per 1,000 documents",
           f"order: {rounds.order}  ({'supported' if rounds.supported else 'not supported'})"]
    out += [f"  {pair_text(p)}" for p in rounds.pairs]
    out += [f"  failed (left out of its pairs): {f}" for f in rounds.failed]
    return out
