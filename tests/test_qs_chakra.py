"""dragnet-chakra, the ChakraCore query server: the conformance suite plus ChakraCore-specific checks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from qs_conformance import (CHECKS, DIVERGES_FROM_COUCHJS, JS, QueryServer, check_id, couchjs_argv,
                            couchjs_session, run_check, transcript)

REPO = Path(__file__).resolve().parent.parent
CHAKRA_DIR = REPO / "query_servers" / "chakra"
BINARY = CHAKRA_DIR / "build" / "dragnet-chakra"
INCOME_ES6 = REPO / "views" / "income" / "map.es6.js"


@pytest.fixture(scope="session")
def chakra() -> list[str]:
    """argv of the built server; builds it when missing (make test builds it first)."""
    if not BINARY.exists():
        subprocess.run(["make", "-C", str(CHAKRA_DIR), f"PYTHON={sys.executable}"], check=True,
                       capture_output=True)
    assert os.access(BINARY, os.X_OK), f"{BINARY} was not built"
    return [str(BINARY)]


@pytest.mark.parametrize("check", CHECKS, ids=check_id)
def test_conformance(check, chakra):
    run_check(check, chakra, JS)


def test_runs_from_any_directory_without_arguments(chakra, tmp_path):
    proc = subprocess.run(chakra, input=b'["reset"]\n["add_fun", "function(d) { emit(d._id, 1); }"]\n'
                          b'["map_doc", {"_id": "x"}]\n', capture_output=True, cwd=tmp_path, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b'true\ntrue\n[[["x",1]]]\n'


def test_rejects_arguments(chakra):
    proc = subprocess.run(chakra + ["extra"], capture_output=True, timeout=30)
    assert proc.returncode != 0 and b"usage" in proc.stderr


def test_exception_log_matches_couchdb_recording(chakra, fixtures_dir):
    """The js_throws_10pct build logged `function raised exception (new Error(...)) with doc._id ...`."""
    ddoc = json.loads((fixtures_dir / "js_throws_10pct" / "ddoc.json").read_text())
    source = ddoc["views"]["income"]["map"]
    recorded = [line.split(" Log :: ", 1)[1]
                for line in (fixtures_dir / "js_throws_10pct" / "couchdb.log.slice").read_text().splitlines()
                if "function raised exception" in line][:3]
    assert recorded, "the recording has no exception log line"
    ids = [re.search(r"with doc\._id (\S+)$", line).group(1) for line in recorded]
    with QueryServer(chakra) as server:
        assert server.ask("reset", {"reduce_limit": True, "timeout": 5000}) is True
        assert server.ask("add_fun", source) is True
        for doc_id, expected in zip(ids, recorded):
            r = server.call("map_doc", {"_id": doc_id, "step_0": {"declarationType": "1"}})
            assert r.logs == [expected]
            assert r.answer == [[]]


def test_compilation_error_names_line_and_source(chakra, fixtures_dir):
    meta = json.loads((fixtures_dir / "js_syntax_error" / "meta.json").read_text())
    # CouchDB quotes the map source after the error: "... (<source>)"
    source = re.search(r"\) \((function .*)\)$", meta["put_ddoc"]["body"]["reason"], re.S).group(1)
    with QueryServer(chakra) as server:
        server.ask("reset", {})
        answer = server.ask("add_fun", source)
    assert answer[:2] == ["error", "compilation_error"]
    # couchjs (esprima): (new Error("Line 3: Unexpected token {", ...)); ChakraCore names the same line
    assert re.match(r'^\(new SyntaxError\(".+", "[^"]*", 3\)\) \(', answer[2]), answer[2]
    assert answer[2].endswith(" (" + source + ")")


def test_thrown_values_are_formatted_like_spidermonkey_tosource(chakra):
    funs = [
        'function(doc) { throw "plain string"; }',
        'function(doc) { throw {reason: "x", "odd-key": [1, "two", null], n: -0}; }',
        'function(doc) { throw ["error", "not fatal"]; }',
        'function(doc) { throw 42; }',
    ]
    with QueryServer(chakra) as server:
        server.ask("reset", {})
        for f in funs:
            server.ask("add_fun", f)
        r = server.call("map_doc", {"_id": "t"})
    assert r.answer == [[], [], [], []]
    assert r.logs == [
        'function raised exception (new String("plain string")) with doc._id t',
        'function raised exception ({reason:"x", "odd-key":[1, "two", null], n:-0}) with doc._id t',
        'function raised exception ["error", "not fatal"] with doc._id t',
        "function raised exception (new Number(42)) with doc._id t",
    ]


def test_fatal_error_from_map_ends_the_process_like_couchjs(chakra):
    with QueryServer(chakra) as server:
        server.ask("reset", {})
        server.ask("add_fun", 'function(doc) { throw ["fatal", "boom", "stop here"]; }')
        assert server.ask("map_doc", {"_id": "x"}) == ["error", "boom", "stop here"]
        assert server.proc.wait(timeout=10) == 255


def test_emitted_error_objects_keep_name_and_message(chakra):
    with QueryServer(chakra) as server:
        server.ask("reset", {})
        server.ask("add_fun", 'function(doc) { emit(doc._id, new TypeError("nope")); }')
        assert server.ask("map_doc", {"_id": "e"}) == [[["e", {"error": "TypeError", "message": "nope"}]]]


def test_lone_surrogates_are_escaped_not_replaced(chakra):
    with QueryServer(chakra) as server:
        server.ask("reset", {})
        server.ask("add_fun", 'function(doc) { emit(doc.s.charAt(0), doc.s); }')
        server.send_raw('["map_doc", {"_id": "l", "s": "\\ud83d\\ude00"}]')
        raw = server.read_raw()
    assert raw == b'[[["\\ud83d","\xf0\x9f\x98\x80"]]]'


def test_require_walks_relative_paths_in_ddoc(chakra):
    ddoc = {"_id": "_design/r", "lib": {"a": "exports.v = require('./b').w + 1;", "b": "exports.w = 41;"},
            "shows": {"s": "function(doc, req) { return {body: String(require('lib/a').v)}; }"}}
    with QueryServer(chakra) as server:
        server.ask("reset", {})
        assert server.ask("ddoc", "new", "_design/r", ddoc) is True
        assert server.ask("ddoc", "_design/r", ["shows", "s"], [None, {"path": ["db"], "headers": {}}]) == [
            "resp", {"body": "42"}]
        bad = {"_id": "_design/q", "shows": {"s": "function() { return {body: require('lib/none')}; }"}, "lib": {}}
        server.ask("ddoc", "new", "_design/q", bad)
        answer = server.call("ddoc", "_design/q", ["shows", "s"], [{"_id": "d"}, {"path": ["db"], "headers": {}}])
        assert answer.answer[:2] == ["error", "invalid_require_path"]


# ---------------------------------------------------------------- the income view


def _income_oracle(doc: dict) -> list:
    """What the income view emits for doc, computed independently of any JS (see views/income)."""
    s0 = doc.get("step_0")
    if not isinstance(s0, dict) or s0.get("declarationType") != "1" or "changesYear" in s0:
        return []
    s1 = doc.get("step_1") if isinstance(doc.get("step_1"), dict) else {}
    incomes = doc.get("step_11") if isinstance(doc.get("step_11"), (dict, list)) else {}
    items = incomes.values() if isinstance(incomes, dict) else incomes
    sums = {"declarant_salary": 0, "declarant_total": 0, "family_salary": 0, "family_total": 0}
    for item in items:
        if not isinstance(item, dict):
            continue
        size = item.get("sizeIncome")
        size = size if isinstance(size, (int, float)) and not isinstance(size, bool) else 0
        who = "declarant" if item.get("person") == "1" else "family"
        sums[f"{who}_total"] += size
        if item.get("objectType") == "salarymain":
            sums[f"{who}_salary"] += size
    value = {"FIO": " ".join(str(s1.get(k, "undefined")) for k in ("lastname", "firstname", "middlename"))}
    for k in ("workPost", "workPlace"):
        if k in s1:
            value[k] = s1[k]
    value["decl_year"] = s0.get("declarationYear1")
    value.update(sums)
    return [[doc["_id"], value]]


def _normalise(value):
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    if isinstance(value, dict):
        return {k: _normalise(v) for k, v in value.items()}
    return value


def test_income_view_over_generated_docs(chakra):
    source = INCOME_ES6.read_text() if INCOME_ES6.exists() else None
    if source is None:
        pytest.skip("views/income/map.es6.js is missing")
    from data_prep.generate import declarations

    docs = list(declarations(60, seed=7))
    # numeric incomes exercise the sums (the generator writes them as strings, like the NACP dumps)
    for i, doc in enumerate(docs[:20]):
        for j, item in enumerate((doc.get("step_11") or {}).values() if isinstance(doc.get("step_11"), dict) else []):
            if isinstance(item, dict):
                item["sizeIncome"] = 1000 * (i + 1) + j
    with QueryServer(chakra) as server:
        server.ask("reset", {"reduce_limit": True, "timeout": 5000})
        assert server.ask("add_fun", source) is True
        emitted = 0
        for doc in docs:
            answer = server.ask("map_doc", doc)
            assert _normalise(answer) == [_normalise(_income_oracle(doc))], doc["_id"]
            emitted += len(answer[0])
    assert 0 < emitted < len(docs)


# ---------------------------------------------------------------- against the real couchjs


def test_same_answers_as_couchjs():
    """Line-by-line equality with CouchDB's own couchjs over a session (runs with DRAGNET_COUCHJS)."""
    couchjs = couchjs_argv()
    lines = couchjs_session()
    theirs = transcript(couchjs, lines)
    ours = transcript([str(BINARY)] if BINARY.exists() else pytest.skip("dragnet-chakra not built"), lines)
    for line, a, b in zip(lines, theirs, ours):
        assert b == a, f"after {line[:120]}"


def test_divergent_checks_are_real_check_names():
    names = {check_id(c) for c in CHECKS}
    assert DIVERGES_FROM_COUCHJS <= names
