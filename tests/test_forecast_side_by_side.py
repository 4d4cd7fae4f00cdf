"""The query servers side by side (forecast.side_by_side): the factor from its runs, the chase's query-server
part scaled by it, and real query-server processes measured side by side (couchpy: no CouchDB)."""

from __future__ import annotations

import pytest

from dragnet.forecast import chase as ch
from dragnet.forecast import side_by_side as sbs
from dragnet.index.design import Design


def _run(rep, procs, per_proc_cpu, docs=100):
    return {"repeat": rep, "procs": procs, "wall_s": 1.0,
            "processes": [{"docs": docs, "cpu_before_s": 0.5, "cpu_after_s": 0.5 + per_proc_cpu}] * procs}


def _record(pairs, q=8):
    runs = []
    for rep, (side, alone) in enumerate(pairs, 1):
        runs += [_run(rep, q, side), _run(rep, 1, alone)]
    return {"q": q, "server": "couchjs", "docs_each": 100, "runs": runs}


def _b(mode, rep, cpu, qs, wall=10.0):
    return {"mode": mode, "repeat": rep, "cpu_s": cpu, "cpu_query_servers_s": qs, "wall_s": wall, "docs": 12_500}


def test_docs_each_is_a_fifth_of_the_target_over_q():
    assert sbs.docs_each(100_000, 16) == 1_250
    assert sbs.docs_each(100_000, 8) == 2_500
    assert sbs.docs_each(7, 8) == 1


def test_factor_is_each_repeats_cpu_a_document_side_by_side_over_alone():
    f = sbs.factor(_record([(0.15, 0.10), (0.18, 0.10)]))
    assert f["per_repeat"] == pytest.approx([1.5, 1.8])
    assert (f["value"], f["low"], f["high"]) == pytest.approx((1.65, 1.5, 1.8))


def test_no_factor_without_a_repeat_that_ran_both():
    rec = _record([(0.15, 0.10)])
    rec["runs"] = rec["runs"][:1]
    assert sbs.factor(rec) is None


def test_the_chases_query_server_part_is_scaled_by_the_factor():
    builds = [_b("held", 1, 10.0, 4.0), _b("free", 1, 14.0, 5.0)]
    lone = ch.model(builds, 8)
    scaled = ch.model(builds, 8, side_by_side=_record([(0.15, 0.10), (0.18, 0.10)]))
    qs = 7 * 4.0 + 5.0
    assert scaled["build_cpu"]["value"] == pytest.approx(lone["build_cpu"]["value"] + 0.65 * qs)
    # the factor's range on top of the goal's: low at 1.5, high at 1.8
    assert scaled["build_cpu"]["low"] == pytest.approx((84.0 + 0.5 * qs) * (1 - ch.BACKTESTED))
    assert scaled["build_cpu"]["high"] == pytest.approx((84.0 + 0.8 * qs) * (1 + ch.BACKTESTED))
    assert scaled["build_time"]["value"] == pytest.approx(scaled["build_cpu"]["value"] / 1.4)
    assert scaled["side_by_side"]["query_servers_cpu_s"] == [qs]
    assert any("8 processes side by side" in x and "× 1.65 (1.50–1.80), measured with couchjs on this machine," in x
               for x in scaled["limits"])
    # a CouchDB in a container: the line says whose query server it measured
    inside = ch.model(builds, 8, side_by_side={**_record([(0.15, 0.10)]), "where": "not the one in the CouchDB's container"})
    assert any("couchjs on this machine (not the one in the CouchDB's container)" in x for x in inside["limits"])
    # the sweep's cores keep the factor's range
    swept = ch.over_sweep_cores(scaled, {"20000": 1.75}, 8)
    assert swept["build_time"]["high"] == pytest.approx((84.0 + 0.8 * qs) / 1.75 * (1 + ch.BACKTESTED))


def test_a_chase_without_the_measurement_says_its_query_servers_ran_alone():
    builds = [_b("held", 1, 10.0, 4.0), _b("free", 1, 14.0, 5.0)]
    m = ch.model(builds, 8, side_by_side={"absent": "no javascript query server on this machine"})
    assert m["build_cpu"]["value"] == pytest.approx(84.0) and "side_by_side" not in m
    assert any("as one process alone spends it" in x and "no javascript query server" in x for x in m["limits"])
    # a chase recorded before the measurement existed: the model as it was, no line about it
    old = ch.model(builds, 8)
    assert not any("the query servers' CPU as" in x for x in old["limits"])
    assert len(old["limits"]) == len(m["limits"]) - 1


def test_real_query_servers_measured_side_by_side():
    design = Design({"_id": "_design/t", "language": "python",
                     "views": {"v": {"map": "def fun(doc):\n    yield doc['n'], sum(range(30000))\n"}}}, "test")
    lines = [f'["map_doc",{{"_id":"d{i}","n":{i}}}]\n'.encode() for i in range(300)]
    events = []
    rec = sbs.measure(design, lines, 3, 2, on_event=lambda k, d: events.append((k, d["procs"])))
    assert [(r["repeat"], r["procs"]) for r in rec["runs"]] == [(1, 3), (1, 1), (2, 1), (2, 3)]
    assert events == [("side_by_side", 3), ("side_by_side", 1), ("side_by_side", 1), ("side_by_side", 3)]
    assert rec["docs_each"] == 100 and rec["server"] == "couchpy"
    for run in rec["runs"]:
        assert [p["docs"] for p in run["processes"]] == [100] * run["procs"]
        assert all(p["cpu_after_s"] >= p["cpu_before_s"] > 0 for p in run["processes"])
    assert len(sbs.factor(rec)["per_repeat"]) == 2


def test_no_query_server_of_the_language_here_is_recorded_why(tmp_path):
    from dragnet.bench.run import BenchConfig
    from dragnet.forecast.run import query_servers_side_by_side

    data = tmp_path / "d.jsonl"
    data.write_text("".join(f'{{"_id":"d{i}","n":{i}}}\n' for i in range(40)))
    design = Design({"_id": "_design/t", "language": "javascript",
                     "views": {"v": {"map": "function (doc) { emit(doc.n, null); }"}}}, "test")
    config = BenchConfig(url="http://127.0.0.1:1", db="x", languages=["javascript"], design=design)
    env = {"PATH": "/usr/bin:/bin", "DRAGNET_COUCHDB_HOME": str(tmp_path / "no-release")}
    got = query_servers_side_by_side(config, q=4, target_docs=40, data=data, root=tmp_path, on_event=lambda *_: None,
                                     env=env)
    assert got == {"javascript": {"absent": "no javascript query server on this machine to run side by side "
                                            "(a CouchDB release, or DRAGNET_COUCHJS)"}}
