"""compare's "where it changed" (dragnet.report.where_changed): which profiled stage grew, with decide's
paired interval. On the real benches of docs/compare/ci (five interleaved rounds), each build given a
profile entry whose GC grows by half on NEW; no server."""

from __future__ import annotations

from pathlib import Path

import pytest

from dragnet.measure import decide
from dragnet.report import compare as c
from dragnet.report import where_changed as wc
from dragnet.results.load import load_results

CI = Path(__file__).resolve().parent.parent / "docs" / "studies" / "compare" / "ci"


def _profiled(results, gc_factor):
    out = []
    for i, r in enumerate(results):
        wobble = 1 + 0.01 * (i % 3)
        stages = {"gc": {"samples": int(1000 * gc_factor * wobble)}, "query_server": {"samples": int(800 * wobble)},
                  "read": {"samples": int(300 * wobble)}, "spin": {"samples": 10}}
        n = sum(s["samples"] for s in stages.values())
        # one bench's rounds on both sides: paired by round, as `bench --ddoc A --ddoc B` would record them
        bench = dict(r.get("bench") or {}, id="one-bench", repeat=i)
        out.append(dict(r, bench=bench, profile={"samples": n, "sampled_cpu_s": n * 0.002, "stages": stages}))
    return out


@pytest.fixture(scope="module")
def sides():
    base, renamed = load_results([CI / "base"]), load_results([CI / "renamed"])
    return _profiled(base, 1.0), _profiled(renamed, 1.5)


def _where(old, new):
    cmp = c.compare(old, new)
    by_source = {r["_source"]: r for r in old + new}
    return cmp, wc.where(cmp, load=lambda paths: [by_source[p] for p in paths])


def test_the_stage_that_grew_is_named_with_its_paired_interval(sides):
    cmp, w = _where(*sides)
    gc = next(ch for ch in w.changes if ch.stage == "gc")
    assert gc.grew and gc.label == decide.SEPARATED and gc.interval.paired and gc.interval.n == 5
    assert gc.interval.low > 1.2 and gc.interval.ratio == pytest.approx(1.5, rel=0.05)
    qs = next(ch for ch in w.changes if ch.stage == "query_server")
    assert not qs.grew and qs.label == decide.TIED
    assert "spin" not in {ch.stage for ch in w.changes}        # under 5% on both sides: not judged
    text = wc.lines(w)
    assert text[0].startswith("where it changed (") and "grew: GC" in text[0]
    assert "GC (dirty CPU schedulers: full GCs) +50%" in text[1] and "separated, paired n=5" in text[1]


def test_stage_cost_is_cpu_per_1000_docs_from_samples():
    r = {"summary": {"docs": 2000}, "profile": {"samples": 100, "sampled_cpu_s": 0.5,
                                               "stages": {"gc": {"samples": 60}, "read": {"samples": 40}}}}
    assert wc.stage_costs(r) == pytest.approx({"gc": 0.15, "read": 0.1})
    assert wc.stage_costs({"summary": {"docs": 5}, "profile": {"absent": "perf not found"}}) is None
    assert wc.stage_costs({"summary": {"docs": 5}}) is None


def test_one_side_without_profile_says_so_and_judges_nothing(sides):
    base = load_results([CI / "base"])
    _, w = _where(base, sides[1])
    assert w.changes == []
    assert len(w.notes) == 1 and "only" in w.notes[0] and "--profile" in w.notes[0]


def test_no_profile_on_either_side_prints_nothing():
    base, renamed = load_results([CI / "base"]), load_results([CI / "renamed"])
    _, w = _where(base, renamed)
    assert wc.lines(w) == []


def test_results_files_gone_since_are_a_note_not_an_error(sides):
    from dragnet.errors import UsageError

    cmp = c.compare(*sides)

    def gone(paths):
        raise UsageError(f"{paths[0]}: no such file or directory")

    w = wc.where(cmp, load=gone)
    assert w.changes == [] and len(w.notes) == 1 and "no such file or directory" in w.notes[0]
