"""The query-server registry (dragnet.servers.discovery.discover) and the generated CouchDB registration
(dragnet.servers.registration): environment variables, ini fragment, Docker paths, `dragnet servers`."""

from __future__ import annotations

import configparser
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dragnet.servers import registration as reg
from dragnet.cli import main as cli
from dragnet.errors import DragnetError
from dragnet.servers.available import discover
from dragnet.servers.discovery import DIALECT_FILES, PYTHON_QS, REPO, ServerSpec, from_environment, load_config


def _env(**extra):
    # the real environment minus inherited COUCHDB_QUERY_SERVER_* and with no CouchDB home unless given
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUCHDB_QUERY_SERVER_")}
    env["DRAGNET_COUCHDB_HOME"] = "/nonexistent/couchdb"
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def found():
    return discover(env=_env())


# -- discovery -----------------------------------------------------------------------------------

def test_discover_offers_python_servers_and_explains_the_rest(found):
    specs, skipped = found
    names = [s.name for s in specs] + [s.name for s in skipped]
    assert len(names) == len(set(names)), names
    for expected in ("chakra", "node", "bun", "python3", "pypy3", "couchpy", "couchpy-pypy", "couchjs", "quickjs"):
        assert expected in names
    by_name = {s.name: s for s in specs}
    py = by_name["python3"]
    assert py.argv == (sys.executable, str(PYTHON_QS)) and py.dialect == "python" and py.language == "python3"
    for spec in specs:
        assert spec.dialect in DIALECT_FILES
    skipped_by_name = {s.name: s.reason for s in skipped}
    assert "/nonexistent/couchdb" in skipped_by_name["couchjs"]
    assert all(reason for reason in skipped_by_name.values())


def test_every_discovered_server_answers_reset(found):
    specs, _ = found
    for spec in specs:
        out = subprocess.run(list(spec.argv), input=b'["reset"]\n', capture_output=True, timeout=60,
                             env=dict(os.environ, **dict(spec.env)))
        assert out.stdout.strip() == b"true", (spec.name, out.stdout, out.stderr[-500:])


def test_pypy_is_skipped_with_a_reason_when_absent():
    specs, skipped = discover(env=_env(PATH="/nonexistent"))
    reasons = {s.name: s.reason for s in skipped}
    assert "pypy3" in reasons and "PATH" in reasons["pypy3"]
    assert "couchpy-pypy" in reasons
    assert "python3" in [s.name for s in specs]  # sys.executable needs no PATH


def _fake_couchdb(tmp_path: Path) -> Path:
    """A directory laid out like a CouchDB 3.5 release (only the files discovery looks at)."""
    home = tmp_path / "couchdb"
    (home / "bin").mkdir(parents=True)
    (home / "share" / "server").mkdir(parents=True)
    (home / "share" / "server" / "main.js").write_text("// main.js\n")
    priv = home / "lib" / "couch_quickjs-3.5.0" / "priv"
    priv.mkdir(parents=True)
    for exe in (home / "bin" / "couchjs", priv / "couchjs_mainjs"):
        exe.write_text("#!/bin/sh\nexit 0\n")
        exe.chmod(0o755)
    return home


def test_couchdb_home_gives_couchjs_and_quickjs(tmp_path):
    home = _fake_couchdb(tmp_path)
    specs, skipped = discover(env=_env(DRAGNET_COUCHDB_HOME=str(home)))
    by_name = {s.name: s for s in specs}
    assert by_name["couchjs"].argv == (str(home / "bin/couchjs"), str(home / "share/server/main.js"))
    assert (by_name["couchjs"].language, by_name["couchjs"].dialect) == ("javascript", "es5")
    quickjs = str(home / "lib/couch_quickjs-3.5.0/priv/couchjs_mainjs")
    assert by_name["quickjs"].argv == (quickjs,) and by_name["quickjs"].language == "javascript_quickjs"
    assert by_name["quickjs-es2015"].dialect == "es2015"
    assert not {"couchjs", "quickjs"} & {s.name for s in skipped}


def test_environment_servers(tmp_path):
    env = _env(COUCHDB_QUERY_SERVER_RUBY="/nonexistent/bin/couch_ruby --fast",
               COUCHDB_QUERY_SERVER_MYPY=f"{sys.executable} {PYTHON_QS}",
               COUCHDB_QUERY_SERVER_PYTHON3=f"{sys.executable} {PYTHON_QS}")
    assert {s.name: s.dialect for s in from_environment(env)} == {"mypy": "python", "python3": "python", "ruby": "es5"}
    specs, skipped = discover(env=env)
    reasons = {s.name: s.reason for s in skipped}
    assert "not an executable" in reasons["ruby"] and "COUCHDB_QUERY_SERVER_RUBY" in reasons["ruby"]
    # the same command as the built-in python3 under another name is a duplicate...
    assert reasons["mypy"].endswith("same command as python3")
    # ...but explicitly naming a built-in replaces it
    python3 = [s for s in specs if s.name == "python3"]
    assert len(python3) == 1 and python3[0].source == "env:COUCHDB_QUERY_SERVER_PYTHON3"


def test_config_files(tmp_path):
    home = _fake_couchdb(tmp_path)
    ini = tmp_path / "servers.ini"
    ini.write_text(f"[py-opt]\ncommand = {sys.executable} -O {PYTHON_QS}\nlanguage = python_opt\n"
                   f"env.PYTHONHASHSEED = 0\n\n[couchjs]\ncommand = {sys.executable} {PYTHON_QS}\ndialect = python\n")
    js = tmp_path / "servers.json"
    js.write_text(json.dumps({"servers": [{"name": "py-list", "command": [sys.executable, "-X", "utf8", str(PYTHON_QS)],
                                           "language": "py_list", "dialect": "python"}]}))
    env = _env(DRAGNET_COUCHDB_HOME=str(home))
    specs, _ = discover(env=env, config=ini)
    by_name = {s.name: s for s in specs}
    opt = by_name["py-opt"]
    assert opt.argv == (sys.executable, "-O", str(PYTHON_QS)) and opt.language == "python_opt"
    assert opt.dialect == "python" and opt.env == (("PYTHONHASHSEED", "0"),) and opt.source == f"config:{ini}"
    assert by_name["couchjs"].source == f"config:{ini}"  # replaced by name
    specs, _ = discover(env=env, config=str(js))
    assert {s.name: s.argv[1] for s in specs if s.source.startswith("config")} == {"py-list": "-X"}


@pytest.mark.parametrize("text, message", [
    ("[a]\nlanguage = x\n", "'command' must be"),
    ("[a]\ncommand = x\ndialect = C++\n", "bad dialect 'C++'"),
    ("[a]\ncommand = 'unclosed\n", "cannot parse command"),
    ("[a]\ncommand = x\ncolour = red\n", "unknown keys colour"),
    ("[a b]\ncommand = x\n", "bad server name"),
    ('[{"command": "x"}]', "server #1"),
    ('[{"name": "a", "command": "x"}, {"name": "a", "command": "y"}]', "defined twice: a"),
    ('{"servers": 3}', "expected a list"),
    ('[{"name": "a", "command": "x",', "not valid JSON"),
    ("no sections here\n", "not a valid ini file"),
])
def test_bad_config_names_file_and_entry(tmp_path, text, message):
    path = tmp_path / ("qs.json" if text.startswith(("[{", "{")) else "qs.conf")
    path.write_text(text)
    with pytest.raises(DragnetError) as err:
        load_config(path)
    assert message in str(err.value) and str(path) in str(err.value)


def test_missing_config_file(tmp_path):
    with pytest.raises(DragnetError, match="cannot read query-server config"):
        discover(env=_env(), config=tmp_path / "absent.ini")


# -- registration --------------------------------------------------------------------------------

def test_command_line_is_shell_quoted_and_carries_env():
    spec = ServerSpec("x", "x_lang", ("/opt/my servers/qs", "--name", "it's"), "python",
                      env=(("PYTHONPATH", "/a b"),))
    line = reg.command_line(spec)
    assert shlex.split(line) == ["env", "PYTHONPATH=/a b", "/opt/my servers/qs", "--name", "it's"]
    assert reg.command_line(ServerSpec("y", "y", ("/bin/qs",), "es5")) == "/bin/qs"


def test_prefix_paths_relocate_only_at_path_boundaries():
    spec = ServerSpec("p", "p", ("/usr/bin/python3", "/repo/query_servers/python/dragnet_qs.py", "/repo2/x"), "python")
    line = reg.command_line(spec, {"/repo": "/opt/dragnet", "/repo/query_servers": "/srv/qs"})
    assert shlex.split(line) == ["/usr/bin/python3", "/srv/qs/python/dragnet_qs.py", "/repo2/x"]


def test_plan_and_environment_for():
    specs = [
        ServerSpec("couchpy", "python", ("/v/bin/couchpy",), "python"),
        ServerSpec("couchpy-pypy", "python", ("/usr/bin/pypy3", "-m", "couchdb.view"), "python"),
        ServerSpec("couchjs", "javascript", ("/opt/couchdb/bin/couchjs", "main.js"), "es5"),
        ServerSpec("quickjs", "javascript_quickjs", ("/q",), "es5"),
        ServerSpec("odd", "my-lang", ("/odd",), "es5"),
        ServerSpec("pypy3", "pypy3", ("/usr/bin/pypy3", "/r/dragnet_qs.py"), "python"),
    ]
    chosen, skipped = reg.plan(specs)
    assert [s.name for s in chosen] == ["couchpy", "pypy3"]
    reasons = {s.name: s.reason for s in skipped}
    assert set(reasons) == {"couchpy-pypy", "couchjs", "quickjs", "odd"}
    assert "already served by couchpy" in reasons["couchpy-pypy"]
    assert "start script" in reasons["couchjs"] and "javascript_quickjs" in reasons["quickjs"]
    assert reg.environment_for(specs) == {"COUCHDB_QUERY_SERVER_PYTHON": "/v/bin/couchpy",
                                          "COUCHDB_QUERY_SERVER_PYPY3": "/usr/bin/pypy3 /r/dragnet_qs.py"}


def test_shell_exports_round_trip_through_sh():
    environment = {"COUCHDB_QUERY_SERVER_A": "/x y/qs --it's", "COUCHDB_QUERY_SERVER_B": "/b $HOME `x`"}
    script = reg.shell_exports(environment) + 'printf "%s\\n%s\\n" "$COUCHDB_QUERY_SERVER_A" "$COUCHDB_QUERY_SERVER_B"'
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [environment["COUCHDB_QUERY_SERVER_A"], environment["COUCHDB_QUERY_SERVER_B"]]


def test_registered_commands_start_through_sh_as_couchdb_spawns_them(found):
    # CouchDB starts the command with open_port({spawn, Cmd}), i.e. /bin/sh -c Cmd
    specs, _ = found
    environment = reg.environment_for(specs)
    assert "COUCHDB_QUERY_SERVER_PYTHON3" in environment
    for var, command in environment.items():
        out = subprocess.run(["/bin/sh", "-c", command], input=b'["reset"]\n', capture_output=True, timeout=60)
        assert out.stdout.strip() == b"true", (var, command, out.stderr[-500:])


def test_couchpy_pypy_registers_through_env():
    spec = ServerSpec("couchpy-pypy", "python_pypy", ("/usr/bin/pypy3", "-m", "couchdb.view"), "python",
                      env=(("PYTHONPATH", "/r/build/couchpy-pypy"),))
    assert reg.environment_for([spec]) == {
        "COUCHDB_QUERY_SERVER_PYTHON_PYPY": "env PYTHONPATH=/r/build/couchpy-pypy /usr/bin/pypy3 -m couchdb.view"}


def test_ini_fragment():
    parser = configparser.ConfigParser()
    parser.read_string(reg.ini_for(os_process_timeout_ms=120000, os_process_limit=50))
    assert parser.getboolean("native_query_servers", "enable_erlang_query_server") is True
    assert parser.getint("couchdb", "os_process_timeout") == 120000
    assert parser.getint("query_server_config", "os_process_limit") == 50
    assert not parser.has_option("couchdb", "js_engine")
    bare = configparser.ConfigParser()
    bare.read_string(reg.ini_for(erlang=False, os_process_timeout_ms=None))
    assert bare.sections() == []
    engine = configparser.ConfigParser()
    engine.read_string(reg.ini_for(js_engine="quickjs"))
    assert engine.get("couchdb", "js_engine") == "quickjs"
    for bad in ({"os_process_timeout_ms": 0}, {"os_process_limit": -1}, {"js_engine": "v8"}):
        with pytest.raises(ValueError):
            reg.ini_for(**bad)


def test_docker_environment_matches_the_dockerfile():
    env = reg.docker_environment()
    assert env == {
        "COUCHDB_QUERY_SERVER_CHAKRA": "/opt/dragnet/query_servers/chakra/dragnet-chakra",
        "COUCHDB_QUERY_SERVER_NODE": "/usr/bin/nodejs /opt/dragnet/query_servers/node/dragnet-node.js",
        "COUCHDB_QUERY_SERVER_BUN": "/opt/dragnet/query_servers/bun/bun /opt/dragnet/query_servers/node/dragnet-node.js",
        "COUCHDB_QUERY_SERVER_PYTHON3": "/usr/bin/python3 /opt/dragnet/query_servers/python/dragnet_qs.py",
        "COUCHDB_QUERY_SERVER_PYPY3": "/usr/bin/pypy3 /opt/dragnet/query_servers/python/dragnet_qs.py",
        "COUCHDB_QUERY_SERVER_PYTHON": "/opt/dragnet/venv/bin/couchpy",
        "COUCHDB_QUERY_SERVER_CEILING": "/opt/dragnet/query_servers/ceiling/dragnet-ceiling",
    }
    dockerfile = REPO / "docker" / "Dockerfile"
    if not dockerfile.exists():
        pytest.skip("docker/Dockerfile not present")
    declared = dict(re.findall(r'(COUCHDB_QUERY_SERVER_[A-Z0-9_]+)="([^"]*)"', dockerfile.read_text()))
    assert declared == env


# -- the CLI ------------------------------------------------------------------------------------

def test_cli_servers_json_and_env(found):
    runner = CliRunner()
    result = runner.invoke(cli, ["servers", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert "python3" in [s["name"] for s in data["servers"]]
    assert all(s["reason"] for s in data["skipped"])
    assert data["environment"]["COUCHDB_QUERY_SERVER_PYTHON3"].endswith("dragnet_qs.py")
    assert "enable_erlang_query_server = true" in data["ini"]

    result = runner.invoke(cli, ["servers", "--docker", "--env"])
    assert result.exit_code == 0
    assert result.output.splitlines() == [f"export {k}={shlex.quote(v)}" for k, v in sorted(reg.docker_environment().items())]

    result = runner.invoke(cli, ["servers"])
    assert result.exit_code == 0 and "available:" in result.output and "export COUCHDB_QUERY_SERVER_PYTHON3=" in result.output

    result = runner.invoke(cli, ["servers", "--ini", "--timeout-ms", "9000"])
    assert "os_process_timeout = 9000" in result.output


def test_cli_servers_bad_config(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[1]")
    result = CliRunner().invoke(cli, ["servers", "--config", str(bad)])
    assert result.exit_code != 0
    assert f"dragnet: error: {bad}: server #1" in result.output
