"""Bring your own query server: dialects, --server/--config, `servers --check` (conformance), and a query server
written in Go (tests/goqs) in qsbench and in a live CouchDB 3.5 build.

The Go server is built here with the Go toolchain (Debian golang-go; stdlib only, no network); without `go`
its tests skip. Its functions are precompiled: a map function's source is the name of a Go function in it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from dragnet.cli import main
from dragnet.errors import DragnetError, UsageError
from dragnet.servers import conformance, dialects, user
from dragnet.servers import available
from dragnet.servers.available import discover
from dragnet.servers.discovery import PYTHON_QS, REPO, ServerSpec

GOQS_SRC = REPO / "tests" / "goqs"
TESTSERVER = str(REPO / "tests" / "qs_testserver.py")


@pytest.fixture(autouse=True)
def no_user_servers():
    user.use([])
    yield
    user.use([])


@pytest.fixture(scope="session")
def goqs(tmp_path_factory) -> str:
    go = shutil.which("go") or next((p for p in ("/usr/lib/go/bin/go", "/usr/local/go/bin/go") if os.access(p, os.X_OK)),
                                    None)
    if go is None:
        pytest.skip("no Go toolchain (Debian: apt-get install golang-go)")
    out = tmp_path_factory.mktemp("goqs") / "goqs"
    env = dict(os.environ, GOPROXY="off", GOTOOLCHAIN="local", GOFLAGS="-mod=mod",
               GOCACHE=str(tmp_path_factory.mktemp("gocache")))
    subprocess.run([go, "build", "-o", str(out), "."], cwd=GOQS_SRC, env=env, check=True, capture_output=True,
                   timeout=600)
    return str(out)


def _view_folder(tmp_path: Path) -> Path:
    """views/income in JavaScript and in goqs's language."""
    folder = tmp_path / "income"
    folder.mkdir()
    shutil.copy(REPO / "views" / "income" / "map.js", folder / "map.js")
    (folder / "map.goqs").write_text("// views/income: the Go function built into goqs\nincome\n")
    return folder


# -- dialects (pure) ------------------------------------------------------------------------------

def test_a_dialect_is_a_record_and_an_unknown_one_is_its_extension():
    assert dialects.get("es2015").view_file == "map.es6.js" and dialects.family("es2015") == "js"
    assert dialects.get("python").noop_map and dialects.get("erlang").noop_map is None
    go = dialects.get("go")
    assert (go.view_file, go.family, go.noop_map) == ("map.go", "go", None)
    with pytest.raises(ValueError, match="bad dialect"):
        dialects.get("C++")
    assert dialects.from_filename("views/x/map.es6.js").name == "es2015"
    assert dialects.from_filename("views/x/map.es2015.js").name == "es2015"
    assert dialects.from_filename("views/x/map.js").name == "es5"
    assert dialects.from_filename("views/x/map.go") is None


def test_a_servers_file_takes_a_new_dialect_process_and_version_command(tmp_path):
    # the report: a CouchGO! entry with "dialect": "go" was refused
    cfg = tmp_path / "servers.json"
    cfg.write_text(json.dumps({"servers": [{"name": "couchgo", "command": "/usr/local/bin/couchgo", "language": "go",
                                            "dialect": "go", "process": "couchgo",
                                            "version_command": "/usr/local/bin/couchgo --version"}]}))
    (spec,) = available.collect((), cfg)
    assert (spec.name, spec.language, spec.dialect, spec.process) == ("couchgo", "go", "go", "couchgo")
    assert spec.version_command == ("/usr/local/bin/couchgo", "--version")


@pytest.mark.parametrize("options, message", [
    (["javascript=/bin/cat"], "language 'javascript' is a built-in language"),
    (["erlang=/bin/cat"], "language 'erlang' is a built-in language"),
    (["couchpy=/bin/cat"], "'couchpy' is a built-in server's name"),
    (["chakra=/bin/cat"], "'chakra' is a built-in server's name"),
    (["mine=/bin/cat", "mine=/bin/true"], "server name given twice"),
    (["Mine=/bin/cat"], "cannot be a CouchDB language name"),
    (["mine"], "cannot read query-server config mine"),   # without "=", a servers file: this one does not exist
    (["mine="], "expected NAME=COMMAND"),
    (["mine=/bin/'cat"], "cannot parse the command"),
])
def test_colliding_or_malformed_servers_are_refused_before_anything_runs(options, message):
    with pytest.raises(DragnetError, match=message.replace("(", r"\(")):
        available.collect(options)


def test_a_language_collision_in_a_file_is_refused(tmp_path):
    cfg = tmp_path / "servers.ini"
    cfg.write_text("[mine]\ncommand = /bin/cat\nlanguage = python\n")
    with pytest.raises(UsageError, match="language 'python' is a built-in language"):
        available.collect((), cfg)
    cfg.write_text("[other]\ncommand = /bin/cat\nlanguage = mine\n")
    with pytest.raises(UsageError, match="language 'mine' is also other's"):
        available.collect(["mine=/bin/true"], cfg)


def test_cli_refuses_a_collision_with_one_line_and_runs_nothing(tmp_path):
    r = CliRunner().invoke(main, ["qsbench", "--server", "javascript=/bin/cat", "--count", "5",
                                  "--results", str(tmp_path / "res")])
    assert r.exit_code != 0 and "built-in language" in r.output
    assert not (tmp_path / "res").exists()


def test_user_servers_are_discovered_watched_and_their_view_files_known(tmp_path):
    available.install(["goqs=/bin/cat"])
    specs, _ = discover()
    (spec,) = [s for s in specs if s.name == "goqs"]
    assert (spec.language, spec.dialect, spec.source) == ("goqs", "goqs", "option:--server")
    from dragnet.index import views
    from dragnet.measure import pidstat

    assert pidstat.family("/bin/cat --x") == "goqs" and "cat" in pidstat.PidstatRunner().pattern.split("|")
    f = tmp_path / "map.goqs"
    f.write_text("income\n")
    v = views.load(f)
    assert (v.language, v.dialect, v.known) == ("goqs", "goqs", False)
    from dragnet.servers.registration import environment_for

    assert environment_for([spec]) == {"COUCHDB_QUERY_SERVER_GOQS": "/bin/cat"}
    from dragnet.couchdb.docker import user_server_settings

    env, volumes = user_server_settings([spec])
    assert env == {"COUCHDB_QUERY_SERVER_GOQS": "/opt/dragnet-user/goqs/cat"}
    assert volumes == {str(Path("/bin/cat").resolve()): {"bind": "/opt/dragnet-user/goqs/cat", "mode": "ro"}}
    available.install([])
    assert pidstat.family("/bin/cat --x") == "cat"


def test_bench_takes_a_user_language_on_its_dialect_file_and_skips_it_without_one(tmp_path):
    from dragnet.bench import run as b

    folder = _view_folder(tmp_path)
    available.install(["goqs=/bin/cat", "rubyqs=/bin/true"])
    (spec,) = b.resolve_languages(["goqs"], folder)
    assert (spec.language, spec.path(folder).name) == ("goqs", "map.goqs")
    kept, skipped = b.user_languages(["javascript", "goqs", "rubyqs"], folder)
    assert kept == ["javascript", "goqs"] and skipped == [f"rubyqs: {folder} has no map.rubyqs"]


# -- conformance: the cases (pure) and the checker failing where it must -------------------------

def test_numbers_compare_as_doubles():
    assert conformance.json_equal([12345678901234567890], [1.2345678901234567e19])
    assert conformance.json_equal({"a": 2 ** 53}, {"a": 9007199254740992.0})
    assert not conformance.json_equal([2 ** 53 + 2], [2 ** 53])
    assert not conformance.json_equal([True], [1]) and not conformance.json_equal({"a": 1}, {"a": 1, "b": 2})


def test_every_case_has_its_functions_in_javascript_and_python():
    for case in conformance.CASES:
        for fam, functions in conformance.BUILTIN_FUNCTIONS.items():
            assert set(case.roles) <= set(functions), (case.name, fam)
            case.steps(functions)   # builds without a server


def _python3() -> ServerSpec:
    return ServerSpec("python3", "python3", (sys.executable, str(PYTHON_QS)), "python")


def test_the_checker_fails_a_server_that_answers_wrongly_with_expected_and_got():
    echo = ServerSpec("echo", "echo", (sys.executable, TESTSERVER, "echo"), "python")
    report = conformance.check_server(echo, cases=["map_one_emit", "bad_function", "list_too_many_rows"])
    by = {o.case: o for o in report.outcomes}
    assert by["map_one_emit"].status == "fail" and by["map_one_emit"].step == 3   # reset, add_fun, map_doc
    assert by["map_one_emit"].expected == '[[["a", 5]]]' and by["map_one_emit"].got == '[[["a", 1]]]'
    assert by["bad_function"].status == "fail" and "compilation_error" in by["bad_function"].expected
    assert by["list_too_many_rows"].status == "fail"


@pytest.mark.parametrize("mode, why", [("garbage", "not JSON"), ("deaf", "no answer within 2 s"),
                                       ("selfkill", "exited")])
def test_a_server_that_does_not_speak_fails_in_one_line_and_leaves_nothing(tmp_path, mode, why):
    if mode in ("garbage", "selfkill"):   # these misbehave on map_doc: make them misbehave on reset
        script = tmp_path / f"{mode}.sh"
        script.write_text("#!/bin/sh\nwhile read l; do echo hello; done\n" if mode == "garbage" else
                          "#!/bin/sh\nread l; exit 3\n")
        script.chmod(0o755)
        argv = (str(script),)
    else:
        argv = (sys.executable, TESTSERVER, mode)
    spec = ServerSpec(mode, mode, argv, "python")
    t0 = time.monotonic()
    with pytest.raises(DragnetError) as err:
        conformance.check_server(spec, timeout=2.0)
    assert time.monotonic() - t0 < 10
    text = str(err.value)
    assert "\n" not in text and mode in text and why in text
    assert subprocess.run(["pgrep", "-f", TESTSERVER + " " + mode], capture_output=True).stdout == b""


def test_dragnet_python_server_passes_every_case():
    report = conformance.check_server(_python3(), timeout=30.0)
    assert [o.case for o in report.outcomes if o.status != "pass"] == []
    assert len(report.outcomes) == len(conformance.CASES)


@pytest.mark.parametrize("name", ["chakra", "node", "bun", "pypy3", "couchjs", "quickjs"])
def test_dragnet_and_couchdb_servers_pass_every_case(name):
    specs, skipped = discover()
    spec = next((s for s in specs if s.name == name), None)
    if spec is None:
        pytest.skip(f"{name}: {next((s.reason for s in skipped if s.name == name), 'not found')}")
    # a 16 MB document on a loaded 2-core machine can take node longer than CouchDB's default 5 s
    report = conformance.check_server(spec, timeout=30.0)
    assert [(o.case, o.expected, o.got) for o in report.outcomes if o.status != "pass"] == []


def test_couchpy_claims_no_ddoc_and_its_deviations_are_named():
    specs, _ = discover()
    spec = next((s for s in specs if s.name == "couchpy"), None)
    if spec is None:
        pytest.skip("couchpy not installed")
    report = conformance.check_available("couchpy")
    status = {o.case: o.status for o in report.outcomes}
    assert {c for c, s in status.items() if s == "skip"} == {c.name for c in conformance.CASES if c.ddoc}
    # couchpy 1.2 answers map_compilation_error and reduces with the first function only
    assert {c for c, s in status.items() if s == "fail"} == {"bad_function", "reduce", "rereduce",
                                                             "reduce_error_thrown"}


def test_servers_check_cli_prints_pass_per_case_and_json():
    r = CliRunner().invoke(main, ["servers", "--check", "python3", "--case", "reset", "--case", "big_numbers"])
    assert r.exit_code == 0, r.output
    assert "pass  reset" in r.output and "pass  big_numbers" in r.output and "2 passed, 0 failed" in r.output
    r = CliRunner().invoke(main, ["servers", "--check", "python3", "--case", "unicode", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["cases"][0]["status"] == "pass"
    r = CliRunner().invoke(main, ["servers", "--check", "nosuch"])
    assert r.exit_code == 1 and "no such server" in r.output
    r = CliRunner().invoke(main, ["servers", "--case", "reset"])
    assert r.exit_code != 0 and "go with --check" in r.output


# -- the Go server ----------------------------------------------------------------------------------

def test_go_server_passes_what_it_claims_and_skips_the_rest(goqs):
    r = CliRunner().invoke(main, ["servers", "--server", f"goqs={goqs}", "--check", "goqs",
                                  "--functions", str(GOQS_SRC / "functions")])
    assert r.exit_code == 0, r.output
    assert "16 passed, 0 failed, 7 skipped" in r.output
    assert "skip  ddoc_list" in r.output and "filter_ok.goqs" in r.output
    # without --functions only the cases that send no function run
    r = CliRunner().invoke(main, ["servers", "--server", f"goqs={goqs}", "--check", "goqs"])
    assert r.exit_code == 0 and "2 passed, 0 failed" in r.output, r.output


def test_go_server_in_qsbench_rows_match_the_javascript_view(goqs, tmp_path, sample):
    folder = _view_folder(tmp_path)
    cfg = tmp_path / "servers.ini"
    cfg.write_text(f"[goqs]\ncommand = {goqs}\nversion_command = {goqs} --version\n")
    out = tmp_path / "res"
    specs, _ = discover()
    js = next((s.name for s in specs if s.name in ("chakra", "node", "couchjs", "quickjs")), None)
    if js is None:
        pytest.skip("no JavaScript query server here")
    shutil.copy(REPO / "views" / "income" / "map.es6.js", folder / "map.es6.js")
    r = CliRunner().invoke(main, ["qsbench", "--docs", str(sample), "--config", str(cfg), "--view", str(folder),
                                  "--servers", f"{js},goqs", "--reference", js, "--repeat", "1", "--warmup", "0",
                                  "--results", str(out), "--json"])
    assert r.exit_code == 0, r.output
    got = {s["name"]: s for s in json.loads(r.stdout)["servers"]}
    assert got["goqs"]["status"] == "ok" and got["goqs"]["version"] == "goqs 0.1 (dragnet's test server)"
    assert got["goqs"]["docs_per_sec"] > 0 and got["goqs"]["mismatch_count"] == 0


def _build_go_and_js(runner, env: dict, url: str, tmp_path: Path, goqs: str) -> None:
    """views/income built by goqs (a "language": "goqs" design doc) and by couchjs: the same rows."""
    from conftest import normalised_declarations
    from dragnet.index.rows import values_equal
    from dragnet.couchdb.client import connect

    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps(d) + "\n" for d in normalised_declarations(300, 7)))
    r = runner.invoke(main, ["import", str(docs), "--url", url, "--db", "goqs", "--q", "2"], env=env)
    assert r.exit_code == 0, r.output
    folder = _view_folder(tmp_path)
    for path, ddoc in ((folder / "map.js", "js"), (folder / "map.goqs", "go")):
        r = runner.invoke(main, ["addview", str(path), "--url", url, "--db", "goqs", "--ddoc", ddoc,
                                 "--view", "income", "--server", f"goqs={goqs}"], env=env)
        assert r.exit_code == 0, r.output
    couch = connect(url)
    assert couch.get("/goqs/_design/go")["language"] == "goqs"
    rows = {d: couch.get(f"/goqs/_design/{d}/_view/income", timeout=120)["rows"] for d in ("js", "go")}
    assert len(rows["js"]) > 200
    assert values_equal(rows["go"], rows["js"])


def _crashed_build(runner, env: dict, url: str, tmp_path: Path, servers: Path) -> dict:
    """addview --benchmark of views/income on "crashy" (servers: goqs crashing after 50 documents): it fails,
    and its results file is written; returns that file's results."""
    out = tmp_path / "res"
    r = runner.invoke(main, ["addview", str(tmp_path / "income" / "map.goqs"), "--language", "crashy",
                             "--url", url, "--db", "goqs", "--benchmark", "--server", str(servers),
                             "--results", str(out)], env=env)
    assert r.exit_code != 0
    (res,) = [json.loads(f.read_text()) for f in out.glob("addview-*.json")] or pytest.fail(f"{r.output} {r.exception!r}")
    return res


@pytest.mark.live
@pytest.mark.slow
def test_go_server_builds_in_a_live_couchdb_through_server(goqs, tmp_path):
    """couch up --backend local --server goqs=...: CouchDB 3.5 runs goqs for "language": "goqs", and the
    rows of views/income built by goqs are those built by couchjs."""
    from conftest import couch_env, free_port
    from dragnet.couchdb import control as ctl

    home = os.environ.get("DRAGNET_COUCHDB_HOME")
    if not home or not Path(home, "bin", "couchdb").exists():
        pytest.skip("DRAGNET_COUCHDB_HOME is not a CouchDB release")
    env = couch_env(tmp_path, "goqs-secret-34")
    env["DRAGNET_COUCHDB_HOME"] = home
    port = free_port()
    runner = CliRunner()
    servers = tmp_path / "servers.json"   # goqs, and goqs behind a wrapper that crashes after 50 documents
    servers.write_text(json.dumps([{"name": "goqs", "command": [goqs]}, {
        "name": "crashy", "command": [sys.executable, TESTSERVER, "crash-after", "50", "--", goqs],
        "dialect": "goqs", "process": "qs_testserver.py"}]))
    r = runner.invoke(main, ["couch", "up", "--backend", "local", "--port", str(port), "--server", str(servers),
                             "--timeout", "120"], env=env)
    try:
        assert r.exit_code == 0, r.output
        inst = ctl.load_state(port, env)
        environ = Path(f"/proc/{inst.pid}/environ").read_bytes().split(b"\0")
        assert f"COUCHDB_QUERY_SERVER_GOQS={goqs}".encode() in environ
        url = f"http://admin:goqs-secret-34@127.0.0.1:{port}"
        _build_go_and_js(runner, env, url, tmp_path, goqs)

        # a server that crashes mid-build: the build fails with its stderr, CouchDB's restarts are counted
        res = _crashed_build(runner, env, url, tmp_path, servers)
        s = res["summary"]
        assert not s["ok"] and "os_process_error" in s["error"] and "boom after 50 docs" in s["error"]
        assert "boom after 50 docs" in s["qs_stderr_tail"] and s["qs_process_errors"] >= 1
        assert s["qs_process_starts"] >= 1
        assert res["query_server"]["name"] == "crashy" and res["query_server"]["command"][-1] == goqs
    finally:
        runner.invoke(main, ["couch", "down", "--port", str(port)], env=env)


@pytest.mark.docker
@pytest.mark.slow
def test_go_server_builds_in_a_container_through_server(engine, goqs, tmp_path):
    """couch up --backend docker --server goqs=...: the binary bound read-only into the container, the
    variable set inside it, and the rows those of couchjs."""
    from conftest import couch_env, free_port
    from dragnet.couchdb import control as ctl

    env = couch_env(tmp_path, "goqs-secret-34d")
    port = free_port()
    runner = CliRunner()
    servers = tmp_path / "servers.json"   # goqs, and goqs told to crash after 50 documents
    servers.write_text(json.dumps([{"name": "goqs", "command": [goqs]}, {
        "name": "crashy", "command": [goqs, "--crash-after", "50"], "dialect": "goqs", "process": "goqs"}]))
    r = runner.invoke(main, ["couch", "up", "--backend", "docker", "--image", os.environ["DRAGNET_TEST_DOCKER_IMAGE"],
                             "--port", str(port), "--server", str(servers), "--timeout", "180"], env=env)
    try:
        assert r.exit_code == 0, r.output
        container = engine.containers.get(ctl.load_state(port, env).container)
        assert "COUCHDB_QUERY_SERVER_GOQS=/opt/dragnet-user/goqs/goqs" in container.attrs["Config"]["Env"]
        mount = next(m for m in container.attrs["Mounts"] if m["Destination"] == "/opt/dragnet-user/goqs/goqs")
        assert mount["Source"] == str(Path(goqs).resolve()) and mount["RW"] is False
        url = f"http://admin:goqs-secret-34d@127.0.0.1:{port}"
        _build_go_and_js(runner, env, url, tmp_path, goqs)

        # a server that crashes mid-build in the container: its stderr, from the container's output, names why
        s = _crashed_build(runner, env, url, tmp_path, servers)["summary"]
        assert not s["ok"] and "boom after 50 docs" in s["error"], s["error"]
        assert "boom after 50 docs" in s["qs_stderr_tail"] and s["qs_process_errors"] >= 1
    finally:
        runner.invoke(main, ["couch", "down", "--port", str(port), "--purge"], env=env)


def test_stderr_lines_are_what_couchdb_did_not_write_and_restarts_are_summarised():
    from dragnet.results import addview_results as rb

    log = ["[info] 2026-11-25T12:24:30.1Z node <0.1.0> -------- Starting", "boom after 100 docs",
           "[error] 2026-11-25T12:24:34.8Z node <0.2.0> -------- OS Process Error :: {os_process_error,{exit_status,3}}",
           "{{nocatch,{os_process_error,{exit_status,3}}},[{couch_os_process,prompt,2}]}", "  more report",
           "panic: runtime error"]
    assert rb.stderr_lines(log) == "boom after 100 docs\npanic: runtime error"
    before = {"process_starts": {"value": 2, "type": "counter"}, "process_errors": {"value": 0, "type": "counter"}}
    after = {"process_starts": {"value": 4, "type": "counter"}, "process_errors": {"value": 2, "type": "counter"}}
    res = rb.build_results(started_at="x", command=[], couchdb=None, machine={}, storage="disk", db={},
                           view={"ddoc": "_design/x"}, polls=[], wall_time_s=None, docs=None, rows=None, ok=False,
                           error="e", qs_before=before, qs_after=after, query_server_stderr="boom")
    s = res["summary"]
    assert (s["qs_process_starts"], s["qs_process_errors"], s["qs_stderr_tail"]) == (2, 2, "boom")


def test_a_design_doc_in_the_servers_language_runs_on_it(goqs, tmp_path, sample):
    ddoc = tmp_path / "ddoc.json"
    ddoc.write_text(json.dumps({"_id": "_design/g", "language": "goqs",
                                "views": {"income": {"map": "income"}, "ids": {"map": "emit_v", "reduce": "count"}}}))
    r = CliRunner().invoke(main, ["qsbench", "--server", f"goqs={goqs}", "--ddoc", str(ddoc), "--docs", str(sample),
                                  "--repeat", "1", "--warmup", "0", "--results", str(tmp_path / "res"), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert [s["name"] for s in out["servers"]] == ["goqs"]
    skipped = {s["name"]: s["reason"] for s in out["skipped"]}
    assert "does not run goqs" in skipped["python3"]
