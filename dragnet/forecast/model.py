"""`dragnet forecast`: what a view build of N documents will cost, from a size sweep of smaller builds.

Each quantity (build time, index size and live data, peak disk and the disk a build adds, bytes written, peak
memory) is fitted against documents as a fixed plus a per-document cost, y = a + b·x(n), by least squares
(ordinary, or weighted), over every successful build of the sweep, with three shapes of x: n, n·ln n (the
per-document cost grows with the B-trees' depth) and n^k (faster); peak memory, which levels off, with ln n
and n. The forecast at the target is the
quantity's PRIMARY model there; its interval runs from the lowest to the highest 95 % prediction bound of the
three (Student t on the residuals, n − 2 degrees of freedom), so a noisy sweep, or one whose shape is
ambiguous, shows as a wide interval and a warning, not as a confident number. Warnings say when the forecast
is an extrapolation it cannot vouch for.

Pure: the points come from the sweep's manifests (dragnet.bench.sizes), nothing here talks to CouchDB.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Callable, Iterable, Sequence

from dragnet.axes.cpus import KIND as _CORES
from dragnet.bench.sizes import peak_memory
from dragnet.results import schema as _schema
from dragnet.forecast import writer_queue as wq
from dragnet.forecast.choice import choose
from dragnet.forecast.extend import GOALS
from dragnet.forecast.fit import (LEVEL, LINEAR, LOG, NLOGN, POWER, POWERS, WEIGHTS, LinearFit,  # noqa: F401
                                  Prediction, fit_linear, fit_models, fit_power, power_fits, predict, t_quantile,
                                  transform)

SCHEMA = _schema.schema(_schema.FORECAST)
CORES = _CORES.name   # the axis a run's core count is recorded under (axes/cpus)
SUMMARY = "forecast.json"
FAR = 10.0            # target beyond this many times the largest measured size: an extrapolation too far
POOR_R2 = 0.9         # below this the line does not describe the sweep
LOADED = 1.0          # load average per CPU above which the timings are suspect (runnable tasks queue)


def fit_value(fit: dict, n: float) -> float:
    """A recorded fit (asdict(LinearFit), as forecast.json holds it) at n documents."""
    return fit["fixed"] + fit["per_doc"] * transform(fit.get("model") or LINEAR, fit.get("k") or 1.0, n)


def entry_points(entry: dict) -> list[tuple[float, float]]:
    """A quantity's measured points in the target's terms: a one-shard build of n documents (shard_forecast)
    stands for the q-shard database of n·q documents, holding q times its size."""
    q = (entry.get("shards") or {}).get("q") or 1
    return [(n * q, y * q) for n, y in entry.get("points") or []]


def entry_value(entry: dict, n: float) -> float:
    """A quantity's fitted line at a database of n documents (q × one shard of n/q when fitted per shard; the
    sum of its parts for the disk a build adds, growth_forecast)."""
    parts = entry.get("parts")
    if parts:
        q = parts["q"]
        files = q * fit_value(parts["index_files"]["fit"], n / q) + parts["side_by_side"]["extra_per_doc"] * n
        return files + parts["compacted_at_once"] * files / q
    q = (entry.get("shards") or {}).get("q") or 1
    return q * fit_value(entry["fit"], n / q)


def curve(end: float, steps: int = 40, start: float = 1.0) -> list[float]:
    """Document counts from start to end to draw a fitted model through (a curve for n log n and powers)."""
    return [max(1.0, start + (end - start) * i / steps) for i in range(steps + 1)]


def entry_curve(entry: dict) -> list[float]:
    """Where to draw a quantity's line: to the target, or past it as far as (one-shard) builds reach; a log n
    line from the smallest build, since ln n falls without bound towards zero documents."""
    xs = [x for x, _ in entry_points(entry)]
    end = max([(entry.get("prediction") or {}).get("docs") or 0, *xs])
    log = (entry.get("fit") or {}).get("model") == LOG
    return curve(end, start=min(xs) if log and xs else 1.0)




# ---------------------------------------------------------------- the quantities of a build

def _index_file(run: dict) -> float | None:
    return (((run.get("sizes") or {}).get("after") or {}).get("index") or {}).get("file")


def _index_active(run: dict) -> float | None:
    """The index's live data right after the build (sizes.active). It depends on how the build's batches
    filled the B-trees' nodes, so q shards built side by side hold a few % more than q built alone; forecast
    only for sweeps that did not compact their builds (else index_compacted is the final size)."""
    return (((run.get("sizes") or {}).get("after") or {}).get("index") or {}).get("active")


def _index_compacted(run: dict) -> float | None:
    """The index's file once compacted after its build (dragnet.index.compact): the final index size. A
    compaction copies the B-trees in key order, so what it leaves depends on the rows, not on how the
    build's batches fell; None when the compaction failed or did not settle."""
    c = (run.get("sizes") or {}).get("compacted") or {}
    if c.get("error") or not c.get("settled"):
        return None
    return (c.get("sizes") or {}).get("file")


def _build_cpu(run: dict) -> float | None:
    """CPU-seconds the build's processes used (beam and the query servers: the kernel's accounting, or pidstat's
    mean share × time in older recordings), set on the run from its results file by dragnet.forecast.run."""
    return run.get("cpu_s")


def _peak_disk(run: dict) -> float | None:
    return ((run.get("sizes") or {}).get("peak_disk") or {}).get("peak")


def _disk_growth(run: dict) -> float | None:
    """Free disk the build needed beyond the database it started from: peak minus the files at its start,
    other indexes left out (disk_peak.Sampler). Recordings from before those were left out counted an
    earlier build's index files in the start when view cleanup had not removed them yet, so they are read
    as the peak minus the database file (which a view build does not change)."""
    sizes = run.get("sizes") or {}
    pk = sizes.get("peak_disk") or {}
    if pk.get("growth") is not None and "other_indexes" in pk:
        return pk["growth"]
    db_file = ((sizes.get("after") or {}).get("db") or {}).get("file")
    if pk.get("peak") and db_file:
        return pk["peak"] - db_file
    return pk.get("growth")


def _bytes_written(run: dict) -> float | None:
    return (run.get("sizes") or {}).get("bytes_written")


def _compaction(run: dict) -> float | None:
    """Of the files at the build's peak, the compaction's: CouchDB's compaction daemon (smoosh) compacts an
    index while it is being built, and its .compact file can grow as big as the index file itself (one-shard
    builds of 10,000 documents or more do this). Recordings from before the sampler split them
    read as the files' peak minus the largest sum CouchDB reported (database and index files, no .compact)."""
    pk = (run.get("sizes") or {}).get("peak_disk") or {}
    if pk.get("compaction") is not None:
        return pk["compaction"]
    if pk.get("files_peak") is not None and pk.get("reported_peak") is not None:
        return max(0.0, pk["files_peak"] - pk["reported_peak"])
    return None


def _index_growth(run: dict) -> float | None:
    """The disk a build added in the index's own files: its growth without the compaction's files."""
    grown, compact = _disk_growth(run), _compaction(run)
    return None if grown is None or compact is None else max(0.0, grown - compact)


# what a chart calls a quantity, where its key does not say it
LABELS = {"build_cpu": "CPU-seconds of the build", "index_compacted": "final index size (compacted)",
          "index_size": "index file after the build", "index_active": "index live data after the build"}
# how a quantity's unit is shown: divide by this, call it that
SCALE = {"s": (1.0, "s"), "bytes": (1024 ** 2, "MiB")}

# The model each quantity's forecast uses (the others widen its interval, see forecast_sweep). Build time and
# the index's live data follow n log n, because a B-tree insert costs log n (a line falls short by 9–18 % at
# 5× the sweep, docs/studies/forecast.md); the disk a build needs and what it writes grow faster, like a power. A
# compacted index is its rows written in key order into full nodes, the inner nodes a fixed share above
# them: linear (each doubling of a one-shard sweep doubled it, 1.98-2.01×, where n log n would be 2.14-2.16×).
PRIMARY = {"build_time": NLOGN, "build_cpu": NLOGN, "index_compacted": LINEAR, "index_size": POWER,
           "index_active": NLOGN, "peak_disk": POWER,
           "disk_growth": POWER, "bytes_written": NLOGN, "peak_memory": LOG, "index_growth": POWER}
# the shapes a quantity's interval spans: memory levels off (the line fell far above it at 200,000), the rest
# grow at least linearly
SHAPES = {"peak_memory": (LOG, LINEAR)}
GROWING = (LINEAR, NLOGN, POWER)
SHARE_MOVED = 0.15    # the cores' share of the sweep's builds moved by more than the build time's goal: say so
SLOWED = 0.15         # a sweep's builds' threads were ready for this much more CPU than they got: say so
DISAGREE = 0.25       # the models' forecasts spread by more than this share of the forecast: say so
# Quantities that add up over a database's shards: each shard's index is its own set of B-trees built by its
# own updater, so a target of D documents in q shards holds q indexes of D/q documents. From a one-shard sweep
# they are forecast as q × one shard at D/q, which the one-shard sizes can bracket (see shard_forecast). The
# disk a build adds and the bytes it writes do not add up so: a one-shard build is compacted all along, a
# q-shard one only a shard or two at a time (see growth_forecast); bytes written stay with the sweep at q.
SHARDED = ("index_compacted", "index_size", "index_active")
# Quantities that do not fall with more documents: a bigger build passes through what a smaller one did, so
# the interval reaches down at least to the lowest build at the largest size (peak memory levels off: a
# curve through the sweep forecast 10-44 % above the real peak, its interval above it too).
FLOOR = ("peak_memory",)

QUANTITIES: dict[str, tuple[str, Callable[[dict], float | None]]] = {
    "build_time": ("s", lambda r: r.get("wall_time_s")),
    "build_cpu": ("s", _build_cpu),
    "index_compacted": ("bytes", _index_compacted),
    "index_size": ("bytes", _index_file),
    "index_active": ("bytes", _index_active),
    "peak_disk": ("bytes", _peak_disk),
    "disk_growth": ("bytes", _disk_growth),
    "bytes_written": ("bytes", _bytes_written),
    "peak_memory": ("bytes", lambda r: peak_memory(r)[0]),
}


# The two parts of the disk a build adds (growth_forecast), fitted but not reported as quantities of their own.
PARTS: dict[str, tuple[str, Callable[[dict], float | None]]] = {
    "index_growth": ("bytes", _index_growth),
    "compaction": ("bytes", _compaction),
}


def points(runs: Iterable[dict], quantity: str, zeros: bool = False) -> list[tuple[int, float]]:
    """(documents, value) of every successful build that recorded the quantity (runs carry their "size");
    zeros: keep values of 0 (a build the compaction daemon left alone), else only positive ones."""
    get = {**QUANTITIES, **PARTS}[quantity][1]
    out = []
    for r in runs:
        if r.get("status") == "ok" and r.get("size"):
            v = get(r)
            if isinstance(v, (int, float)) and (v > 0 or (zeros and v == 0)):
                out.append((int(r["size"]), float(v)))
    return sorted(out)


# ---------------------------------------------------------------- warnings

def warnings(*, target_docs: int, measured: Sequence[int], fit: LinearFit | None = None, quantity: str = "",
             memory_bytes: int | None = None, db_bytes: dict[int, int] | None = None,
             target_db_bytes: int | None = None, other_load: float | None = None) -> list[str]:
    """Why the forecast may not hold: far extrapolation, the page-cache edge, a poor fit, a loaded machine."""
    out = []
    top = max(measured) if measured else 0
    if top and target_docs > FAR * top:
        out.append(f"target {target_docs:,} documents is {target_docs / top:.0f}× the largest measured "
                   f"({top:,}): an extrapolation beyond {FAR:.0f}×")
    if memory_bytes and db_bytes and target_db_bytes:
        largest = db_bytes.get(top)
        if largest and largest <= memory_bytes < target_db_bytes:
            out.append(f"page cache: the largest measured database ({_mib(largest)}) fits in memory "
                       f"({_mib(memory_bytes)}) but the target's ({_mib(target_db_bytes)}) does not; builds that "
                       "read from disk can be slower than the line says")
    if fit is not None and fit.r2 is not None and fit.r2 < POOR_R2:
        out.append(f"{quantity or 'fit'}: poor fit (r² {fit.r2:.2f} < {POOR_R2}): the sweep is not a straight line")
    if other_load is not None and other_load > LOADED:
        out.append(f"loaded machine: load average {other_load:.1f} per CPU when the sweep began; times may not hold "
                   "on a quiet machine")
    return out


def _mib(n: float) -> str:
    return f"{n / 1024 ** 2:,.0f} MiB"


# CouchDB's compaction daemon compacts a database whose file is this many times its live data (smoosh.ratio_dbs)
# or holds this much more than it (smoosh.slack_dbs): CouchDB 3.5's defaults
DB_RATIO, DB_SLACK = 2.0, 512 * 1024 ** 2


def db_compaction_due(file_bytes: float | None, active_bytes: float | None) -> str | None:
    """Why smoosh would compact the target's database, None if it would not (or its sizes are not known). If
    it does so while the views rebuild, the peak holds the database's compacted copy too (back-test y: its
    first target build began while smoosh compacted the fresh database, 154 MiB of files against 54)."""
    if not file_bytes or not active_bytes:
        return None
    if file_bytes >= DB_RATIO * active_bytes:
        return (f"its file is {file_bytes / active_bytes:.1f}× its live data (smoosh's ratio_dbs compacts at "
                f"{DB_RATIO:g}×)")
    if file_bytes - active_bytes >= DB_SLACK:
        return (f"its file holds {_mib(file_bytes - active_bytes)} more than its live data (smoosh's slack_dbs "
                f"compacts at {_mib(DB_SLACK)})")
    return None


# ---------------------------------------------------------------- the forecast of one sweep

DB_BACKTESTED = 0.13    # db_line's worst miss on the recorded sweeps (12.6 %), rounded up


def db_active_at(db_active: dict[int, int], target_docs: int) -> int | None:
    """The live data of a target database of target_docs documents, as the sweep's largest database holds a
    document (its documents and their B-trees' live nodes grow with them; the file, written in batches,
    grows faster: db_line). None without the sweep's live data."""
    if not db_active:
        return None
    top = max(db_active)
    return round(db_active[top] / top * target_docs)


def db_line(db_bytes: dict[int, int], target_docs: int, level: float = LEVEL,
            left_out: Sequence[int] = ()) -> dict | None:
    """The target's database file forecast from the sweep's databases (a target given only as a document
    count): a + b·n^k, since each batch an import writes rewrites a path through every shard's b-trees, longer
    as they grow (on back-tests o to r the files grew 7-10 % a document per doubling and a line forecast the
    targets' 10-19 % low; benchmarks/forecast_backtest/db_line). The files grow so smoothly that the fit's own
    interval is narrower than its misses were: it is widened to DB_BACKTESTED each side. left_out: sizes whose
    database smoosh compacted during the sweep, whose file is not what an import leaves (back-test y: its
    20,000 documents' file 1.2× its live data, the smaller sizes' 1.5-1.7×, its target's 2.8×). None without
    three sizes."""
    out = sorted(set(left_out) & db_bytes.keys())
    f = fit_power(sorted((n, v) for n, v in db_bytes.items() if n not in out))
    if f is None:
        return None
    p = predict(f, target_docs, level)
    but = (f" but {', '.join(f'{n:,}' for n in out)}'s (smoosh compacted {'it' if len(out) == 1 else 'them'} during "
           f"the sweep)" if out else "")
    return {"value": p.value, "low": max(0.0, min(p.low, p.value * (1 - DB_BACKTESTED))),
            "high": max(p.high, p.value * (1 + DB_BACKTESTED)), "shape": POWER, "k": f.k,
            "basis": f"the sweep's databases{but}, a + b·n^{f.k:g}", **({"left_out": out} if out else {})}


def forecast_sweep(runs: Sequence[dict], target_docs: int, *, weighting: str = "ordinary", level: float = LEVEL,
                   memory_bytes: int | None = None, db_bytes: dict[int, int] | None = None,
                   target_db_bytes: int | None = None, other_load: float | None = None,
                   shard_runs: Sequence[dict] = (), shards: int | None = None, cores: int | None = None,
                   target_db_line: dict | None = None, target_db_active: int | None = None,
                   target_q: int | None = None, couchdb: dict | None = None) -> dict:
    """Per language: every quantity's fit and prediction at target_docs, with the warnings; JSON-ready.
    cores: the machine's, for how much the builds waited for a CPU (contention; a run's cpus axis narrows it).
    runs: the sweep's manifest runs, each with "size" and "language" (dragnet.bench.sizes.sweep_runs).
    shard_runs: the same sweep on one-shard databases; with the target's shards, the SHARDED quantities are
    forecast from them (shard_forecast), the whole-database forecast kept beside as "whole_database".
    target_db_line: where the target's database size is itself forecast (db_line), its low and high widen
    the peak's interval; target_db_active: the target database's live data, where smoosh would compact it
    (db_compaction_due), the peak's high end holds its copy. target_q and couchdb (its version and view updater
    settings): where the disk growth is not forecast by parts, whether the target's shards outgrow the view
    writer's batches (writer_queue.by_final)."""
    langs: dict[str, list[dict]] = {}
    for r in runs:
        langs.setdefault(r.get("language") or "?", []).append(r)
    out = {}
    for lang, rs in langs.items():
        measured = sorted({int(r["size"]) for r in rs if r.get("status") == "ok" and r.get("size")})
        # where the builds recorded their run-queue waits, those say whether others held the cores; the load
        # average cannot (a q=8 build's couchjs and beam threads alone take it to 15-19 on 2 cores)
        waits = contention(rs, cores)
        common = warnings(target_docs=target_docs, measured=measured, memory_bytes=memory_bytes, db_bytes=db_bytes,
                          target_db_bytes=target_db_bytes, other_load=None if waits else other_load)
        qs = {q: quantity_forecast(points(rs, q), q, target_docs, weighting=weighting, level=level)
              for q in QUANTITIES}
        one = [r for r in shard_runs if (r.get("language") or "?") == lang]
        for q in SHARDED if shards and one else ():
            entry = shard_forecast(points(one, q), q, target_docs, shards, weighting=weighting, level=level)
            if entry.get("prediction"):
                entry["whole_database"] = qs[q].get("prediction")
                qs[q] = entry
        for q in ("index_compacted", "index_active"):
            widen_side_by_side(qs[q], points(rs, q), shards, points(one, q) if shards and one else ())
        widen_by_share(qs["build_time"], qs["build_cpu"])
        widen_by_contention(qs["build_time"], qs["build_cpu"], waits)
        if qs["index_compacted"].get("prediction"):
            # the final index size supersedes the live data right after the build, whose interval did not
            # hold (the Erlang view's held 4.2-4.5 % more built side by side, outside it); kept in the results
            del qs["index_active"]
        if shards and one:
            entry = growth_forecast(rs, one, target_docs, shards, weighting=weighting, level=level)
            if entry.get("prediction"):
                entry["whole_database"] = qs["disk_growth"].get("prediction")
                qs["disk_growth"] = entry
        growth = qs["disk_growth"].get("prediction")
        live = (qs.get("index_compacted") or {}).get("prediction") or (qs.get("index_active") or {}).get("prediction")
        # where the growth is not forecast by parts (whose low is one shard alone, without the side-by-side
        # excess), its shapes' low can lie above what the build adds: bring it down to the floor
        floor = None if qs["disk_growth"].get("parts") else growth_floor(rs, live, target_docs)
        if growth and floor and floor["value"] < growth["low"]:
            growth["low"] = floor["value"]
            qs["disk_growth"]["floor"] = floor
            qs["disk_growth"].setdefault("warnings", []).append(
                f"disk_growth: the interval's low is {_mib(floor['value'])}, {floor['basis']}: every shape grows "
                f"at least linearly, and the disk a build adds a document can still fall beyond the sweep")
        if growth and not qs["disk_growth"].get("parts"):
            carry_by_final(qs["disk_growth"], rs, (qs.get("index_compacted") or {}).get("prediction"), target_docs,
                           target_q, couchdb)
        if target_db_bytes and growth:
            # the rebuild starts from the target's database: its file plus the disk the build adds
            db_low, db_high = ((target_db_line["low"], target_db_line["high"]) if target_db_line
                               else (target_db_bytes, target_db_bytes))
            qs["peak_disk"]["prediction"] = {**growth, "value": target_db_bytes + growth["value"],
                                             "low": db_low + growth["low"], "high": db_high + growth["high"]}
            qs["peak_disk"]["basis"] = (f"the target's database ({_mib(target_db_bytes)}"
                                        f"{', ' + target_db_line['basis'] if target_db_line else ''}) + disk_growth")
            # its own shapes no longer make the forecast: disk_growth's warnings speak for it
            qs["peak_disk"]["warnings"] = [w for w in qs["peak_disk"].get("warnings") or []
                                           if "models disagree" not in w]
            due = db_compaction_due(target_db_bytes, target_db_active)
            if due:
                peak = qs["peak_disk"]["prediction"]
                peak["high"] += target_db_active
                qs["peak_disk"]["db_compaction"] = {"due": due, "copy": target_db_active}
                if target_db_line:
                    # a database not imported yet: smoosh can compact it before the rebuild as well as during
                    # it (ae: the first target build held the copy, the second began from the compacted file)
                    peak["low"] = min(peak["low"], target_db_active + growth["low"])
                    qs["peak_disk"]["db_compaction"]["forecast"] = True
                    qs["peak_disk"]["warnings"].append(
                        f"peak_disk: the target's database, as forecast, will be due for compaction once imported: "
                        f"{due}; if CouchDB compacts it before the rebuild, the peak is its live data "
                        f"({_mib(target_db_active)}) + disk_growth, while the views rebuild it also holds the copy "
                        f"(the interval spans both; compact it before the rebuild to leave the copy out)")
                else:
                    qs["peak_disk"]["warnings"].append(
                        f"peak_disk: the target's database is due for compaction: {due}; if CouchDB compacts it "
                        f"while the views rebuild, the peak also holds its copy, up to {_mib(target_db_active)} "
                        f"more (in the interval's high end; compact it first to leave it out)")
        size = qs["index_size"].get("prediction")
        if size and live and growth:
            # the file right after the build holds at least the index's live data and at most every byte the
            # build appended; where between depends on whether the compaction daemon ran during the build (two
            # builds of one 200,000-document index ended at 164 and 312 MiB here), which no sweep foretells
            size["low"], size["high"] = min(live["low"], size["value"]), max(size["high"], growth["high"])
            qs["index_size"]["bounds"] = "from the final index size's (or live data's) low to the disk growth's high"
        out[lang] = {"measured_sizes": measured, "quantities": qs, "warnings": common}
    return out


def shard_forecast(pts: Sequence[tuple[int, float]], quantity: str, target_docs: int, shards: int, *,
                   weighting: str = "ordinary", level: float = LEVEL) -> dict:
    """A SHARDED quantity from a one-shard sweep: shards × its forecast for one shard of target_docs/shards
    documents, the interval scaled alike (as if every shard erred the same way: they are built side by side,
    under the same load and compaction daemon, so their errors do not cancel). Where the one-shard sizes
    reach the target's shard size this is an interpolation; beyond, it says how far it reaches."""
    per = max(2, round(target_docs / shards))
    entry = quantity_forecast(pts, quantity, per, weighting=weighting, level=level, scale=shards)
    top = max((n for n, _ in pts), default=0)
    entry["shards"] = {"q": shards, "docs_per_shard": per, "largest_one_shard": top}
    if entry.get("prediction"):
        entry["prediction"]["docs"] = target_docs
        entry["basis"] = f"{shards} shards × one shard of {per:,} documents"
        if top and per > top:
            entry["warnings"].append(f"{quantity}: a shard of the target holds {per:,} documents, "
                                     f"{per / top:.1f}× the largest one-shard build ({top:,})")
    return entry


def _means(pts: Sequence[tuple[int, float]]) -> dict[int, float]:
    """Per size, the mean of its builds' values."""
    by: dict[int, list[float]] = {}
    for n, v in pts:
        by.setdefault(n, []).append(v)
    return {n: sum(vs) / len(vs) for n, vs in by.items()}


def cores_share(wall: Sequence[tuple[int, float]], cpu: Sequence[tuple[int, float]]) -> dict[int, float]:
    """Per size: the build's CPU-seconds over its wall seconds (means of the builds), the cores its processes
    kept busy on average."""
    c, w = _means(cpu), _means(wall)
    return {n: c[n] / w[n] for n in sorted(c.keys() & w.keys()) if w[n] > 0}


def share_factors(shares: dict[int, float]) -> tuple[float, float]:
    """(low, high): what a wall time taken over the largest size's share of the cores is scaled by at the
    largest share seen (low, at most 1) and at the smallest (high, at least 1)."""
    top = shares[max(shares)]
    return min(1.0, top / max(shares.values())), max(1.0, top / min(shares.values()))


def widen_by_share(entry: dict, cpu_entry: dict) -> None:
    """Widen the build time's interval by how much the share of the cores the sweep's builds got varied from
    size to size. A build's wall time is its CPU-seconds over that share; on a loaded machine the share moves
    from build to build (0.23-0.65 of a core at a load average of 46-68 on 2 cores) and the target's build gets a share of its own, which no shape through the sweep's wall times
    foretells: its low is scaled by the largest size's share over the largest seen, its high by that share
    over the smallest seen (the wall forecast carries the largest size's share). In place; records
    "cores_share". Nothing where the builds recorded no CPU."""
    p = entry.get("prediction")
    shares = cores_share([tuple(x) for x in entry.get("points") or []],
                         [tuple(x) for x in cpu_entry.get("points") or []])
    if not p or len(shares) < 2:
        return
    top = shares[max(shares)]
    low, high = share_factors(shares)
    p["low"], p["high"] = p["low"] * low, p["high"] * high
    entry["cores_share"] = {"per_size": {str(n): v for n, v in shares.items()}, "largest_size": top,
                            "low_factor": low, "high_factor": high}
    if high / low > 1 + SHARE_MOVED:
        lo_s, hi_s = min(shares.values()), max(shares.values())
        entry.setdefault("warnings", []).append(
            f"build_time: the sweep's builds got {lo_s:.2f}–{hi_s:.2f} of a core's time (the machine's load moved "
            f"it): the target's wall time depends on the share it gets; the interval spans that (build_cpu, the "
            f"CPU-seconds, does not depend on it)")
    cp = cpu_entry.get("prediction")
    if cp:   # the other way to the wall time: the CPU forecast over the largest size's share (kept to compare)
        entry["from_cpu"] = over_share(cp, shares)


def over_share(cpu: dict, shares: dict[int, float]) -> dict:
    """A CPU-seconds prediction as a wall time: over the share of the cores the largest size's builds got (the
    target taken to meet the load the sweep ended in), its low over the largest share seen, its high over
    the smallest."""
    return {**cpu, "value": cpu["value"] / shares[max(shares)], "low": cpu["low"] / max(shares.values()),
            "high": cpu["high"] / min(shares.values())}


def contention(runs: Iterable[dict], cores: int | None) -> dict[int, dict]:
    """Per size: how much CPU the builds got against how much their threads were ready for, from the kernel's
    accounting each build recorded (run: its threads' time on a CPU; wait: their time runnable in a run queue;
    means of the builds). share = run / interval; ready = (run + wait) / interval, at most the cores (a build
    whose own threads outnumber the cores waits for itself, as the target will); slowed = ready / share - 1,
    what waiting for the others' processes cost it. The interval is the build's wall time where the accounting's
    outlasted it (a short build's last snapshot came 1.5 s after its end: 1.71 of a core on a quiet machine
    where its threads had 2.11 while it ran). Empty where the builds recorded no run-queue wait."""
    by: dict[int, list[tuple[float, float, float, int]]] = {}
    for r in runs:
        run, wait, span = r.get("cpu_run_s"), r.get("cpu_wait_s"), r.get("cpu_interval_s")
        if r.get("status") != "ok" or not r.get("size") or not cores or not run or wait is None or not span:
            continue
        wall = r.get("wall_time_s")
        span = min(span, wall) if isinstance(wall, (int, float)) and wall > 0 else span
        axes = r.get("axes")
        own = axes.get(CORES) if isinstance(axes, dict) else None
        by.setdefault(int(r["size"]), []).append((run, wait, span, min(cores, int(own)) if own else cores))
    out = {}
    for n, rows in sorted(by.items()):
        run, wait, span = (sum(x[i] for x in rows) / len(rows) for i in range(3))
        c = min(x[3] for x in rows)
        share, ready = run / span, min(c, (run + wait) / span)
        out[n] = {"share": share, "ready": ready, "cores": c, "slowed": max(0.0, ready / share - 1)}
    return out


def widen_by_contention(entry: dict, cpu_entry: dict, per_size: dict[int, dict]) -> None:
    """Where the sweep's builds got less CPU than their threads were ready for (other processes held the cores:
    builds can get 0.37-0.43 of a core with threads ready for 2, and their target 1.07), their wall
    times say how loaded the machine was, not how long the target takes: a steady load looks like a steady
    share, so the cores' share moving (widen_by_share) does not catch it. The interval's low then reaches the
    CPU-seconds' low over the cores the largest size's threads were ready for (the target given every core
    it can use). In place; records "contention" (extend.open_goals reads its "slowed")."""
    p = entry.get("prediction")
    if not p or not per_size:
        return
    worst = max(per_size, key=lambda n: per_size[n]["slowed"])
    top = per_size[max(per_size)]
    entry["contention"] = {"per_size": {str(n): v for n, v in per_size.items()}, "slowed": per_size[worst]["slowed"]}
    if per_size[worst]["slowed"] <= SLOWED:
        return
    cp = cpu_entry.get("prediction")
    if cp:
        p["low"] = min(p["low"], cp["low"] / top["ready"])
        entry["contention"]["fastest"] = cp["value"] / top["ready"]
    w = per_size[worst]
    entry.setdefault("warnings", []).append(
        f"build_time: the sweep's builds waited for a CPU (at {worst:,} documents they got {w['share']:.2f} of a "
        f"core where their threads were ready for {w['ready']:.2f}): their wall times carry the machine's load, "
        f"which the target's build meets anew; the interval reaches down to its CPU-seconds (build_cpu) over "
        f"{top['ready']:.2f} of a core")


def widen_side_by_side(entry: dict, whole: Sequence[tuple[int, float]], shards: int | None,
                       one: Sequence[tuple[int, float]] = ()) -> None:
    """Widen a one-shard forecast's interval (shard_forecast) both ways by how much the sweep at q differed from
    q shards built alone at its largest size. q shards built side by side held a few % more or less live data
    than q built alone (their nodes fill by other batches), which one-shard builds repeating to 0.1 % cannot
    show. In place; records "side_by_side"."""
    if not (shards and entry.get("shards") and entry.get("prediction") and whole):
        return
    top, together, alone = side_by_side(whole, entry["fit"], shards, one)
    spread = abs(together / alone - 1) if alone > 0 else 0.0
    p = entry["prediction"]
    p["low"], p["high"] = max(0.0, p["low"] * (1 - spread)), p["high"] * (1 + spread)
    entry["side_by_side"] = {"docs": top, "measured": together, "alone": alone, "spread": spread}


def side_by_side(pts: Sequence[tuple[int, float]], one_shard_fit: dict, shards: int,
                 one_pts: Sequence[tuple[int, float]] = ()) -> tuple[int, float, float]:
    """(N, measured, alone): the sweep at q's mean at its largest size N, and q × one shard of N/q built alone:
    what the one-shard sweep measured there (between two of its sizes, the line between them), else its fit.
    N/q is often the one-shard sweep's smallest size, where a fit through all of them can be far off (an
    n log n with a negative intercept can give a third of what was measured there, which the side-by-side
    ratio would then carry into the disk growth)."""
    top = max(n for n, _ in pts)
    at_top = [v for n, v in pts if n == top]
    return top, sum(at_top) / len(at_top), shards * one_shard_at(one_pts, one_shard_fit, top / shards)


def within(pts: Sequence[tuple[int, float]], n: float) -> bool:
    """Whether n lies within the measured sizes (one_shard_at reads them there, else the fit)."""
    return bool(pts) and min(m for m, _ in pts) <= n <= max(m for m, _ in pts)


def one_shard_at(pts: Sequence[tuple[int, float]], fit: dict, n: float) -> float:
    """One shard's value at n documents: the mean measured at n, the line between the measured sizes around
    it, else (outside them) the fit."""
    means = _means(pts)
    if n in means:
        return means[n]
    if not within(pts, n):
        return fit_value(fit, n)
    lo, hi = max(m for m in means if m < n), min(m for m in means if m > n)
    return means[lo] + (means[hi] - means[lo]) * (n - lo) / (hi - lo)


def _external(run: dict) -> float | None:
    return (((run.get("sizes") or {}).get("after") or {}).get("index") or {}).get("external")


def carry_by_final(entry: dict, runs: Sequence[dict], final: dict | None, target_docs: int, shards: int | None,
                   couchdb: dict | None) -> None:
    """The disk growth by the final index (writer_queue.by_final), where the growth is not forecast by parts:
    recorded as "by_final"; where it is decided, it makes the forecast's value and widens its interval (the
    shapes' interval and the floor stay within it); where it is open, a warning says why. In place."""
    builds = [wq.Build(int(r["size"]), g, f, _external(r)) for r in runs
              if r.get("status") == "ok" and r.get("size") for g, f in [(_disk_growth(r), _index_compacted(r))]
              if g is not None and f]
    axes = [(r.get("axes") or {}).get("config") if isinstance(r.get("axes"), dict) else None for r in runs]
    by = wq.by_final(builds, final, target_docs, shards, wq.queue_cap(couchdb, axes), GOALS["disk_growth"])
    if not by:
        return
    entry["by_final"] = by
    p = entry["prediction"]
    if by["open"] is None:
        p.update(value=by["value"], low=min(p["low"], by["low"]), high=max(p["high"], by["high"]), model="by_final")
        entry["basis"] = (f"the final index × {by['ratio']:.2f}, the growth over it at the sweep's largest size "
                          f"(the view writer's batches still grow at the target's shards)")
    else:
        entry.setdefault("warnings", []).append(f"disk_growth: not carried by the final index: {by['open']}")


def growth_floor(runs: Sequence[dict], live: dict | None, target_docs: int) -> dict | None:
    """The least disk a build of target_docs documents adds: the index's live data at the target (live: the
    final index's forecast, its low) plus, per document, the least any of the sweep's sizes wrote beyond its
    own final index. That excess is the B-tree nodes each batch of the updater rewrote, and it grows with the
    tree, so the sweep's smallest size writes the least of it; a larger build's can still fall below its
    largest size's, as bigger batches rewrite less (on CouchDB 3.5.2 it fell 4-15 % to the target on four of
    eight back-tests, and the interval every shape gave, all growing at least linearly, missed them all:
    docs/studies/forecast-backtests.md). None without live data or a size with both."""
    if not live or live.get("low") is None:
        return None
    grown, final = _means(points(runs, "disk_growth")), _means(points(runs, "index_compacted"))
    extra = {n: (grown[n] - final[n]) / n for n in grown if n in final}
    if not extra:
        return None
    at = min(extra, key=extra.get)
    per = max(0.0, extra[at])
    return {"value": max(0.0, live["low"]) + per * target_docs, "live_low": live["low"], "extra_per_doc": per,
            "at_size": at, "basis": f"the final index's low + {per / 1024:,.2f} KiB per document, the least a "
                                    f"size of the sweep wrote beyond its final index ({at:,} documents)"}


def growth_forecast(runs: Sequence[dict], one: Sequence[dict], target_docs: int, shards: int, *,
                    weighting: str = "ordinary", level: float = LEVEL) -> dict:
    """The disk a rebuild of target_docs documents in `shards` shards adds, in two parts (q × a one-shard
    build's growth overstates it, by 41 % for a design document, as the shards share the build's files):

    - the index files: q × one shard of D/q built alone (the one-shard sweep, without its compaction files),
      plus what q updaters side by side add per document. Several updaters sharing the cores leave more of each
      B-tree rewritten than one alone (here 1.2-1.7× at 25,000 documents a shard); the sweep at the target's q
      measures that at its largest size N, as q shards of N/q against one shard of N/q built alone, and the
      excess per document is carried to the target (a smaller batch rewrites a path of the tree: the excess
      grows with the batches, so with the documents);
    - the compaction's files: CouchDB's compaction daemon compacts an index while it is built, but only so many
      shards at once (one here, with 8 building): k × one shard's index files (the part above over q), k the
      most shards the sweep at the target's q saw compacted at once (one when it saw none but the one-shard
      builds were compacted). A shard of a q-shard build is built for the whole build, so the daemon takes it
      early, and the compactor catches up by running the view updater on its own file over every change
      since it began (couch_mrview_compactor:recompact): that file grows as the shard's own index does. On
      ten 3.5.0 targets it was 0.94-1.08× the shard's index file at the peak, where a one-shard build,
      short, is taken late or not at all (its compaction files, fitted, came out at 0-85 % of the targets':
      docs/studies/forecast-backtests.md).

    The interval runs from no excess (the index files' low, one shard alone) to the excess as a ratio (their
    high × the ratio at N/q, where it is largest), the compaction's files with them. JSON-ready; {} when
    the one-shard sweep cannot be split (no compaction recorded)."""
    idx = shard_forecast(points(one, "index_growth"), "index_growth", target_docs, shards, weighting=weighting,
                         level=level)
    comp_pts = points(one, "compaction", zeros=True)
    grown = points(runs, "index_growth")
    if not idx.get("prediction") or not comp_pts or not grown:
        return {}
    per = max(2, round(target_docs / shards))
    seen = [int(((r.get("sizes") or {}).get("peak_disk") or {}).get("compactions_at_once") or 0) for r in runs]
    k = min(shards, max([*seen, 1 if any(v > 0 for _, v in comp_pts) else 0]))
    one_pts = points(one, "index_growth")
    top, measured, alone = side_by_side(grown, idx["fit"], shards, one_pts)
    extra = max(0.0, measured - alone) / top
    ratio = max(1.0, measured / alone) if alone > 0 else 1.0
    ip = idx["prediction"]
    # the bytes the q index files take: low without the side-by-side excess, high with it as a ratio
    files = {"value": ip["value"] + extra * target_docs, "low": ip["low"], "high": ip["high"] * ratio}
    cp = {b: k * files[b] / shards for b in ("value", "low", "high")}
    # the one-shard builds' own compaction files are kept as measured, not fitted: how late the daemon reached
    # a short build, which a target's shard is not
    comp = {"unit": "bytes", "points": [list(p) for p in comp_pts], "shards": k,
            "prediction": {"docs": per, **cp, "level": level, "model": "index_files"}} if k else {}
    value = files["value"] + cp["value"]
    # the growth as the excess reads carried per document (the value) and as a ratio (extend.side_by_side_apart)
    readings = {"per_doc": value, "ratio": ip["value"] * ratio * (1 + k / shards)}
    entry = {"unit": "bytes", "points": [list(p) for p in points(runs, "disk_growth")], "fit": idx["fit"],
             "prediction": {"docs": target_docs, "value": value, "low": max(0.0, files["low"] + cp["low"]),
                            "high": max(value, files["high"] + cp["high"]), "level": level, "model": "parts"},
             "warnings": list(idx.get("warnings", [])),
             "basis": f"{shards} shards' index files ({shards} × one shard of {per:,} documents alone + "
                      f"{extra / 1024:,.2f} KiB per document for {shards} updaters side by side) + the compaction "
                      f"files of {k} shard{'s' if k != 1 else ''} compacted at once, each as big as a shard's "
                      f"index files",
             "parts": {"q": shards, "index_files": idx, "index_bytes": files, "compaction": comp,
                       "compacted_at_once": k,
                       "side_by_side": {"docs": top, "measured": measured, "alone": alone,
                                        "extra_per_doc": extra, "ratio": ratio, "readings": readings,
                                        # one shard alone at N/q from the one-shard sweep's sizes, not its fit
                                        "alone_measured": within(one_pts, top / shards)}}}
    return entry


def quantity_forecast(pts: Sequence[tuple[int, float]], quantity: str, target_docs: int, *,
                      weighting: str = "ordinary", level: float = LEVEL, scale: float = 1.0,
                      unit: str | None = None, primary: str | None = None) -> dict:
    """One quantity's forecast: the value from the shape its held-out sizes chose (dragnet.forecast.choice; the
    PRIMARY shape where they cannot tell the shapes apart), the interval from the lowest to the highest 95 %
    prediction bound of every shape and the chosen one's held-out error around the value, every
    model's fit and prediction kept, the choice ("choice") and the warnings. Predictions are multiplied by scale (shards, for a
    one-shard sweep); the fits are the points' own. unit and primary: for a quantity of another kind of index
    (dragnet.forecast.search_sweep), which QUANTITIES and PRIMARY do not name. JSON-ready."""
    unit = unit or {**QUANTITIES, **PARTS}[quantity][0]
    fits = fit_models(pts, weighting, SHAPES.get(quantity, GROWING))
    entry: dict = {"unit": unit, "points": [list(p) for p in pts], "fit": None}
    shape = primary or PRIMARY.get(quantity, LINEAR)
    fixed = shape if shape in fits else LINEAR
    if fixed not in fits:
        return entry
    chosen = choose(pts, list(fits), fixed, weighting)
    primary = fits[chosen["chosen"]]

    def at(f: LinearFit) -> Prediction:
        p = predict(f, target_docs, level)
        return Prediction(p.docs, p.value * scale, p.low * scale, p.high * scale, p.level)

    preds = {m: at(f) for m, f in fits.items()}
    main = preds[primary.model]
    entry["fit"] = asdict(primary)
    entry["models"] = {m: {"fit": asdict(f), "prediction": asdict(preds[m])} for m, f in fits.items()}
    entry["choice"] = chosen
    # the interval spans every shape, as before the choice: a shape that lost on the sweep's own sizes may
    # still hold 5× beyond them (a shape erring 1-2 % on a held-out size can err 8-11 % at a 5× target);
    # and the chosen shape's own held-out error around its value
    bounds = list(preds.values())
    if POWER in fits:     # the exponents the sweep cannot reject widen the power's interval
        ks = power_fits(pts, weighting, level)
        bounds += [at(f) for f in ks]
        entry["models"][POWER]["k_range"] = [min(f.k for f in ks), max(f.k for f in ks)]
    own = chosen["held_out"][primary.model]["error"]
    if own:
        bounds.append(Prediction(main.docs, main.value, main.value * (1 - own), main.value * (1 + own), level))
    low = min(p.low for p in bounds)
    if quantity in FLOOR:
        top = max(n for n, _ in pts)
        low = min(low, min(v for n, v in pts if n == top) * scale)
    # a time or a size is never below zero, whatever a wide interval says
    entry["prediction"] = {**asdict(main), "model": primary.model, "value": max(0.0, main.value),
                           "low": max(0.0, low), "high": max(0.0, max(p.high for p in bounds))}
    entry["warnings"] = warnings(target_docs=target_docs, measured=[], fit=primary, quantity=quantity)
    values = [p.value for p in preds.values()]
    if main.value and (max(values) - min(values)) / abs(main.value) > DISAGREE:
        show = (lambda v: f"{v:,.0f} s") if unit == "s" else _mib
        them = ', '.join(f'{m} {show(p.value)}' for m, p in preds.items())
        entry["warnings"].append(
            f"{quantity}: the models disagree at the target ({them}); {chosen['reason']}" if chosen["told_apart"]
            else f"{quantity}: the models disagree at the target ({them}): the sweep cannot tell how it grows "
                 f"({chosen['reason']}); the interval spans them all")
    return entry


def forecast(sweeps: dict[str, Sequence[dict]], target_docs: int, **kw) -> dict:
    """One forecast per axis value: sweeps maps a label (e.g. "cpus=2", or "" for one sweep) to its runs."""
    return {label: forecast_sweep(runs, target_docs, **kw) for label, runs in sweeps.items()}


def error_against(pred: dict, actual: float) -> dict:
    """How a prediction (asdict(Prediction)) did against a real build's value: relative error, inside or not."""
    return {"actual": actual, "predicted": pred["value"], "error": (pred["value"] - actual) / actual,
            "inside": pred["low"] <= actual <= pred["high"]}


# ---------------------------------------------------------------- sizes for --sizes auto

def sweep_seconds(run: dict) -> float:
    """What a build costs a sweep's budget: its build time plus the compaction after it."""
    compacted = (run.get("sizes") or {}).get("compacted") or {}
    return float(run.get("wall_time_s") or 0) + float(compacted.get("seconds") or 0)


def auto_sizes(*, first_docs: int, first_seconds: float, budget_s: float, max_docs: int, count: int = 4,
               ratio: float = 2.0) -> list[int]:
    """Geometric sizes (each ratio× the last, the first build's size first) whose builds, at the first build's
    per-document time, fit the budget; as many as fit (at least `count` when the budget allows), none above
    max_docs. Fewer than two means the budget is too small."""
    per_doc = first_seconds / first_docs
    sizes, spent, n = [], first_seconds, first_docs
    sizes.append(n)
    while True:
        nxt = int(round(n * ratio))
        if nxt > max_docs or spent + per_doc * nxt > budget_s:
            break
        sizes.append(nxt)
        spent += per_doc * nxt
        n = nxt
    if len(sizes) < count and len(sizes) >= 2:   # squeeze: a smaller ratio, still geometric, to get `count`
        span = sizes[-1] / sizes[0]
        r = span ** (1 / (count - 1))
        if r > 1.05:
            sizes = sorted({int(round(sizes[0] * r ** i)) for i in range(count)})
    return sizes
