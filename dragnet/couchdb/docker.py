"""Run dragnet's CouchDB image (docker/Dockerfile) through the Docker SDK.

The admin goes into the container's environment (COUCHDB_USER / COUCHDB_PASSWORD, read by the official
image's entrypoint), never into a command line or a message. Data lives on a named volume, a host
directory (--data-dir) or a tmpfs mount sized to the data.
"""

from __future__ import annotations

import io
import os
import stat as _stat
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from dragnet.couchdb import control as ctl
from dragnet.couchdb import image_build as image_build
from dragnet.couchdb import limits as _limits
from dragnet import paths
from dragnet.couchdb import storage as storage
from dragnet.couchdb.client import CouchError, CouchUnreachable
from dragnet.errors import DragnetError, UsageError
from dragnet.extras import require

# the Docker context: the checkout's docker/ and query_servers/, or an installed wheel's copy (dragnet.paths)
REPO = paths.data_root()
DOCKERFILE = "docker/Dockerfile"
DEFAULT_IMAGE = "dragnet/couchdb:3.5.0"
DATA_PATH = "/opt/couchdb/data"
LABEL = "org.dragnet.couch.port"   # on every container, volume and network dragnet makes for a CouchDB
TEMP_LABEL = "org.dragnet.temp"    # on a container (and its anonymous volume) dragnet makes only to read an image
# A single-node container's Erlang node is couchdb@127.0.0.1 (NODENAME), so that the beam probe
# (dragnet.measure.beam_probe) can connect from inside it. A volume or --data-dir made by an older dragnet
# holds shards mapped to nonode@nohost: renaming the node would hide them, so such data keeps no name.
SINGLE_NODE_HOST = "127.0.0.1"
NODE_LABEL = "org.dragnet.couch.node"      # on a data volume whose shards belong to that named node
NODE_MARKER = ".dragnet-erlang-node"       # the same, in a --data-dir
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


def network_name(port: int) -> str:
    """The network a cluster's containers share, named after the coordinator's port."""
    return f"dragnet-couchdb-{port}-net"


def node_host(port: int) -> str:
    # Erlang long names need a dotted host; the network's DNS resolves it by this alias.
    return f"n{port}.dragnet"


@dataclass(frozen=True)
class ClusterMember:
    """What a container needs to be one node of a cluster (dragnet.couchdb.cluster joins the nodes)."""
    network: str
    secret: str   # [chttpd_auth] secret, shared so a session is valid on every node
    cookie: str   # the Erlang cookie: nodes connect only when theirs match


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

def limit_settings(lim: _limits.Limits, device_path: str | None = None) -> dict:
    """A scenario's limits as containers.run() settings: the memory limit with memory+swap equal (the
    container cannot swap), and the profile's throttles on the data's disk, named by its device node
    (the engine resolves it to MAJ:MIN). {} limits nothing."""
    kw: dict = {}
    if lim.memory is not None:
        kw["mem_limit"] = lim.memory
        kw["memswap_limit"] = lim.memory
    throttles = lim.profile.throttles()
    if throttles and not device_path:
        raise DragnetError(f"cannot enforce disk profile {lim.profile.name}: no device node for the data's disk")
    for kind, value in throttles:
        kw[f"device_{kind}"] = [{"Path": device_path, "Rate": value}]
    return kw


# HostConfig keys the engine reports the settings of limit_settings() under
HOST_CONFIG = {"mem_limit": "Memory", "memswap_limit": "MemorySwap", "device_read_iops": "BlkioDeviceReadIOps",
               "device_write_iops": "BlkioDeviceWriteIOps", "device_read_bps": "BlkioDeviceReadBps",
               "device_write_bps": "BlkioDeviceWriteBps"}


def limits_not_applied(settings: dict, host_config: dict) -> list[str]:
    """The settings the container's HostConfig does not hold as asked (an engine without kernel support
    drops blkio throttles with only a warning)."""
    missing = []
    for key, value in settings.items():
        got = host_config.get(HOST_CONFIG[key])
        if isinstance(value, list):
            want = [(v["Path"], v["Rate"]) for v in value]
            got = [(g.get("Path"), g.get("Rate")) for g in got or []]
        else:
            want = value
        if got != want:
            missing.append(f"{key}={value} (HostConfig.{HOST_CONFIG[key]} is {got})")
    return missing


def device_node(device, dev: str = "/dev") -> str:
    """The block device node of `device` (a storage.BlockDevice) that the engine can resolve to its
    MAJ:MIN; refused when /dev has none or another device under that name."""
    path = Path(dev) / device.name
    try:
        st = os.stat(path)
    except OSError:
        raise DragnetError(f"no device node {path} for {device.name} ({device.majmin}): Docker names a "
                           "throttled device by its node") from None
    if not _stat.S_ISBLK(st.st_mode) or (os.major(st.st_rdev), os.minor(st.st_rdev)) != (device.major,
                                                                                            device.minor):
        raise DragnetError(f"{path} is not block device {device.majmin} ({device.name})")
    return str(path)


def _cgroup_paths(proc_cgroup: str) -> dict[str, tuple[str, bool]]:
    """controller -> (its group's path in its hierarchy, whether that is the v2 unified one), for memory and
    blkio, from /proc/PID/cgroup text (v1: one line per controller hierarchy; v2: the single `0::` line,
    which v1 lines take precedence over)."""
    out: dict[str, tuple[str, bool]] = {}
    for line in proc_cgroup.splitlines():
        hid, _, rest = line.partition(":")
        ctrls, _, path = rest.partition(":")
        if hid == "0" and ctrls == "":
            out.setdefault("memory", (path, True))
            out.setdefault("blkio", (path, True))
            continue
        for ctrl in ctrls.split(","):
            if ctrl in ("memory", "blkio"):
                out[ctrl] = (path, False)
    return out


def cgroup_dirs(proc_cgroup: str, root: str | Path = "/sys/fs/cgroup") -> dict[str, Path]:
    """The memory and blkio/io cgroup directories of a process from its /proc/PID/cgroup text."""
    root = Path(root)
    return {ctrl: (root if v2 else root / ctrl) / path.lstrip("/")
            for ctrl, (path, v2) in _cgroup_paths(proc_cgroup).items()}


def memcg_of(proc_cgroup: str) -> str | None:
    """A process's memory cgroup as the kernel names it in OOM reports ("/docker/<id>")."""
    return _cgroup_paths(proc_cgroup).get("memory", (None, False))[0]


def container_settings(*, image: str, port: int, user: str, password: str, storage_kind: str = "disk",
                       data_dir: str | None = None, data_size: int = 0, cpus: float | None = None,
                       memory: int | None = None, host: str = ctl.DEFAULT_HOST,
                       member: ClusterMember | None = None, limits: dict | None = None) -> dict:
    """Keyword arguments for client.containers.run(). Credentials (and a cluster's secret and cookie) only
    in `environment`: the official entrypoint writes them to files, never to a command line.
    `limits` (limit_settings()) replaces `memory`: a scenario's mem-unlimited is unlimited."""
    if storage_kind not in ("disk", "tmpfs"):
        raise UsageError(f"--storage {storage_kind}: expected disk or tmpfs")
    kw: dict = {
        "image": image,
        "name": container_name(port),
        "detach": True,
        # ERL_FLAGS: beam's JIT writes its perf map, which names Erlang functions in `--profile`
        "environment": {"COUCHDB_USER": user, "COUCHDB_PASSWORD": password, "ERL_FLAGS": JIT_PERF},
        "ports": {"5984/tcp": (host, port)},
        "labels": {LABEL: str(port)},
    }
    if member is not None:
        kw["environment"].update({"NODENAME": node_host(port), "COUCHDB_SECRET": member.secret,
                                  "COUCHDB_ERLANG_COOKIE": member.cookie, "COUCHDB_SINGLE_NODE": "false"})
        kw["hostname"] = node_host(port)
        kw["network"] = member.network
        kw["networking_config"] = {member.network: {"Aliases": [node_host(port)]}}
    if cpus is not None:
        if cpus <= 0:
            raise UsageError(f"--cpus {cpus:g}: must be positive")
        kw["nano_cpus"] = int(cpus * 1e9)
    if memory is not None and limits is None:
        kw["mem_limit"] = memory
    if limits:
        if storage_kind == "tmpfs" and any(k.startswith("device_") for k in limits):
            raise UsageError("a disk profile with --storage tmpfs: the container's data is in memory, there "
                             "is no disk to throttle")
        kw.update(limits)
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


JIT_PERF = "+JPperf true"     # the images' beam (OTP 25+, x86-64) has the JIT

RESTART_INI = "/opt/couchdb/etc/local.d/zz-dragnet-restart.ini"   # read last: its values win
USER_SERVERS = "/opt/dragnet-user"   # where a user-given query server's executable is bound in the container


def user_server_settings(specs) -> tuple[dict, dict]:
    """(COUCHDB_QUERY_SERVER_* for the container, bind mounts) of user-given query servers
    (dragnet.servers.user): each one's executable is bound read-only at /opt/dragnet-user/<name>/<file>;
    the rest of its command line is passed as it is, so files it names must exist in the image."""
    import dataclasses
    import shutil

    from dragnet.servers.registration import environment_for

    env, volumes = {}, {}
    for spec in specs:
        real = Path(shutil.which(spec.argv[0]) or spec.argv[0]).resolve()
        # one bind per executable: servers running the same one (with other arguments) share it
        inside = volumes.setdefault(str(real), {"bind": f"{USER_SERVERS}/{spec.name}/{real.name}", "mode": "ro"})["bind"]
        env.update(environment_for([dataclasses.replace(spec, argv=(inside, *spec.argv[1:]))]))
    return env, volumes


# the Erlang baseline is dragnet's own, so every container dragnet starts has the native query server on
# (the official images keep it off; dragnet's image has it in default.d already). default.d: before
# local.ini and local.d, so a --config-restart or a _config PUT still wins and is written elsewhere.
ERLANG_INI = "/opt/couchdb/etc/default.d/10-dragnet-erlang.ini"


def write_erlang_ini(env: dict | None = None) -> Path | None:
    """The file that turns the native Erlang query server on, for a bind mount; None for a remote engine
    (it cannot see this machine's files: the bench then says the baseline is unavailable)."""
    from dragnet.servers.registration import ini_for

    if not docker_host(env).startswith("unix://"):
        return None
    path = ctl.state_dir(env) / "docker-erlang.ini"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(ini_for(erlang=True, os_process_timeout_ms=None))   # no secret in it
    return path


def write_restart_ini(port: int, ini: dict, env: dict | None = None) -> Path:
    """The --config-restart settings as an ini file in dragnet's state dir, for a bind mount (so the engine
    must share this machine's files: a local one)."""
    from dragnet.couchdb.local import extra_ini

    if not docker_host(env).startswith("unix://"):
        raise UsageError("--config-restart on docker binds a file into the container: it needs a local engine")
    path = ctl.state_dir(env) / f"docker-{port}-restart.ini"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(extra_ini(ini))     # settings only, no secret: readable by the container's couchdb user
    return path


class ContainerOOMKilled(DragnetError):
    """The container was OOM-killed at its memory limit before CouchDB answered."""

    def __init__(self, limit: int | None):
        self.limit = limit
        super().__init__((_limits.oom_message(limit) if limit else "CouchDB was OOM-killed") + " while starting")


def check_tmpfs_fits(data_size: int, memory: int | None, env: dict | None = None) -> None:
    """tmpfs pages count against the container's memory limit and the host's free memory."""
    if memory is not None:
        storage.check_fits(data_size, memory=memory, where="the container's --memory")
    if docker_host(env).startswith("unix://"):  # only a local engine shares this machine's memory
        storage.check_fits(data_size, memory=storage.available_memory())


# --- image -----------------------------------------------------------------------------------------

CA_ENV = image_build.CA_ENV
NETWORK_ENV = image_build.NETWORK_ENV


# A build argument reaches RUN as one environment string, which Linux caps at 128 KiB (MAX_ARG_STRLEN).
MAX_BUILD_ARG = 120_000


def _certificates(pem: str) -> list[str]:
    end = "-----END CERTIFICATE-----"
    return [c[c.index("-----BEGIN CERTIFICATE-----"):] + end
            for c in pem.split(end) if "-----BEGIN CERTIFICATE-----" in c]


def extra_certificates(bundle: str, public: str) -> str:
    """The certificates of `bundle` that the public (Mozilla/certifi) bundle lacks, e.g. a TLS-intercepting
    proxy's CA in the system store: what pip needs added, small enough for a build argument."""
    known = {"".join(c.split()) for c in _certificates(public)}
    return "".join(c + "\n" for c in _certificates(bundle) if "".join(c.split()) not in known)


def _extra_ca(ca: str) -> str:
    """The certificates of bundle `ca` beyond the public ones; UsageError when it is no usable bundle."""
    try:
        pem = Path(ca).read_text()
    except OSError as exc:
        raise UsageError(f"{CA_ENV}={ca}: cannot read the CA bundle ({exc.strerror})") from None
    if "BEGIN CERTIFICATE" not in pem:
        raise UsageError(f"{CA_ENV}={ca}: not a PEM certificate bundle")
    import certifi

    extra = extra_certificates(pem, Path(certifi.where()).read_text())
    if len(extra) > MAX_BUILD_ARG:
        raise UsageError(f"{CA_ENV}={ca}: {len(extra)} bytes of certificates beyond the public ones; a "
                         f"build argument holds at most {MAX_BUILD_ARG}: give only the proxy's CA")
    return extra


def build_options(env: dict | None = None, *, host_bundles: tuple[str, ...] = image_build.HOST_CA_BUNDLES
                  ) -> tuple[dict, image_build.Settings]:
    """Extra keyword arguments for the engine's build, and what they amount to (dragnet.couchdb.image_build): the
    network of the RUN steps (the host's unless NETWORK_ENV names another) and, for pip and npm, the
    certificates of a CA bundle beyond the public ones as a build argument of the build stages only (the
    host's bundle unless CA_ENV names one; a host bundle that is no use is skipped, a named one refused)."""
    env = os.environ if env is None else env
    network = image_build.build_network(env)
    kw: dict = {"network_mode": network}
    ca, auto = image_build.ca_bundle(env, host_bundles)
    extra = ""
    if ca:
        try:
            extra = _extra_ca(ca)
        except UsageError:
            if not auto:
                raise
            ca = None
    if extra:
        kw["buildargs"] = {"PIP_EXTRA_CA": extra}
    return kw, image_build.Settings(network=network, ca_bundle=ca, ca_auto=auto and ca is not None,
                                    ca_certificates=len(_certificates(extra)))


def build_image(c, image: str = DEFAULT_IMAGE, *, env: dict | None = None,
                progress: Callable[[str], None] | None = None) -> str:
    """Build docker/Dockerfile as `image` through the SDK; the image's id. The engine's output goes to a
    log file in the state directory; a failure is one line naming the step, the likely cause, the fix
    and that file."""
    from docker.errors import APIError

    env = os.environ if env is None else env
    kw, settings = build_options(env)
    if settings.network not in image_build.ENGINE_NETWORKS and not settings.network.startswith("container:") \
            and not any(n.name == settings.network for n in c.networks.list(names=[settings.network])):
        raise UsageError(f"{NETWORK_ENV}={settings.network}: the Docker engine has no such network (host, "
                         "bridge or the name of one of its networks)")
    log = image_build.log_path(ctl.state_dir(env), image)
    log.parent.mkdir(parents=True, exist_ok=True)
    failed = False
    with open(log, "w") as out:
        out.write(f"# dragnet: building {image} from {DOCKERFILE}; RUN steps on network {settings.network}; "
                  f"{settings.ca_certificates} extra CA certificates from {settings.ca_bundle or 'no bundle'}\n")
        try:
            for chunk in c.api.build(fileobj=build_context(), custom_context=True, dockerfile=DOCKERFILE,
                                     tag=image, rm=True, forcerm=True, decode=True, **kw):
                out.write(image_build.log_line(chunk))
                if "error" in chunk:
                    failed = True
                    break
                if progress and chunk.get("stream", "").strip():
                    progress(chunk["stream"].rstrip())
        except APIError as exc:
            out.write(image_build.log_line({"error": str(exc.explanation or exc)}))
            failed = True
        except KeyboardInterrupt:  # the engine cancels the build and removes its container when we hang up
            out.write(image_build.log_line({"error": "interrupted"}))
            raise
    if failed:
        raise DragnetError(image_build.message(image, image_build.classify(log.read_text()), settings, log))
    return c.images.get(image).id


def ensure_image(c, image: str, *, build: bool, progress: Callable[[str], None] | None = None,
                 env: dict | None = None) -> str:
    """The image's id: reused when present; built from docker/Dockerfile for the default tag."""
    from docker.errors import ImageNotFound

    try:
        return c.images.get(image).id
    except ImageNotFound:
        pass
    if not build:
        raise DragnetError(f"image {image} not found in the Docker engine: build it with "
                           f"`docker build -f {DOCKERFILE} -t {image} .` from the repository, "
                           f"or omit --image to let dragnet build {DEFAULT_IMAGE}")
    if progress:
        progress(f"building {image} from {DOCKERFILE} (first time only; takes minutes; log: "
                 f"{image_build.log_path(ctl.state_dir(env), image)})")
    return build_image(c, image, env=env, progress=progress)


# --- up / down / status ------------------------------------------------------------------------------

def up(*, port: int = ctl.DEFAULT_PORT, storage_kind: str = "disk", data_dir: str | None = None,
       image: str | None = None, cpus: float | None = None, memory: str | None = None, data_size: int = 0,
       timeout: float = 120.0, env: dict | None = None, member: ClusterMember | None = None,
       progress: Callable[[str], None] | None = None, limits: dict | None = None,
       ini: dict | None = None) -> ctl.Instance:
    """Start one container; with `member`, a node of a cluster on member.network (not yet joined).
    `limits`: a bench scenario's limit_settings(), fixed for the container's life (blkio throttles cannot
    be updated on a running container). ContainerOOMKilled when it dies at its limit while starting."""
    env = os.environ if env is None else env
    user, password = ctl.admin_credentials(env)
    mem = storage.parse_size(memory) if memory is not None else None
    settings = container_settings(image=image or DEFAULT_IMAGE, port=port, user=user, password=password,
                                  storage_kind=storage_kind, data_dir=data_dir, data_size=data_size,
                                  cpus=cpus, memory=mem, member=member, limits=limits)
    from dragnet.servers import user as user_servers   # (`user` is the admin's name here)

    qs_env, qs_volumes = user_server_settings(user_servers.active())
    settings["environment"].update(qs_env)
    if qs_volumes:
        settings.setdefault("volumes", {}).update(qs_volumes)
    erlang = write_erlang_ini(env)
    if erlang is not None:
        # rw: the official entrypoint chowns everything under /opt/couchdb and exits when it cannot
        settings.setdefault("volumes", {})[str(erlang)] = {"bind": ERLANG_INI, "mode": "rw"}
    if ini:    # settings CouchDB takes only at start: a file in its local.d, bound into the container
        settings.setdefault("volumes", {})[str(write_restart_ini(port, ini, env))] = {"bind": RESTART_INI,
                                                                                      "mode": "rw"}
    if storage_kind == "tmpfs":
        check_tmpfs_fits(data_size, settings.get("mem_limit"), env)
    elif data_dir is not None:
        Path(data_dir).expanduser().mkdir(parents=True, exist_ok=True)
    if ctl.load_state(port, env) is not None:
        raise DragnetError(f"dragnet already started a CouchDB on port {port}: "
                           f"`dragnet couch down --port {port}` first")
    ctl.ensure_port_free(port)
    c = client(env)
    ensure_image(c, settings["image"], build=image is None, progress=progress, env=env)

    from docker.errors import APIError

    _remove_stale(c, settings["name"])
    if member is None:
        if unnamed_data(c, port, storage_kind, data_dir):
            if progress:
                progress("this data was made by an older dragnet under Erlang node nonode@nohost: kept (a new "
                         "name would hide its shards), so builds here have no beam activity")
        else:
            settings["environment"]["NODENAME"] = SINGLE_NODE_HOST
            if data_dir is not None:
                (Path(data_dir).expanduser() / NODE_MARKER).write_text(f"couchdb@{SINGLE_NODE_HOST}\n")
    if storage_kind == "disk" and data_dir is None:
        ensure_volume(c, port)
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
                        cpus=cpus, memory=mem, limits=limits, ini=dict(ini) if ini else None)
    ctl.save_state(inst, env)

    def alive() -> str | None:
        container.reload()
        if container.attrs.get("State", {}).get("OOMKilled"):
            raise ContainerOOMKilled(settings.get("mem_limit"))
        return None if container.status in ("created", "running") else f"container {container.status}"

    def log_tail() -> str:
        try:
            return container.logs(tail=25).decode(errors="replace")
        except Exception:  # the tail is a courtesy; never hide the real error
            return ""

    try:
        ctl.wait_up(inst.url, timeout, alive=alive, log_tail=log_tail,
                    log_name="the container's log (its tail follows; the container is removed)")
        if member is None:  # a cluster's system dbs come from _cluster_setup
            try:
                ctl.ensure_system_dbs(inst.url, user, password)
            except (CouchError, CouchUnreachable):
                # killed at its limit on its first requests: an OOM kill, not an unreachable CouchDB
                raise_if_oom_killed(container, settings.get("mem_limit"))
                raise
    except BaseException:
        stop(inst, env=env, c=c, timeout=5)  # it never came up: nothing to shut down gracefully
        raise
    return inst


def oom_killed(container, *, settle: float = 5.0, interval: float = 0.25) -> bool:
    """State.OOMKilled of a container; the engine notes the exit a moment after beam's connection drops,
    so one still running is watched for up to `settle` seconds. False once it is gone."""
    import time

    from docker.errors import NotFound

    deadline = time.monotonic() + settle
    while True:
        try:
            container.reload()
        except NotFound:
            return False
        state = container.attrs.get("State") or {}
        if state.get("OOMKilled") or state.get("Status") != "running" or time.monotonic() >= deadline:
            return bool(state.get("OOMKilled"))
        time.sleep(interval)


def raise_if_oom_killed(container, limit: int | None, *, settle: float = 5.0, interval: float = 0.25) -> None:
    """ContainerOOMKilled if the engine says the container was OOM-killed (oom_killed())."""
    if oom_killed(container, settle=settle, interval=interval):
        raise ContainerOOMKilled(limit)


def ensure_volume(c, port: int) -> None:
    """The data volume, made here with dragnet's label (so `couch prune` finds it) unless it exists."""
    from docker.errors import NotFound

    try:
        c.volumes.get(volume_name(port))
    except NotFound:
        c.volumes.create(name=volume_name(port), labels={LABEL: str(port), NODE_LABEL: f"couchdb@{SINGLE_NODE_HOST}"})


def unnamed_data(c, port: int, storage_kind: str, data_dir: str | None) -> bool:
    """Whether a single node's data was made by an older dragnet, under nonode@nohost (so it keeps that)."""
    from docker.errors import NotFound

    if storage_kind == "tmpfs":
        return False
    if data_dir is not None:
        d = Path(data_dir).expanduser()
        return any(d.glob("*.couch")) and not (d / NODE_MARKER).exists()
    try:
        return NODE_LABEL not in (c.volumes.get(volume_name(port)).attrs.get("Labels") or {})
    except NotFound:
        return False


def erlang_node(attrs: dict) -> str | None:
    """A container's Erlang node name from its NODENAME (the official entrypoint's), None without one."""
    for item in (attrs.get("Config") or {}).get("Env") or []:
        key, _, value = item.partition("=")
        if key == "NODENAME" and value:
            return f"couchdb@{value}"
    return None


def _remove_stale(c, name: str) -> None:
    """A stopped container left with our name (e.g. after a crash) would block the new one."""
    from docker.errors import NotFound

    try:
        old = c.containers.get(name)
    except NotFound:
        return
    if old.status == "running":
        raise DragnetError(f"a container named {name} is already running: `docker rm -f {name}` if it is stale")
    old.remove(v=True)   # v: the anonymous volumes of the image's VOLUME go too (named ones stay)


def data_path(c, inst: ctl.Instance) -> Path | None:
    """Where the container's data is on this machine: the named volume's mount point or the bind-mounted
    --data-dir; None on the container's own tmpfs."""
    from docker.errors import NotFound

    if inst.storage == "tmpfs":
        return None
    if inst.data_dir:
        return Path(inst.data_dir)
    try:
        return Path(c.volumes.get(inst.volume or volume_name(inst.port)).attrs["Mountpoint"])
    except NotFound:
        raise DragnetError(f"docker volume {inst.volume or volume_name(inst.port)} not found") from None


def _couchdb_containers(c, port: int) -> list:
    """The running CouchDB containers labelled with `port` (not the Nouveau server's beside one)."""
    return [k for k in c.containers.list(filters={"label": f"{LABEL}={port}"})
            if "org.dragnet.nouveau" not in (k.labels or {})]


def container_log_lines(port: int, since: float, env: dict | None = None) -> list[str] | None:
    """What the running container dragnet published on `port` wrote since `since` (unix seconds, whole
    seconds: Docker's granularity), stdout and stderr: CouchDB's log, and its query servers' stderr, which
    they inherit from beam. None without such a container."""
    try:
        c = client(env)
    except DragnetError:
        return None
    for container in _couchdb_containers(c, port):
        try:
            data = container.logs(stdout=True, stderr=True, since=int(since))
        except Exception:   # the engine's own error: no log, as for a CouchDB dragnet cannot read
            return None
        return data.decode("utf-8", errors="replace").splitlines()
    return None


def container_root_pid(port: int, env: dict | None = None) -> int | None:
    """Host pid of the init process (tini) of the running container dragnet published on `port`, or None.
    Its process tree holds beam and the query servers; the port's listener on the host is docker-proxy."""
    try:
        c = client(env)
    except DragnetError:
        return None
    for container in _couchdb_containers(c, port):
        pid = container.attrs.get("State", {}).get("Pid")
        if pid:
            return int(pid)
    return None


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
        container.remove(v=True)   # its anonymous volumes (the image's VOLUME); a named one stays
    except NotFound:
        pass
    if purge and inst.volume:
        try:
            c.volumes.get(inst.volume).remove()
        except NotFound:
            pass
    (ctl.state_dir(env) / f"docker-{inst.port}-restart.ini").unlink(missing_ok=True)
    ctl.remove_state(inst.port, env)
    return was_running


def create_network(c, port: int):
    """A bridge network of this command's own for a cluster's containers (replaces a stale one)."""
    from docker.errors import APIError, NotFound

    name = network_name(port)
    try:
        old = c.networks.get(name)
        if old.attrs.get("Containers"):
            raise DragnetError(f"docker network {name} is in use: `dragnet couch down --port {port}` first")
        old.remove()
    except NotFound:
        pass
    try:
        return c.networks.create(name, driver="bridge", labels={LABEL: str(port)})
    except APIError as exc:
        raise DragnetError(f"creating docker network {name} failed: {_short(exc)}") from None


def remove_network(port: int, *, env: dict | None = None, c=None) -> None:
    from docker.errors import NotFound

    c = c or client(env)
    try:
        c.networks.get(network_name(port)).remove()
    except NotFound:
        pass


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


if __name__ == "__main__":  # `python -m dragnet.couchdb.docker build [TAG]`: for CI and by hand
    import sys

    if sys.argv[1:2] != ["build"]:
        sys.exit("usage: python -m dragnet.couchdb.docker build [TAG]")
    try:
        print(build_image(client(), sys.argv[2] if len(sys.argv) > 2 else DEFAULT_IMAGE,
                          progress=lambda line: print(line, file=sys.stderr)))
    except DragnetError as exc:
        sys.exit(f"dragnet: {exc}")
