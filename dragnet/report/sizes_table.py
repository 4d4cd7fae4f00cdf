"""The size sweep's table: cells of dragnet.bench.sizes' rows, for every renderer."""

from __future__ import annotations

from pathlib import Path

from dragnet.results.schema import SizeRow


def table_cells(rows: list[SizeRow]) -> list[list[str]]:
    """The sweep's table as text (its columns: report.columns.SIZES)."""
    from dragnet.report import columns

    return columns.text_rows(columns.SIZES, rows)


def table_values(rows: list[SizeRow]) -> list[list[float | None]]:
    """The numbers behind table_cells' cells, column for column (None for a text cell); sizes in bytes."""
    from dragnet.report import columns

    return columns.value_rows(columns.SIZES, rows)


def sweep_report(folder, plot_path=None) -> dict:
    """A sweep's report from its folder alone: dragnet.bench.sizes.analyse()'s rows, fits and memory marks,
    "disk matters?" per size (sizes are never mixed in one comparison), the runs, and the chart drawn."""
    from dragnet.bench import sizes as sz
    from dragnet.axes.scenario import disk_matters, reference_of
    from dragnet.errors import DragnetError

    folder = Path(folder)
    saved, manifests = sz.load(folder)
    an = sz.analyse(saved, manifests)
    png = Path(plot_path) if plot_path else folder / "sizes.png"
    try:
        if not any(r["seconds"] for r in an["rows"]):
            raise DragnetError("no successful build to draw")
        from dragnet.report.sizes_plot import size_chart

        size_chart(an["rows"], an["fits"], an["first_exceeding_memory"], png)
        chart_note = f"chart: {png}"
    except DragnetError as exc:       # matplotlib missing: the numbers stand without the picture
        chart_note = f"no chart: {exc}"
        png = None
    runs = sz.sweep_runs(manifests)
    scs = next((m.get("scenarios") for m in manifests.values() if m.get("scenarios")), None)
    ref = reference_of(scs) if scs else None
    disk = {n: disk_matters(m["runs"], ref) for n, m in sorted(manifests.items())} if ref else {}
    return {"folder": folder, "saved": saved, "analysis": an, "chart": png, "chart_note": chart_note,
            "runs": runs, "failed": [r for r in runs if r["status"] not in ("ok", "oom")],
            "n_ok": sum(1 for r in runs if r["status"] == "ok"), "disk": disk, "reference": ref}


def to_json(rep: dict) -> dict:
    from dragnet.report.scenario_table import disk_summary

    summaries = {str(n): disk_summary(rows, rep["reference"]) for n, rows in rep["disk"].items()}
    return {"dir": str(rep["folder"]), "chart": str(rep["chart"]) if rep["chart"] else None,
            "chart_note": rep["chart_note"], "sizes": rep["saved"], **rep["analysis"],
            "disk_matters": {n: {"rows": d["disk_matters"], "verdict": d["verdict"],
                                 "memory_advice": d["memory_advice"]} for n, d in summaries.items()}}


def describe_slope(fit) -> str:
    """A sweep's fitted slope (dragnet.bench.sizes.Fit, or None) in words."""
    if fit is None:
        return "no fit (fewer than two sizes with a successful build)"
    r2 = "" if fit.r2 is None else f", r² {fit.r2:.3f}"
    return f"time ∝ size^{fit.slope:.2f} ({fit.points} runs{r2})"
