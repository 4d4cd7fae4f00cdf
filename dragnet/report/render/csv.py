"""The report as CSV: one row per group (view files or design docs; the two have different columns, both from
report.columns)."""

from __future__ import annotations

import csv
import io
from typing import Sequence

from dragnet.errors import UsageError
from dragnet.report import columns
from dragnet.report.model import Report
from dragnet.report.render import text
from dragnet.report.tables import DesignGroup, Group


def render(rep: Report) -> str:
    if rep.forecast_only:
        return text.forecast_only(rep)
    if rep.comparison is not None:
        raise UsageError("--baseline has no CSV form: use --format table, markdown or json")
    if rep.groups and rep.design_groups:
        raise UsageError("--format csv: view-file and design-doc results have different columns; "
                         "report them separately")
    return design_csv(rep.design_groups) if rep.design_groups else to_csv(rep.groups)


def csv_records(groups: Sequence[Group]) -> list[dict]:
    return [dict(zip(columns.csv_fields(columns.GROUP), columns.csv_values(columns.GROUP, g))) for g in groups]


def to_csv(groups: Sequence[Group]) -> str:
    """One CSV: a row per group."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(columns.csv_fields(columns.GROUP)), lineterminator="\n")
    w.writeheader()
    for rec in csv_records(groups):
        w.writerow({k: ("" if v is None else (repr(v) if isinstance(v, float) else v)) for k, v in rec.items()})
    return buf.getvalue()


def design_csv(groups: Sequence[DesignGroup]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns.csv_fields(columns.DESIGN))
    for g in groups:
        w.writerow(["" if v is None else (repr(v) if isinstance(v, float) else v)
                    for v in columns.csv_values(columns.DESIGN, g)])
    return buf.getvalue()
