"""`dragnet compare` and `dragnet history`: results sets compared cell by cell, a metric over saved runs."""

from __future__ import annotations

import sys

import click

from dragnet.cli.options import json_option, print_json, store_option
from dragnet.report.terminal import render_compare
from dragnet.report.render import console as render_console
from dragnet.report.render.markdown import compare_markdown


@click.command("compare")
@click.argument("old")
@click.argument("new", required=False)
@click.option("--along", default=None, metavar="AXIS",
              help="With one results set: the axis to compare along [default: the one with two values].")
@click.option("--fail-if-slower", "fail_if_slower", default=None, metavar="PCT",
              help="Exit 1 when a cell's whole 99% interval lies above +PCT (e.g. 5%), or its builds newly fail; "
                   "exit 0 when every interval lies below; exit 3 when some cell cannot tell yet (the rounds that "
                   "would likely decide are printed).")
@click.option("--metric", type=click.Choice(["cpu", "qs", "instructions", "wall"]), default="cpu", show_default=True,
              help="Decide on CPU-seconds per 1,000 documents (falls back to wall where no CPU was recorded; qs: "
                   "the query servers' own CPU, for a change in the map functions; instructions: their valgrind "
                   "counts, recorded by bench --gate --metric instructions) or on wall time.")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json"]), default="table",
              show_default=True, help="Output format (markdown: for a pull-request comment).")
@click.option("--markdown", is_flag=True, help="The same as --format markdown.")
@click.option("--json", "as_json", is_flag=True, help="The same as --format json.")
@click.option("--no-rows", is_flag=True, help="Do not compare the dumped rows of design-doc builds.")
@store_option
def compare_cmd(old, new, along, fail_if_slower, metric, fmt, markdown, as_json, no_rows, store_dir):
    """Compare OLD and NEW (results files, bench folders or baseline names in the store) cell by cell: the
    ratio of CPU per document (or wall time) with a 99% interval, paired by bench round, and a verdict
    (improved, regressed, no change, undecided); views whose rows changed; cells on one side only. With only OLD, compare along
    the axis that has two values (e.g. two design doc revisions in one bench)."""
    from dragnet.errors import UsageError
    from dragnet.report import compare as c

    threshold = c.parse_threshold(fail_if_slower) if fail_if_slower is not None else None
    if markdown and as_json:
        raise UsageError("--markdown and --json: give one of them")
    as_json, markdown = as_json or fmt == "json", markdown or fmt == "markdown"
    if markdown and as_json:
        raise UsageError(f"--format {fmt} with --{'markdown' if fmt == 'json' else 'json'}: give one of them")
    cmp = c.compare_sets(old, new, along=along, store_dir=store_dir, threshold=threshold, rows=not no_rows,
                         metric=metric)
    from dragnet.report.where_changed import lines as where_lines, where

    changed = where(cmp)      # --profile on both sides: which stage of the build changed
    if as_json:
        print_json({**cmp.to_json(), "where_changed": changed.as_dict()})
    elif markdown:
        click.echo(compare_markdown(cmp) + "".join(f"- {line.strip()}\n" for line in where_lines(changed)), nl=False)
    else:
        render_compare(cmp)
        for line in where_lines(changed):
            click.echo(line)
    if cmp.exit_code:
        sys.exit(cmp.exit_code)


@click.command("history")
@click.option("--by", type=click.Choice(["date", "couchdb", "otp", "engine", "ddoc"]), default="date",
              show_default=True, help="Group the runs: each run, or runs with the same CouchDB/OTP/JS engine "
                                      "version or design doc hash.")
@click.option("--metric", type=click.Choice(["docs_s", "index_bytes", "peak_rss"]), default="docs_s",
              show_default=True, help="The figure to follow.")
@click.option("--where", "where", multiple=True, metavar="AXIS=VALUE",
              help="Only cells with this axis value (repeatable), e.g. language=javascript.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None, help="Write the chart (PNG).")
@json_option
@store_option
def history_cmd(by, metric, where, plot_path, as_json, store_dir):
    """A metric over the runs saved in the results store (bench --save-baseline), per cell, with steps flagged
    where the runs before and after differ significantly."""
    from dragnet.report.history import history

    h = history(store_dir, metric, by, where, plot_path)
    print_json(h.as_json()) if as_json else render_console.history(h)
