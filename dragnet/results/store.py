"""The results store: saved bench runs (named baselines and history) in one folder with an index.

Layout of a store folder:
    index.json        {"schema": "dragnet.store/1", "runs": [entry, ...]}, oldest save first
    index.lock        held (flock) while the index is read, changed and replaced
    runs/<id>/        a copy of the bench folder (results files, bench.json, rows/)

An entry keys the run by what can change its numbers: CouchDB, Erlang/OTP and JS engine versions, the
bench's settings, the design docs' content hashes, the machine and the date; and it keeps each cell's raw
samples (docs/s, index bytes, peak memory) so `history` needs no results file. Writes are atomic: the
run's folder is copied under a temporary name and renamed, the index is written to a temporary file
and renamed over the old one under an exclusive lock, so two benches saving at once both land and a
reader never sees half an index.
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import json
import os
import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from dragnet.errors import DragnetError, UsageError
from dragnet.results import schema as rs

SCHEMA = rs.schema(rs.STORE)
INDEX = "index.json"
LOCK = "index.lock"
DEFAULT = "results/store"
METRICS = {"docs_s": "docs/s (wall)", "index_bytes": "index file bytes", "peak_rss": "peak RSS bytes (beam + QS)"}


def default_dir(given: str | Path | None = None, env: dict | None = None) -> Path:
    """--store when given, else $DRAGNET_STORE, else results/store."""
    return Path(given or (env if env is not None else os.environ).get("DRAGNET_STORE") or DEFAULT)


# ---------------------------------------------------------------- what an entry records (pure)

def versions(result: dict) -> dict:
    """CouchDB, Erlang/OTP and JS engine versions a result recorded (GET / and /_node/_local/_versions)."""
    from dragnet.results.schema import couchdb_versions

    v = couchdb_versions(result)
    return {"couchdb": v["couchdb"], "otp": v["erlang"], "engine": v["javascript_engine"]}


def metrics_of(result: dict) -> dict[str, float | None]:
    """One build's figures history can follow (None when not recorded or the build failed)."""
    from dragnet.results.load import wall_s
    from dragnet.measure.pidstat import rss_peaks_kb
    from dragnet.measure.pidstat import own_memory

    from dragnet.results.load import is_nouveau

    if is_nouveau(result):    # a Nouveau build: its summary, the JVM's index size, pidstat's families with the JVM
        s = result.get("summary") or {}
        if not s.get("ok"):
            return {"docs_s": None, "index_bytes": None, "peak_rss": None}
        return {"docs_s": s.get("docs_per_s"), "index_bytes": s.get("disk_size"),
                "peak_rss": own_memory(rss_peaks_kb(result.get("pidstat")))}
    if wall_s(result) is None:
        return {"docs_s": None, "index_bytes": None, "peak_rss": None}
    from dragnet.results.record import Build

    index = ((result.get("sizes") or {}).get("after") or {}).get("index") or (result.get("index") or {})
    return {"docs_s": Build.of(result).docs_per_s, "index_bytes": (index.get("sizes") or index).get("file"),
            "peak_rss": own_memory(rss_peaks_kb((result.get("pidstat") or {}).get("summary")))}


def entry_for(results: list[dict], manifest: dict | None, *, run_id: str, name: str | None) -> dict:
    """The index entry of one saved run."""
    from dragnet.results.load import axes_of, sort_axes
    from dragnet.results.load import started_at

    manifest = manifest or {}
    cells: dict[tuple, dict] = {}
    for r in sorted(results, key=started_at):
        axes = axes_of(r)
        cell = cells.setdefault(tuple(sorted(axes.items())), {"axes": axes, **{m: [] for m in METRICS}})
        for m, v in metrics_of(r).items():
            if v is not None:
                cell[m].append(v)
    first = min(results, key=started_at) if results else {}
    vers = versions(first)
    hashes = sorted({a["axes"]["ddoc"] for a in cells.values() if a["axes"].get("ddoc")})
    settings = {k: manifest.get(k) for k in ("db", "data", "languages", "repeat", "storages", "scenarios", "size")
                if manifest.get(k) not in (None, [], "")}
    # a view build's "db" is a record with its shards; a Nouveau build's a name, its shards "q"
    settings["shards"] = sorted({r["db"].get("shards") if isinstance(r.get("db"), dict) else r.get("q")
                                 for r in results} - {None})
    machine = manifest.get("machine") or first.get("machine") or {}
    date = manifest.get("started_at") or first.get("started_at")
    return {"id": run_id, "name": name, "date": date,
            "saved_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "path": f"runs/{run_id}", **vers, "ddoc_hashes": hashes, "settings": settings,
            "machine": {k: machine.get(k) for k in ("hostname", "cpu_model", "cpu_count", "mem_total_kb")},
            "cells": [cells[k] for k in sorted(cells, key=lambda k: [(sort_axes([n]), v) for n, v in k])]}


# ---------------------------------------------------------------- the folder

@contextmanager
def locked(store: Path) -> Iterator[None]:
    store.mkdir(parents=True, exist_ok=True)
    with open(store / LOCK, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def read_index(store: str | Path) -> list[dict]:
    """The store's entries ([] for a store not made yet); a damaged index is a one-line error."""
    p = Path(store) / INDEX
    if not p.is_file():
        return []
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DragnetError(f"{p}: not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list):
        raise DragnetError(f"{p}: not a dragnet results store index (schema {SCHEMA!r} expected)")
    try:
        rs.check_schema(doc, p, [rs.STORE])
    except rs.ResultsFileError as exc:   # a damaged store fails the command (exit 1), as it always has
        raise DragnetError(str(exc)) from None
    return doc["runs"]


def _write_index(store: Path, runs: list[dict]) -> None:
    tmp = store / f"{INDEX}.{os.getpid()}.{uuid.uuid4().hex[:6]}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"schema": SCHEMA, "runs": runs}, ensure_ascii=False, indent=1, default=str) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, store / INDEX)
    except BaseException:       # Ctrl-C or a full disk: the old index stays, no temporary file is left
        tmp.unlink(missing_ok=True)
        raise
    fd = os.open(store, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save(store: str | Path, folder: str | Path, name: str | None = None) -> dict:
    """Copy a bench folder (views, or `bench --nouveau`'s) into the store and add its entry to the index;
    returns the entry."""
    from dragnet.results.load import load_results

    store, folder = Path(store), Path(folder)
    if name is not None and (not name.strip() or "/" in name):
        raise UsageError(f"baseline name {name!r}: give a non-empty name without '/'")
    results = load_results([folder], nouveau=True)
    # a bench folder has one manifest; a folder of rounds (one bench each) has one per round: the first
    manifests = sorted(folder.rglob(rs.BENCH_MANIFEST))
    manifest = rs.read(manifests[0], rs.BENCH) if manifests else _nouveau_manifest(folder)
    sizes = sorted({rs.read(m, rs.BENCH).get("size") for m in manifests} - {None})
    if manifest is not None and len(sizes) > 1:    # a size sweep: one bench per size, all of them named
        manifest["size"] = sizes
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    run_id = f"{stamp}-{uuid.uuid4().hex[:8]}"
    runs_dir = store / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    tmp = runs_dir / f".{run_id}.tmp"
    entry = entry_for(results, manifest, run_id=run_id, name=name)
    try:
        shutil.copytree(folder, tmp)
        tmp.rename(runs_dir / run_id)
        with locked(store):
            runs = read_index(store)
            runs.append(entry)
            _write_index(store, runs)
    except BaseException:       # interrupted: no half-copied run and no run the index does not list
        shutil.rmtree(tmp, ignore_errors=True)
        if not any(r["id"] == run_id for r in read_index(store)):
            shutil.rmtree(runs_dir / run_id, ignore_errors=True)
        raise
    return entry


def _nouveau_manifest(folder: Path) -> dict | None:
    """`bench --nouveau`'s manifest in the store's terms (db, rounds as repeat), when the folder has one."""
    found = sorted(folder.rglob("nouveau-bench.json"))
    if not found:
        return None
    m = rs.read(found[0], rs.NOUVEAU_BENCH)
    return {"db": m.get("db"), "repeat": m.get("rounds"), "started_at": m.get("created")}


def names(runs: list[dict]) -> list[str]:
    return sorted({r["name"] for r in runs if r.get("name")})


def baseline(store: str | Path, name: str) -> dict:
    """The latest run saved under `name`; a one-line error listing the names there are."""
    runs = read_index(store)
    hits = [r for r in runs if r.get("name") == name]
    if not hits:
        have = names(runs)
        raise UsageError(f"no baseline {name!r} in {store} ("
                         + (f"baselines: {', '.join(have)}" if have else "it has none; save one with "
                            "bench --save-baseline NAME") + ")")
    return hits[-1]


def load_side(spec: str, store: str | Path) -> tuple[str, list[dict]]:
    """A results file or folder, else a baseline name in the store: (label, results); Nouveau builds too."""
    from dragnet.results.load import load_results

    if Path(spec).exists():
        return spec, load_results([spec], nouveau=True)
    if not (Path(store) / INDEX).is_file() and ("/" in spec or spec.endswith(".json")):
        raise UsageError(f"{spec}: no such file or directory")
    entry = baseline(store, spec)
    return label(entry), load_results([Path(store) / entry["path"]], nouveau=True)


def label(entry: dict) -> str:
    return f"baseline {entry['name']} ({entry['date']})"
