"""A real 3-node CouchDB cluster of the release in DRAGNET_COUCHDB_HOME (set by `.ci/live-couchdb start`; the
test skips without it): `couch up --nodes 3`, one database with q=8 shards and n=1, another with n=3, the
income view built on both with `addview --benchmark`, then `bench` on the n=3 one, then `couch down`.

What it proves: every shard replica's indexer task is polled cluster-wide and shown with its node; pidstat
is reported per node; with n=3 the cluster indexes every change three times (the changes done sum to
3 x the n=1 build's); results record the nodes, q and n; `couch down` (no --port) leaves no beam behind.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import cluster_build, couch_env, free_port

from dragnet.couchdb import control as ctl
from dragnet.cli import main
from dragnet.measure import beam

REPO = Path(__file__).resolve().parent.parent
N_DOCS = 2400   # long enough (a few s on a quiet 2-core box) for pidstat to sample every node
Q = 8


def _release_home() -> str:
    home = os.environ.get("DRAGNET_COUCHDB_HOME")
    if not home or not (Path(home) / "bin" / "couchdb").exists():
        pytest.skip("no CouchDB release (DRAGNET_COUCHDB_HOME, set by .ci/live-couchdb start)")
    return home


def _three_free_ports() -> int:
    for _ in range(20):
        port = free_port()
        if port + 2 <= 65535 and not any(ctl.port_in_use(port + i) for i in range(3)):
            return port
    pytest.skip("no three consecutive free ports")


def _beams(port: int) -> list[str]:
    """beam processes of this cluster's nodes (named dragnet<port>@...), whoever started them."""
    out = subprocess.run(["pgrep", "-f", "-a", "--", f"beam.* -name dragnet({port}|{port + 1}|{port + 2})@"],
                         capture_output=True, text=True)
    assert out.returncode in (0, 1), out.stderr
    return out.stdout.splitlines()


@pytest.mark.live
@pytest.mark.slow
def test_live_three_node_cluster_n3_indexes_three_times_the_n1_work(tmp_path):
    home = _release_home()
    password = secrets.token_hex(12)
    env = couch_env(tmp_path, password)
    env["DRAGNET_COUCHDB_HOME"] = home
    port = _three_free_ports()
    url = f"http://127.0.0.1:{port}"
    runner = CliRunner()
    data = tmp_path / "decl.jsonl"
    r = runner.invoke(main, ["generate", "-n", str(N_DOCS), "--seed", "7", "--normalise", "-o", str(data)], env=env)
    assert r.exit_code == 0, r.output

    r = runner.invoke(main, ["couch", "up", "--backend", "local", "--nodes", "3", "--port", str(port),
                             "--timeout", "120", "--json"], env=env)
    try:
        assert r.exit_code == 0, r.output
        names = sorted(json.loads(r.stdout)["cluster_nodes"])
        assert names == [f"dragnet{port + i}@127.0.0.1" for i in range(3)]
        assert len(_beams(port)) == 3

        # status from any node's port shows all three
        r = runner.invoke(main, ["couch", "status", "--port", str(port + 2), "--json"], env=env)
        assert r.exit_code == 0, r.output
        rows = json.loads(r.stdout)["instances"]
        assert [(x["port"], x["up"], x["cluster"]["index"]) for x in rows] == [(port + i, True, i + 1) for i in range(3)]

        figures = {}
        for n in (1, 3):
            res, output, fig = cluster_build(runner, env, url, data, Q, n, tmp_path / f"n{n}", password)
            assert sorted(res["db"]["nodes"]) == names
            figures[n] = fig
            # every shard replica's task seen, from every node, through the coordinator's /_active_tasks
            assert fig.tasks_seen == Q * n and fig.shards == Q
            assert len({sh.shard for sh in fig.per_shard}) == Q
            assert {sh.node for sh in fig.per_shard} == set(names)   # q=8 over 3 nodes: every node has shards
            # each replica indexes every change of its range once (the docs, the view's own design doc); a
            # task's changes_done ends one past its total_changes at times (CouchDB counts so): at most +1 a task
            assert n * res["db"]["doc_count"] <= fig.done <= n * res["db"]["doc_count"] + fig.tasks_seen, \
                (fig.done, res["db"]["doc_count"])
            # the query servers of all nodes, summed: every doc mapped once per replica
            assert res["summary"]["map_calls"] == n * N_DOCS, res["query_server_stats"]["delta"]
            assert sorted(res["query_server_stats"]["after"]["per_node"]) == names
            for name in names:                                       # the node column of the per-shard table
                assert any(line.startswith(name + " ") for line in output.splitlines()), output
            assert f"(q={Q} n={n} on 3 nodes)" in output
            # pidstat per node: each node's own beam, in the JSON and in the text
            per_node = res["pidstat"]["per_node"]
            assert sorted(per_node) == names
            assert all(per_node[name]["beam"]["processes"] == 1 for name in names), per_node
            scope = res["pidstat_scope"]["nodes"]
            assert len({scope[name]["root_pid"] for name in names}) == 3
            assert all(f"node {name}:" in output for name in names)
            # beam's activity: one record per node, each with work; the loaders seen (a short one may live
            # between two samples of its node)
            beam_nodes = res["beam_activity"]["nodes"]
            assert sorted(beam_nodes) == names, res["beam_activity"]
            assert all(beam.summary(res["beam_activity"])["nodes"][x]["work_s"] > 0 for x in names)
            assert sum(beam.reductions_by_kind(beam_nodes[x]).get("loader", 0) for x in names) > 0
        assert 2.9 <= figures[3].done / figures[1].done <= 3.1, (figures[3].done, figures[1].done)

        # bench on the n=3 database records the cluster in its manifest, per-node resources in each run
        r = runner.invoke(main, ["bench", "--url", url, "--db", f"cluster_q{Q}_n3", "--languages", "javascript",
                                 "--repeat", "1", "--no-baseline", "--no-ceiling", "--results", str(tmp_path / "bench")], env=env)
        assert r.exit_code == 0, r.output
        manifest = json.loads((tmp_path / "bench" / "bench.json").read_text())
        assert manifest["cluster"]["q"] == Q and manifest["cluster"]["n"] == 3
        assert sorted(manifest["cluster"]["nodes"]) == names
        run = manifest["runs"][0]
        assert run["status"] == "ok", run
        res = json.loads((tmp_path / "bench" / run["result_file"]).read_text())
        assert sorted(res["pidstat"]["per_node"]) == names
    finally:
        # no --port: the only CouchDBs this state dir knows are the cluster's nodes
        r = runner.invoke(main, ["couch", "down", "--purge", "--json"], env=env)
    assert r.exit_code == 0, r.output
    stopped = json.loads(r.stdout)["nodes"]
    assert sorted(x["port"] for x in stopped) == [port, port + 1, port + 2]
    assert all(x["was_running"] for x in stopped)
    assert _beams(port) == []
    assert ctl.list_states(env) == []
    assert not any(ctl.port_in_use(port + i) for i in range(3))
