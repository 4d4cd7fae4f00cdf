"""`bench --sizes`: size parsing, prefixes, the log-log slope, the "exceeds memory" mark and the per-size
rows (pure); the chart's data; and a small live sweep whose slope is re-derived from its results files."""

from __future__ import annotations

import gzip
import json
import math
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from dragnet.bench import sizes as sz
from dragnet.report import sizes_table as sizes_table
from dragnet.cli import main
from dragnet.errors import UsageError

MiB = 1024 ** 2


def test_parse_sizes_suffixes_order_and_bad_input():
    assert sz.parse_sizes("10k,40k,160k,320k") == [10_000, 40_000, 160_000, 320_000]
    assert sz.parse_sizes("800, 200") == [200, 800]
    assert sz.parse_sizes("1.5k,1m") == [1500, 1_000_000]
    for bad in ("10q", "", "0,10", "k"):
        with pytest.raises(UsageError):
            sz.parse_sizes(bad)


@pytest.mark.parametrize("args", [["--sizes", "10q"], ["--sizes", "10k", "--storage", "disk"],
                                  ["--plot", "x.png"]])
def test_cli_bad_sizes_input_is_one_line_and_nonzero(args):
    r = CliRunner().invoke(main, ["bench", "--url", "http://127.0.0.1:9", "--db", "x", *args])
    assert r.exit_code != 0
    assert len(r.output.strip().splitlines()) == 1, r.output
    assert "Traceback" not in r.output


def test_cli_sizes_with_baseline_points_to_compare(tmp_path):
    from dragnet.results import store as store

    s = tmp_path / "store"
    store.save(s, Path(__file__).resolve().parent.parent / "docs" / "studies" / "compare" / "ci" / "base", "main")
    r = CliRunner().invoke(main, ["bench", "--url", "http://127.0.0.1:9", "--db", "x", "--sizes", "1k,2k",
                                  "--baseline", "main", "--store", str(s)])
    assert r.exit_code != 0 and len(r.output.strip().splitlines()) == 1, r.output
    assert "compare the sweep afterwards: dragnet compare main SWEEP_DIR" in r.output


def _source(path: Path, n: int, gz: bool = True) -> Path:
    lines = [json.dumps({"_id": f"d{i:04d}", "i": i}) + "\n" for i in range(n)]
    opener = gzip.open if gz else open
    with opener(path, "wt") as fh:
        fh.write(lines[0] + "\n")      # a blank line is not a document
        fh.writelines(lines[1:])
    return path


def _ids(path: Path) -> list[str]:
    with gzip.open(path, "rt") as fh:
        return [json.loads(line)["_id"] for line in fh if line.strip()]


@pytest.mark.parametrize("gz", [True, False])
def test_prefixes_are_the_first_documents_and_byte_identical_when_rewritten(tmp_path, gz):
    src = _source(tmp_path / ("s.jsonl.gz" if gz else "s.jsonl"), 10, gz)
    out = sz.write_prefixes(src, [7, 3, 10], tmp_path / "p")
    assert sorted(out) == [3, 7, 10]
    for n, p in out.items():
        assert _ids(p) == [f"d{i:04d}" for i in range(n)]
    first = {n: p.read_bytes() for n, p in out.items()}
    again = sz.write_prefixes(src, [3, 7, 10], tmp_path / "p")
    # the import marker keys on the file's sha256: a rewritten prefix must not look like new data
    assert {n: p.read_bytes() for n, p in again.items()} == first


def test_prefixes_of_the_same_source_are_not_written_again(tmp_path):
    src = _source(tmp_path / "s.jsonl", 10, False)
    out = sz.write_prefixes(src, [3, 7], tmp_path / "p")
    stamps = {n: p.stat().st_mtime_ns for n, p in out.items()}
    os.utime(out[3], ns=(1, 1))           # a kept prefix keeps its file: not rewritten
    assert sz.write_prefixes(src, [7, 3], tmp_path / "p") == out and out[3].stat().st_mtime_ns == 1
    assert out[7].stat().st_mtime_ns == stamps[7]
    # a size not written yet writes them all; a changed source writes them again, from its documents
    assert _ids(sz.write_prefixes(src, [3, 7, 10], tmp_path / "p")[10]) == [f"d{i:04d}" for i in range(10)]
    assert out[3].stat().st_mtime_ns != 1
    _source(src, 8, False)
    os.utime(src, ns=(10**18, 10**18))
    with pytest.raises(UsageError, match="8 documents"):
        sz.write_prefixes(src, [3, 7, 10], tmp_path / "p")
    assert _ids(sz.write_prefixes(src, [3, 7], tmp_path / "p")[7]) == [f"d{i:04d}" for i in range(7)]


def test_prefix_larger_than_the_data_is_refused(tmp_path):
    src = _source(tmp_path / "s.jsonl.gz", 5)
    with pytest.raises(UsageError, match="5 documents, fewer than the largest size 6"):
        sz.write_prefixes(src, [2, 6], tmp_path / "p")


def test_generated_source_is_reused(tmp_path):
    a = sz.generate_source(30, tmp_path)
    mtime = a.stat().st_mtime_ns
    assert sum(1 for _ in gzip.open(a)) == 30
    assert sz.generate_source(30, tmp_path) == a and a.stat().st_mtime_ns == mtime


def test_fit_slope_recovers_a_power_law():
    pts = [(n, 0.002 * n ** 1.5) for n in (100, 400, 1600, 6400)]
    fit = sz.fit_slope(pts)
    assert fit.slope == pytest.approx(1.5) and fit.r2 == pytest.approx(1.0) and fit.points == 4
    assert math.exp(fit.intercept) == pytest.approx(0.002)
    linear = sz.fit_slope([(1000, 2.0), (1000, 2.2), (2000, 4.0), (2000, 4.4)])
    assert linear.slope == pytest.approx(1.0)


def test_fit_slope_is_least_squares_on_logs_with_noise():
    pts = [(10, 1.0), (100, 12.0), (1000, 90.0)]
    lx = [math.log(x) for x, _ in pts]
    ly = [math.log(y) for _, y in pts]
    mx, my = sum(lx) / 3, sum(ly) / 3
    want = sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)
    fit = sz.fit_slope(pts)
    assert fit.slope == pytest.approx(want) and 0.9 < fit.r2 < 1.0


def test_fit_slope_needs_two_distinct_sizes_and_skips_missing_times():
    assert sz.fit_slope([(100, 1.0), (100, 2.0)]) is None
    assert sz.fit_slope([]) is None
    assert sz.fit_slope([(100, 1.0), (200, None), (200, 0.0)]) is None
    assert sz.fit_slope([(100, 1.0), (200, None), (400, 4.0)]).slope == pytest.approx(1.0)


def test_first_exceeding_compares_database_file_with_the_limit():
    db = {10_000: 40 * MiB, 40_000: 160 * MiB, 20_000: 80 * MiB, 80_000: None}
    assert sz.first_exceeding(db, 48 * MiB) == 20_000
    assert sz.first_exceeding(db, 80 * MiB) == 40_000        # equal is not larger
    assert sz.first_exceeding(db, 1024 * MiB) is None
    assert sz.first_exceeding(db, None) is None


def _run(size, lang, secs, *, scenario="", status="ok", index=None, memory=None, rss=None):
    return {"size": size, "language": lang, "scenario": scenario, "status": status, "wall_time_s": secs,
            "docs_per_sec_wall": size / secs if secs else None,
            "sizes": {"after": {"index": {"file": index}}} if index else None, "memory": memory,
            "pidstat_peak_rss_kb": rss}


def test_size_rows_mark_the_first_size_over_the_memory_limit_and_fits_use_every_ok_run():
    sc = "mem-48.0MiB/unlimited/cold"
    runs = [_run(1000, "js", 1.0, scenario=sc, index=100, memory={"peak": 40 * MiB}),
            _run(1000, "js", 1.2, scenario=sc, index=120, memory={"peak": 45 * MiB}),
            _run(4000, "js", 4.4, scenario=sc, index=400, rss={"beam": 1000, "couchjs": 24}),
            _run(4000, "js", None, scenario=sc, status="oom"),
            _run(16000, "js", 17.0, scenario=sc)]
    db = {1000: 10 * MiB, 4000: 50 * MiB, 16000: 200 * MiB}
    rows = sz.size_rows(runs, db, {sc: 48 * MiB})
    assert [(r.size, r.runs, r.exceeds_memory, r.first_exceeding) for r in rows] == [
        (1000, 2, False, False), (4000, 2, True, True), (16000, 1, True, False)]
    assert rows[0].index_file == 120 and rows[0].peak_memory == 45 * MiB and rows[0].peak_source == "cgroup"
    assert rows[1].seconds == [4.4] and rows[1].peak_memory == 1024 * 1024 and rows[1].peak_source == "pidstat rss"
    assert rows[2].peak_memory is None
    cells = sizes_table.table_cells(rows)
    assert [c[-1] for c in cells] == ["no", "FIRST", "yes"]
    fit = sz.fits(runs)[("js", sc)]
    assert fit.points == 4     # the OOM run has no time
    assert fit.slope == pytest.approx(sz.fit_slope([(1000, 1.0), (1000, 1.2), (4000, 4.4), (16000, 17.0)]).slope)
    # without a limit nothing is marked
    assert not any(r.exceeds_memory or r.first_exceeding for r in sz.size_rows(runs, db, {}))


def test_each_core_count_is_its_own_line_of_the_sweep():
    runs = [{**_run(n, "js", t), "axes": {"cpus": c}} for n, t, c in
            [(1000, 2.0, "1"), (4000, 8.0, "1"), (1000, 1.0, "2"), (4000, 4.0, "2")]]
    assert [sz.variant(r) for r in runs] == ["cpus=1", "cpus=1", "cpus=2", "cpus=2"]
    rows = sz.size_rows(runs, {})
    assert [(r.scenario, r.size, r.seconds) for r in rows] == [
        ("cpus=1", 1000, [2.0]), ("cpus=1", 4000, [8.0]), ("cpus=2", 1000, [1.0]), ("cpus=2", 4000, [4.0])]
    assert set(sz.fits(runs)) == {("js", "cpus=1"), ("js", "cpus=2")}
    assert sz.variant({**runs[0], "scenario": "mem-48.0MiB"}) == "mem-48.0MiB cpus=1"


def test_analyse_reads_the_raw_runs_of_every_size():
    manifests = {200: {"scenarios": [], "runs": [_run(0, "js", 1.0)]},
                 800: {"scenarios": [], "runs": [_run(0, "js", 3.0)]}}
    for n, m in manifests.items():
        for r in m["runs"]:
            del r["size"]     # the manifest's runs carry no size: sweep_runs adds it
    summary = {"per_size": {"200": {"db_sizes": {"file": 1}}, "800": {"db_sizes": {"file": 4}}},
               "memory_limits": [2]}
    an = sz.analyse(summary, manifests)
    assert [(r["size"], r["seconds"]) for r in an["rows"]] == [(200, [1.0]), (800, [3.0])]
    assert an["fits"][0]["slope"] == pytest.approx(math.log(3) / math.log(4))
    assert an["first_exceeding_memory"] == {"2": 800}


def test_chart_draws_the_runs_and_the_fit(tmp_path):
    pytest.importorskip("matplotlib")
    from dragnet.report.sizes_plot import size_chart

    runs = [_run(n, "js", 0.01 * n) for n in (100, 100, 400)]
    summary = {"per_size": {"100": {"db_sizes": {"file": 1}}, "400": {"db_sizes": {"file": 10}}},
               "memory_limits": [5]}
    an = sz.analyse(summary, {100: {"runs": runs[:2]}, 400: {"runs": runs[2:]}})
    chart = size_chart(an["rows"], an["fits"], an["first_exceeding_memory"], tmp_path / "s.png")
    assert chart.path.read_bytes()[:4] == b"\x89PNG"
    s = chart.series["js (slope 1.00)"]
    assert sorted(zip(s["sizes"], s["seconds"])) == [(100, 1.0), (100, 1.0), (400, 4.0)]
    assert chart.series["first_exceeding_5"] == 400


# ---- live: a small sweep on a real CouchDB

@pytest.mark.live
@pytest.mark.slow
def test_live_sizes_sweep(live_url, tmp_path):
    from dragnet.couchdb.client import connect

    couch = connect(live_url)
    db = f"dragnet_test_sizes_{os.getpid()}"
    out = tmp_path / "sweep"
    common = ["bench", "--url", live_url, "--db", db, "--sizes", "200,800", "--languages", "javascript",
              "--storage-label", "disk", "--json", "--no-ceiling"]
    args = common + ["--repeat", "2", "--results", str(out)]
    try:
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 0, r.output
        doc = json.loads(r.output.strip().splitlines()[-1])
        # the slope, re-derived from the results files (one per build) rather than from the summary
        pts = {}
        files = sorted(out.glob("size-*/0*.json"))
        assert len(files) == 2 * 2 * 2       # sizes × (baseline + javascript) × repeats
        for f in files:
            res = json.loads(f.read_text())
            assert res["summary"]["ok"] and res["bench"]["size"] in (200, 800)
            assert f.parent.name == f"size-{res['bench']['size']}"
            assert res["sizes"]["after"]["index"]["file"] > 0
            pts.setdefault(res["bench"]["language"], []).append((res["bench"]["size"],
                                                                 res["summary"]["wall_time_s"]))
        for f in doc["fits"]:
            assert len(pts[f["language"]]) == 4 and f["points"] == 4
            assert f["slope"] == pytest.approx(sz.fit_slope(pts[f["language"]]).slope)
        assert {f["language"] for f in doc["fits"]} == {"erlang_baseline", "javascript"}
        on_disk = json.loads((out / "sizes.json").read_text())
        assert on_disk["fits"] == doc["fits"] and on_disk["sizes"] == [200, 800]
        # each size's database holds exactly that prefix of the one generated file
        source = Path(on_disk["source"])
        assert source.is_file() and on_disk["seed"] == sz.SEED
        all_ids = _ids(source)
        assert len(all_ids) == 800
        for n in (200, 800):
            rows = couch.get(f"/{db}-{n}/_all_docs")["rows"]
            assert sorted(x["id"] for x in rows) == sorted(all_ids[:n])
            assert doc["sizes"]["per_size"][str(n)]["doc_count"] == n
        if doc["chart"]:
            assert Path(doc["chart"]).read_bytes()[:4] == b"\x89PNG"
        # a second sweep over the same sizes imports nothing again
        again = tmp_path / "again"
        r = CliRunner().invoke(main, common + ["--repeat", "1", "--results", str(again), "--no-baseline", "--no-ceiling"])
        assert r.exit_code == 0, r.output
        imports = [json.loads((again / f"size-{n}" / "bench.json").read_text())["imports"][0] for n in (200, 800)]
        assert [i["imported"] for i in imports] == [False, False]
    finally:
        for n in (200, 800):
            couch.request("DELETE", f"/{db}-{n}", ok=(200, 202, 404))
