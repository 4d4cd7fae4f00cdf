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
from typing import Iterable, Sequence

from dragnet.errors import UsageError
from dragnet.servers import dialects
from dragnet.servers.discovery import ServerSpec, load_config

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


def builtin_names() -> tuple[set[str], set[str]]:
    """(server names, CouchDB languages and their spellings) dragnet and CouchDB already own."""
    from dragnet.servers.registration import BUILT_IN_LANGUAGES
    from dragnet.servers.registry import LANGUAGES, SERVERS

    names = {s.name for s in SERVERS}
    languages = set(BUILT_IN_LANGUAGES) | {lang.name for lang in LANGUAGES}
    languages |= {a for lang in LANGUAGES for a in lang.aliases}
    return names, languages


def check(specs: Sequence[ServerSpec]) -> None:
    """Refuses, in one line, a user-given server whose name or language collides with a built-in one, or a
    name or language given twice. (A --config entry named like a built-in server replaces it: that is a
    redefinition, not a collision; its language must still be its own.)"""
    names, languages = builtin_names()
    seen: dict[str, str] = {}
    seen_lang: dict[str, str] = {}
    for s in specs:
        where = f"{s.source}: {s.name}"
        if s.name in seen:
            raise UsageError(f"{where}: server name given twice ({seen[s.name]} and {s.source})")
        seen[s.name] = s.source
        if s.source == OPTION_SOURCE and s.name in names:
            raise UsageError(f"{where}: {s.name!r} is a built-in server's name; pick another")
        if s.language in languages and s.name not in names:
            raise UsageError(f"{where}: language {s.language!r} is a built-in language; pick another")
        if s.language in seen_lang:
            raise UsageError(f"{where}: language {s.language!r} is also {seen_lang[s.language]}'s")
        seen_lang[s.language] = s.name
        try:
            dialects.get(s.dialect)
        except ValueError as exc:
            raise UsageError(f"{where}: {exc}") from None


def collect(options: Iterable[str] = (), config: str | os.PathLike | None = None) -> list[ServerSpec]:
    """The servers of `--config FILE` and of `--server` options, checked. A `--server` value is NAME=COMMAND,
    or without "=" the path of a servers file (the format of --config)."""
    specs = list(load_config(config)) if config else []
    for o in options:
        specs += parse_option(o) if "=" in o else load_config(o)
    check(specs)
    return specs


def install(options: Iterable[str] = (), config: str | os.PathLike | None = None) -> list[ServerSpec]:
    """collect(), then use(): the servers of this run, refused before anything runs when they collide."""
    specs = collect(options, config)
    use(specs)
    return specs


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
