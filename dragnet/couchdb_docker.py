"""Run dragnet's CouchDB image (docker/Dockerfile) through the Docker SDK.

The admin goes into the container's environment (COUCHDB_USER / COUCHDB_PASSWORD, read by the official
image's entrypoint), never into a command line or a message. Data lives on a named volume, a host
directory (--data-dir) or a tmpfs mount sized to the data.
"""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path
from typing import Callable

from . import couchdb_control as ctl
from . import paths
from . import storage
from .errors import DragnetError, UsageError
from .extras import require

# the Docker context: the checkout's docker/ and query_servers/, or an installed wheel's copy (dragnet.paths)
REPO = paths.data_root()
DOCKERFILE = "docker/Dockerfile"
DEFAULT_IMAGE = "dragnet/couchdb:3.5.0"
DATA_PATH = "/opt/couchdb/data"
LABEL = "org.dragnet.couch.port"
STOP_TIMEOUT = 30
# What the image is built from (the build context); everything else in the repo stays out.
CONTEXT_DIRS = ("docker", "query_servers")
_CONTEXT_SKIP_DIRS = {"build", "__pycache__", ".pytest_cache", "node_modules", ".venv"}
_CONTEXT_SKIP_SUFFIXES = (".o", ".pyc", ".so")


def docker_host(env: dict | None = None) -> str:
    env = os.environ if env is None else env
    return env.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def client(env: dict | None = None):
    """A Docker SDK client, or a DragnetError saying what to do when no engine answers."""
    docker = require("docker", "the docker backend (--backend docker)")
    from docker.errors import DockerException

    try:
        c = docker.from_env(environment=dict(os.environ if env is None else env))
        c.ping()
        return c
    except DockerException as exc:
        raise DragnetError(
            f"cannot connect to the Docker engine at {docker_host(env)}: is Docker running? Start it "
            f"(e.g. `sudo systemctl start docker`), set DOCKER_HOST, or use --backend local "
            f"({_short(exc)})") from None


def _short(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


def container_name(port: int) -> str:
    return f"dragnet-couchdb-{port}"


def volume_name(port: int) -> str:
    return f"dragnet-couchdb-{port}-data"


# --- build context (pure) --------------------------------------------------------------------------

def context_files(repo: Path = REPO) -> list[Path]:
    """Files sent to the engine to build the image: docker/ and query_servers/ minus build outputs."""
    out = []
    for top in CONTEXT_DIRS:
        for root, dirs, files in os.walk(repo / top):
            dirs[:] = sorted(d for d in dirs if d not in _CONTEXT_SKIP_DIRS and not d.startswith("."))
            for name in sorted(files):
                if not name.endswith(_CONTEXT_SKIP_SUFFIXES):
                    out.append(Path(root, name).relative_to(repo))
    return out


def build_context(repo: Path = REPO) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for rel in context_files(repo):
            tar.add(repo / rel, arcname=str(rel), recursive=False)
    buf.seek(0)
    return buf


# --- container settings (pure) ---------------------------------------------------------------------

def container_settings(*, image: str, port: int, user: str, password: str, storage_kind: str = "disk",
                       data_dir: str | None = None, data_size: int = 0, cpus: float | None = None,
                       memory: int | None = None, host: str = ctl.DEFAULT_HOST) -> dict:
    """Keyword arguments for client.containers.run(). Credentials only in `environment`."""
    if storage_kind not in ("disk", "tmpfs"):
        raise UsageError(f"--storage {storage_kind}: expected disk or tmpfs")
    kw: dict = {
        "image": image,
        "name": container_name(port),
        "detach": True,
        "environment": {"COUCHDB_USER": user, "COUCHDB_PASSWORD": password},
        "ports": {"5984/tcp": (host, port)},
        "labels": {LABEL: str(port)},
    }
    if cpus is not None:
        if cpus <= 0:
            raise UsageError(f"--cpus {cpus:g}: must be positive")
        kw["nano_cpus"] = int(cpus * 1e9)
    if memory is not None:
        kw["mem_limit"] = memory
    if storage_kind == "tmpfs":
        if data_dir is not None:
            raise UsageError("--data-dir with --storage tmpfs: the docker backend mounts its own tmpfs; "
                             "drop --data-dir")
        size = data_size + storage.DEFAULT_RESERVE if data_size else None
        opts = "mode=0777" + (f",size={size}" if size else "")
        kw["tmpfs"] = {DATA_PATH: opts}
    elif data_dir is not None:
        kw["volumes"] = {str(Path(data_dir).expanduser().resolve()): {"bind": DATA_PATH, "mode": "rw"}}
    else:
        kw["volumes"] = {volume_name(port): {"bind": DATA_PATH, "mode": "rw"}}
    return kw


def check_tmpfs_fits(data_size: int, memory: int | None, env: dict | None = None) -> None:
    """tmpfs pages count against the container's memory limit and the host's free memory."""
    if memory is not None:
        storage.check_fits(data_size, memory=memory, where="the container's --memory")
    if docker_host(env).startswith("unix://"):  # only a local engine shares this machine's memory
        storage.check_fits(data_size, memory=storage.available_memory())


# --- image -----------------------------------------------------------------------------------------

def ensure_image(c, image: str, *, build: bool, progress: Callable[[str], None] | None = None) -> str:
    """The image's id: reused when present; built from docker/Dockerfile for the default tag."""
    from docker.errors import APIError, ImageNotFound

    try:
        return c.images.get(image).id
    except ImageNotFound:
        pass
    if not build:
        raise DragnetError(f"image {image} not found in the Docker engine: build it with "
                           f"`docker build -f {DOCKERFILE} -t {image} .` from the repository, "
                           f"or omit --image to let dragnet build {DEFAULT_IMAGE}")
    if progress:
        progress(f"building {image} from {DOCKERFILE} (first time only; takes minutes)")
    try:
        for chunk in c.api.build(fileobj=build_context(), custom_context=True, dockerfile=DOCKERFILE,
                                 tag=image, rm=True, decode=True):
            if "error" in chunk:
                raise DragnetError(f"building {image} failed: {chunk['error'].strip()}")
            if progress and chunk.get("stream", "").strip():
                progress(chunk["stream"].rstrip())
    except APIError as exc:
        raise DragnetError(f"building {image} failed: {_short(exc)}") from None
    return c.images.get(image).id


# --- up / down / status ------------------------------------------------------------------------------

def up(*, port: int = ctl.DEFAULT_PORT, storage_kind: str = "disk", data_dir: str | None = None,
       image: str | None = None, cpus: float | None = None, memory: str | None = None, data_size: int = 0,
       timeout: float = 120.0, env: dict | None = None,
       progress: Callable[[str], None] | None = None) -> ctl.Instance:
    env = os.environ if env is None else env
    user, password = ctl.admin_credentials(env)
    mem = storage.parse_size(memory) if memory is not None else None
    settings = container_settings(image=image or DEFAULT_IMAGE, port=port, user=user, password=password,
                                  storage_kind=storage_kind, data_dir=data_dir, data_size=data_size,
                                  cpus=cpus, memory=mem)
    if storage_kind == "tmpfs":
        check_tmpfs_fits(data_size, mem, env)
    elif data_dir is not None:
        Path(data_dir).expanduser().mkdir(parents=True, exist_ok=True)
    if ctl.load_state(port, env) is not None:
        raise DragnetError(f"dragnet already started a CouchDB on port {port}: "
                           f"`dragnet couch down --port {port}` first")
    ctl.ensure_port_free(port)
    c = client(env)
    ensure_image(c, settings["image"], build=image is None, progress=progress)

    from docker.errors import APIError

    _remove_stale(c, settings["name"])
    try:
        container = c.containers.run(**settings)
    except APIError as exc:
        text = _short(exc)
        if "port is already allocated" in text or "address already in use" in text:
            raise DragnetError(f"port {port} is already in use: choose another --port") from None
        raise DragnetError(f"starting the container failed: {text}") from None
    inst = ctl.Instance(backend="docker", port=port, user=user, storage=storage_kind,
                        data_dir=str(Path(data_dir).expanduser().resolve()) if data_dir else None,
                        container=container.id, container_name=settings["name"], image=settings["image"],
                        volume=volume_name(port) if storage_kind == "disk" and data_dir is None else None,
                        cpus=cpus, memory=mem)
    ctl.save_state(inst, env)

    def alive() -> str | None:
        container.reload()
        return None if container.status in ("created", "running") else f"container {container.status}"

    def log_tail() -> str:
        try:
            return container.logs(tail=25).decode(errors="replace")
        except Exception:  # the tail is a courtesy; never hide the real error
            return ""

    try:
        ctl.wait_up(inst.url, timeout, alive=alive, log_tail=log_tail,
                    log_name="the container's log (its tail follows; the container is removed)")
        ctl.ensure_system_dbs(inst.url, user, password)
    except BaseException:
        stop(inst, env=env, c=c, timeout=5)  # it never came up: nothing to shut down gracefully
        raise
    return inst


def _remove_stale(c, name: str) -> None:
    """A stopped container left with our name (e.g. after a crash) would block the new one."""
    from docker.errors import NotFound

    try:
        old = c.containers.get(name)
    except NotFound:
        return
    if old.status == "running":
        raise DragnetError(f"a container named {name} is already running: `docker rm -f {name}` if it is stale")
    old.remove()


def stop(inst: ctl.Instance, *, env: dict | None = None, c=None, timeout: int = STOP_TIMEOUT,
         purge: bool = False) -> bool:
    """Stop and remove the container; the named volume stays with the data unless purge.
    Removes the state file."""
    from docker.errors import NotFound

    if purge and inst.storage == "disk" and not inst.volume:
        raise UsageError(f"--purge deletes only the docker volume dragnet made; {inst.data_dir} was given "
                         f"with --data-dir: delete it yourself")
    c = c or client(env)
    was_running = False
    try:
        container = c.containers.get(inst.container or inst.container_name)
        container.reload()
        was_running = container.status == "running"
        container.stop(timeout=timeout)
        container.remove()
    except NotFound:
        pass
    if purge and inst.volume:
        try:
            c.volumes.get(inst.volume).remove()
        except NotFound:
            pass
    ctl.remove_state(inst.port, env)
    return was_running


def status(inst: ctl.Instance, *, env: dict | None = None) -> dict:
    from docker.errors import NotFound

    try:
        c = client(env)
    except DragnetError as exc:  # one unreachable engine must not hide the other instances
        return {"running": None, "error": str(exc)}
    try:
        container = c.containers.get(inst.container or inst.container_name)
    except NotFound:
        return {"running": False, "container": None}
    out = {"running": container.status == "running", "container": container.short_id,
           "container_status": container.status}
    if out["running"]:
        out.update(ctl.server_info(inst))
    return out
