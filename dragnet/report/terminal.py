"""The console renderers: the report's tables, comparisons and forecasts as a person reads them in a
terminal (rich tables, plain lines). They only format what dragnet.report and dragnet.forecast computed."""

from __future__ import annotations

import click

from dragnet.report import columns
from dragnet.report.render import cells as cell_text


def console(min_width: int):
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
    for col in (c for c in columns.GROUP if c.header is not None):
        table.add_column(col.header, justify="left" if col.left else "right", no_wrap=col.no_wrap)
    for row in cell_text.table_rows(groups):
        table.add_row(*(Text(c) for c in row))  # Text: "[...]" in a label is not rich markup
    console(200).print(table)
    for line in cell_text.ranking_lines(groups):
        click.echo(line)


def render_design_table(groups, title: str | None = None) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, header_style="bold", caption=cell_text.DESIGN_LEGEND)
    for col in (c for c in columns.DESIGN if c.header is not None):
        table.add_column(col.header, justify="left" if col.left else "right", no_wrap=col.no_wrap)
    for row in cell_text.design_table_rows(groups):
        table.add_row(*(Text(c) for c in row))
    console(220).print(table)
    for line in cell_text.design_ranking_lines(groups) + cell_text.design_notes(groups):
        click.echo(line)


def render_disk_matters(rows, ref: str, at: str = "") -> None:
    """The "disk matters?" table (scenario.disk_matters() rows), its memory lines and verdict; `at` names
    what the table is of (" at 10,000 documents" in a size sweep)."""
    from rich.table import Table
    from rich.text import Text

    from dragnet.report.scenario_table import memory_advice, verdict
    from dragnet.report.scenario_table import disk_rows
    table = Table(title=f"disk matters?{at} (× = docs/s against {ref})", header_style="bold")
    for col in columns.headers(columns.DISK):
        table.add_column(col)
    for cells in disk_rows(rows):
        table.add_row(*(Text(c) for c in cells))
    console(200).print(table)
    for line in memory_advice(rows, ref):
        click.echo(f"memory{at}: {line}")
    click.echo(f"verdict{at}: {verdict(rows, ref)}")


def render_compare(cmp) -> None:
    from rich.table import Table
    from rich.text import Text

    from dragnet.report import compare as c

    table = Table(title=c.title(cmp), header_style="bold")
    for col in c.COMPARE:
        table.add_column(col.header, justify="left" if col.left else "right")
    for cell, row in zip(cmp.cells, c.table_rows(cmp)):
        style = {c.REGRESSED: "red", c.IMPROVED: "green"}.get(cell.label)
        table.add_row(*(Text(x) for x in row), style=style)
    console(160).print(table)
    for line in c.notes(cmp):
        click.echo(line)


def distribution_lines(sample: dict, target: dict) -> str:
    t_docs = target["doc_count"]
    t_ext = (target.get("sizes") or {}).get("external")
    t_mean = f"{t_ext / t_docs:,.1f}" if t_ext else "–"
    return "\n".join([
        f"{'bytes/doc':<9} {'docs':>10} {'mean':>10} {'p50':>9} {'p90':>9} {'p99':>9} {'max':>10}",
        f"{'sample':<9} {sample['docs']:>10,} {sample['mean']:>10,.1f} {sample['p50']:>9,} {sample['p90']:>9,} "
        f"{sample['p99']:>9,} {sample['max']:>10,}",
        f"{'target':<9} {t_docs:>10,} {t_mean:>10} {'–':>9} {'–':>9} {'–':>9} {'–':>10}",
        "(target: GET /db sizes.external / doc_count; the sample: its data file's lines)"])


def sample_check_lines(checks: dict) -> list[str]:
    """The sample against the target, before any build (dragnet.forecast.shape.check): its warnings, what
    could not be checked, or that both checks held."""
    out = [f"warning: {w['message']}" for w in checks.get("warnings") or []]
    out += [f"not checked: {w}" for w in checks.get("not_checked") or []]
    if not out and checks.get("target"):
        rows = "document size and rows per document" if (checks["target"].get("rows_per_doc")) else "document size"
        out.append(f"the sample looks like the target: {rows} within {checks.get('goal', 0.1):.0%}")
    return out


def render_sizes(rep: dict) -> None:
    """A size sweep's report (dragnet.report.sizes_table.sweep_report): its table, "disk matters?" per size,
    slopes, memory marks, failures and chart."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from dragnet.bench import sizes as sz
    from dragnet.couchdb.storage import format_size
    from dragnet.report.sizes_table import describe_slope, table_cells

    an = rep["analysis"]
    rows = [sz.SizeRow(**r) for r in an["rows"]]      # what analyse() computed, not computed again
    table = Table(title=f"sizes ({rep['n_ok']} of {len(rep['runs'])} runs ok)", header_style="bold")
    for col in columns.headers(columns.SIZES):
        table.add_column(col)
    for cells in table_cells(rows):
        table.add_row(*(Text(c) for c in cells))
    Console(width=200).print(table)
    for n, rows_ in rep["disk"].items():
        render_disk_matters(rows_, rep["reference"], at=f" at {n:,} documents")
    for f in an["fits"]:
        fit = sz.Fit(**{k: f[k] for k in ("slope", "intercept", "r2", "points")}) if f["slope"] is not None \
            else None
        click.echo(f"slope {f['language']}{' ' + f['scenario'] if f['scenario'] else ''}: "
                   f"{describe_slope(fit)}")
    for limit, n in an["first_exceeding_memory"].items():
        click.echo(f"memory limit {format_size(int(limit))}: " + (
            f"the database first exceeds it at {n:,} documents" if n is not None
            else "no size's database exceeds it"))
    for r in rep["failed"]:
        click.echo(f"failed: size {r['size']} round {r['repeat'] + 1} {r['language']}: {r['error']}")
    click.echo(rep["chart_note"])
    click.echo(f"results: {rep['folder']}")


def differences_lines(folder, runs: list[dict], per_run: int = 5) -> list[str]:
    """Each run whose rows differ from the reference (or from its own engine's first build): the count
    by class, the findings with their smallest example, then examples by view and document id."""
    import json
    from pathlib import Path

    from dragnet.report.render.build_text import describe_finding
    from dragnet.results.schema import read as read_results_file

    lines = []
    for r in runs:
        for key in ("comparison", "repeat_comparison"):
            cmp = r.get(key) or {}
            if not cmp.get("differences"):
                continue
            classes = ", ".join(f"{n} {c}" for c, n in (cmp.get("classes") or {}).items())
            whose = "its own first build" if key == "repeat_comparison" else cmp["reference"]
            lines.append(f"DIFFERENT: {r['language']} ({r['storage']} round {r['repeat'] + 1}) differs from "
                         f"{whose} in {cmp['differences']} places" + (f" ({classes})" if classes else "") + ":")
            full = read_results_file(Path(folder) / r["result_file"]).get(key, {})
            for f in full.get("findings") or []:
                lines += ["  " + x for x in describe_finding(f)]
            shown = 0
            for query, q in full.get("queries", {}).items():
                if q.get("missing_in"):
                    lines.append(f"  {query}: missing in {q['missing_in']}")
                for ex in q.get("examples", []):
                    if shown >= per_run:
                        break
                    lines.append(f"  {query} {json.dumps(ex['where'], ensure_ascii=False)}: "
                                 f"{whose} {json.dumps(ex['reference'], ensure_ascii=False)[:200]} "
                                 f"≠ {r['language']} {json.dumps(ex['other'], ensure_ascii=False)[:200]}")
                    shown += 1
    return lines


def bench_progress(console, total: dict, nouveau_builds: bool = True):
    """`dragnet bench`'s progress on `console` (a rich Console): the on_event(kind, data) a bench calls
    (runner.bench.bench); total["n"]: the runs planned, shown as [i/n]; nouveau_builds: each Nouveau build's
    lines (not with --json)."""
    from dragnet.results.record import Build

    def on_event(kind: str, d: dict) -> None:
        if kind == "plan":
            total["n"] = d["runs"]
        elif kind == "skipped":
            console.print(f"[yellow]skipped[/] {d['message']}", highlight=False)
        elif kind == "saved":
            click.echo(d["message"], err=True)
        elif kind == "nouveau_build":
            if not nouveau_builds:
                return
            s = d["summary"]
            if s is None:
                click.echo(f"round {d['round']}/{d['rounds']}: {d['label']} …", err=True)
            else:
                click.echo(f"  {s['wall_time_s']:.1f} s, {s['docs_per_s']:,.0f} docs/s, "
                           f"{s['cpu_s_per_1000_docs'] or 0:.3f} CPU s/1k docs", err=True)
        elif kind == "start":
            console.print(f"[{d['index'] + 1}/{total['n']}] {d['storage']}"
                          f"{' ' + d['scenario'] if d.get('scenario') else ''}"
                          f"{''.join(f' {k}={v}' for k, v in (d.get('axes') or {}).items())} round {d['repeat'] + 1}: "
                          f"{d['language']} …")
        elif kind == "done":
            if d["status"] == "not_applicable":
                console.print(f"    not applicable: {d['error']}", highlight=False)
            elif d["status"] == "oom":
                console.print(f"    [yellow]{d['error']}[/yellow]", markup=True, highlight=False)
            elif d["status"] == "ok":
                ratio = d.get("ratio_to_baseline")
                cmp = d.get("comparison")
                same = "" if not cmp else (f", rows: {cmp['note']}" if cmp.get("differences") is None else
                                          f", rows vs {cmp['reference']}: {cmp['differences']} differences in "
                                          f"{cmp['rows_compared']}" + (f" ({cell_text.classes_text(cmp['classes'])})"
                                                                       if cmp.get("classes") else ""))
                fig = Build.of_entry(d)
                console.print(f"    wall {fig.wall_s:.1f} s, {fig.docs_per_s:.0f} docs/s"
                              + (f", ×{ratio:.2f} baseline" if ratio is not None else "") + same)
            else:
                console.print(f"    [red]failed[/red]: {d['error']}", markup=True, highlight=False)
        elif kind == "begin":
            total["n"] = d["runs"]     # the bench's own plan (a baseline it cannot run is left out)
            console.print(f"{d['runs']} runs, results in {d['dir']}")
        elif kind == "start_couch":
            console.print(f"starting CouchDB ({d['backend']}, data on {d['storage']}) …")
        elif kind == "stop_couch":
            console.print(f"stopping the CouchDB started for this bench ({d['backend']})")
        elif kind == "restart":
            if d.get("axes"):
                console.print("restarting CouchDB with " + ", ".join(f"{k}={v}" for k, v in d["axes"].items()) + " …")
            elif d.get("scenario"):
                console.print(f"recreating the CouchDB container with the limits of {d['scenario']} …")
            else:
                console.print(f"restarting CouchDB with its data on {d['storage']} …")
        elif kind == "import":
            console.print(d["message"])
        elif kind == "generate":
            console.print(f"generating {d['count']:,} documents (seed {d['seed']}) …")
        elif kind == "mango_index":
            console.print(f"mango index {d['name']}: fields {', '.join(d['fields'])}"
                          + (f", partial filter {d['partial']}" if d.get("partial") else ""))
        elif kind == "warning":
            console.print(f"[yellow]warning[/yellow]: {d['message']}", markup=True, highlight=False, soft_wrap=True)
        elif kind == "size":
            console.print(f"size {d['count']:,} documents (database {d['db']})")
        elif kind == "instructions":
            console.print(f"    instructions: {d['per_1000_docs'] / 1e6:,.1f} M per 1,000 docs ({d['server']} under "
                          f"valgrind, {d['docs']:,} documents)" if d.get("per_1000_docs") else
                          f"    [yellow]instructions not counted[/yellow]: {d.get('error') or 'no count'}",
                          markup=True, highlight=False)

    return on_event


def forecast_progress(console, quiet: bool = False):
    """`dragnet forecast`'s progress on `console` (a rich Console): the on_event(kind, data) its sweep calls
    (forecast.run.run; a Nouveau sweep's, forecast.nouveau.run, as nouveau_KIND, none of them when quiet)."""

    def on_event(kind: str, d: dict) -> None:
        if kind.startswith("nouveau_"):
            if not quiet:
                for line in _nouveau_forecast_progress(kind[len("nouveau_"):], d):
                    click.echo(line, err=True)
        elif kind == "distribution":
            console.print(distribution_lines(d["sample"], d["target"]), highlight=False)
        elif kind == "sample_checks":
            for line in sample_check_lines(d):
                console.print(line, highlight=False)
        elif kind == "probe":
            console.print(f"first build: {d['docs']:,} documents, to size the sweep …")
        elif kind == "sizes":
            console.print(f"sizes: {', '.join(f'{n:,}' for n in d['counts'])}")
        elif kind == "shard_sweep":
            console.print("the same sizes on one-shard databases, for the index and disk sizes per shard …")
        elif kind == "size":
            console.print(f"size {d['count']:,} ({d['db']}) …")
        elif kind == "chase":
            console.print(f"--chase: one shard of the target ({d['docs']:,} documents, q={d['q']}) with the compaction "
                          f"daemon's view channels held and free, {d['repeat']} time(s) …", highlight=False)
        elif kind == "chase_build":
            console.print(f"  compaction {d['mode']}, repeat {d['repeat']} …", highlight=False)
        elif kind == "side_by_side":
            console.print(f"  query servers: {d['procs']} side by side, {d['docs_each']:,} documents each, repeat "
                          f"{d['repeat']} …" if d["procs"] > 1 else
                          f"  query servers: one alone, {d['docs_each']:,} documents, repeat {d['repeat']} …",
                          highlight=False)
        elif kind == "step":
            from dragnet.report.forecast_report import describe_step
            console.print(describe_step(d), highlight=False)
        elif kind == "done":
            msg = f"{d['wall_time_s']:.1f} s" if d["status"] == "ok" else f"[red]{d['status']}[/red]: {d['error']}"
            from dragnet.bench.sizes import variant

            console.print(f"    {d['language']}{' ' + variant(d) if variant(d) else ''}: {msg}", highlight=False)

    return on_event


def _nouveau_forecast_progress(kind: str, d: dict) -> list[str]:
    """The lines of one event of a Nouveau forecast's sweep (forecast.nouveau.run)."""
    if kind == "import":
        return [d["text"]]
    if kind == "sizes":
        return [f"sizes: {', '.join(f'{n:,}' for n in d['counts'])}"]
    if kind == "build":
        return [f"{d['stage']} round {d['round']}/{d['rounds']}: {d['size']:,} documents on {d['language']} …"]
    if kind == "built":
        s = d["summary"]
        return [f"  {s['wall_time_s']:.1f} s, {s['docs_per_s'] or 0:,.0f} docs/s, index "
                f"{(s.get('disk_size') or 0) / 1024 ** 2:.2f} MiB"]
    if kind == "forecast" and d.get("build_target"):
        from dragnet.report import search_forecast as rnf

        return [rnf.text(rnf.model({k: v for k, v in d.items() if k != "build_target"})),
                "building the target's size …"]
    return []
