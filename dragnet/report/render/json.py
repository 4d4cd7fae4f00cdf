"""The report as one JSON document (`report --format json`)."""

from __future__ import annotations

from typing import Any, Sequence

from dragnet.report.model import Report
from dragnet.report.tables import RANKING_TEST, DesignGroup, Group, design_ranking, ranking


def render(rep: Report) -> dict:
    from dragnet.report.scenario_table import disk_summary
    from dragnet.report import share
    from dragnet.report import columns

    if rep.forecast_only:
        return {"forecast": [forecast(f) for f in rep.forecasts]}
    out = to_json(rep.groups)
    if rep.comparison is not None:
        out["comparison"] = rep.comparison.to_json()
    if rep.design_groups:
        out["design"] = design_json(rep.design_groups)
    if rep.disk_reference:
        out.update(reference_scenario=rep.disk_reference, **disk_summary(rep.disk_rows, rep.disk_reference))
    out["iostat"] = {"columns": list(columns.headers(columns.IO)), "rows": columns.text_rows(columns.IO, rep.io_rows),
                     "notes": rep.io_notes}
    if rep.by_groups is not None:
        out["by"] = {"axes": rep.by, "groups": rep.by_groups}
    out["engine_share"] = share.to_json(rep.shares)
    if rep.beam:
        out["beam_activity"] = rep.beam
    if rep.load:
        out["load"] = rep.load
    from dragnet.report import profile_text      # --profile: stages per build kind, the folded files

    if profile_text.by_kind(rep.docs):
        out["profile"] = profile_text.bench_json(rep.docs)
    if rep.nouveau:
        out["nouveau"] = rep.nouveau
    if rep.forecasts:
        out["forecast"] = [forecast(f) for f in rep.forecasts]
    return out


def forecast(rep) -> dict:
    """A forecast (report.forecast_report.ForecastReport) as JSON: forecast.json's data, charts included."""
    return rep.data


def bench(rep) -> dict:
    """The end of `dragnet bench --json` (report.model.BenchReport)."""
    from dragnet.report.scenario_table import disk_summary
    from dragnet.report import share

    extra = {}
    if rep.disk_reference:
        extra = disk_summary(rep.disk_rows, rep.disk_reference)
    report = to_json(rep.groups)
    if rep.design_groups:
        report["design"] = design_json(rep.design_groups)
    report["engine_share"] = share.to_json(rep.shares)
    if rep.beam:
        report["beam_activity"] = rep.beam
    if rep.load:
        report["load"] = rep.load
    if rep.nouveau:
        report["nouveau"] = rep.nouveau
    if rep.comparison is not None:
        extra["baseline"] = rep.comparison.to_json()
    from dragnet.report import profile_text      # --profile: stages per build kind, the folded files

    if profile_text.by_kind(rep.docs):
        report["profile"] = profile_text.bench_json(rep.docs)
    return {"dir": str(rep.folder), "manifest": rep.manifest, "report": report, **extra}


def gate(g) -> dict:
    """`bench --gate`'s decision (runner.gate.GateOutcome): `bench --json`'s end, and gate.json."""
    return {"folder": str(g.folder) if g.folder else None, "dirs": [str(d) for d in g.dirs],
            "warmup": str(g.warmup) if g.warmup else None, "rounds": g.rounds, "changes": g.changes,
            "no_change": g.no_change, "exit_code": g.exit_code,
            "comparison": None if g.comparison is None else g.comparison.to_json()}


def bench_outcome(out) -> dict:
    """The end of `dragnet bench --json` in any mode (runner.bench.BenchOutcome, not interrupted)."""
    if out.mode == "gate":
        return gate(out.report)
    if out.mode == "mango":
        s = out.report.summary
        return {"dir": s["dir"], "indexes": s["indexes"], "versus": s["versus"], "warnings": s["warnings"],
                "report": {"design": design_json(out.report.design_groups)}}
    if out.mode == "sizes":
        from dragnet.report import sizes_table

        return sizes_table.to_json(out.report)
    if out.mode == "nouveau":
        return {k: v for k, v in out.report.items() if k != "results"}
    if out.mode == "auto":
        rep, rounds = out.report
        return {**render(rep), "auto": rounds.as_dict()}
    return bench(out.report)


def to_json(groups: Sequence[Group]) -> dict:
    out: dict[str, Any] = {"schema": "dragnet.report/1", "groups": [g.as_dict() for g in groups],
                           "rules": {"ratio": "docs/s of the run / docs/s of the Erlang baseline of the same "
                                              "storage and repeat; median over repeats"}}
    out["ranking"] = {"test": RANKING_TEST, "rankings": [r.as_dict() for r in ranking(groups)],
                      "pairs": [dict(p.as_dict(), storage=r.where) for r in ranking(groups) for p in r.pairs]}
    return out


def design_json(groups: Sequence[DesignGroup]) -> dict:
    return {"groups": [g.as_dict() for g in groups],
            "ranking": {"test": RANKING_TEST, "rankings": [r.as_dict() for _, r in design_ranking(groups)],
                        "pairs": [dict(p.as_dict(), ddoc=d, view=v, storage=st)
                                  for (d, v, st), r in design_ranking(groups) for p in r.pairs]},
            "rules": {"ratio": "docs/s of the run / docs/s of the reference engine's run of the same design doc, "
                               "views, storage and repeat (nearest in time without one); median over repeats",
                      "differences": "rows and reduce results differing from the reference engine's first run, "
                                     "summed over the compared runs"}}


def addview_outcome(out) -> Any:
    """The end of `dragnet addview --json` (build.session.AddviewOutcome)."""
    if out.mode in ("put_design", "add_view"):
        return out.saved
    if out.mode == "per_view":
        return {"db": out.db, "design": out.design.id, "per_view": [r.as_dict() for r in out.per_view]}
    if out.mode == "mango":
        return [dict(o.results["summary"], index=ix.name, warning=w, results_file=str(o.path) if o.path else None)
                for ix, o, w in out.mango]
    if out.mode == "nouveau":
        return out.nouveau
    o = out.outcome
    compacted = (o.results.get("sizes") or {}).get("compacted")
    from dragnet.measure.beam import summary as beam_summary
    from dragnet.report import profile_text      # --profile: stages, perf's cost, the folded file, levers
    from dragnet.report.share import split_json

    beam = o.results.get("beam_activity")
    profiled = profile_text.as_json({**o.results, "_source": str(o.path) if o.path else None})
    return dict(o.results["summary"], results_file=str(o.path) if o.path else None, ddoc=o.results["view"]["ddoc"],
                **({"compacted": compacted} if compacted else {}), split=split_json(o.results),
                **({"beam_activity": beam_summary(beam, o.results.get("cpu")) or {"absent": beam.get("absent")}} if beam else {}),
                **({"profile": profiled} if profiled else {}))
