"""`dragnet couch up|down|status`: start, stop and inspect a CouchDB for benchmarking."""

from __future__ import annotations

import click

from dragnet.cli.options import json_option, print_json, server_option
from dragnet.couchdb.control import describe
from dragnet.report.render.console import couch_where, prune_item

BACKENDS = ("docker", "local")


def _backend_module(name: str):
    if name == "docker":
        from dragnet.couchdb import docker as mod
    else:
        from dragnet.couchdb import local as mod
    return mod


@click.group("couch")
def couch_cmd() -> None:
    """Start, stop and inspect a CouchDB 3.5 (Docker image or a local release).

    The admin comes from COUCHDB_USER / COUCHDB_PASSWORD; the password is never printed.
    """


@couch_cmd.command("up")
@click.option("--backend", type=click.Choice(BACKENDS), envvar="DRAGNET_COUCH_BACKEND", default="docker",
              show_default=True, help="docker: dragnet's image; local: an installed CouchDB release.")
@click.option("--storage", "storage_kind", type=click.Choice(["disk", "tmpfs"]), default="disk", show_default=True,
              help="Where databases and view indexes live.")
@click.option("--data-dir", type=click.Path(file_okay=False), help="Host directory for the data "
              "(default: a docker volume, or a directory under dragnet's state dir / on /dev/shm).")
@click.option("--data-size", default="0", show_default=True,
              help="Expected data size (e.g. 2g) to check that tmpfs data fits in free memory.")
@click.option("--port", type=int, default=5984, show_default=True, help="Host port for CouchDB's HTTP API.")
@click.option("--cpus", type=float, help="CPU limit (docker: fractional; local: pins this many whole CPUs).")
@click.option("--memory", help="Memory limit, e.g. 4g (docker only).")
@click.option("--couchdb-home", envvar="DRAGNET_COUCHDB_HOME", help="The CouchDB release for --backend local "
              "[default: /opt/couchdb; env DRAGNET_COUCHDB_HOME].")
@click.option("--image", help="Docker image to run [default: dragnet/couchdb:3.5.0, built from "
              "docker/Dockerfile when missing].")
@click.option("--timeout", type=float, default=120.0, show_default=True,
              help="Seconds to wait for /_up (and for the Nouveau server's health check).")
@click.option("--nodes", type=int, default=1, show_default=True, help="Start a cluster of this many nodes "
              "on ports --port, --port+1, ... (docker: one container each, on a network of their own) "
              "and complete _cluster_setup.")
@click.option("--nouveau", is_flag=True, help="Also start the Nouveau (search) server of this CouchDB's version "
              "(from DRAGNET_NOUVEAU_DIR, default ../shared/nouveau; docker: in its own container on a network "
              "of its own) and point CouchDB at it.")
@click.option("--nouveau-heap", default=None, metavar="SIZE", help="With --nouveau: the JVM's -Xmx (e.g. 1g) "
              "[default: the JVM's own].")
@server_option
@json_option
def up_cmd(backend, storage_kind, data_dir, data_size, port, cpus, memory, couchdb_home, image, timeout,
           nodes, nouveau, nouveau_heap, server_opts, as_json) -> None:
    """Start CouchDB and wait until it answers /_up."""
    from rich.console import Console

    from dragnet.couchdb import up as couch_up
    from dragnet.report.render import console as render_console
    from dragnet.servers import available

    available.install(server_opts)   # registered in the CouchDB started (COUCHDB_QUERY_SERVER_<NAME>)
    home_given = bool(couchdb_home) and click.get_current_context().get_parameter_source(
        "couchdb_home") == click.core.ParameterSource.COMMANDLINE
    request = couch_up.UpRequest(backend=backend, storage_kind=storage_kind, data_dir=data_dir, data_size=data_size,
                                 port=port, cpus=cpus, memory=memory, couchdb_home=couchdb_home,
                                 home_given=home_given, image=image, timeout=timeout, nodes=nodes, nouveau=nouveau,
                                 nouveau_heap=nouveau_heap)
    console = Console(stderr=True)
    spinner = []

    def on_event(kind: str, data: dict) -> None:
        if kind == "starting":
            spinner.append(console.status(data["message"]))
            spinner[-1].start()
        elif kind == "progress":
            spinner[-1].update(data["message"])
        elif kind == "started":
            spinner.pop().stop()

    try:
        outcome = couch_up.up(request, on_event)
    finally:
        while spinner:
            spinner.pop().stop()
    if as_json:
        print_json(outcome.report)
    else:
        render_console.couch_up(outcome)


@couch_cmd.command("down")
@click.option("--port", type=int, help="Which CouchDB (needed when dragnet started several).")
@click.option("--timeout", type=float, default=30.0, show_default=True,
              help="Seconds to wait for a clean shutdown before killing.")
@click.option("--purge", is_flag=True, help="Also delete the data dragnet placed (its docker volume or "
              "directory; never a --data-dir you gave).")
@json_option
def down_cmd(port, timeout, purge, as_json) -> None:
    """Stop a CouchDB started by `dragnet couch up` (the data stays unless --purge)."""
    from dragnet.couchdb.control import select_state

    from dragnet.couchdb import cluster as cluster

    inst = select_state(port if port is not None else cluster.sole_cluster_port())
    if cluster.recorded(inst.port) is not None:
        stopped = cluster.down(inst.port, timeout=timeout, purge=purge)
        if as_json:
            print_json({"nodes": [{**describe(i), "was_running": r} for i, r in stopped], "purged": purge})
            return
        for node, was_running in stopped:
            click.echo(f"cluster node on port {node.port} {'stopped' if was_running else 'was not running'}"
                       f"{', its data deleted' if purge else ''}")
        return
    mod = _backend_module(inst.backend)
    wait = timeout if inst.backend == "local" else int(timeout)
    was_running = mod.stop(inst, timeout=wait, purge=purge)
    from dragnet.couchdb import search_server as couchdb_nouveau
    from dragnet.couchdb import search_server_docker as nouveau_docker

    search_was_running = nouveau_docker.stop_any(inst.port)
    if purge:
        couchdb_nouveau.purge(inst.port)
    if as_json:
        print_json({**describe(inst), "was_running": was_running, "purged": purge,
                    "nouveau_was_running": search_was_running})
        return
    if search_was_running:
        click.echo("its Nouveau server stopped")
    state = "stopped" if was_running else "was not running; state cleared"
    click.echo(f"CouchDB on port {inst.port} ({inst.backend}) {state}")
    if purge:
        click.echo("its data is deleted")
    elif inst.backend == "docker" and inst.volume:
        click.echo(f"data kept in docker volume {inst.volume} (`dragnet couch down --purge` next time drops it)")
    elif inst.data_dir:
        memory = " (in memory: `rm -r` it to free the memory)" if inst.storage == "tmpfs" else ""
        click.echo(f"data kept in {inst.data_dir}{memory}; `dragnet couch up` with the same port reuses it")


@couch_cmd.command("prune")
@click.option("--port", type=int, help="Only the objects labelled with this CouchDB's port.")
@click.option("--running", is_flag=True, help="Remove running containers too (by default they stay: another "
              "bench may be using one).")
@click.option("--dry-run", is_flag=True, help="List what would be removed; remove nothing.")
@json_option
def prune_cmd(port, running, dry_run, as_json) -> None:
    """Remove the Docker containers, volumes and networks dragnet made, found by its labels only.

    Lists them first. Never touches anything without dragnet's labels, nor a CouchDB `couch up` recorded
    here (`couch down --purge` for that), nor a volume or network still in use.
    """
    from dragnet.couchdb import prune as prune

    items = prune.find(port=port, running=running)
    if not as_json:
        click.echo(f"dragnet's Docker objects{f' of port {port}' if port is not None else ''}: {len(items)}"
                   + ("" if items else " (nothing to remove)"))
        for it in items:
            click.echo(f"  {prune_item(it)}" + (f": stays, {it.keep}" if it.keep else ""))
    if not dry_run:
        prune.remove(items)
    if as_json:
        print_json({"dry_run": dry_run, "objects": [it.as_dict() for it in items]})
        return
    if dry_run:
        return
    for it in items:
        if it.error:
            click.echo(f"  {prune_item(it)}: not removed ({it.error})")
    done = sum(it.removed for it in items)
    click.echo(f"removed {done}, kept {len(items) - done}")


@couch_cmd.command("status")
@click.option("--port", type=int, help="Only this CouchDB.")
@json_option
def status_cmd(port, as_json) -> None:
    """Show the CouchDBs dragnet started: backend, URL, process or container, storage, version."""
    from dragnet.couchdb import cluster as cluster
    from dragnet.couchdb.control import list_states, select_state

    # --port on a cluster's node shows every node of that cluster
    instances = cluster.instances(select_state(port).port) if port is not None else list_states()
    rows = []
    for inst in instances:
        rows.append({**describe(inst), **_backend_module(inst.backend).status(inst)})
        where = cluster.node_of(inst.port)
        if where is not None:
            rows[-1]["cluster"] = where
    if as_json:
        print_json({"instances": rows})
        return
    if not rows:
        click.echo("no CouchDB started by dragnet (`dragnet couch up` starts one)")
    for inst, row in zip(instances, rows):
        if row.get("up"):
            state = f"up, CouchDB {row.get('version')}"
        elif row.get("running") is None:
            state = f"unknown: {row.get('error')}"
        else:
            state = "running, not answering" if row["running"] else "not running"
        where = row.get("cluster")
        member = (f"  node {where['index']}/{where['nodes']} {where['name']} of the cluster on port {where['port']}"
                  if where else "")
        click.echo(f"{inst.display_url}  {inst.backend}  {state}{member}")
        click.echo("  " + couch_where(inst))
