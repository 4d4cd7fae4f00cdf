"""dragnet.report.share: engine shares, the split of a build's time, gains of a switch (pure, no server)."""

import pytest

from dragnet.measure import decide
from dragnet.report import html as hr
from dragnet.report import share as sh


def test_share_is_one_minus_ceiling_over_engine_paired_and_not():
    s = sh.share([10.0, 10.0, 10.0], [20.0, 20.0, 20.0], [(10.0, 20.0)] * 3)
    assert (s.n, s.paired) == (3, True) and (s.point, s.lo, s.hi) == pytest.approx((0.5, 0.5, 0.5))
    # decide's interval, as every verdict: paired, the t interval of the rounds' log ratios
    iv = decide.paired_interval([10.0, 12.0, 9.0], [20.0, 22.0, 19.0], level=sh.LEVEL)
    s = sh.share([10.0, 12.0, 9.0], [20.0, 22.0, 19.0], [(10.0, 20.0), (12.0, 22.0), (9.0, 19.0)])
    assert (s.point, s.lo, s.hi) == pytest.approx((1 - iv.ratio, 1 - iv.high, 1 - iv.low)) and s.paired
    # unpaired: Welch's interval of the mean logs
    s = sh.share([10.0, 11.0, 9.0], [20.0, 22.0, 18.0, 20.0])
    iv = decide.unpaired_interval([10.0, 11.0, 9.0], [20.0, 22.0, 18.0, 20.0], level=sh.LEVEL)
    assert s.point == pytest.approx(1 - iv.ratio) and not s.paired and s.lo <= s.point <= s.hi
    assert sh.share([], [20.0]) is None


def test_gain_saves_seconds_and_says_when_it_is_noise_or_capped():
    cap = sh.share([10.0] * 3, [20.0] * 3, [(10.0, 20.0)] * 3)
    g = sh.gain("javascript", [20.0] * 3, "bun", [15.0] * 3, [(20.0, 15.0)] * 3, cap=cap)
    assert g.saved_s == 5.0 and g.share.point == pytest.approx(0.25) and g.verdict == "gain"
    assert "saving 5.0 s, 25%" in g.line() and "no external engine can gain more than 50% [50% … 50%]" in g.line()
    noisy = sh.gain("javascript", [20.0, 14.0, 26.0], "bun", [19.0, 25.0, 15.0])
    assert noisy.verdict == "noise" and "within the noise" in noisy.line()
    near = sh.gain("a", [10.3] * 3, "b", [10.1] * 3, [(10.3, 10.1)] * 3,
                   cap=sh.share([10.0] * 3, [10.3] * 3, [(10.0, 10.3)] * 3),
                   b_share=sh.share([10.0] * 3, [10.1] * 3, [(10.0, 10.1)] * 3))
    assert near.verdict == "near ceiling" and "within 5% of the ceiling" in near.line()


@pytest.mark.parametrize("runs", [1, 2])
def test_one_or_two_runs_give_a_share_and_a_saving_but_no_interval_and_no_verdict(runs):
    cap = sh.share([10.0] * runs, [20.0] * runs, [(10.0, 20.0)] * runs)
    assert cap.point == pytest.approx(0.5) and cap.lo is None and cap.hi is None and not cap.has_interval
    assert cap.format() == f"50% [n={runs}: no interval]"
    g = sh.gain("javascript", [20.0] * runs, "bun", [15.0] * runs, [(20.0, 15.0)] * runs, cap=cap)
    assert g.verdict == "too few runs" and g.share.point == pytest.approx(0.25) and g.share.lo is None
    assert "too few runs for a verdict" in g.line() and "no external engine can gain more than 50% [n=" in g.line()
    # a switch that saves more than the cap, from so few runs, says why the two disagree
    over = sh.gain("javascript", [20.0] * runs, "bun", [5.0] * runs, [(20.0, 5.0)] * runs, cap=cap)
    assert "which bounds any gain: too few or too noisy runs" in over.line()


def _cpu(interval, beam, qs=None, busy=None, helpers=0.0, wait=0.0, cores=2):
    """A results file's `cpu` record (dragnet.measure.cpu.usage with its query servers), made up."""
    by = {"beam.smp": beam, "inet_gethost": helpers, "erl_child_setup": 0.0}
    rec = {"cpu_s": beam + helpers + (qs or 0.0), "interval_s": interval, "wait_s": wait, "by_process": by,
           "cores": cores, "machine_busy_s": busy, "machine_total_s": interval * cores}
    if qs is not None:
        by["couchjs"] = qs
        rec["query_servers"] = {"cpu_s": qs, "wait_s": 0.0, "by_process": {"couchjs": qs}}
    return rec


def _result(language, label, wall, repeat, cpu, bench="b1", docs=1000):
    return {"summary": {"ok": True, "wall_time_s": wall, "docs": docs, "docs_per_sec_wall": docs / wall,
                        "language": language},
            "view": {"language": language}, "machine": {"cpu_count": 2},
            "bench": {"id": bench, "language": label, "repeat": repeat, "storage_label": "disk"},
            "trigger": {"t_trigger": 100.0, "t_return": 100.0 + wall}, "cpu": cpu}


def test_split_divides_interval_times_cores_from_the_kernels_accounting():
    r = _result("javascript", "javascript", 4.0, 0, _cpu(4.2, beam=3.0, qs=1.5, busy=7.0, helpers=0.1, wait=0.8))
    s = sh.split_of(r)
    assert (s.beam_s, s.qs_s, s.helpers_s) == (3.0, 1.5, 0.1)
    assert s.other_s == pytest.approx(7.0 - 4.6) and s.idle_s == pytest.approx(8.4 - 7.0)
    assert sum(s.seconds().values()) == pytest.approx(4.2 * 2)
    assert s.waited_s == 0.8 and s.fractions()["waited"] == pytest.approx(0.8 / 8.4)
    text = sh.split_line("javascript", sh.median_split([s]))
    assert text.startswith("javascript: query servers 18% · beam 36% · CouchDB's helpers 1% · other programs 29%")
    assert "of 4.20 s × 2 cores" in text and "waited for a core 0.80 s" in text


def test_split_says_why_it_is_absent_and_older_files_say_so_once():
    old = _result("javascript", "javascript", 4.0, 0, None)
    remote = dict(old)
    old.pop("cpu")
    assert sh.split_of(old).startswith(sh.NO_KERNEL)
    assert "not on this machine" in sh.split_of(remote)
    erl = _result("erlang", "erlang_baseline", 4.0, 0, _cpu(4.0, beam=3.0, busy=3.5))
    assert sh.split_of(erl).qs_s is None
    # a file from before the machine's figure: other programs and idle together
    mid = sh.split_of(_result("javascript", "javascript", 4.0, 0, _cpu(4.0, beam=3.0, qs=1.0)))
    assert mid.other_s is None and mid.idle_s == pytest.approx(4.0)
    assert "other programs and idle 50%" in sh.split_line("javascript", sh.median_split([mid]))
    docs = [_result("javascript", "javascript", 4.0, i, None) for i in range(2)]
    docs += [_result("ceiling", "ceiling", 2.0, i, None) for i in range(2)]
    for d in docs:
        d.pop("cpu")
    text = "\n".join(sh.lines(sh.workloads(docs)))
    assert text.count(sh.NO_KERNEL) == 1 and "ceiling, javascript: no kernel accounting" in text
    assert "pidstat" not in text


def _bench(walls):
    out = []
    for label, language, ws in walls:
        fam = {"ceiling": "ceiling", "javascript": "couchjs", "bun": "dragnet-bun"}.get(language)
        for i, w in enumerate(ws):
            out.append(_result(language, label, w, i, _cpu(w, beam=w / 2, qs=w / 4 if fam else None, busy=w)))
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
    bun = section.charts[0].data[1]["x"].index("bun")
    assert section.charts[0].data[1]["y"][bun] == pytest.approx(25.0)      # beam: 3 s of 6 s × 2 cores
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

    out = json.loads((Path(__file__).resolve().parent.parent / "docs" / "studies" / "forecast" / "backtest-200k" /
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


def test_html_puts_the_splits_of_every_couchdb_version_side_by_side():
    docs = []
    for version in ("3.5.0", "3.5.2"):
        for label, language in (("ceiling", "ceiling"), ("javascript", "javascript")):
            for i in range(2):
                r = _result(language, label, 4.0, i, _cpu(4.0, beam=2.0, qs=0.5, busy=4.0), bench=version)
                r["couchdb"] = {"version": version}
                r["bench"]["storage_label"] = f"disk couchdb={version}"
                docs.append(r)
    loads = sh.workloads(docs)
    assert len(loads) == 2
    secs = hr.share_sections(loads)
    (both,) = [s for s in secs if s.id.startswith("split-")]
    x = both.charts[0].data[0]["x"]
    assert len(x) == 4 and sum("CouchDB 3.5.0" in v for v in x) == 2 and sum("CouchDB 3.5.2" in v for v in x) == 2
    assert [t["name"] for t in both.charts[0].data] == [name for _, name in sh.SPLIT_PARTS]
