"""qsbench in the terminal: the servers' table, the ranking and its verdicts, failures, a design doc's costs,
and the protocol beside CouchDB."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from dragnet.qsbench import run as qsbench
from dragnet.report.ranking import pair_text


def show_table(out: Console, bench, docs, shards: int, verbose: bool = True) -> None:
    """The servers' table over the protocol; verbose (or where it exceeds 10%), the harness's share; verbose, each
    server's command line."""
    if not bench.rows:
        return
    cmd = {r.spec.name: " ".join(r.spec.argv) for r in bench.results}
    t = Table(title=f"query servers over the protocol: {len(docs)} docs, {shards} shard(s), "
                    f"rows checked against {bench.reference}",
              title_justify="left")
    for col in ("server", "docs/s", "× slower", "mean ± σ", "min … max", "latency p50 / p95 / p99 / max ms",
                "CPU s/1k docs", "RSS MB", "start ms"):
        t.add_column(col, justify="left" if col == "server" else "right", no_wrap=True)
    for r in bench.rows:
        s = r.rate
        t.add_row(r.name, f"{r.docs_per_sec:,.0f}", f"{r.ratio:.2f}", f"{s.mean:,.0f} ± {s.stdev:,.0f}",
                  f"{s.min:,.0f} … {s.max:,.0f}",
                  f"{r.p50_ms:.3f} / {r.p95_ms:.3f} / {r.p99_ms:.3f} / {r.max_ms:.2f}",
                  f"{r.cpu_per_1000:.3f}" if getattr(r, "cpu_per_1000", 0) else f"{r.cpu_s:.2f} s",
                  f"{r.peak_rss_kb / 1024:.1f}" if r.peak_rss_kb else "?", f"{r.startup_ms:.0f}")
    out.print(t)
    shares = [(r.name, r.harness_share) for r in bench.rows if getattr(r, "harness_share", None) is not None]
    big = [n for n, h in shares if h > 0.10]
    if shares and (verbose or big):     # the harness's own share is news only where it is not negligible
        loop = {"c": "the C loop, dragnet-qsdriver", "python": "the Python loop: `make servers` builds the C one"}
        out.print(f"harness share of the map loop's wall time ({loop.get(bench.driver, bench.driver)}, its own "
                  "CPU while it drives): "
                  + ", ".join(f"{n} {h:.0%}" for n, h in shares)
                  + (f"; not negligible for {', '.join(big)}: their docs/s is partly the driver's" if big else ""),
                  highlight=False)
    for r in bench.rows if verbose else ():
        out.print(f"  {r.name}: {cmd[r.name]}", highlight=False)


def show_failures(out: Console, bench) -> None:
    """Servers that failed or whose rows differ from the reference's."""
    for r in bench.failed:
        if r.error:
            out.print(f"[red]FAILED[/] {r.spec.name}: {r.error}", highlight=False)
        else:
            out.print(f"[red]WRONG ROWS[/] {r.spec.name}: {r.mismatch_count} document(s) differ from "
                      f"{bench.reference}", highlight=False)
            for m in r.mismatches:
                out.print(f"  {m.message()}", highlight=False, markup=False)


def show_ranking(out: Console, bench, verbose: bool = True) -> None:
    """The order, each adjacent pair's verdict, where the ceiling is measured, warnings. Not verbose: the pairs
    on the other metric and the warnings are one line that says how many there are."""
    if bench.verdicts:
        metric = {"cpu": "CPU-seconds per 1,000 docs", "wall": "wall seconds per 1,000 docs"}[bench.metric]
        out.print(f"order on {metric} (> separated, ≈ tied, ? unresolved): {bench.order}", highlight=False)
        out.print(f"{bench.rounds} rounds, stopped: {bench.stopped}; adjacent pairs, ratio slower/faster "
                  f"[99% interval]:", highlight=False)
        for v in bench.verdicts:
            out.print(f"  {pair_text(v)}", highlight=False, markup=False)
        for v in bench.other_pairs if verbose else ():
            out.print(f"  ({v.metric}) {pair_text(v)}", highlight=False, markup=False)
        out.print("the whole order is supported" if bench.decided else
                  "the order is NOT supported where a pair is unresolved (too noisy: more rounds or a quieter "
                  "machine; too close: more rounds; budget/max-runs: raise them)", highlight=False)
    if bench.verdicts:      # inside CouchDB the ceiling caps the gain: say where that is measured
        out.print(qsbench.CEILING_POINTER, highlight=False, markup=False)
    if verbose:
        for w in bench.warnings:
            out.print(f"[yellow]warning[/] {w}", highlight=False)
    else:
        line = collapsed_line(len(bench.warnings), len(bench.other_pairs) if bench.verdicts else 0,
                              {"cpu": "wall time", "wall": "CPU"}.get(bench.metric, "the other metric"))
        if line:
            out.print(line, highlight=False)


def collapsed_line(warnings: int, other_pairs: int, other_metric: str) -> str | None:
    """What the console leaves out without --verbose, in one line: '3 warnings, 6 pairs on wall time: `--verbose`'."""
    parts = ([f"{warnings} warning{'s' if warnings != 1 else ''}"] if warnings else []) + \
            ([f"{other_pairs} pair{'s' if other_pairs != 1 else ''} on {other_metric}"] if other_pairs else [])
    return f"[yellow]{', '.join(parts)}[/]: `--verbose`" if parts else None


def show_ddoc(out: Console, bench) -> None:
    """qsbench --ddoc: each server's time per function, and servers whose rows differ."""
    for res in bench.results:
        if not res.costs:
            continue
        t = Table(title=f"{res.spec.name}: time per function (most expensive view: {res.most_expensive})",
                  title_justify="left")
        for col in ("function", "view(s)", "ms", "share", "alone ms", "calls"):
            t.add_column(col, justify="left" if col in ("function", "view(s)") else "right", no_wrap=True)
        for c in res.costs:
            t.add_row(c.kind, c.views, f"{c.ms:.1f}", f"{c.share:.0%}",
                      "" if c.alone_ms is None else f"{c.alone_ms:.1f}", "" if c.calls is None else str(c.calls))
        out.print(t)
    for res in bench.failed:
        if res.error:
            out.print(f"[red]FAILED[/] {res.spec.name}: {res.error}", highlight=False)
            continue
        counts = ", ".join(f"{v}: {c['docs']} doc(s)" + (", reduce" if c["reduce"] else "")
                           for v, c in res.mismatch_counts.items())
        out.print(f"[red]DIFFERENT[/] {res.spec.name} vs {bench.reference}: {counts}", highlight=False)
        for m in res.mismatches:
            out.print(f"  {m.message()}", highlight=False, markup=False)


def show_inside(out: Console, rep) -> None:
    """qsbench --couchdb (report.qsbench_inside.InsideReport): the protocol's docs/s beside CouchDB's, each
    engine against the ceiling, and the bench's folder."""
    from dragnet.report import share

    rows = rep.rows
    t = Table(title=f"over the protocol and inside CouchDB ({rep.shards} shards), same documents")
    base = next((r.server for r in reversed(rows) if r.protocol_dps), "slowest")
    for col in ("server", "language", "protocol docs/s", f"× {base}", "CouchDB docs/s", f"× {base}", "share"):
        t.add_column(col, justify="left" if col in ("server", "language") else "right")
    f = lambda v, d=0: "–" if v is None else f"{v:,.{d}f}"  # noqa: E731
    for r in rows:
        t.add_row(r.server, r.language, f(r.protocol_dps), f(r.protocol_x, 2), f(r.couchdb_dps), f(r.couchdb_x, 2),
                  "–" if r.share is None else r.share.format())
    out.print(t)
    for line in share.lines(rep.loads):
        out.print(line, highlight=False, markup=False)
    out.print(f"inside CouchDB: {rep.folder}")


def reduce_check_lines(checks: dict, reference: str | None) -> list[str]:
    """The reference engine's order checks (qsbench --ddoc), one line each, or a fault's lines."""
    from dragnet.index.fault import ORDER
    from dragnet.report.render.build_text import describe_finding

    lines = []
    for view, c in checks.items():
        if c.order_dependent:
            ex = c.example
            lines += describe_finding({"query": f"{view} reduce", "cls": ORDER, "differences": 1,
                               "reason": f"{reference} itself gives different results for the same {c.rows} rows in "
                                         f"different orders and chunkings; no engine can be compared on it",
                               "example": ex.__dict__ if ex else None})
        else:
            lines.append(f"{view} reduce: {reference} gave one result over {c.rows} rows in {len(c.trials)} orders "
                         f"and chunkings")
    return lines


def event_line(kind: str, d: dict) -> str | None:
    """A qsbench message for stderr (runner.qsbench's events), in rich markup, or None."""
    if kind == "skipped":
        s = d["spec"]
        return f"[yellow]skipped[/] {s.name}: {s.reason}"
    if kind == "notice":
        return d["message"]
    if kind == "start":
        docs = d["docs"]
        rounds = "adaptive rounds" if d["repeat"] is None else f"{d['repeat']} rounds"
        return (f"{len(docs)} documents ({sum(docs.sizes) / 1e6:.1f} MB) from {docs.origin.get('source')}; "
                f"view {d['view_dir']}; {d['warmup']} warm-up + {rounds}, each in a random order; "
                f"{d['shards']} shard(s)")
    if kind == "ddoc_start":
        docs, design = d["docs"], d["design"]
        rounds = "rounds until decided" if d["repeat"] is None else f"{d['repeat']} rounds"
        return (f"{len(docs)} documents from {docs.origin.get('source')}; {design.id} "
                f"({', '.join(design.view_names)}); {d['warmup']} warm-up + {rounds} of the servers interleaved, "
                f"then each map function alone")
    if kind == "not_inside":
        return f"[yellow]not inside CouchDB[/] {d['why']}"
    if kind == "inside_start":
        return f"inside CouchDB, round {d['repeat'] + 1}: {d['language']} …"
    if kind == "inside_message":
        return d["message"]
    return None


def protocol_outcome(out: Console, outcome, verbose: bool = True) -> None:
    """A view folder's qsbench (runner.qsbench.QsbenchOutcome): table, ranking, failures, files."""
    bench = outcome.run.bench
    show_table(out, bench, outcome.docs, outcome.request.shards, verbose)
    show_ranking(out, bench, verbose)
    show_failures(out, bench)
    out.print(f"results: {outcome.run.path}")
    if outcome.chart:
        out.print(f"chart:   {outcome.chart}")


def ddoc_outcome(out: Console, outcome, verbose: bool = True) -> None:
    """qsbench --ddoc: table, ranking, each function's cost, the reduce checks, the results file."""
    got = outcome.run
    bench = got.bench
    show_table(out, bench, outcome.docs, 1, verbose)
    show_ranking(out, bench, verbose)
    show_ddoc(out, bench)
    for line in reduce_check_lines(got.checks, bench.reference):
        out.print(line, highlight=False, markup=False)
    out.print(f"results: {got.path}")


def json_outcome(outcome) -> dict:
    """What qsbench --json prints: the results document without per-document latencies, and its files."""
    compact = outcome.run.compact()
    compact["results_file"] = str(outcome.run.path)
    if not outcome.ddoc:
        compact["chart"] = str(outcome.chart) if outcome.chart else None
    return compact
