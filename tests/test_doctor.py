"""`dragnet doctor`: the judgements of each part from what was probed (pure), and a real checkup of this machine,
which must agree with what PATH and the query servers' discovery say here."""

from __future__ import annotations

import json
import shutil

from click.testing import CliRunner

from dragnet.cli import main
from dragnet.measure import doctor
from dragnet.report.render.doctor import lines
from dragnet.servers.available import builtin_servers


def test_perf_needs_the_kernel_to_allow_every_cpu():
    assert not doctor.perf(None, -1, False).found
    assert doctor.perf(None, -1, False).adds == "Debian: apt-get install linux-perf"
    low = doctor.perf("/usr/bin/perf", 2, False)
    assert not low.found and "perf_event_paranoid is 2" in low.detail and "sysctl" in low.adds
    assert doctor.perf("/usr/bin/perf", -1, False).found
    assert doctor.perf("/usr/bin/perf", 2, True).found          # root records anyway
    assert not doctor.perf("/usr/bin/perf", None, False).found   # unreadable: not assumed allowed


def test_paranoid_level_parses_the_proc_file():
    assert doctor.paranoid_level("2\n") == 2 and doctor.paranoid_level("-1") == -1
    assert doctor.paranoid_level("") is None


def test_java_for_nouveau_needs_seventeen():
    assert not doctor.java([]).found and "no java" in doctor.java([]).detail
    old = doctor.java([("/usr/lib/jvm/java-11/bin/java", 11)])
    assert not old.found and "Java 11" in old.detail and "openjdk-17-jre-headless" in old.adds
    both = doctor.java([("/a/java", 11), ("/b/java", 21)])
    assert both.found and both.detail == "Java 21 (/b/java)"


def test_docker_engine_is_not_asked_without_the_sdk():
    assert not doctor.docker_engine("unix:///var/run/docker.sock", None, sdk=False).found
    down = doctor.docker_engine("unix:///x.sock", "connection refused", sdk=True)
    assert not down.found and "connection refused" in down.detail and "couch up's default" in down.disables
    assert doctor.docker_engine("unix:///x.sock", None, sdk=True).found


def test_couchdb_release_names_where_and_what_adds_it():
    gone = doctor.couchdb_release(doctor.Path("/opt/couchdb"), False, None, "not installed",
                                  ["/x/couchdb-3.5.0-bookworm-x86_64.tar.gz"])
    assert not gone.found and "couchjs" in gone.disables and "--backend local" in gone.disables
    assert "DRAGNET_COUCHDB_HOME" in gone.adds and "couchdb-3.5.0-bookworm" in gone.adds
    there = doctor.couchdb_release(doctor.Path("/srv/c"), True, "3.5.0", None, [])
    assert there.found and there.detail == "/srv/c (DRAGNET_COUCHDB_HOME), CouchDB 3.5.0"


def test_a_server_built_by_dragnet_says_the_build_command():
    assert doctor.server("chakra", False, "not built", "chakra").adds.startswith("dragnet servers --build chakra")
    assert "apt-get install nodejs" in doctor.server("node", False, "not on PATH", None).adds
    # couchjs is CouchDB's own: missing here, it still runs inside any CouchDB
    assert "a CouchDB runs its own" in doctor.server("couchjs", False, "no CouchDB", None, couchdb_own=True).disables


def test_text_lists_what_a_missing_part_disables():
    up = doctor.Checkup((doctor.tool("valgrind", "/usr/bin/valgrind", "the gate", "apt-get install valgrind"),
                         doctor.tool("inferno", None, "flame graphs", "cargo install inferno")))
    text = "\n".join(lines(up))
    assert "ok  valgrind" in text and "NO  inferno" in text
    assert "disables: flame graphs" in text and "adds it:  cargo install inferno" in text
    assert "disables: the gate" not in text       # found: nothing disabled
    assert text.splitlines()[-1] == "1 of 2 parts here; missing: inferno"


def test_checkup_of_this_machine_agrees_with_path_and_discovery():
    got = doctor.checkup()
    by_name = {p.name: p for p in got.parts}
    assert by_name["valgrind"].found == (shutil.which("valgrind") is not None)
    assert by_name["inferno"].found == (shutil.which("inferno-flamegraph") is not None)
    specs, skipped = builtin_servers()
    assert {n for n, p in by_name.items() if n.startswith("query server ") and p.found} == \
        {f"query server {s.name}" for s in specs}
    for s in skipped:
        assert by_name[f"query server {s.name}"].detail == s.reason
    assert all(p.disables for p in got.parts) and all(p.adds for p in got.missing)


def test_cli_json_is_the_checkup():
    r = CliRunner().invoke(main, ["doctor", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    names = [p["name"] for p in out["parts"]]
    assert names[:5] == ["CouchDB release (local backend)", "Docker SDK for Python", "Docker engine",
                         "Java for Nouveau", "Nouveau servers"]
    assert "perf" in names and "query server python3" in names
    assert out["missing"] == [p["name"] for p in out["parts"] if not p["found"]]
    text = CliRunner().invoke(main, ["doctor"])
    assert text.exit_code == 0 and text.output.splitlines()[-1].endswith(
        "parts here" if not out["missing"] else f"missing: {', '.join(out['missing'])}")
