"""`dragnet report`: tables and charts from results files and bench directories."""

from __future__ import annotations

from pathlib import Path

import click

from dragnet.report import tables as rp
from dragnet.errors import UsageError
from dragnet.cli.options import print_json
from dragnet.report.console import render_design_table, render_disk_matters, render_table
from dragnet.results.load import load_results
from dragnet.results.schema import read_json


@click.command("report")
@click.argument("results", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "csv", "json"]), default="table",
              show_default=True, help="Output format.")
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), default=None,
              help="Write PNG charts into this directory.")
@click.option("--baseline", "baseline", type=click.Path(), multiple=True,
              help="Earlier results (file, directory or baseline name; repeatable) to compare with, as "
                   "`dragnet compare` does.")
@click.option("--reference", default=None, metavar="ENGINE",
              help="Design-doc benchmarks: the engine '× ref' divides by [default: the one the bench compared "
                   "rows with].")
@click.option("--html", "html_dir", type=click.Path(file_okay=False), default=None,
              help="Write one self-contained page (DIR/index.html, opens offline) with the tables, sortable, "
                   "interactive charts and links to every number's raw samples (copies in DIR/raw/).")
@click.option("--compare-json", "compare_json", type=click.Path(dir_okay=False), default=None,
              help="With --html: a `dragnet compare --json` output to add as the page's compare section "
                   "(--baseline fills it too).")
@click.option("--by", "by", default=None, metavar="AXIS[,AXIS]",
              help="Compare along bench axes (couchdb, config, cpus, q, storage, …) within each combination of "
                   "the others: medians and the significance of each adjacent pair.")
def report_cmd(results, fmt, plot_dir, baseline, reference, html_dir, compare_json, by):
    """Summarize RESULTS (addview results files or bench directories): medians per language and storage,
    ratio to the Erlang baseline, spread over repeats, resources per process family. Design-doc benchmarks
    (--ddoc) get their own table per design doc, view, engine and storage: ratio to the reference engine,
    rows compared and differences, --update lag."""
    from dragnet.bench.scenario import disk_matters, disk_summary, memory_advice, runs_from_results, verdict

    if compare_json and not html_dir:
        raise UsageError("--compare-json goes with --html DIR")
    if compare_json and baseline:
        raise UsageError("--compare-json and --baseline: give one of them (both fill the page's compare section)")
    cmp_doc = None
    if compare_json:
        from dragnet.report.html import check_compare
        cmp_doc = check_compare(read_json(Path(compare_json)), compare_json)
    try:
        docs = load_results(results)
    except UsageError:
        from dragnet.forecast.run import find_forecasts

        forecasts = find_forecasts(results)
        if not forecasts or html_dir or by or baseline:   # a forecast alone (its sweep's builds not kept)
            raise
        from dragnet.report.console import render_forecast

        if fmt == "json":
            print_json({"forecast": forecasts})
        else:
            click.echo("\n\n".join(render_forecast(f) for f in forecasts))
        return
    by_cmp = None
    if by:
        from dragnet.report import by_axis as report_by

        by_names = report_by.parse_by(by)
        by_cmp = report_by.compare(docs, by_names)
    sc_runs, sc_ref = runs_from_results(docs)
    sc_rows = disk_matters(sc_runs, sc_ref) if sc_ref else []
    groups = rp.build_report(docs)
    dgroups = rp.build_design_report(docs, reference)
    cmp = None
    if baseline:
        from dragnet.report import compare as compare
        from dragnet.results import store as store

        old = [r for spec in baseline for r in store.load_side(spec, store.default_dir())[1]]
        cmp = compare.compare(old, docs, old_label=" ".join(baseline), new_label=" ".join(results))
    if fmt == "csv" and cmp is not None:
        raise UsageError("--baseline has no CSV form: use --format table, markdown or json")
    if fmt == "csv" and groups and dgroups:
        raise UsageError("--format csv: view-file and design-doc results have different columns; "
                         "report them separately")

    if fmt == "json":
        out = rp.to_json(groups)
        if cmp is not None:
            out["comparison"] = cmp.to_json()
        if dgroups:
            out["design"] = rp.design_json(dgroups)
        if sc_ref:
            out.update(reference_scenario=sc_ref, **disk_summary(sc_rows, sc_ref))
    elif fmt == "markdown":
        if groups or not dgroups:
            click.echo(rp.to_markdown(groups), nl=False)
            lines = rp.ranking_lines(groups)
            if lines:
                click.echo("\n" + "\n".join(lines[:1] + [f"- {x.strip()}" for x in lines[1:]]))
        if dgroups:
            if groups:
                click.echo()
            click.echo(rp.design_markdown(dgroups), nl=False)
        if cmp is not None:
            from dragnet.report.compare import to_markdown
            click.echo()
            click.echo(to_markdown(cmp), nl=False)
        if sc_ref:
            from dragnet.report.scenario_table import DISK_COLUMNS, disk_rows
            click.echo(f"\n**disk matters?** (× = docs/s against {sc_ref})\n")
            click.echo(rp.md_table(DISK_COLUMNS, disk_rows(sc_rows)), nl=False)
            click.echo("".join(f"\n- memory: {line}" for line in memory_advice(sc_rows, sc_ref)))
            click.echo(f"\n**verdict:** {verdict(sc_rows, sc_ref)}")
    elif fmt == "csv":
        click.echo(rp.design_csv(dgroups) if dgroups else rp.to_csv(groups), nl=False)
    else:
        if groups or not dgroups:
            render_table(groups, title=f"{len(docs)} results")
            for g in groups:
                for err in g.errors:
                    click.echo(f"failed: {g.label} ({g.storage}): {err}")
        if dgroups:
            render_design_table(dgroups, title="design documents")
        if cmp is not None:
            from dragnet.report.console import render_compare as render
            render(cmp)
        if sc_ref:
            render_disk_matters(sc_rows, sc_ref)

    from dragnet.report.io_table import IO_COLUMNS, io_rows

    io, io_notes = io_rows(docs)
    if fmt == "json":
        out["iostat"] = {"columns": list(IO_COLUMNS), "rows": io, "notes": io_notes}
    elif fmt != "csv" and (io or io_notes):
        click.echo("\niostat on the data's disk (medians over builds of each build's averages):\n"
                   if io else "")
        if io:
            click.echo(rp.md_table(IO_COLUMNS, io), nl=False)
        for n in io_notes:
            click.echo(n)

    if by_cmp is not None:
        if fmt == "json":
            out["by"] = {"axes": by_names, "groups": by_cmp}
        else:
            click.echo("\n".join(report_by.lines(by_cmp, by_names)))

    from dragnet.report import share as share

    loads = share.shown(share.workloads(docs))   # per storage and axis combination, so --by sees its own
    if fmt == "json":
        out["engine_share"] = share.to_json(loads)
    elif fmt != "csv" and loads:
        click.echo("\n" + "\n".join(share.lines(loads)))

    from dragnet.report import load as report_load

    under_load = report_load.section(docs)
    if under_load and fmt == "json":
        out["load"] = under_load
    elif under_load and fmt != "csv":
        click.echo("\n".join(report_load.lines(under_load)))

    from dragnet.forecast.run import find_forecasts
    forecasts = find_forecasts(results)
    if forecasts:   # a forecast among the results: its own section
        from dragnet.report.console import render_forecast
        if fmt == "json":
            out["forecast"] = forecasts
        elif fmt != "csv":
            click.echo(("\n**forecast**\n\n```\n" if fmt == "markdown" else "\nforecast\n")
                       + "\n\n".join(render_forecast(f) for f in forecasts) + ("\n```" if fmt == "markdown" else ""))

    if plot_dir:
        from dragnet.report import charts as charts

        drawn = charts.write_charts(docs, groups, plot_dir)
        if sc_ref:
            drawn.append(charts.disk_matters(sc_rows, sc_ref, Path(plot_dir) / "disk_matters.png"))
        if fmt == "json":
            out["charts"] = [str(c.path) for c in drawn]
        else:
            click.echo(f"charts: {', '.join(str(c.path) for c in drawn)}", err=True)
    if html_dir:
        from dragnet.report import html as hr

        extra = [s for f in forecasts for s in hr.forecast_sections(f)]
        if by_cmp is not None:
            extra += hr.by_axis_sections(by_cmp, by_names)
        extra += hr.share_sections(loads)
        page = hr.write_html(html_dir, hr.Inputs(docs, groups, dgroups, sc_rows, sc_ref, hr.load_sizes(results),
                                                 cmp.to_json() if cmp is not None else cmp_doc), extra=extra)
        if fmt == "json":
            out["html"] = str(page)
        else:
            click.echo(f"html: {page}", err=True)
    if fmt == "json":
        print_json(out)
