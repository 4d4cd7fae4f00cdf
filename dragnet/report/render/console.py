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
    if rep.groups or not rep.design_groups:
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
