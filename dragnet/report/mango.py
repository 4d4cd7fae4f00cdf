"""`bench --mango`'s lines: Mango against each engine, per index (dragnet.bench.mango.versus's records)."""

from __future__ import annotations

from typing import Sequence

from dragnet.bench.mango import Versus


def versus_lines(vs: Sequence[dict]) -> list[str]:
    lines = []
    for index in dict.fromkeys(v["index"] for v in vs):
        mine = [Versus(**{k: (tuple(v[k]) if k == "paired" and v.get(k) else v.get(k))
                          for k in Versus.__dataclass_fields__}) for v in vs if v["index"] == index]
        lines.append(f"{index}: " + "; ".join(versus_text(v) for v in mine))
    return lines


def versus_text(v: Versus) -> str:
    """One Mango-against-an-engine verdict in words."""
    paired = (f"; per round ×{v.paired[0]:.2f} [{v.paired[1]:.2f} … {v.paired[2]:.2f}]"
              if v.paired else "")
    return (f"Mango ×{v.ratio:.2f} {v.engine} [{v.ci_low:.2f} … {v.ci_high:.2f}] "
            f"(Mann–Whitney p={v.p:.3f}, {v.n_mango} vs {v.n_engine} runs, "
            f"{'significant' if v.decided else 'NOT significant'}{paired})")
