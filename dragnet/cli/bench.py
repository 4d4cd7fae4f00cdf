"""`dragnet bench`: run the comparison matrix (languages × repeats × storages) and summarize it."""

from __future__ import annotations

import sys

import click

from dragnet.axes.model import parse_list
from dragnet.bench import run as b
from dragnet.cli.options import (axis_options, db_option, json_option, print_json, server_option, store_option,
                                 url_option)
from dragnet.report import model
from dragnet.report.console import bench_progress, differences_lines
from dragnet.report.render import console as render_console, json as render_json
from dragnet.results.load import load_results


@click.command("bench")
@url_option
@db_option
@click.option("--data", type=click.Path(dir_okay=False), help="JSON-lines data file (.jsonl or .jsonl.gz) to "
              "import once per storage; skipped when the database already holds it.")
@click.option("--views", "views", type=click.Path(file_okay=False), default=None,
              help="Folder with the view in every language (map.js, map.es6.js, map.py, map.erl) "
                   "[default: views/income].")
@click.option("--ddoc", "ddoc_sources", multiple=True, metavar="[LABEL=]SOURCE",
              help="Benchmark your own design document instead of --views: a JSON file, a couchapp folder "
                   "(views/<name>/map.js, reduce.js, views/lib/**, language, options.json), "
                   "URL/db/_design/name or git:REF:path (a file or folder at a git ref). Each language builds "
                   "a copy under a fresh name, which is deleted afterwards; the original and its index are never touched. Every view's rows and reduce "
                   "results are compared with the --reference language's; any difference exits 1.")
@click.option("--mango", "mango_source", default=None, metavar="SOURCE",
              help="Mango JSON indexes (a JSON file of POST /db/_index bodies, or URL/db/_index): each built by "
                   "Mango and, as the equivalent JavaScript view, by every --languages engine; rows compared "
                   "with Mango's and Mango's docs/s set against each engine's.")
@click.option("--view", "view_names", default=None, metavar="NAME,...", help="With --ddoc: only these views.")
@click.option("--strict", is_flag=True, help="Exit 1 on any difference, also one that is the function's fault "
                                             "(an order-dependent reduce, a non-deterministic map).")
@click.option("--reference", default=None, help="With --ddoc: the language the others must equal "
              "[default: the first of --languages].")
@click.option("--languages", default=None,
              help="Comma-separated [default: " + ",".join(b.DEFAULT_LANGUAGES) + "; with --ddoc its own "
                   "language]: " + ", ".join(b.LANGUAGES) + "; with --ddoc any CouchDB language that runs "
                   "the document (javascript, javascript_quickjs, chakra, …).")
@click.option("--repeat", "repeat", default="auto", show_default=True,
              help="Rounds; languages are interleaved across rounds (A B C A B C …). auto: a warm-up round, then "
                   "rounds in a fresh random order until every adjacent pair of languages is separated or tied "
                   "(from the 5th round), --max-runs or --budget (docs/statistics.md); it ranks two or more "
                   "languages of a plain bench, anything else (one language, --storage, --sizes, an axis, a "
                   "scenario, --save-baseline, --baseline) runs 3 rounds.")
@click.option("--budget", "budget", type=float, default=None, metavar="SECONDS",
              help="With --repeat auto: no round starts that would likely end after this [default: 1200].")
@click.option("--storage", "storages", default=None,
              help="disk,tmpfs: restart the CouchDB started by `dragnet couch up` with its data on each storage "
                   "and repeat the matrix.")
@click.option("--storage-label", default=None,
              help="Storage to record for a CouchDB dragnet does not manage (default: unknown).")
@click.option("--backend", type=click.Choice(["local", "docker"]), default=None,
              help="Start a CouchDB with this `dragnet couch` backend on the URL's port when dragnet manages "
                   "none there (stopped at the end); with one already managed, it must match.")
@click.option("--results", "results_dir", type=click.Path(file_okay=False), default=None,
              help="Directory for results files and bench.json [default: results/bench-<UTC time>].")
@click.option("--no-baseline", is_flag=True, help="Do not run the Erlang baseline in each round (no ratios).")
@click.option("--no-ceiling", is_flag=True,
              help="Do not build on the ceiling (the null query server) in each round: no engine shares.")
@click.option("--n", "n", type=click.IntRange(min=1), default=None, help="Replicas when creating the database "
              "(at most the cluster's nodes).")
@click.option("--memory", "memories", default=None,
              help="Scenario axis: memory limits for CouchDB (beam and query servers, page cache included) in a "
                   "cgroup, e.g. unlimited,512m (local backend: root; docker: the container's limit, recreated per "
                   "scenario).")
@click.option("--disk-profile", "profiles", default=None,
              help="Scenario axis: disk throttles on the device holding the data: unlimited, ssd-5000iops, "
                   "san-600iops, hdd-150iops or r_iops:w_iops:r_bps:w_bps (local backend: root; docker: the "
                   "container's device limits on the volume's disk).")
@click.option("--cache", "caches", default=None,
              help="Scenario axis: cold (drop the page cache before each build) and/or warm (pre-read the "
                   "database files).")
@click.option("--sizes", "sizes_text", default=None, metavar="N,N,...",
              help="Size sweep, e.g. 10k,40k,160k,320k: data generated once at the largest size (fixed seed; "
                   "or --data), each size a prefix of it in its own database <db>-<N>; the matrix runs per "
                   "size, then build time, docs/s, index size and peak memory against size, the fitted "
                   "log-log slope and, with --memory, the first size whose database exceeds the limit.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="With --sizes: where to draw the log-log chart [default: <results>/sizes.png].")
@click.option("--save-baseline", "save_baseline", default=None, metavar="NAME",
              help="Save this run in the results store (--store) under NAME, for `compare NAME …`, "
                   "`--baseline NAME` and `history`.")
@click.option("--gate", "gate", default=None, metavar="PCT",
              help="With two --ddoc revisions: run rounds until the second is shown slower than the first by more "
                   "than PCT (exit 1) or not (exit 0), or --max-runs rounds are spent (exit 3).")
@click.option("--metric", type=click.Choice(["cpu", "qs", "wall"]), default="cpu", show_default=True,
              help="With --gate: decide on CPU-seconds per 1,000 documents (of CouchDB and its query servers; "
                   "qs: of the query servers alone, for a change in the map functions) or on wall time.")
@click.option("--max-runs", "max_runs", type=int, default=15, show_default=True,
              help="With --gate or --repeat auto: at most this many rounds.")
@click.option("--baseline", "baseline_name", default=None, metavar="NAME",
              help="Afterwards compare this run with the baseline saved as NAME (see `dragnet compare`).")
@click.option("--nouveau", "nouveau_source", default=None, metavar="FILE",
              help="Build this Nouveau search index (a .js index() function or a .json `nouveau` section) on each "
                   "of --languages (default javascript,javascript_quickjs) and each --config value, --repeat "
                   "rounds in random order; hits and counts compared (docs/nouveau.md).")
@click.option("--query", "queries", multiple=True, metavar="Q",
              help="With --nouveau: a search every build must answer alike [default: *:*].")
@axis_options
@store_option
@server_option
@json_option
def bench_cmd(url, db, data, views, ddoc_sources, mango_source, view_names, strict, reference, languages, repeat,
              budget, storages, storage_label, backend, results_dir, no_baseline, no_ceiling, n, memories, profiles, caches,
              sizes_text, plot_path, save_baseline, gate, metric, max_runs, baseline_name, store_dir,
              nouveau_source, queries, server_opts, as_json, **axis_raw):
    """Benchmark view builds of every language, R times, on each storage; write one results file per build
    plus bench.json, then print the report table."""
    from rich.console import Console

    from dragnet.errors import UsageError
    from dragnet.results import store as store
    from dragnet.servers import available, user

    available.install(server_opts)   # --server: checked, then offered, registered, watched and versioned
    from dragnet.bench import auto as auto

    rounds = auto.parse_repeat(repeat)     # None: auto
    if budget is not None and (rounds is not None or not budget > 0):
        raise UsageError(f"--budget {budget:g}: must be above 0 seconds" if rounds is None or not budget > 0
                         else "--budget goes with --repeat auto")
    repeat = rounds if rounds is not None else auto.FALLBACK_ROUNDS

    if nouveau_source:
        others = [o for o, v in (("--data", data), ("--views", views), ("--ddoc", ddoc_sources),
                                 ("--mango", mango_source), ("--storage", storages), ("--sizes", sizes_text),
                                 ("--gate", gate), ("--memory", memories), ("--disk-profile", profiles),
                                 ("--cache", caches), ("--config-restart", axis_raw.get("restart_configs")))
                  if v]
        if others:
            raise UsageError(f"--nouveau with {', '.join(others)}: not combinable yet (--languages, --repeat, "
                             f"--config, --query and --results are)")
        return _nouveau(url, db, nouveau_source, languages, repeat, axis_raw.get("configs") or [], queries,
                        results_dir, as_json)
    if queries:
        raise UsageError("--query goes with --nouveau")
    sdir = store.default_dir(store_dir)
    baseline_entry = store.baseline(sdir, baseline_name) if baseline_name else None   # a missing name: now
    st = parse_list(storages, "--storage")
    for s in st:
        if s not in ("disk", "tmpfs"):
            raise UsageError(f"--storage {s}: expected disk or tmpfs")
    if st and storage_label:
        raise UsageError("--storage-label is for a CouchDB dragnet does not manage; --storage sets the label")
    design = None
    revisions: dict = {}
    if ddoc_sources:
        from dragnet.build import design as dsg
        from dragnet.axes.ddoc import revision_labels

        if views:
            raise UsageError("--ddoc and --views: give one of them")
        labelled = revision_labels(ddoc_sources)
        loaded = {label: dsg.load(src, views=parse_list(view_names, "--view")) for label, src in labelled.items()}
        design = next(iter(loaded.values()))
        if len(loaded) > 1:      # two or more: a revision axis, each build labelled with its revision
            revisions = loaded
    elif view_names or reference:
        raise UsageError("--view and --reference go with --ddoc")
    indexes = None
    if mango_source:
        from dragnet.build import mango as mango

        if ddoc_sources or views or sizes_text:
            raise UsageError("--mango: not with --ddoc, --views or --sizes")
        indexes = mango.load(mango_source)
        languages = languages or "javascript"
    if languages is None:
        languages = design.language if design is not None else ",".join(
            [*b.DEFAULT_LANGUAGES, *(s.name for s in user.active())])
    langs = parse_list(languages, "--languages")
    if design is None and not mango_source:
        langs, skipped = b.user_languages(langs, views or str(b.DEFAULT_VIEWS))
        for why in skipped:
            Console(stderr=True).print(f"[yellow]skipped[/] {why}", highlight=False)
    if not langs:
        raise UsageError("--languages: no language given")
    from dragnet.couchdb import limits as limits
    from dragnet.bench.scenario import expand

    scenarios = []
    if memories or profiles or caches:
        scenarios = expand(limits.parse_memory_limits(memories or "unlimited"),
                           limits.parse_profiles(profiles or "unlimited"), parse_list(caches, "--cache"))
    from dragnet.axes import q as axis_q
    from dragnet.bench.switch import AxisOptions

    qs = axis_q.parse(axis_raw.get("q_text"))
    q = int(qs[0]) if len(qs) == 1 else None     # one --q is the database's shards
    axis_opts = AxisOptions.from_options(axis_raw, ddoc=revisions)
    if mango_source and axis_opts.get("load"):
        from dragnet.axes.load import refuse_view_reads

        refuse_view_reads(axis_opts.get("load"), "--mango builds Mango indexes, which have no view to query")
    if (len(qs) > 1 or revisions) and sizes_text is not None:   # each size is its own database already
        raise UsageError("--sizes with --q N,N or several --ddoc: not combinable yet")
    config = b.BenchConfig(url=url, db=db, languages=langs, repeat=repeat, storages=st, storage_label=storage_label,
                           data=data, views=views or str(b.DEFAULT_VIEWS), results_dir=results_dir,
                           baseline=not no_baseline, q=q, n=n, backend=backend, design=design, reference=reference,
                           scenarios=scenarios, axes=axis_opts, ceiling=not no_ceiling)
    console = Console(stderr=True)
    total = {"n": 0}
    if plot_path and not sizes_text:
        raise UsageError("--plot goes with --sizes (for a bench's charts: dragnet report DIR --plot)")
    if sizes_text is not None:
        from dragnet.bench import sizes as sz

        counts = sz.parse_sizes(sizes_text)    # a bad size is a one-line error before anything runs
        if baseline_name:    # --save-baseline saves the sweep (every size a cell); comparing is a step of its own
            raise UsageError(f"--sizes with --baseline: not combinable; compare the sweep afterwards: "
                             f"dragnet compare {baseline_name} SWEEP_DIR")
        if st:
            raise UsageError("--sizes and --storage: give one of them (label the storage with --storage-label)")

    on_event = bench_progress(console, total)

    if gate is not None:
        return _gate(config, gate, metric, max_runs, on_event, as_json)
    if indexes is not None:
        return _mango(config, indexes, on_event, total, as_json, strict)
    if rounds is None and auto.applies(config, st, scenarios, axis_opts.axes(backend)) \
            and not (save_baseline or baseline_name):
        return _auto(config, max_runs, budget, on_event, total, as_json, strict)
    if sizes_text is not None:
        total["n"] = len(b.plan(b.with_ceiling(langs, not no_ceiling), repeat, ["x"], baseline=not no_baseline,
                                scenarios=[s.label for s in scenarios] or [""]))
        return _sizes(config, counts, on_event, plot_path, as_json, save_as=save_baseline, sdir=sdir)
    bench = b.Bench(config, on_event=on_event)
    total["n"] = len(b.plan(bench.languages(), repeat, st or ["x"], baseline=not no_baseline,
                            scenarios=[s.label for s in scenarios] or [""], axes=axis_opts.axes(backend)))
    try:
        manifest = bench.run()
    except KeyboardInterrupt as exc:    # Ctrl-C, or SIGTERM/SIGHUP as dragnet.signals.Terminated
        manifest = bench.manifest
        done = sum(1 for r in manifest.get("runs", []) if r["status"] in ("ok", "error"))
        console.print(f"interrupted: {done} finished runs kept in {bench.dir}")
        sys.exit(getattr(exc, "exit_code", 130))

    rep = model.bench_report(bench.dir, manifest, scenarios, store_dir=sdir, save_as=save_baseline,
                             baseline_entry=baseline_entry, notify=lambda text: click.echo(text, err=True))
    if as_json:
        print_json(render_json.bench(rep))
    else:
        render_console.show_bench(rep)
    runs, failed = rep.runs, rep.failed
    from dragnet.build import fault

    if (failed and len(failed) == len(runs)) or fault.blocking_runs(runs, strict):
        sys.exit(1)


def _auto(config, max_runs, budget, on_event, total, as_json, strict) -> None:
    from dragnet.build import fault
    from dragnet.bench import auto as auto
    from dragnet.report import model
    from dragnet.report.render import console as render_console, json as render_json

    total["n"] = "auto"
    out = auto.run_auto(config, max_runs=max_runs, budget_s=auto.BUDGET_S if budget is None else budget,
                        on_event=on_event)
    rep = model.build([str(out.folder)])
    if as_json:
        print_json({**render_json.render(rep), "auto": out.as_dict()})
    else:
        render_console.show(rep)
        for line in out.lines():
            click.echo(line, err=True)
    if not out.order or fault.blocking_runs(out.runs, strict):     # nothing built, or rows that differ
        sys.exit(1)


def _gate(config, gate, metric, max_runs, on_event, as_json) -> None:
    from dragnet.report import compare as c
    from dragnet.report import gate as g

    threshold = c.parse_threshold(gate, "--gate")
    g.check(config, threshold, max_runs)
    try:
        outcome = g.run_gate(config, threshold, metric=metric, max_runs=max_runs, on_event=on_event)
    except KeyboardInterrupt as exc:
        click.echo("interrupted: the finished rounds are kept in their bench folders")
        sys.exit(getattr(exc, "exit_code", 130))
    if as_json:
        print_json({"dirs": [str(d) for d in outcome.dirs], "rounds": outcome.rounds,
                    "comparison": outcome.comparison.to_json()})
    else:
        from dragnet.report.console import render_compare

        render_compare(outcome.comparison)
        click.echo(f"gate: {outcome.rounds} rounds in {', '.join(str(d) for d in outcome.dirs)}")
    sys.exit(outcome.exit_code)


def _mango(config, indexes, on_event, total, as_json, strict=False) -> None:
    """bench --mango: one bench per index, then the design table and Mango against each engine."""
    from dragnet.bench import mango as mb
    from dragnet.report import tables as rp
    from dragnet.report.console import render_design_table

    total["n"] = len(b.plan(["mango", *config.languages], config.repeat, config.storages or ["x"], baseline=False))
    try:
        summary = mb.run(config, indexes, on_event=on_event)
    except KeyboardInterrupt as exc:
        click.echo("interrupted: finished runs are kept", err=True)
        sys.exit(getattr(exc, "exit_code", 130))
    runs = [r for ix in summary["indexes"] for r in ix["manifest"]["runs"]]
    dgroups = rp.build_design_report(load_results([ix["dir"] for ix in summary["indexes"]]))
    if as_json:
        print_json({"dir": summary["dir"], "indexes": summary["indexes"], "versus": summary["versus"],
                    "warnings": summary["warnings"], "report": {"design": rp.design_json(dgroups)}})
    else:
        if dgroups:
            render_design_table(dgroups, title=f"{sum(1 for r in runs if r['status'] == 'ok')} of {len(runs)} "
                                               f"runs ok")
        for line in mb.versus_lines(summary["versus"]):
            click.echo(line)
        for w in summary["warnings"]:
            click.echo(f"warning: {w}")
        for ix in summary["indexes"]:
            for line in differences_lines(ix["dir"], ix["manifest"]["runs"]):
                click.echo(line)
        click.echo(f"results: {summary['dir']}")
    from dragnet.build import fault

    if fault.blocking_runs(runs, strict) or not any(r["status"] == "ok" for r in runs):
        sys.exit(1)


def _sizes(config, counts, on_event, plot_path, as_json, save_as=None, sdir=None) -> None:
    """The size sweep: run it, save it as a baseline (save_as: each size its own cells), print the per-size
    table, the slopes and the memory marks, draw the chart."""
    from pathlib import Path

    from dragnet.bench import sizes as sz

    try:
        summary = sz.run_sweep(config, counts, on_event=on_event)
    except KeyboardInterrupt as exc:
        click.echo("interrupted: finished sizes are kept (sizes.json)", err=True)
        sys.exit(getattr(exc, "exit_code", 130))
    if save_as:
        from dragnet.report.model import saved_runs

        saved_runs(summary["dir"], load_results([summary["dir"]]), sdir, save_as, None,
                   notify=lambda text: click.echo(text, err=True))
    render_sizes(Path(summary["dir"]), plot_path, as_json)


def render_sizes(folder, plot_path=None, as_json=False) -> None:
    """Table, per-size "disk matters?", slopes, memory marks and chart, from a sweep's folder alone."""
    from dragnet.report import sizes_table
    from dragnet.report.console import render_sizes as show

    rep = sizes_table.sweep_report(folder, plot_path)
    print_json(sizes_table.to_json(rep)) if as_json else show(rep)
    if rep["runs"] and rep["n_ok"] == 0:
        sys.exit(1)


def _nouveau(url, db, source, languages, repeat, configs, queries, results_dir, as_json) -> None:
    import time

    from dragnet.axes import config as axis_config
    from dragnet.bench import nouveau as nb
    from dragnet.build import nouveau as nv
    from dragnet.couchdb.client import connect
    from dragnet.errors import UsageError
    from dragnet.report.nouveau import series_lines

    indexes = nv.load_indexes(source)
    if len(indexes) != 1:
        raise UsageError(f"--nouveau {source}: one index per bench for now ({len(indexes)} given)")
    langs = parse_list(languages or ",".join(nv.LANGUAGES), "--languages")
    out = results_dir or f"results/nouveau-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"

    def shown(rnd, variant, res) -> None:
        if res is None:
            click.echo(f"round {rnd}/{repeat}: {variant.label} …", err=True)
        else:
            s = res["summary"]
            click.echo(f"  {s['wall_time_s']:.1f} s, {s['docs_per_s']:,.0f} docs/s, "
                       f"{s['cpu_s_per_1000_docs'] or 0:.3f} CPU s/1k docs", err=True)

    manifest = nb.run(connect(url), db=db, index=indexes[0], languages=langs,
                      settings=axis_config.parse_all(list(configs)), rounds=repeat,
                      queries=tuple(queries) or nv.DEFAULT_QUERIES, results_dir=out,
                      on_build=None if as_json else shown)
    if as_json:
        print_json({k: v for k, v in manifest.items() if k != "results"})
        return
    for line in series_lines(manifest):
        click.echo(line)
    click.echo(f"results: {out}/{nb.MANIFEST} and one file per build")
    if any(c["differences"] for c in manifest["checks"]):
        sys.exit(1)
