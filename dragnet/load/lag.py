"""How far an index is behind its database, and whether it keeps up with a write rate (pure).

The lag is the changes written but not yet in the view: the database's update sequence (the number in front
of a clustered `update_seq`, the sum over its shards) minus the view's (`_design/x/_info`). A rate is kept up
with when the lag does not grow over the window: its least-squares trend stays under `GROWTH` of the rate, it
ends within `FLOOR_S` seconds of writing, or it came back that low in the second half of the window (ken
updates an index in batches, so its lag is saw-toothed: bounded when it keeps coming back; a window must hold
more than one of its cycles to see that).
"""

from __future__ import annotations

from typing import Sequence

GROWTH = 0.05      # a trend below 5% of the write rate is a bounded lag (batches make it saw-toothed)
FLOOR_S = 2.0      # a lag of under two seconds of writing at the end is bounded whatever its trend


def lag(db_seq: int | None, view_seq: int | None) -> int | None:
    if db_seq is None or view_seq is None:
        return None
    return max(0, db_seq - view_seq)


def slope(ts: Sequence[float], ys: Sequence[float]) -> float | None:
    """Least-squares slope of ys over ts (per second); None with fewer than two distinct times."""
    n = len(ts)
    if n < 2 or n != len(ys):
        return None
    mt, my = sum(ts) / n, sum(ys) / n
    var = sum((t - mt) ** 2 for t in ts)
    if var == 0:
        return None
    return sum((t - mt) * (y - my) for t, y in zip(ts, ys)) / var


def verdict(samples: Sequence[dict], rate: float, growth: float = GROWTH, floor_s: float = FLOOR_S) -> dict:
    """samples: {"t": seconds from the start, "lag": changes}. Whether the lag stayed bounded at `rate`."""
    pts = [(s["t"], s["lag"]) for s in samples if s.get("lag") is not None]
    if len(pts) < 3:
        return {"kept_up": None, "why": f"{len(pts)} lag samples: too few to judge"}
    trend = slope([t for t, _ in pts], [y for _, y in pts])
    end = pts[-1][1]
    low = max(1.0, rate * floor_s)
    mid = (pts[0][0] + pts[-1][0]) / 2
    late_min = min(y for t, y in pts if t >= mid)
    bounded_trend = trend is not None and trend <= growth * rate
    small_end = end <= low
    came_back = late_min <= low
    kept = bounded_trend or small_end or came_back
    return {"kept_up": kept, "growth_per_s": trend, "lag_start": pts[0][1], "lag_end": end,
            "lag_max": max(y for _, y in pts), "lag_min_second_half": late_min,
            "why": (f"lag trend {trend:+.1f}/s ≤ {growth:.0%} of {rate:g}/s" if bounded_trend else
                    f"lag {end:g} at the end ≤ {floor_s:g} s of writing" if small_end else
                    f"lag came back to {late_min:g} in the second half (at most {max(y for _, y in pts):g})"
                    if came_back else
                    f"lag grew {trend:+.1f}/s over the window, to {end:g} changes")}


def never_updated(steps: Sequence[dict]) -> bool:
    """Whether the view's sequence stood still through every step while the database's moved: without
    readers that is no indexer at all (ken skipping the view), not an indexer too slow."""
    seqs = [(s.get("db_seq"), s.get("view_seq")) for st in steps for s in st.get("samples") or []]
    seqs = [(d, v) for d, v in seqs if d is not None and v is not None]
    if len(seqs) < 2:
        return False
    per_step = [{s.get("view_seq") for s in st.get("samples") or [] if s.get("view_seq") is not None} for st in steps]
    return all(len(v) <= 1 for v in per_step) and max(d for d, _ in seqs) > min(d for d, _ in seqs)


def keeps_up_to(steps: Sequence[dict]) -> float | None:
    """The highest rate kept up with before the first one that was not (steps in the order tried)."""
    best = None
    for s in steps:
        if s.get("kept_up"):
            best = s["rate"]
        else:
            break
    return best


def parse_rates(text: str) -> list[float]:
    """'50,100,200/s' -> [50.0, 100.0, 200.0], ascending; each a positive rate (per second unless given)."""
    from dragnet.errors import UsageError
    from dragnet.load.spec import parse_rate

    out = []
    for part in (p.strip() for p in (text or "").split(",")):
        if not part:
            continue
        out.append(parse_rate(part if "/" in part else f"{part}/s", "--rates"))
    if not out:
        raise UsageError("--rates: give at least one write rate, e.g. 50,100,200")
    if out != sorted(set(out)):
        raise UsageError(f"--rates {text}: rates go up, each once (the step stops at the first not kept up with)")
    return out
