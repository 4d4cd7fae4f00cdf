"""`dragnet report --html DIR`: the report's tables, ranking lines, disk-matters and size sections, charts
and the machine they ran on, as one self-contained page (DIR/index.html) that opens from the file system.

"Every number links to the raw samples it came from": each number in a table row links to the page's
"raw samples" block of that row (#raw-…), which lists every build behind it, one line per results file with
its own figures, and links to a copy of that results file in DIR/raw/ (the file the loaders read; a recorded
build folder is named, not copied).

report_sections() and the chart builders are pure (loaded results -> html_page.Section); write_html() does the
I/O: loads nothing itself, copies the results files and writes the page.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from dragnet.report import columns
from dragnet.report import tables as rp
from dragnet.report.render import cells as cell_text
from dragnet.report.html_page import Chart, Section, build_page
from dragnet.report.ranking import TEST
from dragnet.forecast.model import SCALE, entry_curve, entry_points, entry_value
from dragnet.results.schema import couchdb_versions, kept
from dragnet.results.record import Build

PAGE = "index.html"
RAW_DIR = "raw"


@dataclass
class Inputs:
    """What the page shows, as report.py and scenario.py compute it from the loaded results."""

    docs: list[dict]
    groups: list = field(default_factory=list)
    dgroups: list = field(default_factory=list)
    disk_rows: list = field(default_factory=list)       # scenario.Row
    disk_ref: str | None = None
    sizes: list[dict] = field(default_factory=list)     # {"folder", "summary", "analysis", "rows": [SizeRow]}
    compare: dict | None = None                         # compare.py's JSON
    hrefs: dict[str, str] = field(default_factory=dict)  # results file -> its copy, relative to the page


def linked(cells: Sequence[str], values: Sequence[float | None], anchor: str) -> list:
    """Table cells whose numbers link to the raw-samples block `anchor`: values holds each cell's number
    (None: plain text), from the table's model, never read back from the text."""
    return [c if v is None else {"text": c, "sort": v, "href": f"#{anchor}"} for c, v in zip(cells, values)]


@dataclass(frozen=True)
class Raw:
    """One build of a raw-samples table: its record and where the page copied results files to."""

    build: Any                        # results.record.Build, or a size sweep's manifest entry (a dict)
    hrefs: dict[str, str]
    source: str | None = None         # its results file (None: none to name)


def _file_link(x: Raw) -> dict | None:
    if x.source is None:
        return None
    return {"href": x.hrefs[x.source], "title": x.source} if x.source in x.hrefs else {"title": x.source}


def _file_name(x: Raw) -> str:
    if x.source is None:
        return "–"
    return Path(x.hrefs[x.source]).name if x.source in x.hrefs else (Path(x.source).name or x.source)


def _figure(header: str, get: Callable[[Any], Any], digits: int = 2) -> columns.Column:
    """A raw sample: shown rounded, sorted (and read back by tests) at full precision."""
    def text(x: Raw) -> str:
        v = get(x.build)
        return "–" if v is None else f"{v:,.{digits}f}" if _is_number(v) else str(v)
    return columns.Column(header, text, lambda x: get(x.build) if _is_number(get(x.build)) else None)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _entry(x: Raw, key: str) -> str:
    return "–" if x.build.get(key) is None else str(x.build[key])


FILE = columns.Column("results file", _file_name, None, link=_file_link)

# the raw-samples block of an engine, design doc or "disk matters?" row: one line per build (results.record.Build)
RAW = (
    FILE,
    columns.Column("repeat", lambda x: "–" if x.build.repeat is None else str(x.build.repeat),
                   lambda x: x.build.repeat if _is_number(x.build.repeat) else None),
    columns.Column("ok", lambda x: "yes" if x.build.ok else "no", None),
    _figure("all c/s", lambda b: b.all_cps),
    _figure("one c/s", lambda b: b.one_cps),
    _figure("total s", lambda b: b.total_s),
    _figure("wall s", lambda b: b.wall_s, 3),
    _figure("docs/s", lambda b: b.docs_per_s),
    _figure("× base", lambda b: b.ratio, 3),
    columns.Column("error", lambda x: x.build.error or "", None),
)

# a size's raw samples: one line per run of the sweep's manifests (their entries)
SIZE_RAW = (
    FILE,
    columns.Column("repeat", lambda x: _entry(x, "repeat"),
                   lambda x: x.build.get("repeat") if _is_number(x.build.get("repeat")) else None),
    columns.Column("status", lambda x: _entry(x, "status"), None),
    _figure("wall s", lambda e: Build.of_entry(e).wall_s, 3),
    _figure("docs/s", lambda e: Build.of_entry(e).docs_per_s),
)

# a compare cell's raw samples: one line per build of each side ({"side", "build", "wall_s"})
COMPARE_RAW = (
    columns.Column("side", lambda x: x.build["side"], None),
    columns.Column("build", lambda x: str(x.build["build"]), lambda x: x.build["build"]),
    _figure("wall s", lambda b: b["wall_s"], 3),
    columns.Column("results file", lambda x: _file_name(x) if x.source else "", None, link=_file_link),
)


def raw_cells(cols: Sequence[columns.Column], rows: Sequence[Raw]) -> list[list]:
    """The page's cells of a raw-samples table: a figure's cell sorts by its number, the file's links to its copy."""
    out = []
    for x, texts, values in zip(rows, columns.text_rows(cols, rows), columns.value_rows(cols, rows)):
        cells = []
        for c, t, v in zip((c for c in cols if c.header is not None), texts, values):
            link = c.link(x) if c.link else None
            cells.append({"text": t, **link} if link else t if c.value is None else
                         {"text": t} if v is None else {"text": t, "sort": v})
        out.append(cells)
    return out


def raw_run_rows(runs: Sequence[Build], hrefs: dict[str, str]) -> list[list]:
    return raw_cells(RAW, [Raw(r, hrefs, r.source) for r in sorted(runs, key=lambda r: r.started_at)])


# ---------------------------------------------------------------- sections (pure)

def engine_sections(inp: Inputs, runs: Sequence[Build]) -> tuple[list[Section], list[Section]]:
    """The engine-group table with its ranking lines, and one raw-samples block per row."""
    if not inp.groups:
        return [], []
    rows, raws = [], []
    for i, (g, cells, values) in enumerate(zip(inp.groups, cell_text.table_rows(inp.groups),
                                               cell_text.table_values(inp.groups))):
        anchor = f"raw-engine-{i}"
        rows.append(linked(cells, values, anchor))
        mine = [r for r in runs if r.ddoc is None and (r.label, r.storage) == g.key]
        raws.append(Section(f"{g.label} ({g.storage})", columns.headers(RAW), raw_run_rows(mine, inp.hrefs),
                            id=anchor))
    notes = cell_text.ranking_lines(inp.groups) + [f"failed: {g.label} ({g.storage}): {e}" for g in inp.groups
                                            for e in g.errors]
    return [Section(f"engines ({len(inp.docs)} results)", columns.headers(columns.GROUP), rows, notes,
                    id="engines")], raws


def design_sections(inp: Inputs, runs: Sequence[Build]) -> tuple[list[Section], list[Section]]:
    if not inp.dgroups:
        return [], []
    rows, raws = [], []
    for i, (g, cells, values) in enumerate(zip(inp.dgroups, cell_text.design_table_rows(inp.dgroups),
                                               cell_text.design_table_values(inp.dgroups))):
        anchor = f"raw-design-{i}"
        rows.append(linked(cells, values, anchor))
        ddoc_runs = [r for r in runs if r.ddoc == g.ddoc]
        every = {v for r in ddoc_runs for v in r.views}     # as report.group_design_runs() groups them
        mine = [r for r in ddoc_runs if (rp.view_label(r, every), r.label, r.storage) == (g.view, g.label, g.storage)]
        raws.append(Section(f"{g.ddoc} {g.view} {g.label} ({g.storage})", columns.headers(RAW),
                            raw_run_rows(mine, inp.hrefs), id=anchor))
    notes = cell_text.design_ranking_lines(inp.dgroups) + cell_text.design_notes(inp.dgroups)
    return [Section("design documents", columns.headers(columns.DESIGN), rows, notes, id="design",
                    caption=cell_text.DESIGN_LEGEND)], raws


def disk_sections(inp: Inputs, scenario_docs: Sequence[dict]) -> tuple[list[Section], list[Section]]:
    """The "disk matters?" table, memory lines and verdict; raw: the builds of each row.
    scenario_docs: the results that ran in a scenario, in the order runs_from_results() read them."""
    from dragnet.report.scenario_table import memory_advice, verdict
    from dragnet.report.scenario_table import disk_rows, disk_values
    from dragnet.results.load import scenario_label as label_of

    if not inp.disk_ref:
        return [], []
    rows, raws = [], []
    for i, (row, cells, values) in enumerate(zip(inp.disk_rows, disk_rows(inp.disk_rows),
                                                 disk_values(inp.disk_rows))):
        anchor = f"raw-disk-{i}"
        rows.append(linked(cells, values, anchor))
        mine = [d for d in scenario_docs if label_of(d) == row.scenario
                and ((d.get("bench") or {}).get("language") or (d.get("summary") or {}).get("language")) == row.language
                and str((d.get("bench") or {}).get("storage_label") or d.get("storage") or "unknown") == row.storage]
        raws.append(Section(f"{row.language} {row.storage} {row.scenario}", columns.headers(RAW),
                            raw_run_rows([Build.of(d) for d in mine], inp.hrefs), id=anchor))
    notes = [f"memory: {line}" for line in memory_advice(inp.disk_rows, inp.disk_ref)]
    notes.append(f"verdict: {verdict(inp.disk_rows, inp.disk_ref)}")
    return [Section(f"disk matters? (× = docs/s against {inp.disk_ref})", columns.headers(columns.DISK), rows,
                    notes, id="disk")], raws


def size_sections(inp: Inputs) -> tuple[list[Section], list[Section]]:
    from dragnet.bench.sizes import fits, sweep_runs
    from dragnet.report.sizes_table import describe_slope
    from dragnet.report.sizes_table import table_cells, table_values

    secs, raws = [], []
    for k, sw in enumerate(inp.sizes):
        rows = []
        for i, (row, cells, values) in enumerate(zip(sw["rows"], table_cells(sw["rows"]),
                                                     table_values(sw["rows"]))):
            anchor = f"raw-size-{k}-{i}"
            rows.append(linked(cells, values, anchor))    # sizes sort by bytes
            mine = [r for r in sweep_runs(sw["manifests"]) if (r["language"], r.get("scenario") or "", r["size"])
                    == (row.language, row.scenario, row.size)]
            raws.append(Section(" ".join(x for x in (row.language, row.scenario, f"{row.size:,} documents") if x),
                                columns.headers(SIZE_RAW),
                                raw_cells(SIZE_RAW, [Raw(r, inp.hrefs, str(Path(sw["folder"]) / f"size-{r['size']}"
                                                                          / r["result_file"])
                                                         if r.get("result_file") else None) for r in mine]),
                                id=anchor))
        notes = [f"{lang}{' ' + sc if sc else ''}: {describe_slope(f)}"
                 for (lang, sc), f in fits(sweep_runs(sw["manifests"])).items()]
        secs.append(Section(f"sizes ({Path(sw['folder']).name})", columns.headers(columns.SIZES), rows, notes,
                            id=f"sizes-{k}"))
    return secs, raws


def compare_sections(cmp: dict | None, hrefs: dict[str, str]) -> tuple[list[Section], list[Section]]:
    """compare.py's JSON: one row per cell ({axes, ratio, ci or ci_low/ci_high, metric, label}), a chart of the
    ratios with their intervals, raw: each side's samples."""
    if not cmp:
        return [], []
    from dragnet.report.compare import metric_ci, page_columns, rows as compare_rows
    from dragnet.results.load import axes_text

    cells = cmp.get("cells") or []
    page, table = page_columns(cmp), compare_rows(cmp)
    rows, raws, names, ratios, lo, hi = [], [], [], [], [], []
    for i, (c, texts, values) in enumerate(zip(cells, columns.text_rows(page, table), columns.value_rows(page, table))):
        anchor = f"raw-compare-{i}"
        ci = metric_ci(c) or [None, None]
        old, new = c.get("old") or {}, c.get("new") or {}
        # a figure column's cell is a dict even with no number behind it ({"text": "–"})
        rows.append([t if col.value is None else {"text": t} if v is None else {"text": t, "sort": v,
                                                                                  "href": f"#{anchor}"}
                     for col, t, v in zip(page, texts, values)])
        raw_rows = []
        for side, d in (("old", old), ("new", new)):
            samples = d.get("samples") or []
            sources = list(d.get("sources") or []) + [""] * len(samples)
            raw_rows += raw_cells(COMPARE_RAW, [Raw({"side": side, "build": j, "wall_s": s}, hrefs, src or None)
                                                for j, (s, src) in enumerate(zip(samples, sources))])
        name = " ".join(str(v) for v in (c.get("axes") or {}).values()) or str(i)
        raws.append(Section(f"compare: {name}", columns.headers(COMPARE_RAW), raw_rows, id=anchor))
        if c.get("ratio") is not None:
            names.append(name)
            ratios.append(c["ratio"])
            lo.append(c["ratio"] - ci[0] if ci[0] is not None else 0)
            hi.append(ci[1] - c["ratio"] if ci[1] is not None else 0)
    chart = Chart(f"{cmp.get('new', 'NEW')} ÷ {cmp.get('old', 'OLD')}, {cmp.get('metric', 'wall time')}",
                  # points, not bars: a ratio is read against 1, not against 0
                  [{"type": "scatter", "mode": "markers", "marker": {"size": 11}, "x": names, "y": ratios,
                    "name": "ratio",
                    "error_y": {"type": "data", "array": hi, "arrayminus": lo, "visible": True},
                    "hovertemplate": "%{x}<br>ratio %{y:.3f}<extra></extra>"}],
                  {"yaxis": {"title": {"text": "ratio (above 1: new is slower)"}},
                   "shapes": [_hline(1.0)]}) if ratios else None
    # as compare's own notes say them
    notes = [f"{c.get('label')}: {axes_text(c.get('axes') or {}, cmp.get('varied') or {}) or '(all)'}: {c['why']}"
             for c in cells if c.get("why")]
    notes += [f"verdict: {cmp['verdict']}"] if cmp.get("verdict") else []
    if cmp.get("test"):
        notes.append(f"test: {cmp['test']}")
    return [Section("compare", columns.headers(page), rows, notes, [chart] if chart else [], id="compare")], raws


def check_compare(doc: Any, where: str) -> dict:
    """compare.py's JSON, or a one-line UsageError naming the file."""
    from dragnet.errors import UsageError

    if not (isinstance(doc, dict) and isinstance(doc.get("cells"), list)
            and all(isinstance(c, dict) for c in doc["cells"])):
        raise UsageError(f"{where}: not a `dragnet compare --json` output (a \"cells\" list expected)")
    return doc


def _hline(y: float) -> dict:
    return {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": y, "y1": y,
            "line": {"color": "grey", "dash": "dash", "width": 1}}


def meta_section(docs: Sequence[dict]) -> Section:
    """Machine, versions, settings and load, from the results files (a value that differs between files is
    listed with how many files carry it)."""
    facts: dict[str, Counter] = {}
    loads: list[float] = []

    def add(key: str, value: Any) -> None:
        if value not in (None, "", {}, []):
            facts.setdefault(key, Counter())[str(value)] += 1

    for d in docs:
        if d.get("kind") == "bench-failure":
            continue
        m = d.get("machine") or {}
        add("machine", ", ".join(f"{m[k]}" for k in ("hostname", "cpu_model", "arch", "os", "kernel") if m.get(k)))
        add("CPUs", m.get("cpu_count"))
        add("memory", f"{m['mem_total_kb'] / 1024 ** 2:.1f} GiB" if m.get("mem_total_kb") else None)
        c = d.get("couchdb") or {}
        v = couchdb_versions(d)
        add("CouchDB", v["couchdb"] and (f"{v['couchdb']} ({c['git_sha']})" if c.get("git_sha") else v["couchdb"]))
        add("Erlang/OTP", v["erlang"])
        add("JS engine", v["javascript_engine"])
        b = d.get("bench") or {}
        for k, v in (b.get("axes") or {}).items():
            add(f"axis {k}", v)
        add("storage", b.get("storage_label") or d.get("storage"))
        sc = d.get("scenario")
        add("scenario", sc.get("label") if isinstance(sc, dict) else sc)
        add("bench", b.get("id"))
        add("python", m.get("python"))
        la = m.get("load_average")
        if isinstance(la, list) and la:
            loads.append(float(la[0]))
        add("started", (str(d.get("started_at") or ""))[:10])
    rows = [[k, "; ".join(v if len(c) == 1 else f"{v} ({n} files)" for v, n in c.items())]
            for k, c in facts.items()]
    if loads:
        rows.append(["load average (1 min, as each file was written)",
                     f"{min(loads):.2f} … {max(loads):.2f} over {len(loads)} files"])
    else:
        rows.append(["load", "not recorded in these results files"])
    return Section("machine, versions, settings", ("what", "value"), rows, id="meta")


def report_sections(inp: Inputs, charts: Sequence[Chart] = (), extra: Sequence[Section | dict] = ()) -> list[Section]:
    """Every section of the page, in order; extra: sections other stages add (plain data, html_page)."""
    from dragnet.results.load import scenario_label as label_of

    runs = rp.prepare(inp.docs)
    eng, r1 = engine_sections(inp, runs)
    des, r2 = design_sections(inp, runs)
    disk, r3 = disk_sections(inp, [d for d in inp.docs if label_of(d)])
    siz, r4 = size_sections(inp)
    cmp, r5 = compare_sections(inp.compare, inp.hrefs)
    extra = [Section.of(s) for s in extra]
    raws = r1 + r2 + r3 + r4 + r5
    plotted = [c for c in charts if c.data]
    head = [Section("charts", notes=[f"{c.title}: nothing to draw ({c.layout.get('empty', 'no data')})"
                                     for c in charts if not c.data], charts=plotted, id="charts")] if charts else []
    appendix = [Section("raw samples", notes=[
        "every number in the tables above links to its row's block here: the builds behind it, one line per "
        "results file (linked to its copy next to this page), with each build's own figures"], id="raw")]
    for s in raws:
        s.title = f"raw: {s.title}"
    return (eng + des + disk + siz + cmp + extra + head + [meta_section(inp.docs)]
            + appendix + raws)


# ---------------------------------------------------------------- charts (plotly figures from the PNG charts' series)

def _bars(x, y, lo=None, hi=None, **kw) -> dict:
    t = {"type": "bar", "x": x, "y": y, **kw}
    if lo is not None:
        t["error_y"] = {"type": "data", "array": hi, "arrayminus": lo, "visible": True}
    return t


def figure(name: str, series: dict, title: str) -> Chart | None:
    """One charts.py / sizes_plot.py chart (by its file's stem) redone as a plotly figure from the very
    series the PNG drew."""
    if name == "rate_over_time":
        if not series:
            from dragnet.report.charts import ONE_POLL

            return Chart(title, [], {"empty": ONE_POLL})
        return Chart(title, [{"type": "scatter", "mode": "lines", "name": lab, "x": s["t"], "y": s["cps"],
                              "hovertemplate": f"{lab}<br>%{{x:.1f}} s: %{{y:.0f}} c/s<extra></extra>"}
                             for lab, s in series.items()],
                     {"xaxis": {"title": {"text": "seconds since the build started"}},
                      "yaxis": {"title": {"text": "changes/s, all indexer tasks"}}})
    if name == "total_time":
        return Chart(title, [_bars(series["labels"], series["median"], series["err_low"], series["err_high"],
                                   customdata=series["n"], name="wall time",
                                   hovertemplate="%{x}<br>median %{y:.2f} s, %{customdata} runs<extra></extra>")],
                     {"yaxis": {"title": {"text": "wall time s (median, min…max)"}}})
    if name == "resources":
        metrics = [k for k in series if k not in ("labels", "qs_family")]
        if not any(v for m in metrics for fam in series[m].values() for v in fam):
            return Chart(title, [], {"empty": "the results files hold no pidstat samples"})
        data, layout = [], {"barmode": "group"}
        for j, m in enumerate(metrics):
            ax = "" if j == 0 else str(j + 1)
            for fam, color in (("beam", "#1f77b4"), ("query server", "#ff7f0e")):
                data.append(_bars(series["labels"], series[m][fam], name=fam, legendgroup=fam, showlegend=j == 0,
                                  marker={"color": color}, xaxis=f"x{ax}", yaxis=f"y{ax}",
                                  hovertemplate=f"%{{x}} {fam}<br>{m}: %{{y:,.1f}}<extra></extra>"))
            lo_, hi_ = j / len(metrics) + 0.05, (j + 1) / len(metrics) - 0.02
            layout[f"xaxis{ax}"] = {"domain": [lo_, hi_], "anchor": f"y{ax}"}
            layout[f"yaxis{ax}"] = {"anchor": f"x{ax}", "title": {"text": m}}
        return Chart(title, data, layout)
    if name == "storage":
        labels = series["labels"]
        return Chart(title, [_bars(labels, s["median"], s["err_low"], s["err_high"], name=st,
                                   hovertemplate=f"%{{x}} {st}<br>median %{{y:.2f}} s<extra></extra>")
                             for st, s in series.items() if st != "labels"],
                     {"barmode": "group", "yaxis": {"title": {"text": "wall time s (median, min…max)"}}})
    if name == "disk_matters":
        # language, storage and the scenario's parts on lines of their own: one line overlaps its neighbours
        labels = [lab.replace("\n", "<br>").replace(" ", "<br>", 1).replace("/", "/<br>") for lab in series["labels"]]
        bars = [r if r is not None else 0 for r in series["ratio"]]
        text = [f"×{r:.2f}" if r is not None else (f"OOM-killed ({o})" if o else "–")
                for r, o in zip(series["ratio"], series["oom"])]
        dots_x = [lab for lab, runs in zip(labels, series["runs"]) for _ in runs]
        dots_y = [v for runs in series["runs"] for v in runs]
        return Chart(title, [_bars(labels, bars, name="ratio of medians", text=text, textposition="outside",
                                   hovertemplate="%{x}<br>%{text}<extra></extra>"),
                             {"type": "scatter", "mode": "markers", "x": dots_x, "y": dots_y, "name": "builds",
                              "marker": {"color": "black", "size": 7},
                              "hovertemplate": "%{x}<br>build ×%{y:.3f}<extra></extra>"}],
                     {"yaxis": {"title": {"text": "docs/s ÷ the reference's median"}}, "shapes": [_hline(1.0)],
                      "xaxis": {"tickangle": 0, "tickfont": {"size": 10}}})
    if name.startswith("sizes"):
        data = []
        for lab, s in series.items():
            if not isinstance(s, dict):
                continue
            data.append({"type": "scatter", "mode": "markers", "name": lab, "x": s["sizes"], "y": s["seconds"],
                         "hovertemplate": f"{lab}<br>%{{x:,}} docs: %{{y:.2f}} s<extra></extra>"})
        shapes = [{"type": "line", "x0": n, "x1": n, "yref": "paper", "y0": 0, "y1": 1,
                   "line": {"color": "grey", "dash": "dash", "width": 1}}
                  for k, n in series.items() if k.startswith("first_exceeding_")]
        return Chart(title, data, {"xaxis": {"type": "log", "title": {"text": "documents"}},
                                   "yaxis": {"type": "log", "title": {"text": "build wall time (s)"}},
                                   "shapes": shapes})
    return None


# ---------------------------------------------------------------- I/O

def load_sizes(paths: Sequence[str | Path]) -> list[dict]:
    """Size sweeps among the report's paths (folders holding sizes.json), analysed as `bench --sizes` does."""
    from dragnet.bench import sizes as sz

    out = []
    for p in paths:
        if Path(p).is_dir() and kept(Path(p) / sz.SUMMARY).is_file():
            summary, manifests = sz.load(p)
            analysis = sz.analyse(summary, manifests)
            out.append({"folder": str(p), "summary": summary, "manifests": manifests, "analysis": analysis,
                        "rows": [sz.SizeRow(**r) for r in analysis["rows"]]})
    return out


def chart_figures(inp: Inputs) -> list[Chart]:
    """The report's charts: drawn once with charts.py / sizes_plot.py (into a scratch folder) for the series
    they hold, so the page shows exactly what the PNGs do."""
    from dragnet.report import charts as ch

    out = []
    with tempfile.TemporaryDirectory(prefix="dragnet-html-") as tmp:
        drawn = ch.write_charts(inp.docs, inp.groups, tmp) if inp.docs else []   # none: Nouveau builds alone
        if inp.disk_ref:
            drawn.append(ch.disk_matters(inp.disk_rows, inp.disk_ref, Path(tmp) / "disk_matters.png"))
        if inp.sizes:
            from dragnet.report.sizes_plot import size_chart
            for k, sw in enumerate(inp.sizes):
                a = sw["analysis"]
                drawn.append(size_chart(a["rows"], a["fits"], a["first_exceeding_memory"],
                                        Path(tmp) / f"sizes-{k}.png",
                                        title=f"build time against size ({Path(sw['folder']).name})"))
        for c in drawn:
            sweep = c.path.stem.startswith("sizes")
            fig = figure("sizes" if sweep else c.path.stem, c.series, c.title)
            if fig is not None:
                if sweep:
                    fig.data += fit_lines(inp.sizes[int(c.path.stem.split("-")[1])]["analysis"])
                out.append(fig)
    return out


def fit_lines(analysis: dict) -> list[dict]:
    """The fitted log-log lines of a size sweep (time = e^intercept · size^slope) over the sizes measured."""
    import math

    out = []
    for f in analysis["fits"]:
        if f.get("slope") is None:
            continue
        xs = sorted({r["size"] for r in analysis["rows"] if (r["language"], r["scenario"]) ==
                     (f["language"], f["scenario"]) and r["seconds"]})
        if len(xs) < 2:
            continue
        ends = [xs[0], xs[-1]]
        name = f"{f['language']} {f['scenario']}".strip()
        out.append({"type": "scatter", "mode": "lines", "x": ends,
                    "y": [math.exp(f["intercept"]) * x ** f["slope"] for x in ends], "showlegend": False,
                    "line": {"width": 1, "color": "grey"}, "name": f"fit {name}",
                    "hovertemplate": f"fit {name}: slope {f['slope']:.2f}<extra></extra>"})
    return out


def copy_sources(docs: Sequence[dict], outdir: Path) -> dict[str, str]:
    """Copy every results file the report read into outdir/raw/, named by its path below the files' common
    folder (size-1000/000-….json -> size-1000_000-….json: names repeat across benches); returns
    {source path: link relative to the page}."""
    import os

    files = list(dict.fromkeys(str(d.get("_source") or "") for d in docs))
    files = [f for f in files if f and Path(f).is_file()]
    if not files:
        return {}
    root = Path(os.path.commonpath([str(Path(f).resolve().parent) for f in files]))
    raw = outdir / RAW_DIR
    raw.mkdir(parents=True, exist_ok=True)
    hrefs = {}
    for f in files:
        name = str(Path(f).resolve().relative_to(root)).replace(os.sep, "_")
        shutil.copyfile(f, raw / name)
        hrefs[f] = f"{RAW_DIR}/{name}"
    return hrefs


def plotly_bundle() -> str:
    from dragnet.extras import require

    require("plotly", "the HTML report's charts")
    from plotly.offline import get_plotlyjs
    return get_plotlyjs()


def write_html(outdir: str | Path, inp: Inputs, *, extra: Sequence[Section | dict] = (),
               title: str = "dragnet report") -> Path:
    """Write outdir/index.html (and the results files' copies); returns the page's path."""
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    inp.hrefs = copy_sources(inp.docs, out)
    charts = chart_figures(inp)
    sections = report_sections(inp, charts, extra)
    n = sum(1 for d in inp.docs if d.get("kind") != "bench-failure")
    page = build_page(title, sections, plotly_js=plotly_bundle() if any(s.charts for s in sections) else "",
                      subtitle=f"{n} results files; click a column's header to sort, a number for its raw samples")
    path = out / PAGE
    tmp = out / (PAGE + ".tmp")
    try:
        tmp.write_text(page, encoding="utf-8")
        tmp.replace(path)    # a reader never sees half a page
    finally:
        tmp.unlink(missing_ok=True)
    return path


__all__ = ["Inputs", "report_sections", "figure", "meta_section", "compare_sections", "load_sizes",
           "chart_figures", "copy_sources", "write_html", "forecast_sections", "by_axis_sections"]


# ---------------------------------------------------------------- sections other stages add

def _si(value: float | None, unit: str) -> str:
    if value is None:
        return "–"
    div, shown = SCALE.get(unit, (1.0, unit))
    return f"{value / div:,.1f} {shown}"


def forecast_sections(doc: dict) -> list[Section]:
    """A forecast.json as a table (per axis value, engine and quantity: the fit, the forecast and its
    interval, the warnings) and one chart per quantity: measured points, the fitted line to the target and the
    interval there."""
    target = (doc.get("target") or {}).get("doc_count")
    rows, warnings, charts = [], [], {}
    for label, per_lang in (doc.get("forecasts") or {}).items():
        for lang, f in sorted(per_lang.items()):
            name = f"{label} {lang}".strip()
            for q, e in (f.get("quantities") or {}).items():
                fit, p, unit = e.get("fit") or {}, e.get("prediction") or {}, e.get("unit", "")
                model = fit.get("model") or "linear"
                if fit.get("model") == "power":
                    model += f" k={fit.get('k'):.2f}"
                rows.append([name, q, model, {"text": _si(p.get("value"), unit), "sort": p.get("value")},
                             {"text": f"{_si(p.get('low'), unit)} … {_si(p.get('high'), unit)}", "sort": p.get("low")},
                             {"text": f"{fit['r2']:.3f}" if fit.get("r2") is not None else "–", "sort": fit.get("r2")},
                             {"text": _si(fit.get("fixed"), unit), "sort": fit.get("fixed")},
                             {"text": f"{fit['per_doc']:.4g}" if fit.get("per_doc") is not None else "–",
                              "sort": fit.get("per_doc")},
                             len(e.get("points") or []),
                             "; ".join(e.get("warnings") or []) or "–"])
                warnings += [f"{name} {q}: {w}" for w in e.get("warnings") or []]
                c = (f.get("chase") or {}).get(q)
                if c:        # --chase: the same quantity from one shard built with compaction held and free
                    rows.append([name, f"{q} by chase", "(q − 1) × held + free, one shard", {"text": _si(c["value"], unit),
                                 "sort": c["value"]}, {"text": f"{_si(c['low'], unit)} … {_si(c['high'], unit)}",
                                                       "sort": c["low"]}, "–", "–", "–",
                                 len(f["chase"].get("builds") or []), "; ".join(f["chase"].get("limits") or []) or "–"])
                if not fit or not e.get("points"):
                    continue
                div, shown = SCALE.get(unit, (1.0, unit))
                pts = entry_points(e)
                shards = (e.get("shards") or {}).get("q")
                xs = [pt[0] for pt in pts]
                traces = charts.setdefault(q, ([], shown))[0]
                traces.append({"type": "scatter", "mode": "markers", "x": xs, "y": [pt[1] / div for pt in pts],
                               "name": f"{name} measured" + (f" (one-shard builds × {shards})" if shards else "")})
                end = p.get("docs") or max(xs)
                line_x = entry_curve(e)
                traces.append({"type": "scatter", "mode": "lines", "name": f"{name} fit ({fit.get('model') or 'linear'})",
                               "x": line_x, "y": [entry_value(e, x) / div for x in line_x]})
                if p.get("value") is not None:
                    traces.append({"type": "scatter", "mode": "markers", "name": f"{name} forecast",
                                   "x": [end], "y": [p["value"] / div],
                                   "error_y": {"type": "data", "symmetric": False,
                                               "array": [(p["high"] - p["value"]) / div],
                                               "arrayminus": [(p["value"] - p["low"]) / div]}})
    notes = [f"target: {target:,} documents" if target else "target: not recorded",
             f"measured sizes: {', '.join(f'{n:,}' for n in doc.get('sizes') or [])}; models: a fixed cost plus a "
             "per-document cost growing as n, n log n or n^k; the forecast is the quantity's model (column), the "
             f"interval spans the {int(100 * (doc.get('level') or 0.95))}% prediction intervals of all three "
             f"({doc.get('weighting', 'ordinary')} least squares)",
             *warnings]
    bt = doc.get("backtest")
    if isinstance(bt, dict) and bt:
        notes.append("back-test: " + json.dumps(bt, ensure_ascii=False)[:400])
    section = Section("forecast", ("engine", "quantity", "model", "forecast", "interval", "r²", "fixed", "per x(n)",
                                   "points", "warnings"), rows, notes,
                      [Chart(f"{q} ({unit})", traces, {"xaxis": {"title": "documents"}, "yaxis": {"title": unit}})
                       for q, (traces, unit) in charts.items()], id="forecast")
    return [section]


def by_axis_sections(comparison: list[dict], by: Sequence[str]) -> list[Section]:
    """`report --by`'s comparison: per group of the other axes, the values' medians and each adjacent pair's
    verdict."""
    rows = []
    for g in comparison:
        verdicts = {p["faster"]: p for p in g.get("pairs") or []}
        for v in g["values"]:
            p = verdicts.get(v["value"])
            rows.append([g["group"] or "–", v["value"], v["runs"],
                         {"text": f"{v['median_docs_per_s']:,.1f}", "sort": v["median_docs_per_s"]},
                         "–" if p is None else
                         f"×{p['ratio']:.3f} [{p['interval']['low']:.3f} … {p['interval']['high']:.3f}] "
                         f"{p['metric']} vs {p['slower']}: {p['state']}" + (f", {p['why']}" if p['why'] else "")])
    return [Section(f"by {', '.join(by)}", ("other axes", "value", "runs", "docs/s median", "against the next"),
                    rows, (f"order: {'; '.join(g['order'] for g in comparison if g.get('order'))}",
                           f"adjacent pairs: {TEST}"), id="by-axis")]


SPLIT_COLORS = {"qs": "#ff7f0e", "beam": "#1f77b4", "helpers": "#9467bd", "other": "#8c564b", "idle": "#dddddd"}


def split_chart(loads: Sequence[Any], title: str) -> Chart | None:
    """A stacked bar per engine and CouchDB version (and storage, when the workloads differ in it) of where
    its build's interval × cores went (the kernel's split, report.share); None when no engine has one."""
    from dragnet.report.share import SPLIT_PARTS

    bars = [(w, e) for w in loads for e in w.engines if e.split]
    if not bars:
        return None
    keys = {(w.key, w.storage) for w, _ in bars}

    def label(w, e) -> str:
        parts = [e.engine] + ([f"CouchDB {e.couchdb}"] if e.couchdb else [])
        return "<br>".join(parts + ([w.storage] if len(keys) > 1 else []))

    x = [label(w, e) for w, e in bars]
    data = []
    for k, name in SPLIT_PARTS:
        if all(e.split[k] is None for _, e in bars):
            continue
        data.append({"type": "bar", "name": name, "x": x, "y": [100 * (e.split[k] or 0.0) for _, e in bars],
                     "customdata": [e.split["seconds"][k] or 0.0 for _, e in bars],
                     "marker": {"color": SPLIT_COLORS[k]},
                     "hovertemplate": f"%{{x}}<br>{name}: %{{y:.0f}}% (%{{customdata:.2f}} s)<extra></extra>"})
    return Chart(title, data, {"barmode": "stack", "yaxis": {"title": {"text": "% of interval × cores (median)"}}})


def share_sections(loads: Sequence[Any]) -> list[Section]:
    """dragnet.report.share's workloads: each engine against couchjs, the ceiling and the Erlang baseline, its
    share with an interval, a stacked bar per engine of where its build's time went, and what a switch gains."""
    from dragnet.report.share import split_lines

    out = []
    for i, w in enumerate(loads):
        rows = [[t if v is None else {"text": t, "sort": v} for t, v in zip(texts, values)]
                for texts, values in zip(columns.text_rows(columns.SHARE, w.engines),
                                         columns.value_rows(columns.SHARE, w.engines))]
        chart = split_chart([w], f"where the build time goes ({w.key}, {w.storage})")
        notes = [g.line() for g in w.gains] + list(w.notes) + [line.strip() for line in split_lines(w)[1:]]
        out.append(Section(f"engine share: {w.key}, {w.storage}", columns.headers(columns.SHARE), rows, notes,
                           charts=[chart] if chart else [],
                           id=f"engine-share-{i}"))
    # the same workload on several CouchDB versions (or storages): their bars side by side
    by_key: dict[str, list] = {}
    for w in loads:
        by_key.setdefault(w.key, []).append(w)
    for i, (key, ws) in enumerate(by_key.items()):
        chart = split_chart(ws, f"where the build time goes ({key}), every CouchDB version and storage") \
            if len(ws) > 1 else None
        if chart is not None:
            out.append(Section(f"where the build time goes: {key}", charts=[chart], id=f"split-{i}"))
    return out
