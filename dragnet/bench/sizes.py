"""`dragnet bench --sizes`: how view builds scale with the number of documents.

The data is generated once at the largest size (fixed seed); each size is a prefix of that file, imported
into its own database (`<db>-<count>`) with the bench's import marker, so a later sweep skips imports. Each
size then runs the ordinary bench matrix (languages × repeats × scenarios) into its own folder.

Pure parts (tested without a server): the prefixes, the fitted slope of log(time) on log(size), the size at
which the database first exceeds a memory limit, and the per-size table rows built from the manifests.
"""

from __future__ import annotations

import gzip
import json
import math
import statistics
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable, Iterable, Sequence

from dragnet.bench import managed
from dragnet.bench import run as b
from dragnet.results import schema as _schema
from dragnet.results.record import Build, combination_label
from dragnet.results.schema import SizeRow  # noqa: F401  (SizeRow: the schema's record of a row)
from dragnet.couchdb.client import connect, db_path
from dragnet.errors import DragnetError, UsageError
from dragnet.measure.pidstat import own_memory
from dragnet.couchdb.limits import parse_sizes  # noqa: F401  (re-exported: the CLI parses --sizes here)
from dragnet.data.sample import write_prefixes  # noqa: F401  (the sweep's nested sizes; forecast reads it here)

SCHEMA = _schema.schema(_schema.SIZES)
SUMMARY = "sizes.json"
SEED = 1          # fixed: the same sweep on another day imports the same documents


# ---------------------------------------------------------------- the data (prefixes of one file)

def size_db(db: str, count: int) -> str:
    return f"{db}-{count}"


def generate_source(count: int, folder: str | Path, seed: int = SEED) -> Path:
    """The largest size's data (data_prep.generate), reused when a file of that count and seed is there."""
    from data_prep.generate import generate_file

    path = Path(folder) / f"generated-{count}-seed{seed}.jsonl.gz"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp.gz")
        generate_file(str(tmp), count, seed)
        tmp.replace(path)
    return path


# ---------------------------------------------------------------- pure calculations

@dataclass(frozen=True)
class Fit:
    slope: float          # time ∝ size^slope: 1 is linear, above 1 worse than linear
    intercept: float      # ln(time) at size 1
    r2: float | None      # None when every time is the same
    points: int


def fit_slope(points: Iterable[tuple[float, float]]) -> Fit | None:
    """Least squares of ln(time) on ln(size) over (size, time) points; None without two distinct sizes.

    Every point counts (all repeats), so a noisy size weighs as much as it was measured."""
    pts = [(float(x), float(y)) for x, y in points if x and y and x > 0 and y > 0]
    if len({x for x, _ in pts}) < 2:
        return None
    lx = [math.log(x) for x, _ in pts]
    ly = [math.log(y) for _, y in pts]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    sxx = sum((a - mx) ** 2 for a in lx)
    sxy = sum((a - mx) * (c - my) for a, c in zip(lx, ly))
    slope = sxy / sxx
    intercept = my - slope * mx
    syy = sum((c - my) ** 2 for c in ly)
    r2 = None if syy == 0 else 1 - sum((c - (intercept + slope * a)) ** 2 for a, c in zip(lx, ly)) / syy
    return Fit(slope, intercept, r2, len(pts))


def first_exceeding(db_bytes: dict[int, int | None], limit: int | None) -> int | None:
    """The smallest size whose database file is larger than the memory limit (None: none, or no limit)."""
    if not limit:
        return None
    return next((n for n in sorted(db_bytes) if db_bytes[n] is not None and db_bytes[n] > limit), None)


def peak_memory(run: dict) -> tuple[int | None, str | None]:
    """(bytes, source) of a run's peak memory: the scenario cgroup's peak (page cache included) when it
    had one, else the sum of the per-family RSS peaks pidstat saw (beam + query servers)."""
    mem = run.get("memory") or {}
    if mem.get("peak"):
        return int(mem["peak"]), "cgroup"
    own = own_memory(run.get("pidstat_peak_rss_kb"))
    return (own, "pidstat rss") if own is not None else (None, None)


def variant(run: dict) -> str:
    """What else a sweep varied for this run besides language and size: its scenario and the other axes'
    values ("512m", "cpus=1"); runs of one variant are one line of the sweep."""

    return " ".join(x for x in (run.get("scenario") or "", combination_label(run.get("axes"))) if x)


def size_rows(runs: Iterable[dict], db_bytes: dict[int, int | None],
              limits_by_scenario: dict[str, int | None] | None = None) -> list[SizeRow]:
    """Rows per (language, scenario, size) from the sweep's runs (manifest entries with a "size")."""
    limits_by_scenario = limits_by_scenario or {}
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        groups.setdefault((r["language"], variant(r), r["size"]), []).append(r)
    out = []
    for (lang, sc, n), rs in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2])):
        ok = [r for r in rs if Build.of_entry(r).timed]
        figs = [Build.of_entry(r) for r in ok]
        idx = [((r.get("sizes") or {}).get("after") or {}).get("index") or {} for r in ok]
        idx_files = [i.get("file") for i in idx if i.get("file")]
        peaks = [peak_memory(r) for r in ok]
        peak = max((p for p in peaks if p[0] is not None), default=(None, None))
        limit = limits_by_scenario.get(rs[0].get("scenario") or "")
        first = first_exceeding(db_bytes, limit)
        out.append(SizeRow(lang, sc, n, len(rs), [f.wall_s for f in figs],
                           [f.docs_per_s for f in figs if f.docs_per_s],
                           db_bytes.get(n), max(idx_files) if idx_files else None, peak[0], peak[1],
                           bool(limit and db_bytes.get(n) and db_bytes[n] > limit), first == n))
    return out


def fits(runs: Iterable[dict]) -> dict[tuple[str, str], Fit | None]:
    """(language, variant) -> the slope over every successful run's (size, wall time)."""
    pts: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for r in runs:
        key = (r["language"], variant(r))
        pts.setdefault(key, [])
        entry = Build.of_entry(r)
        if entry.timed:
            pts[key].append((entry.size, entry.wall_s))
    return {k: fit_slope(v) for k, v in pts.items()}


# ---------------------------------------------------------------- the sweep (drives a CouchDB)

def sweep_runs(manifests: dict[int, dict]) -> list[dict]:
    """Every run of every size's manifest, each with its "size"."""
    return [{**r, "size": n} for n, m in sorted(manifests.items()) for r in m.get("runs", [])]


DRAWS = ("prefix", "spread")


def draw_record(draw: str) -> dict:
    """How a sweep's sizes were drawn from its data, as sizes.json and forecast.json record it."""
    from dragnet.data import sample as sampling

    if draw == "spread":
        return {"kind": "spread", "seed": sampling.SPREAD_SEED, "how": sampling.spread_describe()}
    return {"kind": "prefix", "seed": None, "how": "each size the first documents of the data"}


def write_sizes(source: str | Path, counts: Sequence[int], folder: str | Path, draw: str = "prefix") -> dict[int, Path]:
    """count -> the file of that size's documents: a prefix of source, or a nested spread sample of it."""
    if draw == "spread":
        from dragnet.data import sample as sampling

        return sampling.write_spread(source, counts, folder)
    return write_prefixes(source, counts, folder)


def run_sweep(config: b.BenchConfig, counts: Sequence[int], *, on_event: Callable[[str, dict], None] | None = None,
              env: dict | None = None, build: Callable[..., dict] | None = None, draw: str = "prefix") -> dict:
    """Generate (or take --data), draw each size from it (draw: "prefix", or "spread" as forecast does), then
    one bench per size into <dir>/size-<count>/; writes <dir>/sizes.json (every size's raw runs, the fits, the
    memory marks and how the sizes were drawn) and returns it."""
    import datetime as _dt
    import os

    on_event = on_event or (lambda kind, data: None)
    env = os.environ if env is None else env
    counts = sorted(set(counts))
    if config.storages:
        raise UsageError("--sizes and --storage: give one of them (label the storage with --storage-label)")
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    folder = Path(config.results_dir or Path("results") / f"sizes-{stamp}")
    if config.data:
        source = Path(config.data)
        if not source.is_file():
            raise UsageError(f"data file not found: {source}")
    else:
        on_event("generate", {"count": counts[-1], "seed": SEED})
        source = generate_source(counts[-1], folder / "data")
    if draw not in DRAWS:
        raise UsageError(f"a sweep's sizes are drawn as {' or '.join(DRAWS)}, not {draw!r}")
    on_event("prefixes", {"counts": counts, "source": str(source), "draw": draw})
    prefixes = write_sizes(source, counts, folder / "data", draw)

    # one CouchDB for the whole sweep: started here when asked, so each size's bench finds it managed
    inst = managed.managed_instance(config.url, env)
    started = None
    if inst is None and config.backend:
        on_event("start_couch", {"backend": config.backend, "storage": "disk"})
        started = managed.start_managed(config.backend, config.url, "disk",
                                        data_size=prefixes[counts[-1]].stat().st_size * 6, env=env)
    summary: dict = {"schema": SCHEMA, "dir": str(folder), "source": str(source),
                     "seed": None if config.data else SEED, "draw": draw_record(draw), "sizes": counts, "db": config.db,
                     "languages": config.languages, "repeat": config.repeat,
                     "memory_limits": sorted({s.memory for s in config.scenarios if s.memory}),
                     "per_size": {}, "manifests": {}}
    manifests: dict[int, dict] = {}
    try:
        for n in counts:
            cfg = replace(config, db=size_db(config.db, n), data=str(prefixes[n]),
                          results_dir=str(folder / f"size-{n}"), backend=None, size=n)
            on_event("size", {"count": n, "db": cfg.db})
            kw = {"build": build} if build is not None else {}
            bn = b.Bench(cfg, on_event=on_event, env=env, **kw)
            try:
                manifests[n] = bn.run()
            finally:
                if bn.manifest:
                    manifests[n] = bn.manifest
                    summary["manifests"][str(n)] = str(Path(f"size-{n}") / b.MANIFEST)
            couch = connect(config.url, env=env)
            info = couch.get(db_path(cfg.db))
            summary["per_size"][str(n)] = {"db": cfg.db, "doc_count": info.get("doc_count"),
                                           "q": (info.get("cluster") or {}).get("q"),
                                           "db_sizes": info.get("sizes"), "data": str(prefixes[n]),
                                           "imports": manifests[n].get("imports")}
            _write(folder, summary, manifests)
    finally:
        _write(folder, summary, manifests)
        if started is not None:
            on_event("stop_couch", {"backend": started.backend})
            managed.stop_managed(started, env=env)
    return summary


def db_sizes(summary: dict, kind: str = "file") -> dict[int, int]:
    """Each size's database as the sweep recorded it after its builds (GET /db "sizes": "file", "active"), where
    it was recorded."""
    got = {int(n): (p.get("db_sizes") or {}).get(kind) for n, p in summary["per_size"].items()}
    return {n: v for n, v in got.items() if v}


def analyse(summary: dict, manifests: dict[int, dict]) -> dict:
    """Rows, fits and memory marks from the raw per-size runs (also what `--json` prints)."""
    runs = sweep_runs(manifests)
    db_bytes = db_sizes(summary)
    limits_by_sc = {}
    for m in manifests.values():
        for sc in m.get("scenarios") or []:
            limits_by_sc[sc["label"]] = sc.get("memory_limit")
    rows = size_rows(runs, db_bytes, limits_by_sc)
    return {"rows": [asdict(r) for r in rows],
            "fits": [{"language": lang, "scenario": sc, **(asdict(f) if f else {"slope": None})}
                     for (lang, sc), f in fits(runs).items()],
            "first_exceeding_memory": {str(lim): first_exceeding(db_bytes, lim)
                                       for lim in summary.get("memory_limits") or []}}


def _write(folder: Path, summary: dict, manifests: dict[int, dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    out = {**summary, **(analyse(summary, manifests) if manifests else {})}
    _schema.write(folder / SUMMARY, out)


def save(folder: str | Path, summary: dict, manifests: dict[int, dict]) -> None:
    """Rewrite a sweep's sizes.json, its fits made again (a forecast that added a size to its sweep)."""
    _write(Path(folder), summary, manifests)


def load(folder: str | Path) -> tuple[dict, dict[int, dict]]:
    """sizes.json and every size's bench.json from a sweep's folder."""
    folder = Path(folder)
    path = _schema.kept(folder / SUMMARY)
    if not path.is_file():
        raise DragnetError(f"{folder}: no {SUMMARY}")
    summary = _schema.read(path, _schema.SIZES)
    manifests = {int(n): _schema.read(_schema.kept(folder / rel), _schema.BENCH)
                 for n, rel in summary["manifests"].items()}
    return summary, manifests
