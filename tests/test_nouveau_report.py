"""`dragnet report` and `dragnet compare` on Nouveau index builds: the committed evidence in docs/studies/nouveau/,
rendered and compared without a server; figures recomputed from the raw files."""

from __future__ import annotations

import csv
import io
import json
import shutil
import statistics
from pathlib import Path

import pytest
from click.testing import CliRunner

from dragnet.cli import main
from dragnet.errors import UsageError
from dragnet.report import compare as c
from dragnet.report import model
from dragnet.report.render import csv as render_csv
from dragnet.report.render import json as render_json
from dragnet.report.render import markdown as render_md
from dragnet.results.load import load_results

REPO = Path(__file__).resolve().parents[1]
VERSIONS = REPO / "docs" / "studies" / "nouveau" / "versions-40k"
ENGINES_350 = REPO / "docs" / "studies" / "nouveau" / "engines-3.5.0"
ENGINES_352 = REPO / "docs" / "studies" / "nouveau" / "engines-3.5.2"
VIEWS = REPO / "docs" / "studies" / "engine-share" / "decl10k"


def _raw(folder: Path) -> list[dict]:
    return [json.loads(f.read_text()) for f in sorted(folder.glob("*.json"))
            if json.loads(f.read_text()).get("schema") == "dragnet.nouveau/1"]


def test_report_of_a_nouveau_folder_holds_medians_of_its_raw_builds():
    rep = model.build([str(VERSIONS)])
    assert rep.docs == [] and rep.groups == [] and rep.nouveau
    raw = _raw(VERSIONS)
    assert rep.nouveau["common"]["index"] == "declarations" and "couchdb" not in rep.nouveau["common"]
    rows = {r["variant"]: r for r in rep.nouveau["rows"]}
    assert set(rows) == {"couchdb=3.5.0", "couchdb=3.5.2"}
    for version in ("3.5.0", "3.5.2"):
        mine = [r for r in raw if r["couchdb"]["version"] == version]
        row = rows[f"couchdb={version}"]
        assert row["builds"] == len(mine) == 5
        assert row["wall_s"] == statistics.median(r["summary"]["wall_time_s"] for r in mine)
        assert row["cpu_s_per_1000_docs"] == statistics.median(r["summary"]["cpu_s_per_1000_docs"] for r in mine)
        assert row["jvm_cpu_of_wall"] == statistics.median(r["split"]["of_wall"]["jvm_cpu"] for r in mine)
        assert row["num_docs"] == [40000]
    assert all(not ch["differences"] for ch in rep.nouveau["checks"]) and len(rep.nouveau["checks"]) == 9
    # the rows ordered as bench --nouveau orders variants: the same paired interval compare gives
    [cell] = c.compare_along(load_results([VERSIONS], nouveau=True), "couchdb").cells
    for metric, ratio, low, high in (("cpu", cell.ratio, cell.ci_low, cell.ci_high), ("wall", *cell.wall)):
        v = rep.nouveau["verdicts"][metric]
        assert v["order"] == ["couchdb=3.5.2", "couchdb=3.5.0"]
        [pair] = v["pairs"]
        assert pair["state"] == "separated" and pair["interval"]["n"] == 5
        assert (pair["ratio"], pair["interval"]["low"], pair["interval"]["high"]) == pytest.approx((ratio, low, high))


def test_hits_are_checked_within_one_database_only():
    rep = model.build([str(ENGINES_350), str(ENGINES_352)])   # 40,000 and 5,000 declarations
    assert len(rep.nouveau["references"]) == 2 and len(rep.nouveau["checks"]) == 18
    assert all(not ch["differences"] for ch in rep.nouveau["checks"])
    assert {ch["reference"].split()[1] for ch in rep.nouveau["checks"]} == {"size=40000", "size=5000"}


def test_report_renders_nouveau_in_markdown_json_and_csv():
    rep = model.build([str(ENGINES_350)])
    md = render_md.render(rep)
    assert "Nouveau index builds (10)" in md and "language=javascript_quickjs" in md
    assert "same hits and counts" in md and "0 results" not in md   # no empty view table
    assert md.rstrip().endswith("```") and md.count("```") == 2     # the whole section in one code block
    js = json.loads(json.dumps(render_json.render(rep)))
    assert {r["variant"] for r in js["nouveau"]["rows"]} == {"language=javascript", "language=javascript_quickjs"}
    # one table for views and search indexes: the design documents' columns, the index a row of its own
    rows = list(csv.DictReader(io.StringIO(render_csv.render(rep))))
    assert len(rows) == 2 and all(float(r["wall_time_s_median"]) > 0 and r["view"] == "search:declarations"
                                  for r in rows)
    raw = _raw(ENGINES_350)
    for r in rows:
        mine = [x["summary"] for x in raw if x["language"] == r["engine"]]
        assert float(r["docs_per_sec_wall_median"]) == statistics.median(s["docs_per_s"] for s in mine)
        assert int(r["runs"]) == len(mine) == 5
    assert "search:declarations" in md and "| design doc |" in md


def test_a_build_answering_differently_is_named(tmp_path):
    shutil.copytree(ENGINES_350, tmp_path / "e")
    f = sorted((tmp_path / "e").glob("nouveau-r03-javascript_quickjs.json"))[0]
    doc = json.loads(f.read_text())
    exact = next(a for a in doc["answers"] if a.get("relation") == "EQUAL_TO")
    exact["total_hits"] += 1
    f.write_text(json.dumps(doc))
    rep = model.build([str(tmp_path / "e")])
    [bad] = [ch for ch in rep.nouveau["checks"] if ch["differences"]]
    assert bad["source"] == str(f)
    out = CliRunner().invoke(main, ["report", str(tmp_path / "e")])
    assert out.exit_code == 0 and "differs from" in out.output and exact["q"] in out.output


def test_views_and_nouveau_side_by_side_both_show(tmp_path):
    views = sorted(VIEWS.glob("*quickjs.json"))[:2]
    for f in [*views, *sorted(VERSIONS.glob("r01-*"))]:
        shutil.copy(f, tmp_path)
    rep = model.build([str(tmp_path)])
    assert len(rep.docs) == 2 and rep.groups and sum(r["builds"] for r in rep.nouveau["rows"]) == 2
    out = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert out.exit_code == 0 and "2 results" in out.output and "Nouveau index builds (2)" in out.output
    with pytest.raises(UsageError, match="different columns"):
        render_csv.render(rep)


def test_a_nouveau_file_is_refused_where_only_view_results_are_read():
    f = sorted(VERSIONS.glob("*.json"))[0]
    with pytest.raises(UsageError, match="not a dragnet results file"):
        load_results([f])
    assert load_results([f], nouveau=True)[0]["schema"] == "dragnet.nouveau/1"


def test_compare_two_nouveau_folders_per_engine():
    cmp = c.compare(load_results([ENGINES_350], nouveau=True), load_results([ENGINES_352], nouveau=True))
    # the two benches ran on databases of different sizes: said, and paired like the version
    assert cmp.varied == {"size": ["40000", "5000"], "couchdb": ["3.5.0", "3.5.2"]}
    assert [cell.axes["language"] for cell in cmp.cells] == ["javascript", "javascript_quickjs"]
    for cell in cmp.cells:
        assert cell.axes["index"] == "declarations" and cell.metric == "cpu" and not cell.paired   # two benches
        mine = [r for r in _raw(ENGINES_350) if r["language"] == cell.axes["language"]]
        assert sorted(cell.old.cpu) == sorted(r["summary"]["cpu_s_per_1000_docs"] for r in mine)
        assert cell.ci_low <= cell.ratio <= cell.ci_high


def test_compare_along_pairs_the_rounds_of_one_nouveau_bench():
    cmp = c.compare_along(load_results([VERSIONS], nouveau=True), "couchdb")
    [cell] = cmp.cells
    assert cell.paired and len(cell.old.keys) == 5 and set(cell.old.keys) == set(cell.new.keys)
    raw = {(r["couchdb"]["version"], r["round"]): r["summary"]["cpu_s_per_1000_docs"] for r in _raw(VERSIONS)}
    old, new = cmp.varied["couchdb"]
    ratios = [raw[(new, k)] / raw[(old, k)] for k in range(1, 6)]
    assert cell.ratio == pytest.approx(statistics.geometric_mean(ratios), rel=1e-9)


def test_compare_cli_gate_on_nouveau_builds(tmp_path):
    # one folder: along the version, the one built first (3.5.2) is OLD, so 3.5.0 is the slower NEW
    slower = CliRunner().invoke(main, ["compare", str(VERSIONS), "--fail-if-slower", "5%"])
    assert slower.exit_code == 1, slower.output
    assert "FAIL" in slower.output and "couchdb=3.5.2 → couchdb=3.5.0" in slower.output
    for version in ("3.5.0", "3.5.2"):
        (tmp_path / version).mkdir()
        for f in VERSIONS.glob(f"*_{version}_*.json"):
            shutil.copy(f, tmp_path / version)
    faster = CliRunner().invoke(main, ["compare", str(tmp_path / "3.5.0"), str(tmp_path / "3.5.2"),
                                       "--fail-if-slower", "5%", "--json"])
    assert faster.exit_code == 0, faster.output
    out = json.loads(faster.output)
    assert out["verdict"].startswith("pass") and out["cells"][0]["old"]["n"] == 5


def test_views_and_nouveau_have_no_cell_in_common():
    with pytest.raises(UsageError, match="no cell in common"):
        c.compare(load_results([VIEWS]), load_results([VERSIONS], nouveau=True))


def test_forecast_of_a_nouveau_index_refuses_bad_input_in_one_line_before_anything(tmp_path):
    r = CliRunner().invoke(main, ["forecast", "--db", "x", "--nouveau", str(REPO / "docs" / "studies" / "nouveau" /
                                  "declarations.js"), "--target-docs", "100k", "--sizes", "100,200,100k",
                                  "--data", str(tmp_path / "none.jsonl"), "--results", str(tmp_path / "f")])
    assert r.exit_code == 2 and "--data" in r.output and "no such file" in r.output
    assert len([x for x in r.output.splitlines() if x.strip()]) == 1 and not (tmp_path / "f").exists()


def test_report_by_an_axis_of_nouveau_builds_alone():
    rep = model.build([str(VERSIONS)], by="couchdb")
    [group] = rep.by_groups
    assert group["group"] == "index=declarations language=javascript size=40000 heap=1g"
    assert [v["value"] for v in group["values"]] == ["couchdb=3.5.2", "couchdb=3.5.0"]
    raw = {v: sorted(r["summary"]["docs_per_s"] for r in _raw(VERSIONS) if r["couchdb"]["version"] == v)
           for v in ("3.5.0", "3.5.2")}
    assert group["values"][1]["median_docs_per_s"] == statistics.median(raw["3.5.0"])
    assert group["pairs"][0]["state"] == "separated"      # paired by round, as compare --along does
    out = CliRunner().invoke(main, ["report", str(ENGINES_352), "--by", "language"])
    assert out.exit_code == 0 and "by language" in out.output and "language=javascript_quickjs:" in out.output
    bad = CliRunner().invoke(main, ["report", str(ENGINES_352), "--by", "cpus"])
    assert bad.exit_code == 2 and "--by cpus: no result varies or records that axis" in bad.output


def test_report_against_a_baseline_of_nouveau_builds(tmp_path):
    rep = model.build([str(ENGINES_352)], baseline=[str(ENGINES_352)])
    assert [cell.label for cell in rep.comparison.cells] == ["no change", "no change"]
    assert all(cell.paired and cell.ratio == 1.0 for cell in rep.comparison.cells)
    out = CliRunner().invoke(main, ["report", str(ENGINES_352), "--baseline", str(ENGINES_352), "--format", "json"])
    assert out.exit_code == 0 and len(json.loads(out.output)["comparison"]["cells"]) == 2
    # views against Nouveau builds: nothing to compare, one line
    views = CliRunner().invoke(main, ["report", str(ENGINES_352), "--baseline", str(VIEWS)])
    assert views.exit_code == 2 and "no cell in common" in views.output


def test_store_saves_a_nouveau_folder_and_history_and_baselines_read_it(tmp_path):
    from dragnet.results import store

    entry = store.save(tmp_path / "store", ENGINES_352, "nv")
    assert entry["couchdb"] == "3.5.2" and entry["settings"]["repeat"] == 5 and entry["settings"]["shards"] == [2]
    cells = {c["axes"]["language"]: c for c in entry["cells"]}
    raw = [r for r in _raw(ENGINES_352) if r["language"] == "javascript"]
    assert sorted(cells["javascript"]["docs_s"]) == sorted(r["summary"]["docs_per_s"] for r in raw)
    assert sorted(cells["javascript"]["index_bytes"]) == sorted(r["summary"]["disk_size"] for r in raw)
    hist = CliRunner().invoke(main, ["history", "--store", str(tmp_path / "store")])
    assert hist.exit_code == 0 and "language=javascript_quickjs" in hist.output
    rep = CliRunner().invoke(main, ["report", str(ENGINES_352), "--baseline", "nv", "--format", "json"],
                             env={"DRAGNET_STORE": str(tmp_path / "store")})
    assert rep.exit_code == 0, rep.output
    assert len(json.loads(rep.output)["comparison"]["cells"]) == 2


def test_charts_and_a_page_of_nouveau_builds_alone(tmp_path):
    r = CliRunner().invoke(main, ["report", str(ENGINES_352), "--html", str(tmp_path / "h"), "--plot",
                                  str(tmp_path / "p")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "p" / "nouveau_docs_s.png").stat().st_size > 1000
    page = (tmp_path / "h" / "index.html").read_text()
    assert 'id="nouveau"' in page and "Nouveau index builds (10)" in page and "language=javascript_quickjs" in page
    assert "same hits and counts" in page


def test_the_nouveau_chart_draws_each_rows_median_and_range_of_its_builds(tmp_path):
    from dragnet.report.search_files import html_sections, png

    rep = model.build([str(ENGINES_352)])
    chart = png(rep.nouveau, tmp_path / "n.png")
    for label, med, lo, hi in zip(chart.series["labels"], chart.series["median"], chart.series["err_low"],
                                  chart.series["err_high"]):
        dps = [r["summary"]["docs_per_s"] for r in _raw(ENGINES_352) if f"language={r['language']}" == label]
        assert med == statistics.median(dps) and med - lo == min(dps) and med + hi == pytest.approx(max(dps))
    [sec] = html_sections(rep.nouveau)
    assert [row[0] for row in sec.rows] == chart.series["labels"] and sec.charts[0].data[0]["y"] == chart.series["median"]
    assert any(n.startswith("every build answered") for n in sec.notes)   # the orders are the design table's
    assert not any(n.startswith("language=javascript ") and "…" not in n for n in sec.notes)   # no table row


def test_a_page_of_views_and_nouveau_builds_holds_both(tmp_path):
    views = sorted(VIEWS.glob("*quickjs.json"))[:2]
    for f in [*views, *sorted(VERSIONS.glob("r01-*"))]:
        shutil.copy(f, tmp_path)
    r = CliRunner().invoke(main, ["report", str(tmp_path), "--html", str(tmp_path / "h")])
    assert r.exit_code == 0, r.output
    page = (tmp_path / "h" / "index.html").read_text()
    assert 'id="nouveau"' in page and "Nouveau index builds (2)" in page and "2 results files" in page


def test_search_rows_of_the_design_table_keep_versions_apart_and_hold_their_raw_medians():
    rep = model.build([str(VERSIONS)])
    rows = [g for g in rep.design_groups if g.view == "search:declarations"]
    # one row per CouchDB version (a cell, as a view build's other axes make one), never a median of both
    assert sorted(g.storage.split()[-1] for g in rows) == ["couchdb=3.5.0", "couchdb=3.5.2"]
    raw = _raw(VERSIONS)
    for g in rows:
        mine = [r for r in raw if f"couchdb={r['couchdb']['version']}" in g.storage]
        assert g.n == len(mine) == 5
        assert g.docs_per_s.median == statistics.median(r["summary"]["docs_per_s"] for r in mine)
        assert g.wall_s.median == statistics.median(r["summary"]["wall_time_s"] for r in mine)
