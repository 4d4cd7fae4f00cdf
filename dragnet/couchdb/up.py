"""`dragnet couch up` as one library call: `up(request, on_event)` checks the options, starts one CouchDB
(and its Nouveau server) or a cluster, and returns what report/render prints (console.couch_up, json.couch_up).

Progress goes to on_event(kind, data): "starting" (data["message"]: what is being started), "progress"
(data["message"]: the latest line of the start) and "started" (the start is over, the report is next).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from dragnet.errors import UsageError

Events = Callable[[str, dict], None]


@dataclass(frozen=True)
class UpRequest:
    """The options of `dragnet couch up`. home_given: --couchdb-home came from the command line (not the
    environment), where it only fits --backend local."""

    backend: str = "docker"
    storage_kind: str = "disk"
    data_dir: str | None = None
    data_size: str = "0"
    port: int = 5984
    cpus: float | None = None
    memory: str | None = None
    couchdb_home: str | None = None
    home_given: bool = False
    image: str | None = None
    timeout: float = 120.0
    nodes: int = 1
    nouveau: bool = False
    nouveau_heap: str | None = None


@dataclass
class UpOutcome:
    """What was started: `report` is the JSON shown (the instance described and its /, or the cluster's
    nodes and _membership); `instances` the CouchDBs started, `search` the Nouveau server or None."""

    report: dict
    instances: list
    search: Any = None
    nodes: int = 1


def up(r: UpRequest, on_event: Events | None = None) -> UpOutcome:
    """Check the request (a one-line UsageError before anything starts), then start it and wait for /_up."""
    on_event = on_event or (lambda kind, data: None)
    from dragnet.couchdb import storage as storage

    size = storage.parse_size(r.data_size)
    if r.backend == "local" and r.image:
        raise UsageError("--image applies to --backend docker only")
    if r.backend == "docker" and r.couchdb_home and r.home_given:
        raise UsageError("--couchdb-home applies to --backend local only")
    if r.nouveau_heap and not r.nouveau:
        raise UsageError("--nouveau-heap needs --nouveau")
    if r.nouveau and r.nodes != 1:
        raise UsageError("--nouveau runs beside one CouchDB (--nodes 1)")
    if r.nodes != 1:
        return _cluster_up(r, size, on_event)

    def progress(line: str) -> None:
        on_event("progress", {"message": line[-100:]})

    search = None
    on_event("starting", {"message": f"starting CouchDB ({r.backend}) on port {r.port}"})
    if r.backend == "docker":
        from dragnet.couchdb import docker as couchdb_docker

        inst = couchdb_docker.up(port=r.port, storage_kind=r.storage_kind, data_dir=r.data_dir, image=r.image,
                                 cpus=r.cpus, memory=r.memory, data_size=size, timeout=r.timeout, progress=progress)
        if r.nouveau:
            from dragnet.couchdb import search_server_docker as nouveau_docker

            try:
                search = nouveau_docker.up(inst, heap=r.nouveau_heap, timeout=r.timeout, progress=progress)
            except BaseException:
                couchdb_docker.stop(inst, timeout=5)
                raise
    else:
        from dragnet.couchdb import local as couchdb_local
        from dragnet.couchdb import search_server as couchdb_nouveau

        options = dict(port=r.port, storage_kind=r.storage_kind, data_dir=r.data_dir, home=r.couchdb_home,
                       cpus=r.cpus, memory=r.memory, data_size=size, timeout=r.timeout)
        if r.nouveau:
            inst, search = couchdb_nouveau.couch_up_local(heap=r.nouveau_heap, nouveau_timeout=r.timeout, **options)
        else:
            inst = couchdb_local.up(**options)
    on_event("started", {})
    from dragnet.couchdb.control import describe, server_info

    report = {**describe(inst), **server_info(inst)}
    if search is not None:
        report["nouveau"] = {"url": search.url, "version": search.version, "pid": search.pid,
                             "java": search.java, "java_version": search.java_version, "heap": search.heap,
                             "log": search.log}
    return UpOutcome(report, [inst], search)


def _cluster_up(r: UpRequest, size: int, on_event: Events) -> UpOutcome:
    from dragnet.couchdb import cluster as cluster
    from dragnet.couchdb.control import admin_credentials, describe, server_info

    if r.data_dir:
        raise UsageError("--data-dir names one directory: a cluster's nodes each get their own under the state dir")
    options = dict(storage_kind=r.storage_kind, cpus=r.cpus, memory=r.memory, data_size=size, timeout=r.timeout)
    on_event("starting", {"message": f"starting a {r.nodes}-node CouchDB cluster on ports "
                                     f"{r.port}-{r.port + r.nodes - 1}"})
    if r.backend == "docker":
        started = cluster.up_docker(nodes=r.nodes, port=r.port,
                                    progress=lambda line: on_event("progress", {"message": line[-100:]}),
                                    image=r.image, **options)
    else:
        started = cluster.up_local(nodes=r.nodes, port=r.port,
                                   progress=lambda line: on_event("progress", {"message": line}),
                                   home=r.couchdb_home, **options)
    on_event("started", {})
    members = cluster.membership(started[0].url, *admin_credentials())
    report = {"nodes": [{**describe(i), **server_info(i)} for i in started],
              "cluster_nodes": members.get("cluster_nodes", [])}
    return UpOutcome(report, started, nodes=r.nodes)
