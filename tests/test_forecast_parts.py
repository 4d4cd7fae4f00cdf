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
