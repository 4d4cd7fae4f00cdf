"""`dragnet addview`: add a view to a design document, or benchmark building it from scratch."""

from __future__ import annotations

import sys

import click

from dragnet.index import addview as av
from dragnet.measure import pidstat as ps
from dragnet.index.views import LANGUAGES
from dragnet.cli.options import db_option_saying, json_option, print_json, url_option, server_option


@click.command("addview")
@click.argument("view_path", type=click.Path(dir_okay=False), required=False)
@url_option
@db_option_saying('The database whose documents the view indexes; its design doc gets the view.')
@click.option("--ddoc", default=None, metavar="NAME|SOURCE",
              help="With VIEW_PATH: the design document's name [default: the view's folder name; with "
                   "--benchmark a unique fresh name, deleted with its index once measured; a NAME given is "
                   "kept]. Without VIEW_PATH: a whole design document to put in "
                   "--db, or with --benchmark to measure: a JSON file, a couchapp folder (views/<name>/map.js, "
                   "reduce.js, views/lib/**, language, options.json) or URL/db/_design/name.")
@click.option("--mango", "mango_source", default=None, metavar="SOURCE",
              help="With --benchmark: build Mango JSON indexes (a JSON file of POST /db/_index bodies, or "
                   "URL/db/_index), each in a fresh design doc; with --language, their equivalent JavaScript "
                   "views on that engine instead.")
@click.option("--view", "view", default=None, help="View name [default: the view file's folder name]; with a "
              "--ddoc SOURCE, NAME,... picks those views.")
@click.option("--language", default=None, help="CouchDB language: " + ", ".join(LANGUAGES) +
              " [default: the file's header line, else its extension].")
@click.option("--reduce", "reduce", default=None, metavar="FILE|_sum|_count|_stats", help="Reduce function.")
@click.option("--benchmark", is_flag=True, help="Build the view in a fresh design document and measure it.")
@click.option("--update", "update", type=click.IntRange(min=1), default=None, metavar="N",
              help="After the build write N changes through _bulk_docs and measure how long until the views "
                   "answer fresh (undone afterwards; only on databases dragnet imported unless --allow-writes).")
@click.option("--update-edits", type=click.FloatRange(0, 1), default=0.5, show_default=True,
              help="Share of --update changes that edit existing documents; the rest are new documents.")
@click.option("--update-batch", type=click.IntRange(min=1), default=50, show_default=True,
              help="Documents per _bulk_docs request of --update.")
@click.option("--allow-writes", is_flag=True, help="Let --update write to a database dragnet did not create.")
@click.option("--per-view", is_flag=True, help="With --ddoc and --benchmark: also build each view alone in its own "
                                               "fresh copy and show its cost next to the whole document's pass.")
@click.option("--compact", is_flag=True, help="With --benchmark: compact the index once built and report the size "
              "it settles at (after any compaction CouchDB began during the build).")
@click.option("--load", "load_text", default=None, metavar="LOAD",
              help="With --benchmark: the application's traffic beside the build, e.g. "
                   "'writes=200/s,updates=50/s,reads=100/s,view-reads=20/s' (kinds: writes, updates, reads, "
                   "view-reads, view-waits), started 5 s before it; latencies, errors and writes are recorded.")
@click.option("--interval", type=click.FloatRange(min=0.1), default=1.0, show_default=True,
              help="Seconds between /_active_tasks polls (and pidstat samples).")
@click.option("--timeout", type=click.FloatRange(min=1), default=None,
              help="Give up after this many seconds [default: 6 h].")
@click.option("--no-pidstat", is_flag=True, help="Do not record process resources with pidstat.")
@click.option("--pidstat-pattern", default=ps.DEFAULT_PATTERN, show_default=True,
              help="pidstat -C pattern: process names to record.")
@click.option("--couchdb-log", type=click.Path(dir_okay=False), default=None,
              help="CouchDB's log file, to count exceptions raised by the map function [default: found via "
                   "DRAGNET_COUCHDB_HOME for a local CouchDB].")
@click.option("--storage", type=click.Choice(av.STORAGE_CHOICES), default="auto", show_default=True,
              help="Record the data's storage; auto reads /proc/mounts for a local CouchDB.")
@click.option("--results", "results_dir", type=click.Path(file_okay=False), default="results", show_default=True,
              help="Directory for the results file of a benchmark.")
@click.option("--nouveau", "nouveau_source", default=None, metavar="FILE",
              help="With --benchmark: build a Nouveau search index instead of a view: a .js index() function "
                   "or a .json `nouveau` section, in a fresh design doc on --language (docs/nouveau.md).")
@click.option("--query", "queries", multiple=True, metavar="Q",
              help="With --nouveau: a search to check the index with (hits and counts recorded) [default: *:*].")
@server_option
@json_option
@click.option("--profile", is_flag=True, help="With --benchmark: sample CouchDB's functions with perf during the "
              "build; folded stacks beside the results, stages and levers in the summary.")
def addview_cmd(view_path, url, db, ddoc, mango_source, view, language, reduce, benchmark, update, update_edits, update_batch,
                allow_writes, per_view, compact, load_text, interval, timeout, no_pidstat,
                pidstat_pattern, couchdb_log, storage, results_dir, nouveau_source, queries, server_opts, as_json,
                profile):
    """Put VIEW_PATH's map function into a design document (keeping its other views), or with --benchmark
    build it from scratch and report how fast CouchDB indexed it.

    With --ddoc SOURCE instead of VIEW_PATH the whole design document is taken (every view, reduces,
    views/lib, options, language). --benchmark then builds a copy under a fresh name and deletes it
    afterwards: the original design document and its index are never touched, and nothing else is
    written to the database. --per-view also builds each view alone, in its own fresh copy.
    """
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn, \
        TimeRemainingColumn

    from dragnet.runner import addview as session
    from dragnet.report.render import console as render_console, json as render_json
    from dragnet.servers import available

    available.install(server_opts)   # --server: checked, then offered, registered, watched and versioned
    request = session.AddviewRequest(
        url=url, db=db, view_path=view_path, ddoc=ddoc, mango_source=mango_source, view=view, language=language,
        reduce=reduce, benchmark=benchmark, update=update, update_edits=update_edits, update_batch=update_batch,
        allow_writes=allow_writes, per_view=per_view, compact=compact, load_text=load_text, interval=interval,
        timeout=timeout, pidstat=not no_pidstat, pidstat_pattern=pidstat_pattern, couchdb_log=couchdb_log,
        storage=storage, results_dir=results_dir, nouveau_source=nouveau_source, queries=tuple(queries),
        argv=["dragnet", "addview", *sys.argv[2:]] if len(sys.argv) > 1 else ["dragnet", "addview"],
        profile=profile)

    console = Console(stderr=True)
    progress = Progress(TextColumn("[bold]indexing[/bold]"), BarColumn(), TaskProgressColumn(),
                        TextColumn("{task.fields[counts]}"),
                        TextColumn("{task.fields[cps]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                        console=console, transient=True, disable=not console.is_terminal)
    bar = progress.add_task("build", total=None, cps="", counts="waiting for indexer tasks")
    shown = []

    def on_event(kind: str, data: dict) -> None:
        if kind == "building":      # the bar shows from the first build until the builds are done
            if not shown:
                progress.start()
                shown.append(True)
            if data["label"] is not None:
                progress.update(bar, completed=0, total=None, counts=f"{data['label']}: waiting for indexer tasks")
        elif kind == "poll":
            tracker = data["tracker"]
            rates = [r for r in (av.poller.task_rate(t) for t in av.poller.indexer_tasks(data["poll"]["tasks"],
                                                                                          tracker.ddoc))
                     if r is not None]
            progress.update(bar, completed=tracker.changes_done, total=tracker.total_changes or None,
                            cps=f"{sum(rates):.0f} c/s" if rates else "",
                            counts=f"{tracker.changes_done}/{tracker.total_changes} changes, {tracker.active} tasks")
        elif kind == "note":
            console.print(f"note: {data['message']}", highlight=False, markup=False)
        elif kind == "warning":
            click.echo(f"warning: {data['message']}", err=True)
        elif kind == "mango_built" and not as_json:
            render_console.addview_mango_index(data)

    try:
        outcome = session.addview(request, on_event)
    finally:
        if shown:
            progress.stop()
    if as_json:
        print_json(render_json.addview_outcome(outcome))
    else:
        render_console.addview_outcome(outcome)
