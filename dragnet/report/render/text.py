"""The sections console and Markdown share after their tables: Nouveau, iostat, --by, engine share, forecast;
and a forecast (report.forecast_report) as text."""

from __future__ import annotations

from typing import Callable

from dragnet.report.model import Report


def tail(rep: Report, echo: Callable[..., None], markdown: bool) -> None:
    from dragnet.report import by_axis, share
    from dragnet.report import columns
    from dragnet.report.render.pipe import md_table

    if rep.nouveau:
        from dragnet.report import search_text as nouveau

        lines = nouveau.section_lines(rep.nouveau)
        echo("\n".join([lines[0].replace("\n", "\n**") + "**", "", "```", *lines[1:], "```"]
                        if markdown else lines))
    if rep.io_rows or rep.io_notes:
        echo("\niostat on the data's disk (medians over builds of each build's averages):\n" if rep.io_rows else "")
        if rep.io_rows:
            echo(md_table(columns.headers(columns.IO), columns.text_rows(columns.IO, rep.io_rows)), nl=False)
        for n in rep.io_notes:
            echo(n)
    if rep.by_groups is not None:
        echo("\n".join(by_axis.lines(rep.by_groups, rep.by)))
    if rep.shares:
        echo("\n" + "\n".join(share.lines(rep.shares)))
    if rep.beam:
        from dragnet.report import beam_activity

        echo("\n" + "\n".join(beam_activity.lines(rep.beam)))
    if rep.load:
        from dragnet.report import load as report_load

        echo("\n".join(report_load.lines(rep.load)))
    if rep.forecasts:   # a forecast among the results: its own section
        echo(("\n**forecast**\n\n```\n" if markdown else "\nforecast\n")
             + "\n\n".join(forecast(f) for f in rep.forecasts) + ("\n```" if markdown else ""))


def forecast_only(rep: Report) -> str:
    return "\n\n".join(forecast(f) for f in rep.forecasts) + "\n"


def _amount(unit: str):
    return (lambda v: f"{v:,.0f} s") if unit == "s" else (lambda v: f"{v / 1024 ** 2:,.0f} MiB")


def forecast(rep) -> str:
    """A forecast (report.forecast_report.ForecastReport) as the lines `dragnet forecast` prints."""
    lines = [f"forecast for {rep.target_docs:,} documents" + (f" ({rep.target_url})" if rep.target_url else "")
             + f" from sizes {', '.join(f'{n:,}' for n in rep.sizes)}"]
    for e in rep.engines:
        lines.append(f"{(e.variant + ' ') if e.variant else ''}{e.language}:")
        for q in e.quantities:
            if not q.fitted:
                lines.append(f"  {q.name:<14} no fit ({q.points} points)")
                continue
            fmt = _amount(q.unit)
            lines.append(f"  {q.name:<14} {fmt(q.value):>12}  [{fmt(q.low)} … {fmt(q.high)}] {q.how}")
            if q.shape:
                lines.append(f"  {'':<14} shape: {q.shape}")
            for label, b in (("  by part", q.by_part), ("  by bytes", q.by_bytes), ("  by chase", q.chase)):
                if b:     # the same quantity another way (report.forecast_report.ByPart)
                    lines.append(f"  {label:<14} {fmt(b.value):>12}  [{fmt(b.low)} … {fmt(b.high)}] {b.how}")
            lines += [f"  warning: {w}" for w in q.warnings]
        if e.why:
            lines.append(f"  why: {e.why}")
        lines += [f"  warning: {w}" for w in e.warnings]
    if rep.checks_recorded and (rep.sample_warnings or rep.not_checked):
        lines.append(f"the sample checks as the forecast that built the sweep made them ({rep.checks_recorded}):")
    lines += [f"warning: {w}" for w in rep.sample_warnings]
    lines += [f"not checked: {w}" for w in rep.not_checked]
    lines += rep.chase_notes
    if rep.draw:
        lines.append(f"sizes drawn: {rep.draw}")
    lines += rep.gains
    if rep.sweep_step:
        lines.append(rep.sweep_step)
    m, v, load = rep.machine, rep.versions, rep.load_average
    lines.append(f"holds for: {m.get('cpu_model')} × {m.get('cpu_count')}, {m.get('mem_total_kb', 0) // 1024:,} MiB; "
                 f"CouchDB {v['couchdb'] or '?'} (OTP {v['erlang'] or '?'}, {v['javascript_engine'] or '?'}); "
                 f"load average {'–' if not load else ' → '.join(f'{x:.1f}' for x in load)}; storage "
                 f"{rep.storages or 'as found'}")
    for b in rep.backtests:
        fmt = _amount(b.unit)
        lines.append(f"back-test {b.language} {b.quantity}: predicted {fmt(b.predicted)}, built {fmt(b.actual)}: "
                     f"error {b.error:+.1%}, {'inside' if b.inside else 'OUTSIDE'} the interval"
                     + (f" (whole-database sweep alone: {b.whole_error:+.1%})" if b.whole_error is not None else "")
                     + "".join(f" (by {how}: {e:+.1%})" for how, e in (("part", b.by_part_error),
                                                                        ("bytes", b.by_bytes_error),
                                                                        ("chase", b.chase_error)) if e is not None))
    lines.append(f"results: {rep.sweep_dir}, forecast.json and {', '.join(rep.charts)}")
    return "\n".join(lines)
