"""benchmarks/gate_check/looks.py: the gate's looks replayed on one figure, and the trials' variance split."""

import importlib.util
import math
import random
from pathlib import Path

import pytest

from dragnet.measure import decide
from dragnet.runner import gate as g

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def looks():
    spec = importlib.util.spec_from_file_location("gate_check_looks", ROOT / "benchmarks" / "gate_check" / "looks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_f_tail_matches_tables(looks):
    # F(0.95; 1, 10) = 4.965, F(0.99; 5, 20) = 4.103 (tables); F(1, d) is t(d) squared
    assert looks.f_sf(4.965, 1, 10) == pytest.approx(0.05, abs=5e-4)
    assert looks.f_sf(4.103, 5, 20) == pytest.approx(0.01, abs=2e-4)
    assert looks.f_sf(2.3 ** 2, 1, 135) == pytest.approx(2 * (1 - decide.t_cdf(2.3, 135)), rel=1e-6)
    assert looks.f_sf(0.0, 3, 9) == 1.0


def test_variance_parts_find_a_trial_offset(looks):
    rng = random.Random(3)
    same = [[rng.gauss(0, 0.3) for _ in range(10)] for _ in range(20)]
    shifted = [[u + rng.gauss(0, 0.3) for _ in range(10)] for u in (rng.gauss(0, 0.3) for _ in range(20))]
    a, b = looks.variance_parts(same), looks.variance_parts(shifted)
    assert a["within_sd"] == pytest.approx(0.3, rel=0.15) and a["p"] > 0.01
    assert b["between_sd"] == pytest.approx(0.3, rel=0.4) and b["p"] < 1e-4
    assert (a["trials"], a["rounds"]) == (20, 200)


def test_verdict_is_the_gates_rule(looks):
    logs = [math.log(1.2) + d for d in (-0.01, 0.0, 0.01, 0.005, -0.005)]
    v, iv = looks.verdict(logs, 0.05)
    ref = decide.paired_interval([math.exp(x) for x in logs], [1.0] * 5)
    assert v is True and (iv.low, iv.high) == (ref.low, ref.high)
    assert looks.verdict([0.001, -0.001, 0.0, 0.002, -0.002], 0.05)[0] is False
    assert looks.verdict([0.5, -0.5, 0.3, -0.3, 0.0], 0.05)[0] is None


def test_gate_batches_as_run_gate_does(looks):
    # decided at the first look: decide.MIN_ROUNDS rounds, one look
    it = iter([math.log(1.3)] * 4 + [math.log(1.31)])
    assert looks.gate(lambda: next(it), 0.05, 10) == (decide.MIN_ROUNDS, True, 1)
    # noise far above the threshold: the estimate jumps straight to the bound, two looks, undecided
    rng = random.Random(5)
    n, v, k = looks.gate(lambda: rng.gauss(0, 1.0), 0.05, 10)
    assert (n, v, k) == (10, None, 2)
    assert g.decide.MIN_ROUNDS == looks.MIN_ROUNDS


def test_simulate_counts_every_trial(looks):
    s = looks.simulate([-0.4, -0.2, 0.0, 0.2, 0.4], 0.05, 10, 200, seed=2)
    assert s["fail"] + s["pass"] + s["undecided"] == 200
    # a pool centred on 0 with an sd of ~0.3 fails far less often than it stays undecided
    assert s["fail"] < s["undecided"]
