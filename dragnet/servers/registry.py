"""The query-server registry: one record per server, the one place that names them.

A record says everything dragnet needs about one query server: the CouchDB language it serves, the view
file (dialect) it runs, how it is found here (discovery), the build step that makes it (if any), its
command inside the Docker image, the pidstat process families and -C names that see its processes, and
how its version is probed. Everything else reads these records: discovery (dragnet.servers.discovery),
registration and the Docker image (dragnet.servers.registration, a test compares docker/Dockerfile), pidstat
families and pattern (dragnet.measure.pidstat), building (dragnet.servers.compiling), qsbench's versions, report's
process families, bench's languages and views' language names.

Adding a server is adding one SERVERS record (and its discovery function in dragnet.servers.discovery);
docs/query-servers.md says how.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
from dataclasses import dataclass
from typing import Callable

from dragnet.servers import dialects, discovery as qs, user
from dragnet.servers.discovery import DIALECT_FILES, ServerSpec, Skipped

_DOCKER = "/opt/dragnet"   # where docker/Dockerfile puts dragnet's servers


@dataclass(frozen=True)
class Process:
    """A pidstat process family: the executable's base name (a regex, whole name) and, for interpreters,
    the script or `-m module` it runs (regex, whole; None: any)."""

    family: str
    exe: str
    script: str | None = None

    def matches(self, exe: str, script: str) -> bool:
        return bool(re.fullmatch(self.exe, exe)) and (self.script is None or bool(re.fullmatch(self.script, script)))


@dataclass(frozen=True)
class Server:
    """One query server.

    name:      display name, unique (qsbench, `dragnet servers`)
    language:  the CouchDB language it serves (a design doc's "language")
    dialect:   a dialect of dragnet.servers.dialects: which view file it runs
    discover:  env -> Found (its command here) or why it cannot run here
    build:     the dragnet.servers.compiling step that makes it (`dragnet servers --build NAME`), or None
    docker:    its argv inside the Docker image (None: not added by the image, e.g. CouchDB's own)
    processes: pidstat families of its processes, matched in order
    commands:  names pidstat -C must match to see its processes (beam is always watched)
    version:   its version probes (a discovered runtime's --version comes with the spec instead):
               "pypi:<package>:<label>", "couchjs -V", "couchdb-quickjs", "interpreter"
    aliases:   other spellings of its language accepted by `--language` and view headers
    ddoc:      it claims the `ddoc` commands (filters, validate_doc_update, shows, updates, lists)
    reads_docs: False for a server that answers without reading the documents (the ceiling): its rows are
               not the view's, so nothing compares them, and only the maps of a design doc run on it
    """

    name: str
    language: str
    dialect: str
    discover: Callable[[dict], qs.Found | str]
    build: str | None = None
    docker: tuple[str, ...] | None = None
    processes: tuple[Process, ...] = ()
    commands: tuple[str, ...] = ()
    version: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    source: str = "dragnet"
    ddoc: bool = True
    reads_docs: bool = True

    def find(self, env: dict) -> ServerSpec | Skipped:
        """This server as it runs here, or why it cannot."""
        got = self.discover(env)
        if isinstance(got, str):
            return Skipped(self.name, got)
        return ServerSpec(self.name, self.language, got.argv, self.dialect, source=self.source, env=got.env,
                          version=got.version)


_PY, _PYPY = r"python.*", r"pypy.*"
_QS_SCRIPT = r"dragnet_qs.*"
_COUCHPY_SCRIPT = r"couchpy|-m couchdb\.view"

SERVERS: tuple[Server, ...] = (
    Server("chakra", "chakra", "es2015", qs.discover_chakra, build="chakra",
           docker=(f"{_DOCKER}/query_servers/chakra/dragnet-chakra",),
           processes=(Process("chakra", r".*chakra.*"),), commands=("dragnet-chakra",),
           version=("pypi:PyChakra:libChakraCore of PyChakra",)),
    Server("node", "node", "es2015", qs.discover_node,
           docker=("/usr/bin/nodejs", f"{_DOCKER}/query_servers/node/dragnet-node.js"),
           processes=(Process("dragnet-node", r"node|nodejs", r"dragnet-node.*"),), commands=("node",)),
    Server("bun", "bun", "es2015", qs.discover_bun, build="bun",
           docker=(f"{_DOCKER}/query_servers/bun/bun", f"{_DOCKER}/query_servers/node/dragnet-node.js"),
           processes=(Process("dragnet-bun", r"bun.*", r"dragnet-node.*"),), commands=("bun",)),
    Server("python3", "python3", "python", qs.discover_python3,
           docker=("/usr/bin/python3", f"{_DOCKER}/query_servers/python/dragnet_qs.py"),
           processes=(Process("dragnet_qs", _PY, _QS_SCRIPT),), commands=("python", "dragnet_qs"),
           version=("interpreter",), aliases=("cpython",)),
    Server("pypy3", "pypy3", "python", qs.discover_pypy3,
           docker=("/usr/bin/pypy3", f"{_DOCKER}/query_servers/python/dragnet_qs.py"),
           processes=(Process("dragnet_qs-pypy", _PYPY, _QS_SCRIPT),), commands=("pypy", "dragnet_qs"),
           version=("interpreter",), aliases=("pypy",)),
    Server("couchpy", "python", "python", qs.discover_couchpy, docker=(f"{_DOCKER}/venv/bin/couchpy",),
           processes=(Process("couchpy", r"couchpy"), Process("couchpy", _PY, _COUCHPY_SCRIPT)),
           commands=("couchpy", "python"), version=("pypi:CouchDB:CouchDB-Python",), aliases=("couchpy",),
           source="couchpy", ddoc=False),
    Server("couchpy-pypy", "python", "python", qs.discover_couchpy_pypy, build="couchpy-pypy",
           processes=(Process("couchpy-pypy", _PYPY, _COUCHPY_SCRIPT),), commands=("pypy",),
           version=("pypi:CouchDB:CouchDB-Python", "interpreter"), source="couchpy", ddoc=False),
    Server("couchjs", "javascript", "es5", qs.discover_couchjs,
           processes=(Process("couchjs", r"(?!.*quickjs)couchjs(?!_mainjs).*"),), commands=("couchjs",),
           version=("couchjs -V",), aliases=("couchjs", "spidermonkey"), source="couchdb"),
    Server("quickjs", "javascript_quickjs", "es5", qs.discover_quickjs,
           processes=(Process("quickjs", r".*quickjs.*|couchjs_mainjs"),), commands=("quickjs",),
           version=("couchdb-quickjs",), aliases=("quickjs",), source="couchdb"),
    Server("quickjs-es2015", "javascript_quickjs", "es2015", qs.discover_quickjs,
           processes=(Process("quickjs", r".*quickjs.*|couchjs_mainjs"),), commands=("quickjs",),
           version=("couchdb-quickjs",), source="couchdb"),
    # the null server: every map_doc gets one fixed row, unread; a build on it is CouchDB's share alone
    Server("ceiling", "ceiling", "es5", qs.discover_ceiling, build="ceiling",
           docker=(f"{_DOCKER}/query_servers/ceiling/dragnet-ceiling",),
           processes=(Process("ceiling", r"dragnet-ceiling"),), commands=("dragnet-ceiling",),
           aliases=("null",), ddoc=False, reads_docs=False),
)
SERVER = {s.name: s for s in SERVERS}


@dataclass(frozen=True)
class Language:
    """One CouchDB language (a design doc's "language") dragnet benchmarks.

    family:    view-file family: js, python or erlang; "any" for a server that reads no document (it runs
               any design doc, and its view file's source is never looked at)
    view_file: the file of views/<name>/ that `bench` runs on it
    processes: pidstat families of its query-server processes, preferred first (from its servers)
    commands:  process names pidstat -C must match to see them (from its servers)
    """

    name: str
    family: str
    description: str
    view_file: str
    processes: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    reads_docs: bool = True


# language -> (description, its bench view file's dialect); the order is the order of `--language` help
_DESCRIPTIONS = (
    ("javascript", "couchjs (SpiderMonkey), CouchDB's default JavaScript server", "es5"),
    ("javascript_quickjs", "QuickJS, built into CouchDB 3.4+", "es5"),
    ("erlang", "CouchDB's native Erlang query server (in beam)", "erlang"),
    ("ceiling", "dragnet's null query server: reads no document, CouchDB's share of a build alone", "es5"),
    ("python", "couchpy 1.2 (the historical Python query server)", "python"),
    ("chakra", "dragnet's ChakraCore query server", "es2015"),
    ("node", "dragnet's query server on Node.js (V8)", "es2015"),
    ("bun", "dragnet's query server on Bun (JavaScriptCore)", "es2015"),
    ("python3", "dragnet's Python query server on CPython", "python"),
    ("pypy3", "dragnet's Python query server on PyPy", "python"),
)
# the native Erlang server runs inside beam: no process of its own, accepted as "erl"
_EXTRA_ALIASES = {"erlang": ("erl",)}


def _language(name: str, description: str, dialect: str) -> Language:
    servers = [s for s in SERVERS if s.language == name]
    processes = tuple(dict.fromkeys(p.family for s in servers for p in s.processes))
    commands = tuple(dict.fromkeys(c for s in servers for c in s.commands))
    aliases = tuple(dict.fromkeys([a for s in servers for a in s.aliases] + list(_EXTRA_ALIASES.get(name, ()))))
    reads = any(s.reads_docs for s in servers) or not servers
    return Language(name, dialects.family(dialect) if reads else "any", description, DIALECT_FILES[dialect],
                    processes, commands, aliases, reads)


LANGUAGES: tuple[Language, ...] = tuple(_language(*d) for d in _DESCRIPTIONS)
LANGUAGE = {lang.name: lang for lang in LANGUAGES}


def reads_documents(language: str) -> bool:
    """False for a language whose server reads no document (the ceiling): no rows to compare, maps only."""
    lang = LANGUAGE.get(language)
    return lang is None or lang.reads_docs


def ceiling_language() -> str | None:
    """The language of the null server a bench builds next to the Erlang baseline (None: none registered)."""
    return next((lang.name for lang in LANGUAGES if not lang.reads_docs), None)


def variants() -> list[tuple[str, str, str]]:
    """(bench name, language, view file) of servers running another view file than their language's
    default, e.g. javascript_quickjs_es2015 (QuickJS on map.es6.js)."""
    out = []
    for s in SERVERS:
        lang = LANGUAGE.get(s.language)
        if lang and DIALECT_FILES[s.dialect] != lang.view_file:
            out.append((f"{s.language}_{s.dialect}", s.language, DIALECT_FILES[s.dialect]))
    return out


def pidstat_pattern() -> str:
    """pidstat -C pattern matching beam, every registered query server and the user-given ones."""
    return "|".join(dict.fromkeys(["beam", *(c for lang in LANGUAGES for c in lang.commands),
                                   *(user.process_name(s) for s in user.active())]))


def process_family(exe: str, script: str) -> str | None:
    """The family of a query-server process (executable base name, interpreter's script), or None."""
    for s in SERVERS:
        for p in s.processes:
            if p.matches(exe, script):
                return p.family
    return user.family_of(exe)


def discover_builtin(env: dict) -> list[ServerSpec | Skipped]:
    return [s.find(env) for s in SERVERS]


def docker_specs() -> tuple[ServerSpec, ...]:
    """The servers the Docker image adds, with their in-image commands."""
    return tuple(ServerSpec(s.name, s.language, s.docker, s.dialect, source=s.source)
                 for s in SERVERS if s.docker)


def build_steps() -> tuple[str, ...]:
    return tuple(s.build for s in SERVERS if s.build)


def server_for(spec: ServerSpec) -> Server | None:
    """The record of a running server: by name, else by the family of its command (an externally
    defined server that runs a registered one, e.g. COUCHDB_QUERY_SERVER_PYTHON=couchpy)."""
    if spec.name in SERVER:
        return SERVER[spec.name]
    if not spec.argv:
        return None
    fam = family(" ".join(spec.argv))
    return next((s for s in SERVERS if any(p.family == fam for p in s.processes)), None)


def _run_first_line(argv: list[str]) -> str | None:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None


def _probe(probe: str, argv: tuple[str, ...]) -> str | None:
    if probe.startswith("pypi:"):
        _, package, label = probe.split(":", 2)
        try:
            return f"{label} {importlib.metadata.version(package)}"
        except importlib.metadata.PackageNotFoundError:
            return None
    if probe == "couchjs -V":
        return _run_first_line([argv[0], "-V"])
    if probe == "couchdb-quickjs":
        m = re.search(r"couch_quickjs-([0-9][0-9.]*)", argv[0])
        return f"QuickJS of CouchDB {m.group(1)}" if m else None
    if probe == "interpreter":
        return _run_first_line([argv[0], "-c", "import sys; print(sys.implementation.name, "
                                "'.'.join(map(str, sys.version_info[:3])))"])
    raise ValueError(f"unknown version probe {probe!r}")


def probe_version(spec: ServerSpec) -> str | None:
    """What is cheaply knowable about a server's version, without speaking the protocol."""
    if spec.version:
        return str(spec.version)
    if spec.version_command:
        return user.probe_version(spec)
    if not spec.argv:
        return None
    record = server_for(spec)
    probes = record.version if record else ()
    if record is None and re.fullmatch(f"{_PY}|{_PYPY}", spec.argv[0].rsplit("/", 1)[-1]):
        probes = ("interpreter",)   # an unregistered script on a Python: at least the interpreter
    parts = [_probe(p, spec.argv) for p in probes]
    return "; ".join(p for p in parts if p) or None


def _script(args: list[str]) -> str:
    """What an interpreter runs: `-m module` or the first non-option argument (basename)."""
    it = iter(args)
    for a in it:
        if a == "-m":
            return "-m " + next(it, "")
        if a.startswith("-m") and len(a) > 2:
            return "-m " + a[2:]
        if a in ("-W", "-X", "-c"):
            if a == "-c":
                return "-c"
            next(it, None)
            continue
        if not a.startswith("-"):
            return a.rsplit("/", 1)[-1]
    return ""


def family(command: str) -> str:
    """Command family of a pidstat command line, judged by the executable (and an interpreter's script),
    never by other arguments: beam, the query servers' families (dragnet.servers.registry: couchjs, quickjs,
    chakra, dragnet-node, dragnet-bun, couchpy[-pypy], dragnet_qs[-pypy]), python, pypy, node, bun,
    pidstat, dragnet (this tool and its tests), else the executable's name."""
    words = command.split()
    if not words:
        return "?"
    exe = words[0].rsplit("/", 1)[-1]
    if exe == "pidstat":
        return "pidstat"
    if exe.startswith("beam"):
        return "beam"
    known = process_family(exe, _script(words[1:]))   # a registered query server (dragnet.servers.registry)
    if known:
        return known
    if exe in ("node", "nodejs") or exe.startswith("bun"):
        return "node" if exe.startswith("node") else "bun"
    if exe in ("dragnet", "pytest", "py.test"):
        return "dragnet"
    if exe.startswith(("python", "pypy")):
        pypy = exe.startswith("pypy")
        script = _script(words[1:])
        if script in ("dragnet", "pytest", "py.test", "-m dragnet", "-m pytest"):
            return "dragnet"
        return "pypy" if pypy else "python"
    return exe
