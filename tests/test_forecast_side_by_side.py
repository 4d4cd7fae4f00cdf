"""The query servers side by side (forecast.side_by_side): the factor from its runs, the chase's query-server
part scaled by it, and real query-server processes measured side by side (couchpy: no CouchDB)."""

from __future__ import annotations

import json

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
    # the query servers four fifths of the CPU: beam's range (ch.ALONE_ERRORS) stays inside the goal's widening
    builds = [_b("held", 1, 10.0, 8.0), _b("free", 1, 14.0, 11.2)]
    lone = ch.model(builds, 8)
    scaled = ch.model(builds, 8, side_by_side=_record([(0.15, 0.10), (0.18, 0.10)]))
    qs = 7 * 8.0 + 11.2
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
    # measured in the CouchDB's container: the line names it
    boxed = ch.model(builds, 8, side_by_side={**_record([(0.15, 0.10)]), "container": "dragnet-couch-5984"})
    assert any("measured with couchjs in the CouchDB's container (dragnet-couch-5984), 100 documents each" in x
               for x in boxed["limits"])
    # paced: the line says at which gaps
    paced = ch.model(builds, 8, side_by_side={**_record([(0.15, 0.10)]), "paced": {"side_s": 0.0128, "alone_s": 0.001}})
    assert any(x.endswith("100 documents each, fed a document every 12.8 ms (as the target's shards will) against "
                          "one alone every 1.0 ms (as the chase's builds did)") for x in paced["limits"])
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


def test_the_gaps_are_the_targets_time_between_a_shards_documents_and_the_chases():
    builds = [_b("held", 1, 10.0, 4.0, wall=9.0), _b("free", 1, 14.0, 5.0, wall=11.0),
              _b("held", 2, 10.0, 4.0, wall=10.0), _b("free", 2, 14.0, 5.0, wall=10.0)]
    m = ch.over_sweep_cores(ch.model(builds, 8), {"20000": 1.75}, 8)
    g = sbs.gaps(m)
    # the target: 84 CPU-s over 1.75 cores, its 12,500 documents a shard; alone: the builds' 10 s over theirs
    assert g["side_s"] == pytest.approx(84.0 / 1.75 / 12_500)
    assert g["alone_s"] == pytest.approx(10.0 / 12_500)


def test_paced_processes_get_a_document_no_more_often_than_their_gap():
    design = Design({"_id": "_design/t", "language": "python",
                     "views": {"v": {"map": "def fun(doc):\n    yield doc['n'], None\n"}}}, "test")
    lines = [f'["map_doc",{{"_id":"d{i}","n":{i}}}]\n'.encode() for i in range(40)]
    rec = sbs.measure(design, lines, 2, 1, paced={"side_s": 0.05, "alone_s": 0.01})
    side, alone = ([r for r in rec["runs"] if r["procs"] == n][0] for n in (2, 1))
    assert rec["paced"] == {"side_s": 0.05, "alone_s": 0.01}
    assert (side["gap_ms"], alone["gap_ms"]) == (50.0, 10.0)
    # 20 documents each: 19 gaps at least, and not much more (the processes' phases spread over one gap)
    assert 19 * 0.05 <= side["wall_s"] < 19 * 0.05 + 1.0
    assert 19 * 0.01 <= alone["wall_s"] < 19 * 0.01 + 1.0


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


def test_the_containers_command_for_a_language_is_the_one_its_couchdb_reads():
    from dragnet.couchdb import container_qs as cq

    attrs = {"Config": {"Env": ["PATH=/usr/bin", "COUCHDB_QUERY_SERVER_PYTHON=/opt/dragnet-user/couchpy --x 'a b'",
                                "COUCHDB_QUERY_SERVER_BLANK= "]}}
    assert cq.command_for(attrs, "javascript") == ["./bin/couchjs", "./share/server/main.js"]   # bin/couchdb's default
    assert cq.command_for(attrs, "python") == ["/opt/dragnet-user/couchpy", "--x", "a b"]
    assert cq.command_for(attrs, "ruby") is None and cq.command_for(attrs, "blank") is None
    moved = {"Config": {"Env": ["COUCHDB_QUERY_SERVER_JAVASCRIPT=./bin/couchjs -S 64 ./share/server/main.js"]}}
    assert cq.command_for(moved, "javascript") == ["./bin/couchjs", "-S", "64", "./share/server/main.js"]
    assert cq.command_for({}, "javascript") == ["./bin/couchjs", "./share/server/main.js"]


# --- a CouchDB in a container: its own query servers, by a Docker exec

@pytest.fixture()
def couch_in_container(tmp_path, engine):
    import os

    from conftest import couch_env, free_port

    from dragnet.couchdb import control as ctl
    from dragnet.couchdb import docker as dk

    env = couch_env(tmp_path, "side-By-side-pw")
    port = free_port()
    inst = dk.up(port=port, image=os.environ["DRAGNET_TEST_DOCKER_IMAGE"], env=env)
    try:
        yield env, port, engine.containers.get(inst.container)
    finally:
        got = ctl.load_state(port, env)
        if got is not None:
            dk.stop(got, env=env, purge=True, timeout=5)


def _query_servers_in(container) -> list[str]:
    top = container.top(ps_args="-eo pid,args")
    return [" ".join(p) for p in top.get("Processes") or [] if "couchjs" in " ".join(p)]


@pytest.mark.docker
def test_a_couchdb_in_a_container_has_its_own_query_servers_measured_side_by_side(couch_in_container, tmp_path):
    from dragnet.bench.run import BenchConfig
    from dragnet.forecast.run import query_servers_side_by_side

    env, port, container = couch_in_container
    data = tmp_path / "d.jsonl"
    data.write_text("".join(f'{{"_id":"d{i}","n":{i},"tags":["a","b","c"]}}\n' for i in range(200)))
    design = Design({"_id": "_design/t", "language": "javascript", "views": {
        "v": {"map": "function (doc) { log('seen ' + doc._id); for (var i = 0; i < 2000; i++) { emit([doc.n, i], 1); } }"},
        "w": {"map": "function (doc) { doc.tags.forEach(function (t) { emit(t, doc.n); }); }"}}}, "test")
    config = BenchConfig(url=f"http://127.0.0.1:{port}", db="x", languages=["javascript"], design=design)
    events = []
    got = query_servers_side_by_side(config, q=4, target_docs=200, data=data, root=tmp_path,
                                     on_event=lambda k, d: events.append(d["procs"]), env=env,
                                     paces={"javascript": {"side_s": 0.02, "alone_s": 0.002}})
    rec = got["javascript"]
    assert "absent" not in rec, rec
    assert rec["container"] == container.name and rec["argv"] == ["./bin/couchjs", "./share/server/main.js"]
    assert rec["server"] == "couchjs" and rec["docs_each"] == 10       # a fifth of 200 over 4
    assert events == [4, 1, 1, 4, 4, 1]
    assert rec["paced"] == {"side_s": 0.02, "alone_s": 0.002}
    assert {r["procs"]: r["gap_ms"] for r in rec["runs"]} == {4: 20.0, 1: 2.0}
    assert all(r["wall_s"] >= 9 * 0.02 for r in rec["runs"] if r["procs"] == 4)
    for run in rec["runs"]:
        assert [p["docs"] for p in run["processes"]] == [10] * run["procs"]
        # the container's processes, read on this host by their host pids: 2,000 rows a document costs CPU
        assert all(p["cpu_after_s"] - p["cpu_before_s"] > 0.001 for p in run["processes"]), run
    assert sbs.factor(rec) is not None
    # every exec'd server ended with its input; none left in the container
    assert _query_servers_in(container) == []
    # a language the container's CouchDB has no query server for: said, with the container's name
    from dragnet.qsbench.instructions import NoQueryServer

    coffee = Design({**design.doc, "language": "coffeescript"}, "test")
    with pytest.raises(NoQueryServer) as got:
        sbs.measure(coffee, [b'["map_doc",{"_id":"a"}]\n'], 1, 1, env=env, container=container.name)
    assert str(got.value) == (f"no coffeescript query server in the CouchDB's container {container.name} "
                              f"(no COUCHDB_QUERY_SERVER_COFFEESCRIPT in its environment)")


@pytest.mark.docker
def test_a_container_query_server_reports_its_error_and_its_death(couch_in_container):
    from dragnet.couchdb import container_qs as cq
    from dragnet.couchdb import docker as dk
    from dragnet.servers.protocol import QueryServerDied, QueryServerError

    env, _port, container = couch_in_container
    api = dk.client(env).api
    with cq.ContainerQueryServer(api, container.id, ["./bin/couchjs", "./share/server/main.js"], name="javascript",
                                 timeout=30) as qs:
        assert qs.prompt(["reset", {}]) is True
        with pytest.raises(QueryServerError, match="compilation_error"):
            qs.prompt(["add_fun", "function (doc) { emit(doc._id "])
        assert qs.prompt(["add_fun", "function (doc) { log('here'); emit(doc._id, 1); }"]) is True
        assert qs.prompt(["map_doc", {"_id": "a"}]) == [[["a", 1]]] and qs.logs == ["here"]
        assert _query_servers_in(container)      # running, in the container
    assert _query_servers_in(container) == []
    with pytest.raises(QueryServerDied, match="in the container"):
        with cq.ContainerQueryServer(api, container.id, ["./bin/couchjs", "/nonexistent.js"], name="javascript",
                                     timeout=30) as qs:
            qs.prompt(["reset", {}])
    assert _query_servers_in(container) == []


@pytest.mark.docker
def test_the_sample_check_maps_rows_with_the_containers_own_query_server(couch_in_container, tmp_path):
    from dragnet.forecast import shape as shp

    env, _port, container = couch_in_container
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"_id": f"d{i}", "body": " ".join(["w"] * 3)}) + "\n" for i in range(120)))
    design = Design({"_id": "_design/t", "language": "javascript", "views": {
        "words": {"map": "function (doc) { doc.body.split(' ').forEach(function (w) { emit(w, null); }); }"},
        "one": {"map": "function (doc) { emit(doc._id, 1); }", "reduce": "_count"}}}, "test")
    target = {"doc_count": 1000, "sizes": {}, "q": None}
    got = shp.check(data, target, design, env=env, container=container.name)
    assert got["container"] == container.name
    assert got["sample"]["rows_per_doc"] == {"words": 3.0, "one": 1.0}
    assert not any(n.startswith("rows per document") for n in got["not_checked"]), got["not_checked"]
    assert _query_servers_in(container) == []
    # a language the container has no query server for: sizes only, and the container named as the reason
    coffee = Design({**design.doc, "language": "coffeescript"}, "test")
    got = shp.check(data, target, coffee, env=env, container=container.name)
    assert got["sample"]["rows_per_doc"] == {}
    assert (f"rows per document of each view: no coffeescript query server in the CouchDB's container "
            f"{container.name} (no COUCHDB_QUERY_SERVER_COFFEESCRIPT in its environment)") in got["not_checked"]
