"""bench --repeat auto's controller (dragnet.bench.auto), without a server: the rounds' builds come from a
seeded draw written as results files, as a real round's would be, so what is tested is which languages run
in which round, when it stops, and how a failed build is kept in the pairing."""

import math
import random

import pytest

from dragnet.bench import auto
from dragnet.bench.run import BenchConfig
from dragnet.errors import UsageError
from dragnet.measure import decide
from dragnet.results import schema as rs


def _result(lang: str, bench_id: str, cost: float | None) -> dict:
    ok = cost is not None
    return {"schema": rs.schema(rs.ADDVIEW), "view": {"language": lang},
            "bench": {"id": bench_id, "repeat": 0, "language": lang, "axes": {"language": lang}},
            "summary": {"ok": ok, "docs": 1000 if ok else None, "wall_time_s": 2 * cost if ok else None,
                        "cpu_s_per_1000_docs": cost, "error": None if ok else "boom"}}


class FakeBench:
    """One round of builds: each language's cost is its true cost times a shared per-round load and its own
    noise (seeded); `fail` names (language, round) builds that fail."""

    def __init__(self, true: dict[str, float], sd: float = 0.01, fail=(), seed: int = 1):
        self.true, self.sd, self.fail, self.rng = true, sd, set(fail), random.Random(seed)
        self.rounds: list[list[str]] = []

    def __call__(self, cfg: BenchConfig):
        from pathlib import Path

        r = len(self.rounds)           # 0: the warm-up
        self.rounds.append(list(cfg.languages))
        load = math.exp(self.rng.gauss(0, 0.2))
        folder = Path(cfg.results_dir)
        for lang in cfg.languages:
            cost = None if (lang, r) in self.fail else self.true[lang] * load * math.exp(self.rng.gauss(0, self.sd))
            rs.write(folder / f"{lang}.json", _result(lang, f"b{r}", cost))
        return {}, folder


def _cfg(tmp_path, langs):
    return BenchConfig(url="http://127.0.0.1:1", db="x", languages=list(langs), results_dir=str(tmp_path / "auto"),
                       baseline=False, ceiling=False)


def test_bad_input_before_anything_runs(tmp_path):
    ran = FakeBench({"a": 1.0, "b": 2.0})
    with pytest.raises(UsageError, match="--max-runs 4"):
        auto.run_auto(_cfg(tmp_path, "ab"), max_runs=4, bench=ran)
    with pytest.raises(UsageError, match="--budget 0"):
        auto.run_auto(_cfg(tmp_path, "ab"), budget_s=0, bench=ran)
    with pytest.raises(UsageError, match="at least two"):
        auto.run_auto(_cfg(tmp_path, "a"), bench=ran)
    assert ran.rounds == []
    assert auto.parse_repeat("auto") is None and auto.parse_repeat("4") == 4
    for bad in ("0", "three"):
        with pytest.raises(UsageError, match=f"--repeat {bad}"):
            auto.parse_repeat(bad)


def test_clear_gaps_stop_at_the_first_look_and_only_open_pairs_run_again(tmp_path):
    # a and b differ by 50%, b and c by 1% (inside the tie band with 1% noise: tied, or open a while)
    fake = FakeBench({"a": 1.0, "b": 1.5, "c": 1.515}, sd=0.01, seed=3)
    out = auto.run_auto(_cfg(tmp_path, "abc"), seed=7, bench=fake)
    assert fake.rounds[0] == ["a", "b", "c"] or sorted(fake.rounds[0]) == ["a", "b", "c"]   # the warm-up
    assert out.rounds >= decide.MIN_ROUNDS and out.stopped == "decided" and out.supported
    assert out.pairs[0].faster == "a" and out.pairs[0].slower == "b" and out.pairs[0].state == decide.SEPARATED
    assert out.pairs[0].interval.paired          # within-round ratios: the shared load cancels
    # after the first look "a" runs only while its pair is open: never, here
    assert all("a" not in r for r in fake.rounds[1 + decide.MIN_ROUNDS:])
    assert len(out.dirs) == out.rounds and out.warmup is not None


def test_max_runs_and_budget_stop_an_undecidable_pair(tmp_path):
    fake = FakeBench({"a": 1.0, "b": 1.03}, sd=0.05, seed=5)      # 3% apart under 5% noise: stays open
    out = auto.run_auto(_cfg(tmp_path, "ab"), max_runs=6, seed=1, bench=fake)
    assert out.stopped == "max-runs" and out.rounds == 6 and not out.supported
    assert "stopped by max-runs" in out.pairs[0].why
    assert auto.over_budget(100, 120, ["a", "b"], {"a": 15.0, "b": 10.0})
    assert not auto.over_budget(90, 120, ["a"], {"a": 15.0, "b": 10.0})


def test_a_failed_build_is_reported_and_its_round_left_out_of_the_pair(tmp_path):
    fake = FakeBench({"a": 1.0, "b": 2.0}, fail=[("b", 2)], seed=2)
    out = auto.run_auto(_cfg(tmp_path, "ab"), seed=4, bench=fake)
    assert out.failed and out.failed[0].startswith("b round 2: boom")
    assert out.pairs[0].state == decide.SEPARATED and out.pairs[0].interval.n == out.rounds - 1


def test_round_costs_geomean_over_a_languages_builds_and_none_with_a_failure():
    rs_ = [_result("a", "x", 1.0), _result("a", "x", 4.0), _result("b", "x", 3.0), _result("b", "x", None)]
    assert auto.round_costs(rs_, "cpu") == {"a": pytest.approx(2.0)}
    assert auto.round_costs(rs_[:2], "wall") == {"a": pytest.approx(4.0)}     # wall s per 1,000 docs


def test_cli_refuses_bad_rounds_before_anything_runs():
    from click.testing import CliRunner

    from dragnet.cli import main

    base = ["bench", "--url", "http://127.0.0.1:1", "--db", "x", "--languages", "javascript,python"]
    for extra, says in ((["--repeat", "0"], "--repeat 0"), (["--repeat", "lots"], "--repeat lots"),
                        (["--budget", "0"], "--budget 0"), (["--repeat", "3", "--budget", "60"], "--budget goes with"),
                        (["--max-runs", "4"], "--max-runs 4")):
        r = CliRunner().invoke(main, base + extra)
        assert r.exit_code == 2 and says in r.output, (extra, r.output)
