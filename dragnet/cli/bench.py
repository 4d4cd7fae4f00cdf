"""`dragnet bench`: run the comparison matrix (languages × repeats × storages) and summarize it."""

from __future__ import annotations

import sys

import click

from dragnet.bench import run as b
from dragnet.cli.options import (axis_options, data_file, db_option_saying, json_option, planned_options, print_json,
                                 sample_count_option, server_option, store_option, url_option)
from dragnet.report.terminal import bench_progress
from dragnet.report.render import console as render_console, json as render_json


@click.command("bench")
@url_option
@db_option_saying('The database the builds index (--data is imported into it '
                  'once); with --sizes, the prefix of one database per size, DB-N.')
@click.option("--data", metavar="FILE|URL/db", help="JSON-lines data file (.jsonl or .jsonl.gz) to "
              "import once per storage, skipped when the database already holds it; or URL/db: a sample of that "
              "database (--sample-count), drawn once into cache/.")
@sample_count_option
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
@click.option("--metric", type=click.Choice(["cpu", "qs", "instructions", "wall"]), default="instructions",
              show_default=True,
              help="With --gate: decide on the map functions' instructions per document, counted by valgrind on a "
                   "sample of the database in this machine's query server for the language (instructions: the "
                   "machine's load does not move them), on the query servers' own CPU-seconds per 1,000 documents "
                   "(qs), on CouchDB's and theirs (cpu) or on wall time.")
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
@planned_options
@axis_options
@store_option
@server_option
@json_option
@click.option("--profile", "function_profile", is_flag=True,
              help="Sample CouchDB's functions with perf during every build: folded stacks in the results folder, "
                   "each build kind's stages and levers in the report, flame graphs in `report --html`.")
def bench_cmd(url, db, data, sample_count, views, ddoc_sources, mango_source, view_names, strict, reference, languages,
              repeat, budget, storages, storage_label, backend, results_dir, no_baseline, no_ceiling, n, memories,
              profiles, caches, sizes_text, plot_path, save_baseline, gate, metric, max_runs, baseline_name, store_dir,
              nouveau_source, queries, server_opts, as_json, function_profile, **axis_raw):
    """Benchmark view builds of every language (or each engine on --ddoc), --repeat rounds interleaved, on each
    storage; write one results file per build plus bench.json, then print the report table."""
    from rich.console import Console

    from dragnet.runner import bench as session
    from dragnet.servers import available

    available.install(server_opts)   # --server: checked, then offered, registered, watched and versioned
    data = data_file(data, sample_count)
    request = session.BenchRequest(
        url=url, db=db, data=data, views=views, ddoc_sources=tuple(ddoc_sources), mango_source=mango_source,
        view_names=view_names, strict=strict, reference=reference, languages=languages, repeat=repeat, budget=budget,
        storages=storages, storage_label=storage_label, backend=backend, results_dir=results_dir,
        no_baseline=no_baseline, no_ceiling=no_ceiling, n=n, memories=memories, profiles=profiles, caches=caches,
        sizes_text=sizes_text, plot_path=plot_path, save_baseline=save_baseline, gate=gate, metric=metric,
        max_runs=max_runs, baseline_name=baseline_name, store_dir=store_dir, nouveau_source=nouveau_source,
        queries=tuple(queries), axis_raw=axis_raw, function_profile=function_profile)
    outcome = session.bench(request, bench_progress(Console(stderr=True), {"n": 0}, nouveau_builds=not as_json))
    if outcome.mode == "gate" and outcome.interrupted is None:
        from dragnet.report.render import files

        comment, record = files.gate(outcome.report)
        if not as_json:     # --json: its "folder" says where
            Console(stderr=True).print(f"gate: the pull request's comment in {comment}, the decision in "
                                       f"{record.name} beside it")
    if as_json and outcome.interrupted is None:
        print_json(render_json.bench_outcome(outcome))
    else:
        render_console.bench_outcome(outcome)
    if outcome.exit_code:
        sys.exit(outcome.exit_code)
