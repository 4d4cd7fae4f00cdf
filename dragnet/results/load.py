"""Reading results: every results file and bench directory into results dicts, and the axes a result is
reported under. Everything that reads results for a report, a comparison or the store starts here; a result's
label and start come from dragnet.results.record.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterable

from dragnet.errors import UsageError
from dragnet.results import schema as rs
from dragnet.results.record import BASELINE_LABEL, Build, result_label, scenario_label, started_at  # noqa: F401
from dragnet.results.record import nouveau_axes  # noqa: F401  (a Nouveau build's axes: the record's)

RESULT_SCHEMA = rs.schema(rs.ADDVIEW)
BENCH_MANIFEST = rs.BENCH_MANIFEST
RECORDING_MARKER = "active_tasks.jsonl"
ALL_VIEWS = "(all)"   # a design document's row for all its views together
UNKNOWN = "unknown"   # the storage of a CouchDB given by URL without --storage-label
# axes shown first, in this order; others after, by name
AXIS_ORDER = ("design", "view", "ddoc", "language", "storage", "scenario", "size", "couchdb", "config", "cpus", "q")


def load_results(paths: Iterable[str | Path], *, nouveau: bool = False) -> list[dict]:
    """Results dicts from files and directories (searched recursively for *.json results, and for recorded
    build folders holding active_tasks.jsonl, read with dragnet.results.addview_results.from_recording).

    A directory's bench.json manifest is not a result; other JSON files that are not
    dragnet.addview/1 results (or, with `nouveau`, dragnet.nouveau/1 index builds) are skipped inside
    directories and refused when named directly.
    """
    kinds = [rs.ADDVIEW, rs.NOUVEAU] if nouveau else [rs.ADDVIEW]
    out: list[dict] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            # folders recorded by a harness (active_tasks.jsonl, meta.json, pidstat.txt …) become results too
            for rec in sorted(x.parent for x in p.rglob(RECORDING_MARKER)):
                out.append(_from_recording(rec))
            for f in sorted(p.rglob("*.json")):
                if any(parent.joinpath(RECORDING_MARKER).is_file() for parent in f.parents):
                    continue
                if f.name == BENCH_MANIFEST:
                    out.extend(failed_runs(rs.read_json(f), f))
                    continue
                doc = rs.read_json(f)
                if rs.kind_of(doc) in kinds:
                    rs.check_schema(doc, f, kinds)   # a newer version is refused, not skipped
                    doc.setdefault("_source", str(f))
                    out.append(doc)
        elif p.is_file():
            doc = rs.read_json(p)
            if rs.kind_of(doc) not in kinds:
                raise UsageError(f"{p}: not a dragnet results file (schema "
                                 f"{' or '.join(repr(rs.schema(k)) for k in kinds)} expected)")
            rs.check_schema(doc, p, kinds)
            doc.setdefault("_source", str(p))
            out.append(doc)
        else:
            raise UsageError(f"{p}: no such file or directory")
    if not out:
        raise UsageError("no results found in " + ", ".join(str(p) for p in paths))
    return out


def failed_runs(manifest: Any, path: Path) -> list[dict]:
    """Runs a bench manifest records as failed without a results file (e.g. a compilation error), as
    minimal results so the report counts them."""
    if not isinstance(manifest, dict) or not isinstance(manifest.get("runs"), list):
        return []
    out = []
    design = manifest.get("design") if isinstance(manifest.get("design"), dict) else None
    for run in manifest["runs"]:
        if not isinstance(run, dict) or run.get("status") != "error" or run.get("result_file"):
            continue
        # a design bench runs the baseline's view file, every other language the design doc
        view = ({"design": {"id": design.get("id"), "views": design.get("views")}}
                if design and run.get("language") != BASELINE_LABEL else {})
        out.append({"schema": RESULT_SCHEMA, "kind": "bench-failure", "_source": str(path), "view": view,
                    "started_at": run.get("started_at"), "storage": run.get("storage"),
                    "bench": {"id": manifest.get("id"), "index": run.get("index"), "language": run.get("language"),
                              "repeat": run.get("repeat"), "storage_label": run.get("storage"),
                              "error": run.get("error")},
                    "summary": {"ok": False, "error": run.get("error")}})
    return out


def _from_recording(folder: Path) -> dict:
    from dragnet.results.addview_results import from_recording

    doc = from_recording(folder)
    doc.setdefault("_source", str(folder))
    return doc


# ---------------------------------------------------------------- axes of one result

def ddoc_hash(doc: dict) -> str:
    """Short content hash of a design doc's indexing part (12 hex digits of sha256 of its sorted JSON)."""
    canon = json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()[:12]


def _text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


def is_nouveau(result: dict) -> bool:
    return rs.kind_of(result) == rs.NOUVEAU


def axes_of(result: dict) -> dict[str, str]:
    """Every axis value labelling a result's build (absent axes are left out; values as text)."""
    if is_nouveau(result):
        return nouveau_axes(result)
    bench = result.get("bench") or {}
    view = result.get("view") or {}
    design = view.get("design") if isinstance(view.get("design"), dict) else None
    if isinstance(bench.get("axes"), dict):
        out = {k: _text(v) for k, v in bench["axes"].items() if v not in (None, "")}
    else:
        out = {"language": result_label(result),
               "storage": str(bench.get("storage_label") or result.get("storage") or UNKNOWN)}
        if scenario_label(result):
            out["scenario"] = str(scenario_label(result))
        if bench.get("size") is not None:
            out["size"] = str(bench["size"])
    if out.get("storage") == UNKNOWN:   # a CouchDB given by URL: not known, so it labels nothing
        del out["storage"]
    # what a bench did not vary still tells two runs apart: the design doc's content and the CouchDB version
    if design and isinstance(design.get("doc"), dict):
        out.setdefault("ddoc", ddoc_hash(design["doc"]))
    version = (result.get("couchdb") or {}).get("version")
    if version:
        out.setdefault("couchdb", str(version))
    if design:
        out.setdefault("design", str(design.get("id")))
        every = [v for v in ((design.get("doc") or {}).get("views") or {}) if v != "lib"]
        built = list(design.get("views") or ())
        out.setdefault("view", ALL_VIEWS if not built or set(built) >= set(every) else ",".join(built))
    return out


def axes_text(axes: dict[str, str], skip: Iterable[str] = ()) -> str:
    skip = set(skip)
    return " ".join(f"{k}={axes[k]}" for k in sort_axes(axes) if k not in skip)


def sort_axes(names: Iterable[str]) -> list[str]:
    return sorted(names, key=lambda k: (AXIS_ORDER.index(k) if k in AXIS_ORDER else len(AXIS_ORDER), k))


def wall_s(result: dict) -> float | None:
    """The build's wall time, or None for a failed build."""
    b = Build.of(result)
    v = b.wall_s
    return v if b.ok and v is not None and v > 0 else None
