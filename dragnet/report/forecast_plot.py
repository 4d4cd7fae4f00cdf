"""The forecast chart: one panel per quantity, measured points, the fitted line out to the target, the
prediction interval there and the target marked."""

from __future__ import annotations

from pathlib import Path

from dragnet.report.charts import DPI, Chart, save_figure, plt
from dragnet.forecast.model import LABELS, QUANTITIES, SCALE, entry_curve, entry_points, entry_value



def forecast_chart(fc: dict, path: Path, label: str = "", built: dict | None = None) -> Chart:
    """fc: forecast.json's "forecasts"[label] (per language); quantities without a fit are left out. built:
    a back-test's checks for the same label (forecast.json "backtest"[lang]), the real build marked beside
    the forecast."""
    shown = [q for q in QUANTITIES if any((lang["quantities"].get(q) or {}).get("fit") for lang in fc.values())]
    fig, axes = plt.subplots(1, max(1, len(shown)), figsize=(4.2 * max(1, len(shown)), 4), dpi=DPI, squeeze=False)
    series: dict = {}
    target = None
    for ax, q in zip(axes[0], shown):
        for i, (lang, f) in enumerate(sorted(fc.items())):
            e = f["quantities"].get(q) or {}
            if not e.get("fit"):
                continue
            div, unit = SCALE[e["unit"]]
            color = plt.rcParams["axes.prop_cycle"].by_key()["color"][i % 10]
            pts = entry_points(e)
            shards = (e.get("shards") or {}).get("q")
            ax.scatter([x for x, _ in pts], [y / div for _, y in pts], color=color, s=12,
                       label=f"{lang} (one-shard builds × {shards})" if shards else lang)
            p, fit = e["prediction"], e["fit"]
            target = p["docs"]
            line = entry_curve(e)
            ax.plot(line, [entry_value(e, x) / div for x in line], color=color, linewidth=1,
                    label=f"{lang} fit ({'parts' if e.get('parts') else fit.get('model') or 'linear'})")
            ax.errorbar([target], [p["value"] / div], yerr=[[(p["value"] - p["low"]) / div],
                                                            [(p["high"] - p["value"]) / div]],
                        color=color, capsize=4, marker="D", markersize=4)
            real = ((built or {}).get(lang) or {}).get(q)
            if real:
                ax.scatter([target], [real["actual"] / div], color=color, marker="x", s=40, zorder=3,
                           label=f"{lang} built ({real['error']:+.0%})")
            name = LABELS.get(q, q.replace("_", " "))
            series[f"{lang} {q}"] = {"points": pts, "shards": shards, "prediction": p, "label": name,
                                     "built": real["actual"] if real else None}
            ax.set_ylabel(f"{name} ({unit})")
        if target:
            ax.axvline(target, color="grey", linestyle="--", linewidth=1)
        ax.set_xlabel("documents")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    title = f"forecast at {target:,} documents{' ' + label if label else ''}" if target else "forecast"
    fig.suptitle(title)
    save_figure(fig, path)
    return Chart(path, title, series)
