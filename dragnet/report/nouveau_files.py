"""The Nouveau section of a report as files: a PNG chart of docs/s per row (`report --plot`) and the HTML
page's section (`report --html`): its table, the checks, the orders and the same chart as a plotly figure.
Both draw from the report model's Nouveau section (report.nouveau.section); nothing is recomputed here."""

from __future__ import annotations

from pathlib import Path

from dragnet.report.html_page import Chart as PageChart
from dragnet.report.html_page import Section

COLUMNS = ("variant", "builds", "wall s (median)", "wall min…max s", "docs/s (median)", "CPU s/1k docs",
           "qs % of wall", "beam % of wall", "JVM % of wall", "index MB", "index() errors")


def series(sec: dict) -> dict:
    """What the docs/s chart draws: per row, the median and its min…max as error bars."""
    rows = sec["rows"]
    med = [r["docs_per_s"] for r in rows]
    return {"labels": [r["variant"] for r in rows], "median": med,
            "err_low": [m - r.get("docs_per_s_min", m) for m, r in zip(med, rows)],
            "err_high": [r.get("docs_per_s_max", m) - m for m, r in zip(med, rows)],
            "n": [r["builds"] for r in rows]}


def _title(sec: dict) -> str:
    common = " ".join(f"{k}={v}" for k, v in sec["common"].items())
    return f"Nouveau index builds: docs/s per variant{' (' + common + ')' if common else ''}"


def png(sec: dict, path: str | Path):
    """The docs/s chart as a PNG (matplotlib); its Chart (path, title, the series drawn)."""
    from dragnet.report import charts as ch

    s = series(sec)
    fig, ax = ch.plt.subplots(figsize=(8, 4.5))
    ax.bar(range(len(s["labels"])), s["median"], yerr=[s["err_low"], s["err_high"]], capsize=4, color=ch.COLORS[2])
    ax.set_xticks(range(len(s["labels"])), s["labels"], rotation=25, ha="right", fontsize=8)
    ax.set_ylabel("docs/s (median, min…max)")
    title = _title(sec)
    ax.set_title(title, fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    ch.save_figure(fig, Path(path))
    return ch.Chart(Path(path), title, s)


def _pct(v: float | None) -> dict | str:
    return "–" if v is None else {"text": f"{v:.0%}", "sort": v}


def html_sections(sec: dict) -> list[Section]:
    """The page's Nouveau section: one row per variant, the checks and orders as notes, the docs/s chart."""
    from dragnet.report.nouveau import section_lines

    rows = []
    for r in sec["rows"]:
        cpu = r.get("cpu_s_per_1000_docs")
        rows.append([r["variant"], r["builds"], {"text": f"{r['wall_s']:.1f}", "sort": r["wall_s"]},
                     f"{r['wall_min_s']:.1f} … {r['wall_max_s']:.1f}",
                     {"text": f"{r['docs_per_s']:,.0f}", "sort": r["docs_per_s"]},
                     "–" if cpu is None else {"text": f"{cpu:.3f}", "sort": cpu},
                     _pct(r.get("qs_cpu_of_wall")), _pct(r.get("beam_cpu_of_wall")), _pct(r.get("jvm_cpu_of_wall")),
                     {"text": f"{r['disk_size'] / 1e6:.1f}", "sort": r["disk_size"]}, r["index_errors"]])
    s = series(sec)
    chart = PageChart(_title(sec), [{"type": "bar", "x": s["labels"], "y": s["median"],
                                     "error_y": {"type": "data", "array": s["err_high"], "arrayminus": s["err_low"],
                                                 "visible": True},
                                     "hovertemplate": "%{x}<br>%{y:,.0f} docs/s (median)<extra></extra>"}],
                      {"yaxis": {"title": {"text": "docs/s (median, min…max)"}}})
    # the text's lines after its title, the table's header and rows: the legend, the checks and the orders
    notes = [line.strip() for line in section_lines(sec)[2 + len(sec["rows"]):]]
    return [Section(f"Nouveau index builds ({len(sec['builds'])})", COLUMNS, rows, notes, charts=[chart],
                    id="nouveau")]
