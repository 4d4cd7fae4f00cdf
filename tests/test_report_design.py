"""`dragnet report` over design-doc benchmarks (`bench --ddoc`, `addview --update`, `--per-view`).

No real results of a design-doc bench are stored under tests/, so the results here are made by
dragnet.results.addview_results.build_results from raw /_active_tasks polls, as addview makes them, then given the
fields bench adds ("bench", "comparison"). Expected figures are computed in the tests from the numbers put in.
"""

from __future__ import annotations

import csv
import io
import json
import math

import pytest
from click.testing import CliRunner

from dragnet.report import tables as report
from dragnet.report.render import cells as cell_text
from dragnet.cli import main
from dragnet.results.addview_results import build_results
from dragnet.results import load as load

DDOC = "_design/app"
VIEWS = ["by_year", "income_by_person", "name_words"]
DOCS = 1000


def polls(ident: str, start: float, span: int) -> list[dict]:
    """Two shards indexed over `span` seconds, polled at start and end."""
    def task(shard: str, done: int, updated: float) -> dict:
        return {"type": "indexer", "design_document": ident, "database": f"shards/{shard}/decl.1",
                "changes_done": done, "total_changes": DOCS // 2, "started_on": int(start),
                "updated_on": int(updated), "node": "couchdb@127.0.0.1", "pid": f"<0.{shard[:2]}.0>"}
    return [{"t": start + 1, "tasks": [task("00000000-7fffffff", DOCS // 4, start + 1),
                                       task("80000000-ffffffff", DOCS // 4, start + 1)]},
            {"t": start + span, "tasks": [task("00000000-7fffffff", DOCS // 2, start + span),
                                          task("80000000-ffffffff", DOCS // 2, start + span)]}]


def pidstat(family: str | None, cpu: float, rss_mb: float) -> dict:
    out = {"beam": {"cpu_pct": {"avg": 90.0, "peak": 99.0}, "rss_kb": {"avg": 300_000, "peak": 400 * 1024},
                    "kb_wr_s": {"avg": 10.0, "peak": 20.0}, "intervals": 10}}
    if family:
        out[family] = {"cpu_pct": {"avg": cpu, "peak": cpu}, "rss_kb": {"avg": 1, "peak": rss_mb * 1024},
                       "kb_wr_s": {"avg": 0.0, "peak": 0.0}, "intervals": 10}
    return out


def result(language: str, wall: float, *, repeat: int, start: float, bench: str | None = "b1",
           views: list[str] = VIEWS, storage: str = "disk", comparison: dict | None = None,
           update: dict | None = None, family: str | None = None, cpu: float = 20.0, rss: float = 50.0,
           ok: bool = True) -> dict:
    ident = f"_design/dragnet_bench_{language}_{repeat}_{int(start)}"
    res = build_results(
        started_at=f"2026-11-23T09:{int(start) // 60 % 60:02d}:{int(start) % 60:02d}Z", command=["dragnet", "bench"],
        couchdb=None, machine={}, storage=storage, db={"name": "decl", "doc_count": DOCS},
        view={"path": "tests/ddocs/app", "language": language.split("_")[0] if language != "javascript_quickjs"
              else language, "ddoc": ident, "view": views[0],
              "design": {"id": DDOC, "source": "tests/ddocs/app", "views": views}},
        polls=polls(ident, 1_800_000_000 + start, int(wall)), wall_time_s=wall, docs=DOCS, rows=None, ok=ok,
        error=None if ok else "boom", pidstat_summary=pidstat(family, cpu, rss))
    if bench:
        res["bench"] = {"id": bench, "language": language, "repeat": repeat, "storage_label": storage}
    # the kernel's accounting (dragnet.measure.cpu.usage) the CPU % columns come from: beam at 90% of a core
    res["cpu"] = {"interval_s": wall, "cores": 2, "cpu_s": (0.9 + cpu / 100) * wall, "wait_s": 0.0,
                  "by_process": {"beam.smp": 0.9 * wall}, "query_servers": {"cpu_s": cpu / 100 * wall}}
    if comparison is not None:
        res["comparison"] = comparison
    if update is not None:
        res["update"] = update
        res["summary"]["update_lag_s"] = update["lag_s"]
    return res


def cmp(diffs: int | None, rows: int = 2400, note: str | None = None) -> dict:
    c = {"reference": "javascript", "differences": diffs, "rows_compared": rows, "queries": {}}
    if note:
        c["note"] = note
    return c


JS_WALL = [10.0, 12.0, 11.0, 13.0]       # reference: javascript (couchjs)
QJS_WALL = [20.0, 21.0, 22.0, 24.0]      # quickjs: clearly slower in every repeat
LAGS = [0.5, 0.7, 0.6, 0.9]


@pytest.fixture
def results() -> list[dict]:
    out = []
    for i in range(4):
        t = 100.0 * i
        out.append(result("javascript", JS_WALL[i], repeat=i, start=t, family="couchjs", cpu=30.0 + i, rss=800,
                          comparison=None if i == 0 else cmp(0),
                          update={"lag_s": LAGS[i], "incremental_docs_per_sec": 100.0 / LAGS[i]}))
        out.append(result("javascript_quickjs", QJS_WALL[i], repeat=i, start=t + 30, family="quickjs", cpu=25.0,
                          rss=40, comparison=cmp(3 if i == 1 else 0)))
    # python ran once, on the data of repeat 0
    out.append(result("python", 11.5, repeat=0, start=60, family="couchpy", comparison=cmp(0)))
    # one view alone (addview --per-view): no bench, its own row
    out.append(result("javascript", 4.0, repeat=0, start=500, bench=None, views=["by_year"], family="couchjs"))
    return out


def by_key(groups, view=load.ALL_VIEWS, storage="disk"):
    return {g.label: g for g in groups if g.view == view and g.storage == storage}


def test_groups_by_design_doc_view_engine_storage(results):
    groups = report.build_design_report(results)
    assert [(g.ddoc, g.view, g.label, g.storage) for g in groups] == [
        (DDOC, load.ALL_VIEWS, "javascript", "disk"),           # the reference first, then by name
        (DDOC, load.ALL_VIEWS, "javascript_quickjs", "disk"),
        (DDOC, load.ALL_VIEWS, "python", "disk"),
        (DDOC, "by_year", "javascript", "disk")]
    g = by_key(groups)
    assert g["javascript"].reference == "javascript" and g["javascript"].is_reference
    assert (g["javascript"].n, g["javascript_quickjs"].n, g["python"].n) == (4, 4, 1)
    # wall medians and docs/s from what was put in
    assert g["javascript"].wall_s.median == pytest.approx(11.5)
    assert g["javascript"].docs_per_s.median == pytest.approx((DOCS / 11 + DOCS / 12) / 2)
    # total time is the indexer tasks' span from the polls (started_on .. last updated_on)
    assert g["javascript_quickjs"].total_s.median == pytest.approx(21.5)
    assert by_key(groups, "by_year")["javascript"].wall_s.median == 4.0


def test_ratio_to_reference_pairs_each_repeat(results):
    g = by_key(report.build_design_report(results))
    per_repeat = sorted(j / q for j, q in zip(JS_WALL, QJS_WALL))   # docs/s ratio = inverse wall ratio
    assert g["javascript_quickjs"].ratio.median == pytest.approx((per_repeat[1] + per_repeat[2]) / 2)
    assert g["javascript_quickjs"].ratio.min == pytest.approx(per_repeat[0])
    assert g["python"].ratio.median == pytest.approx(JS_WALL[0] / 11.5)      # paired with repeat 0
    assert g["javascript"].ratio.median == pytest.approx(1.0)
    # another engine can be the yardstick
    g2 = by_key(report.build_design_report(results, reference="javascript_quickjs"))
    assert g2["javascript"].ratio.median == pytest.approx(1 / ((per_repeat[1] + per_repeat[2]) / 2), rel=0.02)
    assert g2["javascript_quickjs"].is_reference and not g2["javascript"].is_reference


def test_rows_compared_differences_lag_and_resources(results):
    g = by_key(report.build_design_report(results))
    q = g["javascript_quickjs"]
    assert (q.rows_compared, q.differences, q.compared) == (2400, 3, 4)
    js = g["javascript"]
    # the reference's first run is what the others are compared with; its repeats are compared with it
    assert (js.differences, js.compared) == (0, 3)
    assert js.update_lag_s.median == pytest.approx((0.6 + 0.7) / 2)
    assert js.incremental_dps.max == pytest.approx(200.0)
    assert q.update_lag_s is None
    assert (js.qs_family, q.qs_family, g["python"].qs_family) == ("couchjs", "quickjs", "couchpy")
    assert js.qs_cpu == pytest.approx(31.5) and js.qs_rss_mb == pytest.approx(800)
    assert js.beam_cpu == pytest.approx(90.0) and js.beam_rss_mb == pytest.approx(400)
    notes = cell_text.design_notes(report.build_design_report(results))
    assert notes == [f"differences: {DDOC} (all) javascript_quickjs (disk): 3 rows differ from javascript's "
                     f"over 4 compared runs"]


def test_order_only_where_the_runs_support_it(results):
    rankings = report.design_ranking(report.build_design_report(results))
    (full,) = [r for (d, v, st), r in rankings if v == load.ALL_VIEWS]
    # no CPU recorded: wall seconds per 1,000 docs; javascript (geomean 11.45 s), python (11.5 s), quickjs
    assert full.metric == "wall" and full.names == ["javascript", "python", "javascript_quickjs"]
    # a single python run orders nothing: both its pairs stay unresolved, for too few runs
    assert [(p.state, p.why) for p in full.pairs] == [("unresolved", "too few runs")] * 2
    assert full.order == "javascript ? python ? javascript_quickjs" and not full.supported
    # without python, 4 v 4 builds of the same bench rounds: paired, and quickjs is slower in every one
    no_py = [r for r in results if (r.get("bench") or {}).get("language") != "python"]
    ((_, only),) = [(w, r) for w, r in report.design_ranking(report.build_design_report(no_py))
                    if w[1] == load.ALL_VIEWS]
    (pair,) = only.pairs
    assert (pair.faster, pair.slower, pair.state, pair.interval.paired, pair.interval.n) == \
        ("javascript", "javascript_quickjs", "separated", True, 4)
    logs = [math.log(q / j) for j, q in zip(JS_WALL, QJS_WALL)]
    assert pair.ratio == pytest.approx(math.exp(sum(logs) / 4))
    lines = cell_text.design_ranking_lines(report.build_design_report(results))
    assert any("javascript ? python ? javascript_quickjs" in x for x in lines)
    assert any("not supported: unresolved javascript vs python (too few runs)" in x for x in lines)


def test_view_file_report_leaves_design_results_alone(results):
    assert report.build_report(results) == []
    view_file = dict(results[0])
    view_file["view"] = {k: v for k, v in view_file["view"].items() if k != "design"}
    assert [g.label for g in report.build_report([view_file])] == ["javascript"]
    assert report.build_design_report([view_file]) == []


def test_failed_run_of_a_design_bench_counts_in_its_row(results, tmp_path):
    manifest = {"id": "b1", "design": {"id": DDOC, "source": "x", "views": VIEWS, "reference": "javascript"},
                "runs": [{"index": 9, "language": "python", "repeat": 1, "storage": "disk", "status": "error",
                          "error": "compilation failed", "started_at": "2026-11-23T09:00:00Z"}]}
    (tmp_path / "bench.json").write_text(json.dumps(manifest))
    for i, r in enumerate(results):
        (tmp_path / f"r{i}.json").write_text(json.dumps(r))
    g = by_key(report.build_design_report(load.load_results([tmp_path])))
    assert (g["python"].n, g["python"].failed, g["python"].errors) == (1, 1, ["compilation failed"])
    assert "1 (1 failed)" in cell_text.design_table_rows([g["python"]])[0]


def test_differences_cell(results):
    rows = {(r[1], r[2]): r[DESIGN_COL("differences")]
            for r in cell_text.design_table_rows(report.build_design_report(results))}
    assert rows[("(all)", "javascript *")] == "0 (reference repeats)"
    assert rows[("(all)", "javascript_quickjs")] == "3"
    # a view built alone is never compared, so its reference row is not "the reference" of anything
    assert rows[("by_year", "javascript *")] == "not compared"
    first_only = [r for r in results if (r.get("bench") or {}).get("repeat") == 0]
    rows = {(r[1], r[2]): r[DESIGN_COL("differences")]
            for r in cell_text.design_table_rows(report.build_design_report(first_only))}
    assert rows[("(all)", "javascript *")] == "(reference)"


def test_cli_formats(results, tmp_path):
    d = tmp_path / "bench"
    d.mkdir()
    for i, r in enumerate(results):
        (d / f"r{i}.json").write_text(json.dumps(r))
    run = CliRunner().invoke
    md = run(main, ["report", str(d), "--format", "markdown"])
    assert md.exit_code == 0, md.output
    header = "| " + " | ".join(cell_text.DESIGN_COLUMNS) + " |"
    assert header in md.output and "| language |" not in md.output   # no empty view-file table
    row = next(x for x in md.output.splitlines() if x.startswith(f"| {DDOC} | (all) | javascript_quickjs |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[DESIGN_COL("differences")] == "3" and cells[DESIGN_COL("rows compared")] == "2,400"

    out = run(main, ["report", str(d), "--format", "csv"])
    assert out.exit_code == 0, out.output
    recs = {(r["view"], r["engine"]): r for r in csv.DictReader(io.StringIO(out.output))}
    assert float(recs[("(all)", "javascript")]["update_lag_s_median"]) == pytest.approx(0.65)
    assert recs[("(all)", "javascript")]["is_reference"] == "true"
    assert recs[("(all)", "python")]["runs"] == "1"

    js = run(main, ["report", str(d), "--format", "json"])
    doc = json.loads(js.output)
    assert doc["groups"] == [] and len(doc["design"]["groups"]) == 4
    assert {p["faster"] for p in doc["design"]["ranking"]["pairs"]} <= {"javascript", "python"}

    table = run(main, ["report", str(d)])
    assert table.exit_code == 0 and "design documents" in table.output and "? javascript_quickjs" in table.output

    # view-file and design-doc results in one CSV would need two headers
    view_file = dict(results[0], view={"language": "javascript", "path": "views/income/map.js", "ddoc": "_design/x"})
    (d / "viewfile.json").write_text(json.dumps(view_file))
    mixed = run(main, ["report", str(d), "--format", "csv"])
    assert mixed.exit_code == 2 and "separately" in mixed.output
    both = run(main, ["report", str(d), "--format", "markdown"])
    assert "| language |" in both.output and header in both.output


def DESIGN_COL(name: str) -> int:
    return cell_text.DESIGN_COLUMNS.index(name)
