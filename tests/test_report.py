"""`dragnet report` from results made by real runs (the CouchDB 3.5.0 recordings, via from_recording).

Expected numbers are computed here from the raw recordings (meta.json wall times, the raw
/_active_tasks polls), not taken from the code under test.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from pathlib import Path

import pytest
from click.testing import CliRunner

from dragnet.report import charts as charts
from dragnet.report import tables as report
from dragnet.report.render import cells as cell_text
from dragnet.report.render import csv as render_csv, json as render_json, markdown as render_md
from dragnet.cli import main
from dragnet.results import load as load

DISK = ["javascript", "javascript_repeat", "erlang_baseline", "erlang_baseline_repeat",
        "javascript_quickjs", "javascript_quickjs_es2015", "python", "erlang"]
TMPFS = ["javascript_tmpfs", "javascript_tmpfs_repeat", "erlang_baseline_tmpfs", "erlang_baseline_tmpfs_repeat"]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _recorded(folder: Path) -> dict:
    from dragnet.results.addview_results import from_recording
    return from_recording(folder)


@pytest.fixture(scope="module")
def recorded(fixtures_dir) -> dict[str, dict]:
    return {name: _recorded(fixtures_dir / name) for name in DISK + TMPFS}


@pytest.fixture(scope="module")
def results_dir(recorded, tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("results")
    for name, res in recorded.items():
        (d / f"{name}.json").write_text(json.dumps(res))
    (d / "bench.json").write_text(json.dumps({"schema": "dragnet.bench/1"}))  # a manifest is not a result
    (d / "notes.json").write_text("[1, 2]")  # neither is other JSON in a results directory
    return d


# ---- hand computations from the raw recordings

def meta(fixtures_dir: Path, name: str) -> dict:
    return json.loads((fixtures_dir / name / "meta.json").read_text())


def raw_all_tasks_avg(fixtures_dir: Path, name: str) -> float:
    """The 2017 all-tasks metric from the raw polls: per poll, sum changes_done/(updated_on-started_on) of our
    indexer tasks that have updated; averaged over polls with at least one such task."""
    ddoc = meta(fixtures_dir, name)["ddoc_id"]
    per_poll = []
    for line in (fixtures_dir / name / "active_tasks.jsonl").read_text().splitlines():
        poll = json.loads(line)
        rates = [t["changes_done"] / (t["updated_on"] - t["started_on"]) for t in poll["tasks"]
                 if t.get("type") == "indexer" and t.get("design_document") == ddoc
                 and t["updated_on"] > t["started_on"]]
        if rates:
            per_poll.append(sum(rates))
    return sum(per_poll) / len(per_poll)


def group(groups, label, storage="disk"):
    (g,) = [g for g in groups if g.label == label and g.storage == storage]
    return g


# ---- the table

def test_labels_storage_and_repeats(recorded):
    runs = report.prepare(recorded.values())
    by_src = {}
    for name, run in zip(recorded, runs):
        by_src[name] = run
    assert by_src["erlang_baseline"].label == "erlang_baseline"
    assert by_src["erlang"].label == "erlang"
    assert by_src["javascript_quickjs_es2015"].label == "javascript_quickjs_es2015"
    assert by_src["javascript_quickjs"].label == "javascript_quickjs"
    assert by_src["javascript_tmpfs"].storage == "tmpfs"
    assert by_src["javascript"].storage == "disk"
    # without a bench manifest, repeats are ranked by start time
    assert (by_src["javascript"].repeat, by_src["javascript_repeat"].repeat) == (0, 1)


def test_medians_match_raw_numbers(recorded, fixtures_dir):
    groups = report.build_report(recorded.values())
    b = group(groups, "erlang_baseline")
    walls = [meta(fixtures_dir, n)["wall_s"] for n in ("erlang_baseline", "erlang_baseline_repeat")]
    assert b.n == 2
    assert b.wall_s.median == pytest.approx((walls[0] + walls[1]) / 2, abs=0.01)
    assert b.wall_s.min == pytest.approx(min(walls), abs=0.01)
    assert b.wall_s.stdev == pytest.approx(statistics.stdev(walls), abs=0.01)
    cps = [raw_all_tasks_avg(fixtures_dir, n) for n in ("erlang_baseline", "erlang_baseline_repeat")]
    assert b.all_cps.median == pytest.approx(sum(cps) / 2, rel=1e-6)
    js = group(groups, "javascript")
    cps = [raw_all_tasks_avg(fixtures_dir, n) for n in ("javascript", "javascript_repeat")]
    assert js.all_cps.median == pytest.approx(sum(cps) / 2, rel=1e-6)
    # single-run rows: the median is the run itself
    py = group(groups, "python")
    assert py.n == 1 and py.wall_s.median == pytest.approx(meta(fixtures_dir, "python")["wall_s"], abs=0.01)
    assert py.all_cps.median == pytest.approx(raw_all_tasks_avg(fixtures_dir, "python"), rel=1e-6)


def test_ratio_to_baseline_of_the_same_repeat(recorded, fixtures_dir):
    groups = report.build_report(recorded.values())
    # every run here indexed the same database, so docs/s ratios are wall-time ratios;
    # javascript pairs with erlang_baseline, javascript_repeat with erlang_baseline_repeat
    w = {n: meta(fixtures_dir, n)["wall_s"] for n in DISK + TMPFS}
    per_repeat = [w["erlang_baseline"] / w["javascript"], w["erlang_baseline_repeat"] / w["javascript_repeat"]]
    js = group(groups, "javascript")
    assert js.ratio.n == 2
    assert js.ratio.median == pytest.approx(sum(per_repeat) / 2, rel=2e-3)
    assert js.ratio.min == pytest.approx(min(per_repeat), rel=2e-3)
    tm = group(groups, "javascript", "tmpfs")
    per_repeat = [w["erlang_baseline_tmpfs"] / w["javascript_tmpfs"],
                  w["erlang_baseline_tmpfs_repeat"] / w["javascript_tmpfs_repeat"]]
    assert tm.ratio.median == pytest.approx(sum(per_repeat) / 2, rel=2e-3)
    assert group(groups, "erlang_baseline").ratio.median == pytest.approx(1.0)
    # python ran once, before the first baseline: paired with the baseline nearest in time
    assert group(groups, "python").ratio.median == pytest.approx(w["erlang_baseline"] / w["python"], rel=2e-3)


def test_resources_per_family(recorded):
    groups = report.build_report(recorded.values())
    js, py, erl = group(groups, "javascript"), group(groups, "python"), group(groups, "erlang_baseline")
    assert js.qs_family and py.qs_family and js.qs_family != py.qs_family
    assert erl.qs_family is None  # Erlang views run inside beam
    # SpiderMonkey's couchjs processes are far bigger than couchpy's (~100 MB vs ~30 MB each, 9 of them)
    assert js.qs_rss_mb > py.qs_rss_mb > 0
    assert js.beam_rss_mb > 50
    # CPU % comes from the kernel's accounting, which these recordings predate: not pidstat's figure
    assert js.beam_cpu is None and js.qs_cpu is None


def test_failed_runs_are_counted_not_averaged(recorded):
    bad = json.loads(json.dumps(recorded["javascript_repeat"]))
    bad["summary"].update(ok=False, error="boom: query server crashed")
    groups = report.build_report([recorded["javascript"], bad, recorded["erlang_baseline"]])
    js = group(groups, "javascript")
    assert (js.n, js.failed, js.errors) == (1, 1, ["boom: query server crashed"])
    assert js.wall_s.median == recorded["javascript"]["summary"]["wall_time_s"]


# ---- formats

def test_markdown_csv_json(recorded):
    groups = report.build_report(recorded.values())
    md = render_md.to_markdown(groups)
    lines = md.strip().splitlines()
    assert lines[0].startswith("| language | storage |")
    assert len(lines) == 2 + len(groups)
    assert all(line.count("|") == len(cell_text.COLUMNS) + 1 for line in lines)
    rows = list(csv.DictReader(io.StringIO(render_csv.to_csv(groups))))
    assert len(rows) == len(groups)
    js = next(r for r in rows if r["language"] == "javascript" and r["storage"] == "disk")
    assert float(js["wall_time_s_median"]) == group(groups, "javascript").wall_s.median
    assert float(js["ratio_to_baseline_median"]) == group(groups, "javascript").ratio.median
    doc = json.loads(json.dumps(render_json.to_json(groups)))
    assert {(g["label"], g["storage"]) for g in doc["groups"]} == {g.key for g in groups}


def test_cli_formats_on_a_results_dir(results_dir):
    r = CliRunner().invoke(main, ["report", str(results_dir), "--format", "csv"])
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(io.StringIO(r.output)))
    assert {(x["language"], x["storage"]) for x in rows} >= {("javascript", "disk"), ("javascript", "tmpfs"),
                                                              ("erlang_baseline", "tmpfs"), ("python", "disk")}
    r = CliRunner().invoke(main, ["report", str(results_dir), "--format", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["schema"] == "dragnet.report/1"
    r = CliRunner().invoke(main, ["report", str(results_dir / "javascript.json"), "--format", "markdown"])
    assert r.exit_code == 0 and "| javascript | disk | 1 |" in r.output
    r = CliRunner().invoke(main, ["report", str(results_dir), "--format", "table"])
    assert r.exit_code == 0 and "erlang_baseline" in r.output


def test_cli_bad_input(tmp_path, results_dir):
    r = CliRunner().invoke(main, ["report", str(tmp_path / "nope.json")])
    assert r.exit_code != 0 and "nope.json: no such file or directory" in r.output
    (tmp_path / "x.json").write_text("{not json")
    r = CliRunner().invoke(main, ["report", str(tmp_path / "x.json")])
    assert r.exit_code != 0 and "x.json: not valid JSON" in r.output
    r = CliRunner().invoke(main, ["report", str(results_dir / "notes.json")])
    assert r.exit_code != 0 and "not a dragnet results file" in r.output


# ---- --baseline (the comparison is dragnet.compare's; tested in depth in test_compare.py)

def test_cli_baseline(results_dir, recorded, tmp_path):
    """The tmpfs builds relabelled as disk are the baseline; the javascript cell's ratio is the geometric means'
    ratio of the raw wall times (no CPU recorded in these results, builds of different benches: unpaired)."""
    old = tmp_path / "old"
    old.mkdir()
    for n in TMPFS:
        res = json.loads((results_dir / f"{n}.json").read_text())
        res["storage"] = "disk"
        (old / f"{n}.json").write_text(json.dumps(res))
    r = CliRunner().invoke(main, ["report", str(results_dir), "--baseline", str(old), "--format", "json"])
    assert r.exit_code == 0, r.output
    cmp = json.loads(r.output)["comparison"]
    js = next(c for c in cmp["cells"] if c["axes"]["language"] == "javascript" and c["axes"]["storage"] == "disk")
    walls = lambda names: [recorded[n]["summary"]["wall_time_s"] for n in names]  # noqa: E731
    gm = lambda v: math.exp(statistics.fmean(math.log(x) for x in v))  # noqa: E731
    want = gm(walls(["javascript", "javascript_repeat"])) / gm(walls(["javascript_tmpfs", "javascript_tmpfs_repeat"]))
    assert js["ratio"] == pytest.approx(want) and js["metric"] == "wall"
    assert js["label"] == "undecided"          # two builds a side: a 99% t interval is far too wide
    assert {"language": "javascript", "storage": "tmpfs"}.items() <= next(
        a for a in cmp["only_new"] if a["language"] == "javascript").items()

    r = CliRunner().invoke(main, ["report", str(results_dir), "--baseline", str(old), "--format", "markdown"])
    assert r.exit_code == 0, r.output
    assert "change [99%] (metric)" in r.output and "verdict:" in r.output

    r = CliRunner().invoke(main, ["report", str(results_dir), "--baseline", str(old), "--format", "csv"])
    assert r.exit_code == 2 and "--baseline has no CSV form" in r.output


def test_markdown_escapes_pipes(recorded):
    groups = report.build_report(list(recorded.values()))
    groups[0].label = "a|b"
    md = render_md.to_markdown(groups)
    header_cells = md.splitlines()[0].count(" | ")
    row = next(line for line in md.splitlines() if line.startswith("| a"))
    assert "a\\|b" in row
    assert row.replace("\\|", "").count(" | ") == header_cells


# ---- charts

def _valid_png(path: Path) -> None:
    import matplotlib.image as mpimg
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    img = mpimg.imread(path)
    assert img.shape[0] > 100 and img.shape[1] > 100


def test_charts_are_pngs_with_the_expected_series(recorded, tmp_path):
    results = list(recorded.values())
    groups = report.build_report(results)
    drawn = {c.path.name: c for c in charts.write_charts(results, groups, tmp_path)}
    assert set(drawn) == {"rate_over_time.png", "total_time.png", "resources.png", "storage.png"}
    for c in drawn.values():
        _valid_png(c.path)

    rate = drawn["rate_over_time.png"].series
    assert set(rate) == {"erlang_baseline", "javascript", "javascript_quickjs", "javascript_quickjs_es2015",
                         "python", "erlang"}
    # the python series is the per-poll all-tasks rate of the one python build, from its raw polls
    ddoc = recorded["python"]["view"]["ddoc"]
    ddoc = ddoc if ddoc.startswith("_design/") else "_design/" + ddoc
    polls = recorded["python"]["polls"]
    want = []
    for poll in polls:
        rates = [t["changes_done"] / (t["updated_on"] - t["started_on"]) for t in poll["tasks"]
                 if t.get("type") == "indexer" and t.get("design_document") == ddoc
                 and t["updated_on"] > t["started_on"]]
        if rates:
            want.append(sum(rates))
    assert rate["python"]["cps"] == pytest.approx(want)
    assert rate["python"]["t"][0] == 0 and rate["python"]["t"] == sorted(rate["python"]["t"])

    tt = drawn["total_time.png"].series
    i = tt["labels"].index("erlang_baseline")
    # the wall time, not _active_tasks' total time (whole seconds)
    totals = [recorded[n]["summary"]["wall_time_s"] for n in ("erlang_baseline", "erlang_baseline_repeat")]
    assert tt["median"][i] == pytest.approx(sum(totals) / 2)
    assert tt["median"][i] - tt["err_low"][i] == pytest.approx(min(totals))
    assert tt["n"][i] == 2

    st = drawn["storage.png"].series
    assert st["labels"] == ["erlang_baseline", "javascript"]  # the languages measured on both storages
    j = st["labels"].index("javascript")
    assert st["disk"]["median"][j] == pytest.approx(
        statistics.median(recorded[n]["summary"]["wall_time_s"] for n in ("javascript", "javascript_repeat")))
    assert st["tmpfs"]["median"][j] == pytest.approx(
        statistics.median(recorded[n]["summary"]["wall_time_s"] for n in ("javascript_tmpfs",
                                                                          "javascript_tmpfs_repeat")))
    res = drawn["resources.png"].series
    k = res["labels"].index("javascript")
    assert res["RSS MB (peak)"]["query server"][k] == pytest.approx(group(groups, "javascript").qs_rss_mb)
    assert res["RSS MB (peak)"]["query server"][res["labels"].index("erlang_baseline")] == 0
    # recorded before the kernel's accounting: no CPU panel rather than bars of 0
    assert "CPU % of a core (kernel)" not in res and not math.isnan(sum(res["kB written"]["beam"]))


def test_single_storage_has_no_storage_chart(recorded, tmp_path):
    results = [recorded[n] for n in ("javascript", "erlang_baseline")]
    drawn = charts.write_charts(results, report.build_report(results), tmp_path)
    assert [c.path.name for c in drawn] == ["rate_over_time.png", "total_time.png", "resources.png"]


def test_cli_plot(results_dir, tmp_path):
    r = CliRunner().invoke(main, ["report", str(results_dir), "--format", "markdown", "--plot", str(tmp_path)])
    assert r.exit_code == 0, r.output
    for name in ("rate_over_time.png", "total_time.png", "resources.png", "storage.png"):
        _valid_png(tmp_path / name)


def test_a_different_map_function_is_its_own_row(recorded, fixtures_dir):
    throws = _recorded(fixtures_dir / "js_throws_10pct")
    groups = report.build_report([recorded["javascript"], recorded["javascript_repeat"], throws])
    labels = {g.label: g.n for g in groups}
    assert labels == {"javascript": 2, "javascript [throws10]": 1}
    # the terminal table shows the bracketed label verbatim (not as rich markup)
    from dragnet.report.terminal import render_table
    import contextlib
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        render_table(groups)
    assert "javascript [throws10]" in buf.getvalue()


def test_bench_dir_failures_from_the_manifest_are_counted(recorded, tmp_path):
    (tmp_path / "000-disk-r0-erlang_baseline.json").write_text(json.dumps(recorded["erlang_baseline"]))
    manifest = {"schema": "dragnet.bench/1", "id": "bench-x", "runs": [
        {"index": 0, "storage": "disk", "repeat": 0, "language": "erlang_baseline", "status": "ok",
         "result_file": "000-disk-r0-erlang_baseline.json", "error": None},
        {"index": 1, "storage": "disk", "repeat": 0, "language": "javascript", "status": "error",
         "result_file": None, "error": "CouchDB could not compile the view (400 compilation_error)"},
        {"index": 2, "storage": "disk", "repeat": 0, "language": "python", "status": "pending",
         "result_file": None, "error": None}]}
    (tmp_path / "bench.json").write_text(json.dumps(manifest))
    groups = report.build_report(load.load_results([tmp_path]))
    assert {g.label: (g.n, g.failed) for g in groups} == {"erlang_baseline": (1, 0), "javascript": (0, 1)}
    r = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert r.exit_code == 0
    assert "failed: javascript (disk): CouchDB could not compile the view (400 compilation_error)" in r.output
