"""`forecast --nouveau`: a Nouveau (search) index build of the target's size, from builds at a few smaller sizes.

Each size is a prefix of one data file imported into its own database (`<db>-<N>`, as `bench --sizes` does);
every round builds the index once per size and engine (dragnet.index.search_build), in a random order, after a
warm-up build (WARMUP) that is recorded but not fitted. The build
time, the CPU of beam's tree and the JVM, and the index's size on disk are each fitted as a fixed plus a
per-document cost in the growth shapes of dragnet.forecast.model, the shape chosen by the held-out sizes
(dragnet.forecast.choice), and forecast at the target with the interval spanning the shapes. With
`build_target` the target's size is built afterwards, the forecast written first, and each prediction is
compared with it (a back-test).

`fit`, `backtest` and `sizes_for` are pure; `run` talks to CouchDB.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Callable, Sequence

from dragnet.bench import sizes as sz
from dragnet.index import search_build as nv
from dragnet.couchdb.client import Couch, mask_url
from dragnet.data.ensure import ensure_data
from dragnet.errors import DragnetError, UsageError
from dragnet.forecast import extend as ext
from dragnet.forecast import model as fc
from dragnet.measure.machine import machine_info
from dragnet.results import schema as _schema

SCHEMA = _schema.schema(_schema.NOUVEAU_FORECAST)
SUMMARY = "forecast.json"
# builds per engine at the smallest size before the sweep, recorded but not fitted: the first builds after
# the JVM starts run its code unoptimised (a first build of 400 documents took 9.7 s, the next of 200 1.9 s)
WARMUP = 1


def _cpu_s(r: dict) -> float | None:
    """beam's tree (beam and the query servers) and the JVM: the CPU one build cost."""
    cpu = r.get("cpu") or {}
    beam = (cpu.get("couchdb") or {}).get("cpu_s")
    return None if beam is None else beam + ((cpu.get("jvm") or {}).get("cpu_s") or 0.0)


# name -> (unit, value of one build, the shape kept where the held-out sizes cannot tell the shapes apart).
# Time and CPU as a view's build time (n log n: Lucene merges its segments, which costs more per document as
# the index grows); the index on disk is its documents' terms and stored fields: linear.
QUANTITIES: dict[str, tuple[str, Callable[[dict], float | None], str]] = {
    "nouveau_build_time": ("s", lambda r: (r.get("summary") or {}).get("wall_time_s"), fc.NLOGN),
    "nouveau_cpu": ("s", _cpu_s, fc.NLOGN),
    "nouveau_index_size": ("bytes", lambda r: (r.get("summary") or {}).get("disk_size"), fc.LINEAR),
}
LABELS = {"nouveau_build_time": "build time", "nouveau_cpu": "CPU (beam, query servers, JVM)",
          "nouveau_index_size": "index size on disk"}


# ---------------------------------------------------------------- pure

def points(builds: Sequence[dict], quantity: str) -> list[tuple[int, float]]:
    """(documents, value) of every build that recorded the quantity; a build's size is its database's
    documents (doc_count when the build began)."""
    get = QUANTITIES[quantity][1]
    out = []
    for r in builds:
        v = get(r)
        n = r.get("size") or r.get("doc_count")
        if n and isinstance(v, (int, float)) and v > 0:
            out.append((int(n), float(v)))
    return sorted(out)


def fit(builds: Sequence[dict], target_docs: int, *, weighting: str = "ordinary", level: float = fc.LEVEL,
        other_load: float | None = None) -> dict:
    """Per engine: every quantity's fit and forecast at target_docs, and the warnings; JSON-ready."""
    langs: dict[str, list[dict]] = {}
    for r in builds:
        langs.setdefault(r.get("language") or "?", []).append(r)
    out = {}
    for lang, rs in langs.items():
        measured = sorted({int(r["size"]) for r in rs if r.get("size")})
        common = fc.warnings(target_docs=target_docs, measured=measured, other_load=other_load)
        qs = {}
        for q, (unit, _, shape) in QUANTITIES.items():
            qs[q] = fc.quantity_forecast(points(rs, q), q, target_docs, weighting=weighting, level=level,
                                         unit=unit, primary=shape)
        errors = sum(int((r.get("summary") or {}).get("index_errors") or 0) for r in rs)
        if errors:
            common.append(f"index() raised {errors:,} exceptions over the sweep's builds: those documents "
                          f"are not in the index")
        out[lang] = {"measured_sizes": measured, "quantities": qs, "warnings": common}
    return out


def backtest(forecasts: dict, built: Sequence[dict]) -> dict:
    """Each prediction against the mean of the target's builds on the same engine: error, inside or not."""
    checks: dict[str, dict] = {}
    for lang, f in forecasts.items():
        mine = [r for r in built if (r.get("language") or "?") == lang]
        for q, e in f["quantities"].items():
            vals = [v for _, v in points(mine, q)]
            if vals and e.get("prediction"):
                checks.setdefault(lang, {})[q] = fc.error_against(e["prediction"], sum(vals) / len(vals))
    return checks


def sizes_for(*, probe_docs: int, probe_seconds: float, budget_s: float, max_docs: int) -> list[int]:
    """--sizes auto: geometric sizes from the probe's, as many as fit the budget (forecast.model.auto_sizes)."""
    return fc.auto_sizes(first_docs=probe_docs, first_seconds=probe_seconds, budget_s=budget_s, max_docs=max_docs)


def check_sizes(counts: Sequence[int], data_docs: int, target_docs: int, repeat: int,
                build_target: bool = False) -> None:
    """Every check on the sizes before the first import (a view forecast's, and the target's data for
    --build-target): one line each."""
    from dragnet.forecast.run import check_sizes as view_checks

    view_checks(counts, data_docs, target_docs, repeat)
    if build_target and target_docs > data_docs:
        raise UsageError(f"--data: {data_docs:,} documents, fewer than {target_docs:,} (--build-target builds the "
                         f"target from it)")


# ---------------------------------------------------------------- I/O

def data_file(data: str | None, target_docs: int, build_target: bool, folder: Path) -> Path:
    """--data, or the declarations generated at the largest size the sweep (and --build-target) can use."""
    if data:
        if not Path(data).is_file():
            raise UsageError(f"--data {data}: no such file")
        return Path(data)
    return sz.generate_source(target_docs if build_target else min(target_docs - 1, 40_000), folder / "data")


def _import(couch: Couch, db: str, prefixes: dict[int, Path], q: int | None,
            on_event: Callable[[str, dict], None]) -> None:
    for n, path in sorted(prefixes.items()):
        ensure_data(couch, sz.size_db(db, n), path, q=q,
                    progress=lambda msg: on_event("import", {"text": msg}))


def _builds(couch: Couch, *, db: str, index: nv.Index, sizes: Sequence[int], languages: Sequence[str],
            rounds: int, folder: Path, rng: random.Random, on_event: Callable[[str, dict], None],
            stage: str) -> list[dict]:
    """Every (size, engine) once a round, in a random order; one dragnet.nouveau file each in folder."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for rnd in range(1, rounds + 1):
        order = [(n, lang) for n in sizes for lang in languages]
        rng.shuffle(order)
        for n, lang in order:
            on_event("build", {"stage": stage, "round": rnd, "rounds": rounds, "size": n, "language": lang})
            res = nv.build(couch, nv.Config(url=couch.url, db=sz.size_db(db, n), index=index, language=lang,
                                            results_dir=None,
                                            extra={"size": n, "round": rnd, "variant": lang, "stage": stage}))
            path = folder / f"nouveau-{n}-r{rnd:02d}-{lang}.json"
            _schema.write(path, res)
            res["results_file"] = str(path)
            on_event("built", res)
            out.append(res)
    return out


def _summary_of(builds: Sequence[dict], folder: Path) -> list[dict]:
    return [{"file": os.path.relpath(r["results_file"], folder), "size": r["size"], "language": r["language"],
             "round": r["round"]} for r in builds]


def run(couch: Couch, *, db: str, index: nv.Index, data: Path, target: dict, languages: Sequence[str],
        sizes: Sequence[int] | None, repeat: int, folder: Path, budget_s: float = 1200.0, q: int | None = None,
        weighting: str = "ordinary", build_target: bool = False, seed: int | None = None, warmup: int = WARMUP,
        on_event: Callable[[str, dict], None] | None = None) -> dict:
    """The sweep, the fit and forecast.json; with build_target, the target built afterwards and the back-test
    added to forecast.json. sizes None: --sizes auto (a probe build sizes the sweep to the budget)."""
    on_event = on_event or (lambda kind, d: None)
    target_docs = int(target["doc_count"])
    from dragnet.forecast.run import data_distribution

    data_docs = data_distribution(data).docs
    if sizes:
        check_sizes(sizes, data_docs, target_docs, repeat, build_target)
    else:
        ext.check_auto(target_docs, min(ext.PROBE_DOCS, data_docs))
    nv.nouveau_config(couch)     # Nouveau off or down: one line before any import
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    load0, t0 = os.getloadavg()[0], time.time()
    probe: list[dict] = []
    first_size = min(sizes) if sizes else min(ext.PROBE_DOCS, data_docs)
    _import(couch, db, sz.write_prefixes(data, [first_size], folder / "data"), q, on_event)
    warm = _builds(couch, db=db, index=index, sizes=[first_size], languages=languages, rounds=warmup,
                   folder=folder / "warmup", rng=rng, on_event=on_event, stage="warm-up") if warmup else []
    if not sizes:
        n = first_size
        probe = _builds(couch, db=db, index=index, sizes=[n], languages=languages, rounds=1,
                        folder=folder / "sweep", rng=rng, on_event=on_event, stage="probe")
        seconds = sum(float(r["summary"]["wall_time_s"]) for r in probe) * repeat
        sizes = sizes_for(probe_docs=n, probe_seconds=seconds, budget_s=budget_s,
                          max_docs=min(data_docs, ext.largest(target_docs)))
        if len(sizes) < 2:
            raise UsageError(f"--budget {budget_s:.0f} s is too small for two sizes (the first build of {n:,} "
                             f"documents took {seconds / repeat:.0f} s)")
        check_sizes(sizes, data_docs, target_docs, repeat, build_target)
        on_event("sizes", {"counts": list(sizes)})
    _import(couch, db, sz.write_prefixes(data, list(sizes), folder / "data"), q, on_event)
    builds = [*probe, *_builds(couch, db=db, index=index, sizes=sizes, languages=languages,
                               rounds=repeat - (1 if probe else 0), folder=folder / "sweep", rng=rng,
                               on_event=on_event, stage="sweep")]
    load1 = os.getloadavg()[0]
    machine = machine_info()
    first = builds[0]
    out = {"schema": SCHEMA, "kind": "nouveau-forecast",
           "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "target": target, "index": {"name": index.name, "definition": index.definition},
           "db": db, "data": str(data), "languages": list(languages), "repeat": repeat,
           "sizes": sorted(set(sizes)), "weighting": weighting, "level": fc.LEVEL, "seed": seed,
           "couchdb": {"url": mask_url(couch.url), "version": (first.get("couchdb") or {}).get("version")},
           "nouveau": {k: v for k, v in (first.get("nouveau") or {}).items()},
           "machine": machine, "load_average": [load0, load1], "seconds": round(time.time() - t0, 1),
           "progress_source": nv.PROGRESS_SOURCE,
           "builds": _summary_of(builds, folder), "warmup_builds": _summary_of(warm, folder)}
    per_cpu = load0 / (machine.get("cpu_count") or 1)
    out["forecasts"] = fit(builds, target_docs, weighting=weighting, other_load=per_cpu)
    _schema.write(folder / SUMMARY, out)      # the forecast is fixed before the target is built
    on_event("forecast", out)
    if build_target:
        _import(couch, db, sz.write_prefixes(data, [target_docs], folder / "data"), q, on_event)
        built = _builds(couch, db=db, index=index, sizes=[target_docs], languages=languages, rounds=repeat,
                        folder=folder / "target", rng=rng, on_event=on_event, stage="target")
        out["target_builds"] = _summary_of(built, folder)
        out["backtest"] = backtest(out["forecasts"], built)
        out["backtest_load_average"] = [load1, os.getloadavg()[0]]
        _schema.write(folder / SUMMARY, out)
    return out


def read(path: str | Path) -> dict:
    """A forecast --nouveau folder or its forecast.json."""
    p = Path(path)
    p = p / SUMMARY if p.is_dir() else p
    if not p.is_file():
        raise DragnetError(f"{path}: no {SUMMARY}")
    return _schema.read(p, _schema.NOUVEAU_FORECAST)
