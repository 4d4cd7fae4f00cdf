"""The report as files: PNG charts in a folder, and the offline HTML page."""

from __future__ import annotations

from pathlib import Path

from dragnet.errors import UsageError
from dragnet.report.model import Report


def check(rep: Report, plot_dir: str | Path | None, html_dir: str | Path | None) -> None:
    """Refuses charts or a page of nothing to draw (no view builds, no Nouveau builds), before anything is
    printed."""
    if (plot_dir or html_dir) and not rep.docs and not rep.nouveau:
        raise UsageError(f"{'--plot' if plot_dir else '--html'}: no builds to draw")


def charts(rep: Report, plot_dir: str | Path) -> list[Path]:
    """PNG charts of the report into `plot_dir`; their paths (nouveau_docs_s.png for the Nouveau builds)."""
    from dragnet.report import charts as ch

    drawn = ch.write_charts(rep.docs, rep.groups, plot_dir) if rep.docs else []
    if rep.disk_reference:
        drawn.append(ch.disk_matters(rep.disk_rows, rep.disk_reference, Path(plot_dir) / "disk_matters.png"))
    if rep.nouveau:
        from dragnet.report.search_files import png

        drawn.append(png(rep.nouveau, Path(plot_dir) / "nouveau_docs_s.png"))
    return [c.path for c in drawn]


def html(rep: Report, html_dir: str | Path, compare_doc: dict | None = None) -> Path:
    """The offline page (html_dir/index.html); `compare_doc`: a `compare --json` output when there is no
    comparison against --baseline."""
    from dragnet.report import html as hr

    extra = [s for f in rep.forecasts for s in hr.forecast_sections(f.data)]
    if rep.by_groups is not None:
        extra += hr.by_axis_sections(rep.by_groups, rep.by)
    extra += hr.share_sections(rep.shares)
    if rep.beam:
        from dragnet.report.beam_activity import html_sections

        extra += html_sections(rep.beam)
    from dragnet.report import flame      # --profile: stages per build kind and their flame graphs

    extra += flame.html_sections(rep.docs, html_dir)
    if rep.nouveau:
        from dragnet.report.search_files import html_sections

        extra += html_sections(rep.nouveau)
    return hr.write_html(html_dir, hr.Inputs(rep.docs, rep.groups, rep.design_groups, rep.disk_rows,
                                             rep.disk_reference, hr.load_sizes(rep.results),
                                             rep.comparison.to_json() if rep.comparison is not None
                                             else compare_doc), extra=extra)


def forecast_charts(out: dict, folder: Path) -> None:
    """A forecast's charts: forecast.png, or forecast-<variant>.png per variant (a memory limit, a core count);
    their paths go into out["charts"] and out["chart"]."""
    from dragnet.report.forecast_plot import forecast_chart
    from dragnet.results.addview_results import slug

    checks = out.get("backtest") or {}
    out["charts"] = {name: str(forecast_chart(per_lang, folder / (f"forecast-{slug(name)}.png" if name else
                                                                  "forecast.png"),
                                              built={lang: checks.get(f"{name} {lang}".strip()) for lang in per_lang}
                                              ).path)
                     for name, per_lang in out["forecasts"].items()}
    out["chart"] = next(iter(out["charts"].values()), None)


def gate(g) -> list[Path]:
    """`bench --gate`'s decision as files in its folder: comment.md, the pull request's comment (the comparison
    the gate decided on, its roles included, which `compare --markdown` over the same builds does not know),
    and gate.json (what `bench --gate --json` prints)."""
    import json

    from dragnet.report.render import json as render_json
    from dragnet.report.render.markdown import gate_markdown

    folder = Path(g.folder)
    folder.mkdir(parents=True, exist_ok=True)
    comment, record = folder / "comment.md", folder / "gate.json"
    comment.write_text(gate_markdown(g))
    record.write_text(json.dumps(render_json.gate(g), indent=1, default=str) + "\n")
    return [comment, record]
