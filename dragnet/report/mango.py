"""`bench --mango`'s lines: Mango against each engine, per index (dragnet.bench.mango.versus's records)."""

from __future__ import annotations

from typing import Sequence

from dragnet.bench.mango import Versus
from dragnet.measure import decide


def versus_lines(vs: Sequence[dict]) -> list[str]:
    lines = []
    for index in dict.fromkeys(v["index"] for v in vs):
        mine = [Versus(**{k: v[k] for k in Versus.__dataclass_fields__ if k in v}) for v in vs
                if v["index"] == index]
        lines.append(f"{index}: " + "; ".join(versus_text(v) for v in mine))
    return lines


def versus_text(v: Versus) -> str:
    """One Mango-against-an-engine verdict in words."""
    if v.state is None:    # recorded by an older dragnet, on another rule: its figures only
        return f"Mango ×{v.ratio:.2f} {v.engine} ({v.n_mango} vs {v.n_engine} runs)"
    shown = f"[{v.ci_low:.2f} … {v.ci_high:.2f}]" if v.ci_low is not None else f"n={v.n}: no interval"
    return (f"Mango ×{v.ratio:.2f} {v.engine} {shown} ({decide.LEVEL:.0%} "
            f"{'paired by round' if v.paired else 'unpaired'}, {v.n_mango} vs {v.n_engine} runs: {v.state})")
