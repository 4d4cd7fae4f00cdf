"""The `--sizes` chart: build time against size, log-log, one line per language (and scenario), with the
fitted slope in the legend and the first size whose database exceeds the memory limit marked."""

from __future__ import annotations

import math
from pathlib import Path

from dragnet.report.charts import DPI, Chart, save_figure, plt
from dragnet.bench.sizes import Fit


def size_chart(rows: list[dict], fits: list[dict], first_exceeding: dict[str, int | None], path: Path,
               title: str = "view build time against database size") -> Chart:
    """rows and fits as `sizes.analyse` returns them; every successful run is a point, the line is the fit."""
    fig, ax = plt.subplots(figsize=(8, 5), dpi=DPI)
    series = {}
    keys = sorted({(r["language"], r["scenario"]) for r in rows}, key=lambda k: (k[1], k[0]))
    many_sc = len({k[1] for k in keys}) > 1
    for i, key in enumerate(keys):
        lang, sc = key
        xs, ys = [], []
        for r in rows:
            if (r["language"], r["scenario"]) == key:
                xs += [r["size"]] * len(r["seconds"])
                ys += r["seconds"]
        fit = next((f for f in fits if (f["language"], f["scenario"]) == key and f.get("slope") is not None), None)
        label = f"{lang}{' ' + sc if many_sc and sc else ''}"
        if fit:
            label += f" (slope {fit['slope']:.2f})"
        elif not xs:
            label += " (no build finished)"
        color = plt.rcParams["axes.prop_cycle"].by_key()["color"][i % 10]
        ax.scatter(xs, ys, color=color, s=14, label=label)
        if fit and xs:
            f = Fit(fit["slope"], fit["intercept"], fit.get("r2"), fit["points"])
            lo, hi = min(xs), max(xs)
            ax.plot([lo, hi], [math.exp(f.intercept) * lo ** f.slope, math.exp(f.intercept) * hi ** f.slope],
                    color=color, linewidth=1)
        series[label] = {"sizes": xs, "seconds": ys, "slope": fit["slope"] if fit else None}
    for limit, n in first_exceeding.items():
        if n is not None:
            ax.axvline(n, color="grey", linestyle="--", linewidth=1)
            ax.text(n, ax.get_ylim()[0], f" db > {int(limit) // 1024 ** 2} MiB memory", rotation=90,
                    va="bottom", fontsize=8, color="grey")
            series[f"first_exceeding_{limit}"] = n
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("documents")
    ax.set_ylabel("build wall time (s)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    save_figure(fig, path)
    return Chart(path, title, series)
