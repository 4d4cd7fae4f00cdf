"""`bench --mango`: each Mango JSON index built by Mango and, as its JavaScript equivalent, by every engine.

Per index, one bench (dragnet.bench.run) runs the language "mango" (the index's own design document,
language `query`) and the requested engines (dragnet.index.mango.js_design), interleaved and repeated as any
bench; rows (keys and ids) and `_count` reductions are compared with Mango's. Then Mango's docs/s is set
against each engine's with decide's interval and verdict (`versus`).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Callable, Sequence

from dragnet.index import mango as mango
from dragnet.measure import decide
from dragnet.bench.run import Bench, BenchConfig
from dragnet.couchdb.client import connect
from dragnet.errors import UsageError


@dataclasses.dataclass(frozen=True)
class Versus:
    """Mango against one engine on one index: docs/s of Mango over the engine's (above 1: Mango faster), judged
    by the one verdict rule (measure.decide): paired by round where both ran in it (a load that drifts over
    the bench touches both builds of a round alike), else unpaired."""

    index: str
    engine: str
    ratio: float
    ci_low: float | None      # None: the runs give no interval (fewer than 3)
    ci_high: float | None
    n_mango: int
    n_engine: int
    state: str | None = None  # separated, tied or unresolved
    n: int = 0                # pairs (or the smaller side) the interval rests on
    paired: bool = False

    @property
    def decided(self) -> bool:
        """Mango and the engine differ (the interval lies beyond the noise band)."""
        return self.state == decide.SEPARATED

    def as_dict(self) -> dict:
        return dict(dataclasses.asdict(self), decided=self.decided)


def versus(index: str, rates: dict[str, Sequence[float]],
           rounds: dict[str, dict[tuple, float]] | None = None) -> list[Versus]:
    """rates: per language the successful runs' docs/s, "mango" among them; rounds: the same keyed by
    (storage, scenario, repeat), for the per-round ratios (pure)."""
    base = list(rates.get(mango.ENGINE) or [])
    out = []
    for engine, xs in rates.items():
        if engine == mango.ENGINE or not xs or not base:
            continue
        if rounds and rounds.get(mango.ENGINE) and rounds.get(engine):
            iv = decide.ratio_interval(rounds[mango.ENGINE], rounds[engine])
        else:
            iv = decide.unpaired_interval(base, list(xs))
        shown = decide.has_interval(iv)
        out.append(Versus(index, engine, iv.ratio, iv.low if shown else None, iv.high if shown else None,
                          len(base), len(xs), decide.classify(iv), iv.n, iv.paired))
    return out


def rates_of(runs: Sequence[dict]) -> dict[str, list[float]]:
    """Per language, docs/s of the manifest's successful runs."""
    out: dict[str, list[float]] = {}
    for lang, by_round in rounds_of(runs).items():
        out[lang] = list(by_round.values())
    return out


def rounds_of(runs: Sequence[dict]) -> dict[str, dict[tuple, float]]:
    """Per language, docs/s of the successful runs keyed by (storage, scenario, repeat)."""
    out: dict[str, dict[tuple, float]] = {}
    for r in runs:
        if r.get("status") == "ok" and r.get("docs_per_sec_wall"):
            key = (r.get("storage"), r.get("scenario", ""), r.get("repeat"))
            out.setdefault(r["language"], {})[key] = float(r["docs_per_sec_wall"])
    return out


def prepare(url: str, indexes: Sequence[mango.Index], env: dict | None = None) -> list[tuple[mango.Index, object, object]]:
    """(index, Mango design, JavaScript design) for each index; CouchDB judges every definition first."""
    couch = connect(url, env=env)
    return [(ix, mango.validated_design(couch, ix), mango.js_design(ix)) for ix in indexes]


def run(config: BenchConfig, indexes: Sequence[mango.Index], *, on_event: Callable[[str, dict], None] | None = None,
        env: dict | None = None, bench_factory: Callable[..., Bench] = Bench) -> dict:
    """One bench per index, into <results>/<index>/; returns the summary also written to mango.json."""
    if mango.ENGINE in config.languages:
        raise UsageError("--languages with --mango: the engines to set against Mango (mango itself is added)")
    prepared = prepare(config.url, indexes, env)
    root = None
    summary: dict = {"indexes": [], "versus": [], "warnings": []}
    for ix, mdesign, jdesign in prepared:
        cfg = dataclasses.replace(config, languages=[mango.ENGINE, *config.languages], design=jdesign,
                                  mango_design=mdesign, reference=mango.ENGINE, baseline=False)
        bench = bench_factory(cfg, on_event=on_event, env=env)
        if root is None:
            root = Path(config.results_dir) if config.results_dir else bench.dir.parent / f"mango-{bench.id[6:]}"
        bench.dir = root / ix.design_id.split("/", 1)[1]
        if on_event:
            on_event("mango_index", {"name": ix.name, "fields": list(ix.fields),
                                     "partial": ix.partial_filter_selector})
        manifest = bench.run()
        rows = _mango_rows(bench.dir, manifest["runs"])
        warning = mango.empty_warning(ix, rows)
        if warning:
            summary["warnings"].append(warning)
            if on_event:
                on_event("warning", {"message": warning})
        summary["indexes"].append({"name": ix.name, "fields": list(ix.fields),
                                   "partial_filter_selector": ix.partial_filter_selector, "dir": str(bench.dir),
                                   "rows": rows, "js_map": mango.js_map(ix), "manifest": manifest})
        summary["versus"] += [v.as_dict() for v in versus(ix.name, rates_of(manifest["runs"]),
                                                           rounds_of(manifest["runs"]))]
    summary["dir"] = str(root)
    root.mkdir(parents=True, exist_ok=True)
    (root / "mango.json").write_text(json.dumps({k: v for k, v in summary.items()}, indent=1, default=str) + "\n")
    return summary


def _mango_rows(folder: Path, runs: Sequence[dict]) -> int | None:
    """Rows of the first successful Mango build (its results file's summary)."""
    for r in runs:
        if r["language"] == mango.ENGINE and r.get("status") == "ok" and r.get("result_file"):
            res = json.loads((folder / r["result_file"]).read_text())
            return (res.get("summary") or {}).get("rows")
    return None
