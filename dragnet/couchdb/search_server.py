"""The Nouveau (Lucene) search server beside a local CouchDB: the tarball for the CouchDB's version, a Java
that can run it, unpacked outside the repository, started on free ports, stopped with its CouchDB.

The parsers and the config rendering are pure; `up`, `stop` and the Java probe start processes and read
files. A server's state is `nouveau-<couch port>.json` in dragnet's state directory, beside the CouchDB's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from dragnet.couchdb import control as ctl
from dragnet.couchdb import local
from dragnet.errors import DragnetError, UsageError
from dragnet.paths import CHECKOUT

DIR_ENV = "DRAGNET_NOUVEAU_DIR"
START_TIMEOUT = 90.0
STOP_TIMEOUT = 20.0
_HEAP = re.compile(r"^\d+[kKmMgG]?$")


class NouveauError(DragnetError):
    pass


# ------------------------------------------------------------------ pure parts

def java_major(version_output: str) -> int | None:
    """`java -version`'s stderr -> its major version: 'version "17.0.15"' -> 17, 'version "1.8.0_392"' -> 8."""
    m = re.search(r'version "(\d+)(?:\.(\d+))?', version_output)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def class_file_java(header: bytes) -> int | None:
    """A class file's first 8 bytes -> the Java release it needs (major 55 is Java 11, 65 is Java 21)."""
    if len(header) < 8 or header[:4] != b"\xca\xfe\xba\xbe":
        return None
    return int.from_bytes(header[6:8], "big") - 44


def release_version(lib_names: list[str]) -> str | None:
    """The names in a release's lib/ -> its CouchDB version, from the couch application's folder (couch-3.5.0)."""
    found = [m.group(1) for n in lib_names if (m := re.fullmatch(r"couch-(\d+\.\d+\.\d+)", n))]
    return max(found, key=lambda v: tuple(int(x) for x in v.split("."))) if found else None


def render_yaml(template: str, *, port: int, admin_port: int, root_dir: str) -> str:
    """The release's nouveau.yaml with our ports and index directory (the shipped 5987/5988 would collide
    with another instance on this host)."""
    out, section = [], None
    for line in template.splitlines():
        stripped = line.strip()
        if stripped.startswith("rootDir:"):
            line = f"rootDir: {root_dir}"
        elif stripped in ("applicationConnectors:", "adminConnectors:"):
            section = stripped
        elif stripped.startswith("port:") and section:
            indent = line[:len(line) - len(line.lstrip())]
            line = f"{indent}port: {port if section == 'applicationConnectors:' else admin_port}"
            section = None
        out.append(line)
    text = "\n".join(out) + "\n"
    if f"rootDir: {root_dir}" not in text or f"port: {port}" not in text or f"port: {admin_port}" not in text:
        raise NouveauError("nouveau.yaml has no rootDir or connector ports to set: not a Nouveau server's config")
    return text


def check_heap(heap: str | None) -> str | None:
    if heap is not None and not _HEAP.match(heap):
        raise UsageError(f"--nouveau-heap {heap!r}: give a Java heap size such as 512m or 2g")
    return heap


# ------------------------------------------------------------------ finding the server and a Java

def tarball_dir(env: dict | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get(DIR_ENV) or CHECKOUT.parent / "shared" / "nouveau")


def tarball_for(version: str, env: dict | None = None) -> Path:
    d = tarball_dir(env)
    path = d / f"nouveau-{version}.tar.gz"
    if not path.is_file():
        have = sorted(p.name for p in d.glob("nouveau-*.tar.gz")) if d.is_dir() else []
        raise NouveauError(f"no Nouveau server for CouchDB {version}: {path} is missing (found: "
                           f"{', '.join(have) or 'none'}; set {DIR_ENV} to the folder of nouveau-VERSION.tar.gz)")
    return path


def couchdb_version(home: str | os.PathLike) -> str:
    try:
        v = release_version(os.listdir(Path(home) / "lib"))
    except OSError:
        v = None
    if not v:
        raise NouveauError(f"cannot tell the CouchDB version of {home} (no lib/couch-VERSION)")
    return v


def unpack(tarball: Path, version: str, env: dict | None = None) -> Path:
    """The server unpacked once under the state directory (never the repository); its folder."""
    root = ctl.state_dir(env) / "nouveau-releases"
    home = root / f"nouveau-{version}"
    marker = home / ".dragnet-unpacked"
    if marker.is_file() and marker.read_text() == f"{tarball} {tarball.stat().st_size}\n":
        return home
    shutil.rmtree(home, ignore_errors=True)
    tmp = root / f".unpack-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    with tarfile.open(tarball) as tf:
        tf.extractall(tmp, filter="data")
    inner = tmp / f"nouveau-{version}"
    if not (inner / f"nouveau-{version}.jar").is_file():
        shutil.rmtree(tmp, ignore_errors=True)
        raise NouveauError(f"{tarball} holds no nouveau-{version}/nouveau-{version}.jar")
    inner.rename(home)
    shutil.rmtree(tmp, ignore_errors=True)
    marker.write_text(f"{tarball} {tarball.stat().st_size}\n")
    return home


def java_needed(home: Path) -> int:
    """The newest Java any of the server's own classes or Lucene's core classes were compiled for."""
    need = 8
    jars = [*home.glob("nouveau-*.jar"), *(home / "lib").glob("lucene-core-*.jar")]
    for jar in jars:
        with zipfile.ZipFile(jar) as zf:
            for name in zf.namelist():
                # multi-release jars carry newer classes under META-INF/versions for newer Javas only
                if name.endswith(".class") and not name.startswith("META-INF/"):
                    with zf.open(name) as fh:
                        need = max(need, class_file_java(fh.read(8)) or 0)
                    break
    return need


def java_candidates(env: dict | None = None) -> list[Path]:
    env = os.environ if env is None else env
    out: list[Path] = []
    if env.get("JAVA_HOME"):
        out.append(Path(env["JAVA_HOME"]) / "bin" / "java")
    on_path = shutil.which("java", path=env.get("PATH"))
    if on_path:
        out.append(Path(on_path))
    out += sorted(Path("/usr/lib/jvm").glob("*/bin/java"))
    seen, unique = set(), []
    for p in out:
        key = os.path.realpath(p)
        if key not in seen and os.access(p, os.X_OK):
            seen.add(key)
            unique.append(p)
    return unique


def probe_java(java: Path) -> int | None:
    try:
        res = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return java_major(res.stderr + res.stdout)


def find_java(needed: int, version: str, env: dict | None = None) -> tuple[Path, int]:
    """The first Java (JAVA_HOME, PATH, /usr/lib/jvm) at least `needed`; else one line naming what was found."""
    found = []
    for java in java_candidates(env):
        major = probe_java(java)
        if major is not None and major >= needed:
            return java, major
        found.append(f"Java {major if major is not None else '?'} ({java})")
    raise NouveauError(f"Nouveau {version} needs Java {needed} or newer; found "
                       f"{', '.join(found) or 'no Java (JAVA_HOME, PATH, /usr/lib/jvm)'}: install "
                       f"openjdk-{max(needed, 17)}-jre-headless or set JAVA_HOME")


def free_port(host: str = ctl.DEFAULT_HOST) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------ one server

@dataclass
class Server:
    couch_port: int
    version: str
    url: str
    admin_port: int
    pid: int
    pid_start: int | None
    java: str
    java_version: int
    heap: str | None
    run_dir: str
    log: str
    container: str | None = None   # the docker backend's (dragnet.couchdb.search_server_docker)

    @property
    def health_url(self) -> str:
        return f"http://{ctl.DEFAULT_HOST}:{self.admin_port}/healthcheck"


def state_path(couch_port: int, env: dict | None = None) -> Path:
    return ctl.state_dir(env) / f"nouveau-{couch_port}.json"


def load(couch_port: int, env: dict | None = None) -> Server | None:
    try:
        return Server(**json.loads(state_path(couch_port, env).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _save(server: Server, env: dict | None) -> None:
    p = state_path(server.couch_port, env)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(asdict(server), indent=1) + "\n")


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def up(*, couch_port: int, couchdb_home: str, heap: str | None = None, timeout: float = START_TIMEOUT,
       env: dict | None = None) -> Server:
    """Start the Nouveau server matching the CouchDB release at couchdb_home, for the CouchDB on couch_port."""
    check_heap(heap)
    version = couchdb_version(couchdb_home)
    previous = load(couch_port, env)
    if previous is not None and local.is_alive(previous.pid, previous.pid_start):
        raise NouveauError(f"dragnet's Nouveau server for port {couch_port} already runs (pid {previous.pid}): "
                           f"`dragnet couch down --port {couch_port}` first")
    home = unpack(tarball_for(version, env), version, env)
    java, java_version = find_java(java_needed(home), version, env)
    run_dir = ctl.state_dir(env) / f"nouveau-{couch_port}"
    (run_dir / "data").mkdir(parents=True, exist_ok=True)
    port, admin_port = free_port(), free_port()
    yaml = run_dir / "nouveau.yaml"
    yaml.write_text(render_yaml((home / "nouveau.yaml").read_text(), port=port, admin_port=admin_port,
                                root_dir=str(run_dir / "data")))
    log = run_dir / "nouveau.log"
    argv = [str(java), *([f"-Xmx{heap}"] if heap else []), "-jar", str(home / f"nouveau-{version}.jar"),
            "server", str(yaml)]
    with open(log, "ab") as fh:
        fh.write(f"\n=== dragnet couch up {time.strftime('%Y-%m-%dT%H:%M:%S')}: {' '.join(argv)}\n".encode())
        fh.flush()
        proc = subprocess.Popen(argv, cwd=run_dir, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True)
    server = Server(couch_port=couch_port, version=version, url=f"http://{ctl.DEFAULT_HOST}:{port}",
                    admin_port=admin_port, pid=proc.pid, pid_start=local.process_start(proc.pid), java=str(java),
                    java_version=java_version, heap=heap, run_dir=str(run_dir), log=str(log))
    _save(server, env)   # before waiting: `couch down` can clean up a failed start
    try:
        wait_healthy(server, timeout, lambda: None if proc.poll() is None else f"exit status {proc.returncode}",
                     f"see {log}")
    except BaseException:
        stop(couch_port, env=env)
        raise
    return server


def wait_healthy(server: Server, timeout: float, ended: Callable[[], str | None], where: str) -> None:
    """Until the server's health check answers; one line when it ended (`ended()` says how) or timed out."""
    deadline = time.monotonic() + timeout
    while not healthy(server.health_url):
        how = ended()
        if how is not None:
            raise NouveauError(f"the Nouveau {server.version} server ended while starting ({how}); {where}")
        if time.monotonic() > deadline:
            raise NouveauError(f"the Nouveau {server.version} server did not answer {server.health_url} within "
                               f"{timeout:.0f} s; {where}")
        time.sleep(0.5)


def settings(server: Server) -> dict[str, str]:
    """What CouchDB needs to use the server ({"section/key": value}, as a local CouchDB's ini takes it)."""
    return {"nouveau/enable": "true", "nouveau/url": server.url}


def stop(couch_port: int, *, timeout: float = STOP_TIMEOUT, env: dict | None = None) -> bool:
    """SIGTERM the server's process group, wait, SIGKILL; remove its state. Whether it was running."""
    server = load(couch_port, env)
    if server is None:
        return False
    running = local.is_alive(server.pid, server.pid_start)
    if running:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(server.pid, sig)
            except (ProcessLookupError, PermissionError):
                break
            deadline = time.monotonic() + timeout
            while local.is_alive(server.pid, server.pid_start) and time.monotonic() < deadline:
                try:
                    os.waitpid(server.pid, os.WNOHANG)   # our own child: reap it
                except ChildProcessError:
                    pass
                time.sleep(0.1)
            if not local.is_alive(server.pid, server.pid_start):
                break
    state_path(couch_port, env).unlink(missing_ok=True)
    return running


def purge(couch_port: int, env: dict | None = None) -> None:
    shutil.rmtree(ctl.state_dir(env) / f"nouveau-{couch_port}", ignore_errors=True)


def check_reachable(url: str, version: str | None = None) -> None:
    """One line naming the URL and the version expected when the server does not answer."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/", timeout=5):
            return
    except urllib.error.HTTPError:
        return   # it answers (Nouveau's root is a 404)
    except OSError as exc:
        raise NouveauError(f"the Nouveau server at {url} does not answer ({exc.__class__.__name__}); expected "
                           f"Nouveau {version or 'matching the CouchDB'}") from None


def couch_up_local(*, port: int, home: str | None = None, heap: str | None = None, env: dict | None = None,
                   ini: dict | None = None, nouveau_timeout: float = START_TIMEOUT, **couch_options) -> tuple[ctl.Instance, Server]:
    """A local CouchDB with its Nouveau server: the server first (CouchDB reads its URL at start), both
    stopped when either fails to come up."""
    from dragnet.servers.discovery import couchdb_home

    home = home or couchdb_home(env)
    ctl.ensure_port_free(port)
    server = up(couch_port=port, couchdb_home=home, heap=heap, env=env, timeout=nouveau_timeout)
    try:
        inst = local.up(port=port, home=home, env=env, ini={**(ini or {}), **settings(server)}, **couch_options)
    except BaseException:
        stop(port, env=env)
        raise
    return inst, server
