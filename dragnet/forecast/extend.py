"""Whether a forecast's sweep can stop, or should build the next doubling: pure, on a forecast's
JSON (dragnet.forecast.model.forecast_sweep per variant).

A quantity with a goal is decided when its chosen shape's held-out error and the spread of every shape's
forecast at the target are both within the goal: then no shape the sweep cannot rule out moves the forecast
beyond it. The build time also needs the share of the cores its builds got to have held within the goal
across the sweep: a wall time is CPU-seconds over that share, so where it moved the wall times' shape is the
machine's load as much as the build's (a share moving 0.54-1.33 would otherwise "decide"), and the builds
to have got the CPU their threads were ready for (a steady load holds the share steady and low: 0.37-0.43 of
a core would "decide" where the target gets 1.07). Else the sweep builds the next size (twice its
largest) when the budget allows it, and decides again. It stops when every goal is met ("decided"), when
only the machine's load holds a goal open, which no larger size settles ("load"), when the next size does
not fit the budget ("budget"), is more than the data holds or not below the target ("data"), or is more than
a fifth of the target ("fifth": a sweep that builds most of the target is no forecast a team with millions
of documents can afford). Each stop says what the next size would cost.
"""

from __future__ import annotations

from typing import Sequence

from dragnet.errors import UsageError

# the goals: build time within ±15 %; the final index size, the peak disk and the disk a build adds within ±10 %
GOALS = {"build_time": 0.15, "index_compacted": 0.10, "peak_disk": 0.10, "disk_growth": 0.10}
RATIO = 2
BY_CHASE = ("build_time",)   # what `forecast --chase` decides from one shard of the target (forecast.chase)
FIFTH = 5            # the sweep's largest size is at most the target's documents over this (issue 49)
PROBE_DOCS = 1000      # the first build of --sizes auto (views and Nouveau alike)
FIRST_SHARE = 0.5   # of --budget, what --sizes auto plans its first sizes with; the rest is for going on


def _spread(entry: dict, whole: float | None = None) -> tuple[float | None, float | None]:
    """(spread of the shapes' forecasts at the target, the chosen shape's held-out error), each as a share of
    whole (the forecast itself when not given); the disk a build adds through its index files' part (the rest
    is measured, not shaped), or, where it was carried by the final index (writer_queue.by_final), the spread
    of its ratios and no held-out error."""
    by = entry.get("by_final") or {}
    if by.get("value") and by.get("open") is None:   # carried by the final index: its ratios' spread
        return by["spread"] * by["value"] / abs(whole or by["value"]), None
    part = (entry.get("parts") or {}).get("index_files") or entry
    models, chosen = part.get("models") or {}, part.get("choice") or {}
    values = [m["prediction"]["value"] for m in models.values() if m.get("prediction")]
    main = (part.get("prediction") or {}).get("value")
    if not values or not main:
        return None, None
    held = ((chosen.get("held_out") or {}).get(chosen.get("chosen")) or {}).get("error")
    base = abs(whole or main)
    return (max(values) - min(values)) / base, None if held is None else held * abs(main) / base


def side_by_side_apart(entry: dict, whole: float | None) -> float | None:
    """How far apart the disk growth's two readings of q updaters side by side lie at the target, as a share of
    whole: the sweep at q measures their excess over one shard alone at its largest size's shards (N/q), and
    the target's shards are D/q; carried as an excess per document (the value) or as a ratio to one shard alone
    (the interval's high), the compaction files following the index files in both. Neither is measured at D/q:
    on six 3.5.0 targets at q=8 the ratio came within 7 % of the target's, where aj's excess per document missed
    by 18 % (docs/studies/forecast-backtests.md). None without the growth's parts, or where one shard alone at
    N/q came from the one-shard sweep's fit below its smallest size (N/q under it, as at q=16 for a fifth of
    100,000): a ratio through that overshot by 20-26 % (r, ai, ak), where the excess per document came within
    6.4 % (r, u, ak; ai's is open by its shapes)."""
    sbs = (entry.get("parts") or {}).get("side_by_side") or {}
    readings = sbs.get("readings")
    if not readings or not whole or not sbs.get("alone_measured"):
        return None
    return abs(readings["ratio"] - readings["per_doc"]) / abs(whole)


def share_moved(entry: dict) -> float | None:
    """How much the share of the cores the sweep's builds got moved from size to size: its largest over its
    smallest, less one (model.widen_by_share records it); None where the builds recorded no CPU."""
    shares = [float(v) for v in ((entry.get("cores_share") or {}).get("per_size") or {}).values()]
    if len(shares) < 2 or min(shares) <= 0:
        return None
    return max(shares) / min(shares) - 1


def slowed(entry: dict) -> float | None:
    """How much more CPU the sweep's builds' threads were ready for than they got, at the worst size (what
    waiting for other processes cost them; model.widen_by_contention records it)."""
    return (entry.get("contention") or {}).get("slowed")


def apart(f: dict, q: str) -> float | None:
    """How far the forecast by bytes (forecast.parts.by_bytes: a cost per document and per index byte, the bytes
    from the one-shard sweep) is from the quantity's own forecast, as a share of it; None without it. Two
    models that agree at the target can still both be wrong; two that do not cannot both be right (bt49-f:
    every shape through the sweep agreed within 13 % and said 67 s; the build took 114 s, by bytes 80 s)."""
    other = ((f.get("by_bytes") or {}).get(q) or {}).get("value")
    main = (((f.get("quantities") or {}).get(q) or {}).get("prediction") or {}).get("value")
    return abs(other / main - 1) if other and main else None


def open_goals(per_lang: dict, settled: Sequence[str] = ()) -> list[dict]:
    """The goal quantities a forecast (one variant: language -> forecast) cannot vouch for, each with its
    spread and held-out error; the peak disk and the disk a build adds each through the bytes the growth's
    shapes spread over (its index files' part where it has parts), as a share of the peak and of the growth
    (the issue's goals name both: a peak can hold while the growth does not, back-test t: peak +0.5 %, growth
    +18.8 %, its shapes 15 % apart); the build
    time also where the forecast by bytes is further from it than the goal. settled: goals decided another
    way (the build time by --chase: BY_CHASE), or by a chase already built for that language, whose build
    time is open where it waited for the writer (writer_bound), its beam part as one shard alone priced it
    moves it past the goal (alone_bound) or its own measurements spread beyond the goal (chase.spread)."""
    out = []
    for lang, f in sorted(per_lang.items()):
        qs = f.get("quantities") or {}
        for q, goal in GOALS.items():
            if q in BY_CHASE and f.get("chase"):
                tail = writer_bound(f["chase"], goal) or alone_bound(f["chase"], goal)
                measured = (f["chase"].get(q) or {}).get("spread")
                if tail:
                    out.append({"language": lang, "quantity": q, "goal": goal, "held_out": None, **tail})
                elif measured is not None and measured > goal:
                    out.append({"language": lang, "quantity": q, "goal": goal, "held_out": None, "spread": measured,
                                "chase_spread": measured})
                continue
            if q in settled:
                continue
            entry = qs.get("disk_growth") if q == "peak_disk" else qs.get(q)
            if not entry or not entry.get("prediction"):
                continue
            # the growth's shapes' spread in bytes (of its shaped part), against the whole peak or growth
            whole = (((qs.get("peak_disk") or {}).get("prediction") or {}).get("value") if q == "peak_disk"
                     else entry["prediction"]["value"] if q == "disk_growth" else None)
            spread, held = _spread(entry, whole)
            if spread is None:
                continue
            moved = share_moved(entry) if q == "build_time" else None
            waited = slowed(entry) if q == "build_time" else None
            differ = apart(f, q) if q == "build_time" else None
            copy = compaction_copy(qs) if q == "peak_disk" else None
            sides = side_by_side_apart(entry, whole) if q in ("peak_disk", "disk_growth") else None
            if spread > goal or (held or 0) > goal or (moved or 0) > goal or (waited or 0) > goal \
                    or (differ or 0) > goal or (copy or 0) > goal or (sides or 0) > goal:
                g = {"language": lang, "quantity": q, "goal": goal, "spread": spread, "held_out": held}
                if copy is not None:
                    g.update(db_compaction=copy)
                if sides is not None:
                    g.update(side_by_side_apart=sides)
                queue = (entry.get("by_final") or {}).get("queue") or {}
                if queue.get("outgrown"):
                    g.update(writer_queue={k: queue[k] for k in ("target_shard_docs", "batch_docs")})
                if differ is not None:
                    g.update(by_bytes_apart=differ)
                if moved is not None:
                    shares = entry["cores_share"]["per_size"].values()
                    g.update(cores_share_moved=moved, cores_share=[min(shares), max(shares)])
                if waited is not None:
                    g.update(slowed=waited)
                out.append(g)
    return out


def compaction_copy(qs: dict) -> float | None:
    """The copy of the target's database that smoosh would make if it compacted it during the rebuild
    (forecast.model.db_compaction_due), as a share of the peak; None where it is not due."""
    peak = qs.get("peak_disk") or {}
    copy, value = (peak.get("db_compaction") or {}).get("copy"), (peak.get("prediction") or {}).get("value")
    return copy / value if copy and value else None


def writer_bound(chase: dict, goal: float) -> dict | None:
    """A built chase that cannot vouch for the build time: its held builds waited for CouchDB's view writer
    (forecast.chase.writer_tail), a regime where the chase's beam part erred beyond the goal on the back-tests.
    {"spread": that error, "chase_writer_tail": the model's record}, or None."""
    tail = chase.get("writer_tail")
    if not tail:
        return None
    worst = max(abs(e) for e in tail["beam_errors"])
    return {"spread": worst, "chase_writer_tail": tail} if worst > goal else None


def alone_bound(chase: dict, goal: float) -> dict | None:
    """A built chase before 3.5.2 whose beam part, off by as much as one shard alone priced it on the back-tests
    (forecast.chase.ALONE_ERRORS), moves the build time past the goal: {"spread": how far,
    "chase_beam_alone": the model's record}, or None."""
    alone = chase.get("beam_alone")
    return {"spread": alone["spread"], "chase_beam_alone": alone} if alone and alone["spread"] > goal else None


def largest(target_docs: int) -> int:
    """The largest size a sweep builds for a target of target_docs documents: a fifth of it."""
    return target_docs // FIFTH


def check_auto(target_docs: int, first_docs: int) -> None:
    """--sizes auto, before any build: a one-line UsageError when a fifth of the target holds no two sizes
    from the first build's."""
    if largest(target_docs) < 2 * first_docs:
        raise UsageError(f"--sizes auto: a fifth of the target's {target_docs:,} documents, the most a sweep "
                         f"builds, is {largest(target_docs):,}, too few for two sizes from a first build of "
                         f"{first_docs:,}; give --sizes")


def next_cost(top_seconds: float, growth: float) -> float:
    """What the next doubling costs the budget: the largest size's builds (both sweeps, every language and
    repeat, their compactions) times how much the build time grows from that size to the next."""
    return top_seconds * max(1.0, growth)


def decide(forecasts: dict, counts: Sequence[int], *, spent_s: float, budget_s: float, max_docs: int,
           target_docs: int, top_seconds: float, growth: float, settled: Sequence[str] = (),
           reserved_s: float = 0.0) -> dict:
    """The sweep's next step: {"stop": None, "next": N, ...} to build N, or a stop with its reason; JSON-ready.
    forecasts: forecast.json "forecasts" (variant -> language -> forecast); growth: the chosen build-time
    shape's value at the next size over its value at the largest; settled: goals decided another way;
    reserved_s: what the budget keeps for what runs after the sweep (--chase's builds), which the next size
    may not spend."""
    undecided = [{**g, "variant": v} for v, per_lang in forecasts.items() for g in open_goals(per_lang, settled)]
    top = max(counts)
    nxt = int(top * RATIO)
    cost = next_cost(top_seconds, growth)
    step = {"sizes": sorted(counts), "undecided": undecided, "next": nxt, "next_cost_s": cost, "spent_s": spent_s,
            "budget_s": budget_s, **({"settled": list(settled)} if settled else {}),
            **({"reserved_s": reserved_s} if reserved_s else {})}
    if not undecided:
        chased = f" ({', '.join(settled)} by the one-shard builds of --chase)" if settled else ""
        return {**step, "stop": "decided", "reason": "every goal's shapes agree at the target and predicted their "
                                                     f"held-out sizes within it{chased}"}
    if all(load_only(g) for g in undecided):
        return {**step, "stop": "load", "reason": "only the machine's load holds the build time open (the builds "
                                                  "waited for a CPU or got a moving share of the cores): a larger "
                                                  "size would not settle it, a quieter machine would; read the "
                                                  "CPU-seconds (build_cpu)"}
    if nxt > max_docs or nxt >= target_docs:
        return {**step, "stop": "data", "reason": f"the next size {nxt:,} is more than the data holds "
                                                  f"({max_docs:,}) or not below the target"}
    if nxt > largest(target_docs):
        chase = ("; --chase decides the build time from one shard of the target"
                 if any(g["quantity"] == "build_time" and not by_chase(g) for g in undecided) else "")
        return {**step, "stop": "fifth", "reason": f"the next size {nxt:,} is more than a fifth of the target "
                                                   f"({target_docs:,} documents), the most a sweep builds{chase}"}
    if all(by_chase(g) for g in undecided):
        return {**step, "stop": "chase", "reason": "only the chase's own measurements hold the build time open: a "
                                                   "larger size would not settle it"}
    if spent_s + cost + reserved_s > budget_s:
        kept = f", about {reserved_s:,.0f} s of it kept for --chase" if reserved_s else ""
        return {**step, "stop": "budget", "reason": f"the next size {nxt:,} would cost about {cost:,.0f} s, "
                                                    f"{spent_s:,.0f} s of the {budget_s:,.0f} s budget spent{kept}"}
    return {**step, "stop": None, "reason": f"undecided ({', '.join(g['language'] + ' ' + g['quantity'] for g in undecided)}): "
                                            f"building {nxt:,} documents, about {cost:,.0f} s"}


def by_chase(g: dict) -> bool:
    """A goal held open by a built chase's own record (open_goals), which no size of the sweep settles."""
    return bool(g.get("chase_writer_tail") or g.get("chase_beam_alone") or g.get("chase_spread"))


def load_only(g: dict) -> bool:
    """A goal whose shapes agree and held out, open only because its builds' CPU followed the machine's load."""
    return (g["spread"] <= g["goal"] and (g.get("held_out") or 0) <= g["goal"]
            and (g.get("by_bytes_apart") or 0) <= g["goal"] and (g.get("side_by_side_apart") or 0) <= g["goal"]
            and max(g.get("cores_share_moved") or 0, g.get("slowed") or 0) > g["goal"])


def given_sizes(step: dict) -> dict:
    """A decision on a sweep whose sizes were given (a re-forecast, explicit --sizes): it did not go on, so an
    undecided one says what larger sweep would decide it."""
    if step.get("stop") is not None:
        return step
    sizes = ", ".join(f"{n:,}" for n in step["sizes"])
    return {**step, "stop": "sizes", "reason": f"the sweep ran the sizes it was given ({sizes}); undecided, it "
                                               f"would build {step['next']:,} documents next"}
