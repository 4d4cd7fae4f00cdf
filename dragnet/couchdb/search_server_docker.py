"""The Nouveau server in a container of its own beside a CouchDB container dragnet started.

A Java image (docker/nouveau.Dockerfile: Debian with its OpenJDK, built once from the base images this
engine holds) runs the server unpacked on the host (dragnet.couchdb.search_server), bound in read-only. Both
containers join a network dragnet creates, `dragnet-nouveau-<port>-net`; CouchDB reaches the server by the
container's name and is told so live through /_node/_local/_config. Everything made carries the CouchDB
port's label (org.dragnet.couch.port), so `couch down` and `couch prune` find it. Talks to the Docker engine.
"""

from __future__ import annotations

import io
import tarfile

from dragnet.couchdb import control as ctl
from dragnet.couchdb import docker as couchdb_docker
from dragnet.couchdb import search_server as nouveau
from dragnet.couchdb.client import connect
from dragnet.errors import DragnetError
from dragnet.paths import data_root

JAVA = 21                  # trixie's OpenJDK: runs 3.5.0's server (Java 11+) and 3.5.2's (Java 21+)
IMAGE = f"dragnet/nouveau-jre:{JAVA}-trixie"
BASE = "debian:trixie-slim"
DOCKERFILE = "nouveau.Dockerfile"
PORT, ADMIN_PORT = 5987, 5988   # inside the container; never published on the host


def container_name(couch_port: int) -> str:
    return f"dragnet-nouveau-{couch_port}"


def network_name(couch_port: int) -> str:
    return f"dragnet-nouveau-{couch_port}-net"


def _context() -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        tf.add(str(data_root() / "docker" / DOCKERFILE), arcname=DOCKERFILE)
    buf.seek(0)
    return buf


def ensure_image(c, env: dict | None = None, progress=None) -> str:
    """The Java image, built on first use from the engine's own Debian base (no registry pull)."""
    from docker.errors import APIError, ImageNotFound

    try:
        return c.images.get(IMAGE).id
    except ImageNotFound:
        pass
    try:
        c.images.get(BASE)
    except ImageNotFound:
        raise DragnetError(f"the Docker engine has no {BASE} image to build {IMAGE} from: load the base "
                           f"images first (../shared/docker/make-base-images)") from None
    kw, _settings = couchdb_docker.build_options(env)
    kw.pop("buildargs", None)
    log = ctl.state_dir(env) / f"build-{IMAGE.replace('/', '_').replace(':', '_')}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        try:
            for chunk in c.api.build(fileobj=_context(), custom_context=True, dockerfile=DOCKERFILE, tag=IMAGE,
                                     rm=True, forcerm=True, decode=True, buildargs={"BASE": BASE},
                                     labels={"org.dragnet.image": "nouveau-jre"}, network_mode=kw["network_mode"]):
                out.write(str(chunk.get("stream") or chunk.get("error") or ""))
                if "error" in chunk:
                    raise DragnetError(f"building {IMAGE} failed: {str(chunk['error']).strip()[:200]} (log {log})")
                if progress and (chunk.get("stream") or "").strip():
                    progress(chunk["stream"].strip())
        except APIError as exc:
            raise DragnetError(f"building {IMAGE} failed: {couchdb_docker._short(exc)} (log {log})") from None
    return c.images.get(IMAGE).id


def up(inst: ctl.Instance, *, heap: str | None = None, timeout: float = nouveau.START_TIMEOUT,
       env: dict | None = None, progress=None) -> nouveau.Server:
    """Start the server matching the CouchDB in container `inst` and point that CouchDB at it."""
    from docker.errors import APIError, NotFound

    nouveau.check_heap(heap)
    user, password = ctl.admin_credentials(env)
    version = ctl.server_info(inst).get("version")
    if not version:
        raise DragnetError(f"the CouchDB on port {inst.port} does not answer: cannot tell its Nouveau version")
    home = nouveau.unpack(nouveau.tarball_for(version, env), version, env)
    need = nouveau.java_needed(home)
    if need > JAVA:
        raise DragnetError(f"Nouveau {version} needs Java {need} or newer; found Java {JAVA} ({IMAGE})")
    c = couchdb_docker.client(env)
    ensure_image(c, env, progress)
    run_dir = ctl.state_dir(env) / f"nouveau-{inst.port}"
    run_dir.mkdir(parents=True, exist_ok=True)
    yaml = run_dir / "nouveau-docker.yaml"
    yaml.write_text(nouveau.render_yaml((home / "nouveau.yaml").read_text(), port=PORT, admin_port=ADMIN_PORT,
                                        root_dir="/data").replace("bindHost: 127.0.0.1", "bindHost: 0.0.0.0"))
    name, net_name = container_name(inst.port), network_name(inst.port)
    labels = {couchdb_docker.LABEL: str(inst.port), "org.dragnet.nouveau": version}
    for stale in c.containers.list(all=True, filters={"name": f"^{name}$"}):
        stale.remove(force=True, v=True)
    try:
        net = c.networks.get(net_name)
    except NotFound:
        net = c.networks.create(net_name, driver="bridge", labels=labels)
    argv = ["java", *([f"-Xmx{heap}"] if heap else []), "-jar", f"/opt/nouveau/nouveau-{version}.jar", "server",
            "/etc/dragnet/nouveau.yaml"]
    try:
        # only the admin port reaches the host (its health check: a bridge's addresses may not be routable
        # from here); CouchDB talks to the server over the network
        container = c.containers.run(IMAGE, argv, name=name, detach=True, labels=labels, network=net_name,
                                     ports={f"{ADMIN_PORT}/tcp": ("127.0.0.1", None)},
                                     volumes={str(home): {"bind": "/opt/nouveau", "mode": "ro"},
                                              str(yaml): {"bind": "/etc/dragnet/nouveau.yaml", "mode": "ro"}})
    except APIError as exc:
        _remove(c, inst.port)
        raise DragnetError(f"starting the Nouveau container failed: {couchdb_docker._short(exc)}") from None
    try:
        container.reload()
        bound = (container.attrs["NetworkSettings"]["Ports"] or {}).get(f"{ADMIN_PORT}/tcp") or []
        server = nouveau.Server(couch_port=inst.port, version=version, url=f"http://{name}:{PORT}",
                                admin_port=int(bound[0]["HostPort"]) if bound else 0,   # the host's, on loopback
                                pid=int(container.attrs["State"]["Pid"]), pid_start=None,
                                java=f"{IMAGE} java", java_version=JAVA, heap=heap, run_dir=str(run_dir),
                                log=f"docker logs {name}", container=name)
        nouveau._save(server, env)   # before waiting: `couch down` removes a failed start
        if not bound:
            raise DragnetError(f"the Nouveau container {name} has no published admin port")

        def ended() -> str | None:
            container.reload()
            if container.status in ("created", "running"):
                return None
            tail = container.logs(tail=5).decode(errors="replace").strip().splitlines()
            return f"container {container.status}: {tail[-1] if tail else ''}"

        nouveau.wait_healthy(server, timeout, ended, f"`docker logs {name}`")
        couch_container = c.containers.get(inst.container or inst.container_name)
        if net_name not in (couch_container.attrs.get("NetworkSettings", {}).get("Networks") or {}):
            net.connect(couch_container)
        couch = connect(inst.url, user=user, password=password)
        for key, value in nouveau.settings(server).items():
            section, _, k = key.partition("/")
            couch.request("PUT", f"/_node/_local/_config/{section}/{k}", json=value, ok=(200,))
    except BaseException:
        _remove(c, inst.port)
        nouveau.state_path(inst.port, env).unlink(missing_ok=True)
        raise
    return server


def stop(server: nouveau.Server, *, env: dict | None = None) -> bool:
    """Remove the server's container and its network; whether it was running."""
    running = _remove(couchdb_docker.client(env), server.couch_port)
    nouveau.state_path(server.couch_port, env).unlink(missing_ok=True)
    return running


def _remove(c, couch_port: int) -> bool:
    """Remove the container and the network (after disconnecting the CouchDB container) dragnet made for
    the Nouveau server of this CouchDB port."""
    from docker.errors import NotFound

    running = False
    try:
        container = c.containers.get(container_name(couch_port))
        running = container.status == "running"
        container.stop(timeout=10)
        container.remove(v=True)
    except NotFound:
        pass
    try:
        net = c.networks.get(network_name(couch_port))
        net.reload()
        for cid in list((net.attrs.get("Containers") or {}).keys()):
            try:
                net.disconnect(cid, force=True)
            except Exception:   # gone meanwhile
                pass
        net.remove()
    except NotFound:
        pass
    return running


def stop_any(couch_port: int, env: dict | None = None) -> bool:
    """Stop the Nouveau server recorded for this CouchDB port, whichever backend runs it."""
    server = nouveau.load(couch_port, env)
    if server is None:
        return False
    return stop(server, env=env) if server.container else nouveau.stop(couch_port, env=env)
