"""Query servers dragnet knows: how to start each one, which CouchDB language it serves, which view file it runs.

This is the single registry used by `dragnet qsbench` (discovery), registration (COUCHDB_QUERY_SERVER_*
environment variables for CouchDB) and the Docker image.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# View-file dialects: which file of a views/<name>/ folder a server runs.
DIALECT_FILES = {
    "es5": "map.js",
    "es2015": "map.es6.js",
    "python": "map.py",
    "erlang": "map.erl",
}


@dataclass(frozen=True)
class ServerSpec:
    """One runnable query server.

    name:     unique display name (e.g. "chakra", "python3", "pypy3", "couchpy", "couchjs")
    language: the CouchDB language name it serves (the design doc's "language")
    argv:     the command that starts it; speaks the protocol on stdin/stdout
    dialect:  key of DIALECT_FILES: which view file it runs
    source:   where it came from ("dragnet", "couchpy", "env:COUCHDB_QUERY_SERVER_X", "config:FILE")
    env:      extra environment for the process
    """

    name: str
    language: str
    argv: tuple[str, ...]
    dialect: str
    source: str = "dragnet"
    env: tuple[tuple[str, str], ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Skipped:
    """A server that could not be offered here, with the reason."""

    name: str
    reason: str


ENV_PREFIX = "COUCHDB_QUERY_SERVER_"
_JS_NAME = re.compile(r"javascript|couchjs|quickjs|chakra|node", re.I)


def from_environment(env: dict | None = None) -> list[ServerSpec]:
    """Servers named in COUCHDB_QUERY_SERVER_<LANG>="command args", as CouchDB 3.5 reads them."""
    env = os.environ if env is None else env
    specs = []
    for key in sorted(env):
        if not key.startswith(ENV_PREFIX) or not env[key].strip():
            continue
        language = key[len(ENV_PREFIX):].lower()
        argv = tuple(shlex.split(env[key]))
        dialect = "python" if "py" in language else ("es5" if _JS_NAME.search(language + " " + argv[0]) else "es5")
        specs.append(ServerSpec(name=language, language=language, argv=argv, dialect=dialect, source=f"env:{key}"))
    return specs


def which(program: str) -> str | None:
    return shutil.which(program)
