"""`forecast --nouveau`: the fit of a sweep of Nouveau builds, the back-test, the checks before anything runs,
its forecast.json and its text; one short live sweep on the live CouchDB's Nouveau server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dragnet.cli import main
from dragnet.errors import UsageError
from dragnet.forecast import search_sweep as fn
from dragnet.report import search_forecast as rnf
from dragnet.results import schema as _schema

REPO = Path(__file__).resolve().parents[1]
INDEX = REPO / "docs" / "studies" / "nouveau" / "declarations.js"


def _build(n: int, lang: str = "javascript", *, wall: float, cpu: float, disk: int, errors: int = 0) -> dict:
    """A dragnet.nouveau result as index/nouveau.build writes it, with the figures the forecast reads."""
    return {"language": lang, "size": n, "doc_count": n, "round": 1,
            "summary": {"wall_time_s": wall, "disk_size": disk, "index_errors": errors},
            "cpu": {"couchdb": {"cpu_s": cpu * 0.8}, "jvm": {"cpu_s": cpu * 0.2}}}


def _sweep(per_doc_s: float = 0.002, fixed_s: float = 0.5) -> list[dict]:
    return [_build(n, wall=fixed_s + per_doc_s * n * (1 + r / 100), cpu=0.001 * n, disk=130 * n + 20_000)
            for n in (500, 1000, 2000, 4000) for r in (0, 2)]


def test_points_read_each_quantity_of_a_build():
    b = _build(1000, wall=3.0, cpu=2.0, disk=150_000)
    assert fn.points([b], "nouveau_build_time") == [(1000, 3.0)]
    assert fn.points([b], "nouveau_cpu") == [(1000, pytest.approx(2.0))]   # beam's tree and the JVM
    assert fn.points([b], "nouveau_index_size") == [(1000, 150_000.0)]
    # a build that recorded no CPU (a CouchDB on another machine) has no CPU point
    assert fn.points([{**b, "cpu": {}}], "nouveau_cpu") == []


def test_fit_forecasts_a_straight_sweep_at_the_target_with_an_interval():
    out = fn.fit(_sweep(), 20_000)
    qs = out["javascript"]["quantities"]
    assert set(qs) == set(fn.QUANTITIES)
    size = qs["nouveau_index_size"]["prediction"]
    # 130 bytes a document and 20,000 fixed: exactly linear, so the forecast is the line at 20,000
    assert size["value"] == pytest.approx(130 * 20_000 + 20_000, rel=1e-6)
    t = qs["nouveau_build_time"]["prediction"]
    assert t["low"] <= t["value"] <= t["high"] and t["value"] == pytest.approx(0.5 + 0.002 * 20_000, rel=0.15)
    assert qs["nouveau_build_time"]["choice"]["held_out"]      # four sizes: the held-out sizes chose the shape
    assert out["javascript"]["measured_sizes"] == [500, 1000, 2000, 4000]


def test_fit_keeps_engines_apart_and_warns_far_and_on_index_errors():
    builds = _sweep() + [{**b, "language": "javascript_quickjs",
                          "summary": {**b["summary"], "index_errors": 3}} for b in _sweep(0.001)]
    out = fn.fit(builds, 100_000)
    assert set(out) == {"javascript", "javascript_quickjs"}
    assert any("extrapolation beyond" in w for w in out["javascript"]["warnings"])
    assert any("index() raised 24 exceptions" in w for w in out["javascript_quickjs"]["warnings"])
    assert not any("index()" in w for w in out["javascript"]["warnings"])
    js = out["javascript"]["quantities"]["nouveau_build_time"]["prediction"]["value"]
    qjs = out["javascript_quickjs"]["quantities"]["nouveau_build_time"]["prediction"]["value"]
    assert qjs < js


def test_backtest_compares_each_prediction_with_the_targets_builds():
    forecasts = fn.fit(_sweep(), 20_000)
    built = [_build(20_000, wall=45.0, cpu=20.0, disk=130 * 20_000 + 20_000),
             _build(20_000, wall=35.0, cpu=20.0, disk=130 * 20_000 + 20_000)]
    checks = fn.backtest(forecasts, built)["javascript"]
    t = checks["nouveau_build_time"]
    assert t["actual"] == 40.0
    assert t["error"] == pytest.approx((t["predicted"] - 40.0) / 40.0)
    assert checks["nouveau_index_size"]["inside"] and abs(checks["nouveau_index_size"]["error"]) < 1e-6
    assert fn.backtest(forecasts, [_build(20_000, "javascript_quickjs", wall=1, cpu=1, disk=1)]) == {}


@pytest.mark.parametrize("sizes, target, data, repeat, build_target, msg", [
    ([500, 1000, 2000], 2000, 10_000, 1, False, "not larger than the sample's largest size"),
    ([500, 1000], 4000, 10_000, 1, False, "at least three sizes"),
    ([500, 1000, 20_000], 40_000, 10_000, 1, False, "more than the data holds"),
    ([500, 1000, 2000], 20_000, 10_000, 1, True, "fewer than 20,000 \\(--build-target builds the target"),
])
def test_sizes_are_checked_before_anything_runs(sizes, target, data, repeat, build_target, msg):
    with pytest.raises(UsageError, match=msg):
        fn.check_sizes(sizes, data, target, repeat, build_target)
    fn.check_sizes([500, 1000], 4000, 10_000, 2)      # two sizes twice each leave a residual


def test_forecast_json_round_trips_and_reads_as_text(tmp_path):
    forecasts = fn.fit(_sweep(), 20_000)
    out = {"schema": fn.SCHEMA, "target": {"doc_count": 20_000, "url": None}, "index": {"name": "declarations"},
           "sizes": [500, 1000, 2000, 4000], "repeat": 2, "forecasts": forecasts,
           "couchdb": {"version": "3.5.0"}, "nouveau": {"batch_size": None, "jvm": {"heap": "1g"}},
           "machine": {"cpu_model": "x", "cpu_count": 2, "mem_total_kb": 1024 * 1024}, "load_average": [1.0, 2.0],
           "backtest": fn.backtest(forecasts, [_build(20_000, wall=44.0, cpu=20.0, disk=2_620_000)]),
           "backtest_load_average": [2.0, 3.0]}
    _schema.write(tmp_path / fn.SUMMARY, out)
    back = fn.read(tmp_path)
    assert back["schema"] == "dragnet.nouveau-forecast/1"
    m = rnf.model(back)
    assert {r["quantity"] for r in m["rows"]} == set(fn.QUANTITIES)
    text = rnf.text(m)
    assert "Nouveau index declarations: forecast for 20,000 documents from sizes 500, 1,000, 2,000, 4,000" in text
    assert "index size on disk" in text and "MiB" in text and "-Xmx1g" in text
    assert "back-test javascript build time: predicted" in text and "built 44.0 s" in text
    with pytest.raises(Exception, match="no forecast.json"):
        fn.read(tmp_path / "nowhere")


@pytest.mark.parametrize("args, msg", [
    (["--views", "views/income"], "--nouveau: not with --views"),
    (["--cpus", "1,2"], "--nouveau: not with --cpus"),
    (["--sizes", "100,200,400"], "give one of --target URL/db and --target-docs N"),
])
def test_cli_refuses_what_does_not_combine_in_one_line(args, msg):
    r = CliRunner().invoke(main, ["forecast", "--nouveau", str(INDEX), "--db", "x", "--url", "http://127.0.0.1:9",
                                  *args])
    assert r.exit_code != 0 and msg in r.output and len(r.output.strip().splitlines()) == 1


def test_auto_sizes_stay_within_a_fifth_of_the_target(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"_id": f"d{i}", "v": i}) + "\n" for i in range(5000)))
    r = CliRunner().invoke(main, ["forecast", "--nouveau", str(INDEX), "--db", "x", "--url", "http://127.0.0.1:9",
                                  "--target-docs", "9000", "--data", str(data)])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1
    assert "a fifth of the target's 9,000 documents, the most a sweep builds, is 1,800" in r.output


def test_build_target_goes_with_nouveau():
    r = CliRunner().invoke(main, ["forecast", "--db", "x", "--target-docs", "1000", "--build-target"])
    assert r.exit_code != 0 and "--build-target goes with --nouveau" in r.output


@pytest.mark.live
def test_live_sweep_forecasts_and_backtests_a_nouveau_build(live_url, tmp_path):
    from dragnet.couchdb.client import connect, db_path
    from tests.conftest import normalised_declarations

    couch = connect(live_url)
    if couch.get("/_node/_local/_config/nouveau").get("enable") != "true":
        pytest.skip("the live CouchDB has no Nouveau server (.ci/live-couchdb starts one from ../shared/nouveau)")
    data = tmp_path / "decl.jsonl"
    data.write_text("".join(json.dumps(d) + "\n" for d in normalised_declarations(160, 5)))
    db = f"nvfc_{tmp_path.name[-8:].lower().replace('-', '_')}"
    try:
        r = CliRunner().invoke(main, ["forecast", "--nouveau", str(INDEX), "--url", live_url, "--db", db,
                                      "--data", str(data), "--sizes", "40,80,120", "--target-docs", "160",
                                      "--build-target", "--results", str(tmp_path / "f"), "--json"])
        assert r.exit_code == 0, r.output
        out = json.loads(r.output)
        assert out["schema"] == "dragnet.nouveau-forecast/1" and out["sizes"] == [40, 80, 120]
        assert len(out["builds"]) == 3 and len(out["warmup_builds"]) == 1 and len(out["target_builds"]) == 1
        built = json.loads((tmp_path / "f" / out["target_builds"][0]["file"]).read_text())
        assert built["summary"]["num_docs"] == 160 and built["doc_count"] == 160
        f = out["forecasts"]["javascript"]["quantities"]
        assert f["nouveau_index_size"]["prediction"]["value"] > max(y for _, y in f["nouveau_index_size"]["points"])
        assert set(out["backtest"]["javascript"]) == set(fn.QUANTITIES)
        assert fn.read(tmp_path / "f")["backtest"] == out["backtest"]
    finally:
        for n in (40, 80, 120, 160):
            couch.request("DELETE", db_path(f"{db}-{n}"), ok=(200, 202, 404))
