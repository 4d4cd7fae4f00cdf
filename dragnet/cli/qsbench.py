"""`dragnet qsbench`: query servers compared over the real protocol, with no CouchDB."""

from __future__ import annotations

import sys

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from dragnet.cli.options import json_option, print_json, server_option, with_progress
from dragnet.runner.qsbench import QsbenchRequest, qsbench
from dragnet.report.render import qsbench as render


@click.command("qsbench")
@click.option("--docs", "docs_file", help="JSON lines (.gz ok) of normalised declarations, or URL/db: a sample "
                                          "of that database (--count or --fraction, --seed; cached under --cache).")
@click.option("--count", type=click.IntRange(min=1), help="Generate this many declarations instead (cached under --cache); "
                                                          "with --docs URL/db, the sample size.  [default: 2000]")
@click.option("--fraction", type=click.FloatRange(min=0, max=1, min_open=True), default=None,
              help="With --docs URL/db: sample this fraction of the database instead of --count.")
@click.option("--seed", type=int, default=1, show_default=True, help="Seed for --count and for a --docs URL/db sample.")
@click.option("--cache", "cache_dir", default="cache", show_default=True, help="Where generated samples are kept.")
@click.option("--view", "view_dir", default=None, help="Folder with the view in every dialect.  [default: views/income]; "
              "with --ddoc: NAME,... of its views to run")
@click.option("--ddoc", "ddoc_source", default=None, metavar="SOURCE",
              help="Run a whole design document (JSON file, couchapp folder or URL/db/_design/name): every "
                   "map function, its reduce/rereduce batches, each function's time, rows per view checked.")
@click.option("--servers", help="Comma-separated server names to run (default: every one found; with --ddoc every "
              "one running its language).")
@click.option("--languages", help="With --ddoc: same as --servers (server or CouchDB language names).")
@click.option("--reference", help="Server whose rows the others must match (default: the first).")
@click.option("--repeat", default="auto", show_default=True, metavar="auto|N",
              help="Measured rounds: auto keeps running the servers of unresolved adjacent pairs from the fifth "
                   "round on, until none is left, --max-runs or --budget; N runs exactly N rounds.")
@click.option("--min-runs", type=click.IntRange(min=1), help="With --max-runs: the first look, after this many rounds.")
@click.option("--max-runs", type=click.IntRange(min=1),
              help="At most this many measured runs per server [default with --repeat auto: 15].")
@click.option("--budget", "budget", type=float, default=None,
              help="With --repeat auto: stop starting rounds after this many seconds [default: 120].")
@click.option("--metric", type=click.Choice(["cpu", "wall"]), default="cpu", show_default=True,
              help="Rank on CPU-seconds per 1,000 documents (the server's process tree) or on wall time.")
@click.option("--warmup", type=click.IntRange(min=0), default=1, show_default=True, help="Unmeasured runs before them.")
@click.option("--shards", type=click.IntRange(min=1), default=1, show_default=True, help="Processes in parallel, one per shard.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=5.0, show_default=True,
              help="Seconds to wait for an answer (CouchDB's os_process_timeout).")
@click.option("--config", "config_file", type=click.Path(dir_okay=False),
              help="Extra servers from an ini or JSON file (name, command, language, dialect, process, "
                   "version_command; docs/your-server.md).")
@click.option("--results", "results_dir", default="results", show_default=True, help="Where the JSON results go.")
@click.option("--plot", "plot_file", is_flag=False, flag_value="", default=None,
              help="Write a PNG bar chart (to FILE, or next to the results file).")
@click.option("--check-reduce", is_flag=True,
              help="With --ddoc: run every reduce again in the reference engine over several orders and "
                   "chunkings of its rows; an order-dependent reduce is the function's fault (done anyway "
                   "for the views whose reduce results differ).")
@click.option("--strict", is_flag=True, help="With --ddoc: fail on reduce differences of an order-dependent "
                                             "reduce too.")
@click.option("--couchdb", "couchdb_url", default=None, metavar="URL",
              help="Afterwards build the same servers' view and the ceiling inside this CouchDB on the same "
                   "documents (a bench, --repeat rounds, no baseline) and print both rankings side by side.")
@click.option("--couchdb-db", "couchdb_db", default="dragnet_qsbench", show_default=True,
              help="With --couchdb: the database the documents go into (imported once, kept).")
@click.option("--verbose", is_flag=True, help="Print every warning, the pairs on the other metric (otherwise "
              "one line says how many), the harness's share of each server's time and each server's command line.")
@server_option
@json_option
def qsbench_cmd(docs_file, count, fraction, seed, cache_dir, view_dir, ddoc_source, servers, languages, reference, repeat, min_runs, max_runs, budget, metric, warmup, shards, timeout,
                config_file, results_dir, plot_file, check_reduce, strict, couchdb_url, couchdb_db, verbose,
                server_opts, as_json):
    """Benchmark query servers directly over CouchDB's query-server protocol (no CouchDB needed)."""
    request = QsbenchRequest(docs_file=docs_file, count=count, fraction=fraction, seed=seed, cache_dir=cache_dir,
                             view_dir=view_dir, ddoc_source=ddoc_source, servers=servers, languages=languages,
                             reference=reference, repeat=repeat, min_runs=min_runs, max_runs=max_runs, budget=budget,
                             metric=metric, warmup=warmup, shards=shards, timeout=timeout, config_file=config_file,
                             results_dir=results_dir, plot_file=plot_file, check_reduce=check_reduce, strict=strict,
                             couchdb_url=couchdb_url, couchdb_db=couchdb_db, server_opts=server_opts, quiet=as_json)
    err = Console(stderr=True)
    out = Console() if sys.stdout.isatty() else Console(width=160)  # a pipe must not squeeze the table
    bar = Progress(TextColumn("{task.description:<14}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[note]}"), TimeElapsedColumn(), console=err)
    tasks = {}
    shown = []      # the bar, while it runs (Progress.stop prints a line even when never started)

    def done() -> None:
        while shown:
            shown.pop().stop()

    def progress(event, server, **info):
        if event == "start":
            tasks[server] = bar.add_task(server, total=info["total"], note="")
        elif event == "run":
            run = info["run"]
            tag = "warm-up" if run.warmup else f"{run.docs_per_sec:,.0f} docs/s"
            bar.update(tasks[server], completed=info["done"], note=tag)
        elif event == "failed":
            bar.update(tasks[server], note="[red]failed[/]")

    def on_event(kind: str, d: dict) -> None:
        if kind == "protocol_done":
            done()
            if not as_json and not ddoc_source:     # before the slower --couchdb run
                render.protocol_outcome(out, d["outcome"], verbose)
            return
        line = render.event_line(kind, d)
        if line is not None:
            err.print(line)
        if kind == "start":     # the view folder's run: its bar from here to protocol_done
            bar.start()
            shown.append(bar)

    try:
        outcome = qsbench(request, progress=progress, on_event=on_event, sampling=None if as_json else with_progress)
    finally:
        done()
    if as_json:
        print_json(render.json_outcome(outcome))
    elif outcome.ddoc:
        render.ddoc_outcome(out, outcome, verbose)
    elif outcome.inside is not None:
        render.show_inside(out, outcome.inside)
    if outcome.failure is not None:
        raise outcome.failure
