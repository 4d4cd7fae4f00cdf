"""dragnet.cluster: the plan of nodes, the _cluster_setup calls, the record `couch down` reads; and, with a
CouchDB release (DRAGNET_COUCHDB_HOME), a real 3-node local cluster."""

from __future__ import annotations

import os

import pytest

from dragnet import cluster
from dragnet.errors import UsageError


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
