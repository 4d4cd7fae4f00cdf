"""`dragnet report`: tables and charts from results files and bench directories."""

from __future__ import annotations

from pathlib import Path

import click

from dragnet.errors import UsageError
from dragnet.cli.options import format_option, print_json
from dragnet.report.render import formats
from dragnet.results.schema import read_json


@click.command("report")
@click.argument("results", nargs=-1, required=True, type=click.Path())
@format_option(formats.names)
@click.option("--json", "json_alias", is_flag=True, help="The same as --format json.")
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
def report_cmd(results, fmt, json_alias, plot_dir, baseline, reference, html_dir, compare_json, by):
    """Summarize RESULTS (addview results files or bench directories): medians per language and storage,
    ratio to the Erlang baseline, spread over repeats, resources per process family. Design-doc benchmarks
    (--ddoc) get their own table per design doc, view, engine and storage: ratio to the reference engine,
    rows compared and differences, --update lag."""
    from dragnet.report import model
    from dragnet.report.render import files

    fmt = "json" if json_alias else fmt
    structured = formats.get(fmt).data is not None
    if compare_json and not html_dir:
        raise UsageError("--compare-json goes with --html DIR")
    if compare_json and baseline:
        raise UsageError("--compare-json and --baseline: give one of them (both fill the page's compare section)")
    cmp_doc = None
    if compare_json:
        from dragnet.report.html import check_compare
        cmp_doc = check_compare(read_json(Path(compare_json)), compare_json)
    rep = model.build(results, baseline=baseline, reference=reference, by=by, forecast_alone=not html_dir)
    files.check(rep, plot_dir, html_dir)
    out = formats.render(rep, fmt)
    if not structured and out is not None:
        click.echo(out, nl=False)
    if rep.forecast_only:
        if structured:
            print_json(out)
        return
    if plot_dir:
        drawn = files.charts(rep, plot_dir)
        if structured:
            out["charts"] = [str(p) for p in drawn]
        else:
            click.echo(f"charts: {', '.join(str(p) for p in drawn)}", err=True)
    if html_dir:
        page = files.html(rep, html_dir, cmp_doc)
        if structured:
            out["html"] = str(page)
        else:
            click.echo(f"html: {page}", err=True)
    if structured:
        print_json(out)
