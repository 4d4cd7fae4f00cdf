"""The report as CSV: one row per group (view files or design docs; the two have different columns)."""

from __future__ import annotations

from dragnet.errors import UsageError
from dragnet.report.model import Report
from dragnet.report.render import text


def render(rep: Report) -> str:
    from dragnet.report import tables as rp

    if rep.forecast_only:
        return text.forecast_only(rep)
    if rep.comparison is not None:
        raise UsageError("--baseline has no CSV form: use --format table, markdown or json")
    if rep.nouveau and (rep.groups or rep.design_groups):
        raise UsageError("--format csv: view and Nouveau results have different columns; report them separately")
    if rep.nouveau:
        return _nouveau_csv(rep.nouveau)
    if rep.groups and rep.design_groups:
        raise UsageError("--format csv: view-file and design-doc results have different columns; "
                         "report them separately")
    return rp.design_csv(rep.design_groups) if rep.design_groups else rp.to_csv(rep.groups)


def _nouveau_csv(sec: dict) -> str:
    import csv
    import io

    from dragnet.report.nouveau import CSV_COLUMNS

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in sec["rows"]:
        w.writerow([" ".join(map(str, r[c])) if isinstance(r[c], list) else ("" if r[c] is None else r[c])
                    for c in CSV_COLUMNS])
    return buf.getvalue()
