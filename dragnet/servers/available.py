"""The query servers this process can use: dragnet's built-in ones that run here, those named by
COUCHDB_QUERY_SERVER_* variables or a servers file, and the user-given ones (`--server`, dragnet.servers.user),
which are checked here against the built-in names and languages before anything runs.

The top of the servers stage: it reads the registry's records and the user-given servers; nothing below imports it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Iterable, Sequence

from dragnet.errors import UsageError
from dragnet.servers import dialects, user
from dragnet.servers.discovery import BUILT_IN_LANGUAGES, ServerSpec, Skipped, executable, from_environment, load_config
from dragnet.servers.registry import LANGUAGES, SERVERS, discover_builtin
from dragnet.servers.user import OPTION_SOURCE, parse_option


def builtin_servers(env: dict | None = None) -> tuple[list[ServerSpec], list[Skipped]]:
    env = os.environ if env is None else env
    found = discover_builtin(env)
    return [s for s in found if isinstance(s, ServerSpec)], [s for s in found if isinstance(s, Skipped)]


def _runnable(spec: ServerSpec, env: dict) -> str | None:
    exe = spec.argv[0]
    if os.sep in exe:
        return None if executable(Path(exe)) else f"{exe} is not an executable file"
    return None if shutil.which(exe, path=env.get("PATH")) else f"{exe} is not on PATH"


def discover(env: dict | None = None, config: str | os.PathLike | None = None) -> tuple[list[ServerSpec], list[Skipped]]:
    """Every query server that can run here, and a reason for each one that cannot.

    Built-ins first, then COUCHDB_QUERY_SERVER_* variables, then the config file. A server defined in
    a variable or the config file replaces a built-in only when it carries the same name (the variable
    COUCHDB_QUERY_SERVER_COUCHPY names "couchpy"); one that just runs the same command as an earlier
    server is skipped as a duplicate."""
    env = dict(os.environ if env is None else env)
    specs, skipped = builtin_servers(env)
    external = from_environment(env)
    if config is not None:
        external += load_config(config)
    external += [s for s in user.active() if s.name not in {e.name for e in external}]
    for spec in external:
        why = _runnable(spec, env)
        if why:
            skipped.append(Skipped(spec.name, f"{spec.source}: {why}"))
            continue
        same_name = [s for s in specs if s.name == spec.name]
        if not same_name:
            twin = next((s for s in specs if s.argv == spec.argv and s.env == spec.env), None)
            if twin is not None:
                skipped.append(Skipped(spec.name, f"{spec.source}: same command as {twin.name}"))
                continue
        # an explicitly named definition replaces the built-in (or the earlier definition) of that name
        specs = [s for s in specs if s.name != spec.name] + [spec]
        skipped = [k for k in skipped if k.name != spec.name]
    return specs, skipped


def builtin_names() -> tuple[set[str], set[str]]:
    """(server names, CouchDB languages and their spellings) dragnet and CouchDB already own."""
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
    user.use(specs)
    return specs
