"""The compaction-chase model of a q-shard build's CPU-seconds and build time (`forecast --chase`, issue 49).

A view build's per-document cost grows with the documents because CouchDB's compaction daemon (smoosh)
compacts a view while it is still being built, and compacts it again as it grows: it chases one shard at a
time, so a target of q shards is q − 1 shards built as if compaction did not exist and one that smoosh
chases through the whole build (docs/studies/forecast-growth.md). Per repeat r of two one-shard builds of the
target's documents per shard, D/q, one with smoosh's view channels held and one with them free:

    cpu_r  = (q − 1) × held_r + free_r              (beam's and the query servers' CPU-seconds, the kernel's)
    time_r = cpu_r / cores                           (over_sweep_cores)

cores: the share of the cores the sweep's largest size got at the target's q (its CPU-seconds over its wall
time). A one-shard build runs one indexer feeding one query-server process, so it cannot show the cores q
shards built side by side get: back-test p's chased build used 1.07 cores (couchjs three quarters of its
CPU), its target 1.59-1.68, the sweep at q=8 1.57. Where the sweep ran at another q or recorded no CPU, the
cores the chased (free) one-shard build used stand in.

The forecast is the repeats' mean. Its interval is the repeats' range widened by BACKTESTED on each side, the
build time's goal (the frozen back-tests: docs/studies/forecast-backtests.md, o to r), the build time's also
by the shares of the cores the sweep's other sizes got (over_sweep_cores); a design doc with
JavaScript reduces widens the CPU's upper side to JS_REDUCE_LOW, since
compaction reruns them in couchjs as long as the chase lasts, which the one-shard builds see for less time
than the target (back-tests k −28.6 %, m −12.3 %).

Pure: the builds' figures come from their results files (forecast.run reads them).
"""

from __future__ import annotations

import math
import statistics
from typing import Sequence

from dragnet.couchdb.client import release
from dragnet.errors import UsageError
from dragnet.forecast import extend as ext
from dragnet.forecast import side_by_side as _sbs
from dragnet.forecast.model import share_factors

FOLDER = "chase"          # beside the sweep's folders: chase/<mode>-<repeat>/, one one-shard size each
RECORD = "chase.json"     # chase/chase.json: the builds in the order they ran, and what the model needs
MODES = ("free", "held")
# smoosh's view channels, each with a min_priority out of reach: no view is enqueued for compaction
HELD = ("smoosh.ratio_views/min_priority=1000000",
        "smoosh.slack_views/min_priority=1000000000000000",
        "smoosh.upgrade_views/min_priority=1000000000000000")
BACKTESTED = 0.15         # the interval's widening on each side (the build time's goal)
JS_REDUCE_LOW = 0.30      # the CPU the model missed at most on a JavaScript reduce (k: −28.6 %), rounded up
CORES_USED = "the target's cores used as the chased one-shard build used them"   # a limit over_sweep_cores replaces
# a held build that spends this share of its wall after its indexer task has left is waiting for CouchDB's view
# writer (couch_mrview_updater:write_results) to finish the rows queued for it: 0-5 % on 3.5.0, 6-55 % on 3.5.2
WRITER_TAIL = 0.10
# the chase's beam part on the back-tests on 3.5.2, whose builds showed that tail (q, t, v, w; frozen: x +7.3 %,
# y +23.0 %, z -22.3 %, aa +26.5 %, ab -3.4 %, ac -11.9 %): its error range; the five frozen since (ad, ae, ag,
# al, an: +3.4 to +18.0 %) fell inside it
WRITER_TAIL_ERRORS = (-0.2228, 0.2652)
# from 3.5.2 the loader collects its garbage every gc_interval_docs documents, not after each, and the writer's
# queue holds 10 MiB, not 100 KB: the mapper runs ahead and the writer is the slower stage. How far it falls
# behind with q shards sharing the cores, one shard alone need not show: back-test t's held builds kept up (no
# beam CPU after their indexer task, 2-10 % of their wall at 1 s polls) while its target's writers did not (13 %
# of beam's CPU after), and its chase's beam part erred -20.7 %
WRITER_AHEAD = (3, 5, 2)
# before 3.5.2, one shard alone cost beam more or less a document than the target's q shards sharing the cores, by
# this much on the eighteen back-tests there (p, o, s, u, r, af, ah, ai, aj, ak, am, ao, ap, aq, ar, as, at, au:
# chase_parts; au's +66 % where the query servers did most of the work), busy wait or not (chase_spin): the interval
# holds it, and the build time is open where it would move it past the goal
ALONE_ERRORS = (-0.149, 0.663)
# a free build smoosh chased through at least this share of its polls stands for the target's chased shard: in 51
# of the 52 target builds of back-tests aa-aq and r-z one shard was under view compaction through 60-97 % of the
# polls (aa's first, 21 %); a free build it reached for fewer (aq's second: 1 of 66) is another build's price
CHASED = 0.5


def shard_docs(target_docs: int, q: int) -> int:
    """The documents of one of the target's shards (CouchDB spreads them evenly by id hash)."""
    return math.ceil(target_docs / q)


def check(target_docs: int, q: int | None, data_docs: int) -> list[str]:
    """Before any build: a one-line UsageError when the model cannot apply; warnings (JSON-ready) otherwise."""
    if not q:
        raise UsageError("--chase: the target's shards are not known; give --target-q (or --q)")
    if q < 2:
        raise UsageError(f"--chase: the target has {q} shard; a one-shard target is its own one-shard build "
                         "(forecast it with --sizes up to it, or build it)")
    n = shard_docs(target_docs, q)
    if n > data_docs:
        raise UsageError(f"--chase: one shard of the target is {n:,} documents, more than the data holds "
                         f"({data_docs:,}); give --data with at least {n:,}")
    warnings = []
    if q < ext.FIFTH:
        warnings.append(f"--chase builds one shard of the target, {n:,} documents: with q={q} that is more than "
                        f"a fifth of the target")
    return warnings


def javascript_reduces(design_doc: dict | None) -> list[str]:
    """The views of a design document whose reduce is a function (not a built-in such as _count)."""
    views = (design_doc or {}).get("views") or {}
    return sorted(name for name, v in views.items()
                  if isinstance(v, dict) and isinstance(v.get("reduce"), str) and not v["reduce"].startswith("_"))


def _range(values: Sequence[float], low_share: float, high_share: float) -> dict:
    mean = statistics.fmean(values)
    return {"value": mean, "low": min(values) * (1 - low_share), "high": max(values) * (1 + high_share),
            "per_repeat": list(values)}


def spread(r: dict) -> float:
    """How far a build time's range (_range, before the writer's) lies from its value once the goal's widening
    (BACKTESTED) is taken off: what the chase's own measurements leave open, its repeats, the side-by-side
    factor's range and the shares of the cores the sweep's sizes got (back-test af: the factor 1.45-2.35 and
    the shares 1.55-1.93, 32 % under its value; it was called decided and missed by +27.9 %)."""
    v = r["value"]
    return max(v / (r["low"] / (1 - BACKTESTED)) - 1, r["high"] / (1 + BACKTESTED) / v - 1)


def over_sweep_cores(m: dict, shares: dict | None, sweep_q: int | None,
                     load: Sequence[float] | None = None) -> dict:
    """The model m (model()) with its build time over the share of the cores the sweep's largest size got,
    when the sweep ran at the target's q (shares: forecast.json's build_time cores_share per_size; load: the
    1-minute load average as the sweep began and ended); else m. The interval also spans the other shares
    the sweep's sizes got, as model.widen_by_share does for the sweep's own build time: the target gets a
    share of its own, which the sweep's moving shares bound no better than that."""
    per = {int(n): float(v) for n, v in (shares or {}).items() if v}
    if not per or sweep_q != m["q"]:
        return m
    at = max(per)
    top = per[at]
    time_ = _range([c / top for c in m["build_cpu"]["per_repeat"]], BACKTESTED, BACKTESTED)
    if m.get("side_by_side"):     # the factor's own range, as model() spans it
        time_["low"] = min(m["side_by_side"]["cpu_s_low"]) / top * (1 - BACKTESTED)
        time_["high"] = max(m["side_by_side"]["cpu_s_high"]) / top * (1 + BACKTESTED)
    low_f, high_f = share_factors(per)
    time_["low"], time_["high"] = time_["low"] * low_f, time_["high"] * high_f
    time_["spread"] = spread(time_)
    for key in ("writer_tail", "beam_alone"):     # the beam part's range, as model() holds it
        w = m.get(key) or {}
        if w.get("cpu_s_low"):
            _hold_beam(time_, w, [top] * len(w["cpu_s_low"]), low_f, high_f)
    at_load = (f" at a 1-minute load average of {min(load):.1f}–{max(load):.1f}"
               if load and all(isinstance(x, (int, float)) for x in load) else "")
    limits = [x for x in m["limits"] if not x.startswith(CORES_USED)]
    limits.insert(1, f"the target's cores as the sweep's {at:,} documents at q={sweep_q} got them ({top:.2f}"
                     f"{at_load}): a target on more cores, or a machine under another load, builds in another "
                     f"time (the CPU-seconds do not depend on it)")
    return {**m, "build_time": time_, "limits": limits,
            "cores": {"share": top, "at_size": at, "q": sweep_q, "low_factor": low_f, "high_factor": high_f}}


def _scaled(cpu: Sequence[float], qs: Sequence[float] | None, f: float) -> list[float]:
    """Each repeat's CPU-seconds with its query servers' part scaled by f (side by side over alone)."""
    return list(cpu) if qs is None else [c + (f - 1) * p for c, p in zip(cpu, qs)]


def side_by_side_part(pairs: Sequence[tuple[dict, dict]], q: int, record: dict | None) -> tuple[dict | None, str | None]:
    """(the factor and what it scales, or None; the limit line) for the chase's query-server part, from the
    record side_by_side.measure wrote (None: a chase from before it, no line; {"absent": why}: not measured)."""
    if record is None:
        return None, None
    parts = [(q - 1) * h.get("cpu_query_servers_s") + f.get("cpu_query_servers_s")
             if h.get("cpu_query_servers_s") is not None and f.get("cpu_query_servers_s") is not None else None
             for h, f in pairs]
    got = None if record.get("absent") else _sbs.factor(record)
    if got is None or None in parts:
        why = record.get("absent") or ("a build recorded no query-server CPU" if None in parts
                                       else "no repeat measured both")
        return None, (f"the query servers' CPU as one process alone spends it, not {q} side by side ({why}): on 2 "
                      f"cores 16 couchjs spent 1.4–1.8× as much a document as one alone, so the CPU and the build "
                      f"time may be low")
    if record.get("container"):
        where = f" in the CouchDB's container ({record['container']})"
    else:      # "where": an earlier chase's, measured on this machine for a CouchDB in a container
        where = " on this machine" + (f" ({record['where']})" if record.get("where") else "")
    paced = record.get("paced")
    fed = (f", fed a document every {1000 * paced['side_s']:.1f} ms (as the target's shards will) against one alone "
           f"every {1000 * paced['alone_s']:.1f} ms (as the chase's builds did)" if paced else ", against one alone")
    line = (f"the query servers' CPU as {q} processes side by side spend it: the chase's one-shard builds' × "
            f"{got['value']:.2f} ({got['low']:.2f}–{got['high']:.2f}), measured with {record['server']}{where}, "
            f"{record['docs_each']:,} documents each{fed}")
    return {**got, "query_servers_cpu_s": parts, "server": record["server"], "docs_each": record["docs_each"]}, line


def last_indexer_s(result: dict) -> float | None:
    """When a build's last poll that listed an indexer task came, in seconds from its trigger; None without
    polls or without one that listed an indexer task."""
    polls = result.get("polls")
    t0 = (result.get("trigger") or {}).get("t_trigger")
    if not polls or t0 is None:
        return None
    seen = [p["t"] - t0 for p in polls if any(t.get("type") == "indexer" for t in p.get("tasks") or ())]
    return max(seen) if seen else None


def writer_tail(result: dict) -> float | None:
    """The wall seconds of a build after its last indexer task left `_active_tasks`, counted from the first
    whole second after the last poll that listed one (polls are a second apart), or None without polls. On
    CouchDB 3.5.2 the updater's task leaves while its writer still sorts and writes the rows the mapper queued
    (benchmarks/forecast_growth/writer_probe); the view answers when the writer is done."""
    last = last_indexer_s(result)
    wall = (result.get("summary") or {}).get("wall_time_s")
    return None if last is None or wall is None else max(0.0, wall - (last + 1))


def _beam(pairs: Sequence[tuple[dict, dict]], q: int, lone: Sequence[float]) -> list[float]:
    """Each repeat's beam part of the whole alone (lone): less its query servers' part, where the builds
    recorded one (else all of it is taken for beam's)."""
    return [c - (q - 1) * (h.get("cpu_query_servers_s") or 0.0) - (f.get("cpu_query_servers_s") or 0.0)
            for c, (h, f) in zip(lone, pairs)]


def beam_range(beam: Sequence[float], cpu_low: Sequence[float], cpu_high: Sequence[float],
               errors: Sequence[float]) -> dict:
    """Each repeat's CPU-seconds were the chase's beam part (beam: _beam's) off by as much as errors (the
    writer's on 3.5.2, one shard alone's before): its beam over (1 + the highest error) and over (1 + the
    lowest), plus its query servers' part at the side-by-side factor's low and high (cpu_low, cpu_high: the
    whole at each). {"cpu_s_low": [...], "cpu_s_high": [...]}."""
    low, high = errors
    return {"cpu_s_low": [b / (1 + high) + c - b for b, c in zip(beam, cpu_low)],
            "cpu_s_high": [b / (1 + low) + c - b for b, c in zip(beam, cpu_high)]}


def alone_spread(share: float, errors: Sequence[float] = ALONE_ERRORS) -> float:
    """How far the build time moves, as a share of its value, where beam's part (share of the CPU) was off by
    as much as errors: its beam over (1 + the highest error) takes the whole down, over (1 + the lowest) up."""
    low, high = errors
    down = share * (1 - 1 / (1 + high))
    return max(1 / (1 - down) - 1, share * (1 / (1 + low) - 1))


def _hold_beam(r: dict, held: dict, cores: Sequence[float], low_f: float = 1.0, high_f: float = 1.0) -> None:
    """Widen a range (_range) to hold each repeat's beam range (beam_range) over its cores, its ends times low_f
    and high_f (the shares of the cores the sweep's sizes got: over_sweep_cores)."""
    r["low"] = min(r["low"], min(c / k for c, k in zip(held["cpu_s_low"], cores)) * low_f)
    r["high"] = max(r["high"], max(c / k for c, k in zip(held["cpu_s_high"], cores)) * high_f)


def writer_ahead(couchdb: dict | None) -> str | None:
    """The CouchDB version a chase ran on where its view writer is the slower stage (WRITER_AHEAD), else None."""
    version = (couchdb or {}).get("version")
    v = release(version)
    return version if v is not None and v >= WRITER_AHEAD else None


def waited(writer: dict) -> bool:
    """Whether a chase's held builds themselves spent WRITER_TAIL of their wall waiting for the view writer (the
    writer record's "share" against its "threshold"); a chase writer-bound otherwise is so by its version."""
    share = writer.get("share")
    return bool(share) and share[0] >= writer["threshold"]


def _writer_line(writer: dict) -> str:
    low, high = writer["beam_errors"]
    share = writer.get("share")
    spent = (f"the held builds spent {share[0]:.0%}–{share[1]:.0%} of their wall time after their indexer task "
             f"had left" if share else "the held builds recorded no indexer tasks")
    if waited(writer):
        head = f"{spent}, waiting for CouchDB's view writer to finish the rows queued for it"
    else:
        head = (f"on CouchDB {writer['couchdb']} the view writer is the slower stage, and how far it falls behind "
                f"with q shards sharing the cores one shard alone need not show ({spent}; back-test t's held "
                f"builds kept up and its target's writers did not)")
    return (f"{head}: one shard alone prices one writer, not q of them sharing the cores; on the fifteen back-tests "
            f"on 3.5.2 the chase's beam CPU erred {low:+.0%} to {high:+.0%}, which the interval holds")


def _alone_line(alone: dict, version: str | None) -> str:
    low, high = alone["beam_errors"]
    on = f"CouchDB {version}" if version else "a CouchDB whose version is not known"
    return (f"on {on} one shard alone prices beam's part {low:+.0%} to {high:+.0%} off the target's, as on the "
            f"eighteen back-tests before 3.5.2: beam is {alone['beam_share']:.0%} of this chase's CPU, so the build "
            f"time may be {alone['spread']:.0%} off, which the interval holds")


def chased(build: dict) -> bool | None:
    """Whether smoosh chased a free build through CHASED of its polls; None where it recorded no polls."""
    polls, seen = build.get("polls"), build.get("compaction_polls")
    return None if not polls or seen is None else seen / polls >= CHASED


def price_unchased(pairs: Sequence[tuple[dict, dict]]) -> tuple[list[tuple[dict, dict]], list[dict]]:
    """The (held, free) pairs with each free build smoosh did not chase replaced by one it did, in turn, where
    the repeats hold both kinds (where none was chased the free builds stay: nothing measured the chased shard);
    and a record of each replacement."""
    caught = [f for _, f in pairs if chased(f)]
    if not caught:
        return list(pairs), []
    out, notes, i = [], [], 0
    for held, free in pairs:
        if chased(free) is False:
            use = caught[i % len(caught)]
            i += 1
            notes.append({"repeat": free["repeat"], "compaction_polls": free["compaction_polls"],
                          "polls": free["polls"], "priced_with_repeat": use["repeat"]})
            free = use
        out.append((held, free))
    return out, notes


def _unchased_line(notes: Sequence[dict]) -> str:
    each = "; ".join(f"repeat {n['repeat']}'s ({n['compaction_polls']} of its {n['polls']} polls saw a view "
                     f"compaction) is priced with repeat {n['priced_with_repeat']}'s" for n in notes)
    return (f"smoosh did not chase every free build through {CHASED:.0%} of its polls, as it chases one of the "
            f"target's shards through most of its build: {each}")


def model(builds: Sequence[dict], q: int, *, js_reduces: Sequence[str] = (), side_by_side: dict | None = None,
          couchdb: dict | None = None) -> dict:
    """The forecast from one language's chase builds (each {"mode", "repeat", "cpu_s", "wall_s", …}): JSON-ready,
    with the builds themselves, so every figure is recomputable from them. side_by_side: the record of the query
    servers side by side (side_by_side.measure), which scales the builds' query-server part; couchdb: the node's
    record (Couch.version) the builds ran on, whose version says whether its writer is the slower stage."""
    by_rep: dict[int, dict[str, dict]] = {}
    for b in builds:
        by_rep.setdefault(int(b["repeat"]), {})[b["mode"]] = b
    pairs = [(r["held"], r["free"]) for _, r in sorted(by_rep.items()) if set(MODES) <= set(r)]
    if not pairs:
        raise ValueError("no repeat with both a held and a free build")
    for held, free in pairs:
        for b in (held, free):
            if not b.get("cpu_s") or not b.get("wall_s"):
                raise ValueError(f"the {b['mode']} build of repeat {b['repeat']} recorded no CPU or wall time")
    measured = [b for pair in pairs for b in pair]
    pairs, unchased = price_unchased(pairs)
    lone = [(q - 1) * h["cpu_s"] + f["cpu_s"] for h, f in pairs]
    sbs, sbs_line = side_by_side_part(pairs, q, side_by_side)
    qs = sbs["query_servers_cpu_s"] if sbs else None
    cpu = _scaled(lone, qs, sbs["value"] if sbs else 1.0)
    cpu_low = _scaled(lone, qs, sbs["low"] if sbs else 1.0)
    cpu_high = _scaled(lone, qs, sbs["high"] if sbs else 1.0)
    cores = [f["cpu_s"] / f["wall_s"] for _, f in pairs]
    time_ = [c / k for c, k in zip(cpu, cores)]
    limits = ["one shard chased at a time, as smoosh on CouchDB 3.5 does with its default channels; back-tested "
              "on CouchDB 3.5.0 at q=8 and 16 eighteen times and 3.5.2 in a container fifteen times, the chase's "
              f"beam part ((q − 1) × held + free) erred {ALONE_ERRORS[0]:+.0%} to {ALONE_ERRORS[1]:+.0%} on 3.5.0 and "
              f"{WRITER_TAIL_ERRORS[0]:+.0%} to {WRITER_TAIL_ERRORS[1]:+.0%} on 3.5.2: one shard alone can cost beam "
              "more a document than q shards sharing the cores (docs/studies/forecast-backtests.md)",
              f"{CORES_USED}: a target on more cores, or a machine under another load, builds in another time"]
    if sbs_line:
        limits.append(sbs_line)
    if unchased:
        limits.append(_unchased_line(unchased))
    tails = [h["writer_tail_s"] / h["wall_s"] for h, _ in pairs if h.get("writer_tail_s") is not None]
    ahead = writer_ahead(couchdb)
    writer = {"share": [min(tails), max(tails)] if tails else None, "threshold": WRITER_TAIL,
              "beam_errors": list(WRITER_TAIL_ERRORS), **({"couchdb": ahead} if ahead else {})}
    alone = None
    beam = _beam(pairs, q, lone)
    if waited(writer) or ahead:
        writer.update(beam_range(beam, cpu_low, cpu_high, WRITER_TAIL_ERRORS))
        limits.append(_writer_line(writer))
    else:
        writer = None
        share = statistics.fmean(beam) / statistics.fmean(cpu)
        alone = {"beam_errors": list(ALONE_ERRORS), "beam_share": share, "spread": alone_spread(share),
                 **beam_range(beam, cpu_low, cpu_high, ALONE_ERRORS)}
        limits.append(_alone_line(alone, (couchdb or {}).get("version")))
    frees = [f for _, f in pairs]
    if all(f.get("compaction_polls") == 0 for f in frees):
        limits.append(f"the free builds saw no view compaction ({max(f['wall_s'] for f in frees):.0f} s each at "
                      f"most: smoosh had not begun), so the CPU the target's chased shard spends on compaction is "
                      f"not in the forecast")
    if len(pairs) == 1:
        limits.append("one held and one free build: the same one-shard build used up to 26 % more or fewer "
                      "CPU-seconds minutes apart on a shared machine, which one pair cannot show (--repeat 2 "
                      "builds two pairs)")
    if js_reduces:
        limits.append(f"JavaScript reduces ({', '.join(js_reduces)}): compaction reruns them for as long as the "
                      f"chase lasts, longer in the target; the CPU's upper bound is widened to "
                      f"{JS_REDUCE_LOW / (1 - JS_REDUCE_LOW):.0%} above (the model missed by up to "
                      f"{JS_REDUCE_LOW:.0%} low)")
    build_cpu = _range(cpu, BACKTESTED, JS_REDUCE_LOW / (1 - JS_REDUCE_LOW) if js_reduces else BACKTESTED)
    build_time = _range(time_, BACKTESTED, BACKTESTED)
    if sbs:      # the factor's own range on top of the goal's
        build_cpu["low"] *= min(cpu_low) / min(cpu)
        build_cpu["high"] *= max(cpu_high) / max(cpu)
        build_time["low"] = min(c / k for c, k in zip(cpu_low, cores)) * (1 - BACKTESTED)
        build_time["high"] = max(c / k for c, k in zip(cpu_high, cores)) * (1 + BACKTESTED)
    build_time["spread"] = spread(build_time)
    for held in (writer, alone):
        if held:
            _hold_beam(build_cpu, held, [1.0] * len(cores))
            _hold_beam(build_time, held, cores)
    return {"q": q, "shard_docs": pairs[0][0].get("docs"), "repeats": len(pairs),
            "build_cpu": build_cpu, "build_time": build_time,
            "cores_used": cores, "javascript_reduces": list(js_reduces), "limits": limits,
            **({"writer_tail": writer} if writer else {}), **({"beam_alone": alone} if alone else {}),
            **({"side_by_side": {**sbs, "cpu_s_low": cpu_low, "cpu_s_high": cpu_high}} if sbs else {}),
            **({"unchased": unchased} if unchased else {}),
            "builds": [dict(b) for b in measured]}
