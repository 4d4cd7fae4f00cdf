"""The main tables' columns come from report.columns: a made-up figure, one field on its record and one Column,
shows in the console, Markdown, CSV, JSON and HTML outputs (groups built from the CouchDB 3.5.0 recordings)."""

from __future__ import annotations

import csv
import io
from dataclasses import field, make_dataclass, replace
from pathlib import Path

import pytest

from dragnet.report import columns, share
from dragnet.report import html as report_html
from dragnet.report import tables
from dragnet.report import terminal
from dragnet.report.html_page import build_page
from dragnet.report.render import csv as render_csv, json as render_json, markdown as render_md

NAMES = ["javascript", "javascript_repeat", "erlang_baseline", "erlang_baseline_repeat", "javascript_quickjs"]


@pytest.fixture(scope="module")
def docs(fixtures_dir) -> list[dict]:
    from dragnet.results.addview_results import from_recording

    return [dict(from_recording(fixtures_dir / n), _source=n) for n in NAMES]


def _with_figure(cls, rows, figure):
    """The rows as instances of `cls` with one more field, `made_up`, set to figure(row)."""
    wider = make_dataclass(f"Wider{cls.__name__}", [("made_up", float, field(default=0.0))], bases=(cls,),
                           frozen=cls.__dataclass_params__.frozen)
    return [wider(**{f: getattr(r, f) for f in r.__dataclass_fields__}, made_up=figure(r)) for r in rows]


MADE_UP = columns.Column("zq", text=lambda r: f"{r.made_up:.1f}zq", value=lambda r: r.made_up,
                         csv=(("made_up_zq", lambda r: r.made_up),))


def test_a_new_group_column_shows_in_every_format(docs, monkeypatch, capsys):
    groups = _with_figure(tables.Group, tables.build_report(docs), lambda g: 1000.0 + g.n)
    monkeypatch.setattr(columns, "GROUP", columns.GROUP + (MADE_UP,))
    cells = {f"{1000 + g.n:.1f}zq" for g in groups}
    assert len(groups) >= 3 and cells

    terminal.render_table(groups)
    console = capsys.readouterr().out
    assert "zq" in console.splitlines()[1] and all(c in console for c in cells)

    md = render_md.to_markdown(groups)
    header, _, *rows = md.splitlines()
    assert header.endswith("| zq |") and [r.rsplit("|", 2)[1].strip() for r in rows] == \
        [f"{1000 + g.n:.1f}zq" for g in groups]

    recs = list(csv.DictReader(io.StringIO(render_csv.to_csv(groups))))
    assert [float(r["made_up_zq"]) for r in recs] == [1000.0 + g.n for g in groups]
    assert list(recs[0])[-1] == "made_up_zq"

    js = render_json.to_json(groups)
    assert [g["made_up"] for g in js["groups"]] == [1000.0 + g.n for g in groups]

    inp = report_html.Inputs(docs, groups=groups)
    (sec,), _ = report_html.engine_sections(inp, tables.prepare(docs))
    assert sec.columns[-1] == "zq"
    assert [row[-1]["sort"] for row in sec.rows] == [1000.0 + g.n for g in groups]
    page = build_page("t", [sec])
    assert ">zq<" in page and all(c in page for c in cells)


def test_a_new_design_column_shows_in_the_csv_and_tables(monkeypatch, capsys):
    from dragnet.results.load import load_results

    # a design doc's bench kept as evidence (the recordings are view-file builds)
    dgroups = tables.build_design_report(load_results([Path(__file__).parents[1] / "docs/studies/html-report/ddoc"]))
    assert dgroups
    wider = _with_figure(tables.DesignGroup, dgroups, lambda g: 7.0)
    monkeypatch.setattr(columns, "DESIGN", columns.DESIGN + (MADE_UP,))
    assert "| zq |" in render_md.design_markdown(wider)
    assert [float(r["made_up_zq"]) for r in csv.DictReader(io.StringIO(render_csv.design_csv(wider)))] == \
        [7.0] * len(wider)
    terminal.render_design_table(wider)
    assert "7.0zq" in capsys.readouterr().out


def test_a_new_share_column_shows_in_its_lines_the_page_and_json(docs, monkeypatch):
    loads = share.workloads(docs)
    assert loads and loads[0].engines
    w = replace(loads[0], engines=_with_figure(share.EngineShare, loads[0].engines, lambda e: 3.0 * e.runs))
    monkeypatch.setattr(columns, "SHARE", columns.SHARE + (
        columns.Column("zq", text=lambda e: f"{e.made_up:.1f}zq", value=lambda e: e.made_up,
                       line=lambda e: f"{e.made_up:.1f}zq"),))
    lines = share.lines([w])
    assert all(any(ln.startswith(f"  {e.engine:<26}") and ln.endswith(f"{3.0 * e.runs:.1f}zq") for ln in lines)
               for e in w.engines)
    sec = report_html.share_sections([w])[0]
    assert sec.columns[-1] == "zq" and [r[-1]["sort"] for r in sec.rows] == [3.0 * e.runs for e in w.engines]
    assert [e["made_up"] for e in share.to_json([w])[0]["engines"]] == [3.0 * e.runs for e in w.engines]


def test_the_headers_and_csv_fields_are_the_declared_ones():
    # the outputs' headers, as they were written by hand before (the evidence renders stay the same)
    assert columns.headers(columns.GROUP) == (
        "language", "storage", "runs", "all c/s", "one c/s", "total s", "wall s", "wall σ", "wall min…max",
        "docs/s", "× base", "beam CPU %", "beam MB", "QS", "QS CPU %", "QS MB")
    assert columns.csv_fields(columns.GROUP)[:4] == ("language", "storage", "runs", "failed")
    assert columns.csv_fields(columns.DESIGN)[4:8] == ("is_reference", "reference", "runs", "failed")
    assert columns.headers(columns.SHARE) == ("engine", "runs", "wall s (median)", "× couchjs", "× ceiling",
                                              "× baseline", "share [95% interval]")


def test_nouveau_rows_keep_the_figures_their_own_table_had():
    """A Nouveau build's rows in the design table: beam and query-server CPU % from the build's own split of its
    wall time, and CPU s/1k, the JVM, index MB and errors in the CSV (they were in Nouveau's own table)."""
    import json
    import statistics

    from dragnet.results.load import load_results

    folder = Path(__file__).parents[1] / "docs/studies/nouveau/engines-3.5.0"
    raw = [json.loads(p.read_text()) for p in sorted(folder.rglob("*.json"))]
    raw = [r for r in raw if str(r.get("schema", "")).startswith("dragnet.nouveau/")
           and r.get("language") == "javascript"]
    assert raw
    med = lambda k: statistics.median(r["split"]["of_wall"][k] * 100 for r in raw)  # noqa: E731
    (g,) = [g for g in tables.build_design_report(load_results([folder], nouveau=True)) if g.label == "javascript"]
    assert g.beam_cpu == pytest.approx(med("beam_cpu")) and g.qs_cpu == pytest.approx(med("qs_cpu"))
    assert g.jvm_cpu == pytest.approx(med("jvm_cpu"))
    assert g.index_mb == pytest.approx(statistics.median(r["summary"]["disk_size"] for r in raw) / 1e6)
    assert g.cpu_s_per_1k.median == pytest.approx(statistics.median(r["summary"]["cpu_s_per_1000_docs"] for r in raw))
    (rec,) = [r for r in csv.DictReader(io.StringIO(render_csv.design_csv([g])))]
    assert float(rec["index_mb_median"]) == pytest.approx(g.index_mb) and rec["index_errors"] == "0"


# ---------------------------------------------------------------- iostat, sizes, "disk matters?"

def _io_result(label: str, r_s: float) -> dict:
    dev = {"r_s": {"avg": r_s}, "rkb_s": {"avg": 2.0}, "w_s": {"avg": 3.0}, "wkb_s": {"avg": 4.0},
           "r_await": {"avg": 0.5}, "util_pct": {"avg": 9.0}}
    return {"summary": {"language": label, "ok": True}, "storage": "disk",
            "iostat": {"device": "vda", "summary": {"vda": dev}},
            "view": {"language": label, "design": {"id": "_design/app"}},
            "bench": {"language": label, "storage_label": "disk"}}


def test_a_new_iostat_column_shows_in_the_console_markdown_and_json(monkeypatch):
    from dragnet.report import io_table
    from dragnet.report.model import Report
    from dragnet.report.render import text as render_text

    groups, _ = io_table.io_rows([_io_result("javascript", 10.0), _io_result("bun", 20.0)])
    wider = _with_figure(io_table.IoGroup, groups, lambda g: 5.0 * g.r_s)
    monkeypatch.setattr(columns, "IO", columns.IO + (MADE_UP,))
    rep = Report(results=("x",), io_rows=wider)
    for markdown in (False, True):
        out: list[str] = []
        render_text.tail(rep, lambda s="", nl=True: out.append(s + ("\n" if nl else "")), markdown=markdown)
        table = [ln for ln in "".join(out).splitlines() if ln.startswith("|")]
        assert table[0].endswith("| %util | zq |")
        assert [ln.rsplit("|", 2)[1].strip() for ln in table[2:]] == ["100.0zq", "50.0zq"]   # bun, javascript
    js = render_json.render(rep)["iostat"]
    assert js["columns"][-1] == "zq" and [r[-1] for r in js["rows"]] == ["100.0zq", "50.0zq"]


def _size_rows():
    from dragnet.results.schema import SizeRow

    return [SizeRow("javascript", "", n, 2, [1.0, 2.0], [n / 1.5], 10 * n, n, None, None, False, n == 2000)
            for n in (1000, 2000)]


def test_a_new_sizes_column_shows_in_the_console_and_the_page(monkeypatch, capsys):
    rows = _with_figure(type(_size_rows()[0]), _size_rows(), lambda r: r.size / 100)
    monkeypatch.setattr(columns, "SIZES", columns.SIZES + (MADE_UP,))
    # render_sizes rebuilds its rows from the analysis' dicts: as the wider record here
    monkeypatch.setattr("dragnet.bench.sizes.SizeRow", type(rows[0]))
    rep = {"analysis": {"rows": [dict(r.__dict__) for r in rows], "fits": [], "first_exceeding_memory": {}},
           "n_ok": 2, "runs": [{}, {}], "disk": {}, "reference": None, "failed": [], "chart_note": "no chart",
           "folder": "sw"}
    terminal.render_sizes(rep)
    console = capsys.readouterr().out
    assert "zq" in console and "10.0zq" in console and "20.0zq" in console

    secs, _ = report_html.size_sections(report_html.Inputs([], sizes=[{"folder": "sw", "rows": rows,
                                                                        "manifests": {}}]))
    assert secs[0].columns[-1] == "zq" and [r[-1]["sort"] for r in secs[0].rows] == [10.0, 20.0]
    assert [r[-1]["text"] for r in secs[0].rows] == ["10.0zq", "20.0zq"]


def test_a_new_disk_column_shows_in_the_console_markdown_and_the_page(monkeypatch, capsys):
    from dragnet.axes.scenario import Row
    from dragnet.report.model import Report

    rows = [Row("javascript", "disk", "none", [100.0, 110.0], 1.0, False),
            Row("javascript", "disk", "mem 1g", [50.0, 55.0], 0.5, True, iostat={"r_s": 12.0})]
    wider = _with_figure(Row, rows, lambda r: r.ratio * 8)
    monkeypatch.setattr(columns, "DISK", columns.DISK + (MADE_UP,))
    terminal.render_disk_matters(wider, "none")
    console = capsys.readouterr().out
    assert "zq" in console and "8.0zq" in console and "4.0zq" in console

    md = render_md.render(Report(results=("x",), disk_rows=wider, disk_reference="none"))
    table = [ln for ln in md.splitlines() if ln.startswith("| language | storage | scenario")]
    assert table and table[0].endswith("| %util | zq |") and "| 8.0zq |" in md and "| 4.0zq |" in md

    (sec,), _ = report_html.disk_sections(report_html.Inputs([], disk_rows=wider, disk_ref="none"), [])
    assert sec.columns[-1] == "zq" and [r[-1]["sort"] for r in sec.rows] == [8.0, 4.0]


def test_the_iostat_sizes_and_disk_headers_are_the_declared_ones():
    assert columns.headers(columns.IO) == ("design doc / view", "engine", "storage", "builds", "device", "r/s",
                                           "rkB/s", "w/s", "wkB/s", "r_await ms", "%util")
    assert columns.headers(columns.SIZES) == ("language", "scenario", "docs", "runs", "build s median",
                                              "docs/s median", "db file", "index file", "peak memory",
                                              "> memory limit")
    assert columns.headers(columns.DISK) == ("language", "storage", "scenario", "runs", "docs/s median",
                                             "× reference", "slower every round", "OOM", "r/s", "rkB/s",
                                             "r_await ms", "%util")


def test_new_load_columns_show_in_the_lines_and_json(monkeypatch):
    """A made-up column in each of the load's three tables: in the lines the console and Markdown print, and in
    the JSON (the slowdown's rows are dicts there; requests and writes are the tables' text)."""
    from dragnet.report import load as report_load
    from dragnet.report.model import Report

    def doc(load, repeat, wall):
        return {"summary": {"ok": True, "wall_time_s": wall, "docs": 1000, "docs_per_sec_wall": 1000 / wall},
                "bench": {"language": "javascript", "repeat": repeat, "id": "b",
                          "axes": {"language": "javascript", "storage": "disk", "load": load}}}
    docs = [doc("none", 0, 10.0), doc("none", 1, 11.0)]
    for r in (0, 1):
        docs.append(doc("writes=20/s", r, 15.0 + r) | {"load": {
            "spec": "writes=20/s", "kinds": {"writes": {"asked_per_s": 20, "build": {"ok": 30 + r}}},
            "writes_check": {"acknowledged": 30 + r, "lost": 0}}})
    monkeypatch.setattr(report_load, "SLOWDOWN", report_load.SLOWDOWN + (
        columns.Column("zq", lambda r: f"{r['rounds'] * 7}zq"),))
    monkeypatch.setattr(report_load, "REQUESTS", report_load.REQUESTS + (
        columns.Column("zq", lambda w: f"{w.figures['ok'] + 100}zq"),))
    monkeypatch.setattr(report_load, "WRITES", report_load.WRITES + (
        columns.Column("zq", lambda b: f"{b.bench['repeat'] + 500}zq"),))
    sec = report_load.section(docs)
    tables = [ln for ln in "\n".join(report_load.lines(sec)).splitlines() if ln.startswith("| ")]
    heads = [ln for ln in tables if ln.startswith("| engine |")]
    assert len(heads) == 3 and all(h.endswith("| zq |") for h in heads)
    cells = [ln.rsplit("|", 2)[1].strip() for ln in tables if ln not in heads]
    assert cells == ["14zq", "130zq", "131zq", "500zq", "501zq"]
    js = render_json.render(Report(results=("x",), load=sec))["load"]
    assert [r[-1] for r in js["requests"]] == ["130zq", "131zq"] and [r[-1] for r in js["writes"]] == \
        ["500zq", "501zq"]
    assert report_load.slowdown_rows(js["slowdown"])[0][-1] == "14zq"


def test_a_new_compare_column_shows_in_the_console_and_markdown(monkeypatch, capsys):
    from dragnet.report import compare
    from dragnet.results.load import load_results

    ci = Path(__file__).parents[1] / "docs/studies/compare/ci"
    cmp = compare.compare(load_results([ci / "base"]), load_results([ci / "slower"]), threshold=0.05)
    assert cmp.cells
    monkeypatch.setattr(compare, "COMPARE", compare.COMPARE + (
        columns.Column("zq", lambda r: f"{len(r.cell['new']['samples']) * 3}zq"),))
    want = [f"{len(x.new.samples) * 3}zq" for x in cmp.cells]
    md = render_md.compare_markdown(cmp)
    rows = [ln for ln in md.splitlines() if ln.startswith("| ")]
    assert rows[0].endswith("| verdict | zq |") and [r.rsplit("|", 2)[1].strip() for r in rows[1:]] == want
    terminal.render_compare(cmp)
    console = capsys.readouterr().out
    assert "zq" in console and all(w in console for w in want)


def test_a_new_nouveau_column_shows_in_the_page(monkeypatch):
    from dragnet.report import model, search_files

    rep = model.build([str(Path(__file__).parents[1] / "docs/studies/nouveau/engines-3.5.0")])
    assert rep.nouveau and rep.nouveau["rows"]
    monkeypatch.setattr(search_files, "NOUVEAU", search_files.NOUVEAU + (
        columns.Column("zq", lambda r: f"{r['builds'] * 2}zq", lambda r: r["builds"] * 2),))
    [sec] = search_files.html_sections(rep.nouveau)
    assert sec.columns[-1] == "zq" and [row[-1] for row in sec.rows] == \
        [{"text": f"{r['builds'] * 2}zq", "sort": r["builds"] * 2} for r in rep.nouveau["rows"]]
    assert ">zq<" in build_page("t", [replace(sec, charts=[])])


def test_a_new_history_column_shows_in_the_console(monkeypatch, capsys):
    """`dragnet history`'s table (its one renderer is the console; JSON emits the points): a made-up column shows
    with a cell per point, and a step's row is still the one marked."""
    from dragnet.report import history
    from dragnet.report.render import console

    entries = [{"id": f"r{i}", "date": f"2026-11-0{i + 1}T10:00:00", "couchdb": "3.5.0",
                "cells": [{"axes": {"language": "javascript", "storage": "disk"}, "docs_s": v}]}
               for i, v in enumerate([[100.0, 101.0, 99.0], [80.0, 81.0, 79.0]])]
    ser = history.series(entries, "docs_s", "date")
    monkeypatch.setattr(history, "HISTORY", history.HISTORY + (
        columns.Column("zq", lambda r: f"{len(r.point.samples) * 7}zq", lambda r: len(r.point.samples) * 7),))
    console.history(history.History("/store", "docs_s", "date", ser, 2))
    out = capsys.readouterr().out
    lines = out.splitlines()
    head = next(ln for ln in lines if "cell" in ln and "group" in ln)
    assert head.rstrip("┃ ").endswith("zq")
    body = [ln for ln in lines if ln.startswith("│")]
    assert len(body) == 2 and all(ln.rstrip("│ ").endswith("21zq") for ln in body)
    assert "STEP" in body[1] and "STEP" not in body[0] and "1 step(s)" in out


def test_a_new_compare_page_column_shows_on_the_page(monkeypatch):
    """The HTML page's compare table (over compare's JSON) comes from compare.COMPARE, the console's: a made-up
    column shows with a cell per compared cell, its number linked to that cell's raw samples."""
    import json

    from dragnet.report import compare
    from dragnet.results.load import load_results

    ci = Path(__file__).parents[1] / "docs/studies/compare/ci"
    doc = json.loads(json.dumps(compare.compare(load_results([ci / "base"]), load_results([ci / "slower"]))
                                .to_json(), default=str))
    assert doc["cells"]
    monkeypatch.setattr(compare, "COMPARE", compare.COMPARE + (
        columns.Column("zq", lambda r: f"{len(r.cell['new']['samples']) * 3}zq",
                       lambda r: len(r.cell["new"]["samples"]) * 3),))
    monkeypatch.setattr(report_html, "COMPARE_RAW", report_html.COMPARE_RAW + (
        columns.Column("zq", lambda x: f"{x.build['side']}{x.build['build']}zq", None),))
    [sec], raws = report_html.compare_sections(doc, {})
    assert [s.columns[-1] for s in raws] == ["zq"] * len(doc["cells"])
    assert [row[-1] for row in raws[0].rows] == [f"{side}{j}zq" for side in ("old", "new")
                                                 for j in range(len(doc["cells"][0][side]["samples"]))]
    assert sec.columns[-1] == "zq" and sec.columns[-2] == "verdict"
    assert [row[-1] for row in sec.rows] == [{"text": f"{len(c['new']['samples']) * 3}zq",
                                              "sort": len(c["new"]["samples"]) * 3, "href": f"#raw-compare-{i}"}
                                             for i, c in enumerate(doc["cells"])]
    assert ">zq<" in build_page("t", [replace(sec, charts=[])])


def test_a_new_raw_sample_column_shows_in_the_page_s_raw_blocks(monkeypatch):
    """The page's raw-samples blocks (engine rows' builds from html.RAW, a size's runs from html.SIZE_RAW): a
    made-up column shows in each block, a cell per build, sorting by its number."""
    from dragnet.report.html import Inputs, report_sections
    from dragnet.results import load

    fixture = Path(__file__).parent / "fixtures" / "scenario-bench"
    docs = load.load_results([fixture])
    monkeypatch.setattr(report_html, "RAW", report_html.RAW + (
        columns.Column("zq", lambda x: f"{len(x.build.source)}zq", lambda x: len(x.build.source)),))
    raws = [s for s in report_sections(Inputs(docs, tables.build_report(docs))) if s.id.startswith("raw-engine-")]
    assert raws and all(s.columns[-1] == "zq" for s in raws)
    cells = [row[-1] for s in raws for row in s.rows]
    assert len(cells) == len(docs) and all(c["text"] == f"{c['sort']}zq" and c["sort"] > 0 for c in cells)

    monkeypatch.setattr(report_html, "SIZE_RAW", report_html.SIZE_RAW + (
        columns.Column("zq", lambda x: f"{x.build['size'] * 3}zq", None),))
    runs = [{"language": "javascript", "size": n, "repeat": 0, "status": "ok", "result_file": "r.json"}
            for n in (1000, 2000)]
    monkeypatch.setattr("dragnet.bench.sizes.sweep_runs", lambda manifests: runs)
    monkeypatch.setattr("dragnet.bench.sizes.fits", lambda runs: {})
    _, raws = report_html.size_sections(Inputs([], sizes=[{"folder": "sw", "rows": _size_rows(), "manifests": {}}]))
    assert [(s.columns[-1], [row[-1] for row in s.rows]) for s in raws] == [("zq", ["3000zq"]), ("zq", ["6000zq"])]
    assert raws[0].rows[0][0] == {"text": "r.json", "title": "sw/size-1000/r.json"}
