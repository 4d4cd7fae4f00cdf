"""The Nouveau section of a report as files: a PNG chart of docs/s per row (`report --plot`) and the HTML
page's section (`report --html`): its table, the checks, the orders and the same chart as a plotly figure.
Both draw from the report model's Nouveau section (report.nouveau.section); nothing is recomputed here."""

from __future__ import annotations

from pathlib import Path

from dragnet.report.columns import Column, headers, text_rows, value_rows
from dragnet.report.html_page import Chart as PageChart
from dragnet.report.html_page import Section


def _share(header: str, key: str) -> Column:
    return Column(header, lambda r: "–" if r.get(key) is None else f"{r[key]:.0%}", lambda r: r.get(key))


# the page's table over the section's rows (report.search_text.section); a cell with a number sorts by it
NOUVEAU = (
    Column("variant", lambda r: r["variant"]),
    Column("builds", lambda r: str(r["builds"]), lambda r: r["builds"]),
    Column("wall s (median)", lambda r: f"{r['wall_s']:.1f}", lambda r: r["wall_s"]),
    Column("wall min…max s", lambda r: f"{r['wall_min_s']:.1f} … {r['wall_max_s']:.1f}"),
    Column("docs/s (median)", lambda r: f"{r['docs_per_s']:,.0f}", lambda r: r["docs_per_s"]),
    Column("CPU s/1k docs", lambda r: "–" if r.get("cpu_s_per_1000_docs") is None
           else f"{r['cpu_s_per_1000_docs']:.3f}", lambda r: r.get("cpu_s_per_1000_docs")),
    _share("qs % of wall", "qs_cpu_of_wall"),
    _share("beam % of wall", "beam_cpu_of_wall"),
    _share("JVM % of wall", "jvm_cpu_of_wall"),
    Column("index MB", lambda r: f"{r['disk_size'] / 1e6:.1f}", lambda r: r["disk_size"]),
    Column("index() errors", lambda r: "–" if r["index_errors"] is None else str(r["index_errors"]),
           lambda r: r["index_errors"]),
)


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


def html_sections(sec: dict) -> list[Section]:
    """The page's Nouveau section: one row per variant, the checks and orders as notes, the docs/s chart."""
    from dragnet.report.search_text import section_lines

    rows = [[t if v is None else {"text": t, "sort": v} for t, v in zip(texts, values)]
            for texts, values in zip(text_rows(NOUVEAU, sec["rows"]), value_rows(NOUVEAU, sec["rows"]))]
    s = series(sec)
    chart = PageChart(_title(sec), [{"type": "bar", "x": s["labels"], "y": s["median"],
                                     "error_y": {"type": "data", "array": s["err_high"], "arrayminus": s["err_low"],
                                                 "visible": True},
                                     "hovertemplate": "%{x}<br>%{y:,.0f} docs/s (median)<extra></extra>"}],
                      {"yaxis": {"title": {"text": "docs/s (median, min…max)"}}})
    # the text's lines after its title: the JVM's share and the checks (the orders are the design table's)
    notes = [line.strip() for line in section_lines(sec)[1:]]
    return [Section(f"Nouveau index builds ({len(sec['builds'])})", headers(NOUVEAU), rows, notes, charts=[chart],
                    id="nouveau")]
