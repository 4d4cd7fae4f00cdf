"""Query servers dragnet knows: how to start each one, which CouchDB language it serves, which view file it runs.

The servers themselves are records of dragnet.servers.registry; this module holds how each one is found
here (its discovery function), external definitions (variables, config files) and discover().

`discover()` offers every server that can run here and says why each other one cannot:

| name          | language            | dialect | command                                                     |
|---------------|---------------------|---------|-------------------------------------------------------------|
| chakra        | chakra              | es2015  | query_servers/chakra/build/dragnet-chakra                   |
| node          | node                | es2015  | node (>= 18, Debian nodejs) query_servers/node/dragnet-node.js |
| bun           | bun                 | es2015  | query_servers/bun/build/bun query_servers/node/dragnet-node.js |
| python3       | python3             | python  | <this python> query_servers/python/dragnet_qs.py            |
| pypy3         | pypy3               | python  | pypy3 query_servers/python/dragnet_qs.py                    |
| couchpy       | python              | python  | couchpy (CouchDB-Python 1.2, next to this python)           |
| couchpy-pypy  | python              | python  | pypy3 -m couchdb.view, PYTHONPATH = a dir with only couchdb |
| couchjs       | javascript          | es5     | $DRAGNET_COUCHDB_HOME/bin/couchjs share/server/main.js      |
| quickjs       | javascript_quickjs  | es5     | $DRAGNET_COUCHDB_HOME/lib/couch_quickjs-*/priv/couchjs_mainjs |
| quickjs-es2015| javascript_quickjs  | es2015  | the same binary, running the ES2015 view file               |
| ceiling       | ceiling             | es5     | query_servers/ceiling/build/dragnet-ceiling (reads no document) |

plus servers from COUCHDB_QUERY_SERVER_<LANG> variables and from a config file (ini or JSON).

`LANGUAGES` (dragnet.servers.registry) is the one list of CouchDB languages dragnet benchmarks: views (dialect
family), bench (view file), pidstat (process pattern) and report (process families) all read it.
"""

from __future__ import annotations

import configparser
import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from dragnet import paths
from dragnet.servers import dialects
from dragnet.errors import DragnetError

# shipped files: the checkout's folders, or an installed wheel's copy of them (dragnet.paths)
REPO = paths.data_root()
PYTHON_QS = REPO / "query_servers" / "python" / "dragnet_qs.py"
# node and bun run the same host script, which loads chakra's dragnet.js (the protocol) into a vm context
NODE_QS = REPO / "query_servers" / "node" / "dragnet-node.js"
CHAKRA_SRC = REPO / "query_servers" / "chakra"
BUN_SRC = REPO / "query_servers" / "bun"
# built servers: next to the sources in a checkout (`make servers`), in the user cache when installed
BUILD = paths.build_root()
CHAKRA_QS = BUILD / "chakra" / "build" / "dragnet-chakra"
BUN_BINARY = BUILD / "bun" / "build" / "bun"
CEILING_SRC = REPO / "query_servers" / "ceiling"
CEILING_QS = BUILD / "ceiling" / "build" / "dragnet-ceiling"
NODE_MIN_MAJOR = 18
# a directory holding only the `couchdb` package, so PyPy can import couchpy without CPython's site-packages
COUCHPY_PYPY_PATH = BUILD / "python" / "build" / "couchpy-pypy"
# written by build_couchpy_pypy() once pypy3 answered through that directory: which pypy3 it was
COUCHPY_PYPY_STAMP = ".pypy-checked"
BUILD_HINT = "run `dragnet servers --build`, or `make servers` in a checkout"
DEFAULT_COUCHDB_HOME = "/opt/couchdb"

# View-file dialects (dragnet.servers.dialects): which file of a views/<name>/ folder a server runs.
DIALECT_FILES = dialects.VIEW_FILES


@dataclass(frozen=True)
class ServerSpec:
    """One runnable query server.

    name:     unique display name (e.g. "chakra", "python3", "pypy3", "couchpy", "couchjs")
    language: the CouchDB language name it serves (the design doc's "language")
    argv:     the command that starts it; speaks the protocol on stdin/stdout
    dialect:  a dialect name (dragnet.servers.dialects): which view file it runs
    source:   where it came from ("dragnet", "couchpy", "env:COUCHDB_QUERY_SERVER_X", "config:FILE",
              "option:--server")
    env:      extra environment for the process
    version:  the runtime's version when dragnet knows it (node, bun)
    process:  a user-given server's process name, for pidstat (default: its command's base name)
    version_command: a user-given command whose first output line is the server's version
    """

    name: str
    language: str
    argv: tuple[str, ...]
    dialect: str
    source: str = "dragnet"
    env: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    version: str = ""
    process: str = ""
    version_command: tuple[str, ...] = ()


@dataclass(frozen=True)
class Skipped:
    """A server that could not be offered here, with the reason."""

    name: str
    reason: str


ENV_PREFIX = "COUCHDB_QUERY_SERVER_"
# Languages CouchDB serves without a COUCHDB_QUERY_SERVER_* variable from us.
BUILT_IN_LANGUAGES = {
    "javascript": "set by CouchDB's start script (bin/couchjs share/server/main.js)",
    "javascript_quickjs": "built into CouchDB 3.5 (couch_quickjs); use \"language\": \"javascript_quickjs\"",
    "query": "Mango, built into CouchDB",
    "erlang": "native, enabled in the ini ([native_query_servers] enable_erlang_query_server = true)",
}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


def guess_dialect(language: str, argv: tuple[str, ...] | list[str], default: str = "es5") -> str:
    """Which view file an externally defined server most likely runs; `default` when nothing says (a
    config file's server: its language name, i.e. map.<language>)."""
    exe = os.path.basename(argv[0]) if argv else ""
    words = " ".join([language, *[os.path.basename(a) for a in argv]]).lower()
    return dialects.guess(language.lower(), exe.lower(), words) or default


def from_environment(env: dict | None = None) -> list[ServerSpec]:
    """Servers named in COUCHDB_QUERY_SERVER_<LANG>="command args", as CouchDB 3.5 reads them."""
    env = os.environ if env is None else env
    specs = []
    for key in sorted(env):
        if not key.startswith(ENV_PREFIX) or not env[key].strip():
            continue
        language = key[len(ENV_PREFIX):].lower()
        try:
            argv = tuple(shlex.split(env[key]))
        except ValueError as exc:
            raise DragnetError(f"{key}: cannot parse command {env[key]!r}: {exc}") from None
        specs.append(ServerSpec(name=language, language=language, argv=argv,
                                dialect=guess_dialect(language, argv), source=f"env:{key}"))
    return specs


def which(program: str) -> str | None:
    return shutil.which(program)


def executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


# -- built-in servers ----------------------------------------------------------------------------
# Each finds one server here: Found (its command) or why not (a str); the registry's record
# (dragnet.servers.registry) adds its name, language and dialect.


@dataclass(frozen=True)
class Found:
    """Where discovery found a server: its command, extra environment, and its runtime's version if known."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    version: str = ""


def discover_chakra(env: dict) -> Found | str:
    if not CHAKRA_QS.exists():
        return (f"{CHAKRA_QS} not built ({BUILD_HINT})")
    if not executable(CHAKRA_QS):
        return (f"{CHAKRA_QS} is not executable")
    return Found((str(CHAKRA_QS),))


def discover_ceiling(env: dict) -> Found | str:
    if not CEILING_QS.exists():
        return f"{CEILING_QS} not built ({BUILD_HINT})"
    if not executable(CEILING_QS):
        return f"{CEILING_QS} is not executable"
    return Found((str(CEILING_QS),))


@functools.lru_cache(maxsize=8)
def runtime_version(exe: str) -> tuple[str | None, str | None]:
    """(version, None) from `exe --version`, or (None, why it does not run)."""
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{exe} --version failed: {exc}"
    text = out.stdout.decode("utf-8", "replace").strip()
    if out.returncode != 0 or not re.match(r"^v?\d+\.\d+", text):
        tail = out.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
        return None, f"{exe} --version exited {out.returncode}: {' '.join(tail) or text or 'no output'}"
    return text.lstrip("v"), None


def discover_node(path: dict) -> Found | str:
    node = shutil.which("node", path=path.get("PATH")) or shutil.which("nodejs", path=path.get("PATH"))
    if not node:
        return ("node is not on PATH (Debian: apt-get install nodejs; 18 or later)")
    version, why = runtime_version(node)
    if why:
        return (why)
    if int(version.split(".")[0]) < NODE_MIN_MAJOR:
        return (f"{node} is Node.js {version}; the node server needs {NODE_MIN_MAJOR} or later")
    return Found((node, str(NODE_QS)), version=f"Node.js {version}")


def discover_bun(env: dict) -> Found | str:
    if not BUN_BINARY.exists():
        return (f"{BUN_BINARY} not installed ({BUILD_HINT}; it says why when Bun cannot "
                              "run here)")
    version, why = runtime_version(str(BUN_BINARY))
    if why:
        return (why)
    return Found((str(BUN_BINARY), str(NODE_QS)), version=f"Bun {version}")


def discover_python3(env: dict) -> Found | str:
    python = sys.executable or which("python3")
    if not python:
        return ("no python3 found")
    if not PYTHON_QS.is_file():
        return (f"{PYTHON_QS} is missing")
    return Found((python, str(PYTHON_QS)))


def discover_pypy3(path: dict) -> Found | str:
    pypy = shutil.which("pypy3", path=path.get("PATH"))
    if not pypy:
        return ("pypy3 is not on PATH (Debian: apt-get install pypy3)")
    return Found((pypy, str(PYTHON_QS)))


def find_couchpy(path: dict) -> str | None:
    """couchpy of this environment: next to sys.executable (the venv), else on PATH."""
    if sys.executable:
        here = Path(sys.executable).with_name("couchpy")
        if executable(here):
            return str(here)
    return shutil.which("couchpy", path=path.get("PATH"))


def discover_couchpy(path: dict) -> Found | str:
    couchpy = find_couchpy(path)
    if not couchpy:
        return ("couchpy not found (pip install CouchDB==1.2)")
    return Found((couchpy,))


def couchpy_package_dir() -> Path | None:
    """Where the installed `couchdb` package (CouchDB-Python) lives, without importing it."""
    import importlib.util

    spec = importlib.util.find_spec("couchdb")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _pypy_identity(pypy: str) -> str:
    """Which pypy3 a check was made with: its real path and modification time (an upgrade changes it)."""
    real = os.path.realpath(pypy)
    try:
        return f"{real} {os.stat(real).st_mtime_ns}"
    except OSError:
        return real


def _pypy_runs_couchpy(pypy: str, pythonpath: str) -> str | None:
    """None when `pypy3 -m couchdb.view` answers ["reset"] with true; else why not."""
    env = dict(os.environ, PYTHONPATH=pythonpath)
    try:
        out = subprocess.run([pypy, "-m", "couchdb.view"], input=b'["reset"]\n', capture_output=True,
                             env=env, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"pypy3 -m couchdb.view failed: {exc}"
    if out.stdout.strip() != b"true":
        tail = (out.stderr or out.stdout).decode("utf-8", "replace").strip().splitlines()[-1:]
        return f"pypy3 -m couchdb.view did not answer reset: {' '.join(tail) or 'no output'}"
    return None


def discover_couchpy_pypy(path: dict) -> Found | str:
    # Discovery only reads: the link and the check that pypy3 runs couchpy through it are made once by
    # build_couchpy_pypy() (`dragnet servers --build`, `make servers`), not on every `dragnet servers`.
    pypy = shutil.which("pypy3", path=path.get("PATH"))
    if not pypy:
        return ("pypy3 is not on PATH")
    package = couchpy_package_dir()
    if package is None:
        return ("the couchdb package (CouchDB==1.2) is not installed")
    link = COUCHPY_PYPY_PATH / "couchdb"
    if not (link.is_symlink() and link.resolve() == package.resolve()):
        return (f"{COUCHPY_PYPY_PATH} not prepared ({BUILD_HINT})")
    try:
        checked = (COUCHPY_PYPY_PATH / COUCHPY_PYPY_STAMP).read_text(encoding="utf-8").strip()
    except OSError:
        checked = ""
    if checked != _pypy_identity(pypy):
        return (f"{pypy} not checked against {COUCHPY_PYPY_PATH} ({BUILD_HINT})")
    return Found((pypy, "-m", "couchdb.view"), env=(("PYTHONPATH", str(COUCHPY_PYPY_PATH)),))


def given_couchdb_home(env: dict | None = None) -> Path | None:
    """The CouchDB release named by DRAGNET_COUCHDB_HOME, or None."""
    env = os.environ if env is None else env
    return Path(env["DRAGNET_COUCHDB_HOME"]) if env.get("DRAGNET_COUCHDB_HOME") else None


def couchdb_home(env: dict | None = None) -> Path:
    """The CouchDB release dragnet uses: DRAGNET_COUCHDB_HOME, else /opt/couchdb."""
    return given_couchdb_home(env) or Path(DEFAULT_COUCHDB_HOME)


def quickjs_binary(home: Path) -> Path | None:
    """CouchDB 3.5 runs javascript_quickjs as lib/couch_quickjs-<vsn>/priv/couchjs_mainjs (couch_quickjs:mainjs_cmd/0)."""
    found = sorted(home.glob("lib/couch_quickjs-*/priv/couchjs_mainjs"))
    return found[-1] if found else None


def discover_couchjs(env: dict) -> Found | str:
    home = couchdb_home(env)
    couchjs, main_js = home / "bin" / "couchjs", home / "share" / "server" / "main.js"
    if executable(couchjs) and main_js.is_file():
        return Found((str(couchjs), str(main_js)))
    return (f"no CouchDB at {home} ({couchjs} and {main_js}; set DRAGNET_COUCHDB_HOME)")


def discover_quickjs(env: dict) -> Found | str:
    """CouchDB's QuickJS binary (quickjs and quickjs-es2015 run the same one on different view files)."""
    home = couchdb_home(env)
    quickjs = quickjs_binary(home)
    if quickjs and executable(quickjs):
        return Found((str(quickjs),))
    return f"no {home}/lib/couch_quickjs-*/priv/couchjs_mainjs (CouchDB >= 3.4 release)"


# -- config files --------------------------------------------------------------------------------


def _config_spec(where: str, name: str, entry: dict, source: str) -> ServerSpec:
    if not _NAME.match(name):
        raise DragnetError(f"{where}: bad server name {name!r} (letters, digits, _ . + -)")
    command = entry.get("command")
    if isinstance(command, str):
        try:
            argv = tuple(shlex.split(command))
        except ValueError as exc:
            raise DragnetError(f"{where}: cannot parse command {command!r}: {exc}") from None
    elif isinstance(command, list) and all(isinstance(a, str) for a in command):
        argv = tuple(command)
    else:
        raise DragnetError(f"{where}: 'command' must be a string or a list of strings")
    if not argv:
        raise DragnetError(f"{where}: 'command' is empty")
    language = entry.get("language") or name
    if not isinstance(language, str) or not _NAME.match(language):
        raise DragnetError(f"{where}: bad language {language!r}")
    own = language.lower() if dialects.is_extension_name(language.lower()) else "es5"
    dialect = entry.get("dialect") or guess_dialect(language, argv, default=own)
    if not isinstance(dialect, str) or not (dialect in DIALECT_FILES or dialects.is_extension_name(dialect)):
        raise DragnetError(f"{where}: bad dialect {dialect!r} (one of {', '.join(DIALECT_FILES)}, or the "
                           "extension of its map files: lower-case letters, digits, _)")
    extra = entry.get("env") or {}
    if not isinstance(extra, dict) or not all(isinstance(v, str) for v in extra.values()):
        raise DragnetError(f"{where}: 'env' must map names to strings")
    process = entry.get("process") or ""
    if not isinstance(process, str) or (process and not _NAME.match(process)):
        raise DragnetError(f"{where}: bad process name {process!r}")
    version_command = entry.get("version_command") or ()
    if isinstance(version_command, str):
        try:
            version_command = shlex.split(version_command)
        except ValueError as exc:
            raise DragnetError(f"{where}: cannot parse version_command: {exc}") from None
    if not isinstance(version_command, (list, tuple)) or not all(isinstance(a, str) for a in version_command):
        raise DragnetError(f"{where}: 'version_command' must be a string or a list of strings")
    unknown = set(entry) - {"command", "language", "dialect", "env", "name", "process", "version_command"}
    if unknown:
        raise DragnetError(f"{where}: unknown keys {', '.join(sorted(unknown))}")
    return ServerSpec(name, language.lower(), argv, dialect, source=source, env=tuple(sorted(extra.items())),
                      process=process, version_command=tuple(version_command))


def load_config(path: str | os.PathLike) -> list[ServerSpec]:
    """Servers from a JSON file (a list of {name, command, language?, dialect?, env?, process?,
    version_command?}, or {"servers": [...]}) or an ini file (one [NAME] section each, with command = ...,
    language = ..., dialect = ..., process = ..., version_command = ..., env.VAR = ...). A dialect dragnet
    does not know is the extension of the server's map files (dragnet.servers.dialects)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DragnetError(f"cannot read query-server config {path}: {exc.strerror or exc}") from None
    source = f"config:{path}"
    specs = []
    suffix = path.suffix.lower()
    data = None
    if suffix == ".json":
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise DragnetError(f"{path}: not valid JSON: {exc}") from None
    elif suffix not in (".ini", ".cfg", ".conf"):
        try:  # no telling suffix: JSON if it parses, else ini
            data = json.loads(text)
        except ValueError:
            pass
    if data is not None:
        entries = data.get("servers") if isinstance(data, dict) else data
        if not isinstance(entries, list):
            raise DragnetError(f"{path}: expected a list of servers (or {{\"servers\": [...]}})")
        for i, entry in enumerate(entries):
            where = f"{path}: server #{i + 1}"
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                raise DragnetError(f"{where}: each server must be an object with a 'name'")
            specs.append(_config_spec(f"{where} ({entry['name']})", entry["name"], entry, source))
    else:
        parser = configparser.ConfigParser(interpolation=None)
        parser.optionxform = str  # keep env.VAR names as written
        try:
            parser.read_string(text, source=str(path))
        except configparser.Error as exc:
            raise DragnetError(f"{path}: not a valid ini file: {exc}") from None
        for section in parser.sections():
            items = dict(parser.items(section))
            entry: dict = {k: v for k, v in items.items() if not k.startswith("env.")}
            env = {k[4:]: v for k, v in items.items() if k.startswith("env.")}
            if env:
                entry["env"] = env
            specs.append(_config_spec(f"{path}: [{section}]", section, entry, source))
    names = [s.name for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise DragnetError(f"{path}: server names defined twice: {', '.join(dupes)}")
    return specs
