"""`dragnet forecast` orchestration: check the target and the sizes, run the sweep with peak-disk sampling,
fit (dragnet.forecast.model) and write forecast.json beside the sweep's results.

Every check on the input happens before the first build; the only check that needs a build is the budget of
`--sizes auto` (estimated from one small build), which fails in one line before the sweep starts.
"""

from __future__ import annotations

import gzip
import math
import os
import statistics
import time
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Callable, Sequence

from dragnet.axes import config as axis_config
from dragnet.bench import run as b
from dragnet.forecast import chase as ch
from dragnet.forecast import extend as ext
from dragnet.forecast import growth as gr
from dragnet.forecast import model as fc
from dragnet.forecast import parts as pt
from dragnet.forecast import shape as shp
from dragnet.forecast import side_by_side as sbs
from dragnet.bench import sizes as sz
from dragnet.couchdb.client import CouchError, connect, db_path, mask_url
from dragnet.measure.disk_peak import compaction_polls, databases_compacted, watched_build
from dragnet.errors import DragnetError, UsageError
from dragnet.couchdb.storage import parse_size
from dragnet.measure.machine import machine_info
from dragnet.data.sample import SizeDistribution, split_db_url
from dragnet.results import schema as _schema

SHARD_SWEEP = "shard-sweep"   # the one-shard sweep's folder beside "sweep"


def shard_config(config: b.BenchConfig, folder: Path) -> b.BenchConfig:
    """The sweep again with one shard per database (`<db>-q1-<N>`): each size is then one shard's index of N
    documents, so a target of D documents in q shards is q such indexes of D/q documents, which the one-shard
    sizes bracket where a sweep at the target's q (N/q per shard) can only extrapolate."""
    return replace(config, q=1, db=f"{config.db}-q1", results_dir=str(folder / SHARD_SWEEP))


def sweep_build() -> Callable[..., dict]:
    """How every build of a forecast's sweeps runs (and a back-test's, so both measure alike): a bench build
    with its peak disk sampled, its index compacted once built (the final index size). A design document's
    rows are not dumped after the build as bench does (to compare engines): a forecast reads none of them,
    and a design document's JavaScript reduces at every group level took minutes a build, outside --budget."""
    return without_rows(watched_build(partial(b.default_build, compact=True)))


def without_rows(inner: Callable[..., dict]) -> Callable[..., dict]:
    """A bench build that dumps no rows (bench passes rows_dir= to compare engines; a forecast reads none)."""
    def build(*args, rows_dir=None, **kw) -> dict:     # noqa: ARG001
        return inner(*args, **kw)
    return build


def parse_budget(text: str) -> float:
    """'20m', '90s', '1h', '300' (seconds) -> seconds."""
    t = str(text).strip().lower()
    mult = {"s": 1, "m": 60, "h": 3600}.get(t[-1:], None)
    try:
        v = float(t[:-1] if mult else t) * (mult or 1)
    except ValueError:
        raise UsageError(f"--budget {text}: expected e.g. 20m, 90s or 1h") from None
    if v <= 0:
        raise UsageError(f"--budget {text}: must be positive")
    return v


def read_target(spec: str, env: dict | None = None) -> dict:
    """GET /db of the target (URL/db): its doc count and sizes; one line when unreachable or empty."""
    base, db = split_db_url(spec)
    try:
        info = connect(base, env=env).get(db_path(db))
    except CouchError as exc:
        raise DragnetError(f"--target {mask_url(spec)}: {exc}") from None
    try:    # design documents count in doc_count but are not mapped
        design = len(connect(base, env=env).get(f"{db_path(db)}/_design_docs").get("rows") or [])
    except CouchError:
        design = 0
    docs = int(info.get("doc_count") or 0) - design
    if docs <= 0:
        raise UsageError(f"--target {mask_url(spec)}: the database is empty")
    return {"url": mask_url(spec), "db": db, "doc_count": docs, "design_docs": design,
            "sizes": info.get("sizes") or {}, "q": (info.get("cluster") or {}).get("q")}


def data_distribution(path: Path, limit: int | None = None) -> SizeDistribution:
    """Sizes of the data file's documents (the sample), the first `limit` lines."""
    dist = SizeDistribution()
    with (gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")) as fh:
        for line in fh:
            line = line.strip()
            if line:
                dist.add(len(line))
                if limit and dist.docs >= limit:
                    break
    return dist


def check_sizes(counts: Sequence[int], data_docs: int, target_docs: int, repeat: int = 1) -> None:
    if counts and counts[-1] > data_docs:
        raise UsageError(f"--sizes: {counts[-1]:,} documents, more than the data holds ({data_docs:,})")
    if counts and counts[-1] >= target_docs:
        raise UsageError(f"target {target_docs:,} documents is not larger than the sample's largest size "
                         f"{counts[-1]:,}: build it instead of forecasting it")
    if counts and (len(set(counts)) < 2 or len(set(counts)) * repeat < 3):
        raise UsageError("--sizes: give at least three sizes (or two with --repeat 2; better four or more): "
                         "the interval needs a residual")


def run(config: b.BenchConfig, *, target: dict, sizes_text: str, budget_s: float, data: Path,
        folder: Path, on_event: Callable[[str, dict], None] | None = None, env: dict | None = None,
        label: str = "", weighting: str = "ordinary", shard_sweep: bool = True, draw: str = "spread",
        target_spec: str | None = None, chase: bool = False) -> dict:
    """The whole forecast; returns (and writes to folder/forecast.json) its JSON. shard_sweep: run the sizes
    on one-shard databases too (shard_config), for the sizes of the index and the disk. draw: each size a
    nested spread sample of the data ("spread"), or its first documents ("prefix", `--prefix`). chase: after
    the sweep, build one shard of the target with compaction held and free (chase_builds), for the CPU and
    the build time (forecast.chase); the sweep then goes on for the sizes only."""
    on_event = on_event or (lambda kind, d: None)
    target_docs = int(target["doc_count"])
    shards = target_q(target, config)
    shard_sweep = shard_sweep and shards != 1   # a one-shard target is its own shard
    dist = data_distribution(data)
    data_docs = dist.docs
    chase_warnings = ch.check(target_docs, shards, data_docs) if chase else []
    for w in chase_warnings:
        on_event("note", {"message": f"warning: {w}"})
    folder.mkdir(parents=True, exist_ok=True)
    build = sweep_build()
    counts: list[int] = []
    if sizes_text != "auto":
        counts = sz.parse_sizes(sizes_text)
        check_sizes(counts, data_docs, target_docs, config.repeat)
    else:
        ext.check_auto(target_docs, min(ext.PROBE_DOCS, data_docs))
    on_event("distribution", {"sample": dist.as_dict(), "target": target})
    # the sample against the target (document size, rows per document of each view), before any build
    checks = shp.check(data, target, config.design, target_spec=target_spec, env=env,
                       container=couchdb_container(config.url, env))
    on_event("sample_checks", checks)
    load0, t0 = os.getloadavg()[0], time.time()
    if sizes_text == "auto":
        probe = min(ext.PROBE_DOCS, data_docs)
        on_event("probe", {"docs": probe})
        summary = sz.run_sweep(replace(config, data=str(data), results_dir=str(folder / "probe")), [probe],
                               on_event=on_event, env=env, build=build, draw=draw)
        _, manifests = sz.load(summary["dir"])
        times = [fc.sweep_seconds(r) for r in sz.sweep_runs(manifests) if r.get("status") == "ok"]
        if not times:
            raise DragnetError(f"the first build ({probe:,} documents) failed; see {folder / 'probe'}")
        per_round = sum(times)       # every language of one round at the probe size
        sweeps = 2 if shard_sweep else 1
        # the first sizes get part of the budget: the rest is for the sizes the sweep goes on to while it
        # cannot decide (next_step), which a sweep that decides early never spends
        counts = fc.auto_sizes(first_docs=probe, first_seconds=per_round * config.repeat * sweeps,
                               budget_s=budget_s * ext.FIRST_SHARE,
                               max_docs=min(data_docs, ext.largest(target_docs)))
        if len(counts) < 2:
            raise UsageError(f"--budget {budget_s:.0f} s is too small for two sizes (one round of {probe:,} "
                             f"documents took {per_round:.0f} s)")
        on_event("sizes", {"counts": counts})
    summary = sz.run_sweep(replace(config, data=str(data), results_dir=str(folder / "sweep")), counts,
                           on_event=on_event, env=env, build=build, draw=draw)
    _, manifests = sz.load(summary["dir"])
    _stop_if_full(summary, manifests)
    shard = None
    if shard_sweep:
        on_event("shard_sweep", {"counts": counts})
        shard = sz.load(sz.run_sweep(replace(shard_config(config, folder), data=str(data)), counts,
                                     on_event=on_event, env=env, build=build, draw=draw)["dir"])
        _stop_if_full(*shard)
    steps: list[dict] = []
    while sizes_text == "auto":
        # the sweep goes on while a goal is undecided and the next doubling fits the budget (forecast.extend)
        out = finish(summary, manifests, target=target, folder=folder, label=label, weighting=weighting,
                     shard=shard)
        # --chase: the next size may not spend what the chase's builds will cost (as this forecast prices them)
        keep = (chase_cost(out, shards, config.repeat, config.languages) or 0.0) if chase else 0.0
        steps.append(next_step(out, manifests, shard, spent_s=time.time() - t0, budget_s=budget_s,
                               max_docs=data_docs, target_docs=target_docs,
                               chase=chase, reserved_s=keep))
        on_event("step", steps[-1])
        if steps[-1]["stop"]:
            break
        n = steps[-1]["next"]
        summary, manifests = add_size(replace(config, data=str(data), results_dir=str(folder / "sweep")), n,
                                      on_event=on_event, env=env, build=build, draw=draw)
        _stop_if_full(summary, manifests)
        if shard_sweep:
            shard = add_size(replace(shard_config(config, folder), data=str(data)), n, on_event=on_event, env=env,
                             build=build, draw=draw)
            _stop_if_full(*shard)
    chased = None
    if chase:
        if sizes_text != "auto":      # the sweep's forecast: the cores its sizes got pace the query servers
            out = finish(summary, manifests, target=target, folder=folder, label=label, weighting=weighting,
                         shard=shard)
        # --sizes auto: the loop's last forecast (of the sizes built) says what the chase would cost
        cost = chase_cost(out, shards, config.repeat, config.languages) if sizes_text == "auto" else None
        spent = time.time() - t0
        if cost is not None and spent + cost > budget_s:
            chased = chase_skipped(cost, spent, budget_s, chase_warnings)
            on_event("note", {"message": f"--chase: {chased['skipped']}"})
            # the sweep stopped with the build time left to the chase: decide again on the same sizes without it
            steps[-1] = next_step(out, manifests, shard, spent_s=spent, budget_s=budget_s,
                                  max_docs=data_docs, target_docs=target_docs)
        else:
            shares = {lang: ((f["quantities"].get("build_time") or {}).get("cores_share") or {}).get("per_size")
                      for lang, f in (out["forecasts"].get("") or {}).items()}
            chase_builds(config, n=ch.shard_docs(target_docs, shards), q=shards, data=data, folder=folder,
                         on_event=on_event, env=env, draw=draw, warnings=chase_warnings, shares=shares,
                         sweep_q=sweep_q(summary))
            chased = load_chase(folder)       # with the warnings chase.json keeps
    load1 = os.getloadavg()[0]
    out = finish(summary, manifests, target=target, folder=folder, label=label, weighting=weighting,
                 load=[load0, load1], seconds=time.time() - t0, sample=dist.as_dict(), shard=shard, chase=chased)
    if steps and chased_model(chased):
        # the sweep stopped with the build time left to the chase, which is built now: decide again with it,
        # as a re-forecast does, so that what holds its build time open (its writer, its beam part, its spread)
        # is said
        steps[-1] = next_step(out, manifests, shard, spent_s=time.time() - t0, budget_s=budget_s,
                              max_docs=data_docs, target_docs=target_docs, chase=True)
    if not steps:
        # given sizes: what a continuing sweep would do next on them, as a re-forecast of them says (from_sweep)
        step = next_step(out, manifests, shard, spent_s=time.time() - t0, budget_s=float("inf"), max_docs=data_docs,
                         target_docs=target_docs, chase=chased_model(chased))
        steps = [ext.given_sizes({**step, "budget_s": None})]
    out["sweep_steps"] = steps
    out["sample_checks"] = checks
    _schema.write(folder / fc.SUMMARY, out)
    return out


def next_step(out: dict, manifests: dict[int, dict], shard: tuple[dict, dict[int, dict]] | None, *,
              spent_s: float, budget_s: float, max_docs: int, target_docs: int, chase: bool = False,
              reserved_s: float = 0.0) -> dict:
    """Whether the sweep can stop (dragnet.forecast.extend.decide), the next doubling's cost measured by the
    largest size's builds in both sweeps, grown as the chosen build-time shape grows to the next size;
    reserved_s of the budget kept for the chase."""
    top = max(manifests)
    runs = [r for r in sz.sweep_runs({top: manifests[top]}) if r.get("status") == "ok"]
    if shard and top in shard[1]:
        runs += [r for r in sz.sweep_runs({top: shard[1][top]}) if r.get("status") == "ok"]
    growth = 1.0
    for per_lang in out["forecasts"].values():
        for f in per_lang.values():
            fit = (f["quantities"].get("build_time") or {}).get("fit")
            if fit and fc.fit_value(fit, top) > 0:
                growth = max(growth, fc.fit_value(fit, top * ext.RATIO) / fc.fit_value(fit, top))
    return ext.decide(out["forecasts"], sorted(manifests), spent_s=spent_s, budget_s=budget_s, max_docs=max_docs,
                      target_docs=target_docs, top_seconds=sum(fc.sweep_seconds(r) for r in runs), growth=growth,
                      settled=ext.BY_CHASE if chase else (), reserved_s=reserved_s)


# ---------------------------------------------------------------- --chase: one shard, compaction held and free

def chase_skipped(cost: float, spent: float, budget_s: float, warnings: Sequence[str] = ()) -> dict:
    """The record of a chase that did not fit the budget: why, and the --budget that would have run it after
    a sweep that cost as much (in whole minutes, up)."""
    need = math.ceil((spent + cost) / 60)
    return {"skipped": f"one shard of the target held and free, and its query servers side by side, would cost "
                       f"about {cost:,.0f} s, {spent:,.0f} s of the {budget_s:,.0f} s budget spent (a --budget of "
                       f"{need:,}m or more runs it after a sweep like this one)",
            "cost_s": cost, **({"warnings": list(warnings)} if warnings else {})}


def chase_cost(out: dict, q: int | None, repeat: int, languages: Sequence[str],
               cores: int | None = None) -> float | None:
    """About what the chase costs: per chased language, a held and a free build of one shard per repeat, each
    taken as one q-th of the target's forecast CPU-seconds (a one-shard build uses about one core), and the
    query servers side by side (forecast.side_by_side_cost)."""
    if not q:
        return None
    chased = [f for lang, f in (out["forecasts"].get("") or {}).items() if lang in languages]
    cpus = [((f["quantities"].get("build_cpu") or {}).get("prediction") or {}).get("value") for f in chased]
    cpus = [c for c in cpus if c]
    if not cpus:
        return None
    target = int((out.get("target") or {}).get("doc_count") or 0)
    return 2 * repeat * sum(cpus) / q + sum(side_by_side_cost(f, target, q, repeat, cores) for f in chased)


def side_by_side_cost(f: dict, target_docs: int, q: int, repeat: int, cores: int | None = None) -> float:
    """About what the query servers side by side cost: the sweep's query-server CPU-seconds (by part) at its
    largest size, scaled to a fifth of the target, over the machine's cores (at most q) side by side and one
    core alone, per repeat; paced at the target's time between a shard's documents, the processes side by side
    take at least a fifth of the target's forecast build time."""
    points = (((f.get("by_part") or {}).get("parts") or {}).get("query_servers") or {}).get("points") or []
    if not points or not target_docs:
        return 0.0
    top = max(n for n, _ in points)
    cpu = statistics.fmean(v for n, v in points if n == top) * (target_docs / sbs.SHARE) / top
    side = min(q, cores or os.cpu_count() or 1)
    paced = ((f["quantities"].get("build_time") or {}).get("prediction") or {}).get("value") or 0.0
    return max(sbs.REPEATS, repeat) * (max(cpu / side, paced / sbs.SHARE) + cpu / q)


def chase_builds(config: b.BenchConfig, *, n: int, q: int, data: Path, folder: Path,
                 on_event: Callable[[str, dict], None], env: dict | None, draw: str,
                 warnings: Sequence[str] = (), shares: dict | None = None, sweep_q: int | None = None) -> Path:
    """Build one shard of the target (n documents, a one-shard database) per repeat with smoosh's view channels
    held on every node and free, alternating which goes first; the node's own values are put back after, also
    on Ctrl-C and SIGTERM. Only the languages asked are chased (no Erlang baseline, no ceiling). Writes
    chase/chase.json as each build ends, with the check's warnings (a re-forecast reads them there); returns
    the chase folder. shares (per language, the sweep's cores per size) and sweep_q pace the query servers side
    by side at the target's time between a shard's documents."""
    root = folder / ch.FOLDER
    root.mkdir(parents=True, exist_ok=True)
    design = getattr(config.design, "doc", None)
    record = {"q": q, "shard_docs": n, "languages": list(config.languages), "held": list(ch.HELD),
              "javascript_reduces": ch.javascript_reduces(design), "builds": [],
              **({"warnings": list(warnings)} if warnings else {})}
    held = [axis_config.parse(t) for t in ch.HELD]
    couch = connect(config.url, env=env)
    applied = axis_config.Applied()
    on_event("chase", {"docs": n, "q": q, "repeat": config.repeat})
    try:
        nodes = axis_config.nodes(couch)
        for rep in range(1, config.repeat + 1):
            for mode in (ch.MODES if rep % 2 else ch.MODES[::-1]):
                if mode == "held":
                    for s in held:
                        for node in nodes:
                            applied.set(couch, s, s.values[0], node)
                else:
                    applied.restore(couch)
                on_event("chase_build", {"mode": mode, "repeat": rep, "docs": n})
                sub = root / f"{mode}-{rep}"
                # the bench's build without compacting the index after it: the model reads the build alone
                sz.run_sweep(replace(config, q=1, db=f"{config.db}-chase", data=str(data), results_dir=str(sub),
                                     baseline=False, ceiling=False, repeat=1), [n],
                             on_event=on_event, env=env, build=without_rows(b.default_build), draw=draw)
                # what the node read back: the evidence the held build ran held (the results file has no settings)
                record["builds"].append({"mode": mode, "repeat": rep, "dir": sub.name,
                                         "settings": {s.name: axis_config.read(couch, s, nodes[0]) for s in held}})
                _schema.write(root / ch.RECORD, record)
    finally:
        applied.restore(couch)
    # the model without the factor (chase.json has none yet): the target's time between a shard's documents
    paces = {}
    for lang, m in ((load_chase(folder) or {}).get("languages") or {}).items():
        paces[lang] = sbs.gaps(ch.over_sweep_cores(m, (shares or {}).get(lang), sweep_q))
    record["side_by_side"] = query_servers_side_by_side(config, q=q, target_docs=n * q, data=data, root=root,
                                                        on_event=on_event, env=env, paces=paces)
    _schema.write(root / ch.RECORD, record)
    return root


def query_servers_side_by_side(config: b.BenchConfig, *, q: int, target_docs: int, data: Path, root: Path,
                               on_event: Callable[[str, dict], None], env: dict | None,
                               paces: dict | None = None) -> dict:
    """Each chased language's query servers, q side by side and one alone (forecast.side_by_side), on a spread
    draw of a fifth of the target's documents: {language: record}, or {language: {"absent": why}}."""
    from dragnet.data.sample import write_spread
    from dragnet.index.design import Design
    from dragnet.qsbench.instructions import NoQueryServer
    from dragnet.qsbench.run import prepare_docs, read_jsonl

    out: dict = {}
    lines = None
    each = sbs.docs_each(target_docs, q)
    container = couchdb_container(config.url, env)
    for spec in b.resolve_languages(config.languages, config.views, design=config.design is not None):
        if spec.language == "erlang":
            out[spec.name] = {"absent": "Erlang map functions run inside CouchDB, in no query-server process"}
            continue
        if config.design is not None:
            design = Design({**config.design.doc, "language": spec.language}, config.design.source)
        else:
            design = Design({"_id": "_design/side-by-side", "language": spec.language,
                             "views": {"v": {"map": spec.path(config.views).read_text()}}}, str(spec.path(config.views)))
        try:
            if lines is None:
                drawn = write_spread(data, [each * q], root / "side-by-side" / "data")[each * q]
                lines = prepare_docs((dict(d, _id=str(d.get("_id") or f"side-{i}"))
                                      for i, d in enumerate(read_jsonl(drawn))), where=str(drawn)).lines
            out[spec.name] = sbs.measure(design, lines, q, max(sbs.REPEATS, config.repeat), env=env,
                                          on_event=on_event, container=container,
                                          paced=(paces or {}).get(spec.name))
        except NoQueryServer as exc:
            out[spec.name] = {"absent": str(exc) if container else
                              f"no {spec.language} query server on this machine to run side by side "
                              f"(a CouchDB release, or DRAGNET_COUCHJS)"}
        except DragnetError as exc:      # a query server that failed: the forecast goes on without the factor
            out[spec.name] = {"absent": str(exc).splitlines()[0][:300]}
    return out


def couchdb_container(url: str, env: dict | None) -> str | None:
    """The container of the CouchDB at url when dragnet runs it in one (its query servers are that container's,
    not this machine's), else None."""
    from urllib.parse import urlsplit

    from dragnet.couchdb import control as ctl

    try:
        inst = ctl.load_state(urlsplit(url).port or 5984, env)
    except (OSError, DragnetError):      # an unreadable state file: not known to be dragnet's
        return None
    if inst is None or inst.backend != "docker":
        return None
    return inst.container or inst.container_name


def chased_model(chased: dict | None) -> bool:
    """Whether the chase left a model that settles the build time (load_chase's record, or a skipped one)."""
    return bool((chased or {}).get("languages"))


def load_chase(folder: Path, target_docs: int | None = None) -> dict | None:
    """A forecast folder's chase builds (chase/chase.json and each build's results file): the model per
    language (forecast.chase.model), or None when the forecast ran none, or ran them for a target of another
    size per shard than target_docs (a re-forecast for another target)."""
    root = folder / ch.FOLDER
    path = _schema.kept(root / ch.RECORD)
    if not path.is_file():
        return None
    record = _schema.read_json(path)
    if target_docs is not None and ch.shard_docs(target_docs, int(record["q"])) != int(record["shard_docs"]):
        return None
    per_lang: dict[str, list[dict]] = {}
    couchdb = None
    for entry in record["builds"]:
        sub = root / entry["dir"]
        _, manifests = sz.load(sub)
        couchdb = couchdb or _couchdb_of(sub, manifests)
        for r in runs_with_cpu(sub, manifests):
            if r.get("status") != "ok":
                continue
            per_lang.setdefault(r["language"], []).append(
                {"mode": entry["mode"], "repeat": entry["repeat"], "docs": r.get("size"), "cpu_s": r.get("cpu_s"),
                 "cpu_beam_s": r.get("cpu_beam_s"), "cpu_query_servers_s": r.get("cpu_query_servers_s"),
                 "wall_s": r.get("wall_time_s"), "results_file": f"{entry['dir']}/size-{r['size']}/{r['result_file']}",
                 "compaction_polls": r.get("compaction_polls"), "polls": r.get("polls"),
                 "writer_tail_s": r.get("writer_tail_s")})
    models, why = {}, {}
    for lang, builds in per_lang.items():
        try:
            models[lang] = ch.model(builds, int(record["q"]), js_reduces=record.get("javascript_reduces") or (),
                                    side_by_side=(record.get("side_by_side") or {}).get(lang), couchdb=couchdb)
        except ValueError as exc:
            why[lang] = str(exc)
    return {"dir": str(root), "q": record["q"], "shard_docs": record["shard_docs"], "held": record["held"],
            "languages": models, **({"failed": why} if why else {}),
            **({"warnings": record["warnings"]} if record.get("warnings") else {})}


def add_size(config: b.BenchConfig, n: int, **kw) -> tuple[dict, dict[int, dict]]:
    """Build one more size into a recorded sweep's folder: its sizes.json then holds the earlier sizes and n."""
    folder = Path(config.results_dir)
    before, before_m = sz.load(folder)
    sz.run_sweep(config, [n], **kw)
    after, after_m = sz.load(folder)
    summary = {**after, "sizes": sorted({*before["sizes"], *after["sizes"]}),
               "per_size": {**before["per_size"], **after["per_size"]},
               "manifests": {**before["manifests"], **after["manifests"]}}
    manifests = {**before_m, **after_m}
    sz.save(folder, summary, manifests)
    return {**summary, "dir": str(folder)}, manifests


def _stop_if_full(summary: dict, manifests: dict[int, dict]) -> None:
    """A build that ran out of disk ends the forecast in one line (the results files are written)."""
    full = next((r["error"] for r in sz.sweep_runs(manifests) if str(r.get("error") or "").startswith("out of disk")),
                None)
    if full:
        left = [c["error"].split(" to DELETE ")[1].split("?")[0] for m in manifests.values()
                for c in m.get("cleanups") or [] if " to DELETE " in str(c.get("error"))]
        note = f"; CouchDB could not delete {', '.join(left)} on the full disk: delete it after freeing space" \
            if left else ""
        raise DragnetError(f"{full} (results in {summary['dir']}){note}")


def target_q(target: dict, config: b.BenchConfig | None = None, summary: dict | None = None) -> int | None:
    """The target's shards: its own (GET /db cluster.q, or --target-q), else the sweep's (--q, or what its
    databases were created with)."""
    qs = [target.get("q"), config.q if config else None,
          *[p.get("q") for p in ((summary or {}).get("per_size") or {}).values()]]
    return next((int(q) for q in qs if q), None)


def sweep_q(summary: dict) -> int | None:
    """The shards of the sweep's databases (sizes.json per_size), when they all had the same."""
    qs = {p.get("q") for p in (summary.get("per_size") or {}).values()}
    return int(qs.pop()) if len(qs) == 1 and None not in qs else None


def finish(summary: dict, manifests: dict[int, dict], *, target: dict, folder: Path, label: str = "",
           weighting: str = "ordinary", load: list[float] | None = None, seconds: float | None = None,
           sample: dict | None = None, shard: tuple[dict, dict[int, dict]] | None = None,
           machine: dict | None = None, chase: dict | None = None) -> dict:
    """Fit the sweep and write forecast.json (also used to re-forecast a recorded sweep). shard: the one-shard
    sweep's summary and manifests (sizes.load), when there is one; machine: the one the sweep ran on, when
    it is not this one; chase: the chase builds' models (load_chase), or why none ran."""
    machine = machine or machine_info()
    runs = runs_with_cpu(Path(summary["dir"]), manifests)
    shard_runs = runs_with_cpu(Path(shard[0]["dir"]), shard[1]) if shard else []
    shards = target_q(target, summary=summary) if shard_runs else None
    db_bytes = sz.db_sizes(summary)
    target_docs = int(target["doc_count"])
    target_db = (target.get("sizes") or {}).get("file")
    # --target-docs: the database's own line, through the files as the sweep's imports left them
    compacted = sorted({int(r["size"]) for r in runs
                        if (summary["per_size"].get(str(r.get("size"))) or {}).get("db") in (r.get("dbs_compacted") or ())})
    line = None if target_db else fc.db_line(db_bytes, target_docs, left_out=compacted)
    target_active = (target.get("sizes") or {}).get("active")
    if line:
        target_db = int(line["value"])
        target_active = fc.db_active_at(sz.db_sizes(summary, "active"), target_docs)
    mem = (machine.get("mem_total_kb") or 0) * 1024
    limits = {sc["label"]: sc.get("memory_limit") for m in manifests.values() for sc in m.get("scenarios") or []}
    # the others' load: the load average just before the sweep (during it, the sweep's own CouchDB counts:
    # beam's threads alone took the 1-minute average to 15 on 2 cores here)
    per_cpu = load[0] / (machine.get("cpu_count") or 1) if load else None
    first = next(iter(manifests.values()), {})
    couchdb = _couchdb_of(Path(summary["dir"]), manifests)
    out = {"schema": fc.SCHEMA, "target": {**target, "db_bytes": target_db, **({"db_line": line} if line else {})},
           "sample": sample,
           "sweep_dir": summary["dir"], "sizes": sorted(int(n) for n in manifests), "weighting": weighting,
           "draw": summary.get("draw") or sz.draw_record("prefix"),
           "level": fc.LEVEL, "machine": machine, "load_average": load, "seconds": seconds,
           "couchdb": couchdb, "settings": {"storages": first.get("storages"), "managed": first.get("managed"),
                                            "scenarios": first.get("scenarios"), "languages": first.get("languages"),
                                            "repeat": first.get("repeat")},
           "memory_bytes": mem, "db_bytes": {str(k): v for k, v in db_bytes.items()},
           "shard_sweep": {"dir": shard[0]["dir"], "sizes": sorted(int(n) for n in shard[1]),
                           "target_q": shards} if shard_runs else None,
           "chase": chase, "forecasts": {}}
    # one forecast per variant of the sweep (a --memory scenario, a --cpus value): never a fit across them,
    # and never one in between (cores are not extrapolated)
    def by_variant(rs: list[dict]) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = {}
        for r in rs:
            out.setdefault(" ".join(x for x in (label, sz.variant(r)) if x), []).append(r)
        return out

    shard_variants = by_variant(shard_runs)
    for name, rs in by_variant(runs).items():
        # the page-cache check against the variant's memory limit, else the machine's memory
        limit = limits.get(rs[0].get("scenario") or "") or mem
        one = shard_variants.get(name, [])
        out["forecasts"][name] = fc.forecast_sweep(rs, target_docs, weighting=weighting, memory_bytes=limit,
                                                   db_bytes=db_bytes, target_db_bytes=target_db, target_db_line=line,
                                                   target_db_active=target_active,
                                                   other_load=per_cpu, shard_runs=one, shards=shards,
                                                   cores=machine.get("cpu_count"),
                                                   target_q=target_q(target, summary=summary), couchdb=couchdb)
        # why the cost per document grows, from what the builds recorded (their results files hold the CPU)
        for lang, f in out["forecasts"][name].items():
            f["growth"] = gr.explain([gr.row(r["size"], r, _result_of(Path(summary["dir"]), r)) for r in rs
                                      if (r.get("language") or "?") == lang and r.get("status") == "ok"])
            by_part = pt.forecast([r for r in rs if (r.get("language") or "?") == lang], target_docs,
                                  target_compaction=_compaction_at_target(f), weighting=weighting)
            if by_part:
                f["by_part"] = by_part
            by_bytes = pt.by_bytes([r for r in rs if (r.get("language") or "?") == lang], target_docs,
                                   _index_bytes_at_target(f))
            if by_bytes:
                f["by_bytes"] = by_bytes
            if not name and lang in ((chase or {}).get("languages") or {}):
                shares = ((f["quantities"].get("build_time") or {}).get("cores_share") or {}).get("per_size")
                f["chase"] = ch.over_sweep_cores(chase["languages"][lang], shares, sweep_q(summary), load)
    if (chase or {}).get("languages"):    # one model per language in forecast.json: the forecast's
        out["chase"] = {**chase, "languages": {lang: (out["forecasts"].get("") or {}).get(lang, {}).get("chase", m)
                                               for lang, m in chase["languages"].items()}}
    folder.mkdir(parents=True, exist_ok=True)
    _schema.write(folder / fc.SUMMARY, out)
    return out


def _index_bytes_at_target(f: dict) -> dict | None:
    """The bytes the target's build appends to its index files, as the disk forecast counts them
    (growth_forecast's "index_bytes")."""
    return ((f["quantities"].get("disk_growth") or {}).get("parts") or {}).get("index_bytes")


def _compaction_at_target(f: dict) -> float | None:
    """The compaction files at the target's peak, as the disk forecast's part counts them (growth_forecast)."""
    comp = ((f["quantities"].get("disk_growth") or {}).get("parts") or {}).get("compaction") or {}
    return (comp.get("prediction") or {}).get("value")


def runs_with_cpu(folder: Path, manifests: dict[int, dict]) -> list[dict]:
    """A sweep's runs, each with "cpu_s": the CPU-seconds of beam and the query servers from its results file
    (dragnet.forecast.growth.row), where it recorded them, and its threads' run, run-queue wait and interval
    ("cpu_run_s", "cpu_wait_s", "cpu_interval_s": how much it waited for a CPU, model.contention), and beam's
    and the query servers' apart ("cpu_beam_s", "cpu_query_servers_s": the forecast by part, forecast.parts),
    how many of its polls saw a view compaction, of how many ("compaction_polls", "polls": the chase's free
    builds, chase.model), the databases smoosh compacted meanwhile ("dbs_compacted": db_line leaves their sizes
    out) and its wall after the last indexer task ("writer_tail_s", chase.writer_tail)."""
    out = []
    for r in sz.sweep_runs(manifests):
        result = _result_of(folder, r) if r.get("status") == "ok" else None
        row = gr.row(r.get("size") or 0, r, result) if r.get("status") == "ok" else {}
        cpu = [v for v in (row.get("beam_s"), row.get("query_server_s")) if v is not None]
        sched = {f"cpu_{k}": row[k] for k in ("run_s", "wait_s", "interval_s") if row.get(k) is not None}
        parts = {k: row[f] for k, f in (("cpu_beam_s", "beam_s"), ("cpu_query_servers_s", "query_server_s"))
                 if row.get(f) is not None}
        polls = (result or {}).get("polls")
        seen = ({"compaction_polls": compaction_polls(polls), "polls": len(polls),
                 "dbs_compacted": databases_compacted(polls)}
                if polls is not None else {})
        tail = ch.writer_tail(result) if result else None
        if tail is not None:
            seen["writer_tail_s"] = tail
        out.append({**r, "cpu_s": sum(cpu), **parts, **sched, **seen} if cpu else {**r, **sched, **seen})
    return out


def _result_of(folder: Path, run: dict) -> dict | None:
    """A sweep run's results file (kept as is, or gzipped as the back-tests in docs/ keep theirs)."""
    if not run.get("result_file"):
        return None
    path = folder / f"size-{run['size']}" / run["result_file"]
    for f in (path, Path(f"{path}.gz")):
        try:
            return _schema.read_json(f)
        except _schema.ResultsFileError:
            continue
    return None


def recorded_checks(folder: Path, target_docs: int) -> dict | None:
    """The sample checks the forecast that built this folder's sweep made (its forecast.json's "sample_checks"),
    marked as recorded, for the same target: a re-forecast builds nothing and maps nothing, so it shows them as
    they were."""
    path = _schema.kept(folder / fc.SUMMARY)
    if not path.is_file():
        return None
    try:
        recorded = _schema.read_json(path)
    except _schema.ResultsFileError:
        return None
    checks = recorded.get("sample_checks")
    # against another target than the one they compared the sample with, they do not hold
    same = (recorded.get("target") or {}).get("doc_count") == target_docs
    return {**checks, "recorded": str(path)} if checks and same else None


def from_sweep(folder: Path, target: dict, *, out_dir: Path | None = None, weighting: str = "ordinary") -> dict:
    """Re-forecast a recorded sweep (no builds): a sweep folder (sizes.json), or a forecast's results folder
    (sweep/ and, when it ran, shard-sweep/). Sizes at or above the target are held out; when the sweep built
    the target size itself, each prediction is compared with those builds (the back-test)."""
    shard = None
    chase = load_chase(folder, int(target["doc_count"]))
    checks = recorded_checks(folder, int(target["doc_count"]))
    if _schema.kept(folder / "sweep" / sz.SUMMARY).is_file():
        if _schema.kept(folder / SHARD_SWEEP / sz.SUMMARY).is_file():
            s_summary, s_manifests = sz.load(folder / SHARD_SWEEP)
            shard = ({**s_summary, "dir": str(folder / SHARD_SWEEP)}, s_manifests)
        folder = folder / "sweep"
    summary, manifests = sz.load(folder)
    summary = {**summary, "dir": str(folder)}
    n = int(target["doc_count"])
    # a size within 0.1 % of the target is the target built (a database counts its import marker)
    held = next((k for k in sorted(manifests) if abs(k - n) <= n / 1000), None)
    used = {k: m for k, m in manifests.items() if k < n and k != held}
    if len(used) < 2:
        raise UsageError(f"{folder}: fewer than two sizes below the target {n:,}")
    # the machine and its load as the sweep's benches recorded them (this one may be another, and idle)
    recorded = sorted([*used.values(), *(shard[1].values() if shard else [])], key=lambda m: m.get("started_at") or "")
    out = finish({**summary, "per_size": {k: v for k, v in summary["per_size"].items() if int(k) in used}}, used,
                 target=target, folder=out_dir or folder, weighting=weighting, shard=shard, chase=chase,
                 load=recorded_load(recorded), machine=next((m["machine"] for m in recorded if m.get("machine")), None))
    # what the continuing sweep would have done next on these sizes (forecast.extend): decided, or which
    # larger size it would build and what that costs (the recorded sweep's sizes were given, not chosen)
    shard_used = (shard[0], {k: m for k, m in shard[1].items() if k in used}) if shard else None
    step = next_step(out, used, shard_used, spent_s=0.0, budget_s=float("inf"), max_docs=n - 1, target_docs=n,
                     chase=chased_model(chase))
    out["sweep_steps"] = [ext.given_sizes({**step, "budget_s": None})]     # no budget: none was given
    if checks is not None:
        out["sample_checks"] = checks
    _schema.write(Path(out_dir or folder) / fc.SUMMARY, out)
    if held is not None:
        actual = [r for r in runs_with_cpu(folder, {held: manifests[held]}) if r.get("status") == "ok"]
        checks = {}
        for name, per_lang in out["forecasts"].items():
            for lang, f in per_lang.items():
                built = [r for r in actual if r["language"] == lang and sz.variant(r) == name]
                for q, e in f["quantities"].items():
                    vals = [v for _, v in fc.points(built, q)]
                    if vals and e.get("prediction"):
                        actual_mean = sum(vals) / len(vals)
                        check = fc.error_against(e["prediction"], actual_mean)
                        for other in ("whole_database", "from_cpu"):   # the same quantity another way
                            if e.get(other):
                                check[other] = fc.error_against(e[other], actual_mean)
                        for other in ("by_part", "by_bytes", "chase"):   # build_cpu and build_time otherwise
                            if (f.get(other) or {}).get(q):
                                check[other] = fc.error_against(f[other][q], actual_mean)
                        checks.setdefault(" ".join(x for x in (name, lang) if x), {})[q] = check
        out["backtest"] = checks
        _schema.write(Path(out_dir or folder) / fc.SUMMARY, out)
    return out


def recorded_load(manifests: Sequence[dict]) -> list[float] | None:
    """[first, last] 1-minute load average the benches recorded as each began (manifest "machine"), in the order
    they ran: a re-forecast's load is the sweep's, not the machine's now."""
    marks = sorted((m.get("started_at") or "", ((m.get("machine") or {}).get("load_average") or [None])[0])
                   for m in manifests)
    loads = [la for _, la in marks if isinstance(la, (int, float))]
    return [loads[0], loads[-1]] if loads else None


def _couchdb_of(folder: Path, manifests: dict[int, dict]) -> dict | None:
    """The CouchDB the sweep ran on (version, settings), as its first results file recorded it (kept as is, or
    gzipped beside its manifest as the back-tests in docs/ keep theirs)."""
    for r in sz.sweep_runs(manifests):
        result = _result_of(folder, r)
        if result is not None:
            return result.get("couchdb")
    return None


def target_from_docs(docs: int, db_bytes: str | None = None, q: int | None = None) -> dict:
    return {"url": None, "db": None, "doc_count": int(docs),
            "sizes": {"file": parse_size(db_bytes)} if db_bytes else {}, "q": q}


def find_forecasts(paths: Sequence[str | Path]) -> list[dict]:
    """forecast.json files given, or at the top of (or one level under) the given folders, for `report`."""
    found = []
    for p in map(Path, paths):
        files = [p] if p.is_file() and p.name == fc.SUMMARY else \
            sorted([*p.glob(fc.SUMMARY), *p.glob(f"*/{fc.SUMMARY}")]) if p.is_dir() else []
        for f in files:
            try:
                found.append(_schema.read(f, _schema.FORECAST))
            except _schema.ResultsFileError:
                continue
    return found
