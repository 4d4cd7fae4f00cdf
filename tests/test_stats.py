import pytest

from dragnet.measure import stats as stats


def test_ranks_average_ties():
    assert stats._ranks([10, 20, 20, 30]) == [1, 2.5, 2.5, 4]


def test_mann_whitney_exact_textbook_values():
    # complete separation: P = 2 / C(n1+n2, n1)
    r = stats.mann_whitney_u([1, 2, 3], [4, 5, 6])
    assert (r.u, r.method) == (0, "exact") and r.p == pytest.approx(2 / 20)
    assert stats.mann_whitney_u([1, 2, 3, 4], [5, 6, 7, 8]).p == pytest.approx(2 / 70)
    # one inversion, n1=3 n2=4: P(U <= 1) = 2/35, two-sided 4/35
    r = stats.mann_whitney_u([1, 2, 4], [3, 5, 6, 7])
    assert r.u == 1 and r.p == pytest.approx(4 / 35)
    # symmetric in its two-sided p
    assert stats.mann_whitney_u([3, 5, 6, 7], [1, 2, 4]).p == pytest.approx(4 / 35)
    # two inversions: P(U <= 2) = 4/35, two-sided 8/35
    assert stats.mann_whitney_u([1, 2, 5], [3, 4, 6, 7]).p == pytest.approx(8 / 35)


def test_mann_whitney_normal_approximation():
    r = stats.mann_whitney_u(list(range(1, 10)), list(range(10, 19)))
    assert r.method == "normal"
    # U = 0, mean 40.5, sigma sqrt(81 * 19 / 12), continuity 0.5: p = 4.12e-4 (scipy's asymptotic value)
    assert r.p == pytest.approx(4.12e-4, rel=0.01)


def test_mann_whitney_identical_samples_not_significant():
    assert stats.mann_whitney_u([5, 5, 5], [5, 5, 5]).p == 1.0
    assert stats.mann_whitney_u([1, 3, 5], [2, 4, 6]).p > 0.5


def test_min_p_value_says_three_runs_cannot_decide():
    assert stats.min_p_value(3, 3) == pytest.approx(0.1)
    assert stats.min_p_value(4, 4) < 0.05


def test_bootstrap_ratio_interval_contains_point_and_is_reproducible():
    x, y = [100, 102, 98, 101, 99], [50, 51, 49, 50, 52]
    point, lo, hi = stats.bootstrap_ratio_ci(x, y)
    assert point == pytest.approx(2.0)
    assert lo <= point <= hi and 1.8 < lo and hi < 2.2
    assert stats.bootstrap_ratio_ci(x, y) == (point, lo, hi)


def test_paired_ratio_follows_the_pairs_through_a_load_swing():
    # the machine's load halves and doubles the rates, but each pair keeps the same 0.9 ratio
    x, y = [90, 45, 180, 90, 135], [100, 50, 200, 100, 150]
    point, lo, hi = stats.paired_ratio_ci(x, y)
    assert (point, lo, hi) == pytest.approx((0.9, 0.9, 0.9))
    _, ulo, uhi = stats.bootstrap_ratio_ci(x, y)   # unpaired, the same runs say far less
    assert ulo < 0.7 and uhi > 1.1
    # one disturbed pair moves the median little and widens the interval
    point, lo, hi = stats.paired_ratio_ci([90, 45, 180, 60, 135], y)
    assert point == pytest.approx(0.9) and lo == pytest.approx(0.6) and hi == pytest.approx(0.9)
    with pytest.raises(ValueError):
        stats.paired_ratio_ci([1, 2], [1])


def test_compare_adjacent_flags_undecided_pairs():
    ranked = [("a", [200, 201, 199, 202, 198]), ("b", [100, 101, 99, 102, 98]), ("c", [99, 103, 97, 100, 101])]
    v = stats.compare_adjacent(ranked)
    assert [(p.faster, p.slower, p.decided) for p in v] == [("a", "b", True), ("b", "c", False)]
    assert v[0].ratio == pytest.approx(2.0) and "significant" in v[0].format()
    assert "NOT significant" in v[1].format() and v[1].ci_low < 1 < v[1].ci_high


def test_outliers_modified_z():
    assert stats.outliers([10, 10.1, 9.9, 10.05, 30]) == [4]
    assert stats.outliers([10, 11, 12]) == []


def test_noise_warnings():
    w = stats.noise_warnings("x", [2.0, 1.0, 1.01, 0.99, 1.0])
    assert any("first run was 2.00× slower" in s for s in w)
    assert any("outlier" in s for s in w)
    assert any("coefficient of variation" in s for s in w)
    assert stats.noise_warnings("x", [1.0, 1.01, 0.99, 1.0]) == []


def test_proc_stat_and_other_load():
    before = stats.read_proc_stat("cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 1 2 3 4\n")
    after = stats.read_proc_stat("cpu  200 0 200 1400 0 0 0 0 0 0\n")
    assert before == (200, 1000) and after == (400, 1800)
    # 200 busy jiffies of 800; our own 1 s = 100 jiffies: others used 100/800
    assert stats.other_load(before, after, own_cpu_s=1.0) == pytest.approx(0.125)
    assert stats.load_warning(0.125) is None and "40%" in stats.load_warning(0.4)
    with pytest.raises(ValueError):
        stats.read_proc_stat("intr 1 2\n")
