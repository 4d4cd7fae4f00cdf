"""`dragnet report --html`: the page builder (pure) and the page itself in a headless Chromium (no network)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from dragnet.report import html_page as hp
from dragnet.report import tables as rp
from dragnet.report.render import cells as cell_text
from dragnet.cli import main
from dragnet.axes.scenario import disk_matters, runs_from_results
from dragnet.report import columns
from dragnet.report.scenario_table import disk_rows
from dragnet.results import load as load

import browser

FIXTURE = Path(__file__).parent / "fixtures" / "scenario-bench"   # a real bench: 2 scenarios, OOM kills
# a real design-doc bench (tests/ddocs/app.json, javascript against javascript_quickjs), docs/html-report.md
DDOC = Path(__file__).parent.parent / "docs" / "studies" / "html-report" / "ddoc"


# ---------------------------------------------------------------- pure

def test_section_from_plain_data_renders_table_notes_and_chart():
    sec = {"title": "forecast", "columns": ["docs", "hours"], "rows": [[1000, {"text": "2.5 h", "sort": 2.5}]],
           "notes": ["<b>not markup</b>"], "chart": {"title": "f", "data": [{"type": "bar", "x": [1], "y": [2]}]}}
    page = hp.build_page("t", [sec], plotly_js="/*plotly*/")
    assert '<section id="forecast">' in page
    assert '<td data-sort="1000">1000</td>' in page and '<td data-sort="2.5">2.5 h</td>' in page
    assert "&lt;b&gt;not markup&lt;/b&gt;" in page
    assert 'id="chart-forecast-0"' in page and page.count("/*plotly*/") == 1


def test_a_chart_without_plotly_is_refused_and_script_endings_are_escaped():
    with pytest.raises(ValueError):
        hp.build_page("t", [{"title": "x", "chart": {"data": [{"x": [1]}]}}])
    page = hp.build_page("t", [{"title": "x", "chart": {"title": "</script>", "data": [{"name": "</script>"}]}}],
                         plotly_js="/**/")
    assert page.count("</script>") == page.count("<script>")


def test_cli_refuses_compare_json_without_html_and_a_wrong_compare_file(tmp_path):
    r = CliRunner().invoke(main, ["report", str(FIXTURE), "--compare-json", str(tmp_path / "c.json")])
    assert r.exit_code != 0 and "--compare-json goes with --html" in r.output
    bad = tmp_path / "c.json"
    bad.write_text(json.dumps({"groups": []}))
    r = CliRunner().invoke(main, ["report", str(FIXTURE), "--html", str(tmp_path / "h"), "--compare-json", str(bad)])
    assert r.exit_code != 0 and "not a `dragnet compare --json` output" in r.output
    assert not (tmp_path / "h").exists()


def test_every_linked_number_lands_on_a_raw_block_holding_each_build_once():
    from dragnet.report.html import Inputs, report_sections

    docs = load.load_results([FIXTURE])
    sc_runs, ref = runs_from_results(docs)
    secs = report_sections(Inputs(docs, rp.build_report(docs), [], disk_matters(sc_runs, ref), ref))
    ids = {s.id for s in secs}
    hrefs = [c["href"] for s in secs for row in s.rows for c in row if isinstance(c, dict) and c.get("href")]
    assert hrefs and all(h[1:] in ids for h in hrefs if h.startswith("#"))
    engine_lines = [row for s in secs if s.id.startswith("raw-engine-") for row in s.rows]
    assert sorted(row[0]["title"] for row in engine_lines) == sorted(d["_source"] for d in docs)
    disk_lines = [row for s in secs if s.id.startswith("raw-disk-") for row in s.rows]
    assert len(disk_lines) == len(sc_runs)


def test_table_cells_sort_by_the_models_numbers_not_their_text():
    from dragnet.report.html import Inputs, report_sections

    docs = load.load_results([FIXTURE])
    groups = rp.build_report(docs)
    (engines,) = [s for s in report_sections(Inputs(docs, groups)) if s.id == "engines"]
    timed = [(g, row) for g, row in zip(groups, engines.rows) if g.wall_s is not None]
    assert timed
    for g, row in timed:
        assert row[0] == g.label and not isinstance(row[1], dict)            # text stays text
        assert row[cell_text.COLUMNS.index("wall s")]["sort"] == g.wall_s.median  # unrounded
        assert row[cell_text.COLUMNS.index("docs/s")]["sort"] == g.docs_per_s.median


KERNEL_SPLIT = Path(__file__).parent.parent / "docs" / "studies" / "where-the-time-goes" / "kernel-split"


def test_short_builds_chart_wall_time_and_say_why_there_is_no_rate_line():
    from dragnet.report.charts import ONE_POLL
    from dragnet.report.html import Inputs, chart_figures, report_sections

    docs = load.load_results([KERNEL_SPLIT])
    groups = rp.build_report(docs)
    charts = {c.title.split(" (")[0]: c for c in chart_figures(Inputs(docs, groups))}
    # builds of well under 2 s: _active_tasks says 0 or 1 s; the chart shows the wall time
    bars = charts["View build time per language"].data[0]
    for g in groups:
        assert bars["y"][bars["x"].index(g.label)] == g.wall_s.median
    # the resources chart's CPU panel is the kernel's, which these files have
    assert any("CPU % of a core (kernel)" in t["hovertemplate"] for t in charts["Resources per process family"].data)
    # one poll per build: no line, and the page says why instead of an empty frame
    rate = charts["Index build rate over time"]
    assert rate.data == [] and rate.layout["empty"] == ONE_POLL
    secs = report_sections(Inputs(docs, groups), list(charts.values()))
    (head,) = [s for s in secs if s.id == "charts"]
    assert any(ONE_POLL in n for n in head.notes)


def test_meta_counts_values_that_differ_between_files():
    from dragnet.report.html import meta_section

    docs = load.load_results([FIXTURE])
    rows = dict(meta_section(docs).rows)
    assert rows["CouchDB"].startswith("3.5.0")
    assert "(4 files)" in rows["scenario"] and rows["load"] == "not recorded in these results files"
    # files that record the load show its range
    for i, d in enumerate(docs):
        d.setdefault("machine", {})["load_average"] = [1.5 + i, 1.0, 0.5]
    rows = dict(meta_section(docs).rows)
    assert rows["load average (1 min, as each file was written)"] == f"1.50 … {1.5 + len(docs) - 1:.2f} over {len(docs)} files"


def test_baseline_fills_the_compare_section_and_excludes_compare_json(tmp_path):
    r = CliRunner().invoke(main, ["report", str(DDOC), "--baseline", str(DDOC), "--html", str(tmp_path / "h"),
                                  "--format", "json"])
    assert r.exit_code == 0, r.output
    page = (tmp_path / "h" / "index.html").read_text()
    assert '<section id="compare">' in page and '<section id="raw-compare-0">' in page
    r = CliRunner().invoke(main, ["report", str(DDOC), "--baseline", str(DDOC), "--html", str(tmp_path / "g"),
                                  "--compare-json", str(tmp_path / "c.json")])
    assert r.exit_code != 0 and "give one of them" in r.output


# ---------------------------------------------------------------- in a browser

def compare_doc(docs: list[dict]) -> dict:
    """`dragnet compare`'s JSON over the fixture's builds (along its scenario axis)."""
    from dragnet.report.compare import compare_along

    return compare_along(docs).to_json()


# every raw-samples line that names a results file: its block, the file, its copy and its wall time
RAW_LINES = """
return Array.from(document.querySelectorAll("section[id^='raw-'] tbody tr")).flatMap(function(tr){
  var a = tr.querySelector('td a'); if (!a || !a.textContent.endsWith('.json')) return [];
  var sec = tr.closest('section'); var heads = Array.from(sec.querySelectorAll('thead th')).map(function(h){
    return h.textContent.trim();});
  var i = heads.indexOf('wall s');
  return [{block: sec.id, source: a.parentNode.getAttribute('title'), href: a.getAttribute('href'),
           wall: i < 0 ? null : tr.cells[i].getAttribute('data-sort')}];});
"""


def _cells(driver, selector: str) -> list[list[str]]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0] + ' tbody tr')).map(function(tr){"
        "return Array.from(tr.cells).map(function(td){return td.textContent;});});", selector)


def _column(driver, table, name: str) -> list:
    heads = [th.text.strip() for th in table.find_elements("css selector", "thead th")]
    i = heads.index(name)
    return [tr.find_elements("css selector", "td")[i] for tr in table.find_elements("css selector", "tbody tr")]


@pytest.mark.slow
def test_page_in_headless_chromium(tmp_path):
    why = browser.missing()
    if why:
        pytest.skip(why)
    docs = load.load_results([FIXTURE, DDOC])
    cmp = compare_doc(load.load_results([FIXTURE]))
    cmp_file = tmp_path / "compare.json"
    cmp_file.write_text(json.dumps(cmp))
    out = tmp_path / "html"
    r = CliRunner().invoke(main, ["report", str(FIXTURE), str(DDOC), "--html", str(out),
                                  "--compare-json", str(cmp_file), "--format", "json"])
    assert r.exit_code == 0, r.output
    page = out / "index.html"
    assert json.loads(r.stdout)["html"] == str(page)

    # what the page must show, read back through the same loaders and report functions
    groups = rp.build_report(docs)
    sc_runs, ref = runs_from_results(docs)
    want_engines = cell_text.table_rows(groups)
    want_design = cell_text.design_table_rows(rp.build_design_report(docs, None))
    want_disk = disk_rows(disk_matters(sc_runs, ref))

    with browser.chromium(1400, 1000) as d:
        d.get(page.as_uri())
        d.implicitly_wait(5)
        errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, errors
        # nothing fetched: plotly.js is inline and the page loads no other resource
        assert d.execute_script("return performance.getEntriesByType('resource').length") == 0

        for sid in ("engines", "design", "disk", "compare", "charts", "meta"):
            assert d.find_element("id", sid).is_displayed()
        # every chart drawn by plotly (an SVG inside its div); the fixture has no per-poll or pidstat
        # records, so rate over time and resources are named as empty instead
        charts = d.find_elements("css selector", "div.chart")
        titles = [c.get_attribute("data-title") for c in charts]
        assert any(t.startswith("View build time") for t in titles)
        assert any(t.startswith("Storage:") for t in titles) and any(t.startswith("Disk matters?") for t in titles)
        assert any(t.startswith(f"{cmp['new']} ÷ {cmp['old']}") for t in titles)
        for c in charts:
            assert c.find_elements("css selector", "svg.main-svg"), c.get_attribute("id")
        assert any(t.startswith("Index build rate") for t in titles) and any(t.startswith("Resources") for t in titles)

        assert _cells(d, "#engines table") == want_engines
        assert _cells(d, "#design table") == want_design
        disk = d.find_element("css selector", "#disk table")
        assert [th.text for th in disk.find_elements("css selector", "thead th")] == \
            list(columns.headers(columns.DISK))
        assert _cells(d, "#disk table") == want_disk
        # compare's one table over its JSON: the axes a column each, then the console's figures
        from dragnet.report import compare as report_compare

        assert _cells(d, "#compare table") == columns.text_rows(report_compare.page_columns(cmp),
                                                                report_compare.rows(cmp))
        assert [row[-2].split(" ")[0] for row in _cells(d, "#compare table")] == \
            [f"{(c['ratio'] - 1) * 100:+.1f}%" if c["ratio"] is not None else "–" for c in cmp["cells"]]

        # sorting by a column changes the order, and sorts it (the no-value cells "–" last)
        before = [td.text for td in _column(d, disk, "rkB/s")]
        disk.find_element("xpath", ".//th[.='rkB/s']").click()
        up = [td.text for td in _column(d, disk, "rkB/s")]
        assert up != before and [float(x) for x in up] == sorted(float(x) for x in before)
        disk.find_element("xpath", ".//th[contains(.,'rkB/s')]").click()
        down = [td.text for td in _column(d, disk, "rkB/s")]
        assert [float(x) for x in down] == sorted((float(x) for x in before), reverse=True)

        # every number links to its raw samples: each raw line is one results file, its wall time equal
        # to the file's, and the link opens the copy of that very file
        engines = d.find_element("css selector", "#engines table")
        linked = engines.find_elements("css selector", "tbody td a")
        assert linked and all(a.get_attribute("href").split("#")[1].startswith("raw-engine-") for a in linked)
        by_path = {doc["_source"]: doc for doc in docs}
        raw = d.execute_script(RAW_LINES)
        runs = [line for line in raw if not line["block"].startswith("raw-compare")]
        assert {line["source"] for line in runs} == set(by_path)
        for line in runs:
            assert json.loads((out / line["href"]).read_text()) == json.loads(Path(line["source"]).read_text())
            want = by_path[line["source"]]["summary"]["wall_time_s"]
            assert (line["wall"] is None and want is None) or float(line["wall"]) == want
        # a design row's block holds exactly that engine's design-doc builds
        design = [line for line in runs if line["block"] == "raw-design-1"]
        assert sorted(Path(line["source"]).name for line in design) == [
            "002-disk-r0-javascript_quickjs.json", "005-disk-r1-javascript_quickjs.json"]
        linked[0].click()
        assert d.execute_script("return location.hash") == "#raw-engine-0"

        d.execute_script("window.scrollTo(0, 0)")
        height = d.execute_script("return document.body.scrollHeight")
        d.set_window_size(1400, min(height + 120, 12000))
        shot = tmp_path / "html-report.png"
        assert d.save_screenshot(str(shot))
    art = os.environ.get("DRAGNET_TEST_ARTIFACTS")
    if art:
        Path(art).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, Path(art) / "html-report.png")


def test_a_forecast_becomes_a_table_and_a_chart_per_quantity():
    from dragnet.report.html import forecast_sections

    doc = json.loads((Path(__file__).parent.parent / "docs/studies/forecast/backtest-40k/forecast.json").read_text())
    [sec] = forecast_sections(doc)
    per_lang = doc["forecasts"][""]
    expected = sum(len(f["quantities"]) for f in per_lang.values())
    assert len(sec.rows) == expected
    row = next(r for r in sec.rows if r[0] == "javascript" and r[1] == "build_time")
    p = per_lang["javascript"]["quantities"]["build_time"]["prediction"]
    assert row[2] == "linear"      # a forecast.json from before the models: its fits have no model
    assert row[3]["sort"] == p["value"] and row[4]["sort"] == p["low"]
    assert {c.title.split(" (")[0] for c in sec.charts} <= set(per_lang["javascript"]["quantities"])
    assert any(t.get("error_y") for c in sec.charts for t in c.data)   # the interval at the target


def test_report_by_becomes_a_section_with_each_pair_verdict():
    from dragnet.report import by_axis as report_by
    from dragnet.report.html import by_axis_sections

    docs = load.load_results([FIXTURE])
    cmp = report_by.compare(docs, ["scenario"])
    [sec] = by_axis_sections(cmp, ["scenario"])
    assert len(sec.rows) == sum(len(g["values"]) for g in cmp)
    verdicts = [r[4] for r in sec.rows if r[4] != "–"]
    assert len(verdicts) == sum(len(g["pairs"]) for g in cmp)
    assert all(v.rsplit(": ", 1)[1].split(",")[0] in ("separated", "tied", "unresolved") for v in verdicts)
