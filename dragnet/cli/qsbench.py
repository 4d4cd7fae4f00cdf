"""`dragnet qsbench`: query servers compared over the real protocol, with no CouchDB."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from dragnet.qsbench import run as qsbench, session
from dragnet.errors import UsageError
from dragnet.servers.discovery import REPO
from dragnet.cli.options import json_option, print_json, server_option
from dragnet.report.render.qsbench import (reduce_check_lines, show_ddoc, show_failures, show_inside, show_ranking,
                                           show_table)


def _default_view() -> str:
    # REPO: the checkout's views/, or the installed wheel's copy (dragnet.paths)
    local = Path("views/income")
    return str(local if local.is_dir() else REPO / "views" / "income")


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
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="Extra query servers (see README).")
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
@server_option
@json_option
def qsbench_cmd(docs_file, count, fraction, seed, cache_dir, view_dir, ddoc_source, servers, languages, reference, repeat, min_runs, max_runs, budget, metric, warmup, shards, timeout,
                config_file, results_dir, plot_file, check_reduce, strict, couchdb_url, couchdb_db, server_opts, as_json):
    """Benchmark query servers directly over CouchDB's query-server protocol (no CouchDB needed)."""
    from dragnet.servers import available

    available.install(server_opts, config_file)   # --config and --server: checked before anything runs
    err = Console(stderr=True)
    out = Console() if sys.stdout.isatty() else Console(width=160)  # a pipe must not squeeze the table
    from dragnet.data.sample import is_db_url

    from_db = bool(docs_file) and is_db_url(docs_file)
    if docs_file and count is not None and not from_db:
        raise UsageError("give --docs FILE or --count, not both")
    if fraction is not None and not from_db:
        raise UsageError("--fraction needs --docs URL/db")
    if from_db and (count is None) == (fraction is None):
        raise UsageError("--docs URL/db needs --count N or --fraction F (one of them)")
    if languages and not ddoc_source:
        raise UsageError("--languages goes with --ddoc (use --servers)")
    repeat = session.repeat_rounds(repeat, min_runs)
    if (check_reduce or strict) and not ddoc_source:
        raise UsageError("--check-reduce and --strict go with --ddoc")
    if couchdb_url and (ddoc_source or as_json):
        raise UsageError("--couchdb goes with a view folder's table (not --ddoc, not --json)")
    if ddoc_source:
        if servers and languages:
            raise UsageError("give --servers or --languages, not both")
        if shards != 1 or plot_file is not None or budget is not None:
            raise UsageError("--ddoc runs one shard, without --budget or --plot")
        qsbench.check_bounds(repeat, warmup, shards, max_runs, budget)    # before any server starts
        return _ddoc(err, out, ddoc_source, view_dir, servers or languages, reference, repeat=repeat,
                     max_runs=max_runs, metric=metric,
                     warmup=warmup, timeout=timeout, results_dir=results_dir,
                     as_json=as_json, docs=session.docset(docs_file, count, fraction, seed, cache_dir, **_talk(err, as_json)),
                     check_reduce=check_reduce, strict=strict)
    view_dir = view_dir or _default_view()
    qsbench.check_bounds(repeat, warmup, shards, max_runs, budget)    # before any server starts
    names = [n.strip() for n in servers.split(",") if n.strip()] if servers else None
    quiet = as_json
    plan = session.prepare(view_dir, names, reference, docs_file, count, fraction, seed, cache_dir,
                           on_skip=None if quiet else (lambda s: err.print(f"[yellow]skipped[/] {s.name}: {s.reason}")),
                           **_talk(err, quiet))
    docs = plan.docs
    inside = None
    if couchdb_url:     # before anything runs: which servers CouchDB can run, and the documents' file
        from dragnet.bench import inside as inside

        names, left = inside.languages_for([s for s, _ in plan.chosen])
        data = docs.origin.get("source")
        if not data or not Path(str(data)).is_file():
            raise UsageError("--couchdb needs the documents in a file (--docs FILE or --count)")

    kw = dict(repeat=repeat, warmup=warmup, shards=shards, timeout=timeout, max_runs=max_runs, budget=budget,
              metric=metric, results_dir=results_dir)
    if as_json:
        outcome = session.run(plan, **kw)
    else:
        rounds = "adaptive rounds" if repeat is None else f"{repeat} rounds"
        err.print(f"{len(docs)} documents ({sum(docs.sizes) / 1e6:.1f} MB) from {docs.origin.get('source')}; "
                  f"view {view_dir}; {warmup} warm-up + {rounds}, each in a random order; {shards} shard(s)")
        with Progress(TextColumn("{task.description:<14}"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("{task.fields[note]}"), TimeElapsedColumn(), console=err) as bar:
            tasks = {}

            def progress(event, server, **info):
                if event == "start":
                    tasks[server] = bar.add_task(server, total=info["total"], note="")
                elif event == "run":
                    run = info["run"]
                    tag = "warm-up" if run.warmup else f"{run.docs_per_sec:,.0f} docs/s"
                    bar.update(tasks[server], completed=info["done"], note=tag)
                elif event == "failed":
                    bar.update(tasks[server], note="[red]failed[/]")

            outcome = session.run(plan, progress=progress, **kw)

    bench, path = outcome.bench, outcome.path
    chart = None
    if plot_file is not None and bench.rows:
        from dragnet.report.qsbench_plot import plot

        chart = plot(outcome.doc, plot_file or path.with_suffix(".png"))

    if as_json:
        compact = outcome.compact()
        compact["results_file"] = str(path)
        compact["chart"] = str(chart) if chart else None
        print_json(compact)
    else:
        show_table(out, bench, docs, shards)
        show_ranking(out, bench)
        show_failures(out, bench)
        out.print(f"results: {path}")
        if chart:
            out.print(f"chart:   {chart}")
        if inside is not None:
            # inside CouchDB a round is a full build per server: adaptive rounds there are a later step
            _inside(out, err, couchdb_url, couchdb_db, str(data), names, left, bench, view_dir, repeat or 3,
                    results_dir)
    failed = session.failure(outcome)
    if failed is not None:
        raise failed


def _talk(err: Console, quiet: bool) -> dict:
    """The messages and the sampling progress bar of the documents' step (none with --json)."""
    if quiet:
        return {}
    from dragnet.cli.options import with_progress

    return {"notify": err.print, "sampling": with_progress}


def _inside(out: Console, err: Console, url, db, data, names, left, bench, view_dir, repeat, results_dir) -> None:
    """The same servers inside CouchDB, then both rankings side by side (report.qsbench_inside)."""
    from dragnet.report.qsbench_inside import inside

    for why in left:
        err.print(f"[yellow]not inside CouchDB[/] {why}")

    def on_event(kind: str, d: dict) -> None:
        if kind == "start":
            err.print(f"inside CouchDB, round {d['repeat'] + 1}: {d['language']} …")
        elif kind in ("import", "warning"):
            err.print(d["message"])

    show_inside(out, inside(url, db, data, names, {r.name: r.docs_per_sec for r in bench.rows}, views=view_dir,
                            repeat=repeat, results_dir=results_dir, on_event=on_event))


def _ddoc(err: Console, out: Console, source, view_names, names, reference, *, repeat, warmup, timeout,
          results_dir, as_json, docs, check_reduce=False, strict=False, max_runs=None, metric="cpu") -> None:
    views = [v.strip() for v in view_names.split(",") if v.strip()] if view_names else None
    names = [n.strip() for n in names.split(",") if n.strip()] if names else None

    def started(design) -> None:
        rounds = "rounds until decided" if repeat is None else f"{repeat} rounds"
        err.print(f"{len(docs)} documents from {docs.origin.get('source')}; {design.id} ({', '.join(design.view_names)}); "
                  f"{warmup} warm-up + {rounds} of the servers interleaved, then each map function alone")

    got = session.run_ddoc(source, views, names, reference, docs, repeat=repeat, warmup=warmup, timeout=timeout,
                           max_runs=max_runs, metric=metric, results_dir=results_dir, check_reduce=check_reduce,
                           on_skip=None if as_json else (lambda s: err.print(f"[yellow]skipped[/] {s.name}: {s.reason}")),
                           on_start=None if as_json else started)
    bench, path = got.bench, got.path
    if as_json:
        compact = got.compact()
        compact["results_file"] = str(path)
        print_json(compact)
    else:
        show_table(out, bench, docs, 1)
        show_ranking(out, bench)
        show_ddoc(out, bench)
        for line in reduce_check_lines(got.checks, bench.reference):
            out.print(line, highlight=False, markup=False)
        out.print(f"results: {path}")
    failed = session.ddoc_failure(got, strict)
    if failed is not None:
        raise failed
