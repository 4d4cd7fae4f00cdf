"""dragnet.report.share: engine shares, the split of a build's time, gains of a switch (pure, no server)."""

import pytest

from dragnet.report import html as hr
from dragnet.report import share as sh
from dragnet.results.load import load_results


def test_share_is_one_minus_ceiling_over_engine_paired_and_not():
    s = sh.share([10.0, 10.0, 10.0], [20.0, 20.0, 20.0], [(10.0, 20.0)] * 3)
    assert (s.point, s.lo, s.hi, s.n, s.paired) == (0.5, 0.5, 0.5, 3, True)
    # unpaired: a bootstrap of the medians; the point is still the ratio of medians
    s = sh.share([10.0, 11.0, 9.0], [20.0, 22.0, 18.0, 20.0])
    assert s.point == pytest.approx(0.5) and not s.paired and s.lo <= 0.5 <= s.hi
    assert sh.share([], [20.0]) is None


def test_gain_saves_seconds_and_says_when_it_is_noise_or_capped():
    cap = sh.share([10.0, 10.0], [20.0, 20.0], [(10.0, 20.0)] * 2)
    g = sh.gain("javascript", [20.0, 20.0], "bun", [15.0, 15.0], [(20.0, 15.0)] * 2, cap=cap)
    assert g.saved_s == 5.0 and g.share.point == pytest.approx(0.25) and g.verdict == "gain"
    assert "saving 5.0 s, 25%" in g.line() and "no external engine can gain more than 50%" in g.line()
    noisy = sh.gain("javascript", [20.0, 14.0, 26.0], "bun", [19.0, 25.0, 15.0])
    assert noisy.verdict == "noise" and "within the noise" in noisy.line()
    near = sh.gain("a", [10.3, 10.3], "b", [10.1, 10.1], [(10.3, 10.1)] * 2,
                   cap=sh.share([10.0, 10.0], [10.3, 10.3], [(10.0, 10.3)] * 2),
                   b_share=sh.share([10.0, 10.0], [10.1, 10.1], [(10.0, 10.1)] * 2))
    assert near.verdict == "near ceiling" and "within 5% of the ceiling" in near.line()


def _sample(pid, t, usr, sys_=0.0, wait=0.0):
    return {"pid": pid, "t": t, "usr_pct": usr, "system_pct": sys_, "wait_pct": wait}


def _result(language, label, wall, repeat, samples, fams, bench="b1", docs=1000):
    return {"summary": {"ok": True, "wall_time_s": wall, "docs": docs, "docs_per_sec_wall": docs / wall,
                        "language": language},
            "view": {"language": language}, "machine": {"cpu_count": 2},
            "bench": {"id": bench, "language": label, "repeat": repeat, "storage_label": "disk"},
            "trigger": {"t_trigger": 100.0, "t_return": 100.0 + wall}, "pidstat_command": ["pidstat", "1"],
            "pidstat": {"samples": samples, "summary": fams}}


def test_split_weighs_samples_by_the_build_window_and_only_its_processes():
    # beam (pid 1) at 120% of a core, couchjs (pid 2) at 40% + 10% system, another process (pid 9) ignored;
    # the sample ending at 104.5 lies half inside a build that ends at 104.0
    samples = [s for t in (101.0, 102.0, 103.0, 104.0) for s in
               (_sample(1, t, 110, 10, wait=20), _sample(2, t, 40, 10), _sample(9, t, 100))]
    samples += [_sample(1, 104.5, 120), _sample(2, 104.5, 50)]
    fams = {"beam": {"pids": [1]}, "couchjs": {"pids": [2]}, "python": {"pids": [9]}}
    r = _result("javascript", "javascript", 4.0, 0, samples, fams)
    s = sh.split_of(r)
    assert s.beam_cpu_s == pytest.approx(4 * 1.2 + 0.5 * 1.2)
    assert s.qs_cpu_s == pytest.approx(4 * 0.5 + 0.5 * 0.5)
    assert s.run_queue_s == pytest.approx(4 * 0.2)
    assert s.waiting_s == pytest.approx(8.0 - 5.4 - 2.25)
    assert sum(v for k, v in s.fractions().items() if k != "run_queue") == pytest.approx(1.0)


def test_split_says_why_it_is_absent():
    r = _result("javascript", "javascript", 4.0, 0, [], {})
    r["pidstat"]["note"] = "pidstat not found (install sysstat): no process resources recorded"
    assert "pidstat not found" in sh.split_of(r)
    r = _result("javascript", "javascript", 4.0, 0, [_sample(7, 101.0, 50)], {"python": {"pids": [7]}})
    assert "no beam process" in sh.split_of(r)
    erl = _result("erlang", "erlang_baseline", 4.0, 0, [_sample(1, 101.0, 100)], {"beam": {"pids": [1]}})
    assert sh.split_of(erl).qs_cpu_s is None


def test_split_of_a_recorded_couchdb_build(fixtures_dir):
    # the real CouchDB 3.5.0 build of views/income on couchjs (no trigger times: the samples' own span)
    result = load_results([fixtures_dir / "javascript"])[0]
    s = sh.split_of(result)
    fams = result["pidstat"]["summary"]
    # the same CPU as pidstat's own averages (cpu_pct is per machine, -I) over its intervals
    assert s.beam_cpu_s == pytest.approx(fams["beam"]["cpu_pct"]["avg"] / 100 * 2 * fams["beam"]["intervals"], rel=0.01)
    assert s.qs_cpu_s == pytest.approx(fams["couchjs"]["cpu_pct"]["avg"] / 100 * 2 * fams["couchjs"]["intervals"],
                                       rel=0.01)
    assert 0 < s.qs_cpu_s < s.beam_cpu_s


def _bench(walls):
    out = []
    for label, language, ws in walls:
        fam = {"ceiling": "ceiling", "javascript": "couchjs", "bun": "dragnet-bun"}.get(language)
        for i, w in enumerate(ws):
            fams = {"beam": {"pids": [1]}, **({fam: {"pids": [2]}} if fam else {})}
            samples = [_sample(1, 101.0, 100), _sample(2, 101.0, 50)]
            out.append(_result(language, label, w, i, samples, fams))
    return out


def test_workloads_compare_every_engine_with_couchjs_the_ceiling_and_the_baseline():
    docs = _bench([("erlang_baseline", "erlang", [4.0, 4.0]), ("ceiling", "ceiling", [5.0, 5.0]),
                   ("javascript", "javascript", [10.0, 10.0]), ("bun", "bun", [6.0, 6.0])])
    (w,) = sh.workloads(docs)
    e = {x.engine: x for x in w.engines}
    assert e["bun"].x_couchjs == pytest.approx(10 / 6) and e["bun"].x_ceiling == pytest.approx(5 / 6)
    assert e["bun"].x_baseline == pytest.approx(4 / 6) and e["ceiling"].x_couchjs == pytest.approx(2.0)
    assert e["javascript"].share.point == pytest.approx(0.5) and e["javascript"].share.paired
    assert e["bun"].share.point == pytest.approx(1 - 5 / 6)
    assert e["ceiling"].share is None and e["erlang_baseline"].share is None
    (g,) = w.gains
    assert (g.a, g.b, g.saved_s) == ("javascript", "bun", 4.0) and g.share.point == pytest.approx(0.4)
    text = "\n".join(sh.lines([w]))
    assert "javascript → bun: 10.0 s → 6.0 s, saving 4.0 s, 40%" in text
    assert "no external engine can gain more than 50%" in text
    assert sh.to_json([w])[0]["engines"][0]["engine"] == "erlang_baseline"
    (section,) = hr.share_sections([w])
    assert [t["name"] for t in section.charts[0].data] == [name for _, name in sh.SPLIT_PARTS]
    assert section.charts[0].layout["barmode"] == "stack"


def test_without_a_ceiling_no_share_and_the_report_says_why():
    docs = _bench([("javascript", "javascript", [10.0, 10.0]), ("bun", "bun", [6.0, 6.0])])
    (w,) = sh.workloads(docs)
    assert all(e.share is None for e in w.engines)
    assert "no ceiling build here" in w.notes[0]
    assert w.gains[0].cap is None and "no engine can" not in w.gains[0].line()


def test_forecast_gains_at_the_targets_size_from_a_recorded_forecast():
    import json
    from pathlib import Path

    out = json.loads((Path(__file__).resolve().parent.parent / "docs" / "forecast" / "backtest-200k" /
                      "forecast.json").read_text())
    js = out["forecasts"][""]["javascript"]["quantities"]["build_time"]["prediction"]
    erl = out["forecasts"][""]["erlang_baseline"]["quantities"]["build_time"]["prediction"]
    (line,) = sh.forecast_gains(out)
    saving = 1 - erl["value"] / js["value"]
    assert line.startswith("a rebuild of 200,000 documents: ") and f"saving {saving:.0%} " in line
    assert f"[{1 - erl['high'] / js['low']:.0%} … {1 - erl['low'] / js['high']:.0%}]" in line
    assert line.endswith("within the intervals")      # the baseline's interval reaches past couchjs's


def test_forecast_gains_with_an_interval_down_to_zero_is_unbounded_not_a_crash():
    pred = {"javascript": (40.0, 0.0, 90.0), "javascript_quickjs": (30.0, 10.0, 50.0)}
    out = {"forecasts": {"": {lang: {"quantities": {"build_time": {"prediction": {
        "value": v, "low": lo, "high": hi, "docs": 5000}}}} for lang, (v, lo, hi) in pred.items()}}}
    (line,) = sh.forecast_gains(out)
    assert "saving 25% [unbounded … 89%]: within the intervals" in line     # 1 - 10 / 90


def test_split_of_a_user_given_server_takes_the_other_family_pidstat_saw():
    # goqs (--server): no registry language; its process family is the one that is neither beam nor a watcher
    samples = [s for t in (101.0, 102.0) for s in (_sample(1, t, 100), _sample(3, t, 30), _sample(8, t, 5))]
    fams = {"beam": {"pids": [1]}, "goqs": {"pids": [3]}, "pidstat": {"pids": [8]}}
    s = sh.split_of(_result("goqs", "goqs", 2.0, 0, samples, fams))
    assert s.qs_cpu_s == pytest.approx(2 * 0.3) and s.beam_cpu_s == pytest.approx(2 * 1.0)
