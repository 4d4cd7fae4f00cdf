"""`dragnet qsbench` as one library call: `qsbench(request, progress, on_event)` checks the options, runs a
view folder's servers (or a whole design document with --ddoc), draws the chart, runs the same servers
inside CouchDB with --couchdb, and returns what report/render/qsbench.py prints.

It is a report-stage module because the chart (qsbench_plot) and the --couchdb side by side
(qsbench_inside) live in report/; qsbench/session.py below runs the servers and writes the results file.

Messages go to on_event(kind, data) as they happen: "skipped" (a server that cannot run: its spec),
"notice" (the documents' step: message), "start" (a view folder's run is about to begin: docs, view_dir,
repeat, warmup, shards), "ddoc_start" (a design document's run: docs, design, repeat, warmup),
"protocol_done" (the protocol run is over, the outcome so far: a renderer may print it before the slower
--couchdb run), "not_inside" (a server CouchDB cannot run: why), "inside_start", "inside_message".
progress(event, server, **info) follows the view folder's run, server by server (qsbench.run).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from dragnet.errors import DragnetError, UsageError
from dragnet import paths

Events = Callable[[str, dict], None]


@dataclass(frozen=True)
class QsbenchRequest:
    """The options of `dragnet qsbench`, as given (text lists unparsed: `qsbench` checks them)."""

    docs_file: str | None = None
    count: int | None = None
    fraction: float | None = None
    seed: int = 1
    cache_dir: str = "cache"
    view_dir: str | None = None
    ddoc_source: str | None = None
    servers: str | None = None
    languages: str | None = None
    reference: str | None = None
    repeat: str = "auto"
    min_runs: int | None = None
    max_runs: int | None = None
    budget: float | None = None
    metric: str = "cpu"
    warmup: int = 1
    shards: int = 1
    timeout: float = 5.0
    config_file: str | None = None
    results_dir: str = "results"
    plot_file: str | None = None     # "": next to the results file
    check_reduce: bool = False
    strict: bool = False
    couchdb_url: str | None = None
    couchdb_db: str = "dragnet_qsbench"
    server_opts: tuple = ()
    quiet: bool = False              # --json: no messages, no progress


@dataclass
class QsbenchOutcome:
    """What a qsbench ran: `run` is a qsbench.session.ViewOutcome, or a DdocOutcome with --ddoc; `chart`
    the PNG written (--plot), `inside` the --couchdb side by side (qsbench_inside.InsideReport);
    `failure` the error the command ends with (servers that failed), or None."""

    request: QsbenchRequest
    run: Any
    docs: Any
    view_dir: str | None = None
    chart: Path | None = None
    inside: Any = None
    failure: DragnetError | None = None

    @property
    def ddoc(self) -> bool:
        return self.request.ddoc_source is not None


def default_view() -> str:
    """views/income of the checkout, or the installed wheel's copy (dragnet.paths)."""
    local = Path("views/income")
    return str(local if local.is_dir() else paths.data_root() / "views" / "income")


def _names(text: str | None) -> list[str] | None:
    return [n.strip() for n in text.split(",") if n.strip()] if text else None


def qsbench(request: QsbenchRequest, *, progress: Callable | None = None, on_event: Events | None = None,
            sampling: Callable | None = None) -> QsbenchOutcome:
    """Check the request (a one-line UsageError before anything runs), run it, draw and compare what it asks.
    sampling(run) runs a database draw under a progress bar (the CLI's; None: none)."""
    from dragnet.data.sample import is_db_url
    from dragnet.qsbench import run as qsrun, session
    from dragnet.servers import available

    r = request
    on_event = on_event or (lambda kind, data: None)
    available.install(r.server_opts, r.config_file)   # --config and --server: checked before anything runs
    from_db = bool(r.docs_file) and is_db_url(r.docs_file)
    if r.docs_file and r.count is not None and not from_db:
        raise UsageError("give --docs FILE or --count, not both")
    if r.fraction is not None and not from_db:
        raise UsageError("--fraction needs --docs URL/db")
    if from_db and (r.count is None) == (r.fraction is None):
        raise UsageError("--docs URL/db needs --count N or --fraction F (one of them)")
    if r.languages and not r.ddoc_source:
        raise UsageError("--languages goes with --ddoc (use --servers)")
    repeat = session.repeat_rounds(r.repeat, r.min_runs)
    if (r.check_reduce or r.strict) and not r.ddoc_source:
        raise UsageError("--check-reduce and --strict go with --ddoc")
    if r.couchdb_url and (r.ddoc_source or r.quiet):
        raise UsageError("--couchdb goes with a view folder's table (not --ddoc, not --json)")
    talk = {} if r.quiet else {"notify": lambda m: on_event("notice", {"message": m}), "sampling": sampling}
    on_skip = None if r.quiet else (lambda s: on_event("skipped", {"spec": s}))
    if r.ddoc_source:
        if r.servers and r.languages:
            raise UsageError("give --servers or --languages, not both")
        if r.shards != 1 or r.plot_file is not None or r.budget is not None:
            raise UsageError("--ddoc runs one shard, without --budget or --plot")
        qsrun.check_bounds(repeat, r.warmup, r.shards, r.max_runs, r.budget)    # before any server starts
        return _ddoc(r, repeat, session.docset(r.docs_file, r.count, r.fraction, r.seed, r.cache_dir, **talk),
                     on_skip, on_event)
    view_dir = r.view_dir or default_view()
    qsrun.check_bounds(repeat, r.warmup, r.shards, r.max_runs, r.budget)    # before any server starts
    names = _names(r.servers)
    plan = session.prepare(view_dir, names, r.reference, r.docs_file, r.count, r.fraction, r.seed, r.cache_dir,
                           on_skip=on_skip, **talk)
    docs = plan.docs
    if r.couchdb_url:     # before anything runs: which servers CouchDB can run, and the documents' file
        from dragnet.bench import inside as inside

        names, left = inside.languages_for([s for s, _ in plan.chosen])
        data = docs.origin.get("source")
        if not data or not Path(str(data)).is_file():
            raise UsageError("--couchdb needs the documents in a file (--docs FILE or --count)")
    if not r.quiet:
        on_event("start", {"docs": docs, "view_dir": view_dir, "repeat": repeat, "warmup": r.warmup,
                           "shards": r.shards})
    run = session.run(plan, repeat=repeat, warmup=r.warmup, shards=r.shards, timeout=r.timeout,
                      max_runs=r.max_runs, budget=r.budget, metric=r.metric, results_dir=r.results_dir,
                      **({} if r.quiet else {"progress": progress}))
    chart = None
    if r.plot_file is not None and run.bench.rows:
        from dragnet.report.qsbench_plot import plot

        chart = plot(run.doc, r.plot_file or run.path.with_suffix(".png"))
    outcome = QsbenchOutcome(r, run, docs, view_dir, chart)
    on_event("protocol_done", {"outcome": outcome})
    if r.couchdb_url:
        # inside CouchDB a round is a full build per server: adaptive rounds there are a later step
        outcome.inside = _inside(r, str(data), names, left, run.bench, view_dir, repeat or 3, on_event)
    outcome.failure = session.failure(run)
    return outcome


def _inside(r: QsbenchRequest, data: str, names, left, bench, view_dir, repeat, on_event: Events):
    """The same servers inside CouchDB (bench.inside builds their view and the ceiling in a new folder under
    --results), and both rankings side by side (report.qsbench_inside)."""
    import time

    from dragnet.bench import inside as bench_inside
    from dragnet.report import share
    from dragnet.report.qsbench_inside import InsideReport, side_by_side
    from dragnet.results.load import load_results

    for why in left:
        on_event("not_inside", {"why": why})

    def relay(kind: str, d: dict) -> None:
        if kind == "start":
            on_event("inside_start", d)
        elif kind in ("import", "warning"):
            on_event("inside_message", d)

    folder = Path(r.results_dir) / f"qsbench-couchdb-{int(time.time())}"
    manifest = bench_inside.run_inside(r.couchdb_url, r.couchdb_db, data, names, views=view_dir, repeat=repeat,
                                       results_dir=str(folder), on_event=relay)
    loads = share.workloads(load_results([folder])) if any(x["result_file"] for x in manifest["runs"]) else []
    protocol = {x.name: x.docs_per_sec for x in bench.rows}
    return InsideReport(folder, manifest, side_by_side(protocol, names, loads), loads)


def _ddoc(r: QsbenchRequest, repeat, docs, on_skip, on_event: Events) -> QsbenchOutcome:
    """--ddoc: a whole design document on every server running its language (qsbench.session.run_ddoc)."""
    from dragnet.qsbench import session

    def started(design) -> None:
        on_event("ddoc_start", {"docs": docs, "design": design, "repeat": repeat, "warmup": r.warmup})

    got = session.run_ddoc(r.ddoc_source, _names(r.view_dir), _names(r.servers or r.languages), r.reference, docs,
                           repeat=repeat, warmup=r.warmup, timeout=r.timeout, max_runs=r.max_runs, metric=r.metric,
                           results_dir=r.results_dir, check_reduce=r.check_reduce, on_skip=on_skip,
                           on_start=None if r.quiet else started)
    return QsbenchOutcome(r, got, docs, failure=session.ddoc_failure(got, r.strict))
