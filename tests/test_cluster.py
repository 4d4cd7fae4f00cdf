"""dragnet.couchdb.cluster: the plan of nodes, the _cluster_setup calls, the record `couch down` reads; and, with a
CouchDB release (DRAGNET_COUCHDB_HOME), a real 3-node local cluster."""

from __future__ import annotations

import pytest
from conftest import serve_json

from dragnet.couchdb import cluster as cluster
from dragnet.errors import DragnetError, UsageError


def test_plan_gives_distinct_ports_and_node_names():
    nodes = cluster.plan(3, 15910)
    assert [n.port for n in nodes] == [15910, 15911, 15912]
    assert [n.name for n in nodes] == ["dragnet15910@127.0.0.1", "dragnet15911@127.0.0.1", "dragnet15912@127.0.0.1"]
    assert [n.index for n in nodes] == [1, 2, 3]


@pytest.mark.parametrize("nodes,port", [(0, 15900), (cluster.MAX_NODES + 1, 15900), (3, 65534)])
def test_plan_refuses_bad_sizes(nodes, port):
    with pytest.raises(UsageError):
        cluster.plan(nodes, port)


def test_setup_requests_join_the_others_on_the_coordinator_then_finish():
    calls = cluster.setup_requests(cluster.plan(3, 15910))
    assert calls == [("PUT", "/_node/_local/_nodes/dragnet15911@127.0.0.1", {}),
                     ("PUT", "/_node/_local/_nodes/dragnet15912@127.0.0.1", {}),
                     ("POST", "/_cluster_setup", {"action": "finish_cluster"})]


def test_record_is_found_from_any_node_and_forgotten(tmp_path):
    env = {"DRAGNET_STATE_DIR": str(tmp_path)}
    nodes = cluster.plan(2, 15920)
    assert cluster.recorded(15921, env) is None
    cluster.record(15920, nodes, "local", env)
    data = cluster.recorded(15921, env)
    assert data["port"] == 15920 and [n["port"] for n in data["nodes"]] == [15920, 15921]
    assert cluster.recorded(15922, env) is None
    cluster.forget(15920, env)
    assert cluster.recorded(15920, env) is None


# --- per-node process scope and report (pure; the processes are faked) ----------------------------------

def test_process_scope_keeps_each_nodes_processes_apart(tmp_path, monkeypatch):
    from dragnet.index import addview as addview

    env = {"DRAGNET_STATE_DIR": str(tmp_path)}
    nodes = cluster.plan(3, 15930)
    cluster.record(15930, nodes, "local", env)
    beams = {15930: 100, 15931: 200, 15932: 300}
    trees = {100: {100, 101}, 200: {200}, 300: {300, 301, 302}}
    monkeypatch.setattr(addview._pidstat, "listening_pid", lambda port: beams.get(port))
    monkeypatch.setattr(addview._pidstat, "process_tree", lambda root: set(trees[root]))
    scope = addview.ProcessScope("http://127.0.0.1:15930", env)
    trees[300].add(303)                     # a query server spawned on node 3 during the build
    scope.refresh()
    assert scope.by_node == {nodes[0].name: {100, 101}, nodes[1].name: {200}, nodes[2].name: {300, 301, 302, 303}}
    assert scope.pids == {100, 101, 200, 300, 301, 302, 303}
    d = scope.as_dict()
    assert d["root_pid"] == 100 and d["nodes"][nodes[2].name] == {"root_pid": 300, "pids": [300, 301, 302, 303]}
    # a single node: no per-node split
    single = addview.ProcessScope("http://127.0.0.1:15999", env)
    assert single.roots == {} and "nodes" not in (single.as_dict() or {})


def test_report_shows_the_work_and_every_nodes_resources(fixtures_dir):
    from dragnet.measure import pidstat as pidstat
    from dragnet.measure import poller as poller
    from dragnet.report.render import build_text as build_text
    from dragnet.results import addview_results as results

    res = results.from_recording(fixtures_dir / "javascript")
    samples = [{"time": "10:00:01", "pid": 100, "command": "beam.smp", "cpu_pct": 50.0, "rss_kb": 1000},
               {"time": "10:00:01", "pid": 300, "command": "beam.smp", "cpu_pct": 20.0, "rss_kb": 2000}]
    res["pidstat"] = {"summary": None, "per_node": {
        "n1@h": pidstat.summarize(samples, only_pids={100}), "n3@h": pidstat.summarize(samples, only_pids={300})}}
    res["db"].update(shards=8, replicas=3, nodes=["n1@h", "n2@h", "n3@h"])
    lines = build_text.format_report(res)
    at = lines.index("node n1@h:")
    assert lines[at + 1].split()[:2] == ["beam", "1"] and "50.0%" in lines[at + 1]
    assert "20.0%" in lines[lines.index("node n3@h:") + 1]
    work = next(ln for ln in lines if ln.startswith("indexing work = "))
    fig = poller.analyze(res["polls"], res["view"]["ddoc"])
    assert work.startswith(f"indexing work = {fig.done} changes done by {fig.tasks_seen} tasks (q=8 n=3 on 3 nodes)")
    assert f"only {fig.tasks_seen} of 24 shard replicas' tasks were seen" in work


def test_build_work_line_without_a_warning_when_every_replica_was_seen():
    from dragnet.measure import poller as poller
    from dragnet.report.render import build_text as build_text

    polls = [{"t": float(i), "tasks": [{"pid": f"<0.{r}.0>", "node": n, "changes_done": 0, "total_changes": 10,
                                        "started_on": 0, "updated_on": 0, "type": "indexer",
                                        "database": f"shards/{r}/db.1", "design_document": "_design/d"}
                                       for n in ("a@h", "b@h") for r in ("0-7", "8-f")]} for i in (1,)]
    fig = poller.analyze(polls + [{"t": 2.0, "tasks": []}], "d")
    assert build_text.build_work_line(fig, 2, 2, ["a@h", "b@h"]) == \
        "indexing work = 40 changes done by 4 tasks (q=2 n=2 on 2 nodes)"
    assert build_text.build_work_line(fig, None, None, None) == "indexing work = 40 changes done by 4 tasks (q/n unknown)"


def test_build_work_line_says_when_an_indexer_started_again():
    from dragnet.measure import poller as poller
    from dragnet.report.render import build_text as build_text

    def task(pid: str, rng: str, done: int) -> dict:
        return {"pid": pid, "node": "a@h", "changes_done": done, "total_changes": 10, "started_on": 0,
                "updated_on": 1, "type": "indexer", "database": f"shards/{rng}/db.1", "design_document": "_design/d"}
    # shard 0-7's first updater ends at 6 of 10 and a second one indexes it again from the start
    polls = [{"t": 1.0, "tasks": [task("<0.1.0>", "0-7", 6), task("<0.2.0>", "8-f", 5)]},
             {"t": 2.0, "tasks": [task("<0.3.0>", "0-7", 10), task("<0.2.0>", "8-f", 10)]},
             {"t": 3.0, "tasks": []}]
    fig = poller.analyze(polls, "d")
    line = build_text.build_work_line(fig, 2, 1, None)
    # a task that left counts its total (poller: it finished its run), so 10 + 10 + 10
    assert line.startswith("indexing work = 30 changes done by 3 tasks (q=2 n=1)")
    assert "1 task more than the 2 shard replicas: an indexer started again" in line


def test_lone_cluster_needs_no_port_and_nodes_know_their_place(tmp_path):
    from dragnet.couchdb import control as ctl

    env = {"DRAGNET_STATE_DIR": str(tmp_path)}
    nodes = cluster.plan(3, 15940)
    assert cluster.sole_cluster_port(env) is None                       # nothing started
    for n in nodes:
        ctl.save_state(ctl.Instance(backend="local", port=n.port, pid=1), env)
    assert cluster.sole_cluster_port(env) is None                       # three single nodes: ambiguous
    cluster.record(15940, nodes, "local", env)
    assert cluster.sole_cluster_port(env) == 15940
    assert cluster.node_of(15942, env) == {"port": 15940, "index": 3, "nodes": 3, "name": nodes[2].name}
    assert cluster.node_of(15950, env) is None
    ctl.save_state(ctl.Instance(backend="local", port=15990, pid=1), env)  # and one more CouchDB
    assert cluster.sole_cluster_port(env) is None


def test_bench_records_q_n_and_the_nodes():
    from conftest import serve_json

    from dragnet.couchdb.client import connect

    srv, seen = serve_json([(200, {"db_name": "d", "cluster": {"q": 8, "n": 3, "w": 2, "r": 2}}),
                            (200, {"all_nodes": ["a@h", "b@h"], "cluster_nodes": ["a@h", "b@h", "c@h"]})])
    try:
        got = cluster.cluster_of(connect(f"http://127.0.0.1:{srv.server_address[1]}", env={}), "d")
    finally:
        srv.shutdown()
    assert got == {"q": 8, "n": 3, "nodes": ["a@h", "b@h", "c@h"]}
    assert seen == ["/d", "/_membership"]


def test_query_server_counters_of_the_nodes_are_summed():
    from dragnet.results import addview_results as results

    def body(maps, us):
        return {"calls": {"map": {"value": maps, "type": "counter", "desc": "map_doc"}},
                "time": {"map": {"value": us, "type": "counter"}}, "note": {"value": "x", "type": "gauge"}}

    summed = results.sum_counters([body(145, 1000), body(300, 2000), body(155, 500)])
    assert summed["calls"]["map"] == {"value": 600, "type": "counter", "desc": "map_doc"}
    assert summed["note"] == {"value": "x", "type": "gauge"}
    delta = results.query_server_delta({"body": body(0, 0), "status": 200},
                                       {"body": summed, "status": 200})
    assert delta["map_calls"] == 600 and delta["map_us_per_call"] == 3500 / 600
    assert results.sum_counters([]) == {}


def _membership_server(answers: list[list[str]]):
    """A loopback node: setup requests answered 201, GET /_membership from `answers` in order (last repeats)."""
    return serve_json([(200, {"all_nodes": nodes, "cluster_nodes": nodes}) for nodes in answers],
                      writes=(201, {"ok": True}))


def test_join_waits_until_every_node_lists_the_whole_cluster():
    names = ["couchdb@a", "couchdb@b"]
    coord, coord_asked = _membership_server([names])
    lagging, lag_asked = _membership_server([["couchdb@b"], ["couchdb@b"], names])
    try:
        nodes = [cluster.Node(1, coord.server_address[1], names[0]), cluster.Node(2, lagging.server_address[1], names[1])]
        url = f"http://127.0.0.1:{coord.server_address[1]}"
        assert cluster.join(url, nodes, "admin", "s3cret", timeout=30) == names
        # the second node was asked until its own _membership had caught up
        assert len(lag_asked) == 3 and len(coord_asked) >= 1
        stuck, _ = _membership_server([["couchdb@b"]])
        nodes[1] = cluster.Node(2, stuck.server_address[1], names[1])
        with pytest.raises(DragnetError, match=rf"_membership at http://admin:\*\*\*@127.0.0.1:{stuck.server_address[1]} "
                                               r"lists \['couchdb@b'\]"):
            cluster.join(f"http://admin:s3cret@127.0.0.1:{coord.server_address[1]}", nodes, "admin", "s3cret",
                         timeout=1)
        stuck.shutdown()
    finally:
        coord.shutdown()
        lagging.shutdown()


def test_node_url_keeps_scheme_credentials_and_host():
    assert cluster.node_url("http://admin:p%40ss@127.0.0.1:5984", 5986) == "http://admin:p%40ss@127.0.0.1:5986"
    assert cluster.node_url("http://127.0.0.1:5984/", 5985) == "http://127.0.0.1:5985/"
    assert cluster.node_url("http://[::1]:5984", 5985) == "http://[::1]:5985"
