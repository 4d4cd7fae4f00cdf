"""benchmarks/beam_activity_overhead/run.py: the probe's cost from builds with and without it, and from the
segments of one build where it works and rests (pure parts, no CouchDB)."""

import importlib.util
import math
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("beam_overhead_run",
                                                  ROOT / "benchmarks" / "beam_activity_overhead" / "run.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _build(cpu, couchjs):
    return {"cpu_s": cpu, "by_process": {"beam.smp": cpu - couchjs, "couchjs": couchjs, "sh": 0.0}}


def test_per_query_server_cancels_a_machine_that_runs_slower(bench):
    # the second round ran 30% slower throughout (beam and couchjs alike): per query-server second, the probe's
    # 2% stays 2%, while the plain ratio would read it as +33%
    rounds = [{"without": _build(4.0, 1.0), "probe": _build(4.08, 1.0)},
              {"without": _build(4.0, 1.0), "probe": _build(4.08 * 1.3, 1.3)},
              {"without": _build(5.0, 1.25), "probe": _build(5.1, 1.25)}]
    iv = bench.per_query_server(rounds, "probe")
    assert iv.ratio == pytest.approx(1.02, rel=1e-9)
    assert iv.n == 3


def test_per_query_server_is_none_without_a_query_server(bench):
    rounds = [{"without": {"cpu_s": 3.0, "by_process": {"beam.smp": 3.0}},
               "probe": {"cpu_s": 3.1, "by_process": {"beam.smp": 3.1}}}]
    assert bench.per_query_server(rounds, "probe") is None


def test_segmented_source_replaces_only_the_loop(bench, tmp_path):
    plain = bench.beam_probe.SOURCE.read_text()
    src = bench.segmented_source(7, "off", tmp_path).read_text()
    assert "segment(Begun, Period, OnMs, off, 1)" in src and "K rem 7" in src
    assert "after gap(Period, OnMs) ->" in plain and "after gap(Period, OnMs) ->" not in src
    # everything else of the probe is its own text: what it samples, how it reports
    for part in ("sample(#{node := Node", "report(#{node := Node} = S) ->", "window_end(States, _, OnMs) ->"):
        assert plain.count(part) == src.count(part) == 1


def _mark(t, beam_s, qs):
    return {"t": t, "beam_s": beam_s, "qs": qs}


def test_segment_figures_count_a_new_query_server_from_zero(bench):
    marks = [("on", _mark(0.0, 10.0, {(1, "a"): (2.0, 1000)})),
             ("off", _mark(1.0, 11.0, {(1, "a"): (2.3, 4000), (2, "b"): (0.1, 500)})),
             ("on", _mark(2.1, 11.8, {(1, "a"): (2.5, 6000), (2, "b"): (0.3, 1500)}))]
    segs = bench.segment_figures(marks)
    assert [s["mode"] for s in segs] == ["on", "off"]
    assert segs[0]["beam_s"] == pytest.approx(1.0) and segs[0]["read"] == 3000 + 500
    assert segs[0]["qs_s"] == pytest.approx(0.4)
    assert segs[1]["s"] == pytest.approx(1.1) and segs[1]["read"] == 2000 + 1000
    assert segs[1]["qs_s"] == pytest.approx(0.4)


def _seg(mode, cpu, read):
    return {"mode": mode, "s": 1.0, "beam_s": cpu * 0.8, "qs_s": cpu * 0.2, "read": read}


def test_per_build_segments_leave_out_the_first_and_the_build_end(bench):
    segs = [_seg("on", 9.0, 1000),            # the first: query servers starting, left out
            _seg("off", 1.0, 1000), _seg("on", 1.1, 1000), _seg("off", 2.0, 2000), _seg("on", 2.2, 2000),
            _seg("off", 0.5, 100)]            # the build ended in it
    on, off = bench.per_build_segments(segs)
    assert on / off == pytest.approx(1.1)
    assert bench.per_build_segments(segs[:2]) is None      # no working segment after the first
    # the probe's own 0.6 s over 3 s of working: the 2 s kept get 0.4 s of it
    on, off = bench.per_build_segments(segs, probe_cpu_s=0.6)
    assert on == pytest.approx((1.1 + 2.2 + 0.4) / 3000) and off == pytest.approx(3.0 / 3000)


def test_summarize_segments_recomputes_from_the_segments(bench, capsys):
    builds = []
    for i, cost in enumerate((1.02, 1.03, 1.01, 1.02)):
        segs = [_seg("on", 5.0, 1000)] + [_seg(m, (cost if m == "on" else 1.0) * k, 1000 * k)
                                          for k in (1, 2) for m in ("off", "on")]
        builds.append({"build": i, "cpu_s": 10.0, "probe_cpu_s": 0.1, "segments": segs})
    run = {"view": "javascript", "period_ms": 200, "segment_periods": 5, "builds": builds,
           "load": [[0.5, 0, 0], [0.7, 0, 0]]}
    iv = bench.summarize_segments(run)
    assert iv.ratio == pytest.approx(math.exp(sum(map(math.log, (1.02, 1.03, 1.01, 1.02))) / 4))
    assert iv.n == 4 and iv.low < iv.ratio < iv.high < 1.05
    assert "the probe working / resting" in capsys.readouterr().out


def test_pool_segmented_joins_the_builds_and_refuses_other_segments(bench):
    a = {"view": "javascript", "period_ms": 200, "segment_periods": 10, "builds": [{"build": 0}],
         "load": [[1, 0, 0], [2, 0, 0]]}
    b = {**a, "builds": [{"build": 0}, {"build": 1}], "load": [[3, 0, 0], [4, 0, 0]]}
    pooled = bench.pool_segmented([a, b])
    assert len(pooled["builds"]) == 3 and pooled["load"] == [[1, 0, 0], [4, 0, 0]] and pooled["pooled"] == 2
    with pytest.raises(SystemExit, match="segment length"):
        bench.pool_segmented([a, {**b, "segment_periods": 5}])
    with pytest.raises(SystemExit, match="segmented runs only"):
        bench.pool_segmented([a, {"view": "javascript", "rounds": []}])
