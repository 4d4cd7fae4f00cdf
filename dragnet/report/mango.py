"""`bench --mango`'s lines: Mango against each engine, per index (dragnet.bench.mango.versus's records)."""

from __future__ import annotations

from typing import Sequence

from dragnet.bench.mango import Versus


def versus_lines(vs: Sequence[dict]) -> list[str]:
    lines = []
    for index in dict.fromkeys(v["index"] for v in vs):
        mine = [Versus(**{k: (tuple(v[k]) if k == "paired" and v.get(k) else v.get(k))
                          for k in Versus.__dataclass_fields__}) for v in vs if v["index"] == index]
        lines.append(f"{index}: " + "; ".join(v.format() for v in mine))
    return lines
