"""The report in the terminal: rich tables, then the sections under them."""

from __future__ import annotations

import click

from dragnet.report.model import Report
from dragnet.report.render import text


def show(rep: Report) -> None:
    from dragnet.report.terminal import render_compare, render_design_table, render_disk_matters, render_table

    if rep.forecast_only:
        click.echo(text.forecast_only(rep), nl=False)
        return
    if rep.groups or not (rep.design_groups or rep.nouveau):
        render_table(rep.groups, title=f"{len(rep.docs)} results")
        for g in rep.groups:
            for err in g.errors:
                click.echo(f"failed: {g.label} ({g.storage}): {err}")
    if rep.design_groups:
        render_design_table(rep.design_groups, title="design documents")
    if rep.comparison is not None:
        render_compare(rep.comparison)
    if rep.disk_reference:
        render_disk_matters(rep.disk_rows, rep.disk_reference)
    text.tail(rep, click.echo, markdown=False)
    from dragnet.report import profile_text      # --profile: one line per build kind, its levers

    for line in profile_text.bench_lines(rep.docs):
        click.echo(line)


def show_bench(rep) -> None:
    """The end of `dragnet bench` (report.model.BenchReport)."""
    from dragnet.report import share
    from dragnet.report.terminal import (differences_lines, render_compare, render_design_table,
                                        render_disk_matters, render_table)

    runs = rep.runs
    # an OOM-killed run is a scenario's result, not a failure, but it is not an ok build either
    ooms = sum(1 for r in runs if r["status"] == "oom")
    title = f"{sum(1 for r in runs if r['status'] == 'ok')} of {len(runs)} runs ok" + (
        f", {ooms} OOM-killed" if ooms else "")
    if rep.groups:
        render_table(rep.groups, title=title)
    if rep.design_groups:
        render_design_table(rep.design_groups, title=title)
    if rep.disk_reference:
        render_disk_matters(rep.disk_rows, rep.disk_reference)
    if rep.shares:
        click.echo("\n".join(share.lines(rep.shares)))
    if rep.beam:
        from dragnet.report import beam_activity

        click.echo("\n".join(beam_activity.lines(rep.beam)))
    from dragnet.report import profile_text      # --profile: one line per build kind, its levers

    for line in profile_text.bench_lines(rep.docs):
        click.echo(line)
    if rep.load:
        from dragnet.report import load as report_load

        click.echo("\n".join(report_load.lines(rep.load)))
    if rep.nouveau:
        from dragnet.report import search_text as nouveau

        click.echo("\n".join(nouveau.section_lines(rep.nouveau)))
    for r in rep.failed:
        click.echo(f"failed: {r['storage']} round {r['repeat'] + 1} {r['language']}: {r['error']}")
    for line in differences_lines(rep.folder, runs):
        click.echo(line)
    if rep.comparison is not None:
        render_compare(rep.comparison)
    click.echo(f"results: {rep.folder} (`dragnet report {rep.folder} --plot DIR` for charts)")


def bench_outcome(out) -> None:
    """The end of `dragnet bench` in any mode (runner.bench.BenchOutcome); an interruption says what was kept."""
    if out.interrupted is not None:
        interrupted(out)
    elif out.mode == "nouveau":
        show_nouveau(out.report, out.folder)
    elif out.mode == "auto":
        from dragnet.report.render.bench_text import auto_lines

        rep, rounds = out.report
        show(rep)
        for line in auto_lines(rounds):
            click.echo(line, err=True)
    else:
        {"matrix": show_bench, "gate": show_gate, "mango": show_mango, "sizes": show_sizes}[out.mode](out.report)


def interrupted(out) -> None:
    """What an interrupted bench kept: the matrix on the progress console, the gate on stdout, the rest on stderr."""
    if out.mode == "matrix":
        from rich.console import Console

        Console(stderr=True).print(out.interrupted)
    else:
        click.echo(out.interrupted, err=out.mode != "gate")


def show_gate(outcome) -> None:
    """`bench --gate` (runner.gate.GateOutcome): the comparison of the two revisions and where the rounds are."""
    from dragnet.report.terminal import render_compare

    if outcome.comparison is None:
        click.echo(f"gate: {outcome.changes}: the same index, nothing built; pass")
        return
    render_compare(outcome.comparison)
    click.echo(f"gate: {outcome.rounds} rounds in {', '.join(str(d) for d in outcome.dirs)}"
               + (f" (warm-up round, not counted: {outcome.warmup})" if outcome.warmup else ""))


def show_mango(rep) -> None:
    """`bench --mango` (runner.bench.MangoReport): the design table, Mango against each engine, warnings,
    row differences."""
    from dragnet.report.terminal import differences_lines, render_design_table
    from dragnet.report.mango import versus_lines

    summary, runs = rep.summary, rep.runs
    if rep.design_groups:
        render_design_table(rep.design_groups, title=f"{sum(1 for r in runs if r['status'] == 'ok')} of {len(runs)} "
                                                     f"runs ok")
    for line in versus_lines(summary["versus"]):
        click.echo(line)
    for w in summary["warnings"]:
        click.echo(f"warning: {w}")
    for ix in summary["indexes"]:
        for line in differences_lines(ix["dir"], ix["manifest"]["runs"]):
            click.echo(line)
    click.echo(f"results: {summary['dir']}")


def show_sizes(rep: dict) -> None:
    """A size sweep (report.sizes_table.sweep_report)."""
    from dragnet.report.terminal import render_sizes

    render_sizes(rep)


def show_nouveau(manifest: dict, path) -> None:
    """`bench --nouveau`: the report of its folder (the one table views and search indexes share, the ranking,
    the check queries), then where its manifest is (path)."""
    from pathlib import Path

    from dragnet.report import model

    show(model.build([str(Path(path).parent)]))
    click.echo(f"results: {path} and one file per build")


def history(h) -> None:
    """`dragnet history` (report.history.History): a metric per cell over the saved runs, steps in red, how
    many steps, and the chart if drawn."""
    from rich.table import Table
    from rich.text import Text

    from dragnet.report import columns, history as hi
    from dragnet.report.terminal import console
    from dragnet.results.store import METRICS

    table = Table(title=f"{METRICS[h.metric]} by {h.by}, {h.saved} saved runs", header_style="bold")
    for col in columns.headers(hi.HISTORY):
        table.add_column(col)
    rows = hi.rows(h.series, h.metric)
    for row, cells in zip(rows, columns.text_rows(hi.HISTORY, rows)):
        table.add_row(*(Text(x) for x in cells), style="red" if row.point.step else None)
    console(160).print(table)
    steps = sum(p.step for s in h.series for p in s.points)
    click.echo(f"{steps} step(s): {hi.STEP_TEST}")
    if h.chart:
        click.echo(f"chart: {h.chart.path}")


def addview_outcome(out) -> None:
    """The end of `dragnet addview` (build.session.AddviewOutcome); --mango printed each index as it was built."""
    if out.mode in ("put_design", "add_view"):
        saved = out.saved
        verb = "created" if saved["created"] else "updated"
        if out.mode == "put_design":
            click.echo(f"{verb} {saved['ddoc']} in {out.db} from {out.design.source}: views "
                       f"{', '.join(saved['views'])} ({saved['language']}), rev {saved['rev']}")
        else:
            click.echo(f"{verb} {saved['ddoc']} in {out.db}: view {saved['view']} ({saved['language']}), "
                       f"rev {saved['rev']}; views: {', '.join(saved['views'])}")
    elif out.mode == "per_view":
        from dragnet.report.render import build_text

        click.echo(f"{out.design.id} on {out.db}: whole design doc, then each view alone")
        for line in build_text.format_table(out.per_view):
            click.echo(line)
    elif out.mode == "benchmark":
        from dragnet.report.render import build_text

        o = out.outcome
        click.echo(f"{o.results['view']['ddoc']} ({o.results['view']['language']}) on {out.db}")
        for line in build_text.format_report(o.results, o.figures):
            click.echo(line)
        from dragnet.report import profile_text      # --profile: stages, perf's cost, the folded file, levers

        for line in profile_text.build_lines({**o.results, "_source": str(o.path) if o.path else None}):
            click.echo(line)
        if out.beside:
            from dragnet.report import load as report_load

            click.echo("\n".join(report_load.lines(report_load.section([o.results]))))
        if o.path:
            click.echo(f"results: {o.path}")
    elif out.mode == "nouveau":
        from dragnet.report.search_text import build_lines

        for line in build_lines(out.nouveau):
            click.echo(line)
        click.echo(f"results: {out.nouveau['results_file']}")


def addview_mango_index(built: dict) -> None:
    """One `addview --mango` index as soon as it is built (the "mango_built" event of build.session)."""
    from dragnet.report.render import build_text

    ix, o, warning = built["index"], built["outcome"], built["warning"]
    click.echo(f"mango index {ix.name} ({', '.join(ix.fields)}) built by {built['language'] or 'Mango'} on "
               f"{built['db']}")
    for line in build_text.format_report(o.results, o.figures):
        click.echo(line)
    if warning:
        click.echo(f"warning: {warning}")
    if o.path:
        click.echo(f"results: {o.path}")


def couch_where(inst) -> str:
    """Where a CouchDB started by `dragnet couch up` runs and keeps its data (couchdb.control.Instance)."""
    if inst.backend == "docker":
        data = inst.volume and f"volume {inst.volume}" or inst.data_dir or "tmpfs in the container"
        who = f"container {inst.container_name} ({(inst.container or '')[:12]}), image {inst.image}"
    else:
        data = inst.data_dir
        who = f"pid {inst.pid}, home {inst.home}, log {inst.log}"
    return f"{who}; storage {inst.storage}: {data}"


def couch_up(out) -> None:
    """The end of `dragnet couch up` (couchdb.up.UpOutcome): where the CouchDB (or each node) and Nouveau run."""
    if out.nodes != 1:
        click.echo(f"CouchDB cluster of {out.nodes} nodes is up; _membership: {', '.join(out.report['cluster_nodes'])}")
        for inst in out.instances:
            click.echo(f"  {inst.display_url}  {couch_where(inst)}")
        return
    inst, search = out.instances[0], out.search
    click.echo(f"CouchDB {out.report.get('version') or '?'} is up at {inst.display_url}")
    click.echo(couch_where(inst))
    if search is not None:
        click.echo(f"Nouveau {search.version} is up at {search.url} (pid {search.pid}, Java "
                   f"{search.java_version}{', -Xmx' + search.heap if search.heap else ''}; log {search.log})")


def prune_item(it) -> str:
    """One Docker object `couch prune` lists (dragnet.couchdb.prune.Item): kind, name, port or temporary, state."""
    where = f"port {it.port}" if it.port is not None else "temporary"
    return f"{it.kind} {it.name} ({where}{', ' + it.state if it.state else ''})"
