"""`dragnet forecast` as one library call: `forecast(request, on_event)` checks the options (one-line errors
before anything runs), runs the sweep (forecast.run.run) or re-forecasts a recorded one (--from-sweep), and
returns forecast.json's data and its folder; report/forecast_report and report/render print it.

Events go to on_event(kind, data): "note" (message: what is left out), and the sweep's own (forecast.run.run;
report.terminal.forecast_progress shows them).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from dragnet.errors import UsageError

Events = Callable[[str, dict], None]


@dataclass(frozen=True)
class ForecastRequest:
    """The options of `dragnet forecast`, as given (text lists unparsed: `forecast` checks them)."""

    url: str
    db: str
    data: str | None = None
    views: str | None = None
    ddoc_source: str | None = None
    view_names: str | None = None
    target: str | None = None
    target_docs: str | None = None
    target_bytes: str | None = None
    target_q: int | None = None
    sizes_text: str = "auto"
    budget: str = "20m"
    languages: str = "javascript"
    no_baseline: bool = False
    no_ceiling: bool = False
    repeat: int = 1
    q: int | None = None
    shard_sweep: bool = True
    memories: str | None = None
    cpus_text: str | None = None
    load_text: str | None = None
    weighting: str = "ordinary"
    results_dir: str | None = None
    from_sweep: str | None = None
    nouveau_source: str | None = None
    function_profile: bool = False   # --profile: perf on the sweep's builds (a view forecast has no target build)
    build_target: bool = False
    server_opts: tuple = ()
    prefix: bool = False      # each size the data's first documents (the old way), not a nested spread sample
    chase: bool = False       # one shard of the target, compaction held and free: the CPU and build time


@dataclass
class ForecastOutcome:
    """forecast.json's data (forecast.run) and the folder its charts go to."""

    data: dict
    folder: Path
    nouveau: bool = False     # a Nouveau index's forecast (forecast.nouveau), not a view's


def forecast(r: ForecastRequest, on_event: Events | None = None) -> ForecastOutcome:
    """Check the request, then sweep and forecast (or re-forecast --from-sweep)."""
    from dragnet.axes.model import parse_list
    from dragnet.bench import run as b
    from dragnet.bench import sizes as sz
    from dragnet.forecast import run as fr
    from dragnet.servers import available

    on_event = on_event or (lambda kind, data: None)
    if r.function_profile and (r.nouveau_source or r.from_sweep):
        raise UsageError(f"--profile profiles the sweep's view builds: not with "
                         f"{'--nouveau' if r.nouveau_source else '--from-sweep'}")
    if r.nouveau_source:
        given = [o for o, v in (("--views", r.views), ("--ddoc", r.ddoc_source), ("--memory", r.memories),
                                ("--cpus", r.cpus_text), ("--load", r.load_text), ("--from-sweep", r.from_sweep)) if v]
        if given:
            raise UsageError(f"--nouveau: not with {', '.join(given)}")
        return _nouveau(r, on_event)
    if r.build_target:
        raise UsageError("--build-target goes with --nouveau")
    if r.chase:
        given = [o for o, v in (("--memory", r.memories), ("--cpus", r.cpus_text), ("--load", r.load_text),
                                ("--from-sweep", r.from_sweep)) if v]
        if given:   # a re-forecast reads the chase a recorded forecast built; variants are not chased
            raise UsageError(f"--chase: not with {', '.join(given)}")
    available.install(r.server_opts)   # --server: checked, then offered, registered, watched and versioned

    _check_target(r)
    if r.ddoc_source and r.views:
        raise UsageError("--ddoc and --views: give one of them")
    if r.view_names and not r.ddoc_source:
        raise UsageError("--view goes with --ddoc")
    budget_s = fr.parse_budget(r.budget)
    from dragnet.axes import load as axis_load

    loads = axis_load.parse((r.load_text,) if r.load_text else None)    # a bad load: refused before anything
    if r.from_sweep:
        out = fr.from_sweep(Path(r.from_sweep), _target(r), out_dir=Path(r.results_dir) if r.results_dir else None,
                            weighting=r.weighting)
        return ForecastOutcome(out, Path(r.results_dir or r.from_sweep))
    if r.sizes_text != "auto":
        sz.parse_sizes(r.sizes_text)
    design = None
    if r.ddoc_source:
        from dragnet.index import design as dsg
        design = dsg.load(r.ddoc_source, views=parse_list(r.view_names, "--view") or None)
        if "nouveau" in design.dropped:
            on_event("note", {"message": f"note: --ddoc {r.ddoc_source}: its Nouveau indexes are not forecast yet, "
                                         f"only its views"})
    langs = parse_list(r.languages, "--languages")
    tgt = _target(r)
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    folder = Path(r.results_dir or Path("results") / f"forecast-{stamp}")
    if r.data:
        source = Path(r.data)
        if not source.is_file():
            raise UsageError(f"--data {r.data}: no such file")
    else:   # the largest size the forecast can use: below the target; --chase: one of the target's shards
        from dragnet.forecast.chase import shard_docs

        shards = tgt.get("q") or r.q
        chased = shard_docs(tgt["doc_count"], shards) if r.chase and shards else 0
        source = sz.generate_source(min(tgt["doc_count"] - 1, max(40_000, chased)), folder / "data")
    from dragnet.axes import cpus as axis_cpus
    from dragnet.axes.scenario import expand
    from dragnet.bench.switch import AxisOptions
    from dragnet.couchdb import limits

    scenarios = expand(limits.parse_memory_limits(r.memories), [], []) if r.memories else []
    config = b.BenchConfig(url=r.url, db=r.db, languages=langs, repeat=r.repeat, views=r.views or str(b.DEFAULT_VIEWS),
                           baseline=not r.no_baseline, ceiling=not r.no_ceiling, q=r.q, design=design,
                           scenarios=scenarios,
                           axes=AxisOptions({axis_cpus.KIND.name: axis_cpus.KIND.parse({"cpus_text": r.cpus_text}),
                                             axis_load.KIND.name: loads}), profile=r.function_profile)
    out = fr.run(config, target=tgt, sizes_text=r.sizes_text, budget_s=budget_s, data=source, folder=folder,
                 on_event=on_event, weighting=r.weighting, shard_sweep=r.shard_sweep,
                 draw="prefix" if r.prefix else "spread", target_spec=r.target, chase=r.chase)
    return ForecastOutcome(out, folder)


def _check_target(r: ForecastRequest) -> None:
    """One target, given one way (a one-line error before anything runs)."""
    if (r.target is None) == (r.target_docs is None):
        raise UsageError("give one of --target URL/db and --target-docs N")
    if (r.target_bytes or r.target_q) and not r.target_docs:
        raise UsageError("--target-bytes and --target-q go with --target-docs")


def _target(r: ForecastRequest) -> dict:
    """The database forecast for: --target's (GET /db), or --target-docs with its size and shards."""
    from dragnet.couchdb.limits import parse_count
    from dragnet.forecast import run as fr

    return fr.read_target(r.target) if r.target else fr.target_from_docs(parse_count(r.target_docs), r.target_bytes,
                                                                         r.target_q)


def _nouveau(r: ForecastRequest, on_event: Events) -> ForecastOutcome:
    """`forecast --nouveau`: checked, then a sweep of Nouveau builds and its forecast (forecast.nouveau)."""
    import time

    from dragnet.axes.model import parse_list
    from dragnet.bench import sizes as sz
    from dragnet.index import search_build as nv
    from dragnet.couchdb.client import connect
    from dragnet.forecast import search_sweep as fn
    from dragnet.forecast import run as fr

    indexes = nv.load_indexes(r.nouveau_source)
    if len(indexes) != 1:
        raise UsageError(f"--nouveau {r.nouveau_source}: one index per forecast ({len(indexes)} given)")
    _check_target(r)
    sizes = None if r.sizes_text == "auto" else sz.parse_sizes(r.sizes_text)
    budget_s = fr.parse_budget(r.budget)
    tgt = _target(r)
    folder = Path(r.results_dir or f"results/forecast-nouveau-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")
    source_data = fn.data_file(r.data, tgt["doc_count"], r.build_target, folder)
    out = fn.run(connect(r.url), db=r.db, index=indexes[0], data=source_data, target=tgt,
                 languages=parse_list(r.languages, "--languages"), sizes=sizes, repeat=r.repeat, folder=folder,
                 budget_s=budget_s, q=r.q, weighting=r.weighting, build_target=r.build_target,
                 on_event=lambda kind, d: on_event(f"nouveau_{kind}", dict(d, build_target=r.build_target)))
    return ForecastOutcome(out, folder, nouveau=True)
