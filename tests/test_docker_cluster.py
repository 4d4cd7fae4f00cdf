"""Clusters of dragnet's image, run for real: `couch up --backend docker --nodes 3`, the income view built on a
database of q=8 shards with n=1 and again with n=3, then `couch down --purge`; and docker/compose.yaml brought
up, joined and taken down with docker-compose (or `docker compose`).

What it proves: the three containers join on a network of their own, published on loopback only, no secret in
their command lines; every shard replica's indexer task is seen with its node, one of the three; pidstat is
reported per node from each container's own processes (beam and couchjs, not docker-proxy); with n=3 the
cluster indexes every change three times; results record the nodes, q and n; nothing dragnet (or compose)
made is left. Small on purpose (1,000 docs): CI runs it on a shared 2-core host, and it checks counts, not speed.

Needs a Docker engine and the image in DRAGNET_TEST_DOCKER_IMAGE; skips otherwise (the compose test also
without docker-compose).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import DOCKER_REPORT, cluster_build, couch_env
from test_docker_image import IMAGE, SECRET, _down_leaves_nothing, _free_port

from dragnet.couchdb import cluster as cluster
from dragnet.couchdb import control as ctl
from dragnet.couchdb import docker as dk
from dragnet.cli import main
from dragnet.measure import beam
from dragnet.couchdb.client import CouchError, connect, db_path

pytestmark = [pytest.mark.docker, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent
COMPOSE = REPO / "docker" / "compose.yaml"
N_DOCS = 3000   # a build of several seconds even on n=1 (1,000 took 1.4 s): pidstat's 1 s samples see every node's couchjs
Q = 8


def test_three_containers_build_q8_n1_and_n3(engine, tmp_path):
    env = couch_env(tmp_path, SECRET)
    port = _free_port(3)
    url = f"http://127.0.0.1:{port}"
    runner = CliRunner()
    data = tmp_path / "decl.jsonl"
    r = runner.invoke(main, ["generate", "-n", str(N_DOCS), "--seed", "7", "--normalise", "-o", str(data)], env=env)
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, ["couch", "up", "--backend", "docker", "--image", IMAGE, "--port", str(port),
                             "--nodes", "3", "--json"], env=env)
    try:
        assert r.exit_code == 0, r.output
        assert SECRET not in r.output
        names = sorted(f"couchdb@{dk.node_host(p)}" for p in range(port, port + 3))
        m = cluster.membership(url, "admin", SECRET)
        assert sorted(m["all_nodes"]) == sorted(m["cluster_nodes"]) == names
        assert connect(f"http://admin:{SECRET}@127.0.0.1:{port + 2}").get("/_cluster_setup")["state"] == \
            "cluster_finished"
        net = engine.networks.get(dk.network_name(port))
        assert net.attrs["Labels"] == {dk.LABEL: str(port)}
        containers = {f"couchdb@{dk.node_host(p)}": engine.containers.get(dk.container_name(p))
                      for p in range(port, port + 3)}
        for container in containers.values():
            assert set(container.attrs["NetworkSettings"]["Networks"]) == {net.name}
            # published on loopback only; the nodes talk over the network the command made
            assert [b["HostIp"] for b in container.attrs["HostConfig"]["PortBindings"]["5984/tcp"]] == ["127.0.0.1"]
            assert SECRET not in json.dumps(container.attrs["Args"]) + json.dumps(container.attrs["Path"])

        figures = {}
        for n in (1, 3):
            res, output, fig = cluster_build(runner, env, url, data, Q, n, tmp_path / f"n{n}", SECRET)
            assert sorted(res["db"]["nodes"]) == names
            figures[n] = fig
            # every shard replica's task, each on one of the three containers
            assert fig.tasks_seen == Q * n and len({sh.shard for sh in fig.per_shard}) == Q
            assert {sh.node for sh in fig.per_shard} <= set(names)
            assert len({(sh.shard, sh.node) for sh in fig.per_shard}) == Q * n   # n copies on n distinct nodes
            assert n * res["db"]["doc_count"] <= fig.done <= n * res["db"]["doc_count"] + fig.tasks_seen
            assert res["summary"]["map_calls"] == n * N_DOCS
            assert f"(q={Q} n={n} on 3 nodes)" in output
            # pidstat per node, each from its own container's process tree: its beam and its couchjs
            ps = res["pidstat"]
            assert ps["note"] is None and "docker-proxy" not in ps["summary"]
            assert sorted(ps["per_node"]) == names
            # beam's activity: one record per node, each with work; the loaders seen (a short one may live
            # between two samples of its node)
            beam_nodes = res["beam_activity"]["nodes"]
            assert sorted(beam_nodes) == names, res["beam_activity"]
            assert all(beam.summary(res["beam_activity"])["nodes"][x]["work_s"] > 0 for x in names)
            assert sum(beam.reductions_by_kind(beam_nodes[x]).get("loader", 0) for x in names) > 0
            scope = res["pidstat_scope"]["nodes"]
            for name, container in containers.items():
                assert scope[name]["root_pid"] == container.attrs["State"]["Pid"]
                node = ps["per_node"][name]
                assert node["beam"]["processes"] == 1, node
                assert node["beam"]["intervals"] >= 1
                # every node mapped its shards in its own couchjs. pidstat samples once a second, and under
                # load a node's share of the build can fall between two samples, so ask the container: the
                # query-server pool keeps couchjs after the build
                assert any("couchjs" in p[-1] for p in container.top()["Processes"]), container.top()
                assert f"node {name}:" in output
            DOCKER_REPORT.append(
                f"cluster of 3 containers, q={Q} n={n}: {fig.tasks_seen} tasks, {fig.done} changes done, "
                f"{res['summary']['wall_time_s'] or 0:.1f} s wall; couchjs per node "
                + ", ".join(str(ps["per_node"][x].get("couchjs", {}).get("processes", "unsampled")) for x in names))
        assert 2.9 <= figures[3].done / figures[1].done <= 3.1, (figures[3].done, figures[1].done)
    finally:
        _down_leaves_nothing(engine, env, port, nodes=3)
    assert ctl.list_states(env) == []


# --- docker/compose.yaml ------------------------------------------------------------------------------

def _compose_command() -> list[str] | None:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    return None


def test_compose_file_runs_a_three_node_cluster(engine, tmp_path):
    compose = _compose_command()
    if compose is None:
        pytest.skip("neither docker-compose nor `docker compose` is installed")
    port = _free_port(3)
    project = f"dragnet-compose-{port}"
    cookie, secret = secrets.token_hex(16), secrets.token_hex(16)
    # the settings in a 0600 file, as docs/couchdb-backends.md says: no secret on compose's command line
    env_file = tmp_path / "couch.env"
    env_file.touch(mode=0o600)
    env_file.write_text(f"COUCHDB_USER=admin\nCOUCHDB_PASSWORD={SECRET}\nCOUCHDB_SECRET={secret}\n"
                        f"COUCHDB_COOKIE={cookie}\nDRAGNET_IMAGE={IMAGE}\n"
                        + "".join(f"DRAGNET_PORT{i + 1}={port + i}\n" for i in range(3)))
    # the shell's variables would override the file's
    run_env = {k: v for k, v in os.environ.items() if not k.startswith(("COUCHDB_", "DRAGNET_IMAGE", "DRAGNET_PORT"))}
    base = [*compose, "-p", project, "--env-file", str(env_file), "-f", str(COMPOSE)]

    def run(*args: str) -> str:
        out = subprocess.run([*base, *args], capture_output=True, text=True, env=run_env, timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr
        return out.stdout + out.stderr

    label = f"com.docker.compose.project={project}"
    try:
        up = run("up", "-d", "--no-build")
        assert SECRET not in up and cookie not in up
        for p in range(port, port + 3):
            ctl.wait_up(f"http://127.0.0.1:{p}", 120)
        # the calls the docs' curl lines make (dragnet.couchdb.cluster.join makes the same)
        names = [f"couchdb@couchdb{i}.dragnet" for i in (1, 2, 3)]
        nodes = [cluster.Node(i + 1, port + i, name) for i, name in enumerate(names)]
        assert cluster.join(f"http://127.0.0.1:{port}", nodes, "admin", SECRET) == names
        m = cluster.membership(f"http://127.0.0.1:{port + 2}", "admin", SECRET)
        assert sorted(m["all_nodes"]) == sorted(m["cluster_nodes"]) == names
        couch = connect(f"http://admin:{SECRET}@127.0.0.1:{port + 1}")
        assert couch.get("/_cluster_setup")["state"] == "cluster_finished"

        containers = engine.containers.list(filters={"label": label})
        assert len(containers) == 3
        for container in containers:
            assert container.attrs["Config"]["Image"] == IMAGE
            assert [b["HostIp"] for b in container.attrs["HostConfig"]["PortBindings"]["5984/tcp"]] == ["127.0.0.1"]
            # the cookie reaches the node as the entrypoint's 0600 file, on no process's command line
            argv = json.dumps(container.attrs["Args"]) + json.dumps(container.attrs["Path"]) + \
                json.dumps(container.top(ps_args="-eo pid,args"))
            assert "beam" in argv and cookie not in argv and SECRET not in argv and "setcookie" not in argv
            mode = container.exec_run(["stat", "-c", "%a", "/opt/couchdb/.erlang.cookie"]).output.decode().strip()
            assert mode == "600"
        # a database spread over the three nodes answers through another one once the shard map reaches it
        couch.put(db_path("spread"), params={"q": "3", "n": "3"})
        couch.post(f"{db_path('spread')}/_bulk_docs", {"docs": [{"n": i} for i in range(30)]})
        other, deadline = connect(f"http://admin:{SECRET}@127.0.0.1:{port + 2}"), time.monotonic() + 60

        def count() -> int | None:
            try:
                return other.get(db_path("spread"))["doc_count"]
            except CouchError:
                return None

        while count() != 30 and time.monotonic() < deadline:
            time.sleep(1)
        assert count() == 30
    finally:
        down = run("down", "-v", "--timeout", "10")
    assert SECRET not in down and cookie not in down
    assert engine.containers.list(all=True, filters={"label": label}) == []
    assert engine.volumes.list(filters={"label": label}) == []
    assert engine.networks.list(filters={"label": label}) == []
