"""`dragnet doctor`: which parts this machine has, and what each missing one disables, with the command or package
that adds it. The judgements are pure functions of what was probed; `checkup` probes (I/O: files, PATH, the
Docker engine, `java -version`, the query servers' discovery) and hands the results to them."""

from __future__ import annotations

import importlib.util
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from dragnet.paths import CHECKOUT

PARANOID = "/proc/sys/kernel/perf_event_paranoid"
NOUVEAU_JAVA = 17       # Nouveau 3.5's jars need Java 17 or newer (couchdb.nouveau.java_needed reads the jars)


@dataclass(frozen=True)
class Part:
    """One part: found or not, what was seen, what its absence disables and what adds it."""

    group: str          # "couchdb", "tools" or "servers"
    name: str
    found: bool
    detail: str         # where or which version, or why not
    disables: str       # what a missing part disables ("" when nothing of dragnet needs it)
    adds: str           # the command or package that adds it


@dataclass(frozen=True)
class Checkup:
    parts: tuple[Part, ...]

    @property
    def missing(self) -> tuple[Part, ...]:
        return tuple(p for p in self.parts if not p.found)

    def as_dict(self) -> dict:
        return {"parts": [asdict(p) for p in self.parts], "missing": [p.name for p in self.missing]}


# --- judgements (pure) ----------------------------------------------------------------------------------------

def couchdb_release(home: Path, given: bool, version: str | None, problem: str | None,
                    shared: list[str]) -> Part:
    """The local CouchDB release: at DRAGNET_COUCHDB_HOME (given) or /opt/couchdb."""
    where = f"{home}{' (DRAGNET_COUCHDB_HOME)' if given else ''}"
    adds = "a CouchDB 3.5 release at /opt/couchdb, or DRAGNET_COUCHDB_HOME=DIR"
    if shared:
        adds += f"; a release here to unpack: {', '.join(shared)}"
    return Part("couchdb", "CouchDB release (local backend)", problem is None,
                f"{where}, CouchDB {version or '?'}" if problem is None else problem,
                "couchjs and QuickJS over the protocol (qsbench), `couch up --backend local`, "
                "`bench --couchdb PATH`, the live tests of the local backend", adds)


def docker_sdk(found: bool) -> Part:
    return Part("couchdb", "Docker SDK for Python", found, "the docker package imports" if found else
                "no module named docker", "`couch up --backend docker` (couch up's default), `couch prune`, "
                "Docker images as `--couchdb` values", "pip install 'dragnet[docker]' (make venv installs it)")


def docker_engine(host: str, error: str | None, sdk: bool) -> Part:
    detail = (f"answers at {host}" if error is None else
              f"not asked: no Docker SDK" if not sdk else f"no answer at {host}: {error}")
    return Part("couchdb", "Docker engine", sdk and error is None, detail,
                "`couch up --backend docker` (couch up's default), clusters (`--nodes`), the docker tests",
                "Debian: apt-get install docker.io, then `sudo systemctl start docker` (or set DOCKER_HOST)")


def java(found: list[tuple[str, int | None]]) -> Part:
    """found: (java, major version or None) for each candidate of couchdb.nouveau.java_candidates."""
    good = [(j, m) for j, m in found if m is not None and m >= NOUVEAU_JAVA]
    seen = ", ".join(f"Java {m if m is not None else '?'} ({j})" for j, m in found)
    return Part("couchdb", "Java for Nouveau", bool(good),
                f"Java {good[0][1]} ({good[0][0]})" if good else (
                    f"only {seen}; Nouveau needs Java {NOUVEAU_JAVA} or newer" if found else
                    "no java on JAVA_HOME, PATH or /usr/lib/jvm"),
                "Nouveau search indexes: `couch up --nouveau`, `addview/bench/forecast --nouveau`",
                f"Debian: apt-get install openjdk-{NOUVEAU_JAVA}-jre-headless (or set JAVA_HOME)")


def nouveau_servers(folder: Path, tarballs: list[str]) -> Part:
    return Part("couchdb", "Nouveau servers", bool(tarballs),
                f"{', '.join(tarballs)} in {folder}" if tarballs else f"no nouveau-VERSION.tar.gz in {folder}",
                "Nouveau beside a local CouchDB (`couch up --backend local --nouveau`)",
                "DRAGNET_NOUVEAU_DIR=DIR holding nouveau-VERSION.tar.gz (built from CouchDB's sources)")


def tool(name: str, path: str | None, disables: str, adds: str) -> Part:
    return Part("tools", name, path is not None, path or "not on PATH", disables, adds)


def perf(path: str | None, paranoid: int | None, root: bool) -> Part:
    """perf itself, and whether the kernel lets this user record every CPU (`perf record -a`)."""
    disables = "`--profile` (perf record of CouchDB's tree, beam's JIT map, folded stacks)"
    if path is None:
        return Part("tools", "perf", False, "not on PATH", disables, "Debian: apt-get install linux-perf")
    if root or (paranoid is not None and paranoid <= -1):
        who = "root" if root else f"perf_event_paranoid {paranoid}"
        return Part("tools", "perf", True, f"{path}, {who}", disables, "")
    return Part("tools", "perf", False,
                f"{path}, but perf_event_paranoid is {'unreadable' if paranoid is None else paranoid}: "
                f"recording every CPU needs -1 or root", disables,
                "sudo sysctl kernel.perf_event_paranoid=-1 (for the session; CI sets it for its run)")


def server(name: str, found: bool, detail: str, build: str | None, couchdb_own: bool = False) -> Part:
    """A built-in query server: found here (its command) or why not, and what adds it. CouchDB's own engines
    (couchjs, QuickJS) are missed only over the protocol: a CouchDB runs its own."""
    disables = (f"{name} over the protocol (qsbench); a CouchDB runs its own" if couchdb_own else
                f"{name} in qsbench, and as an engine of bench, forecast and addview on the local backend")
    return Part("servers", f"query server {name}", found, detail, disables, _server_adds(name, build))


SERVER_ADDS = {
    "node": "Debian: apt-get install nodejs (18 or later)",
    "pypy3": "Debian: apt-get install pypy3",
    "python3": "Debian: apt-get install python3",
    "couchpy": "pip install CouchDB==1.2 (a dependency of dragnet)",
    "couchjs": "a CouchDB release (see above)",
    "quickjs": "a CouchDB 3.4 or later release (see above)",
    "quickjs-es2015": "a CouchDB 3.4 or later release (see above)",
}
BUILD_NEEDS = {"chakra": "gcc, make", "couchpy-pypy": "pypy3", "bun": "npm", "ceiling": "gcc"}


def _server_adds(name: str, build: str | None) -> str:
    if build:
        needs = BUILD_NEEDS.get(build)
        return f"dragnet servers --build {build}" + (f" (needs {needs}), or make servers" if needs else "")
    return SERVER_ADDS.get(name, "")


def paranoid_level(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None


# --- probes (I/O) ---------------------------------------------------------------------------------------------

def _release(env: dict) -> Part:
    from dragnet.couchdb.local import find_release
    from dragnet.couchdb.search_server import release_version
    from dragnet.errors import DragnetError
    from dragnet.servers.discovery import couchdb_home, given_couchdb_home

    home = couchdb_home(env)
    problem = version = None
    try:
        rel = find_release(home)
        version = release_version(os.listdir(rel.home / "lib"))
    except (DragnetError, OSError) as exc:
        problem = str(exc).split(": pass --couchdb-home")[0]
    shared = CHECKOUT.parent / "shared" / "couchdb"
    tarballs = sorted(p.name for p in shared.glob("couchdb-*.tar.gz")) if problem and shared.is_dir() else []
    return couchdb_release(home, given_couchdb_home(env) is not None, version, problem,
                           [str(shared / t) for t in tarballs if "bookworm" in t] or [str(shared / t) for t in tarballs])


def _docker(env: dict) -> tuple[Part, Part]:
    from dragnet.couchdb.docker import docker_host

    sdk = importlib.util.find_spec("docker") is not None
    error = None
    if sdk:
        import docker
        from docker.errors import DockerException

        try:
            client = docker.from_env(environment=dict(env), timeout=5)
            client.ping()
            client.close()
        except DockerException as exc:
            error = (str(exc).splitlines() or [type(exc).__name__])[0][:160]
    return docker_sdk(sdk), docker_engine(docker_host(env), error, sdk)


def _java(env: dict) -> Part:
    from dragnet.couchdb.search_server import java_candidates, probe_java

    return java([(str(j), probe_java(j)) for j in java_candidates(env)])


def _nouveau(env: dict) -> Part:
    from dragnet.couchdb.search_server import tarball_dir

    folder = tarball_dir(env)
    return nouveau_servers(folder, sorted(p.name for p in folder.glob("nouveau-*.tar.gz")) if folder.is_dir() else [])


def _perf(env: dict) -> Part:
    try:
        paranoid = paranoid_level(Path(PARANOID).read_text())
    except OSError:
        paranoid = None
    return perf(shutil.which("perf", path=env.get("PATH")), paranoid, os.geteuid() == 0)


def _tools(env: dict) -> list[Part]:
    which = lambda name: shutil.which(name, path=env.get("PATH"))  # noqa: E731
    return [
        tool("valgrind", which("valgrind"), "`bench --gate`'s default metric (instructions, `--metric "
             "instructions`); the gate can still judge on CPU with `--metric cpu`", "Debian: apt-get install valgrind"),
        _perf(env),
        tool("inferno", which("inferno-flamegraph"), "the flame graphs of `--profile` (its folded stacks are "
             "still written)", "cargo install inferno (crates.io)"),
        tool("sysstat (pidstat)", which("pidstat"), "the per-process CPU and memory table of every build, "
             "iostat per build", "Debian: apt-get install sysstat"),
    ]


def _servers(env: dict) -> list[Part]:
    from dragnet.servers.available import builtin_servers
    from dragnet.servers.registry import SERVER

    specs, skipped = builtin_servers(env)
    parts = [(s.name, True, " ".join(s.argv)) for s in specs] + [(s.name, False, s.reason) for s in skipped]
    order = {name: i for i, name in enumerate(SERVER)}
    return [server(name, found, detail, SERVER[name].build if name in SERVER else None,
                   name in SERVER and SERVER[name].source == "couchdb")
            for name, found, detail in sorted(parts, key=lambda p: order.get(p[0], len(order)))]


def checkup(env: dict | None = None) -> Checkup:
    """Probe this machine: the CouchDB release, Docker, Java and Nouveau, the tools, every built-in query server."""
    env = dict(os.environ if env is None else env)
    sdk, engine = _docker(env)
    return Checkup((_release(env), sdk, engine, _java(env), _nouveau(env), *_tools(env), *_servers(env)))

