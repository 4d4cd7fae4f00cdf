"""The report in the terminal: rich tables, then the sections under them."""

from __future__ import annotations

import click

from dragnet.report.model import Report
from dragnet.report.render import text


def show(rep: Report) -> None:
    from dragnet.report.console import render_compare, render_design_table, render_disk_matters, render_table

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


def show_bench(rep) -> None:
    """The end of `dragnet bench` (report.model.BenchReport)."""
    from dragnet.report import share
    from dragnet.report.console import (differences_lines, render_compare, render_design_table,
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
    if rep.load:
        from dragnet.report import load as report_load

        click.echo("\n".join(report_load.lines(rep.load)))
    for r in rep.failed:
        click.echo(f"failed: {r['storage']} round {r['repeat'] + 1} {r['language']}: {r['error']}")
    for line in differences_lines(rep.folder, runs):
        click.echo(line)
    if rep.comparison is not None:
        render_compare(rep.comparison)
    click.echo(f"results: {rep.folder} (`dragnet report {rep.folder} --plot DIR` for charts)")


def history(h) -> None:
    """`dragnet history` (report.history.History): a metric per cell over the saved runs, steps in red, how
    many steps, and the chart if drawn."""
    from rich.table import Table
    from rich.text import Text

    from dragnet.report import history as hi
    from dragnet.report.console import console
    from dragnet.results.store import METRICS

    table = Table(title=f"{METRICS[h.metric]} by {h.by}, {h.saved} saved runs", header_style="bold")
    for col in hi.COLUMNS:
        table.add_column(col)
    for row in hi.table_rows(h.series, h.metric):
        table.add_row(*(Text(x) for x in row), style="red" if row[-1] == "STEP" else None)
    console(160).print(table)
    steps = sum(p.step for s in h.series for p in s.points)
    click.echo(f"{steps} step(s): {hi.STEP_TEST}")
    if h.chart:
        click.echo(f"chart: {h.chart.path}")
