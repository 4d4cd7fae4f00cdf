"""`dragnet forecast`: forecast a view build of the target's size from a sweep of smaller builds."""

from __future__ import annotations

from pathlib import Path

import click

from dragnet.axes.cpus import KIND as CORES
from dragnet.cli.options import (data_file, db_option_saying, json_option, kind_option, print_json,
                                 sample_count_option, server_option, url_option)
from dragnet.report.terminal import forecast_progress


@click.command("forecast")
@url_option
@db_option_saying("Prefix of the sweep's databases: DB-N per size, DB-q1-N "
                  'for the one-shard sweep (the database forecast for is --target).')
@click.option("--data", metavar="FILE|URL/db", default=None,
              help="JSON-lines data the sweep's sizes are drawn from, or URL/db: a sample of that database "
                   "(--sample-count), drawn once into cache/ [default: generated at the largest size].")
@sample_count_option
@click.option("--views", type=click.Path(file_okay=False), default=None,
              help="Folder with the view in every language [default: views/income].")
@click.option("--ddoc", "ddoc_source", default=None, metavar="SOURCE",
              help="Your design document instead of --views (JSON file, couchapp folder or URL/db/_design/x).")
@click.option("--view", "view_names", default=None, metavar="NAME,...", help="With --ddoc: only these views.")
@click.option("--target", default=None, metavar="URL/db", help="The database to forecast for (GET /db: its "
              "documents and file size). One of --target and --target-docs is required.")
@click.option("--target-docs", default=None, help="Documents to forecast for, instead of --target "
              "(e.g. 200k). One of the two is required.")
@click.option("--target-bytes", default=None, help="With --target-docs: the target database's file size.")
@click.option("--target-q", type=click.IntRange(min=1), default=None,
              help="With --target-docs: the target's shards [default: the sweep's --q].")
@click.option("--sizes", "sizes_text", default="auto", show_default=True, metavar="auto|N,N,...",
              help="Sweep sizes; auto: at least 4 geometric sizes that fit --budget, from a first small build, "
                   "then the next doubling while the shapes cannot decide the target and the budget allows.")
@click.option("--budget", default="20m", show_default=True, help="Time for the sweep's builds with --sizes auto.")
@click.option("--languages", default="javascript", show_default=True,
              help="Comma-separated languages (the Erlang baseline runs too unless --no-baseline).")
@click.option("--no-baseline", is_flag=True, help="Do not build the Erlang baseline.")
@click.option("--no-ceiling", is_flag=True, help="Do not build the ceiling (the null query server): no bound on "
              "what any engine could save at the target's size.")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True, help="Builds per size.")
@click.option("--q", "q", type=click.IntRange(min=1), default=None, help="Shards of the sweep's databases.")
@click.option("--shard-sweep/--no-shard-sweep", default=True, show_default=True,
              help="Build the sizes on one-shard databases too: the index and disk sizes are then forecast per "
                   "shard of the target, which the one-shard sizes can reach (about twice the builds).")
@click.option("--chase", is_flag=True,
              help="Also build one shard of the target (its documents / q) on a one-shard database twice, with "
                   "CouchDB's compaction daemon held and free: the CPU-seconds and build time as q − 1 shards "
                   "unchased and one chased (docs/forecast.md). Sets smoosh's view channels on every node for "
                   "the held build and puts them back.")
@click.option("--prefix", is_flag=True,
              help="Each size the data's first documents (the old way), not a nested seeded sample spread over "
                   "the whole data.")
@click.option("--memory", "memories", default=None, metavar="SIZE,…",
              help="Sweep under these memory limits too (scenarios, e.g. unlimited,512m): one forecast per limit, "
                   "each checked against the page cache it leaves.")
@kind_option(CORES, help="Sweep with CouchDB on these core counts (restarts it): one forecast per value; never one "
                          "for a core count not measured.")
@click.option("--load", "load_text", default=None, metavar="LOAD[;LOAD]",
              help="Sweep with the application's traffic beside every build (e.g. 'none;writes=200/s,reads=100/s'): "
                   "one forecast per load, as for --cpus.")
@click.option("--weighting", type=click.Choice(["ordinary", "1/n"]), default="ordinary", show_default=True,
              help="Least squares weights; 1/n when the spread grows with the documents.")
@click.option("--results", "results_dir", type=click.Path(file_okay=False), default=None,
              help="Results folder [default: results/forecast-<UTC time>].")
@click.option("--from-sweep", "from_sweep", type=click.Path(file_okay=False, exists=True), default=None,
              help="Re-forecast a recorded sweep (a `bench --sizes` or forecast sweep folder) without building; "
                   "when it built the target size too, print each prediction's error against it (a back-test).")
@click.option("--nouveau", "nouveau_source", default=None, metavar="FILE",
              help="Forecast a Nouveau index build (an index() function .js, or a design doc's nouveau section "
                   ".json) instead of a view.")
@click.option("--build-target", is_flag=True, help="With --nouveau: after the forecast is written, build the "
              "target's size from --data and compare (a back-test).")
@server_option
@json_option
@click.option("--profile", "function_profile", is_flag=True,
              help="Sample CouchDB's functions with perf during the sweep's builds (a view forecast builds no "
                   "target): folded stacks beside each size's results.")
def forecast_cmd(url, db, data, sample_count, views, ddoc_source, view_names, target, target_docs, target_bytes, target_q,
                 sizes_text, budget, languages, no_baseline, no_ceiling, repeat, q, shard_sweep, prefix, memories,
                 cpus_text, load_text, weighting, results_dir, from_sweep, nouveau_source, build_target, server_opts,
                 as_json, function_profile, chase):
    """Build the view at a few sizes, fit fixed + per-document cost and forecast time, index size, peak disk,
    bytes written and peak memory at the target, with 95 % prediction intervals and warnings."""
    from rich.console import Console

    from dragnet.runner.forecast import ForecastRequest, forecast

    data = data_file(data, sample_count)

    request = ForecastRequest(url=url, db=db, data=data, views=views, ddoc_source=ddoc_source, view_names=view_names,
                              target=target, target_docs=target_docs, target_bytes=target_bytes, target_q=target_q,
                              sizes_text=sizes_text, budget=budget, languages=languages, no_baseline=no_baseline,
                              no_ceiling=no_ceiling, repeat=repeat, q=q, shard_sweep=shard_sweep, memories=memories,
                              cpus_text=cpus_text, load_text=load_text, weighting=weighting, results_dir=results_dir,
                              from_sweep=from_sweep, nouveau_source=nouveau_source, build_target=build_target,
                              server_opts=server_opts, function_profile=function_profile, prefix=prefix,
                              chase=chase)
    progress = forecast_progress(Console(stderr=True), quiet=as_json)

    def on_event(kind: str, d: dict) -> None:
        if kind == "note":
            click.echo(d["message"], err=True)
        else:
            progress(kind, d)

    outcome = forecast(request, on_event)
    if outcome.nouveau:
        return _show_nouveau(outcome.data, outcome.folder, as_json)
    _show(outcome.data, outcome.folder, as_json)


def _show(out: dict, folder: Path, as_json: bool) -> None:
    """The forecast's charts into folder, then its report (report.forecast_report) as text, or its data."""
    from dragnet.report import forecast_report
    from dragnet.report.render import files, json, text

    from dragnet.report import profile_text      # --profile: the sweep's builds by kind, their levers

    files.forecast_charts(out, folder)
    rep = forecast_report.build(out)
    profiled = profile_text.sweep_results(folder)
    if as_json:
        print_json({**json.forecast(rep), **({"profile": profile_text.bench_json(profiled)} if profiled else {})})
    else:
        click.echo(text.forecast(rep))
        for line in profile_text.bench_lines(profiled):
            click.echo(line)


def _show_nouveau(out: dict, folder: Path, as_json: bool) -> None:
    """A Nouveau forecast (forecast.nouveau): its report (report.nouveau_forecast) as text, or its data."""
    from dragnet.forecast import search_sweep as fn
    from dragnet.report import search_forecast as rnf

    if as_json:
        print_json(out)
        return
    click.echo(rnf.text(rnf.model(out)))
    click.echo(f"results: {folder / fn.SUMMARY}")
