"""`dragnet report`: tables and charts from results files and bench directories."""

from __future__ import annotations

import click

from .. import report as rp
from .options import print_json


def _console(min_width: int):
    import shutil
    import sys

    from rich.console import Console

    # the terminal's width; wide enough for every column when output goes to a pipe or a file
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else min_width
    return Console(width=width)


def render_table(groups, title: str | None = None) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, header_style="bold")
    for i, col in enumerate(rp.COLUMNS):
        table.add_column(col, justify="left" if i in (0, 1, 13) else "right", no_wrap=i in (0, 8, 13))
    for row in rp.table_rows(groups):
        table.add_row(*(Text(c) for c in row))  # Text: "[...]" in a label is not rich markup
    _console(200).print(table)


def render_deltas(deltas) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(title="compared with the baseline set (changed: |Δmedian| > max σ and outside its min…max)",
                  header_style="bold")
    for col in rp.DELTA_COLUMNS:
        table.add_column(col)
    for row in rp.delta_rows(deltas):
        style = {"▲ better": "green", "▼ worse": "red"}.get(row[-1])
        table.add_row(*(Text(c) for c in row), style=style)
    _console(160).print(table)


@click.command("report")
@click.argument("results", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "csv", "json"]), default="table",
              show_default=True, help="Output format.")
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), default=None,
              help="Write PNG charts into this directory.")
@click.option("--baseline", "baseline", type=click.Path(), multiple=True,
              help="Earlier results (file or directory, repeatable) to compare with; marks changes beyond "
                   "the measured spread.")
def report_cmd(results, fmt, plot_dir, baseline):
    """Summarize RESULTS (addview results files or bench directories): medians per language and storage,
    ratio to the Erlang baseline, spread over repeats, resources per process family."""
    docs = rp.load_results(results)
    groups = rp.build_report(docs)
    deltas = rp.compare(groups, rp.build_report(rp.load_results(baseline))) if baseline else None

    if fmt == "json":
        out = rp.to_json(groups, deltas)
    elif fmt == "markdown":
        click.echo(rp.to_markdown(groups), nl=False)
        if deltas is not None:
            click.echo()
            click.echo(rp.deltas_markdown(deltas), nl=False)
    elif fmt == "csv":
        click.echo(rp.to_csv(groups, deltas), nl=False)
    else:
        render_table(groups, title=f"{len(docs)} results")
        for g in groups:
            for err in g.errors:
                click.echo(f"failed: {g.label} ({g.storage}): {err}")
        if deltas is not None:
            render_deltas(deltas)

    if plot_dir:
        from .. import charts

        drawn = charts.write_charts(docs, groups, plot_dir)
        if fmt == "json":
            out["charts"] = [str(c.path) for c in drawn]
        else:
            click.echo(f"charts: {', '.join(str(c.path) for c in drawn)}", err=True)
    if fmt == "json":
        print_json(out)
