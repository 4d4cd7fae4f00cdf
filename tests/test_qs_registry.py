"""The query-server registry: each record is consistent with what reads it (discovery, Docker, pidstat,
build steps, version probe)."""

import re
import sys

import pytest

from dragnet.measure import pidstat as pidstat
from dragnet.servers import registry as qs_registry
from dragnet.servers import registration as registration
from dragnet.servers import compiling as server_build
from dragnet.index import views as views
from dragnet.servers.available import builtin_servers
from dragnet.servers.discovery import DIALECT_FILES, ServerSpec, Skipped


def test_names_are_unique_and_dialects_known():
    names = [s.name for s in qs_registry.SERVERS]
    assert len(names) == len(set(names))
    assert all(s.dialect in DIALECT_FILES for s in qs_registry.SERVERS)


@pytest.mark.parametrize("server", qs_registry.SERVERS, ids=lambda s: s.name)
def test_discovery_answers_for_its_own_record(server, tmp_path):
    # an empty PATH and no CouchDB: each answers with its own name, found or skipped with a reason
    found = server.find({"PATH": str(tmp_path), "DRAGNET_COUCHDB_HOME": str(tmp_path)})
    assert found.name == server.name
    if isinstance(found, ServerSpec):
        assert (found.language, found.dialect) == (server.language, server.dialect)
    else:
        assert isinstance(found, Skipped) and found.reason


def test_builtin_servers_are_the_records_in_order():
    specs, skipped = builtin_servers()
    assert sorted(s.name for s in [*specs, *skipped]) == sorted(s.name for s in qs_registry.SERVERS)
    order = [s.name for s in qs_registry.SERVERS]
    assert [s.name for s in specs] == [n for n in order if n in {s.name for s in specs}]


@pytest.mark.parametrize("server", [s for s in qs_registry.SERVERS if s.docker], ids=lambda s: s.name)
def test_docker_command_is_seen_as_the_servers_family(server):
    assert pidstat.family(" ".join(server.docker)) == server.processes[0].family
    pattern = re.compile(pidstat.DEFAULT_PATTERN)
    exe = server.docker[0].rsplit("/", 1)[-1]
    assert pattern.search(exe), f"pidstat -C {pidstat.DEFAULT_PATTERN} would not see {exe}"


def test_docker_specs_and_build_steps_come_from_the_records():
    assert [s.name for s in registration.DOCKER_SPECS] == [s.name for s in qs_registry.SERVERS if s.docker]
    assert set(server_build.STEPS) == {s.build for s in qs_registry.SERVERS if s.build}
    assert set(server_build.STEPS) <= set(server_build.BUILDERS)


def test_languages_collect_their_servers():
    python = qs_registry.LANGUAGE["python"]
    assert python.processes == ("couchpy", "couchpy-pypy")
    assert qs_registry.LANGUAGE["erlang"].processes == ()
    assert views.ALIASES["pypy"] == "pypy3" and views.ALIASES["couchjs"] == "javascript"
    assert ("javascript_quickjs_es2015", "javascript_quickjs", "map.es6.js") in qs_registry.variants()


def test_version_probe_runs_the_interpreter():
    spec = ServerSpec("python3", "python3", (sys.executable, "x.py"), "python")
    impl = sys.implementation.name
    assert qs_registry.probe_version(spec) == f"{impl} {'.'.join(map(str, sys.version_info[:3]))}"
    # an external definition of a registered server gets the same probe through its command's family
    assert qs_registry.server_for(ServerSpec("py", "py", (sys.executable, "/x/dragnet_qs.py"), "python")).name \
        == "python3"
    assert qs_registry.probe_version(ServerSpec("x", "x", ("/no/such/thing",), "es5")) is None
