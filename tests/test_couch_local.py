"""`dragnet couch` local backend and the shared control pieces (state files, ports, credentials, /_up).

The full up/status/down runs a real CouchDB release when DRAGNET_COUCHDB_HOME points at one (it
uses port 15984 and its own data, beside any CouchDB already on 5984); otherwise it skips.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import stat
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from dragnet.couchdb import control as ctl
from dragnet.couchdb import local as local
from dragnet.cli import main
from dragnet.couchdb.client import connect
from dragnet.errors import DragnetError, UsageError
from conftest import couch_env, free_port

# a free port unless one is given, so that parallel test runs on one host do not collide
TEST_PORT = int(os.environ.get("DRAGNET_TEST_LOCAL_PORT") or free_port())
SECRET = "s3cret-Pa55word-for-test"


@pytest.fixture()
def env(tmp_path) -> dict:
    return couch_env(tmp_path, SECRET)




# --- state files ---------------------------------------------------------------------------------------

def test_state_dir_follows_xdg_and_home():
    assert ctl.state_dir({"XDG_STATE_HOME": "/x/state", "HOME": "/h"}) == Path("/x/state/dragnet")
    assert ctl.state_dir({"HOME": "/h"}) == Path("/h/.local/state/dragnet")
    assert ctl.state_dir({"DRAGNET_STATE_DIR": "/d", "XDG_STATE_HOME": "/x"}) == Path("/d")


def test_state_file_lifecycle(env):
    assert ctl.load_state(5999, env) is None and ctl.list_states(env) == []
    with pytest.raises(DragnetError, match="no CouchDB"):
        ctl.select_state(None, env)
    a = ctl.Instance(backend="local", port=5999, user="admin", pid=123, data_dir="/d")
    b = ctl.Instance(backend="docker", port=5998, user="admin", container="abc", volume="v")
    path = ctl.save_state(a, env)
    assert path == ctl.state_dir(env) / "couch-5999.json"
    assert ctl.load_state(5999, env) == a
    assert ctl.select_state(None, env) == a
    ctl.save_state(b, env)
    assert [i.port for i in ctl.list_states(env)] == [5998, 5999]
    with pytest.raises(UsageError, match=r"several .* \(ports 5998, 5999\): choose one with --port"):
        ctl.select_state(None, env)
    assert ctl.select_state(5998, env) == b
    assert SECRET not in path.read_text()
    ctl.remove_state(5999, env)
    assert ctl.load_state(5999, env) is None and ctl.select_state(None, env) == b
    with pytest.raises(DragnetError, match="no CouchDB on port 5999"):
        ctl.select_state(5999, env)
    ctl.state_path(5997, env).write_text("{not json")
    with pytest.raises(DragnetError, match="unreadable state file"):
        ctl.load_state(5997, env)


def test_display_url_masks_nothing_it_does_not_have():
    inst = ctl.Instance(backend="local", port=15984, user="admin")
    assert inst.url == "http://127.0.0.1:15984"
    assert inst.display_url == "http://admin:***@127.0.0.1:15984"
    assert ctl.Instance(backend="local", port=15984).display_url == "http://127.0.0.1:15984"


# --- credentials and ports -----------------------------------------------------------------------------

def test_admin_credentials():
    assert ctl.admin_credentials({"COUCHDB_USER": "adm", "COUCHDB_PASSWORD": "pw"}) == ("adm", "pw")
    with pytest.raises(UsageError, match="set COUCHDB_USER and COUCHDB_PASSWORD"):
        ctl.admin_credentials({})
    with pytest.raises(UsageError, match="set COUCHDB_PASSWORD:"):
        ctl.admin_credentials({"COUCHDB_USER": "adm"})
    with pytest.raises(UsageError, match="COUCHDB_USER must not"):
        ctl.admin_credentials({"COUCHDB_USER": "a=b", "COUCHDB_PASSWORD": "pw"})
    with pytest.raises(UsageError, match="COUCHDB_PASSWORD must not"):
        ctl.admin_credentials({"COUCHDB_USER": "adm", "COUCHDB_PASSWORD": "pw\n[admins]"})
    with pytest.raises(UsageError, match="ini parser would cut the password"):
        ctl.admin_credentials({"COUCHDB_USER": "adm", "COUCHDB_PASSWORD": "pw ;rest"})
    assert ctl.admin_credentials({"COUCHDB_USER": "adm", "COUCHDB_PASSWORD": "p;w"}) == ("adm", "p;w")


def test_port_taken_by_a_real_listener():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert ctl.port_in_use(port)
        with pytest.raises(DragnetError, match=f"port {port} on 127.0.0.1 is already in use"):
            ctl.ensure_port_free(port)
    assert not ctl.port_in_use(port)
    ctl.ensure_port_free(port)


def test_port_taken_by_a_wildcard_listener():
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        assert ctl.port_in_use(s.getsockname()[1])


def test_port_out_of_range():
    with pytest.raises(UsageError, match="not a TCP port"):
        ctl.ensure_port_free(70000)


def test_wait_up_times_out_with_the_log_tail():
    port = free_port()
    t0 = time.monotonic()
    with pytest.raises(DragnetError) as err:
        ctl.wait_up(f"http://127.0.0.1:{port}", 0.6, log_tail=lambda: "line 1\nline 2: eaddrinuse")
    assert 0.5 < time.monotonic() - t0 < 5
    msg = str(err.value)
    assert f"did not answer http://127.0.0.1:{port}/_up within 0.6 s (last: connection refused)" in msg
    assert msg.endswith("line 1\nline 2: eaddrinuse")


def test_wait_up_stops_when_the_process_ended():
    with pytest.raises(DragnetError, match=r"ended before answering .* \(exit status 1\)"):
        ctl.wait_up(f"http://127.0.0.1:{free_port()}", 30, alive=lambda: "exit status 1")


# --- generated configuration -----------------------------------------------------------------------------

def test_render_ini_has_port_admin_storage_and_erlang_server():
    text = local.render_ini(port=15984, data_dir="/dev/shm/dragnet/couch-15984", user="admin", password=SECRET,
                            secret="abc")
    sections: dict[str, dict[str, str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
        elif "=" in line and not line.startswith(";"):
            k, v = line.split("=", 1)
            current[k.strip()] = v.strip()
    assert sections["chttpd"] == {"port": "15984", "bind_address": "127.0.0.1"}
    assert sections["couchdb"]["database_dir"] == sections["couchdb"]["view_index_dir"] \
        == "/dev/shm/dragnet/couch-15984"
    assert sections["couchdb"]["single_node"] == "true"
    assert sections["admins"] == {"admin": SECRET}
    assert sections["native_query_servers"] == {"enable_erlang_query_server": "true"}
    assert sections["chttpd_auth"]["secret"] == "abc"


def test_render_vm_args_drops_name_cookie_and_fixed_dist_port():
    release = "-name couchdb@127.0.0.1\n-setcookie monster\n-kernel inet_dist_listen_min 9100\n" \
              "-kernel inet_dist_listen_max 9100\n-kernel error_logger silent\n+K true\n"
    out = local.render_vm_args(release, 15984)
    assert out.splitlines()[0] == "-name dragnet15984@127.0.0.1"
    assert "monster" not in out and "9100" not in out and "couchdb@" not in out
    assert "-kernel error_logger silent" in out and "+K true" in out


def test_build_env_passes_config_without_secrets(tmp_path):
    home = _fake_release_layout(tmp_path / "couchdb")
    rel = local.find_release(home)
    base = {"PATH": "/usr/bin", "COUCHDB_USER": "admin", "COUCHDB_PASSWORD": SECRET, "ERL_FLAGS": "+A 4",
            "COUCHDB_QUERY_SERVER_MYJS": "/usr/bin/myjs --fast"}
    env = local.build_env(rel, tmp_path / "local.ini", tmp_path / "vm.args", base)
    assert SECRET not in json.dumps(env)
    assert "COUCHDB_PASSWORD" not in env
    chain = f"{home / 'etc' / 'default.ini'} {home / 'etc' / 'default.d'} {tmp_path / 'local.ini'}"
    # a start script without COUCHDB_INI_FILES support gets the chain through ERL_FLAGS
    assert env["ERL_FLAGS"] == f"+A 4 -couch_ini {chain}" and "COUCHDB_INI_FILES" not in env
    assert env["COUCHDB_ARGS_FILE"] == str(tmp_path / "vm.args")
    assert env["COUCHDB_QUERY_SERVER_MYJS"] == "/usr/bin/myjs --fast"
    # 3.5's bin/couchdb reads COUCHDB_INI_FILES; then ERL_FLAGS must not repeat -couch_ini
    rel.script.write_text('#!/bin/sh\n[ -n "${COUCHDB_INI_FILES:-}" ] && INI_ARGS="-couch_ini $COUCHDB_INI_FILES"\n')
    env = local.build_env(rel, tmp_path / "local.ini", tmp_path / "vm.args", base)
    assert env["COUCHDB_INI_FILES"] == chain and env["ERL_FLAGS"] == "+A 4"
    # the release's own local.ini / local.d (another server's) are not in the chain
    assert "etc/local" not in chain


def test_build_env_names_quickjs_so_ken_builds_its_views_on_3_5_0(tmp_path):
    home = _fake_release_layout(tmp_path / "couchdb")
    rel = local.find_release(home)
    base = {"PATH": "/usr/bin"}
    # a release without couch_quickjs: nothing named
    assert "COUCHDB_QUERY_SERVER_JAVASCRIPT_QUICKJS" not in local.build_env(rel, tmp_path / "l.ini", tmp_path / "v", base)
    priv = home / "lib" / "couch_quickjs-3.5.0" / "priv"
    priv.mkdir(parents=True)
    (priv / "couchjs_mainjs").write_text("")
    env = local.build_env(rel, tmp_path / "l.ini", tmp_path / "v", base)
    assert env["COUCHDB_QUERY_SERVER_JAVASCRIPT_QUICKJS"] == f'"{priv / "couchjs_mainjs"}"'
    # the user's own wins
    env = local.build_env(rel, tmp_path / "l.ini", tmp_path / "v", {**base, "COUCHDB_QUERY_SERVER_JAVASCRIPT_QUICKJS": "/x"})
    assert env["COUCHDB_QUERY_SERVER_JAVASCRIPT_QUICKJS"] == "/x"


def test_query_server_env_registers_dragnets_servers_and_keeps_the_users():
    env = local.query_server_env({"PATH": os.environ.get("PATH", ""),
                                  "COUCHDB_QUERY_SERVER_PYTHON3": "/my/python3 /my/qs.py"})
    assert env["COUCHDB_QUERY_SERVER_PYTHON3"] == "/my/python3 /my/qs.py"
    assert all(k.startswith("COUCHDB_QUERY_SERVER_") for k in env)
    py = local.query_server_env({"PATH": os.environ.get("PATH", "")}).get("COUCHDB_QUERY_SERVER_PYTHON3", "")
    assert py.endswith("query_servers/python/dragnet_qs.py")


def test_write_private_is_0600(tmp_path):
    p = tmp_path / "x.ini"
    local.write_private(p, "[admins]\na = b\n")
    assert stat.S_IMODE(p.stat().st_mode) == 0o600


def _fake_release_layout(home: Path) -> Path:
    """Only the directory layout find_release checks, for the config-path tests (no server runs)."""
    (home / "bin").mkdir(parents=True)
    (home / "etc" / "default.d").mkdir(parents=True)
    (home / "releases").mkdir()
    (home / "bin" / "couchdb").write_text("#!/bin/sh\nexit 1\n")
    (home / "bin" / "couchdb").chmod(0o755)
    (home / "etc" / "default.ini").write_text("")
    (home / "releases" / "start_erl.data").write_text("13.1.5 3.5.0\n")
    return home


def test_not_installed_in_an_empty_dir(tmp_path, env):
    with pytest.raises(DragnetError, match=rf"CouchDB is not installed at {tmp_path} \(no bin/couchdb"):
        local.find_release(tmp_path)
    result = CliRunner().invoke(main, ["couch", "up", "--backend", "local", "--couchdb-home", str(tmp_path),
                                       "--port", str(free_port())], env=env)
    assert result.exit_code == 1
    assert "dragnet: error: CouchDB is not installed at" in result.output
    assert ctl.list_states(env) == []


def test_local_refuses_memory_limit_and_fractional_cpus(tmp_path, env):
    with pytest.raises(UsageError, match="--memory needs the docker backend"):
        local.up(port=free_port(), home=str(tmp_path), memory="1g", env=env)
    with pytest.raises(UsageError, match="pins whole CPUs"):
        local.up(port=free_port(), home=str(_fake_release_layout(tmp_path / "c")), cpus=0.5, env=env)


def test_local_up_refuses_a_taken_port(tmp_path, env):
    home = _fake_release_layout(tmp_path / "c")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(DragnetError, match="already in use"):
            local.up(port=s.getsockname()[1], home=str(home), env=env)


def test_purge_never_deletes_a_users_data_dir(tmp_path, env):
    mine = tmp_path / "mine"
    mine.mkdir()
    inst = ctl.Instance(backend="local", port=5990, user="admin", pid=None, data_dir=str(mine))
    ctl.save_state(inst, env)
    with pytest.raises(UsageError, match="--purge deletes only data directories dragnet chose"):
        local.stop(inst, env=env, purge=True)
    assert mine.is_dir() and ctl.load_state(5990, env) == inst
    owned = ctl.state_dir(env) / "local-5990" / "data"
    owned.mkdir(parents=True)
    inst.data_dir = str(owned)
    assert local.stop(inst, env=env, purge=True) is False  # nothing ran
    assert not owned.exists() and ctl.load_state(5990, env) is None


def test_cli_status_without_instances(env):
    result = CliRunner().invoke(main, ["couch", "status", "--json"], env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"instances": []}
    result = CliRunner().invoke(main, ["couch", "down"], env=env)
    assert result.exit_code == 1 and "dragnet started no CouchDB" in result.output


# --- a real CouchDB release ------------------------------------------------------------------------------

def _release_home() -> str:
    home = os.environ.get("DRAGNET_COUCHDB_HOME")
    if not home or not (Path(home) / "bin" / "couchdb").exists():
        pytest.skip("no CouchDB release (set DRAGNET_COUCHDB_HOME to a dir with bin/couchdb)")
    return home


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest.mark.slow
def test_local_up_status_down_on_a_real_release(tmp_path, env):
    home = _release_home()
    if ctl.port_in_use(TEST_PORT):
        pytest.skip(f"port {TEST_PORT} is busy")
    data = tmp_path / "data"
    env["DRAGNET_COUCHDB_HOME"] = home
    runner = CliRunner()
    result = runner.invoke(main, ["couch", "up", "--backend", "local", "--port", str(TEST_PORT),
                                  "--data-dir", str(data), "--timeout", "90", "--json"], env=env)
    inst = ctl.load_state(TEST_PORT, env)
    try:
        assert result.exit_code == 0, result.output
        assert SECRET not in result.output
        report = json.loads(result.stdout)
        assert report["url"] == f"http://admin:***@127.0.0.1:{TEST_PORT}"
        assert report["version"].startswith("3.") and report["storage"] == "disk"
        assert inst is not None and local.is_alive(inst.pid, inst.pid_start)

        # the secret is in no command line, environment or state file, and CouchDB hashed it in the ini
        assert SECRET not in _cmdline(inst.pid)
        assert SECRET.encode() not in Path(f"/proc/{inst.pid}/environ").read_bytes()
        assert SECRET not in ctl.state_path(TEST_PORT, env).read_text()
        ini = Path(inst.run_dir) / "local.ini"
        assert stat.S_IMODE(ini.stat().st_mode) == 0o600
        assert re.search(r"^admin = -pbkdf2[:-]", ini.read_text(), re.M) and SECRET not in ini.read_text()

        couch = connect(inst.url, user="admin", password=SECRET, env={})
        assert couch.request("GET", "/_users").ok and couch.request("GET", "/_replicator").ok
        assert couch.get("/_node/_local/_config/native_query_servers/enable_erlang_query_server") == "true"
        assert couch.get("/_node/_local/_config/couchdb/database_dir") == str(data)
        assert any(p.name.endswith(".couch") for p in data.rglob("*")), "databases are not in --data-dir"

        # a JavaScript view spawns couchjs under beam: down must leave none behind
        couch.put("/t")
        couch.put("/t/d1", {"v": 1})
        couch.put("/t/_design/x", {"views": {"v": {"map": "function(doc){ emit(doc.v, null); }"}}})
        assert couch.get("/t/_design/x/_view/v")["total_rows"] == 1
        # dragnet's Python server is registered through COUCHDB_QUERY_SERVER_PYTHON3
        couch.put("/t/_design/py", {"language": "python3",
                                    "views": {"v": {"map": "def fun(doc):\n    yield doc['v'] * 2, None\n"}}})
        assert [r["key"] for r in couch.get("/t/_design/py/_view/v")["rows"]] == [2]
        children = local.descendants(inst.pid)
        assert any("couchjs" in _cmdline(c) for c in children), [_cmdline(c) for c in children]
        assert any("dragnet_qs.py" in _cmdline(c) for c in children), [_cmdline(c) for c in children]

        result = runner.invoke(main, ["couch", "status", "--port", str(TEST_PORT), "--json"], env=env)
        assert result.exit_code == 0, result.output
        row = json.loads(result.stdout)["instances"][0]
        assert row["running"] and row["up"] and row["pid"] == inst.pid and row["backend"] == "local"
        assert row["version"] == report["version"] and row["data_dir"] == str(data)

        result = runner.invoke(main, ["couch", "up", "--backend", "local", "--port", str(TEST_PORT)], env=env)
        assert result.exit_code == 1 and "already runs on port" in result.output
    finally:
        result = runner.invoke(main, ["couch", "down", "--port", str(TEST_PORT), "--json"], env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["was_running"] is True
    assert not local.is_alive(inst.pid)
    assert local.group_members(inst.pid) == []
    assert not [c for c in children if local.is_alive(c)]
    assert ctl.load_state(TEST_PORT, env) is None
    assert not ctl.port_in_use(TEST_PORT)


@pytest.mark.slow
def test_local_tmpfs_storage_on_a_real_release(env):
    home = _release_home()
    if ctl.port_in_use(TEST_PORT):
        pytest.skip(f"port {TEST_PORT} is busy")
    from dragnet.couchdb import storage as storage

    if storage.find_tmpfs() is None:
        pytest.skip("no tmpfs at /dev/shm")
    inst = local.up(port=TEST_PORT, storage_kind="tmpfs", home=home, data_size=1024**2, timeout=90, env=env)
    try:
        assert inst.storage == "tmpfs" and inst.data_dir == f"/dev/shm/dragnet/couch-{TEST_PORT}"
        couch = connect(inst.url, user="admin", password=SECRET, env={})
        assert couch.get("/_node/_local/_config/couchdb/view_index_dir") == inst.data_dir
        assert local.status(inst)["up"]
    finally:
        assert local.stop(inst, env=env, purge=True)
    assert not local.is_alive(inst.pid) and not ctl.port_in_use(TEST_PORT)
    assert not Path(inst.data_dir).exists()


@pytest.mark.slow
def test_local_up_timeout_reports_the_log_and_cleans_up(tmp_path, env):
    home = _release_home()
    if ctl.port_in_use(TEST_PORT):
        pytest.skip(f"port {TEST_PORT} is busy")
    before = set(local.group_members(os.getpgid(0)))
    with pytest.raises(DragnetError) as err:
        local.up(port=TEST_PORT, home=home, data_dir=str(tmp_path / "data"), timeout=0.2, env=env)
    msg = str(err.value)
    log = ctl.state_dir(env) / f"local-{TEST_PORT}" / "couchdb.log"
    assert f"did not answer http://127.0.0.1:{TEST_PORT}/_up within 0.2 s" in msg and str(log) in msg
    assert "--- last lines of the log ---\n=== dragnet couch up" in msg
    assert ctl.load_state(TEST_PORT, env) is None
    time.sleep(0.5)
    assert not ctl.port_in_use(TEST_PORT)
    assert not any(f"dragnet{TEST_PORT}@" in _cmdline(p) for p in os.listdir("/proc") if p.isdigit()
                   for p in [int(p)])
    assert set(local.group_members(os.getpgid(0))) <= before | {os.getpid()}


def test_system_db_created_by_couchdb_meanwhile_is_not_an_error():
    """CouchDB's replicator creates _replicator itself at start: our PUT racing it gets 500 conflict."""
    import http.server
    import threading

    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self, status, body=b""):
            seen.append((self.command, self.path, status))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_PUT(self):
            if self.path == "/_replicator":
                self._answer(500, b'{"error":"conflict","reason":"conflict"}')
            else:
                self._answer(201, b'{"ok":true}')

        def do_HEAD(self):
            self._answer(200 if self.path in ("/_replicator", "/_users") else 404)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        created = ctl.ensure_system_dbs(f"http://127.0.0.1:{srv.server_port}", "admin", "pw")
    finally:
        srv.shutdown()
    assert created == ["_users"]
    assert ("HEAD", "/_replicator", 200) in seen


def test_no_preexec_fn_anywhere():
    # preexec_fn runs Python between fork and exec: unsafe while the poller/importer threads run
    import pathlib
    root = pathlib.Path(ctl.__file__).parent
    users = [str(p.relative_to(root)) for p in root.rglob("*.py") if "preexec_fn=" in p.read_text()]
    assert users == []


def test_cores_come_from_a_cpuset_group_or_an_affinity_mask(tmp_path):
    from dragnet.couchdb import limits

    v1 = limits.CgroupLayout(1, cpuset=tmp_path / "cpuset")
    p = limits.cpuset_plan(v1, "dragnet-couch-5999", [1, 0], mems="0")
    grp = tmp_path / "cpuset" / "dragnet-couch-5999"
    assert p.groups == [grp]
    # v1: mems before cpus, or no process may join
    assert p.writes == [(grp / "cpuset.mems", "0"), (grp / "cpuset.cpus", "0,1")]
    v2 = limits.CgroupLayout(2, cpuset=tmp_path)
    p2 = limits.cpuset_plan(v2, "g", [0])
    assert p2.writes == [(tmp_path / "cgroup.subtree_control", "+cpuset"), (tmp_path / "g" / "cpuset.cpus", "0")]
    with pytest.raises(DragnetError, match="no writable cgroup cpuset"):
        limits.cpuset_plan(limits.CgroupLayout(1), "g", [0])
    # the start script joins the group itself, then execs CouchDB: beam and its children are in it from the start
    argv = local.pinned_argv(grp, {0, 1})
    assert argv[:2] == ["sh", "-c"] and str(grp / "cgroup.procs") in argv[2] and 'exec "$@"' in argv[2]
    assert local.pinned_argv(None, {1, 0}) == ["taskset", "-c", "0,1"] and local.pinned_argv(None, None) == []
    # a detected v1 layout names the cpuset mount
    (tmp_path / "root" / "cpuset").mkdir(parents=True)
    (tmp_path / "root" / "cpuset" / "cpuset.cpus").write_text("0-1\n")
    assert limits.detect(tmp_path / "root").cpuset == tmp_path / "root" / "cpuset"


def test_restart_settings_are_appended_to_the_generated_ini():
    ini = local.render_ini(port=5999, data_dir="/d", user="a", password="p",
                           extra={"couchdb/max_dbs_open": "700", "native_query_servers/enable_erlang_query_server": "true"})
    tail = ini.split("; set by dragnet bench --config-restart", 1)[1]
    # after every generated section, so CouchDB's ini reader lets these win
    assert tail.strip().splitlines() == ["[couchdb]", "max_dbs_open = 700",
                                         "[native_query_servers]", "enable_erlang_query_server = true"]
    assert "--config-restart" not in local.render_ini(port=5999, data_dir="/d", user="a", password="p")



def test_vm_args_turn_on_the_jits_perf_map_only_for_a_beam_that_has_it(tmp_path):
    out = local.render_vm_args("+K true\n", 15984, jit_perf="map")
    assert out.splitlines()[-1] == "+JPperf map"
    assert "+JPperf" not in local.render_vm_args("+K true\n", 15984)
    home = _fake_release_layout(tmp_path / "couchdb")
    rel = local.find_release(home)
    assert rel.jit_perf() is None      # a beam without the JIT would refuse the flag at start
    erts = home / "erts-13.1.5" / "bin"
    erts.mkdir(parents=True)
    # OTP 24: the map is all `true` writes
    (erts / "beam.smp").write_bytes(b"\x7fELF...bad +JPperf support flag %s.../tmp/perf-%i.map\x00")
    assert rel.jit_perf() == "true"
    # OTP 25 and later: `true` adds a ~20 MB jitdump in /tmp, so the map alone
    (erts / "beam.smp").write_bytes(b"\x7fELF.../tmp/perf-%i.map\x00_ZN11JitPerfDump4initEv\x00")
    assert rel.jit_perf() == "map"


def test_stop_removes_the_jits_perf_maps_of_its_processes(tmp_path):
    (tmp_path / "perf-101.map").write_text("x")
    (tmp_path / "perf-999.map").write_text("y")
    (tmp_path / "jit-102.dump").write_text("z")
    local.remove_perf_maps([101, 102], tmp=str(tmp_path))
    assert not (tmp_path / "perf-101.map").exists() and (tmp_path / "perf-999.map").exists()
    assert not (tmp_path / "jit-102.dump").exists()


def test_epmd_names_reads_the_registered_nodes():
    up = "epmd: up and running on port 4369 with data:\nname dragnet5984 at port 41235\nname x at port 7\n"
    assert local.epmd_names(up) == ["dragnet5984", "x"]
    assert local.epmd_names("epmd: up and running on port 4369 with data:\n") == []


def _epmd_up(env) -> str | None:
    import subprocess
    out = subprocess.run(["epmd", "-names"], capture_output=True, text=True, env=env, timeout=5)
    return out.stdout if out.returncode == 0 else None


@pytest.mark.skipif(not (shutil.which("epmd") and shutil.which("erl")), reason="no Erlang (epmd, erl) on PATH")
def test_stop_leaves_no_idle_epmd_but_keeps_one_another_node_uses(tmp_path):
    import subprocess
    home = tmp_path / "couchdb"
    (home / "erts-1" / "bin").mkdir(parents=True)
    (home / "erts-1" / "bin" / "epmd").symlink_to(shutil.which("epmd"))
    # an epmd of its own on a free port, so the host's (another CouchDB's) is never touched
    env = {**os.environ, "ERL_EPMD_PORT": str(free_port()), "ERL_EPMD_ADDRESS": "127.0.0.1"}
    node = subprocess.Popen(["erl", "-name", "dragnettest@127.0.0.1", "-noshell", "-setcookie", "x"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while "dragnettest" not in (_epmd_up(env) or "") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "dragnettest" in (_epmd_up(env) or "")
        # a node still registered: it stays
        assert local.stop_idle_epmd(str(home), env) is False and _epmd_up(env) is not None
    finally:
        node.kill()
        node.wait(timeout=10)
    deadline = time.monotonic() + 10
    while "dragnettest" in (_epmd_up(env) or "") and time.monotonic() < deadline:
        time.sleep(0.2)
    # none left: stopped
    assert local.stop_idle_epmd(str(home), env) is True
    deadline = time.monotonic() + 5
    while _epmd_up(env) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _epmd_up(env) is None
    # nothing running, or no release: nothing to do
    assert local.stop_idle_epmd(str(home), env) is False
    assert local.stop_idle_epmd(None, env) is False


def test_a_server_that_ended_elsewhere_is_reaped_not_left_a_zombie():
    import subprocess

    proc = subprocess.Popen(["true"])
    local._CHILDREN[proc.pid] = proc
    deadline = time.time() + 10
    while Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z" and time.time() < deadline:
        time.sleep(0.01)     # ended, not yet collected: a zombie of this process
    local.reap_finished()
    assert proc.pid not in local._CHILDREN and not Path(f"/proc/{proc.pid}").exists()
