"""The growth shape chosen by the sweep's held-out sizes (dragnet.forecast.choice), pure: no server."""

import json
import math
import random
from pathlib import Path

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
    old = Path(__file__).resolve().parent.parent / "docs/forecast/backtest5-200k/forecast.json"
    assert _schema.read_json(old)["schema"] == "dragnet.forecast/1"
    assert len(fr.find_forecasts([old])) == 1
    from dragnet.report.console import render_forecast
    assert "build_time" in render_forecast(fr.find_forecasts([old])[0])
    out = {"schema": fc.SCHEMA, "forecasts": {"": {"javascript": {"quantities": {
        "build_time": fc.quantity_forecast(ISSUE, "build_time", 100_000)}}}}}
    _schema.write(tmp_path / fc.SUMMARY, out)
    back = json.loads((tmp_path / fc.SUMMARY).read_text())
    held = back["forecasts"][""]["javascript"]["quantities"]["build_time"]["choice"]["held_out"]
    assert set(held) == set(fc.GROWING) and all(v["error"] > 0 for v in held.values())
