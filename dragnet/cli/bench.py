"""`dragnet bench`: run the comparison matrix (languages × repeats × storages) and summarize it."""

from __future__ import annotations

import sys

import click

from dragnet.axes.model import parse_list
from dragnet.bench import run as b
from dragnet.results.schema import RunEntry
from dragnet.cli.options import (axis_options, db_option, json_option, print_json, server_option, store_option,
                                 url_option)
from dragnet.report.console import differences_lines
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
@click.option("--repeat", "repeat", type=click.IntRange(min=1), default=3, show_default=True,
              help="Rounds; languages are interleaved across rounds (A B C A B C …).")
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
@click.option("--metric", type=click.Choice(["cpu", "wall"]), default="cpu", show_default=True,
              help="With --gate: decide on CPU-seconds per 1,000 documents or on wall time.")
@click.option("--max-runs", "max_runs", type=int, default=15, show_default=True,
              help="With --gate: at most this many rounds.")
@click.option("--baseline", "baseline_name", default=None, metavar="NAME",
              help="Afterwards compare this run with the baseline saved as NAME (see `dragnet compare`).")
@axis_options
@store_option
@server_option
@json_option
def bench_cmd(url, db, data, views, ddoc_sources, mango_source, view_names, strict, reference, languages, repeat,
              storages, storage_label, backend, results_dir, no_baseline, no_ceiling, n, memories, profiles, caches,
              sizes_text, plot_path, save_baseline, gate, metric, max_runs, baseline_name, store_dir, server_opts,
              as_json, **axis_raw):
    """Benchmark view builds of every language, R times, on each storage; write one results file per build
    plus bench.json, then print the report table."""
    from rich.console import Console

    from dragnet.report import tables as rp
    from dragnet.errors import UsageError
    from dragnet.results import store as store
    from dragnet.report.console import render_design_table, render_table
    from dragnet.servers import available, user

    available.install(server_opts)   # --server: checked, then offered, registered, watched and versioned

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

    def on_event(kind: str, d: dict) -> None:
        if kind == "start":
            console.print(f"[{d['index'] + 1}/{total['n']}] {d['storage']}"
                          f"{' ' + d['scenario'] if d.get('scenario') else ''}"
                          f"{''.join(f' {k}={v}' for k, v in (d.get('axes') or {}).items())} round {d['repeat'] + 1}: "
                          f"{d['language']} …")
        elif kind == "done":
            if d["status"] == "not_applicable":
                console.print(f"    not applicable: {d['error']}", highlight=False)
            elif d["status"] == "oom":
                console.print(f"    [yellow]{d['error']}[/yellow]", markup=True, highlight=False)
            elif d["status"] == "ok":
                ratio = d.get("ratio_to_baseline")
                cmp = d.get("comparison")
                same = "" if not cmp else (f", rows: {cmp['note']}" if cmp.get("differences") is None else
                                          f", rows vs {cmp['reference']}: {cmp['differences']} differences in "
                                          f"{cmp['rows_compared']}" + (f" ({rp.classes_text(cmp['classes'])})"
                                                                       if cmp.get("classes") else ""))
                fig = RunEntry.of(d)
                console.print(f"    wall {fig.wall_time_s:.1f} s, {fig.docs_per_sec_wall:.0f} docs/s"
                              + (f", ×{ratio:.2f} baseline" if ratio is not None else "") + same)
            else:
                console.print(f"    [red]failed[/red]: {d['error']}", markup=True, highlight=False)
        elif kind == "begin":
            total["n"] = d["runs"]     # the bench's own plan (a baseline it cannot run is left out)
            console.print(f"{d['runs']} runs, results in {d['dir']}")
        elif kind == "start_couch":
            console.print(f"starting CouchDB ({d['backend']}, data on {d['storage']}) …")
        elif kind == "stop_couch":
            console.print(f"stopping the CouchDB started for this bench ({d['backend']})")
        elif kind == "restart":
            if d.get("axes"):
                console.print("restarting CouchDB with " + ", ".join(f"{k}={v}" for k, v in d["axes"].items()) + " …")
            elif d.get("scenario"):
                console.print(f"recreating the CouchDB container with the limits of {d['scenario']} …")
            else:
                console.print(f"restarting CouchDB with its data on {d['storage']} …")
        elif kind == "import":
            console.print(d["message"])
        elif kind == "generate":
            console.print(f"generating {d['count']:,} documents (seed {d['seed']}) …")
        elif kind == "mango_index":
            console.print(f"mango index {d['name']}: fields {', '.join(d['fields'])}"
                          + (f", partial filter {d['partial']}" if d.get("partial") else ""))
        elif kind == "warning":
            console.print(f"[yellow]warning[/yellow]: {d['message']}", markup=True, highlight=False, soft_wrap=True)
        elif kind == "size":
            console.print(f"size {d['count']:,} documents (database {d['db']})")

    if gate is not None:
        return _gate(config, gate, metric, max_runs, on_event, as_json)
    if indexes is not None:
        return _mango(config, indexes, on_event, total, as_json, strict)
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

    runs = manifest["runs"]
    failed = [r for r in runs if r["status"] not in ("ok", "oom", "not_applicable")]
    docs = load_results([bench.dir]) if any(r["result_file"] for r in runs) else []
    groups, dgroups = rp.build_report(docs), rp.build_design_report(docs)
    from dragnet.report import share as share

    loads = share.shown(share.workloads(docs))
    from dragnet.report import load as report_load

    under_load = report_load.section(docs)
    cmp = saved_runs(bench.dir, docs, sdir, save_baseline, baseline_entry)
    if as_json:
        extra = {}
        if scenarios:
            from dragnet.bench.scenario import disk_matters, disk_summary, reference_label
            ref = reference_label(scenarios)
            extra = disk_summary(disk_matters(runs, ref), ref)
        report = rp.to_json(groups)
        if dgroups:
            report["design"] = rp.design_json(dgroups)
        report["engine_share"] = share.to_json(loads)
        if under_load:
            report["load"] = under_load
        if cmp is not None:
            extra["baseline"] = cmp.to_json()
        print_json({"dir": str(bench.dir), "manifest": manifest, "report": report, **extra})
    else:
        # an OOM-killed run is a scenario's result, not a failure, but it is not an ok build either
        ooms = sum(1 for r in runs if r["status"] == "oom")
        title = f"{sum(1 for r in runs if r['status'] == 'ok')} of {len(runs)} runs ok" + (
            f", {ooms} OOM-killed" if ooms else "")
        if groups:
            render_table(groups, title=title)
        if dgroups:
            render_design_table(dgroups, title=title)
        if scenarios:
            from dragnet.bench.scenario import disk_matters, reference_label
            from dragnet.report.console import render_disk_matters
            ref = reference_label(scenarios)
            render_disk_matters(disk_matters(runs, ref), ref)
        if loads:
            click.echo("\n".join(share.lines(loads)))
        if under_load:
            click.echo("\n".join(report_load.lines(under_load)))
        for r in failed:
            click.echo(f"failed: {r['storage']} round {r['repeat'] + 1} {r['language']}: {r['error']}")
        for line in differences_lines(bench.dir, runs):
            click.echo(line)
        if cmp is not None:
            from dragnet.report.console import render_compare as render
            render(cmp)
        click.echo(f"results: {bench.dir} (`dragnet report {bench.dir} --plot DIR` for charts)")
    from dragnet.build import fault

    if (failed and len(failed) == len(runs)) or fault.blocking_runs(runs, strict):
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


def saved_runs(folder, docs, sdir, save_as, baseline_entry):
    """--save-baseline: the run into the store; --baseline: its comparison with the saved baseline (or None)."""
    from dragnet.report import compare as c
    from dragnet.results import store as store

    if save_as and docs:     # saved first: a comparison that finds nothing in common loses nothing
        entry = store.save(sdir, folder, save_as)
        click.echo(f"saved as baseline {save_as} in {sdir} ({entry['path']})", err=True)
    if baseline_entry is None or not docs:
        return None
    return c.compare(load_results([sdir / baseline_entry["path"]]), docs, old_label=store.label(baseline_entry),
                     new_label=str(folder))


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
        saved_runs(summary["dir"], load_results([summary["dir"]]), sdir, save_as, None)
    render_sizes(Path(summary["dir"]), plot_path, as_json)


def render_sizes(folder, plot_path=None, as_json=False) -> None:
    """Table, per-size "disk matters?", slopes, memory marks and chart, from a sweep's folder alone."""
    from dragnet.report import sizes_table
    from dragnet.report.console import render_sizes as show

    rep = sizes_table.sweep_report(folder, plot_path)
    print_json(sizes_table.to_json(rep)) if as_json else show(rep)
    if rep["runs"] and rep["n_ok"] == 0:
        sys.exit(1)
