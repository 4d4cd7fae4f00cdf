"""The report as CSV: one row per group (view files or design docs; the two have different columns)."""

from __future__ import annotations

import csv
import io
from typing import Sequence

from dragnet.errors import UsageError
from dragnet.report.model import Report
from dragnet.report.render import text
from dragnet.report.tables import DesignGroup, Group


def render(rep: Report) -> str:
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
    return design_csv(rep.design_groups) if rep.design_groups else to_csv(rep.groups)


def _nouveau_csv(sec: dict) -> str:
    from dragnet.report.nouveau import CSV_COLUMNS as NOUVEAU_COLUMNS

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(NOUVEAU_COLUMNS)
    for r in sec["rows"]:
        w.writerow([" ".join(map(str, r[c])) if isinstance(r[c], list) else ("" if r[c] is None else r[c])
                    for c in NOUVEAU_COLUMNS])
    return buf.getvalue()


CSV_COLUMNS = ("language", "storage", "runs", "failed", "all_tasks_cps_median", "one_task_cps_median",
               "total_time_s_median", "wall_time_s_median", "wall_time_s_stdev", "wall_time_s_min",
               "wall_time_s_max", "docs_per_sec_wall_median", "ratio_to_baseline_median", "ratio_min", "ratio_max",
               "beam_cpu_mean_pct", "beam_rss_peak_mb", "qs_family", "qs_cpu_mean_pct", "qs_rss_peak_mb")


def csv_records(groups: Sequence[Group]) -> list[dict]:
    recs = []
    for g in groups:
        med = lambda s: s.median if s else None  # noqa: E731
        recs.append(dict(zip(CSV_COLUMNS, (
            g.label, g.storage, g.n, g.failed, med(g.all_cps), med(g.one_cps), med(g.total_s), med(g.wall_s),
            g.wall_s.stdev if g.wall_s else None, g.wall_s.min if g.wall_s else None,
            g.wall_s.max if g.wall_s else None, med(g.docs_per_s), med(g.ratio),
            g.ratio.min if g.ratio else None, g.ratio.max if g.ratio else None,
            g.beam_cpu, g.beam_rss_mb, g.qs_family, g.qs_cpu, g.qs_rss_mb))))
    return recs


def to_csv(groups: Sequence[Group]) -> str:
    """One CSV: a row per group."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
    w.writeheader()
    for rec in csv_records(groups):
        w.writerow({k: ("" if v is None else (repr(v) if isinstance(v, float) else v)) for k, v in rec.items()})
    return buf.getvalue()


DESIGN_CSV_COLUMNS = ("design_doc", "view", "engine", "storage", "is_reference", "reference", "runs", "failed",
                      "total_time_s_median", "wall_time_s_median", "wall_time_s_min", "wall_time_s_max",
                      "docs_per_sec_wall_median", "ratio_to_reference_median", "ratio_min", "ratio_max",
                      "rows_compared", "differences", "compared_runs", "update_lag_s_median",
                      "incremental_docs_per_sec_median", "beam_cpu_mean_pct", "beam_rss_peak_mb", "qs_family",
                      "qs_cpu_mean_pct", "qs_rss_peak_mb")


def design_csv(groups: Sequence[DesignGroup]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(DESIGN_CSV_COLUMNS)
    for g in groups:
        med = lambda s: s.median if s else None  # noqa: E731
        vals = (g.ddoc, g.view, g.label, g.storage, str(g.is_reference).lower(), g.reference, g.n, g.failed,
                med(g.total_s), med(g.wall_s), g.wall_s.min if g.wall_s else None, g.wall_s.max if g.wall_s else None,
                med(g.docs_per_s), med(g.ratio), g.ratio.min if g.ratio else None, g.ratio.max if g.ratio else None,
                g.rows_compared, g.differences, g.compared, med(g.update_lag_s), med(g.incremental_dps),
                g.beam_cpu, g.beam_rss_mb, g.qs_family, g.qs_cpu, g.qs_rss_mb)
        w.writerow(["" if v is None else (repr(v) if isinstance(v, float) else v) for v in vals])
    return buf.getvalue()
