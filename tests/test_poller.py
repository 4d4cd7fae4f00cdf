"""Rates from /_active_tasks polls, replayed from real CouchDB 3.5.0 recordings.

Expected values are re-derived here from the raw polls with a deliberately plain loop, and cross-checked
against the recordings' metrics.json.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from dragnet.measure import poller as poller
from dragnet.report.render import build_text as build_text

BUILDS = ["erlang", "erlang_baseline", "erlang_baseline_repeat", "erlang_baseline_tmpfs",
          "erlang_baseline_tmpfs_repeat", "javascript", "javascript_quickjs", "javascript_quickjs_es2015",
          "javascript_repeat", "javascript_tmpfs", "javascript_tmpfs_repeat", "js_throws_10pct", "python"]


def load(fixtures_dir: Path, name: str) -> tuple[list[dict], str, dict]:
    d = fixtures_dir / name
    polls = [json.loads(line) for line in (d / "active_tasks.jsonl").read_text().splitlines() if line.strip()]
    ddoc = json.loads((d / "ddoc.json").read_text())["_id"]
    metrics = json.loads((d / "metrics.json").read_text())
    return polls, ddoc, metrics


def pid_numbers(pid: str) -> list[int]:
    return [int(x) for x in pid.strip("<>").split(".")]


def rederive(polls: list[dict], ddoc: str) -> dict:
    """The definitions, written out plainly."""
    all_rates, one_rates = [], []
    starts, updates = [], []
    for poll in polls:
        rates = {}
        for t in poll["tasks"]:
            if t["type"] != "indexer" or t["design_document"] != ddoc:
                continue
            starts.append(t["started_on"])
            updates.append(t["updated_on"])
            if t["updated_on"] > t["started_on"]:
                rates[t["pid"]] = t["changes_done"] / (t["updated_on"] - t["started_on"])
        if rates:
            all_rates.append(sum(rates.values()))
            lowest = sorted(rates, key=pid_numbers)[0]
            one_rates.append(rates[lowest])
    return {
        "all": sum(all_rates) / len(all_rates) if all_rates else None,
        "one": sum(one_rates) / len(one_rates) if one_rates else None,
        "n_all": len(all_rates),
        "total": (max(updates) - min(starts)) if starts else None,
    }


@pytest.mark.parametrize("name", BUILDS)
def test_replay_matches_plain_rederivation(fixtures_dir, name):
    polls, ddoc, _ = load(fixtures_dir, name)
    fig = poller.analyze(polls, ddoc)
    want = rederive(polls, ddoc)
    assert math.isclose(fig.average_all_tasks_cps, want["all"], rel_tol=1e-12)
    assert math.isclose(fig.average_one_task_cps, want["one"], rel_tol=1e-12)
    assert fig.polls_used_all == want["n_all"]
    assert fig.total_time_s == want["total"]
    assert fig.polls == len(polls)


@pytest.mark.parametrize("name", BUILDS)
def test_cross_check_with_recorded_metrics(fixtures_dir, name):
    polls, ddoc, metrics = load(fixtures_dir, name)
    fig = poller.analyze(polls, ddoc)
    seed = metrics["seed"]
    assert abs(fig.average_all_tasks_cps - seed["avg_cps_all_tasks"]) <= 0.1
    assert fig.polls_used_all == seed["polls_used_all"]
    assert fig.total_time_s == seed["total_time_s"]
    assert fig.shards == metrics["tasks"]["shards_seen"]
    assert fig.max_concurrent_tasks == metrics["tasks"]["max_concurrent_tasks"]


def test_javascript_all_tasks_is_842(fixtures_dir):
    polls, ddoc, _ = load(fixtures_dir, "javascript")
    fig = poller.analyze(polls, ddoc)
    assert abs(fig.average_all_tasks_cps - 842.3) <= 0.1
    line = build_text.format_average(fig)
    assert re.fullmatch(r"average = \d+\.\d\dc/s \(all_tasks\) \d+\.\d\dc/s \(one task\)", line)
    assert float(line.split()[2][:-3]) == round(fig.average_all_tasks_cps, 2)


def test_compaction_tasks_do_not_count(fixtures_dir):
    polls, ddoc, metrics = load(fixtures_dir, "javascript")
    compaction = sum(1 for p in polls for t in p["tasks"]
                     if t["type"] == "view_compaction" and t["design_document"] == ddoc)
    assert compaction == 30
    # counting every task of the ddoc (what a naive poller does) gives the inflated 2017 figure
    unfiltered = []
    for p in polls:
        r = [t["changes_done"] / (t["updated_on"] - t["started_on"]) for t in p["tasks"]
             if t["design_document"] == ddoc and t["updated_on"] > t["started_on"]]
        if r:
            unfiltered.append(sum(r))
    naive = sum(unfiltered) / len(unfiltered)
    assert abs(naive - metrics["seed_unfiltered_all_tasks_in_poll"]["avg_cps_all_tasks"]) <= 0.1
    fig = poller.analyze(polls, ddoc)
    assert fig.other_tasks_ignored == compaction
    assert fig.average_all_tasks_cps < naive * 0.6


def test_two_pid_shard_keeps_catch_up_work(fixtures_dir):
    polls, ddoc, metrics = load(fixtures_dir, "javascript")
    shard = "shards/e0000000-ffffffff/decl.1795257200"
    assert sorted(metrics["tasks"]["shards_with_multiple_pids"][shard]) == ["<0.1616.0>", "<0.933.0>"]
    last: dict[str, dict] = {}
    for p in polls:
        for t in p["tasks"]:
            if t["type"] == "indexer" and t["design_document"] == ddoc and t["database"] == shard:
                last[t["pid"]] = t
    assert len(last) == 2
    fig = poller.analyze(polls, ddoc)
    row = next(r for r in fig.per_shard if r.shard == "e0000000-ffffffff")
    assert sorted(row.pids) == sorted(last)
    assert row.changes == sum(t["changes_done"] for t in last.values())
    assert row.total_changes == sum(t["total_changes"] for t in last.values())
    assert row.seconds == max(t["updated_on"] for t in last.values()) - min(t["started_on"] for t in last.values())
    assert math.isclose(row.cps, row.changes / row.seconds)
    # the catch-up task's work is in the totals: more changes than documents
    assert fig.changes == sum(r.changes for r in fig.per_shard) > 40000 - 8 * 200
    assert fig.tasks_seen == 9 and fig.shards == 8


def test_per_shard_rows_for_single_pid_shards(fixtures_dir):
    polls, ddoc, metrics = load(fixtures_dir, "javascript")
    fig = poller.analyze(polls, ddoc)
    checked = 0
    for shard, seen in metrics["tasks"]["last_seen_per_shard"].items():
        row = next(r for r in fig.per_shard if shard.split("/")[1] == r.shard)
        if len(row.pids) == 1:
            assert row.changes == seen["changes_done"]
            assert row.seconds == seen["updated_on"] - seen["started_on"]
            checked += 1
    assert checked >= 6          # one or two of the 8 shards have a catch-up task; the rest are checked


def _task(pid, done, total, started, updated, shard="00000000-7fffffff", ddoc="_design/d", type_="indexer"):
    return {"pid": pid, "changes_done": done, "total_changes": total, "started_on": started, "updated_on": updated,
            "database": f"shards/{shard}/db.1", "design_document": ddoc, "type": type_}


def test_exact_output_lines():
    polls = [{"t": 281.0, "tasks": [_task("<0.2.0>", 254_000, 300_000, 100, 280),
                                    _task("<0.1.0>", 36_576, 40_000, 100, 280, shard="80000000-ffffffff")]}]
    fig = poller.analyze(polls, "d")
    # 36576 / 180 = 203.2 and 254000 / 180 = 1411.1…
    assert build_text.format_average(fig) == "average = 1614.31c/s (all_tasks) 203.20c/s (one task)"
    assert build_text.format_total_time(fig) == "total time = 180s"
    assert fig.per_poll[0].one_task_pid == "<0.1.0>"


def test_started_equals_updated_polls_are_not_used():
    polls = [
        {"t": 1.0, "tasks": [_task("<0.5.0>", 0, 100, 10, 10)]},            # just started: no rate
        {"t": 2.0, "tasks": [_task("<0.5.0>", 101, 100, 10, 12)]},          # changes_done > total_changes
        {"t": 3.0, "tasks": [_task("<0.5.0>", 101, 100, 10, 12), _task("<0.9.0>", 0, 50, 13, 13)]},
    ]
    fig = poller.analyze(polls, "_design/d")
    assert [p.usable for p in fig.per_poll] == [0, 1, 1]
    assert fig.per_poll[0].all_tasks_cps is None
    assert fig.polls_used_all == 2
    assert fig.average_all_tasks_cps == pytest.approx(50.5)
    assert fig.total_time_s == 3                   # 13 - 10: the second task's start/update count too
    t = poller.Tracker("d")
    for p in polls:
        t.add(p)
    assert t.changes_done == 101 and t.total_changes == 101 + 50   # done beyond total counts as done


def test_empty_and_foreign_polls():
    fig = poller.analyze([], "d")
    assert fig.average_all_tasks_cps is None and fig.total_time_s is None and fig.per_shard == []
    assert build_text.format_average(fig) == "average = n/a (all_tasks) n/a (one task)"
    assert build_text.format_total_time(fig) == "total time = n/a"
    polls = [{"t": 1.0, "tasks": []},
             {"t": 2.0, "tasks": [_task("<0.3.0>", 500, 900, 1, 3, ddoc="_design/other"),
                                  _task("<0.4.0>", 500, 900, 1, 3, type_="view_compaction"),
                                  "not a task"]}]
    fig = poller.analyze(polls, "d")
    assert fig.polls == 2 and fig.polls_with_tasks == 0 and fig.polls_used_all == 0
    assert fig.other_tasks_ignored == 1 and fig.tasks_seen == 0


def test_pid_ordering_is_numeric():
    assert sorted(["<0.1616.0>", "<0.933.0>", "<0.95.0>"], key=poller.pid_key) == ["<0.95.0>", "<0.933.0>",
                                                                                  "<0.1616.0>"]
    assert poller.shard_range("shards/e0000000-ffffffff/decl.1795257200") == "e0000000-ffffffff"
    assert poller.shard_range("decl") == "decl"


def test_finished_tasks_are_credited_with_their_total_changes():
    # small shards finish between polls: the last poll that saw a task shows fewer changes than it did
    polls = [
        {"t": 1.0, "tasks": [_task("<0.5.0>", 0, 74, 10, 10), _task("<0.6.0>", 10, 80, 10, 11, shard="8-f")]},
        {"t": 2.0, "tasks": [_task("<0.6.0>", 50, 80, 10, 12, shard="8-f")]},   # <0.5.0> has left: finished
    ]
    t = poller.Tracker("d")
    for p in polls:
        t.add(p)
    assert t.changes_done == 0 + 50                   # what the polls saw
    assert t.done == 74 + 50                          # <0.6.0> still runs: only what was seen
    t.add({"t": 3.0, "tasks": []})                    # the build is over: every task has left
    assert t.done == 74 + 80 and t.changes_done == 50
    fig = poller.analyze(polls + [{"t": 3.0, "tasks": []}], "d")
    assert fig.done == 154 and fig.changes == 50
    assert {r.shard: (r.changes, r.done) for r in fig.per_shard} == {"00000000-7fffffff": (0, 74), "8-f": (50, 80)}


def test_a_task_that_comes_back_is_not_finished_and_replicas_are_kept_apart():
    a = dict(_task("<0.5.0>", 5, 74, 10, 10), node="n1@h")
    b = dict(_task("<0.5.0>", 7, 74, 10, 10), node="n2@h")      # same pid text, another node: a replica
    t = poller.Tracker("d")
    t.add({"t": 1.0, "tasks": [a, b]})
    t.add({"t": 2.0, "tasks": [b]})                              # a missing from one poll (a glitch) ...
    t.add({"t": 3.0, "tasks": [dict(a, changes_done=9), b]})     # ... and back: it was not finished
    assert t.done == 9 + 7 and len(t.tasks) == 2
    t.add({"t": 4.0, "tasks": []})
    assert t.done == 74 + 74


def test_replicas_are_rows_of_one_shard_range():
    polls = [{"t": 1.0, "tasks": [dict(_task("<0.5.0>", 5, 9, 1, 2), node=n) for n in ("a@h", "b@h", "c@h")]},
             {"t": 2.0, "tasks": []}]
    fig = poller.analyze(polls, "d")
    assert fig.shards == 1 and len(fig.per_shard) == 3 and fig.tasks_seen == 3 and fig.done == 27
