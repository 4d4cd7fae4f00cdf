"""dragnet's node (V8) and bun (JavaScriptCore) query servers: the conformance suite, couchjs's answers
line by line, and the sandbox their user code runs in. Both run query_servers/node/dragnet-node.js."""

from __future__ import annotations

import json
import os
import re

import pytest

from dragnet.servers import available
from dragnet.servers import discovery as qs
from qs_conformance import CHECKS, JS, QueryServer, check_id, couchjs_argv, couchjs_session, run_check, transcript

RUNTIMES = ("node", "bun")


@pytest.fixture(scope="module", params=RUNTIMES)
def server(request) -> list[str]:
    """argv of the node or bun server as dragnet discovers it; skips with discover()'s reason when absent."""
    specs, skipped = available.builtin_servers()
    found = {s.name: s for s in specs}
    if request.param not in found:
        reason = next((s.reason for s in skipped if s.name == request.param), "not found")
        pytest.skip(f"{request.param}: {reason}")
    return list(found[request.param].argv)


@pytest.mark.parametrize("check", CHECKS, ids=check_id)
def test_conformance(check, server):
    run_check(check, server, JS)


def test_same_answers_as_couchjs(server):
    """Line-by-line equality with CouchDB's own couchjs over a whole session (runs with DRAGNET_COUCHJS)."""
    lines = couchjs_session()
    theirs = transcript(couchjs_argv(), lines)
    ours = transcript(server, lines)
    assert len(ours) == len(theirs) == len(lines)
    for line, a, b in zip(lines, theirs, ours):
        assert b == a, f"after {line[:120]}"


def _undefined_name_log(name: str) -> str:
    # couchjs: function raised exception (new ReferenceError("process is not defined", "<unknown>", N)) ...
    return f'function raised exception (new ReferenceError("{name} is not defined", "<unknown>", '


ESCAPES = {
    # the runtime's own globals are simply not there
    "process.exit()": "function(doc) { process.exit(3); }",
    "require of a built-in": "function(doc) { var fs = require('fs'); emit(doc._id, fs.readFileSync('/etc/passwd')); }",
    "Bun": "function(doc) { Bun.spawnSync(['false']); }",
    "Buffer": "function(doc) { emit(Buffer.from('x'), 1); }",
    # the sandbox's own Function constructor: still no process in scope
    "Function constructor": "function(doc) { emit(this.constructor.constructor('return process')().pid, 1); }",
    "globalThis": "function(doc) { globalThis.process.exit(3); }",
    # errors thrown through the host (a syntax error in a required module) are sandbox objects, so their
    # constructor chain does not lead to the host realm either
    "host error's constructor": ("function(doc) { try { require('views/lib/bad'); } catch (e) {"
                                 " var err = e; } emit(doc._id, 1);"
                                 " err.constructor.constructor('return process')().exit(3); }"),
}


def test_view_code_cannot_reach_the_runtime(server):
    """Each escape attempt is an undefined name (as couchjs reports it); the server lives and maps on."""
    with QueryServer(server) as s:
        assert s.ask("reset", {"reduce_limit": True, "timeout": 5000}) is True
        assert s.ask("add_lib", {"bad": "exports.x = (;", "good": "exports.v = 7;"}) is True
        for source in ESCAPES.values():
            assert s.ask("add_fun", source) is True, source
        assert s.ask("add_fun", "function(doc) { emit(doc._id, require('views/lib/good').v); }") is True
        r = s.call("map_doc", {"_id": "esc"})
        assert s.alive()
        # the last function still runs after every escape attempt was stopped
        assert r.answer[-1] == [["esc", 7]]
        assert len(r.answer) == len(ESCAPES) + 1
        for what, log in zip(ESCAPES, r.logs[-len(ESCAPES):]):
            if what == "require of a built-in":
                assert log.startswith('function raised exception ["error", "invalid_require_path", '
                                      '"Object has no property \\"fs\\".'), log
            else:
                name = {"Bun": "Bun", "Buffer": "Buffer"}.get(what, "process")
                if what == "globalThis":
                    assert "TypeError" in log and "undefined" in log, log
                else:
                    assert log.startswith(_undefined_name_log(name)), (what, log)
            assert log.endswith(" with doc._id esc"), log
        assert len(r.logs) == len(ESCAPES)
        assert s.call("map_doc", {"_id": "again"}).answer[-1] == [["again", 7]]
        assert s.alive()


def test_process_exit_gets_the_same_error_as_couchjs(server):
    """The error couchjs gives for the undefined name `process`, up to the line number (couchjs's esprima
    rewrite moves the function one line down)."""
    lines = [json.dumps(x) for x in (["reset", {}], ["add_fun", "function(doc) { process.exit(1); }"],
                                     ["map_doc", {"_id": "p"}])]
    ours = transcript(server, lines)
    assert ours[2] == [["log", 'function raised exception (new ReferenceError("process is not defined", '
                               '"<unknown>", 1)) with doc._id p'], [[]]]
    if os.environ.get("DRAGNET_COUCHJS"):
        theirs = transcript(couchjs_argv(), lines)
        assert theirs[2][1] == ours[2][1]
        assert theirs[2][0][1].replace('"<unknown>", 2)', '"<unknown>", 1)') == ours[2][0][1]


# ---------------------------------------------------------------- live: inside a real CouchDB

LIVE_DOCS = 1500


@pytest.fixture(scope="module")
def income_db(live_url):
    """A database of generated declarations on the live CouchDB; deleted afterwards."""
    from conftest import generated_db

    with generated_db(live_url, "dragnet_test_jsengines", LIVE_DOCS, 5) as (couch, name, _docs):
        yield couch, name


def _build_rows(couch, db: str, view_file, language: str, tmp_path) -> tuple[dict, list]:
    from dragnet.index import addview as addview
    from dragnet.index.ddoc import ddoc_path, unique_name

    cfg = addview.Config(view_path=str(view_file), db=db, language=language, timeout=300, pidstat=False,
                         ddoc=unique_name(language, "income"),        # named: kept for its rows to be read
                         results_dir=str(tmp_path / language), argv=["dragnet", "addview", "--language", language])
    out = addview.run_benchmark(couch, cfg)
    view = out.results["view"]
    path = ddoc_path(db, view["ddoc"])
    rows = couch.get(f"{path}/_view/{view['view']}")["rows"]
    couch.request("DELETE", f"{path}?rev={couch.get(path)['_rev']}", ok=(200,))
    return out.results["summary"], [(r["id"], r["key"], r["value"]) for r in rows]


@pytest.mark.live
@pytest.mark.slow
@pytest.mark.parametrize("language", RUNTIMES)
def test_live_addview_benchmark_matches_couchjs(language, income_db, tmp_path):
    """`addview --benchmark --language node|bun` indexes every doc, with the rows couchjs gives."""
    from pathlib import Path

    specs, skipped = available.builtin_servers()
    if language not in {s.name for s in specs}:
        pytest.skip(f"{language}: " + next((s.reason for s in skipped if s.name == language), "not found"))
    views = Path(__file__).resolve().parent.parent / "views" / "income"
    couch, db = income_db
    summary, rows = _build_rows(couch, db, views / "map.es6.js", language, tmp_path)
    assert summary["ok"] is True and summary["error"] is None, summary
    assert summary["docs"] >= LIVE_DOCS
    _, reference = _build_rows(couch, db, views / "map.js", "javascript", tmp_path)
    assert 0 < len(rows) == summary["rows"]
    assert rows == reference


# ---------------------------------------------------------------- discovery: skipped, never failed


def _fake_runtime(path, text: str, code: int = 0):
    path.write_text(f"#!/bin/sh\necho '{text}'\nexit {code}\n")
    path.chmod(0o755)
    return path


def test_old_or_missing_node_is_skipped_with_the_reason(tmp_path):
    qs.runtime_version.cache_clear()
    _fake_runtime(tmp_path / "node", "v16.20.2")
    specs, skipped = available.builtin_servers({"PATH": str(tmp_path)})
    reasons = {s.name: s.reason for s in skipped}
    assert "node" not in {s.name for s in specs}
    assert "Node.js 16.20.2" in reasons["node"] and "18 or later" in reasons["node"]
    _, skipped = available.builtin_servers({"PATH": str(tmp_path / "nowhere")})
    assert "not on PATH" in {s.name: s.reason for s in skipped}["node"]
    _fake_runtime(tmp_path / "node", "v20.1.0")
    qs.runtime_version.cache_clear()
    specs, _ = available.builtin_servers({"PATH": str(tmp_path)})
    node = {s.name: s for s in specs}["node"]
    assert node.version == "Node.js 20.1.0" and node.argv == (str(tmp_path / "node"), str(qs.NODE_QS))


def test_bun_that_cannot_run_is_skipped_with_the_reason(tmp_path, monkeypatch):
    qs.runtime_version.cache_clear()
    broken = _fake_runtime(tmp_path / "bun", "Illegal instruction", code=132)
    monkeypatch.setattr(qs, "BUN_BINARY", broken)
    specs, skipped = available.builtin_servers()
    assert "bun" not in {s.name for s in specs}
    assert "exited 132" in {s.name: s.reason for s in skipped}["bun"]
    monkeypatch.setattr(qs, "BUN_BINARY", tmp_path / "absent")
    _, skipped = available.builtin_servers()
    assert "not installed" in {s.name: s.reason for s in skipped}["bun"]
    qs.runtime_version.cache_clear()


def test_registered_for_couchdb_and_watched_by_pidstat():
    from click.testing import CliRunner

    from dragnet.measure import pidstat as pidstat
    from dragnet.cli import main
    from dragnet.report.tables import QS_FAMILIES

    specs, _ = available.builtin_servers()
    out = CliRunner().invoke(main, ["servers", "--env"])
    assert out.exit_code == 0, out.output
    for spec in specs:
        if spec.name in RUNTIMES:
            assert f"export COUCHDB_QUERY_SERVER_{spec.name.upper()}=" in out.output
            assert str(qs.NODE_QS) in out.output
    # the processes CouchDB starts for them are recorded, and attributed to their language
    for runtime, command in (("node", "/usr/bin/node /r/query_servers/node/dragnet-node.js"),
                             ("node", "/usr/bin/nodejs /opt/dragnet/query_servers/node/dragnet-node.js"),
                             ("bun", "/opt/dragnet/query_servers/bun/bun /opt/dragnet/query_servers/node/dragnet-node.js")):
        exe = command.split()[0].rsplit("/", 1)[-1]
        assert re.search(pidstat.DEFAULT_PATTERN, exe), exe
        assert pidstat.family(command) == f"dragnet-{runtime}"
        assert QS_FAMILIES[runtime] == (f"dragnet-{runtime}",)
    assert pidstat.family("/usr/bin/node /usr/share/nodejs/npm/bin/npm-cli.js") == "node"
