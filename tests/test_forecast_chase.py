"""`forecast --chase`: the compaction-chase model of a q-shard build (forecast.chase), its place in the sweep's
decision (forecast.extend) and in the report, and, live, its builds with smoosh held and free."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from dragnet.cli import main
from dragnet.errors import UsageError
from dragnet.forecast import chase as ch
from dragnet.forecast import extend as ext
from dragnet.forecast import side_by_side as sbs
from dragnet.results import schema as _schema

REPO = Path(__file__).resolve().parent.parent


def _b(mode, rep, cpu, wall, docs=12_500):
    # the query servers four fifths of the CPU, as on p (couchpy) and ah: beam's part, priced by one shard alone
    # (ch.ALONE_ERRORS), then moves the build time less than the goal does
    return {"mode": mode, "repeat": rep, "cpu_s": cpu, "wall_s": wall, "docs": docs, "cpu_query_servers_s": None if cpu is None else 0.8 * cpu}


# ---- the model

def test_cpu_is_q_minus_one_held_shards_and_one_chased():
    m = ch.model([_b("held", 1, 10.0, 8.0), _b("free", 1, 14.0, 10.0)], 8)
    assert m["build_cpu"]["value"] == pytest.approx(7 * 10.0 + 14.0)
    assert m["shard_docs"] == 12_500 and m["repeats"] == 1


def test_build_time_is_the_cpu_over_the_cores_the_chased_build_used():
    m = ch.model([_b("held", 1, 10.0, 8.0), _b("free", 1, 14.0, 10.0)], 8)
    assert m["cores_used"] == [pytest.approx(1.4)]
    assert m["build_time"]["value"] == pytest.approx(84.0 / 1.4)


def test_repeats_are_averaged_and_their_range_widened_by_the_back_tests_goal():
    m = ch.model([_b("free", 1, 14.0, 10.0), _b("held", 1, 10.0, 8.0),
                  _b("held", 2, 12.0, 9.0), _b("free", 2, 16.0, 10.0)], 4)
    cpu = [3 * 10 + 14, 3 * 12 + 16]
    assert m["build_cpu"]["per_repeat"] == pytest.approx(cpu)
    assert m["build_cpu"]["value"] == pytest.approx(sum(cpu) / 2)
    assert m["build_cpu"]["low"] == pytest.approx(min(cpu) * (1 - ch.BACKTESTED))
    assert m["build_cpu"]["high"] == pytest.approx(max(cpu) * (1 + ch.BACKTESTED))
    assert [b["repeat"] for b in m["builds"]] == [1, 1, 2, 2]     # the figures it came from, kept


def test_the_build_time_is_over_the_cores_the_sweep_at_the_targets_q_got():
    m = ch.model([_b("held", 1, 10.0, 8.0), _b("free", 1, 14.0, 10.0)], 8)      # chased build: 1.4 cores
    swept = ch.over_sweep_cores(m, {"2500": 1.2, "20000": 1.75}, 8)
    assert swept["build_time"]["value"] == pytest.approx(84.0 / 1.75)
    assert swept["build_cpu"] == m["build_cpu"]
    assert swept["cores"] == {"share": 1.75, "at_size": 20_000, "q": 8, "low_factor": 1.0, "high_factor": 1.75 / 1.2}
    # the interval also spans the shares the sweep's smaller sizes got: at 1.2 cores the build takes 84 / 1.2
    assert swept["build_time"]["high"] == pytest.approx(84.0 / 1.2 * (1 + ch.BACKTESTED))
    assert swept["build_time"]["low"] == pytest.approx(84.0 / 1.75 * (1 - ch.BACKTESTED))
    assert any("the sweep's 20,000 documents at q=8 got them (1.75)" in x for x in swept["limits"])
    # a largest size that got fewer cores than a smaller one lowers the low side instead
    down = ch.over_sweep_cores(m, {"2500": 1.9, "20000": 1.75}, 8, load=[1.0, 3.25])
    assert down["build_time"]["high"] == pytest.approx(84.0 / 1.75 * (1 + ch.BACKTESTED))
    assert down["build_time"]["low"] == pytest.approx(84.0 / 1.9 * (1 - ch.BACKTESTED))
    assert any("(1.75 at a 1-minute load average of 1.0–3.2)" in x for x in down["limits"])
    assert not any(x.startswith(ch.CORES_USED) for x in swept["limits"])
    # a sweep at another q, or one without CPU figures: the chased build's cores stand in
    assert ch.over_sweep_cores(m, {"20000": 1.75}, 4) is m and ch.over_sweep_cores(m, None, 8) is m


def test_a_javascript_reduce_widens_the_cpus_upper_side_and_says_why():
    plain = ch.model([_b("held", 1, 10.0, 8.0), _b("free", 1, 14.0, 10.0)], 8)
    js = ch.model([_b("held", 1, 10.0, 8.0), _b("free", 1, 14.0, 10.0)], 8, js_reduces=["by_day"])
    assert js["build_cpu"]["value"] == plain["build_cpu"]["value"]
    # an actual 30 % above the forecast's low side of a miss (k: −28.6 %) still falls inside
    assert js["build_cpu"]["high"] >= js["build_cpu"]["value"] / (1 - ch.JS_REDUCE_LOW) - 1e-9
    assert js["build_cpu"]["high"] > plain["build_cpu"]["high"]
    assert js["build_time"] == plain["build_time"]
    assert any("by_day" in x for x in js["limits"]) and not any("JavaScript" in x for x in plain["limits"])
    # the line says the bound the interval has: 43 % above, for a model that missed up to 30 % low
    assert any("widened to 43% above (the model missed by up to 30% low)" in x for x in js["limits"])


def test_free_builds_the_compaction_daemon_never_reached_are_named_in_the_limits():
    def pair(polls_free):
        return [{**_b("held", 1, 10.0, 8.0), "compaction_polls": 0},
                {**_b("free", 1, 10.5, 6.4), "compaction_polls": polls_free}]
    unchased = ch.model(pair(0), 16)
    assert any("the free builds saw no view compaction (6 s each at most" in x for x in unchased["limits"])
    # one poll that saw it, or a record without polls (older results files): nothing said
    assert not any("no view compaction" in x for x in ch.model(pair(1), 16)["limits"])
    assert not any("no view compaction" in x for x in ch.model(pair(None), 16)["limits"])


def test_a_free_build_smoosh_did_not_chase_is_priced_with_one_it_did():
    def builds(polls2):
        return [{**_b("held", 1, 10.0, 8.0), "compaction_polls": 0, "polls": 8},
                {**_b("free", 1, 20.0, 10.0), "compaction_polls": 9, "polls": 10},
                {**_b("held", 2, 10.0, 8.0), "compaction_polls": 0, "polls": 8},
                {**_b("free", 2, 12.0, 9.0), "compaction_polls": polls2, "polls": 9}]
    # the second free build saw one view compaction in 9 polls: the target's chased shard is priced by the first
    m = ch.model(builds(1), 8)
    assert m["build_cpu"]["per_repeat"] == pytest.approx([90.0, 90.0])
    assert m["build_time"]["per_repeat"] == pytest.approx([45.0, 45.0])     # the first free build's 2 cores
    assert m["unchased"] == [{"repeat": 2, "compaction_polls": 1, "polls": 9, "priced_with_repeat": 1}]
    assert any("repeat 2's (1 of its 9 polls saw a view compaction) is priced with repeat 1's" in x
               for x in m["limits"])
    # every build measured stays in the record, the unchased one too
    assert [b["cpu_s"] for b in m["builds"] if b["mode"] == "free"] == [20.0, 12.0]
    # chased through half its polls or more, each free build prices its own repeat
    both = ch.model(builds(5), 8)
    assert both["build_cpu"]["per_repeat"] == pytest.approx([90.0, 82.0]) and "unchased" not in both
    # none chased, or no polls recorded: nothing to price them with, the builds stay as measured
    none = ch.model([{**b, "compaction_polls": 0} for b in builds(0)], 8)
    assert none["build_cpu"]["per_repeat"] == pytest.approx([90.0, 82.0]) and "unchased" not in none
    bare = ch.model([{k: v for k, v in b.items() if k != "polls"} for b in builds(1)], 8)
    assert bare["build_cpu"]["per_repeat"] == pytest.approx([90.0, 82.0]) and "unchased" not in bare


def test_back_test_aq_re_forecast_prices_its_unchased_free_build_and_decides_its_build_time(tmp_path):
    # aq (3.5.0, frozen) left its build time open on the chase's own spread, 19 %: smoosh chased its first free
    # build (73 of 79 polls) and not its second (1 of 66), where it chased one shard of eight through 94-96 % of
    # each target build's polls; the target came within 5.1 %
    from dragnet.forecast import run as fr
    bt = REPO / "benchmarks" / "forecast_growth" / "chase-aq"
    out = fr.from_sweep(_copied(bt / "backtest-aq", tmp_path / "aq"), fr.target_from_docs(100_000, None, 8),
                        out_dir=tmp_path / "again")
    c = out["forecasts"][""]["javascript"]["chase"]
    assert c["unchased"] == [{"repeat": 2, "compaction_polls": 1, "polls": 66, "priced_with_repeat": 1}]
    (step,) = out["sweep_steps"]
    assert not [g for g in step["undecided"] if g["quantity"] == "build_time"]
    built = json.loads((bt / "result.json").read_text())["quantities"]["javascript"]["build_time"]["target"]
    assert c["build_time"]["low"] <= min(built) <= max(built) <= c["build_time"]["high"]
    assert all(abs(c["build_time"]["value"] / b - 1) < ch.BACKTESTED for b in built)


def test_back_test_t_says_its_chase_saw_no_compaction(tmp_path):
    from dragnet.forecast import run as fr
    folder = _copied(REPO / "benchmarks" / "forecast_growth" / "chase-t" / "backtest-t", tmp_path / "t")
    m = fr.load_chase(folder)["languages"]["javascript"]
    assert [b["compaction_polls"] for b in m["builds"] if b["mode"] == "free"] == [0, 0]
    assert any("saw no view compaction" in x for x in m["limits"])


def test_the_writers_tail_is_the_wall_after_the_last_indexer_task():
    def result(indexer_at, wall, t0=1000.0):
        polls = [{"t": t0 + i, "tasks": [{"type": "indexer"}] if i in indexer_at else
                  [{"type": "view_compaction"}]} for i in range(int(wall) + 1)]
        return {"trigger": {"t_trigger": t0}, "summary": {"wall_time_s": wall}, "polls": polls}
    # listed at 0–2 s: from 3 s on the writer alone, to the answer at 5.8 s
    assert ch.writer_tail(result({0, 1, 2}, 5.8)) == pytest.approx(2.8)
    # listed until the answer: no tail
    assert ch.writer_tail(result(set(range(7)), 6.5)) == 0.0
    # no indexer task seen, or no polls recorded: unknown, not zero
    assert ch.writer_tail(result(set(), 5.0)) is None
    assert ch.writer_tail({"trigger": {"t_trigger": 1.0}, "summary": {"wall_time_s": 3.0}}) is None


def test_held_builds_waiting_for_the_writer_say_one_shard_prices_one_writer():
    def pair(tail_s):
        return [{**_b("held", 1, 10.0, 8.0), "writer_tail_s": tail_s}, {**_b("free", 1, 10.5, 6.4)}]
    line = next(x for x in ch.model(pair(4.0), 16)["limits"] if "view writer" in x)
    assert line.startswith("the held builds spent 50%–50% of their wall time after their indexer task had left")
    assert "erred -22% to +27%" in line
    # under a tenth of the wall (3.5.0's builds), or not recorded: nothing said
    assert not any("view writer" in x for x in ch.model(pair(0.7), 16)["limits"])
    assert not any("view writer" in x for x in ch.model(pair(None), 16)["limits"])


def test_held_builds_waiting_for_the_writer_widen_the_interval_by_the_beam_errors_the_limit_quotes():
    def pair(tail_s):
        return [{**_b("held", 1, 10.0, 8.0), "writer_tail_s": tail_s, "cpu_query_servers_s": 4.0},
                {**_b("free", 1, 10.5, 6.4), "cpu_query_servers_s": 4.0}]
    m = ch.model(pair(4.0), 16)
    low, high = ch.WRITER_TAIL_ERRORS
    beam = 15 * 6.0 + 6.5          # each build's CPU less its query servers' 4 CPU-s
    w = m["writer_tail"]
    assert w["cpu_s_low"] == pytest.approx([beam / (1 + high) + 16 * 4.0])
    assert w["cpu_s_high"] == pytest.approx([beam / (1 + low) + 16 * 4.0])
    # beam's part 22 % low is past the goal's 15 % on the whole: the interval reaches it
    assert w["cpu_s_high"][0] > 160.5 * 1.15 and m["build_cpu"]["high"] == pytest.approx(w["cpu_s_high"][0])
    assert m["build_time"]["high"] == pytest.approx(w["cpu_s_high"][0] / (10.5 / 6.4))
    assert next(x for x in m["limits"] if "view writer" in x).endswith("which the interval holds")
    # no writer's tail: the goal's 15 % alone
    assert ch.model(pair(0.7), 16)["build_cpu"]["high"] == pytest.approx(160.5 * 1.15)


def test_a_chase_on_352_is_bound_by_its_writer_even_where_its_held_builds_kept_up():
    def pair():
        return [{**_b("held", 1, 10.0, 8.0), "writer_tail_s": 0.4, "cpu_query_servers_s": 4.0},
                {**_b("free", 1, 10.5, 6.4), "cpu_query_servers_s": 4.0}]
    m = ch.model(pair(), 16, couchdb={"version": "3.5.2"})
    w = m["writer_tail"]
    assert w["couchdb"] == "3.5.2" and w["share"] == pytest.approx([0.05, 0.05])
    assert m["build_cpu"]["high"] == pytest.approx(w["cpu_s_high"][0])
    line = next(x for x in m["limits"] if "view writer" in x)
    assert line.startswith("on CouchDB 3.5.2 the view writer is the slower stage")
    assert "the held builds spent 5%–5% of their wall time after their indexer task had left" in line
    (g,) = ext.open_goals(_forecast_with_open_build_time(m), ext.BY_CHASE)
    assert g["chase_writer_tail"]["couchdb"] == "3.5.2"
    # a later release too; before 3.5.2, or a version not known, only the tail says so
    assert ch.model(pair(), 16, couchdb={"version": "3.6.0"})["writer_tail"]["couchdb"] == "3.6.0"
    for couchdb in ({"version": "3.5.0"}, {"version": "3.5.1"}, {}, None):
        assert "writer_tail" not in ch.model(pair(), 16, couchdb=couchdb)


def test_before_352_one_shard_alones_beam_range_is_in_the_interval_and_opens_the_build_time_where_beam_leads():
    from dragnet.report.forecast_report import describe_step

    def pair(qs_share):
        return [{**_b("held", 1, 10.0, 8.0), "cpu_query_servers_s": 10.0 * qs_share},
                {**_b("free", 1, 14.0, 10.0), "cpu_query_servers_s": 14.0 * qs_share}]
    low, high = ch.ALONE_ERRORS
    # beam all of the CPU: the build time may be as far off as beam's part was (+66 %: its target's beam lower, au)
    m = ch.model(pair(0.0), 8, couchdb={"version": "3.5.0"})
    a = m["beam_alone"]
    assert a["beam_share"] == pytest.approx(1.0) and a["spread"] == pytest.approx(high)
    assert a["cpu_s_low"] == pytest.approx([84.0 / (1 + high)]) and a["cpu_s_high"] == pytest.approx([84.0 / (1 + low)])
    assert m["build_cpu"]["low"] == pytest.approx(84.0 / (1 + high))
    assert 84.0 / (1 + high) < 84.0 * (1 - ch.BACKTESTED)
    assert m["build_time"]["low"] == pytest.approx(84.0 / (1 + high) / 1.4)
    # its high end too: one shard alone priced beam as much as 15 % low (ar), past the goal's side
    assert 84.0 / (1 + low) > 84.0 * (1 + ch.BACKTESTED)
    assert m["build_cpu"]["high"] == pytest.approx(84.0 / (1 + low))
    line = next(x for x in m["limits"] if "one shard alone prices" in x)
    assert line.startswith("on CouchDB 3.5.0 one shard alone prices beam's part -15% to +66% off the target's")
    assert line.endswith("beam is 100% of this chase's CPU, so the build time may be 66% off, which the interval holds")
    (g,) = ext.open_goals(_forecast_with_open_build_time(m), ext.BY_CHASE)
    assert g["quantity"] == "build_time" and g["chase_beam_alone"] == a and g["spread"] == pytest.approx(high)
    assert not ext.load_only(g)
    step = ext.decide({"": _forecast_with_open_build_time(m)}, [1000, 2000], spent_s=1, budget_s=10**6,
                      max_docs=10**6, target_docs=5_000, top_seconds=1, growth=1, settled=ext.BY_CHASE)
    assert step["stop"] == "fifth" and "--chase" not in step["reason"]
    assert ("javascript build_time: by chase, one shard alone prices beam's part -15% to +66% off the target's on the "
            "back-tests before 3.5.2, and beam is 100% of its CPU: 66% (goal 15%)") in describe_step(step)
    # a target a larger sweep could still approach: no larger size settles what the chase holds open
    far = ext.decide({"": _forecast_with_open_build_time(m)}, [1000, 2000], spent_s=1, budget_s=10**6,
                     max_docs=10**6, target_docs=10**6, top_seconds=1, growth=1, settled=ext.BY_CHASE)
    assert far["stop"] == "chase" and "a larger size would not settle it" in far["reason"]
    assert describe_step(far).startswith("the sweep stopped at the chase: only the chase's own measurements")
    assert "the next size" not in describe_step(far)
    # the query servers half of it: beam's part moves the whole 25 %, open; a fifth: 9 %, decided
    assert ch.model(pair(0.5), 8)["beam_alone"]["spread"] == pytest.approx(1 / (1 - 0.5 * (1 - 1 / (1 + high))) - 1)
    quiet = ch.model(pair(0.8), 8)
    assert quiet["beam_alone"]["spread"] == pytest.approx(1 / (1 - 0.2 * (1 - 1 / (1 + high))) - 1)
    assert quiet["beam_alone"]["spread"] < ch.BACKTESTED and ext.open_goals(_forecast_with_open_build_time(quiet)) == []
    assert quiet["build_cpu"]["low"] == pytest.approx(84.0 * (1 - ch.BACKTESTED))
    # over the sweep's cores the range is held as well
    swept = ch.over_sweep_cores(m, {"20000": 1.75}, 8)
    assert swept["build_time"]["low"] == pytest.approx(84.0 / (1 + high) / 1.75)
    # from 3.5.2 the writer's range is held instead
    assert "beam_alone" not in ch.model(pair(0.0), 8, couchdb={"version": "3.5.2"})


def test_a_chase_whose_own_measurements_spread_beyond_the_goal_leaves_the_build_time_open():
    from dragnet.report.forecast_report import describe_step

    def pair(rep, held, free):
        return [{**_b("held", rep, held, 8.0)}, {**_b("free", rep, free, 6.4)}]
    tight = ch.model(pair(1, 10.0, 10.5) + pair(2, 10.2, 10.4), 16)
    assert tight["build_time"]["spread"] < 0.02 and ext.open_goals(_forecast_with_open_build_time(tight)) == []
    # two repeats a third apart: the chase cannot vouch for its value within the goal
    apart = ch.model(pair(1, 10.0, 10.5) + pair(2, 13.5, 10.5), 16)
    v, reps = apart["build_time"]["value"], apart["build_time"]["per_repeat"]
    assert apart["build_time"]["spread"] == pytest.approx(max(v / min(reps) - 1, max(reps) / v - 1))
    (g,) = ext.open_goals(_forecast_with_open_build_time(apart), ext.BY_CHASE)
    assert g["quantity"] == "build_time" and g["chase_spread"] == apart["build_time"]["spread"] > 0.15
    assert not ext.load_only(g)
    step = ext.decide({"": _forecast_with_open_build_time(apart)}, [1000, 2000], spent_s=1, budget_s=10**6,
                      max_docs=10**6, target_docs=5_000, top_seconds=1, growth=1, settled=ext.BY_CHASE)
    assert step["stop"] == "fifth" and "--chase" not in step["reason"]
    assert f"javascript build_time: by chase, its own measurements spread {g['chase_spread']:.0%} (its repeats" \
        in describe_step(step)
    # the shares of the cores the sweep's sizes got count too (over_sweep_cores)
    moved = ch.over_sweep_cores(tight, {"2500": 1.9, "20000": 1.5}, 16)
    assert moved["build_time"]["spread"] == pytest.approx(1.9 / 1.5 - 1, rel=0.05)


def test_back_test_af_re_forecast_leaves_its_build_time_open_and_holds_its_target(tmp_path):
    # af (3.5.0, frozen) called its build time decided, 88.2 s, and missed by +27.9 %: its side-by-side factor
    # ranged 1.45-2.35 and its sweep's sizes got 1.55-1.93 of the cores
    from dragnet.forecast import run as fr
    bt = REPO / "benchmarks" / "forecast_growth" / "chase-af"
    out = fr.from_sweep(_copied(bt / "backtest-af", tmp_path / "af"), fr.target_from_docs(100_000, None, 8),
                        out_dir=tmp_path / "again")
    c = out["forecasts"][""]["javascript"]["chase"]
    assert "writer_tail" not in c and c["build_time"]["spread"] > 0.30
    (step,) = out["sweep_steps"]
    # open for beam's part first (87 % of its CPU, priced by one shard alone), which the re-forecast names
    (g,) = [g for g in step["undecided"] if g["quantity"] == "build_time"]
    assert g["chase_beam_alone"]["beam_share"] == pytest.approx(0.87, abs=0.01)
    built = json.loads((bt / "result.json").read_text())["quantities"]["javascript"]["build_time"]["target"]
    assert c["build_time"]["low"] <= min(built) <= max(built) <= c["build_time"]["high"]


@pytest.mark.parametrize("name,q,open_", [("am", 8, True), ("ah", 8, True), ("p", 8, False)])
def test_back_tests_on_350_re_forecast_hold_their_targets_and_leave_open_where_beam_leads(tmp_path, name, q, open_):
    # am (frozen) called its build time decided and missed by +24.6 %: its chase priced beam's part 25.5 % high,
    # beam 85 % of its CPU. Since au (+66 %) beam's range opens ah too (beam 34 %: 16 %), though it met (+0.9 %);
    # p, beam 25 % of its CPU, stays decided, and met (-2.9 %)
    from dragnet.forecast import run as fr
    bt = REPO / "benchmarks" / "forecast_growth" / f"chase-{name}"
    out = fr.from_sweep(_copied(bt / f"backtest-{name}", tmp_path / name), fr.target_from_docs(100_000, None, q),
                        out_dir=tmp_path / "again")
    c = out["forecasts"][""]["javascript"]["chase"]
    (step,) = out["sweep_steps"]
    said = [g for g in step["undecided"] if g["quantity"] == "build_time"]
    assert bool(said) is open_ and all(g.get("chase_beam_alone") for g in said)
    assert (c["beam_alone"]["spread"] > ch.BACKTESTED) is open_
    built = json.loads((bt / "result.json").read_text())["quantities"]["javascript"]["build_time"]["target"]
    assert c["build_time"]["low"] <= min(built) <= max(built) <= c["build_time"]["high"]
    if not open_:
        assert all(abs(c["build_time"]["value"] / b - 1) < ch.BACKTESTED for b in built)


def test_back_test_ah_re_forecast_gives_its_compaction_files_a_shards_index_and_meets_its_disk_growth(tmp_path):
    # ah (3.5.0, frozen): the compaction files fitted through its short one-shard builds came to 37.1 MiB and the
    # disk growth missed by -13.2 %; its target's compacted shard held 73.2 and 74.9 MiB at the peak
    from dragnet.forecast import run as fr
    from dragnet.results import schema as _schema
    bt = REPO / "benchmarks" / "forecast_growth" / "chase-ah"
    out = fr.from_sweep(_copied(bt / "backtest-ah", tmp_path / "ah"), fr.target_from_docs(100_000, None, 8),
                        out_dir=tmp_path / "again")
    g = out["forecasts"][""]["javascript"]["quantities"]["disk_growth"]
    comp, files = g["parts"]["compaction"]["prediction"], g["parts"]["index_bytes"]
    assert g["parts"]["compacted_at_once"] == 1 and comp["value"] == pytest.approx(files["value"] / 8)
    at_peak = [_schema.read_json(f)["sizes"]["peak_disk"]["compaction"]
               for f in sorted((bt / "target-builds" / "sweep").glob("size-*/0*-r*.json.gz"))]
    assert len(at_peak) == 2 and all(comp["low"] <= c <= comp["high"] for c in at_peak)
    assert all(abs(comp["value"] / c - 1) < 0.10 for c in at_peak)
    built = json.loads((bt / "result.json").read_text())["quantities"]["javascript"]["disk_growth"]["target"]
    assert abs(g["prediction"]["value"] / (sum(built) / len(built)) - 1) < 0.10


@pytest.mark.parametrize("name,q,opened", [("aj", 8, {"disk_growth", "peak_disk"}), ("ak", 16, set())])
def test_back_tests_aj_and_ak_re_forecast_open_the_disk_where_updaters_side_by_side_read_two_ways(
        tmp_path, name, q, opened):
    # aj (frozen, q=8) was decided and missed its disk growth by -18 %: 8 updaters side by side wrote 1.40× one
    # shard alone at 2,500 a shard (1.48× at the target's 12,500), carried as 1.21× by the excess per document;
    # ak (frozen, q=16) met it (+1.0 %), its one shard alone at 1,250 read from the fit below 2,500
    from dragnet.forecast import run as fr
    bt = REPO / "benchmarks" / "forecast_growth" / f"chase-{name}"
    out = fr.from_sweep(_copied(bt / f"backtest-{name}", tmp_path / name), fr.target_from_docs(100_000, None, q),
                        out_dir=tmp_path / "again")
    sbs = out["forecasts"][""]["javascript"]["quantities"]["disk_growth"]["parts"]["side_by_side"]
    assert sbs["alone_measured"] is (q == 8)
    (step,) = out["sweep_steps"]
    assert {g["quantity"] for g in step["undecided"] if g.get("side_by_side_apart")} == opened
    built = json.loads((bt / "result.json").read_text())["quantities"]["javascript"]
    for quantity in ("disk_growth", "peak_disk"):
        p = out["forecasts"][""]["javascript"]["quantities"][quantity]["prediction"]
        assert all(p["low"] <= v <= p["high"] for v in built[quantity]["target"])
        if quantity not in opened:
            assert abs(p["value"] / (sum(built[quantity]["target"]) / 2) - 1) < ext.GOALS[quantity]


def test_back_test_t_re_forecast_leaves_its_build_time_open_for_the_writer_and_holds_its_target(tmp_path):
    # t, frozen on 3.5.2 before the writer was known, called its build time decided (93.6 s) and missed by -27.6 %:
    # its held builds kept up (2-10 % of their wall after the indexer task), its target's writers did not
    from dragnet.forecast import run as fr
    from dragnet.report.forecast_report import describe_step
    bt = REPO / "benchmarks" / "forecast_growth" / "chase-t"
    out = fr.from_sweep(_copied(bt / "backtest-t", tmp_path / "t"), fr.target_from_docs(100_000, None, 16),
                        out_dir=tmp_path / "again")
    c = out["forecasts"][""]["javascript"]["chase"]
    assert c["writer_tail"]["couchdb"] == "3.5.2" and max(c["writer_tail"]["share"]) < ch.WRITER_TAIL
    built = json.loads((bt / "result.json").read_text())["quantities"]["javascript"]["build_time"]["target"]
    assert c["build_time"]["low"] <= min(built) <= max(built) <= c["build_time"]["high"]
    (step,) = out["sweep_steps"]
    assert any(g["quantity"] == "build_time" and g.get("chase_writer_tail") for g in step["undecided"])
    assert ("javascript build_time: by chase, on CouchDB 3.5.2 the view writer falls behind as q shards share the "
            "cores, which one shard alone need not show") in describe_step(step)


@pytest.mark.parametrize("name,q", [("aa", 8), ("q", 8)])
def test_a_352_back_test_whose_build_time_passed_the_chase_interval_is_inside_it_with_the_writers_range(
        tmp_path, name, q):
    # aa's first target build was 73.1 s, under the chase's interval (75.5 s); q's second 194.9 s, over it (188.4)
    from dragnet.forecast import run as fr
    bt = REPO / "benchmarks" / "forecast_growth" / f"chase-{name}"
    folder = _copied(bt / f"backtest-{name}", tmp_path / name)
    out = fr.from_sweep(folder, fr.target_from_docs(100_000, None, q), out_dir=tmp_path / "again")
    c = out["forecasts"][""]["javascript"]["chase"]
    built = json.loads((bt / "result.json").read_text())["quantities"]["javascript"]["build_time"]["target"]
    assert c["build_time"]["low"] <= min(built) <= max(built) <= c["build_time"]["high"]
    w, top = c["writer_tail"], c["cores"]["share"]
    assert (c["build_time"]["low"] == pytest.approx(min(w["cpu_s_low"]) / top * c["cores"]["low_factor"])
            or c["build_time"]["high"] == pytest.approx(max(w["cpu_s_high"]) / top * c["cores"]["high_factor"]))


@pytest.mark.parametrize("backtest, said", [("w", True), ("v", True), ("u", False), ("s", False)])
def test_back_tests_on_352_say_their_held_builds_waited_for_the_writer(tmp_path, backtest, said):
    from dragnet.forecast import run as fr
    folder = _copied(REPO / "benchmarks" / "forecast_growth" / f"chase-{backtest}" / f"backtest-{backtest}",
                       tmp_path / backtest)
    m = fr.load_chase(folder)["languages"]["javascript"]
    held = [b for b in m["builds"] if b["mode"] == "held"]
    assert all(b["writer_tail_s"] is not None for b in held)
    assert any("view writer" in x for x in m["limits"]) is said


def test_one_pair_says_its_spread_is_unmeasured():
    one = ch.model([_b("held", 1, 10.0, 8.0), _b("free", 1, 14.0, 10.0)], 8)
    two = ch.model([_b("held", 1, 10.0, 8.0), _b("free", 1, 14.0, 10.0),
                    _b("free", 2, 15.0, 10.0), _b("held", 2, 11.0, 8.0)], 8)
    assert any("one held and one free" in x for x in one["limits"])
    assert not any("one held and one free" in x for x in two["limits"])


def test_a_repeat_without_its_pair_is_not_used_and_none_at_all_is_an_error():
    m = ch.model([_b("held", 1, 10.0, 8.0), _b("free", 1, 14.0, 10.0), _b("held", 2, 50.0, 40.0)], 8)
    assert m["repeats"] == 1 and m["build_cpu"]["value"] == pytest.approx(84.0)
    with pytest.raises(ValueError, match="both a held and a free"):
        ch.model([_b("held", 1, 10.0, 8.0)], 8)
    with pytest.raises(ValueError, match="no CPU"):
        ch.model([_b("held", 1, None, 8.0), _b("free", 1, 14.0, 10.0)], 8)


def test_javascript_reduces_are_the_views_whose_reduce_is_a_function():
    doc = {"views": {"a": {"map": "f", "reduce": "_count"}, "b": {"map": "f", "reduce": "function(k,v){}"},
                     "c": {"map": "f"}, "lib": {"x": "y"}}}
    assert ch.javascript_reduces(doc) == ["b"]
    assert ch.javascript_reduces(None) == []


@pytest.mark.parametrize("q,data,needle", [
    (None, 10**6, "shards are not known"),
    (1, 10**6, "one-shard target"),
    (8, 12_000, "12,500 documents, more than the data holds (12,000)"),
])
def test_the_model_is_refused_before_any_build_where_it_cannot_apply(q, data, needle):
    with pytest.raises(UsageError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        ch.check(100_000, q, data)


def test_one_shard_of_more_than_a_fifth_of_the_target_is_a_warning():
    assert ch.check(100_000, 8, 10**6) == []
    [w] = ch.check(100_000, 4, 10**6)
    assert "25,000 documents" in w and "a fifth" in w


# ---- the sweep's decision: the build time left to the chase

def _forecast_with_open_build_time(chase: dict | None = None) -> dict:
    entry = {"prediction": {"value": 100.0}, "models": {"linear": {"prediction": {"value": 100.0}},
                                                         "power": {"prediction": {"value": 160.0}}},
             "choice": {"chosen": "linear", "held_out": {}}}
    return {"javascript": {"quantities": {"build_time": entry}, **({"chase": chase} if chase else {})}}


def test_an_open_build_time_is_settled_by_a_chase_planned_or_built():
    f = _forecast_with_open_build_time()
    assert [g["quantity"] for g in ext.open_goals(f)] == ["build_time"]
    assert ext.open_goals(f, ext.BY_CHASE) == []
    assert ext.open_goals(_forecast_with_open_build_time({"build_time": {"value": 90.0}})) == []
    step = ext.decide({"": f}, [1000, 2000], spent_s=1, budget_s=10**6, max_docs=10**6, target_docs=10**6,
                      top_seconds=1, growth=1, settled=ext.BY_CHASE)
    assert step["stop"] == "decided" and "--chase" in step["reason"] and step["settled"] == ["build_time"]
    step = ext.decide({"": f}, [1000, 2000], spent_s=1, budget_s=10**6, max_docs=10**6, target_docs=10**6,
                      top_seconds=1, growth=1)
    assert step["stop"] is None and "settled" not in step


def test_the_sweep_keeps_the_chases_cost_out_of_its_next_size():
    from dragnet.report.forecast_report import describe_step

    f = {"": {"javascript": {"quantities": {"index_compacted": {
        "prediction": {"value": 100.0}, "models": {"linear": {"prediction": {"value": 100.0}},
                                                   "power": {"prediction": {"value": 130.0}}},
        "choice": {"chosen": "linear", "held_out": {}}}}}}}
    kw = dict(spent_s=600, budget_s=1800, max_docs=10**6, target_docs=10**6, top_seconds=300, growth=2,
              settled=ext.BY_CHASE)
    # 600 s spent and 600 s for the next size fit 1,800 s, but not with the chase's 700 s kept
    assert ext.decide(f, [1000, 2000], **kw)["stop"] is None
    step = ext.decide(f, [1000, 2000], **kw, reserved_s=700)
    assert step["stop"] == "budget" and step["reserved_s"] == 700
    assert "about 700 s of it kept for --chase" in describe_step(step)
    assert ext.decide(f, [1000, 2000], **kw, reserved_s=500)["stop"] is None


def test_a_chase_past_the_budget_says_the_budget_that_runs_it():
    from dragnet.forecast.run import chase_skipped

    c = chase_skipped(1175.0, 767.0, 1800.0, ["w"])
    assert c["cost_s"] == 1175.0 and c["warnings"] == ["w"]
    # 767 + 1,175 = 1,942 s: 33 minutes, up
    assert c["skipped"].endswith("would cost about 1,175 s, 767 s of the 1,800 s budget spent (a --budget of 33m "
                                 "or more runs it after a sweep like this one)")
    assert "warnings" not in chase_skipped(60.0, 0.0, 30.0)


def test_a_chase_whose_held_builds_waited_for_the_writer_leaves_the_build_time_open():
    from dragnet.report.forecast_report import describe_step

    tail = {"share": [0.46, 0.48], "threshold": ch.WRITER_TAIL, "beam_errors": [-0.207, 0.233]}
    f = _forecast_with_open_build_time({"build_time": {"value": 90.0}, "writer_tail": tail})
    (g,) = ext.open_goals(f, ext.BY_CHASE)
    assert g["quantity"] == "build_time" and g["chase_writer_tail"] == tail and g["spread"] == pytest.approx(0.233)
    # open for the chase's own reason, which a larger size would not settle: no "--chase decides" hint
    step = ext.decide({"": f}, [1000, 2000], spent_s=1, budget_s=10**6, max_docs=10**6, target_docs=5_000,
                      top_seconds=1, growth=1, settled=ext.BY_CHASE)
    assert step["stop"] == "fifth" and "--chase" not in step["reason"]
    assert not ext.load_only(g)
    assert ("javascript build_time: by chase, its held builds spent 46%–48% of their wall waiting for CouchDB's view "
            "writer, where the chase's beam CPU erred -21% to +23% on the back-tests (goal 15%)") in describe_step(step)
    # errors the back-tests kept within the goal would not hold it open
    inside = {**tail, "beam_errors": [-0.10, 0.12]}
    assert ext.open_goals(_forecast_with_open_build_time({"build_time": {"value": 90.0}, "writer_tail": inside})) == []


def test_back_test_w_re_forecast_says_its_build_time_is_open_for_the_writer(tmp_path):
    from dragnet.forecast import run as fr
    folder = _copied(REPO / "benchmarks" / "forecast_growth" / "chase-w" / "backtest-w", tmp_path / "w")
    out = fr.from_sweep(folder, fr.target_from_docs(100_000, None, 16), out_dir=tmp_path / "again")
    (step,) = out["sweep_steps"]
    (g,) = [g for g in step["undecided"] if g["quantity"] == "build_time"]
    assert g["chase_writer_tail"]["share"] == pytest.approx([0.46, 0.48], abs=0.01)
    assert step["stop"] != "decided"
    # the sample checks the frozen forecast made, shown as recorded (a re-forecast maps nothing)
    frozen = json.loads((folder / "forecast.json").read_text())["sample_checks"]
    assert {k: v for k, v in out["sample_checks"].items() if k != "recorded"} == frozen
    assert out["sample_checks"]["recorded"] == str(folder / "forecast.json")
    from dragnet.report import forecast_report
    from dragnet.report.render import text as render_text
    text = render_text.forecast(forecast_report.build(out))
    assert f"the sample checks as the forecast that built the sweep made them ({folder / 'forecast.json'}):" in text
    assert "not checked: the target's document sizes against the sample's (no target database to read)" in text
    # for another target they compared nothing: none shown
    other = fr.from_sweep(folder, fr.target_from_docs(200_000, None, 16), out_dir=tmp_path / "other")
    assert "sample_checks" not in other


@pytest.mark.parametrize("name,spread", [
    # t missed by +18.8 % (power k=1.12 at 294 MiB; a line said 250, the target grew 248), its peak within 0.5 %;
    # the growth over its final index at 10,000 and 20,000 spans 11 %, so it is not carried by that either
    ("t", 15),
])
def test_a_back_test_whose_disk_growth_missed_leaves_it_open_on_re_forecast(tmp_path, name, spread):
    # the shapes were further apart than the goal, so the sweep cannot vouch for the growth; the peak, which
    # holds the database as well, stays decided
    from dragnet.forecast import run as fr
    bt = REPO / "benchmarks" / "forecast_growth" / f"chase-{name}"
    folder = _copied(bt / f"backtest-{name}", tmp_path / name)
    out = fr.from_sweep(folder, fr.target_from_docs(100_000, None, 16), out_dir=tmp_path / "again")
    (step,) = out["sweep_steps"]
    (d,) = [g for g in step["undecided"] if g["quantity"] == "disk_growth"]
    assert spread / 100 < d["spread"] < (spread + 1) / 100 and d["goal"] == 0.10
    assert "peak_disk" not in {g["quantity"] for g in step["undecided"]} and step["stop"] != "decided"
    from dragnet.report.forecast_report import describe_step
    assert f"javascript disk_growth: shapes spread {spread}%" in describe_step(step)
    # and it would have missed: the target's builds grew more than the goal away from it
    target = json.loads((bt / "result.json").read_text())["quantities"]["javascript"]["disk_growth"]
    grown = out["forecasts"][""]["javascript"]["quantities"]["disk_growth"]["prediction"]["value"]
    assert abs(grown / target["target_mean"] - 1) > 0.10


@pytest.mark.parametrize("name,q", [("q", 8), ("x", 8), ("y", 16), ("z", 16)])
def test_a_3_5_2_back_test_whose_growth_fell_below_every_shape_is_inside_its_interval(tmp_path, name, q):
    # on CouchDB 3.5.2 the disk a build adds a document fell from the sweep's largest size to the target on these
    # four (q −2 %, x −8 %, y −3 %, z −9 %): below the low of every shape, which all grow at least linearly;
    # the interval now reaches down to the final index plus the least excess a size of the sweep wrote
    from dragnet.forecast import run as fr
    bt = REPO / "benchmarks" / "forecast_growth" / f"chase-{name}"
    folder = _copied(bt / f"backtest-{name}", tmp_path / name)
    out = fr.from_sweep(folder, fr.target_from_docs(100_000, None, q), out_dir=tmp_path / "again")
    g = out["forecasts"][""]["javascript"]["quantities"]["disk_growth"]
    built = json.loads((bt / "result.json").read_text())["quantities"]["javascript"]["disk_growth"]["target"]
    assert len(built) == 2
    assert min(built) < min(m["prediction"]["low"] for m in g["models"].values())
    assert g["prediction"]["low"] == g["floor"]["value"] <= min(built) <= max(built) <= g["prediction"]["high"]
    # the index file right after the build holds at least the final index (z's shapes reached down to 11 MiB)
    qs = out["forecasts"][""]["javascript"]["quantities"]
    size = qs["index_size"]["prediction"]
    assert size["low"] == min(qs["index_compacted"]["prediction"]["low"], size["value"])


# ---- the report

def test_the_report_shows_the_chase_beside_the_fit_and_why_it_did_not_run():
    from dragnet.report import forecast_report as fr

    m = ch.model([_b("held", 1, 10.0, 8.0), _b("free", 1, 14.0, 10.0)], 8)
    assert fr._chase("build_time", {"chase": m}).value == pytest.approx(60.0)
    q = fr._chase("build_cpu", {"chase": m})
    assert (q.low, q.value, q.high) == pytest.approx((84 * 0.85, 84.0, 84 * 1.15))
    assert fr._chase("index_size", {"chase": m}) is None
    assert fr.chase_notes({"chase": {"skipped": "one shard … would cost about 900 s"}}) == \
        ["--chase did not run: one shard … would cost about 900 s"]
    notes = fr.chase_notes({"chase": {"languages": {"javascript": m}, "warnings": ["more than a fifth"]}})
    assert notes[0] == "chase: more than a fifth" and all(n.startswith("chase") for n in notes)
    assert fr.chase_notes({}) == []


def test_cli_refuses_chase_with_a_variant_in_one_line(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"_id": f"d{i}", "v": i}) + "\n" for i in range(5000)))
    for extra in (["--cpus", "1,2"], ["--memory", "1g"]):
        r = CliRunner().invoke(main, ["forecast", "--url", "http://127.0.0.1:9", "--db", "x", "--data", str(data),
                                      "--target-docs", "40000", "--target-q", "8", "--chase", *extra,
                                      "--results", str(tmp_path / "out")])
        assert r.exit_code != 0 and len(r.output.strip().splitlines()) == 1, r.output
        assert "--chase: not with" in r.output


# ---- live

def _auth_env(live_url: str) -> tuple[str, dict]:
    from urllib.parse import urlsplit

    u = urlsplit(live_url)
    return f"http://{u.hostname}:{u.port}", {**os.environ, "COUCHDB_USER": u.username or "",
                                            "COUCHDB_PASSWORD": u.password or ""}


def _smoosh(couch) -> dict:
    from dragnet.axes import config as cfg

    return {t: cfg.read(couch, cfg.parse(t)) for t in ch.HELD}


@pytest.mark.live
def test_live_forecast_chase(live_url, tmp_path):
    """One shard of the target built held and free: the held build ran with smoosh's view channels held (the
    node read them back), the node's values are back after, and the chase's figures are the model over the
    CPU the builds' results files recorded; a re-forecast of the folder reads the same chase."""
    from dragnet.couchdb.client import connect
    from dragnet.forecast.growth import row
    from dragnet.results.schema import read_json

    couch = connect(live_url)
    before = _smoosh(couch)
    db = f"dragnet_test_chase_{os.getpid()}"
    sizes = [150, 300, 450]
    try:
        r = CliRunner().invoke(main, ["forecast", "--url", live_url, "--db", db, "--target-docs", "2400",
                                      "--target-q", "4", "--q", "4", "--sizes", ",".join(map(str, sizes)),
                                      "--no-baseline", "--no-ceiling", "--no-shard-sweep", "--chase",
                                      "--results", str(tmp_path / "fc")])
        assert r.exit_code == 0, r.output
        assert "  by chase" in r.output and "more than a fifth" in r.output     # 600 of 2,400 documents
        assert _smoosh(couch) == before
        record = read_json(tmp_path / "fc" / "chase" / "chase.json")
        assert [(b["mode"], b["repeat"]) for b in record["builds"]] == [("free", 1), ("held", 1)]
        held = next(b for b in record["builds"] if b["mode"] == "held")
        assert held["settings"] == {ch.HELD[i].split("=")[0]: ch.HELD[i].split("=")[1] for i in range(3)}
        assert couch.get(f"/{db}-chase-600")["cluster"]["q"] == 1
        out = json.loads((tmp_path / "fc" / "forecast.json").read_text())
        c = out["forecasts"][""]["javascript"]["chase"]
        # recomputed from the builds' results files: beam and the query servers, from the kernel's accounting
        cpu = {}
        for b in record["builds"]:
            folder = tmp_path / "fc" / "chase" / b["dir"] / "size-600"
            manifest = read_json(folder / "bench.json")
            [run] = [x for x in manifest["runs"] if x.get("status") == "ok"]
            fig = row(600, run, read_json(folder / run["result_file"]))
            cpu[b["mode"]] = (fig["beam_s"] + fig["query_server_s"], run["wall_time_s"], fig["query_server_s"])
        # the query servers' part scaled by 4 couchjs side by side over one alone, each on 120 documents
        # (a fifth of the target over q), recomputed from the processes' CPU the record keeps
        side = record["side_by_side"]["javascript"]
        assert side["q"] == 4 and side["docs_each"] == 120 and side["server"] == "couchjs"
        assert [(r["repeat"], r["procs"]) for r in side["runs"]] == [(1, 4), (1, 1), (2, 1), (2, 4), (3, 4), (3, 1)]
        ratio = sbs.factor(side)["value"]
        assert ratio == pytest.approx(sum(sbs.per_doc_ms(side["runs"][i]) / sbs.per_doc_ms(side["runs"][j])
                                          for i, j in ((0, 1), (3, 2), (4, 5))) / 3)
        want = 3 * cpu["held"][0] + cpu["free"][0] + (ratio - 1) * (3 * cpu["held"][2] + cpu["free"][2])
        assert c["build_cpu"]["value"] == pytest.approx(want)
        # over the cores the sweep's largest size at the target's q got (its CPU-seconds over its wall time)
        share = out["forecasts"][""]["javascript"]["quantities"]["build_time"]["cores_share"]["per_size"]["450"]
        assert c["cores"]["at_size"] == 450 and c["cores"]["q"] == 4
        assert c["build_time"]["value"] == pytest.approx(want / share)
        # paced: side by side at the target's time between a shard's documents (the model without the factor,
        # its CPU over the sweep's cores, over a shard's 600), alone at the chase's builds' (their wall over 600)
        lone = 3 * cpu["held"][0] + cpu["free"][0]
        assert side["paced"]["side_s"] == pytest.approx(lone / share / 600)
        assert side["paced"]["alone_s"] == pytest.approx((cpu["held"][1] + cpu["free"][1]) / 2 / 600)
        assert {r["procs"]: r["gap_ms"] for r in side["runs"]} == {4: pytest.approx(1000 * side["paced"]["side_s"], abs=1e-3),
                                                                   1: pytest.approx(1000 * side["paced"]["alone_s"], abs=1e-3)}
        assert c["cores_used"] == [pytest.approx(cpu["free"][0] / cpu["free"][1])]
        # a re-forecast of the recorded folder reads the same chase; for another target's shard size, none
        again = CliRunner().invoke(main, ["forecast", "--url", live_url, "--db", db, "--from-sweep",
                                          str(tmp_path / "fc"), "--target-docs", "2400", "--target-q", "4",
                                          "--results", str(tmp_path / "re"), "--json"])
        assert again.exit_code == 0, again.output
        re_out = json.loads(again.output.strip().splitlines()[-1])
        re_c = re_out["forecasts"][""]["javascript"]["chase"]
        assert re_c["build_cpu"]["value"] == pytest.approx(want)
        # the run and its re-forecast say alike that the chase settled the build time
        assert out["sweep_steps"][0].get("settled") == re_out["sweep_steps"][0].get("settled") == ["build_time"]
        other = CliRunner().invoke(main, ["forecast", "--url", live_url, "--db", db, "--from-sweep",
                                          str(tmp_path / "fc"), "--target-docs", "4000", "--target-q", "4",
                                          "--results", str(tmp_path / "other"), "--json"])
        assert other.exit_code == 0, other.output
        assert "chase" not in json.loads(other.output.strip().splitlines()[-1])["forecasts"][""]["javascript"]
    finally:
        for name in [f"{db}-{n}" for n in sizes] + [f"{db}-chase-600"]:
            couch.request("DELETE", f"/{name}", ok=(200, 202, 404))


@pytest.mark.live
@pytest.mark.slow
def test_live_auto_sizes_stay_within_a_fifth_and_the_chase_settles_the_build_time(live_url, tmp_path):
    """--sizes auto with --chase, as a user would run it: no size past a fifth of the target, the sweep's last
    step with the build time left to the chase, open for the chase's own reasons only, and the chase built at
    the target's shard size."""
    from dragnet.couchdb.client import connect

    couch = connect(live_url)
    db = f"dragnet_test_chase_auto_{os.getpid()}"
    try:
        r = CliRunner().invoke(main, ["forecast", "--url", live_url, "--db", db, "--target-docs", "10000",
                                      "--target-q", "8", "--q", "8", "--budget", "15m", "--no-baseline",
                                      "--no-ceiling", "--no-shard-sweep", "--chase", "--results", str(tmp_path / "fc")])
        assert r.exit_code == 0, r.output
        out = json.loads((tmp_path / "fc" / "forecast.json").read_text())
        assert max(out["sizes"]) <= 2000 and len(out["sizes"]) >= 2, out["sizes"]
        step = out["sweep_steps"][-1]
        assert step["settled"] == ["build_time"] and step["stop"] in ("decided", "fifth", "load", "chase"), step
        c = out["forecasts"][""]["javascript"]["chase"]
        said = [g for g in step["undecided"] if g["quantity"] == "build_time"]
        assert all(ext.by_chase(g) for g in said)
        own = max((c.get("beam_alone") or {}).get("spread") or 0, c["build_time"]["spread"])
        assert bool(said) is (own > ch.BACKTESTED or "writer_tail" in c), (said, own)
        assert c["shard_docs"] == 1250 and c["build_time"]["value"] > 0
        assert "  by chase" in r.output
    finally:
        for name in couch.get("/_all_dbs"):
            if name.startswith(db):
                couch.request("DELETE", f"/{name}", ok=(200, 202, 404))


@pytest.mark.live
@pytest.mark.slow
def test_live_sigterm_during_the_held_build_puts_smoosh_back(live_url, tmp_path):
    from dragnet.couchdb.client import connect

    couch = connect(live_url)
    before = _smoosh(couch)
    url, env = _auth_env(live_url)
    db = f"dragnet_test_chase_sig_{os.getpid()}"
    sizes = [100, 200, 300]
    proc = subprocess.Popen([sys.executable, "-m", "dragnet", "forecast", "--url", url, "--db", db,
                             "--target-docs", "16000", "--target-q", "2", "--q", "2",
                             "--sizes", ",".join(map(str, sizes)), "--no-baseline", "--no-ceiling",
                             "--no-shard-sweep", "--chase", "--results", str(tmp_path / "fc")],
                            env=env, cwd=REPO, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        end = time.monotonic() + 300
        while time.monotonic() < end and proc.poll() is None and _smoosh(couch) == before:
            time.sleep(0.2)      # the free build first, then the held one sets the channels
        assert proc.poll() is None, proc.communicate()
        assert _smoosh(couch) != before
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert "Traceback" not in err
        assert _smoosh(couch) == before
    finally:
        if proc.poll() is None:
            proc.kill()
        for name in [f"{db}-{n}" for n in sizes] + [f"{db}-chase-8000"]:
            couch.request("DELETE", f"/{name}", ok=(200, 202, 404))


def test_the_html_page_has_a_row_for_each_quantity_the_chase_forecasts():
    from dragnet.report.html import forecast_sections

    m = ch.model([_b("held", 1, 10.0, 8.0), _b("free", 1, 14.0, 10.0)], 8)
    doc = {"target": {"doc_count": 100_000}, "sizes": [1000, 2000], "forecasts": {"": {"javascript": {
        "quantities": {q: {"unit": "s", "prediction": {"value": 1.0, "low": 0.5, "high": 2.0}, "points": []}
                       for q in ("build_time", "build_cpu", "index_size")}, "chase": m}}}}
    rows = {r[1]: r for r in forecast_sections(doc)[0].rows}
    assert set(rows) == {"build_time", "build_cpu", "index_size", "build_time by chase", "build_cpu by chase"}
    assert rows["build_cpu by chase"][3]["sort"] == pytest.approx(84.0)
    assert rows["build_time by chase"][8] == 2      # the two builds it came from


def test_what_the_chase_would_cost_counts_the_chased_languages_only():
    from dragnet.forecast.run import chase_cost

    def f(cpu):
        return {"quantities": {"build_cpu": {"prediction": {"value": cpu}}}}
    out = {"forecasts": {"": {"javascript": f(800.0), "erlang_baseline": f(400.0)}}}
    # a held and a free build of one shard (an eighth) per repeat
    assert chase_cost(out, 8, 1, ["javascript"]) == pytest.approx(2 * 800.0 / 8)
    assert chase_cost(out, 8, 2, ["javascript"]) == pytest.approx(4 * 800.0 / 8)
    assert chase_cost(out, None, 1, ["javascript"]) is None
    # with the sweep's query-server CPU by part: 4 CPU-s at 20,000, so 20 at a fifth of 500,000 documents,
    # side by side on 2 cores (10 s) and one alone (20 / 8 s), three times
    out["target"] = {"doc_count": 500_000}
    out["forecasts"][""]["javascript"]["by_part"] = {"parts": {"query_servers": {"points": [[10_000, 1.0],
                                                                                        [20_000, 3.9], [20_000, 4.1]]}}}
    assert chase_cost(out, 8, 1, ["javascript"], cores=2) == pytest.approx(2 * 800.0 / 8 + 3 * (10 + 20 / 8))
    # paced at the target's time between a shard's documents: side by side lasts a fifth of its build time
    out["forecasts"][""]["javascript"]["quantities"]["build_time"] = {"prediction": {"value": 400.0}}
    assert chase_cost(out, 8, 1, ["javascript"], cores=2) == pytest.approx(2 * 800.0 / 8 + 3 * (80 + 20 / 8))


# ---- a recorded forecast: back-test o, frozen before its target was built

def _copied(src: Path, dst: Path) -> Path:
    """A committed back-test's forecast folder, copied: a re-forecast writes beside it (its summaries and results
    files stay gzipped, as committed; the library reads them so)."""
    import shutil
    return Path(shutil.copytree(src, dst))


def test_back_test_o_recomputes_from_its_results_files_and_keeps_the_chase_warnings(tmp_path):
    from dragnet.forecast import run as fr
    frozen = REPO / "benchmarks" / "forecast_growth" / "chase-product" / "backtest-o"
    folder = _copied(frozen, tmp_path / "o")
    frozen_f = json.loads((frozen / "forecast.json").read_text())["forecasts"][""]["javascript"]
    was = frozen_f["chase"]
    out = fr.from_sweep(folder, fr.target_from_docs(100_000, None, 8), out_dir=tmp_path / "again")
    now = out["forecasts"][""]["javascript"]["chase"]
    q = "build_cpu"
    assert now[q]["value"] == pytest.approx(was[q]["value"], rel=1e-12)
    # its ends reach what beam's part would be, one shard alone pricing it as on the back-tests (ALONE_ERRORS): the
    # low end below the frozen one, the high end too above it since ar (beam's part priced 15 % low)
    alone = now["beam_alone"]
    assert now[q]["low"] == pytest.approx(min(alone["cpu_s_low"])) and min(alone["cpu_s_low"]) < was[q]["low"]
    assert now[q]["high"] == pytest.approx(max(alone["cpu_s_high"])) and max(alone["cpu_s_high"]) > was[q]["high"]
    assert now["build_cpu"]["value"] == pytest.approx(111.3, abs=0.05)        # the README's figure
    # the build time: that CPU over the share of the cores the sweep's 20,000 documents at q=8 got
    share = frozen_f["quantities"]["build_time"]["cores_share"]["per_size"]["20000"]
    assert {k: now["cores"][k] for k in ("share", "at_size", "q")} == {"share": pytest.approx(share), "at_size": 20_000,
                                                                     "q": 8}
    # its interval spans the smallest share the sweep's sizes got, and beam's range at that share, wider than the goal
    per = frozen_f["quantities"]["build_time"]["cores_share"]["per_size"]
    goal_side = max(was["build_cpu"]["per_repeat"]) / min(per.values()) * (1 + ch.BACKTESTED)
    beam_side = max(alone["cpu_s_high"]) / min(per.values())
    assert beam_side > goal_side and now["build_time"]["high"] == pytest.approx(beam_side, rel=1e-12)
    assert now["build_time"]["value"] == pytest.approx(was["build_cpu"]["value"] / share, rel=1e-12)
    assert now["build_time"]["value"] == pytest.approx(69.8, abs=0.05)       # chase_cores' figure
    # its target (--target-docs) has its database from the sweep's databases' curve, and the peak within 2 %
    result = json.loads((frozen.parent / "result.json").read_text())["quantities"]["javascript"]["peak_disk"]
    peak = out["forecasts"][""]["javascript"]["quantities"]["peak_disk"]["prediction"]["value"]
    assert out["target"]["db_line"]["k"] > 1 and peak == pytest.approx(result["target_mean"], rel=0.02)
    # forecast.json holds one model per language: the chase's record is the forecast's, not a second copy
    assert out["chase"]["languages"]["javascript"] == now
    # given sizes that reach a fifth of the target, the build time is the chase's to settle; o's is open: beam is
    # 89 % of its CPU, and its own measurements spread 15.1 % (the smallest share of the cores a size got)
    (step,) = out["sweep_steps"]
    (g,) = [g for g in step["undecided"] if g["quantity"] == "build_time"]
    assert g["chase_beam_alone"] == alone and g["spread"] == pytest.approx(ch.alone_spread(alone["beam_share"]))
    assert alone["beam_share"] == pytest.approx(0.89, abs=0.01) and g["spread"] > 0.25
    assert 0.15 < now["build_time"]["spread"] < 0.152
    # a chase's warnings are in chase.json, so a re-forecast shows them as the run did
    record = folder / "chase" / "chase.json"
    rec = _schema.read_json(_schema.kept(record))
    assert "warnings" not in rec and "warnings" not in out["chase"]
    record.write_text(json.dumps({**rec, "warnings": ["one shard is more than a fifth of the target"]}))
    again = fr.from_sweep(folder, fr.target_from_docs(100_000, None, 8), out_dir=tmp_path / "warned")
    assert again["chase"]["warnings"] == ["one shard is more than a fifth of the target"]
    # a target of another shard size: the chase is not its own, and none is used
    other = fr.from_sweep(folder, fr.target_from_docs(200_000, None, 8), out_dir=tmp_path / "other")
    assert other.get("chase") is None and "chase" not in other["forecasts"][""]["javascript"]


@pytest.mark.parametrize("name,q", [("x", 8), ("y", 16), ("z", 16), ("ae", 8)])     # ae: frozen on this rule
def test_a_3_5_2_back_test_whose_shards_stay_within_the_writers_queue_has_its_growth_carried_by_the_final_index(
        tmp_path, name, q):
    # the shapes were 13-19 % apart (open), but the growth over the final index at the sweep's two largest sizes
    # agreed within the goal and the target's shards held fewer documents than the view writer's queue (10 MiB
    # on CouchDB 3.5.2) takes: the growth is the final index's forecast times that ratio, and it met the goal
    from dragnet.forecast import run as fr
    bt = REPO / "benchmarks" / "forecast_growth" / f"chase-{name}"
    folder = _copied(bt / f"backtest-{name}", tmp_path / name)
    out = fr.from_sweep(folder, fr.target_from_docs(100_000, None, q), out_dir=tmp_path / "again")
    (step,) = out["sweep_steps"]
    assert "disk_growth" not in {g["quantity"] for g in step["undecided"]}
    g = out["forecasts"][""]["javascript"]["quantities"]["disk_growth"]
    by, final = g["by_final"], out["forecasts"][""]["javascript"]["quantities"]["index_compacted"]["prediction"]
    assert by["open"] is None and by["spread"] <= 0.10 and g["prediction"]["model"] == "by_final"
    assert g["prediction"]["value"] == pytest.approx(final["value"] * by["ratio"])
    assert by["queue"]["cap_bytes"] == 10_485_760 and by["queue"]["target_shard_docs"] < by["queue"]["batch_docs"]
    target = json.loads((bt / "result.json").read_text())["quantities"]["javascript"]["disk_growth"]
    assert abs(g["prediction"]["value"] / target["target_mean"] - 1) < 0.10
    assert all(g["prediction"]["low"] <= v <= g["prediction"]["high"] for v in target["target"])


@pytest.mark.parametrize("name,q,times", [("aa", 8, 6.1), ("ab", 8, 2.0), ("q", 8, 2.6)])
def test_a_back_test_whose_shards_outgrow_the_writers_queue_leaves_the_growth_open(tmp_path, name, q, times):
    # aa emits whole documents (5 KB of rows each): the 10 MiB queue holds 2,048 of them, a shard of the
    # target 12,500; its growth over the final index rose from 1.74 at 20,000 to 2.16 at the target, and carried
    # from the sweep it would have missed by -19 %
    from dragnet.forecast import run as fr
    bt = REPO / "benchmarks" / "forecast_growth" / f"chase-{name}"
    folder = _copied(bt / f"backtest-{name}", tmp_path / name)
    out = fr.from_sweep(folder, fr.target_from_docs(100_000, None, q), out_dir=tmp_path / "again")
    g = out["forecasts"][""]["javascript"]["quantities"]["disk_growth"]
    by = g["by_final"]
    assert by["queue"]["target_shard_docs"] / by["queue"]["batch_docs"] == pytest.approx(times, abs=0.05)
    assert "the view writer's queue holds (queue_memory_cap 10,485,760 bytes, CouchDB 3.5.2's default" in by["open"]
    assert g["prediction"].get("model") != "by_final"
    assert any("not carried by the final index: a shard of the target holds 12,500 documents" in w
               for w in g["warnings"])
    (d,) = [x for x in out["sweep_steps"][0]["undecided"] if x["quantity"] == "disk_growth"]
    from dragnet.report.forecast_report import describe_step
    assert (f"javascript disk_growth: shapes spread" in describe_step(out["sweep_steps"][0])
            and f"not carried by the final index: a target shard's 12,500 documents outgrow "
                f"twice the {d['writer_queue']['batch_docs']:,.0f} the view writer's queue holds" in describe_step(out["sweep_steps"][0]))
    if name == "aa":
        target = json.loads((bt / "result.json").read_text())["quantities"]["javascript"]["disk_growth"]
        assert by["value"] / target["target_mean"] - 1 < -0.15


def test_back_test_aes_peak_is_open_as_its_forecast_database_will_be_due_for_compaction(tmp_path):
    # ae's peak was called decided when frozen and missed by +21.3 %: smoosh compacted the imported database
    # (2.09x its live data) during the first target build, and the second began from the compacted file
    from dragnet.forecast import run as fr
    bt = REPO / "benchmarks" / "forecast_growth" / "chase-ae"
    out = fr.from_sweep(_copied(bt / "backtest-ae", tmp_path / "ae"), fr.target_from_docs(100_000, None, 8),
                        out_dir=tmp_path / "again")
    pk = out["forecasts"][""]["javascript"]["quantities"]["peak_disk"]
    assert pk["db_compaction"]["forecast"] is True and "its file is 2.2× its live data" in pk["db_compaction"]["due"]
    assert "peak_disk" in {g["quantity"] for g in out["sweep_steps"][0]["undecided"]}
    built = json.loads((bt / "result.json").read_text())["quantities"]["javascript"]["peak_disk"]["target"]
    assert all(pk["prediction"]["low"] <= v <= pk["prediction"]["high"] for v in built)


def test_back_test_ys_peak_is_open_as_its_sweep_saw_its_database_compacted(tmp_path):
    # y's peak was called decided when frozen and missed by -16.2 %: its sweep's 20,000 documents' database was
    # compacted during their first build, so the database line foretold a compacted target file
    from dragnet.forecast import run as fr
    bt = REPO / "benchmarks" / "forecast_growth" / "chase-y"
    out = fr.from_sweep(_copied(bt / "backtest-y", tmp_path / "y"), fr.target_from_docs(100_000, None, 16),
                        out_dir=tmp_path / "again")
    assert out["target"]["db_line"]["left_out"] == [20000]
    pk = out["forecasts"][""]["javascript"]["quantities"]["peak_disk"]
    assert pk["db_compaction"]["forecast"] is True and "live data (smoosh's ratio_dbs" in pk["db_compaction"]["due"]
    assert "peak_disk" in {g["quantity"] for g in out["sweep_steps"][0]["undecided"]}
    built = json.loads((bt / "result.json").read_text())["quantities"]["javascript"]["peak_disk"]["target"]
    assert all(pk["prediction"]["low"] <= v <= pk["prediction"]["high"] for v in built)
