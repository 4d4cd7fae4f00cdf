"""The forecast by part (dragnet.forecast.parts), pure: no server."""

import math
from pathlib import Path

import pytest

from dragnet.bench import sizes as sz
from dragnet.forecast import model as fc
from dragnet.forecast import parts as pt
from dragnet.forecast import run as fr

SIZES = (2500, 5000, 10000, 20000)


def _run(n, beam, qs, wall=None, compaction=None):
    r = {"size": n, "status": "ok", "language": "javascript", "cpu_beam_s": beam, "cpu_query_servers_s": qs,
         "cpu_s": beam + qs, "wall_time_s": wall if wall is not None else (beam + qs) / 1.5}
    if compaction is not None:
        r["sizes"] = {"peak_disk": {"compaction": compaction}}
    return r


def test_each_part_keeps_its_own_shape_where_one_shape_through_the_sum_bends_wrong():
    # beam linear, the query server's reduces a power: the sum is neither
    beam = lambda n: 0.3 + 4e-4 * n                   # noqa: E731
    qs = lambda n: 0.1 + 2e-7 * n ** 1.6              # noqa: E731
    runs = [_run(n, beam(n), qs(n)) for n in SIZES]
    out = pt.forecast(runs, 100_000)
    truth = beam(100_000) + qs(100_000)
    assert out["shapes"] == {"query_servers": "power", "beam": "linear"}
    assert out["step"] is None
    assert abs(out["build_cpu"]["value"] / truth - 1) < 0.01
    p = out["build_cpu"]
    assert p["low"] <= p["value"] <= p["high"]
    # the sum's parts are the parts' own predictions
    assert math.isclose(p["value"], sum(e["prediction"]["value"] for e in out["parts"].values()))
    # one shape through the total misses by more than the parts do
    total = fc.quantity_forecast([(n, beam(n) + qs(n)) for n in SIZES], "build_cpu", 100_000)
    assert abs(total["prediction"]["value"] / truth - 1) > 0.05


def test_compaction_beginning_at_the_largest_size_is_a_step_not_a_power():
    # bt49-a's sweep as recorded (beam's and couchjs' CPU-seconds, wall, compaction files at the peak): beam's
    # CPU steps up at 20,000, the first size smoosh compacted during the build; its target took 101.9 CPU-s
    recorded = [(2500, 0.75, 0.68, 1.818, 0), (5000, 1.65, 0.92, 2.489, 0), (10000, 3.46, 1.70, 4.147, 0),
                (20000, 13.9, 3.50, 19.514, 5103877)]
    runs = [_run(n, b, q, w, c) for n, b, q, w, c in recorded]
    target_compaction = 58331272.0    # the frozen disk forecast's compaction part at 100,000 documents
    out = pt.forecast(runs, 100_000, target_compaction=target_compaction)
    s = out["step"]
    assert s["quiet_sizes"] == [2500, 5000, 10000] and s["compacting_sizes"] == [20000]
    line = lambda n: s["line"]["fixed"] + s["line"]["per_doc"] * n * math.log(n)   # noqa: E731
    assert math.isclose(s["per_mib"] / 1024 ** 2 * 5103877, 13.9 - line(20000))
    assert math.isclose(s["value"], line(100_000) + s["per_mib"] / 1024 ** 2 * target_compaction)
    assert out["shapes"]["beam"] == "step"
    assert abs(out["build_cpu"]["value"] / 101.87 - 1) < 0.4          # +33 %
    # the total's held-out sizes read the step as a power of 2: +296 %
    total = fc.quantity_forecast([(n, b + q) for n, b, q, _, _ in recorded], "build_cpu", 100_000)
    assert total["prediction"]["value"] / 101.87 - 1 > 2.0
    # without the compaction forecast there is no step: beam is forecast as one part
    assert pt.forecast(runs, 100_000)["step"] is None


def test_no_step_without_enough_quiet_sizes_or_without_compaction():
    def builds(comp):
        return [(n, 1e-4 * n, c) for n, c in zip(SIZES, comp)]
    assert pt.step(builds((0, 0, 1e6, 3e6)), 100_000, 1e8) is None          # two quiet sizes: no line
    assert pt.step(builds((0, 0, 0, 0)), 100_000, 1e8) is None              # no compaction: no step
    assert pt.step(builds((None,) * 4), 100_000, 1e8) is None               # none recorded
    assert pt.step(builds((0, 0, 0, 1e6)), 100_000, None) is None           # no compaction forecast
    # repeated builds: a size counts as quiet only through its quiet builds, and its compacting one is busy
    s = pt.step([*builds((0, 0, 0, 1e6)), (10000, 1.5, 2e6)], 100_000, 1e8)
    assert s["quiet_sizes"] == [2500, 5000, 10000] and s["compacting_sizes"] == [10000, 20000]


def test_build_time_is_the_cpu_over_the_largest_sizes_share_of_the_cores():
    shares = {2500: 0.8, 5000: 1.0, 10000: 1.25, 20000: 0.5}
    runs = [_run(n, 2e-4 * n, 1e-4 * n, wall=3e-4 * n / shares[n]) for n in SIZES]
    out = pt.forecast(runs, 100_000)
    cpu, wall = out["build_cpu"], out["build_time"]
    assert math.isclose(cpu["value"], 30.0, rel_tol=1e-6)
    assert math.isclose(wall["value"], cpu["value"] / 0.5)
    assert math.isclose(wall["low"], cpu["low"] / 1.25) and math.isclose(wall["high"], cpu["high"] / 0.5)
    assert out["cores_share"]["assumed"] == pytest.approx(0.5) and out["cores_share"]["at_docs"] == 20000


def test_builds_without_cpu_by_process_give_no_forecast_by_part():
    runs = [{"size": n, "status": "ok", "language": "javascript", "wall_time_s": n / 1000} for n in SIZES]
    assert pt.forecast(runs, 100_000) == {}


def test_a_recorded_back_test_gets_its_forecast_by_part_and_its_error(tmp_path):
    # issue 32's eleventh back-test: sweeps 2,500-20,000 and the 100,000 target, kept in docs/
    docs = Path(__file__).resolve().parent.parent / "docs/studies/forecast/bt32-small-quiet"
    out = fr.from_sweep(docs, fr.target_from_docs(100_000), out_dir=tmp_path)
    f = out["forecasts"][""]["javascript"]
    bp = f["by_part"]
    assert set(bp["parts"]) == {"query_servers", "beam"}
    assert bp["step"]["compacting_sizes"] == [20000]          # smoosh first compacted during the 20,000 build
    check = out["backtest"]["javascript"]
    for q in ("build_cpu", "build_time"):
        assert check[q]["by_part"]["predicted"] == pytest.approx(bp[q]["value"])
        assert check[q]["by_part"]["actual"] == pytest.approx(check[q]["actual"])
    # the builds' CPU by process, as the kernel counted it, sums to the CPU-seconds the forecast fits
    r = fr.runs_with_cpu(docs / "sweep", {20000: sz.load(docs / "sweep")[1][20000]})[0]
    assert r["cpu_s"] == pytest.approx(r["cpu_beam_s"] + r["cpu_query_servers_s"])
    # the forecast prints each by part beside its total fit, and the back-test its error
    from dragnet.report import forecast_report
    from dragnet.report.render import text
    lines = text.forecast(forecast_report.build(out)).splitlines()
    by = [x for x in lines if x.strip().startswith("by part")]
    assert len(by) == 2 and "query servers" in by[0] and "beam step" in by[0]
    assert f"over {bp['cores_share']['assumed']:.2f} of a core" in by[0]      # build_time's line comes first
    err = check["build_cpu"]["by_part"]["error"]
    assert any(x.startswith("back-test javascript build_cpu") and f"(by part: {err:+.1%})" in x for x in lines)


def _grown(n, beam, qs, index_bytes, wall=None):
    r = _run(n, beam, qs, wall=wall)
    r["sizes"] = {"peak_disk": {"growth": index_bytes, "other_indexes": 0, "compaction": 0}}
    return r


def test_nonnegative_fit_recovers_both_costs_and_keeps_to_an_axis_when_one_would_be_negative():
    rows = [(n, 3.0 * n, 2e-3 * n + 5e-4 * 3.0 * n) for n in SIZES]          # bytes ∝ docs: collinear
    a, b = pt.nonnegative_fit(rows)
    assert a >= 0 and b >= 0 and a * 1000 + b * 3000 == pytest.approx(2.0 + 1.5)
    rows = [(n, g, 1e-3 * n + 2e-6 * g) for n, g in zip(SIZES, (1e5, 5e5, 2e6, 9e6))]
    assert pt.nonnegative_fit(rows) == (pytest.approx(1e-3), pytest.approx(2e-6))
    # a CPU that falls as the bytes grow would need b < 0: the one-term fit on documents instead
    rows = [(n, g, 1e-3 * n - 1e-9 * g) for n, g in zip(SIZES, (1e5, 5e5, 2e6, 9e6))]
    a, b = pt.nonnegative_fit(rows)
    assert b == 0.0 and a > 0


def test_by_bytes_follows_the_index_bytes_where_a_shape_through_the_cpu_extrapolates():
    # beam: 0.8 s per 1,000 documents + 100 s per GiB appended; the bytes per document grow with the shards
    gib = 1024 ** 3
    grown = {2500: 0.002, 5000: 0.006, 10000: 0.016, 20000: 0.047}
    runs = [_grown(n, 0.8e-3 * n + 100 * g, 0.25e-3 * n, g * gib) for n, g in grown.items()]
    target = {"value": 0.47 * gib, "low": 0.33 * gib, "high": 0.78 * gib}
    f = pt.by_bytes(runs, 100_000, target)
    assert f["parts"]["beam"]["per_1000_docs"] == pytest.approx(0.8) and f["parts"]["beam"]["per_gib"] == pytest.approx(100)
    assert f["parts"]["query_servers"]["per_gib"] == pytest.approx(0, abs=1e-9)
    assert f["build_cpu"]["value"] == pytest.approx(80 + 47 + 25)
    assert f["build_cpu"]["low"] == pytest.approx(80 + 33 + 25) and f["build_cpu"]["high"] == pytest.approx(80 + 78 + 25)
    assert f["build_time"]["value"] == pytest.approx(f["build_cpu"]["value"] / 1.5)
    # nothing without the bytes at the target, or without index growth recorded
    assert pt.by_bytes(runs, 100_000, None) == {}
    assert pt.by_bytes([_run(n, 1.0, 1.0) for n in SIZES], 100_000, target) == {}


def test_the_build_time_stays_open_where_the_forecast_by_bytes_is_further_than_the_goal():
    from dragnet.forecast import extend as ext
    f = {"quantities": {"build_time": {"prediction": {"value": 67.0},
                                       "models": {m: {"prediction": {"value": v}} for m, v in
                                                  (("linear", 67.0), ("n log n", 70.0), ("power", 72.0))},
                                       "choice": {"chosen": "linear", "held_out": {"linear": {"error": 0.05}}}}},
         "by_bytes": {"build_time": {"value": 80.0}}}
    g = ext.open_goals({"javascript": f})
    assert [x["quantity"] for x in g] == ["build_time"] and g[0]["by_bytes_apart"] == pytest.approx(80 / 67 - 1)
    assert not ext.load_only(g[0])
    f["by_bytes"]["build_time"]["value"] = 70.0
    assert ext.open_goals({"javascript": f}) == []
    del f["by_bytes"]
    assert ext.open_goals({"javascript": f}) == []


def test_a_recorded_back_test_gets_its_forecast_by_bytes_from_the_one_shard_sweeps_bytes(tmp_path):
    docs = Path(__file__).resolve().parent.parent / "docs/studies/forecast/bt32-small-quiet"
    out = fr.from_sweep(docs, fr.target_from_docs(100_000), out_dir=tmp_path)
    f = out["forecasts"][""]["javascript"]
    bb, parts = f["by_bytes"], f["quantities"]["disk_growth"]["parts"]
    # the bytes at the target are the disk forecast's index files, with the side-by-side excess
    assert bb["index_bytes"]["value"] == pytest.approx(parts["index_files"]["prediction"]["value"]
                                                       + parts["side_by_side"]["extra_per_doc"] * 100_000)
    assert bb["build_cpu"]["low"] <= bb["build_cpu"]["value"] <= bb["build_cpu"]["high"]
    check = out["backtest"]["javascript"]["build_cpu"]
    assert check["by_bytes"]["predicted"] == pytest.approx(bb["build_cpu"]["value"])
    assert abs(check["by_bytes"]["error"]) < 0.15                # −6.6 % here; the total fit −21.9 %
    from dragnet.report import forecast_report
    from dragnet.report.render import text
    lines = text.forecast(forecast_report.build(out)).splitlines()
    assert len([x for x in lines if x.strip().startswith("by bytes")]) == 2
    assert any(x.startswith("back-test javascript build_cpu") and "(by bytes: " in x for x in lines)
