"""Query servers the user brings: `--server NAME=COMMAND` and `--config FILE`, the one home for them.

A user-given server is a ServerSpec like a built-in one. Its language in design docs is its name unless
the file gives one, and its map functions are `views/<view>/map.<dialect>`, where an unknown dialect is
just a file extension (dragnet.servers.dialects): `--server go=./qs` runs `map.go`. They are checked
before anything runs (a name or language that collides with a built-in one, a name given twice) and
then made the servers of this process with use(): discovery offers them, the CouchDB dragnet starts
registers them (COUCHDB_QUERY_SERVER_<LANGUAGE>), pidstat watches their processes and results carry
their version like any built-in server's.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from typing import Sequence

from dragnet.errors import UsageError
from dragnet.servers.discovery import ServerSpec

_LANGUAGE = re.compile(r"^[a-z][a-z0-9_]*$")
OPTION_SOURCE = "option:--server"
_ACTIVE: list[ServerSpec] = []


def parse_option(text: str) -> list[ServerSpec]:
    """`NAME=COMMAND` -> a server named NAME serving language NAME, on map.NAME files."""
    name, sep, command = text.partition("=")
    name = name.strip()
    where = f"--server {text}"
    if not sep or not name or not command.strip():
        raise UsageError(f"{where}: expected NAME=COMMAND")
    if not _LANGUAGE.match(name):
        raise UsageError(f"{where}: {name!r} cannot be a CouchDB language name (lower-case letters, digits, _; "
                         "a letter first)")
    try:
        argv = tuple(shlex.split(command))
    except ValueError as exc:
        raise UsageError(f"{where}: cannot parse the command: {exc}") from None
    if not argv:
        raise UsageError(f"{where}: the command is empty")
    return [ServerSpec(name, name, argv, name, source=OPTION_SOURCE)]


def use(specs: Sequence[ServerSpec]) -> None:
    """Makes `specs` this process's user-given servers (discovery, registration, pidstat, versions)."""
    _ACTIVE[:] = list(specs)


def active() -> list[ServerSpec]:
    return list(_ACTIVE)


def find(name_or_language: str) -> ServerSpec | None:
    return next((s for s in _ACTIVE if name_or_language in (s.name, s.language)), None)


def process_name(spec: ServerSpec) -> str:
    """The name pidstat -C matches for this server: as given, else its command's base name."""
    return spec.process or os.path.basename(spec.argv[0])


def family_of(exe: str) -> str | None:
    """The family (the server's name) of a process whose executable is a user-given server's."""
    return next((s.name for s in _ACTIVE if exe == process_name(s) or exe == os.path.basename(s.argv[0])), None)


def probe_version(spec: ServerSpec) -> str | None:
    """The first output line of the server's version_command, or None."""
    if not spec.version_command:
        return None
    env = dict(os.environ, **dict(spec.env))
    try:
        out = subprocess.run(list(spec.version_command), capture_output=True, text=True, timeout=10,
                             stdin=subprocess.DEVNULL, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (out.stdout or out.stderr).strip().splitlines()
    return lines[0].strip() if out.returncode == 0 and lines else None
