"""The growth shape chosen by the sweep's held-out sizes (dragnet.forecast.choice) and the sweep that goes on until
it can decide (dragnet.forecast.extend): pure, but for one live test of a size added to a recorded sweep."""

import json
import os
import math
import random
from pathlib import Path

import pytest

from dragnet.forecast import choice as ch
from dragnet.forecast import model as fc
from dragnet.forecast import run as fr
from dragnet.results import schema as _schema

# issue 32's sweep: a 16-view design document whose docs/s fell at every doubling (7,995, 5,664, 3,660, 2,645),
# built for real at 100,000 documents in 86 s
ISSUE = [(2500, 2500 / 7995), (5000, 5000 / 5664), (10000, 10000 / 3660), (20000, 20000 / 2645)]


def test_the_held_out_sizes_choose_the_power_where_the_fixed_shape_missed():
    e = fc.quantity_forecast(ISSUE, "build_time", 100_000)
    c = e["choice"]
    assert c["fixed"] == fc.NLOGN and c["chosen"] == fc.POWER and c["told_apart"]
    assert c["held_out"][fc.POWER]["error"] < c["held_out"][fc.NLOGN]["error"] - c["margin"]
    assert e["prediction"]["model"] == fc.POWER and e["fit"]["model"] == fc.POWER
    assert abs(e["prediction"]["value"] / 86 - 1) < 0.15        # the fixed n log n said 47 s: −45 %
    assert e["models"][fc.NLOGN]["prediction"]["value"] < 50
    assert "power predicted the held-out sizes best" in c["reason"] and "n log n" in c["reason"]
    assert any("models disagree" in w and "power predicted" in w for w in e["warnings"])
    # each size but the smallest held out, fitted on the three others, its error against the build
    folds = c["held_out"][fc.POWER]["folds"]
    assert [f["docs"] for f in folds] == [20000, 10000, 5000]
    assert all(f["docs"] not in f["fitted_on"] and len(f["fitted_on"]) == 3 for f in folds)
    f0 = folds[0]
    assert f0["error"] == (f0["predicted"] - f0["actual"]) / f0["actual"]
    assert c["held_out"][fc.POWER]["error"] == sum(abs(f["error"]) for f in folds) / 3


def test_a_line_is_told_from_n_log_n_and_wins():
    pts = [(n, 2.0 + 1e-3 * n) for n in (2500, 5000, 10000, 20000, 40000)]
    c = ch.choose(pts, fc.GROWING, fc.NLOGN)
    assert c["chosen"] == fc.LINEAR and c["told_apart"]
    assert c["held_out"][fc.LINEAR]["error"] < 1e-9 < c["held_out"][fc.NLOGN]["error"] - ch.TIE


def test_the_fixed_shape_stays_when_the_sweep_cannot_tell():
    # three sizes: nothing can be held out
    few = ch.choose(ISSUE[:3], fc.GROWING, fc.NLOGN)
    assert few["chosen"] == fc.NLOGN and not few["told_apart"] and "none can be held out" in few["reason"]
    assert few["tied"] == list(fc.GROWING) and all(v["error"] is None for v in few["held_out"].values())
    # repeats that spread more than the shapes differ: the margin is the builds' own spread, a tie
    rng = random.Random(7)
    noisy = [(n, 1e-4 * n * math.log(n) * (1 + rng.choice((-0.2, 0.2)))) for n in (5000, 10000, 20000, 40000)
             for _ in (0, 1)]
    c = ch.choose(noisy, fc.GROWING, fc.POWER)
    assert c["margin"] >= 0.15 and c["chosen"] == fc.POWER and not c["told_apart"]
    assert "cannot tell them apart" in c["reason"] or "a tie" in c["reason"]


def test_forecast_json_records_the_choice_and_old_files_still_load(tmp_path):
    assert fc.SCHEMA == "dragnet.forecast/2"
    # a forecast written before the choice (dragnet.forecast/1, committed evidence) reads and renders
    old = Path(__file__).resolve().parent.parent / "docs/studies/forecast/backtest5-200k/forecast.json"
    assert _schema.read_json(old)["schema"] == "dragnet.forecast/1"
    assert len(fr.find_forecasts([old])) == 1
    from dragnet.report.forecast_report import build
    from dragnet.report.render.text import forecast as render
    assert "build_time" in render(build(fr.find_forecasts([old])[0]))
    out = {"schema": fc.SCHEMA, "forecasts": {"": {"javascript": {"quantities": {
        "build_time": fc.quantity_forecast(ISSUE, "build_time", 100_000)}}}}}
    _schema.write(tmp_path / fc.SUMMARY, out)
    back = json.loads((tmp_path / fc.SUMMARY).read_text())
    held = back["forecasts"][""]["javascript"]["quantities"]["build_time"]["choice"]["held_out"]
    assert set(held) == set(fc.GROWING) and all(v["error"] > 0 for v in held.values())


# ---- the sweep that goes on until it can decide (dragnet.forecast.extend)

from dragnet.forecast import extend as ext  # noqa: E402
from dragnet.report.forecast_report import describe_step  # noqa: E402


def _forecasts(pts, target=100_000):
    return {"": {"javascript": {"quantities": {"build_time": fc.quantity_forecast(pts, "build_time", target)}}}}


def test_undecided_shapes_build_the_next_doubling_within_the_budget():
    big = _forecasts(ISSUE, 1_000_000)     # 40,000 documents are less than a fifth of the target
    step = ext.decide(big, [p[0] for p in ISSUE], spent_s=60, budget_s=600, max_docs=10**6,
                      target_docs=1_000_000, top_seconds=30, growth=2.8)
    (g,) = step["undecided"]
    assert g["quantity"] == "build_time" and g["spread"] > 0.15
    assert step["stop"] is None and step["next"] == 40_000 and step["next_cost_s"] == 30 * 2.8
    # the same, over budget: it stops and says what the next size would cost
    spent = ext.decide(big, [p[0] for p in ISSUE], spent_s=560, budget_s=600, max_docs=10**6,
                       target_docs=1_000_000, top_seconds=30, growth=2.8)
    assert spent["stop"] == "budget"
    line = describe_step(spent)
    assert "budget" in line and "the next size 40,000 would cost about 84 s" in line and "build_time" in line
    # nor beyond the data
    assert ext.decide(big, [p[0] for p in ISSUE], spent_s=0, budget_s=600, max_docs=30_000,
                      target_docs=1_000_000, top_seconds=30, growth=2.8)["stop"] == "data"


def test_the_sweep_stops_at_a_fifth_of_the_target_and_points_at_chase():
    # the issue's sweep, 2,500-20,000 for 100,000: 40,000 would be more than a fifth, whatever the budget
    step = ext.decide(_forecasts(ISSUE), [p[0] for p in ISSUE], spent_s=60, budget_s=10**6, max_docs=10**6,
                      target_docs=100_000, top_seconds=30, growth=2.8)
    (g,) = step["undecided"]
    assert g["quantity"] == "build_time" and g["spread"] > 0.15       # linear 41 s … power 80 s
    assert step["stop"] == "fifth" and step["next"] == 40_000
    line = describe_step(step)
    assert line.startswith("the sweep stopped at a fifth of the target: the next size 40,000 is more than a fifth "
                           "of the target (100,000 documents), the most a sweep builds; --chase decides the build "
                           "time from one shard of the target; open: javascript build_time")
    assert line.endswith("the next size, 40,000 documents, would cost about 84 s")
    # a size of exactly a fifth is still built
    assert ext.decide(_forecasts(ISSUE), [p[0] for p in ISSUE], spent_s=60, budget_s=10**6, max_docs=10**6,
                      target_docs=200_000, top_seconds=30, growth=2.8)["stop"] is None
    # the build time left to --chase: only the sizes hold it, and the line does not point at --chase
    sizes = {"": {"javascript": {"quantities": {"index_compacted": fc.quantity_forecast(ISSUE, "index_compacted",
                                                                                         100_000)}}}}
    step = ext.decide(sizes, [p[0] for p in ISSUE], spent_s=60, budget_s=10**6, max_docs=10**6,
                      target_docs=100_000, top_seconds=30, growth=2.8, settled=ext.BY_CHASE)
    assert step["stop"] == "fifth" and "--chase" not in step["reason"]


def test_a_sweep_whose_shapes_agree_is_decided():
    line = [(n, 0.5 + 4e-4 * n) for n in (2500, 5000, 10000, 20000)]
    f = _forecasts(line)
    # a line's n log n and power stay near it at 5× the sweep: within 15 %
    spread = ext.open_goals(f[""])
    step = ext.decide(f, [2500, 5000, 10000, 20000], spent_s=10, budget_s=600, max_docs=100_000,
                      target_docs=100_000, top_seconds=5, growth=2.0)
    assert spread == [] and step["stop"] == "decided" and step["undecided"] == []
    # nothing is open, so no next size is worth its cost: the line does not offer one
    assert describe_step(step).startswith("the sweep decided") and "would cost" not in describe_step(step)


def test_a_sweep_of_given_sizes_says_what_larger_sweep_would_decide(tmp_path):
    step = ext.decide(_forecasts(ISSUE, 1_000_000), [p[0] for p in ISSUE], spent_s=0, budget_s=float("inf"),
                      max_docs=999_999, target_docs=1_000_000, top_seconds=30, growth=2.8)
    given = ext.given_sizes(step)
    assert given["stop"] == "sizes" and given["next"] == 40_000
    line = describe_step(given)
    assert line.startswith("the sweep could not decide: the sweep ran the sizes it was given (2,500, 5,000, 10,000, "
                           "20,000); undecided, it would build 40,000 documents next; open: javascript build_time")
    assert line.endswith("the next size, 40,000 documents, would cost about 84 s")
    # a decided sweep is left as it is
    decided = ext.decide(_forecasts([(n, 0.5 + 4e-4 * n) for n in (2500, 5000, 10000, 20000)]),
                         [2500, 5000, 10000, 20000], spent_s=0, budget_s=float("inf"), max_docs=99_999,
                         target_docs=100_000, top_seconds=5, growth=2.0)
    assert ext.given_sizes(decided) == decided and decided["stop"] == "decided"
    # a re-forecast records it, and the report prints it
    folder = Path(__file__).resolve().parent.parent / "docs" / "studies" / "forecast" / "bt32-small"
    out = fr.from_sweep(folder, fr.target_from_docs(50_000, "30541511", 8), out_dir=tmp_path)
    (rec,) = out["sweep_steps"]
    # 1,250-10,000 for 50,000: the next doubling would pass a fifth of the target
    assert rec["stop"] == "fifth" and rec["next"] == 20_000 and rec["budget_s"] is None
    assert {(g["language"], g["quantity"]) for g in rec["undecided"]} >= {("javascript", "build_time")}
    from dragnet.report import forecast_report
    from dragnet.report.render import text
    shown = text.forecast(forecast_report.build(_schema.read_json(tmp_path / fc.SUMMARY)))
    assert "the sweep stopped at a fifth of the target: the next size 20,000 is more than a fifth" in shown


def _shares(f, per_size):
    f[""]["javascript"]["quantities"]["build_time"]["cores_share"] = {"per_size": per_size}
    return f


def test_a_moving_cores_share_leaves_the_build_time_undecided():
    line = [(n, 0.5 + 4e-4 * n) for n in (2500, 5000, 10000, 20000)]
    # the shapes agree, but the builds got 0.54-1.33 of a core: the wall times carry the machine's load
    moved = _shares(_forecasts(line), {"2500": 0.54, "5000": 0.60, "10000": 1.03, "20000": 1.33})
    step = ext.decide(moved, [2500, 5000, 10000, 20000], spent_s=10, budget_s=600, max_docs=100_000,
                      target_docs=100_000, top_seconds=5, growth=2.0)
    (g,) = step["undecided"]
    assert g["quantity"] == "build_time" and g["spread"] < 0.15 and g["held_out"] < 0.15
    assert abs(g["cores_share_moved"] - (1.33 / 0.54 - 1)) < 1e-9 and g["cores_share"] == [0.54, 1.33]
    # only the load holds it open: a larger size would not settle it, so --sizes auto stops and says so
    assert step["stop"] == "load" and step["next"] == 40_000
    shown = describe_step(ext.given_sizes(step))
    assert shown.startswith("the sweep stopped at the machine's load: only the machine's load holds")
    assert "the builds' share of the cores moved 146% (0.54–1.33 of a core" in shown
    assert "the next size, 40,000 documents, would cost about 10 s" in shown
    # a share within the goal (1.14×) leaves it decided, and is said nowhere
    steady = _shares(_forecasts(line), {"2500": 1.00, "5000": 1.05, "10000": 1.10, "20000": 1.14})
    assert ext.decide(steady, [2500, 5000, 10000, 20000], spent_s=10, budget_s=600, max_docs=100_000,
                      target_docs=100_000, top_seconds=5, growth=2.0)["stop"] == "decided"
    # the peak disk and the index size are not held to the cores' share
    assert ext.share_moved({}) is None


def _waited(f, slowed):
    f[""]["javascript"]["quantities"]["build_time"]["contention"] = {"slowed": slowed}
    return f


def test_builds_that_waited_for_a_cpu_leave_the_build_time_open():
    line = [(n, 0.5 + 4e-4 * n) for n in (2500, 5000, 10000, 20000)]
    kw = dict(spent_s=10, budget_s=600, max_docs=100_000, target_docs=100_000, top_seconds=5, growth=2.0)
    step = ext.decide(_waited(_forecasts(line), 3.8), [2500, 5000, 10000, 20000], **kw)
    (g,) = step["undecided"]
    assert g["quantity"] == "build_time" and g["slowed"] == 3.8 and step["stop"] == "load"
    assert "the builds' threads were ready for 4.8× the CPU they got" in describe_step(step)
    # within the goal (ready for 1.1× what they got): decided
    assert ext.decide(_waited(_forecasts(line), 0.1), [2500, 5000, 10000, 20000], **kw)["stop"] == "decided"
    # shapes that disagree as well: a larger size may still settle them, so the sweep goes on
    both = ext.decide(_waited(_forecasts(ISSUE, 1_000_000), 3.8), [p[0] for p in ISSUE],
                      **{**kw, "top_seconds": 30, "target_docs": 1_000_000})
    assert both["stop"] is None and both["next"] == 40_000 and not ext.load_only(both["undecided"][0])


def test_the_ninth_back_test_said_decided_and_now_is_not(tmp_path):
    # recorded: the shapes agreed on 20,000 large documents (13 %) while the cores' share went 0.54-1.33
    folder = Path(__file__).resolve().parent.parent / "docs" / "studies" / "forecast" / "bt32-large"
    was = _schema.read_json(folder.parent / "backtest32-large20k" / fc.SUMMARY)["sweep_steps"][-1]
    assert was["stop"] == "decided" and was["undecided"] == []
    out = fr.from_sweep(folder, fr.target_from_docs(20_000, "686184135", 8), out_dir=tmp_path)
    (step,) = out["sweep_steps"]
    (g,) = [g for g in step["undecided"] if g["quantity"] == "build_time"]
    assert g["spread"] < 0.15 and 1.4 < g["cores_share_moved"] < 1.5
    # its builds also waited for a CPU: at 500 documents they got 0.53 of a core with threads ready for both
    assert 2.7 < g["slowed"] < 2.8
    # and the forecast by bytes is 23 % from it: not the load alone, so not "load" but undecided on its sizes
    assert 0.2 < g["by_bytes_apart"] < 0.25
    # 500-4,000 for 20,000: the next doubling would pass a fifth of the target
    assert step["stop"] == "fifth" and step["next"] == 8_000


def test_the_twelfth_back_test_said_decided_on_a_steady_low_share_and_now_stops_at_the_load(tmp_path):
    # recorded: every size got 0.37-0.43 of a core (moved 14 %, inside the goal) under other sessions' load,
    # so it said "decided"; the target got 1.07 of a core and built in 572 s against 1,428 s forecast
    folder = Path(__file__).resolve().parent.parent / "docs" / "studies" / "forecast" / "bt32-large50k"
    was = _schema.read_json(folder.parent / "backtest32-large50k" / fc.SUMMARY)
    assert was["sweep_steps"][-1]["stop"] == "decided"
    assert not was["backtest"]["javascript"]["build_time"]["inside"]
    out = fr.from_sweep(folder, fr.target_from_docs(50_000, str(was["target"]["db_bytes"]), 8), out_dir=tmp_path)
    (step,) = out["sweep_steps"]
    (g,) = [g for g in step["undecided"] if g["quantity"] == "build_time"]
    assert g["spread"] < 0.15 and (g["cores_share_moved"] or 0) < 0.15 and 3.5 < g["slowed"] < 4.5
    # the disk the build adds misses by 12 % (its peak held; 22 % while the compaction files were fitted through
    # the one-shard builds): its shapes 18 % apart, their held-out error over 40 %, so it is open too, and the
    # sweep stops at a fifth, not at the load alone
    (d,) = [g for g in step["undecided"] if g["quantity"] == "disk_growth"]
    assert 0.17 < d["spread"] < 0.2 and d["held_out"] > 0.4 and step["stop"] == "fifth"
    assert out["backtest"]["javascript"]["disk_growth"]["error"] == pytest.approx(-0.123, abs=0.005)
    assert abs(out["backtest"]["javascript"]["peak_disk"]["error"]) < 0.10
    bt = out["forecasts"][""]["javascript"]["quantities"]["build_time"]
    assert {c["ready"] for c in bt["contention"]["per_size"].values()} == {2}
    assert any("waited for a CPU" in w for w in bt["warnings"])
    # the interval now reaches down to the CPU-seconds over both cores, and holds the real build
    check = out["backtest"]["javascript"]["build_time"]
    assert check["inside"] and 550 < check["actual"] < 600
    assert bt["prediction"]["low"] == pytest.approx(
        out["forecasts"][""]["javascript"]["quantities"]["build_cpu"]["prediction"]["low"] / 2)


def test_the_fourteenth_back_test_on_a_quiet_machine_decides_its_build_time_not_its_disk_growth(tmp_path):
    # recorded on a quiet machine: every build at q=8 got 1.92-1.93 of the 2 cores its threads were ready for
    folder = Path(__file__).resolve().parent.parent / "docs" / "studies" / "forecast" / "bt32-large100k"
    out = fr.from_sweep(folder, fr.target_from_docs(100_000, "3435632327", 8), out_dir=tmp_path)
    (step,) = out["sweep_steps"]
    # the disk the build adds came within 6.3 %, but its shapes were 19 % apart and held out 23 % off: the
    # sweep could not vouch for it
    (d,) = step["undecided"]
    assert d["quantity"] == "disk_growth" and 0.18 < d["spread"] < 0.19 and 0.22 < d["held_out"] < 0.23
    assert step["stop"] == "fifth" and "--chase" not in step["reason"]
    bt = out["forecasts"][""]["javascript"]["quantities"]["build_time"]
    assert 0.03 < bt["contention"]["slowed"] < 0.05
    assert not any("waited for a CPU" in w or "loaded machine" in w
                   for w in bt["warnings"] + out["forecasts"][""]["javascript"]["warnings"])
    check = out["backtest"]["javascript"]["build_time"]
    assert check["inside"] and abs(check["error"]) < 0.15 and 530 < check["actual"] < 550


@pytest.mark.live
def test_live_a_size_added_to_a_recorded_sweep_joins_it(live_url, tmp_path):
    from dragnet.bench import run as b
    from dragnet.bench import sizes as sz
    from dragnet.couchdb.client import connect

    db = f"dragnet_test_extend_{os.getpid()}"
    data = sz.generate_source(1600, tmp_path / "data")
    config = b.BenchConfig(url=live_url, db=db, languages=["javascript"], baseline=False, ceiling=False, q=1,
                           data=str(data), results_dir=str(tmp_path / "fc" / "sweep"))
    try:
        sz.run_sweep(config, [200, 400, 800], build=fr.sweep_build())
        summary, manifests = fr.add_size(config, 1600, build=fr.sweep_build())
        assert summary["sizes"] == [200, 400, 800, 1600] and sorted(manifests) == [200, 400, 800, 1600]
        again, again_m = sz.load(tmp_path / "fc" / "sweep")
        assert again["sizes"] == [200, 400, 800, 1600] and sorted(again["per_size"]) == ["1600", "200", "400", "800"]
        out = fr.finish(summary, manifests, target=fr.target_from_docs(20_000), folder=tmp_path / "fc")
        e = out["forecasts"][""]["javascript"]["quantities"]["build_time"]
        assert e["points"][-1][0] == 1600 and all(v["error"] is not None for v in e["choice"]["held_out"].values())
        step = fr.next_step(out, manifests, None, spent_s=0, budget_s=1e6, max_docs=20_000, target_docs=20_000)
        top = sum(fc.sweep_seconds(r) for r in sz.sweep_runs({1600: manifests[1600]}) if r["status"] == "ok")
        assert step["next"] == 3200 and step["next_cost_s"] >= top > 0
        # "load" where the machine's other work held the cores while the builds' threads waited (CI is shared)
        assert step["stop"] in (None, "decided", "load")
        if step["stop"] == "load":
            assert step["undecided"] and all(ext.load_only(g) for g in step["undecided"])
    finally:
        couch = connect(live_url)
        for n in (200, 400, 800, 1600):
            couch.request("DELETE", f"/{db}-{n}", ok=(200, 202, 404))


def test_a_size_where_the_quantity_had_not_begun_is_not_held_out():
    # bt49-f's one-shard compaction files: none at 2,500, a file just opened at 5,000 (51 bytes)
    pts = [(2500, 0.0), (5000, 51.0), (10000, 25643368.0), (20000, 98269409.0)]
    assert ch.folds(pts) == [20000, 10000]
    c = ch.choose(pts, fc.GROWING, fc.POWER)
    assert all(f["docs"] != 5000 for s in c["held_out"].values() for f in s["folds"])
    assert all(s["error"] < 1 for s in c["held_out"].values())          # 36,335 (3,633,524 %) with it
    e = fc.quantity_forecast(pts, "compaction", 12500)
    assert e["prediction"]["high"] < 10 * 98269409.0                    # 1.4 TB with it
    # a quantity that grows from small values keeps every fold
    assert ch.folds([(n, 1e-3 * n) for n in (2500, 5000, 10000, 20000)]) == [20000, 10000, 5000]


def test_the_disk_a_build_adds_is_a_goal_of_its_own_its_shaped_part_against_the_whole():
    # a growth whose shapes disagree at the target (a line against a power through a sweep that bends)
    bent = [(n, 2e4 * n ** 1.15) for n in (2500, 5000, 10000, 20000)]
    growth = fc.quantity_forecast(bent, "disk_growth", 100_000)
    spread, _ = ext._spread(growth)
    assert spread > ext.GOALS["disk_growth"]
    grown = growth["prediction"]["value"]
    # against a peak that holds a database four times its size the same bytes are inside the peak's goal
    peak = {"prediction": {"value": 5 * grown}}
    open_ = {g["quantity"]: g for g in ext.open_goals({"javascript": {"quantities": {"disk_growth": growth,
                                                                                    "peak_disk": peak}}})}
    assert set(open_) == {"disk_growth"} and open_["disk_growth"]["spread"] == pytest.approx(spread)
    # where the growth has parts, the shapes forecast its index files only: the spread is a share of the whole
    assert spread / 4 < ext.GOALS["disk_growth"] < spread / 1.5
    for whole, opened in ((4 * grown, []), (1.5 * grown, ["disk_growth"])):
        parts = {"parts": {"index_files": growth}, "prediction": {**growth["prediction"], "value": whole}}
        got = ext.open_goals({"javascript": {"quantities": {"disk_growth": parts, "peak_disk": peak}}})
        assert [g["quantity"] for g in got] == opened
        assert all(g["spread"] == pytest.approx(spread * grown / whole) for g in got)


def test_the_disk_growth_is_open_where_the_two_readings_of_updaters_side_by_side_lie_beyond_the_goal():
    mib = 1024 ** 2
    # index files whose shapes agree at the target: 8 shards alone, 500 MiB
    alone = 500 * mib
    pred = {"docs": 100_000, "value": alone, "low": alone, "high": alone, "model": "linear"}
    line = {"prediction": pred, "models": {m: {"prediction": pred} for m in fc.GROWING}, "choice": {}}

    def growth(extra_per_doc: float, ratio: float, measured: bool = True) -> dict:
        files = alone + extra_per_doc * 100_000
        return {"prediction": {**line["prediction"], "value": files * 9 / 8},
                "parts": {"q": 8, "compacted_at_once": 1, "index_files": line,
                          "side_by_side": {"extra_per_doc": extra_per_doc, "ratio": ratio,
                                           "readings": {"per_doc": files * 9 / 8, "ratio": alone * ratio * 9 / 8},
                                           "alone_measured": measured}}}

    def opened(g: dict) -> dict:
        return {x["quantity"]: x for x in ext.open_goals({"javascript": {"quantities": {
            "disk_growth": g, "peak_disk": {"prediction": {"value": g["prediction"]["value"] + 200 * mib}}}}})}

    # aj's sweep: 8 shards of 2,500 wrote 1.40× one alone; as 1.54 KiB a document, 1.21× one alone at the target
    # (858 MiB) where the ratio says 993 (the target's were 1,048): 16 % of the growth apart
    aj = opened(growth(0.21 * alone / 100_000, 1.4))
    assert set(aj) == {"disk_growth", "peak_disk"}
    share = (1.4 - 1.21) / 1.21
    assert aj["disk_growth"]["side_by_side_apart"] == pytest.approx(share)
    assert aj["disk_growth"]["spread"] < ext.GOALS["disk_growth"] and not ext.load_only(aj["disk_growth"])
    # the two readings agree (no excess, or an excess per document that is the ratio at the target): decided
    assert opened(growth(0.0, 1.0)) == {}
    assert opened(growth(0.16 * alone / 100_000, 1.16)) == {}
    # one shard alone at the sweep's shard size read from the fit below its sizes (q=16 at a fifth of 100,000):
    # its ratio is no reading (ak: 1.36, the target's 1.13; by the excess per document +1.0 %)
    assert opened(growth(0.21 * alone / 100_000, 1.4, measured=False)) == {}
