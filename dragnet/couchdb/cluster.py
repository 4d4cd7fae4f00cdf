"""N CouchDB nodes joined into one cluster: the plan (ports, node names) and the `_cluster_setup` calls.

Backends start the nodes (couchdb_local: N processes of one release on one host; couchdb_docker: N
containers on a network of their own, each published on 127.0.0.1 only); this module decides
what they are called and joins them. The nodes share one `[chttpd_auth] secret` and the Erlang cookie
(~/.erlang.cookie, never argv). Node 1 is the coordinator: its port is the cluster's `--port`, and the
cluster is recorded in `cluster-<port>.json` beside the nodes' own state files so `couch down` stops all.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from dragnet.couchdb import control as ctl
from dragnet.couchdb.client import Couch, CouchError, connect, db_path, mask_url
from dragnet.errors import DragnetError, UsageError

MAX_NODES = 9


@dataclass(frozen=True)
class Node:
    index: int  # 1-based
    port: int
    name: str   # Erlang node name, as _membership lists it


def plan(nodes: int, port: int, backend: str = "local") -> list[Node]:
    """Node i listens on port + i - 1 and is called dragnet<port>@127.0.0.1 (distinct for epmd), or in
    docker couchdb@n<port>.dragnet (its alias on the cluster's network)."""
    if backend == "docker":
        from dragnet.couchdb.docker import node_host

        def name(p: int) -> str:
            return f"couchdb@{node_host(p)}"
    else:
        from dragnet.couchdb.local import node_name as name

    if not 1 <= nodes <= MAX_NODES:
        raise UsageError(f"--nodes {nodes}: expected 1 to {MAX_NODES}")
    if port + nodes - 1 > 65535:
        raise UsageError(f"--port {port} with --nodes {nodes}: ports run past 65535")
    return [Node(i + 1, port + i, name(port + i)) for i in range(nodes)]


def setup_requests(nodes: list[Node]) -> list[tuple[str, str, dict]]:
    """The HTTP calls on the coordinator that join the others and finish the setup (method, path, body)."""
    calls = [("PUT", f"/_node/_local/_nodes/{n.name}", {}) for n in nodes[1:]]
    calls.append(("POST", "/_cluster_setup", {"action": "finish_cluster"}))
    return calls


def join(coordinator_url: str, nodes: list[Node], user: str, password: str, *, timeout: float = 60.0) -> list[str]:
    """Join nodes into the coordinator's cluster, finish _cluster_setup, wait until every node's
    _membership lists all of them. Returns the membership."""
    couch = connect(coordinator_url, user=user, password=password, env={})
    for method, path, body in setup_requests(nodes):
        # 409: already a member (a repeated join); finish_cluster answers 400 when already finished
        couch.request(method, path, json=body, ok=(200, 201, 202, 400, 409))
    want = sorted(n.name for n in nodes)
    deadline = time.monotonic() + timeout
    # the nodes database reaches the other nodes a moment after the coordinator: ask each one (the
    # coordinator is one of them)
    for url in [node_url(coordinator_url, n.port) for n in nodes]:
        each = connect(url, user=user, password=password, env={})
        while True:
            got = sorted(each.get("/_membership").get("cluster_nodes", []))
            if got == want:
                break
            if time.monotonic() > deadline:
                raise DragnetError(f"cluster setup: _membership at {mask_url(url)} lists {got}, expected {want} "
                                   f"after {timeout:.0f} s")
            time.sleep(0.5)
    return want


def node_url(coordinator_url: str, port: int) -> str:
    """The coordinator's URL (scheme, credentials, host) with another node's port."""
    parts = urlsplit(coordinator_url)
    host = parts.netloc.rpartition("@")
    hostport = host[2]
    bare = hostport.rsplit(":", 1)[0] if not hostport.endswith("]") else hostport
    return urlunsplit(parts._replace(netloc=f"{host[0]}{host[1]}{bare}:{port}"))


def membership(url: str, user: str, password: str) -> dict:
    return connect(url, user=user, password=password, env={}).get("/_membership")


# --- which nodes make a cluster (state beside the nodes' own) -----------------------------------------

def _record_path(port: int, env: dict | None = None) -> Path:
    return ctl.state_dir(env) / f"cluster-{port}.json"


def record(port: int, nodes: list[Node], backend: str, env: dict | None = None) -> None:
    path = _record_path(port, env)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"backend": backend, "port": port,
                                "nodes": [{"port": n.port, "name": n.name} for n in nodes]}, indent=2) + "\n")


def recorded(port: int, env: dict | None = None) -> dict | None:
    """The cluster whose any node listens on port, or None."""
    for path in sorted(ctl.state_dir(env).glob("cluster-*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if any(n["port"] == port for n in data.get("nodes", [])):
            return data
    return None


def node_of(port: int, env: dict | None = None) -> dict | None:
    """Where port's node sits in its recorded cluster: {port (the coordinator's), index, nodes, name}."""
    data = recorded(port, env)
    if data is None:
        return None
    nodes = data.get("nodes", [])
    i = next(i for i, n in enumerate(nodes) if n["port"] == port)
    return {"port": data["port"], "index": i + 1, "nodes": len(nodes), "name": nodes[i]["name"]}


def sole_cluster_port(env: dict | None = None) -> int | None:
    """The coordinator port when every CouchDB dragnet started is a node of one recorded cluster (so
    `couch down` needs no --port), else None."""
    states = ctl.list_states(env)
    clusters = {(recorded(s.port, env) or {}).get("port") for s in states}
    return clusters.pop() if states and len(clusters) == 1 and None not in clusters else None


def forget(port: int, env: dict | None = None) -> None:
    _record_path(port, env).unlink(missing_ok=True)


# --- local backend -------------------------------------------------------------------------------------

def up_local(*, nodes: int, port: int, env: dict | None = None, progress=None, **node_options) -> list[ctl.Instance]:
    """Start `nodes` local CouchDB nodes of one release and join them; on failure stop what started."""
    from dragnet.couchdb import local as couchdb_local

    user, password = ctl.admin_credentials(env)
    planned = plan(nodes, port)
    for n in planned:
        ctl.ensure_port_free(n.port)
    secret = secrets.token_hex(16)
    started: list[ctl.Instance] = []
    try:
        for n in planned:
            if progress:
                progress(f"starting node {n.index}/{nodes} ({n.name}, port {n.port})")
            started.append(couchdb_local.up(port=n.port, env=env, cluster_secret=secret, **node_options))
        if progress:
            progress(f"joining {nodes} nodes (_cluster_setup)")
        join(started[0].url, planned, user, password)
    except BaseException:
        for inst in started:
            couchdb_local.stop(inst, env=env, timeout=5, purge=couchdb_local.owned_data_dir(inst, env))
        raise
    record(port, planned, "local", env)
    return started


# --- docker backend ------------------------------------------------------------------------------------

def up_docker(*, nodes: int, port: int, env: dict | None = None, progress=None,
              **node_options) -> list[ctl.Instance]:
    """Start `nodes` containers of dragnet's image on a network this call creates, and join them; on
    failure remove what started (containers, their volumes, the network)."""
    from dragnet.couchdb import docker as dk

    user, password = ctl.admin_credentials(env)
    planned = plan(nodes, port, "docker")
    for n in planned:
        ctl.ensure_port_free(n.port)
    c = dk.client(env)
    network = dk.create_network(c, port)
    member = dk.ClusterMember(network=network.name, secret=secrets.token_hex(16), cookie=secrets.token_hex(16))
    started: list[ctl.Instance] = []
    try:
        for n in planned:
            if progress:
                progress(f"starting node {n.index}/{nodes} ({n.name}, port {n.port})")
            started.append(dk.up(port=n.port, env=env, member=member, progress=progress, **node_options))
        if progress:
            progress(f"joining {nodes} nodes (_cluster_setup)")
        join(started[0].url, planned, user, password)
    except BaseException:
        for inst in started:
            dk.stop(inst, env=env, c=c, timeout=5, purge=bool(inst.volume))
        dk.remove_network(port, c=c)
        raise
    record(port, planned, "docker", env)
    return started


def instances(port: int, env: dict | None = None) -> list[ctl.Instance]:
    """The recorded nodes of the cluster containing port (only port's instance when no cluster)."""
    data = recorded(port, env)
    if data is None:
        return [ctl.select_state(port, env)]
    out = [ctl.load_state(n["port"], env) for n in data["nodes"]]
    return [i for i in out if i is not None]


def down(port: int, *, env: dict | None = None, **stop_options) -> list[tuple[ctl.Instance, bool]]:
    """Stop every node of the cluster containing port (and a docker cluster's network); returns
    (node, was_running)."""
    from dragnet.couchdb import docker as couchdb_docker
    from dragnet.couchdb import local as couchdb_local

    data = recorded(port, env)
    out = []
    for inst in instances(port, env):
        mod = couchdb_docker if inst.backend == "docker" else couchdb_local
        opts = dict(stop_options, timeout=int(stop_options["timeout"])) if (
            inst.backend == "docker" and "timeout" in stop_options) else stop_options
        out.append((inst, mod.stop(inst, env=env, **opts)))
    if data is not None:
        if data.get("backend") == "docker":
            couchdb_docker.remove_network(data["port"], env=env)
        forget(data["port"], env)
    return out


def cluster_of(couch: Couch, db: str) -> dict:
    """The database's shards (q) and replicas (n) and the cluster's nodes, as the bench records them."""
    info = couch.get(db_path(db)).get("cluster") or {}
    try:
        nodes = couch.get("/_membership").get("cluster_nodes")
    except CouchError:
        nodes = None
    return {"q": info.get("q"), "n": info.get("n"), "nodes": nodes}
