"""The report as one JSON document (`report --format json`)."""

from __future__ import annotations

from dragnet.report.model import Report


def render(rep: Report) -> dict:
    from dragnet.report.scenario_table import disk_summary
    from dragnet.report import share
    from dragnet.report import tables as rp
    from dragnet.report.io_table import IO_COLUMNS

    if rep.forecast_only:
        return {"forecast": rep.forecasts}
    out = rp.to_json(rep.groups)
    if rep.comparison is not None:
        out["comparison"] = rep.comparison.to_json()
    if rep.design_groups:
        out["design"] = rp.design_json(rep.design_groups)
    if rep.disk_reference:
        out.update(reference_scenario=rep.disk_reference, **disk_summary(rep.disk_rows, rep.disk_reference))
    out["iostat"] = {"columns": list(IO_COLUMNS), "rows": rep.io_rows, "notes": rep.io_notes}
    if rep.by_groups is not None:
        out["by"] = {"axes": rep.by, "groups": rep.by_groups}
    out["engine_share"] = share.to_json(rep.shares)
    if rep.load:
        out["load"] = rep.load
    if rep.nouveau:
        out["nouveau"] = rep.nouveau
    if rep.forecasts:
        out["forecast"] = rep.forecasts
    return out


def bench(rep) -> dict:
    """The end of `dragnet bench --json` (report.model.BenchReport)."""
    from dragnet.report.scenario_table import disk_summary
    from dragnet.report import share
    from dragnet.report import tables as rp

    extra = {}
    if rep.disk_reference:
        extra = disk_summary(rep.disk_rows, rep.disk_reference)
    report = rp.to_json(rep.groups)
    if rep.design_groups:
        report["design"] = rp.design_json(rep.design_groups)
    report["engine_share"] = share.to_json(rep.shares)
    if rep.load:
        report["load"] = rep.load
    if rep.comparison is not None:
        extra["baseline"] = rep.comparison.to_json()
    return {"dir": str(rep.folder), "manifest": rep.manifest, "report": report, **extra}


def bench_outcome(out) -> dict:
    """The end of `dragnet bench --json` in any mode (report.session.BenchOutcome, not interrupted)."""
    if out.mode == "gate":
        g = out.report
        return {"dirs": [str(d) for d in g.dirs], "rounds": g.rounds, "comparison": g.comparison.to_json()}
    if out.mode == "mango":
        from dragnet.report import tables as rp

        s = out.report.summary
        return {"dir": s["dir"], "indexes": s["indexes"], "versus": s["versus"], "warnings": s["warnings"],
                "report": {"design": rp.design_json(out.report.design_groups)}}
    if out.mode == "sizes":
        from dragnet.report import sizes_table

        return sizes_table.to_json(out.report)
    if out.mode == "nouveau":
        return {k: v for k, v in out.report.items() if k != "results"}
    return bench(out.report)
