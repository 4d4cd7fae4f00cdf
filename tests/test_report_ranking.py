"""report's rankings (dragnet.report.ranking): decide's verdicts, paired by bench round where builds share one."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from dragnet.report.ranking import Build, Ranking, rank

# a machine whose load drifts 5x over the rounds; B costs 10% more than A in every round
DRIFT = [100.0, 180.0, 260.0, 340.0, 420.0, 500.0]


def _builds(dps, rounds=True, cpu=None):
    # the one build record, as a report reads it: round i of bench "b", docs/s, CPU per 1,000 docs
    return [Build("x", "disk", 0.0, True, repeat=i, bench_id="b" if rounds else None, docs_per_s=v,
                  cpu_s_per_1000=None if cpu is None else cpu[i]) for i, v in enumerate(dps)]


def test_pairing_by_round_decides_what_unpaired_samples_cannot():
    a, b = DRIFT, [v / 1.1 for v in DRIFT]
    paired = rank("disk", [("B", _builds(b)), ("A", _builds(a))])
    (p,) = paired.pairs
    assert (paired.names, p.state, p.interval.paired) == (["A", "B"], "separated", True)
    assert p.ratio == pytest.approx(1.1) and paired.order == "A > B" and paired.supported
    unpaired = rank("disk", [("B", _builds(b, rounds=False)), ("A", _builds(a, rounds=False))])
    (q,) = unpaired.pairs
    assert (q.state, q.why, q.interval.paired) == ("unresolved", "too noisy", False)
    assert "not supported: unresolved A vs B (too noisy)" in "\n".join(unpaired.lines())


def test_cpu_is_the_metric_where_every_build_has_it_and_disagreement_is_said():
    # A is faster by wall time, B spends less CPU per document (helper threads cost A CPU in parallel)
    wall_a, wall_b = [200.0, 210.0, 190.0, 205.0, 195.0], [150.0, 160.0, 140.0, 155.0, 145.0]
    cpu_a, cpu_b = [1.0, 1.01, 0.99, 1.0, 1.0], [0.5, 0.51, 0.49, 0.5, 0.5]
    r = rank("", [("A", _builds(wall_a, cpu=cpu_a)), ("B", _builds(wall_b, cpu=cpu_b))])
    assert r.metric == "cpu" and r.order == "B > A" and r.pairs[0].ratio == pytest.approx(2.0, rel=0.01)
    (other,) = r.other
    assert other.metric == "wall" and other.faster == "A" and other.state == "separated"
    assert any("CPU and wall disagree: by cpu B is ahead of A, by wall A is" in x for x in r.lines())
    # one build without CPU: the whole ranking falls back to wall
    no_cpu = _builds(wall_b, cpu=cpu_b)
    no_cpu[2] = replace(no_cpu[2], cpu_s_per_1000=None)
    assert rank("", [("A", _builds(wall_a, cpu=cpu_a)), ("B", no_cpu)]).metric == "wall"


def test_tied_and_the_dict_round_trip():
    a = [100.0, 101.0, 99.0, 100.5, 99.5, 100.0]
    r = rank("ssd", [("A", _builds(a)), ("A again", _builds([v * 1.001 for v in a]))])
    assert r.pairs[0].state == "tied" and "≈" in r.order
    again = Ranking.from_dict(r.as_dict())
    assert again.lines() == r.lines() and again.order == r.order
    assert math.isclose(again.pairs[0].ratio, r.pairs[0].ratio)
