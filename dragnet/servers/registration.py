"""How CouchDB 3.5 is told about query servers, generated from the registry (dragnet.servers.discovery).

CouchDB 3.5 takes external query servers only from environment variables: for a design doc with
`"language": "<lang>"` it starts the command in `COUCHDB_QUERY_SERVER_<LANG>` (upper-cased; the old
`[query_servers]` ini section is gone). The command is run by Erlang's open_port({spawn, Cmd}), i.e.
through /bin/sh, so it is shell-quoted here. Three languages need no variable:

- `javascript`: the couchdb start script sets COUCHDB_QUERY_SERVER_JAVASCRIPT to bin/couchjs main.js;
- `javascript_quickjs`: built in (couch_quickjs, lib/couch_quickjs-*/priv/couchjs_mainjs), chosen per design
  doc with `"language": "javascript_quickjs"`; `[couchdb] js_engine = quickjs` would also move `javascript`
  to QuickJS, which dragnet does not want (it compares both);
- `erlang`: runs inside beam, enabled by `[native_query_servers] enable_erlang_query_server = true`.
"""

from __future__ import annotations

import os
import re
import shlex
from typing import Iterable, Mapping

from dragnet.servers.registry import docker_specs
from dragnet.servers.available import discover
from dragnet.servers.discovery import BUILT_IN_LANGUAGES, ENV_PREFIX, ServerSpec, Skipped

_LANGUAGE = re.compile(r"^[a-z0-9_]+$")

# Where the Docker image (docker/Dockerfile) puts dragnet's servers.
DOCKER_ROOT = "/opt/dragnet"
DOCKER_SPECS = docker_specs()   # the registry's in-image commands (dragnet.servers.registry)

DEFAULT_OS_PROCESS_TIMEOUT_MS = 60000


def env_var(language: str) -> str:
    return ENV_PREFIX + language.upper()


def command_line(spec: ServerSpec, prefix_paths: Mapping[str, str] | None = None) -> str:
    """The shell command CouchDB runs for `spec`; extra environment goes through `env NAME=VALUE`."""
    argv = [_relocate(a, prefix_paths) for a in spec.argv]
    extra = [f"{k}={_relocate(v, prefix_paths)}" for k, v in spec.env]
    return shlex.join(["env", *extra, *argv] if extra else argv)


def _relocate(value: str, prefix_paths: Mapping[str, str] | None) -> str:
    # longest prefix first, and only at a path boundary
    for old in sorted(prefix_paths or {}, key=len, reverse=True):
        new = prefix_paths[old]
        base = old.rstrip("/")
        if value == base or value.startswith(base + "/"):
            return new.rstrip("/") + value[len(base):]
    return value


def plan(specs: Iterable[ServerSpec]) -> tuple[list[ServerSpec], list[Skipped]]:
    """Which servers get a COUCHDB_QUERY_SERVER_* variable, and why the others do not.
    One language, one command: the first server of a language wins."""
    chosen: dict[str, ServerSpec] = {}
    skipped = []
    for spec in specs:
        if spec.language in BUILT_IN_LANGUAGES:
            skipped.append(Skipped(spec.name, f"language {spec.language}: {BUILT_IN_LANGUAGES[spec.language]}"))
        elif not _LANGUAGE.match(spec.language):
            skipped.append(Skipped(spec.name, f"language {spec.language!r} cannot be an environment variable "
                                              "name (use lower-case letters, digits, _)"))
        elif spec.language in chosen:
            skipped.append(Skipped(spec.name, f"language {spec.language} is already served by "
                                              f"{chosen[spec.language].name}"))
        else:
            chosen[spec.language] = spec
    return list(chosen.values()), skipped


def environment_for(specs: Iterable[ServerSpec], prefix_paths: Mapping[str, str] | None = None) -> dict[str, str]:
    """COUCHDB_QUERY_SERVER_<LANG> -> command for every registrable server (see plan())."""
    chosen, _ = plan(specs)
    return {env_var(s.language): command_line(s, prefix_paths) for s in chosen}


def shell_exports(environment: Mapping[str, str]) -> str:
    """`export NAME='command'` lines, safe to paste into sh/bash or an env file sourced by sh."""
    return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(environment.items()))


def ini_for(*, erlang: bool = True, os_process_timeout_ms: int | None = DEFAULT_OS_PROCESS_TIMEOUT_MS,
            os_process_limit: int | None = None, js_engine: str | None = None) -> str:
    """A local.ini (or local.d/*.ini) fragment: the native Erlang server and query-server limits.

    os_process_timeout_ms: how long CouchDB waits for one answer (default 5000 ms; slow servers on
    big documents need more, and a timeout kills the process and fails the build)."""
    if os_process_timeout_ms is not None and (not isinstance(os_process_timeout_ms, int) or os_process_timeout_ms <= 0):
        raise ValueError(f"os_process_timeout_ms must be a positive integer, not {os_process_timeout_ms!r}")
    if os_process_limit is not None and (not isinstance(os_process_limit, int) or os_process_limit <= 0):
        raise ValueError(f"os_process_limit must be a positive integer, not {os_process_limit!r}")
    if js_engine not in (None, "spidermonkey", "quickjs"):
        raise ValueError(f"js_engine must be spidermonkey or quickjs, not {js_engine!r}")
    out = ["; dragnet: query-server settings for CouchDB 3.5 (generated by `dragnet servers --ini`)"]
    couchdb = []
    if os_process_timeout_ms is not None:
        couchdb.append(f"os_process_timeout = {os_process_timeout_ms}")
    if js_engine is not None:
        couchdb.append(f"; javascript runs on {js_engine}; javascript_quickjs is always QuickJS")
        couchdb.append(f"js_engine = {js_engine}")
    if couchdb:
        out += ["", "[couchdb]", *couchdb]
    if erlang:
        out += ["", "[native_query_servers]", "; map functions written in Erlang, run inside beam",
                "enable_erlang_query_server = true"]
    if os_process_limit is not None:
        out += ["", "[query_server_config]", f"os_process_limit = {os_process_limit}"]
    return "\n".join(out) + "\n"


def docker_environment() -> dict[str, str]:
    """The variables for the Docker image, with its in-image paths (docker/Dockerfile)."""
    return environment_for(DOCKER_SPECS)


def local_environment(env: dict | None = None, config: str | os.PathLike | None = None) -> dict[str, str]:
    """The variables for a CouchDB running on this host, for the servers discovered here."""
    specs, _ = discover(env=env, config=config)
    return environment_for(specs)
