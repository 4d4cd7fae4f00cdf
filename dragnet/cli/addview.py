"""`dragnet addview`: add a view to a design document, or benchmark building it from scratch."""

from __future__ import annotations

import sys

import click

from dragnet.build import addview as av
from dragnet.measure import pidstat as ps
from dragnet.couchdb.client import connect
from dragnet.build.views import LANGUAGES
from dragnet.cli.options import db_option, json_option, print_json, url_option, server_option


@click.command("addview")
@click.argument("view_path", type=click.Path(dir_okay=False), required=False)
@url_option
@db_option
@click.option("--ddoc", default=None, metavar="NAME|SOURCE",
              help="With VIEW_PATH: the design document's name [default: the view's folder name; with "
                   "--benchmark a unique fresh name]. Without VIEW_PATH: a whole design document to put in "
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
def addview_cmd(view_path, url, db, ddoc, mango_source, view, language, reduce, benchmark, update, update_edits, update_batch,
                allow_writes, per_view, compact, load_text, interval, timeout, no_pidstat,
                pidstat_pattern, couchdb_log, storage, results_dir, nouveau_source, queries, server_opts, as_json):
    """Put VIEW_PATH's map function into a design document (keeping its other views), or with --benchmark
    build it from scratch and report how fast CouchDB indexed it.

    With --ddoc SOURCE instead of VIEW_PATH the whole design document is taken (every view, reduces,
    views/lib, options, language). --benchmark then builds a copy under a fresh name and deletes it
    afterwards: the original design document and its index are never touched, and nothing else is
    written to the database. --per-view also builds each view alone, in its own fresh copy.
    """
    from dragnet.errors import UsageError
    from dragnet.servers import available

    available.install(server_opts)   # --server: checked, then offered, registered, watched and versioned

    design = None
    if nouveau_source:
        if (view_path or ddoc or reduce or update or per_view or compact or mango_source or load_text is not None
                or not benchmark):
            raise UsageError("--nouveau goes with --benchmark, without VIEW_PATH, --ddoc, --mango, --reduce, "
                             "--update, --per-view, --compact or --load")
        return _nouveau(url, db, nouveau_source, language, queries, interval, timeout, couchdb_log, results_dir,
                        as_json)
    if queries:
        raise UsageError("--query goes with --nouveau")
    beside = None
    if load_text is not None:
        from dragnet.load.beside import Beside
        from dragnet.load.generator import require_loopback
        from dragnet.load.spec import parse as parse_load

        if not benchmark or mango_source or per_view:
            raise UsageError("--load goes with --benchmark (not with --mango or --per-view)")
        spec = parse_load(load_text)
        require_loopback(url)
        beside = Beside(spec, on_note=lambda m: click.echo(f"warning: {m}", err=True)) if not spec.idle else None
    if mango_source:
        if view_path or ddoc or reduce or update or per_view or not benchmark:
            raise UsageError("--mango goes with --benchmark, without VIEW_PATH, --ddoc, --reduce, --update or "
                             "--per-view")
        return _mango(url, db, mango_source, language, interval, timeout, no_pidstat, pidstat_pattern,
                      couchdb_log, storage, results_dir, as_json)
    if view_path is None:
        if not ddoc:
            raise UsageError("give a VIEW_PATH, or a whole design document with --ddoc SOURCE")
        from dragnet.build import design as dsg

        design = dsg.load(ddoc, views=[v.strip() for v in view.split(",") if v.strip()] if view else None)
        ddoc = view = None
        if reduce:
            raise UsageError("--reduce goes with a VIEW_PATH; a design document brings its own reduces")
    cfg = av.Config(view_path=view_path or "", db=db, ddoc=ddoc, view=view, language=language, reduce=reduce,
                    interval=interval, timeout=timeout, pidstat=not no_pidstat, pidstat_pattern=pidstat_pattern,
                    couchdb_log=couchdb_log, storage=storage, results_dir=results_dir, design=design,
                    update=update or 0, update_edits=update_edits, update_batch=update_batch,
                    allow_writes=allow_writes, compact=compact, beside=beside,
                    argv=["dragnet", "addview", *sys.argv[2:]] if len(sys.argv) > 1 else ["dragnet", "addview"])
    if update and not benchmark:
        raise UsageError("--update goes with --benchmark")
    if compact and not benchmark:
        raise UsageError("--compact goes with --benchmark")
    if per_view and (design is None or not benchmark):
        raise UsageError("--per-view goes with --ddoc SOURCE and --benchmark")
    couch = connect(url)
    if not benchmark and design is not None:
        saved = av.put_design(couch, cfg)
        if as_json:
            print_json(saved)
        else:
            verb = "created" if saved["created"] else "updated"
            click.echo(f"{verb} {saved['ddoc']} in {db} from {design.source}: views {', '.join(saved['views'])} "
                       f"({saved['language']}), rev {saved['rev']}")
        return
    if not benchmark:
        saved = av.add_view(couch, cfg)
        if as_json:
            print_json(saved)
        else:
            verb = "created" if saved["created"] else "updated"
            click.echo(f"{verb} {saved['ddoc']} in {db}: view {saved['view']} ({saved['language']}), "
                       f"rev {saved['rev']}; views: {', '.join(saved['views'])}")
        return

    from rich.console import Console
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn, \
        TimeRemainingColumn

    console = Console(stderr=True)
    progress = Progress(TextColumn("[bold]indexing[/bold]"), BarColumn(), TaskProgressColumn(),
                        TextColumn("{task.fields[counts]}"),
                        TextColumn("{task.fields[cps]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                        console=console, transient=True, disable=not console.is_terminal)
    bar = progress.add_task("build", total=None, cps="", counts="waiting for indexer tasks")

    def on_poll(tracker, poll) -> None:
        rates = [r for r in (av.poller.task_rate(t) for t in av.poller.indexer_tasks(poll["tasks"], tracker.ddoc))
                 if r is not None]
        progress.update(bar, completed=tracker.changes_done, total=tracker.total_changes or None,
                        cps=f"{sum(rates):.0f} c/s" if rates else "",
                        counts=f"{tracker.changes_done}/{tracker.total_changes} changes, {tracker.active} tasks")

    def on_note(msg: str) -> None:
        console.print(f"note: {msg}", highlight=False, markup=False)

    if per_view:
        import dataclasses

        from dragnet.build import per_view as pv

        def build(sub, label):
            progress.update(bar, completed=0, total=None, counts=f"{label}: waiting for indexer tasks")
            o = av.run_benchmark(couch, dataclasses.replace(cfg, design=sub), on_poll=on_poll, on_note=on_note)
            return o.results, (str(o.path) if o.path else None)

        with progress:
            rows, _ = pv.run(design, build)
        if as_json:
            print_json({"db": db, "design": design.id, "per_view": [r.as_dict() for r in rows]})
            return
        click.echo(f"{design.id} on {db}: whole design doc, then each view alone")
        for line in pv.format_table(rows):
            click.echo(line)
        return
    with progress:
        out = av.run_benchmark(couch, cfg, on_poll=on_poll, on_note=on_note)
    if as_json:
        compacted = (out.results.get("sizes") or {}).get("compacted")
        print_json(dict(out.results["summary"], results_file=str(out.path) if out.path else None,
                        ddoc=out.results["view"]["ddoc"], **({"compacted": compacted} if compacted else {})))
        return
    click.echo(f"{out.results['view']['ddoc']} ({out.results['view']['language']}) on {db}")
    for line in av.format_report(out.results, out.figures):
        click.echo(line)
    if beside is not None:
        from dragnet.report import load as report_load

        click.echo("\n".join(report_load.lines(report_load.section([out.results]))))
    if out.path:
        click.echo(f"results: {out.path}")


def _mango(url, db, source, language, interval, timeout, no_pidstat, pidstat_pattern, couchdb_log, storage,
           results_dir, as_json) -> None:
    """addview --mango --benchmark: each index built by Mango (or, with --language, as JavaScript)."""
    from dragnet.build import mango as mango
    from dragnet.errors import UsageError

    from dragnet.build.views import canonical_language

    indexes = mango.load(source)
    couch = connect(url)
    if language in (None, mango.LANGUAGE, mango.ENGINE):
        designs = [(ix, mango.validated_design(couch, ix)) for ix in indexes]    # CouchDB judges all first
        language = None
    else:
        if LANGUAGES.get(canonical_language(language), ("js",))[0] != "js":
            raise UsageError(f"--mango --language {language}: the equivalent view is JavaScript")
        designs = [(ix, mango.js_design(ix)) for ix in indexes]
    out = []
    for ix, design in designs:
        cfg = av.Config(view_path="", db=db, language=language, interval=interval, timeout=timeout,
                        pidstat=not no_pidstat, pidstat_pattern=pidstat_pattern, couchdb_log=couchdb_log,
                        storage=storage, results_dir=results_dir, design=design,
                        argv=["dragnet", "addview", *sys.argv[2:]])
        o = av.run_benchmark(couch, cfg)
        warning = mango.empty_warning(ix, o.results["summary"].get("rows"))
        out.append((ix, o, warning))
        if not as_json:
            click.echo(f"mango index {ix.name} ({', '.join(ix.fields)}) built by "
                       f"{language or 'Mango'} on {db}")
            for line in av.format_report(o.results, o.figures):
                click.echo(line)
            if warning:
                click.echo(f"warning: {warning}")
            if o.path:
                click.echo(f"results: {o.path}")
    if as_json:
        print_json([dict(o.results["summary"], index=ix.name, warning=w, results_file=str(o.path) if o.path else None)
                    for ix, o, w in out])


def _nouveau(url, db, source, language, queries, interval, timeout, couchdb_log, results_dir, as_json) -> None:
    from dragnet.build import nouveau as nv
    from dragnet.errors import UsageError
    from dragnet.report.nouveau import build_lines

    indexes = nv.load_indexes(source)
    if len(indexes) != 1:
        raise UsageError("--nouveau: addview builds one index; give bench --nouveau a file of several")
    cfg = nv.Config(url=url, db=db, index=indexes[0], language=language or "javascript",
                    queries=tuple(queries) or nv.DEFAULT_QUERIES, interval=interval,
                    timeout=timeout or nv.Config.timeout, couchdb_log=couchdb_log, results_dir=results_dir)
    res = nv.build(connect(url), cfg)
    if as_json:
        print_json(res)
        return
    for line in build_lines(res):
        click.echo(line)
    click.echo(f"results: {res['results_file']}")
