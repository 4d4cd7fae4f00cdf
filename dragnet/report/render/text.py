"""The sections console and Markdown share after their tables: Nouveau, iostat, --by, engine share, forecast."""

from __future__ import annotations

from typing import Callable

from dragnet.report.model import Report


def tail(rep: Report, echo: Callable[..., None], markdown: bool) -> None:
    from dragnet.report import by_axis, share
    from dragnet.report.console import render_forecast
    from dragnet.report.io_table import IO_COLUMNS
    from dragnet.report.render.pipe import md_table

    if rep.nouveau:
        from dragnet.report import nouveau

        lines = nouveau.section_lines(rep.nouveau)
        echo("\n".join([lines[0].replace("\n", "\n**") + "**", "", "```", *lines[1:], "```"]
                        if markdown else lines))
    if rep.io_rows or rep.io_notes:
        echo("\niostat on the data's disk (medians over builds of each build's averages):\n" if rep.io_rows else "")
        if rep.io_rows:
            echo(md_table(IO_COLUMNS, rep.io_rows), nl=False)
        for n in rep.io_notes:
            echo(n)
    if rep.by_groups is not None:
        echo("\n".join(by_axis.lines(rep.by_groups, rep.by)))
    if rep.shares:
        echo("\n" + "\n".join(share.lines(rep.shares)))
    if rep.load:
        from dragnet.report import load as report_load

        echo("\n".join(report_load.lines(rep.load)))
    if rep.forecasts:   # a forecast among the results: its own section
        echo(("\n**forecast**\n\n```\n" if markdown else "\nforecast\n")
             + "\n\n".join(render_forecast(f) for f in rep.forecasts) + ("\n```" if markdown else ""))


def forecast_only(rep: Report) -> str:
    from dragnet.report.console import render_forecast

    return "\n\n".join(render_forecast(f) for f in rep.forecasts) + "\n"
