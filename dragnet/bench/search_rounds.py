"""`bench --nouveau`: Nouveau index builds on several engines and live settings, interleaved in rounds.

Each round builds every variant (an engine × a value of each `--config` setting) once, in a random order;
each build is one dragnet.index.search_build result file in the bench folder, with a manifest beside them. Live
settings (`--config nouveau/batch_size=1,20,100`) are set before their builds and put back afterwards, also
on Ctrl-C. Every build's check queries are compared with the first build's (hits and counts).
"""

from __future__ import annotations

import itertools
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from dragnet.axes import config as _config
from dragnet.index import search_build as nv
from dragnet.couchdb.client import Couch, mask_url
from dragnet.errors import UsageError
from dragnet.measure import decide
from dragnet.results import schema as _schema

MANIFEST = "nouveau-bench.json"


@dataclass(frozen=True)
class Variant:
    language: str
    settings: tuple[tuple[_config.Setting, str], ...] = ()

    @property
    def label(self) -> str:
        return " ".join([self.language, *(s.label(v) for s, v in self.settings)])


def variants(languages: list[str], settings: list[_config.Setting]) -> list[Variant]:
    for s in settings:
        if s.restart:
            raise UsageError(f"--config-restart {s.name}: with --nouveau only live settings (--config)")
    combos = itertools.product(*[[(s, v) for v in s.values] for s in settings]) if settings else [()]
    return [Variant(lang, tuple(c)) for c in combos for lang in languages]


def costs(builds: list[dict], metric: str) -> dict[str, dict[int, float]]:
    """Per variant, per round: CPU-seconds (beam, query servers and JVM) or wall seconds per 1,000 docs."""
    out: dict[str, dict[int, float]] = {}
    for r in builds:
        s = r.get("summary") or {}
        docs = r.get("doc_count") or 0
        value = (s.get("cpu_s_per_1000_docs") if metric == "cpu"
                 else (s["wall_time_s"] / docs * 1000 if docs and s.get("wall_time_s") else None))
        if value:
            out.setdefault(r["variant"], {})[int(r["round"])] = float(value)
    return out


def verdicts(builds: list[dict]) -> dict:
    """The order of the variants on CPU and on wall time, each adjacent pair judged (measure.decide)."""
    out = {}
    for metric in ("cpu", "wall"):
        names, pairs = decide.order(costs(builds, metric), metric=metric)
        out[metric] = {"order": names, "text": decide.order_text(names, pairs),
                       "pairs": [p.as_dict() for p in pairs]}
    return out


def run(couch: Couch, *, db: str, index: nv.Index, languages: list[str], settings: list[_config.Setting],
        rounds: int, queries: tuple[str, ...], results_dir: str, interval: float = 1.0,
        seed: int | None = None, on_build: Callable[[int, Variant, dict | None], None] | None = None,
        design: str | None = None) -> dict:
    """All rounds; the manifest (also written to results_dir/nouveau-bench.json)."""
    plan = variants(languages, settings)
    out = Path(results_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    applied = _config.Applied()
    builds: list[dict] = []
    t0 = time.time()
    try:
        _config.validate(couch, [s for s in settings])
        for rnd in range(1, rounds + 1):
            order = list(plan)
            rng.shuffle(order)
            for v in order:
                if on_build:
                    on_build(rnd, v, None)
                for s, value in v.settings:
                    applied.set(couch, s, value)
                res = nv.build(couch, nv.Config(url=couch.url, db=db, index=index, language=v.language,
                                                queries=queries, interval=interval, results_dir=None,
                                                extra={"variant": v.label, "round": rnd,
                                                       "settings": {s.name: val for s, val in v.settings},
                                                       **({"design": design} if design else {})}))
                path = out / f"nouveau-r{rnd:02d}-{_slug(v.label)}.json"
                _schema.write(path, res)
                res["results_file"] = str(path)
                builds.append(res)
                if on_build:
                    on_build(rnd, v, res)
    finally:
        applied.restore(couch)
    reference = builds[0] if builds else None
    checks = [{"variant": r["variant"], "round": r["round"], "differences": nv.compare_answers(reference, r),
               "num_docs": (r.get("summary") or {}).get("num_docs")} for r in builds]
    manifest = {
        "schema": _schema.schema(_schema.NOUVEAU_BENCH),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "couchdb": {"url": mask_url(couch.url)}, "db": db, "index": index.name,
        "variants": [v.label for v in plan], "rounds": rounds, "seed": seed, "queries": list(queries),
        "wall_s": round(time.time() - t0, 1),
        "builds": [r["results_file"] for r in builds],
        "checks": checks, "reference": reference["variant"] if reference else None,
        "verdicts": verdicts(builds),
    }
    _schema.write(out / MANIFEST, manifest)
    manifest["results"] = builds
    return manifest


def _slug(label: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in label)[:80]


# ---------------------------------------------------------------- a design doc's `nouveau` indexes beside its views

SUBFOLDER = "nouveau"   # in a bench folder: one folder per index, each a `bench --nouveau` series


def languages_for(languages: list[str], design_language: str) -> list[str]:
    """The bench's languages that can run an index() function (Nouveau's are JavaScript); else the design
    doc's own language where it can, else couchjs."""
    js = [lang for lang in languages if lang in nv.LANGUAGES]
    return js or [design_language if design_language in nv.LANGUAGES else "javascript"]


def unavailable(couch: Couch) -> str | None:
    """Why Nouveau cannot build here (its server off or not answering), or None."""
    from dragnet.errors import DragnetError

    try:
        nv.nouveau_config(couch)
    except DragnetError as exc:
        return str(exc)
    return None


def beside_views(couch: Couch, *, db: str, design: str, indexes: dict, languages: list[str], rounds: int, folder: str | Path,
                 on_build: Callable[[int, Variant, dict | None], None] | None = None) -> list[dict]:
    """Every index of a design doc's `nouveau` section built `rounds` times on each language, after the
    views, on the same database; one manifest per index under folder/nouveau/NAME/."""
    out = []
    for name, definition in indexes.items():
        out.append(run(couch, db=db, index=nv.Index(name, definition), languages=languages, settings=[],
                       rounds=rounds, queries=nv.DEFAULT_QUERIES,
                       results_dir=str(Path(folder) / SUBFOLDER / _slug(name)), on_build=on_build, design=design))
    return out
