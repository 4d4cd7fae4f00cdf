"""dragnet qsbench --ddoc: a whole design document over the protocol, no CouchDB.

The reduce batching is checked without any server (and against CouchDB's own chunkify run by escript);
the rest runs real query-server processes on a small generated sample.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import QS_COUNT

from dragnet.index import design as dsg
from dragnet.qsbench import run as qsbench
from dragnet.qsbench import ddoc as qsddoc
from dragnet.cli import main
from dragnet.servers.available import discover
from dragnet.servers.discovery import ServerSpec, Skipped
from dragnet.index.reduce_batches import Atom, Call, btree_rows, chunkify, expand, plan_and_reduce, term_size

REPO = Path(__file__).resolve().parent.parent
APP = REPO / "tests" / "ddocs" / "app"
TESTSERVER = str(Path(__file__).with_name("qs_testserver.py"))
CHUNKIFY = Path(__file__).with_name("erlang") / "chunkify.escript"
COUNT = QS_COUNT
INCOME_REDUCE = (APP / "views" / "income_by_person" / "reduce.js").read_text()


@pytest.fixture(scope="module")
def raw_docs(sample) -> list[dict]:
    with gzip.open(sample, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


@pytest.fixture(scope="module")
def servers() -> dict[str, ServerSpec]:
    specs, _ = discover()
    return {s.name: s for s in specs}


def _need(servers, *names) -> list[ServerSpec]:
    missing = [n for n in names if n not in servers]
    if missing:
        pytest.skip(f"query server(s) {', '.join(missing)} not found here (make servers builds them)")
    return [servers[n] for n in names]


def _ddoc(tmp_path, views: dict, language="javascript", lib=None) -> dsg.Design:
    doc = {"_id": "_design/t", "language": language, "views": dict(views, **({"lib": lib} if lib else {}))}
    path = tmp_path / "ddoc.json"
    path.write_text(json.dumps(doc))
    return dsg.load(str(path))


# -- pure: the batches CouchDB 3.5 sends ------------------------------------------------------

def _erl(v) -> str:
    """An Erlang term literal of an EJSON value (binaries as bytes, so no source encoding matters)."""
    if v is None or v is True or v is False:
        return {None: "null", True: "true", False: "false"}[v]
    if isinstance(v, Atom):
        return str(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        text = repr(v)
        mantissa, _, exp = text.partition("e")
        mantissa = mantissa if "." in mantissa else mantissa + ".0"
        return mantissa + ("e" + exp if exp else "")
    if isinstance(v, str):
        return "<<" + ",".join(str(b) for b in v.encode("utf-8")) + ">>"
    if isinstance(v, list):
        return "[" + ",".join(_erl(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{[" + ",".join("{" + _erl(k) + "," + _erl(x) + "}" for k, x in v.items()) + "]}"
    if isinstance(v, tuple):
        return "{" + ",".join(_erl(x) for x in v) + "}"
    raise TypeError(v)


def _varied_rows(n: int) -> list[tuple]:
    values = [1, 255, 256, -7, 2 ** 31, 2 ** 70, 0.5, 1e21, "x", "Привіт", None, True, False, [], [1, 2, 3],
              [1, 300], {"a": 1, "b": [None, "c"]}, {}]
    docs = []
    for i in range(n):
        rows = [[values[i % len(values)], values[(i * 7) % len(values)]], [["k", i], i * 1.5]]
        if i % 9 == 0:
            rows.append([values[i % len(values)], 3])   # the same key twice: dups
        docs.append((f"doc-{i:04d}", rows))
    return btree_rows(docs)


def test_term_sizes_and_chunks_match_couchdb_chunkify(tmp_path):
    escript = shutil.which("escript")
    if not escript:
        pytest.fail("escript not found (make deps installs erlang-nox)")
    rows = _varied_rows(300)
    assert any(isinstance(v, tuple) for _, v in rows)  # dups present
    terms = tmp_path / "terms.txt"
    terms.write_text("".join(_erl(r) + ".\n" for r in rows))
    out = subprocess.run([escript, str(CHUNKIFY), str(terms)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    sizes_line, chunks_line = out.stdout.split()
    sizes = [term_size(r) for r in rows]
    assert sizes == json.loads(sizes_line)
    chunks = chunkify(rows, sizes)
    assert [len(c) for c in chunks] == json.loads(chunks_line)
    assert len(chunks) > 5 and sum(chunks, []) == rows


def test_rows_are_in_btree_order_with_dups_merged():
    rows = btree_rows([
        ("b", [[{"o": 1}, 1], ["a", 2], [["a"], 3], [1, 4], [True, 5], [False, 6], [None, 7], [1, 9], [1, 0.5]]),
        ("a", [[1, 8]]),
    ])
    keys = [(k, i) for (k, i), _ in rows]
    assert keys == [(None, "b"), (False, "b"), (True, "b"), (1, "a"), (1, "b"), ("a", "b"), (["a"], "b"),
                    ({"o": 1}, "b")]
    # the three values of key 1 in doc b: one dups entry, expanded in Erlang term order for reduce
    assert rows[4][1] == (Atom("dups"), [0.5, 4, 9])
    assert expand(rows[3:5]) == [[[1, "a"], 8], [[1, "b"], 0.5], [[1, "b"], 4], [[1, "b"], 9]]


def test_map_functions_grouped_and_ordered_as_ddoc_to_mrst(tmp_path):
    m1, m2 = "function (doc) { emit(1, 1); }", "function (doc) { emit(2, 2); }"
    d = _ddoc(tmp_path, {"a": {"map": m2, "reduce": "function (k, v) { return 1; }"}, "b": {"map": m1},
                         "c": {"map": m2, "reduce": "_sum"}, "d": {"map": m2, "reduce": "function (k, v) { return 2; }"}})
    groups = qsddoc.map_groups(d)
    # one add_fun per distinct map source, in sorted order of the source
    assert [g.map_source for g in groups] == [m1, m2]
    assert [g.views for g in groups] == [("b",), ("a", "c", "d")]
    # reduce functions prepended while walking the views: reverse design-document order
    assert [v for v, _ in groups[1].reduces] == ["d", "c", "a"]
    assert [v for v, _ in groups[1].os_reduces] == ["d", "a"]


def _record(reductions):
    calls: list[Call] = []

    def send(call: Call) -> list:
        calls.append(call)
        if call.kind == "reduce":  # one reduction per function: which function, which leaf, how many rows
            return [{"f": i, "leaf": sum(c.kind == "reduce" for c in calls) - 1, "n": call.items}
                    for i in call.functions]
        return [{"f": call.functions[0], "of": call.message[2]}]
    return calls, send


def test_reduce_batches_have_couchdb_35_shape():
    # Shape from CouchDB 3.5.0 (see dragnet/index/reduce_batches.py for each rule):
    #   couch_btree.erl:458-459   a kv node -> R(reduce, KVs); couch_btree.erl:456-457 a kp node -> R(rereduce, Reds)
    #   couch_mrview_util.erl:1246-1264  reduce over detupled [[Key, DocId], Value]; rereduce over child results
    #   couch_query_servers.erl:127-161  one ["reduce", OsRedSrcs, KVs] for all non-built-in functions
    #   couch_query_servers.erl:110-125, 163-177  one ["rereduce", [Src], Values] per function
    #   couch_query_servers.erl:80-96  group_reductions_results: 1st, 3rd.. function's values reversed
    #   couch_btree.erl:364-370  kp levels until one root
    rows = _varied_rows(2000)
    sources = ["function (k, v, r) { return 'd'; }", "_sum", "function (k, v, r) { return 'a'; }",
               "function (k, v, r) { return 'e'; }"]
    calls, send = _record(None)
    root, made = plan_and_reduce(rows, sources, send)
    assert made == calls
    leaves = [c for c in calls if c.kind == "reduce"]
    # every leaf: one message with every non-built-in function, its rows in B-tree order, all rows once
    assert all(c.message[0] == "reduce" and c.message[1] == [sources[0], sources[2], sources[3]] for c in leaves)
    assert len(leaves) == len(chunkify(rows, [term_size(r) for r in rows])) > 25
    assert sum((c.message[2] for c in leaves), []) == expand(rows)
    assert all(c.level == 0 for c in leaves) and calls[:len(leaves)] == leaves
    # inner nodes: one rereduce per function, over the children's reductions of that function
    inner = [c for c in calls if c.kind == "rereduce"]
    assert inner and {c.level for c in inner} >= {1, 2}  # enough leaves for two kp levels
    level1 = [c for c in inner if c.level == 1]
    per_fn = {i: [c for c in level1 if c.functions == [i]] for i in (0, 2, 3)}
    assert len(per_fn[0]) == len(per_fn[2]) == len(per_fn[3]) and not [c for c in inner if c.functions == [1]]
    children = [[v["leaf"] for v in c.message[2]] for c in per_fn[3]]
    assert sorted(sum(children, [])) == list(range(len(leaves)))
    for a, b, e in zip(per_fn[0], per_fn[2], per_fn[3]):
        assert a.message[1] == [sources[0]] and b.message[1] == [sources[2]] and e.message[1] == [sources[3]]
        in_order = [v["leaf"] for v in e.message[2]]            # 4th function (index 3): child order
        assert in_order == sorted(in_order)
        assert [v["leaf"] for v in a.message[2]] == in_order[::-1]  # 1st and 3rd: reversed
        assert [v["leaf"] for v in b.message[2]] == in_order[::-1]
    top = max(c.level for c in inner)
    assert len([c for c in inner if c.level == top]) == 3       # one root node, three functions
    assert [r["f"] for r in root] == [0, 2, 3]


def test_small_views_and_builtins_send_what_couchdb_sends():
    rows = btree_rows([("a", [["k", 1]]), ("b", [["k", 2]])])
    calls, send = _record(None)
    root, _ = plan_and_reduce(rows, ["function (k, v) { return 1; }"], send)
    # a single leaf is the root: one reduce, no rereduce
    assert [c.message for c in calls] == [["reduce", ["function (k, v) { return 1; }"],
                                           [[["k", "a"], 1], [["k", "b"], 2]]]]
    assert root == [{"f": 0, "leaf": 0, "n": 2}]
    for srcs, rws in ((["_sum", "_stats"], rows), (["function (k, v) { return 1; }"], [])):
        calls, send = _record(None)
        assert plan_and_reduce(rws, srcs, send) == (None, []) and calls == []


def test_compare_lists_differences_by_view_and_doc(tmp_path):
    d = _ddoc(tmp_path, {"x": {"map": "function (doc) { emit(1, 1); }"},
                         "y": {"map": "function (doc) { emit(2, 2); }", "reduce": "function (k, v) { return 0; }"}})
    groups = qsddoc.map_groups(d)
    ref = [b'[[[1,1]],[[2,2]]]\n', b'[[[1,1]],[[2,2],[3,3]]]\n']
    got = [b'[[[1,1.0000000000000002]],[[2,2]]]\n', b'[[[1,1]],[[3,3],[2,2]]]\n']  # float formatting, row order
    ok = {"y": qsddoc.ViewReduce(result=10)}
    assert qsddoc.compare(groups, ["a", "b"], ref, got, ok, {"y": qsddoc.ViewReduce(result=10.0)},
                          server="s", reference="r") == []
    got = [b'[[[1,1]],[[2,"two"]]]\n', b'[[[1,1]],[[2,2],[3,3]]]\n']
    found = qsddoc.compare(groups, ["a", "b"], ref, got, ok, {"y": qsddoc.ViewReduce(result=11)},
                           server="s", reference="r")
    assert [(m.view, m.doc_id, m.got, m.expected) for m in found] == [
        ("y", "a", [[2, "two"]], [[2, 2]]), ("y", None, 11, 10)]
    assert "view y, document a: s gave [[2, \"two\"]], r gave [[2, 2]]" == found[0].message()
    assert qsddoc.counts_by_view(found) == {"y": {"docs": 1, "reduce": 1}}


def test_function_costs_split_map_time_and_name_the_most_expensive_view(tmp_path):
    d = _ddoc(tmp_path, {"cheap": {"map": "function (doc) { emit(1, 1); }"},
                         "dear": {"map": "function (doc) { emit(2, 2); }", "reduce": "function (k, v) { return 0; }"}})
    groups = qsddoc.map_groups(d)
    costs = qsddoc.function_costs(groups, 100.0, {"cheap": 30.0, "dear": 60.0}, {"dear": 5.0}, {"dear": 3},
                                  baseline_ms=20.0)
    # own costs 10 and 40 over the no-op: the 100 ms of map split 20 / 80
    assert [(c.kind, c.views, round(c.ms, 6)) for c in costs] == [("map", "dear", 80.0), ("map", "cheap", 20.0),
                                                                  ("reduce", "dear", 5.0)]
    assert math.isclose(sum(c.share for c in costs), 1.0)
    assert qsddoc.most_expensive_view(groups, costs) == "dear"


def test_servers_are_chosen_by_the_ddoc_language(tmp_path):
    js = ServerSpec("chakra", "chakra", ("x",), "es2015")
    quick = ServerSpec("quickjs", "javascript_quickjs", ("q",), "es5")
    quick6 = ServerSpec("quickjs-es2015", "javascript_quickjs", ("q",), "es2015")
    py = ServerSpec("python3", "python3", ("p",), "python")
    d = dsg.load(str(APP))
    chosen, skipped = qsddoc.select_servers([js, quick, quick6, py], [Skipped("couchjs", "no CouchDB")], None, d)
    assert [s.name for s in chosen] == ["chakra", "quickjs"]
    assert {s.name for s in skipped} == {"couchjs", "quickjs-es2015", "python3"}
    chosen, _ = qsddoc.select_servers([js, quick, py], [], ["javascript_quickjs", "chakra"], d)
    assert [s.name for s in chosen] == ["quickjs", "chakra"]
    with pytest.raises(qsddoc.UsageError, match="python3 runs python"):
        qsddoc.select_servers([js, py], [], ["python3"], d)
    with pytest.raises(qsddoc.UsageError, match="couchjs is not available here \\(no CouchDB\\)"):
        qsddoc.select_servers([js], [Skipped("couchjs", "no CouchDB")], ["couchjs"], d)


# -- real query servers -----------------------------------------------------------------------

def _by_year(doc):
    s0, incomes = doc.get("step_0"), doc.get("step_11")
    if not s0 or s0.get("declarationType") != "1" or not incomes:
        return []
    total = sum(i["sizeIncome"] for i in incomes.values() if i and isinstance(i.get("sizeIncome"), (int, float))
                and not isinstance(i.get("sizeIncome"), bool))
    return [[s0.get("declarationYear1"), total]]


def _income_rows(doc):
    out = []
    for item in (doc.get("step_11") or {}).values():
        if item and isinstance(item.get("sizeIncome"), (int, float)) and not isinstance(item["sizeIncome"], bool):
            out.append(item["sizeIncome"])
    return out


@pytest.fixture(scope="module")
def app_bench(servers, docs):
    specs = [servers[n] for n in ("node", "chakra") if n in servers]
    if not specs:
        pytest.skip("neither node nor chakra here (make servers)")
    return qsddoc.run_benchmark(specs, dsg.load(str(APP)), docs, repeat=2, warmup=0)


def test_app_ddoc_runs_every_function_on_js_engines(app_bench, docs, raw_docs):
    groups = app_bench.groups
    assert [g.views for g in groups] == [("income_by_person",), ("by_year",), ("name_words",)]
    incomes = [v for d in raw_docs for v in _income_rows(d)]
    for res in app_bench.results:
        assert res.status == "ok", (res.spec.name, res.error, [m.message() for m in res.mismatches])
        # map rows of by_year (a _stats view: its reduce stays in Erlang) as computed here independently
        for raw, doc in zip(res.answers, raw_docs):
            got = json.loads(raw)
            assert len(got) == 3
            assert qsbench.values_equal(got[1], _by_year(doc)), doc["_id"]
        # name_words needs views/lib/util.js: rows are there, their values the word counts
        words = [r for raw in res.answers for r in json.loads(raw)[2]]
        assert len(words) > COUNT and all(isinstance(k, str) and k == k.lower() for k, _ in words)
        # only the JS reduce goes to the server, over many leaves and at least one rereduce
        assert set(res.reduces) == {"income_by_person"}
        red = res.reduces["income_by_person"]
        assert red.result["count"] == len(incomes) == red.rows
        assert math.isclose(red.result["total"], sum(incomes), rel_tol=1e-9) and red.result["max"] == max(incomes)
        rows = btree_rows((i, json.loads(a)[0]) for i, a in zip(docs.ids, res.answers))
        assert red.reduce_calls == len(chunkify(rows, [term_size(r) for r in rows])) > 10
        assert red.rereduce_calls >= 1 and red.ns > 0
        # per-function time: three map functions and the reduce, the most expensive view named
        assert sorted((c.kind, c.views) for c in res.costs) == [
            ("map", "by_year"), ("map", "income_by_person"), ("map", "name_words"), ("reduce", "income_by_person")]
        assert res.most_expensive in ("by_year", "income_by_person", "name_words")
        assert set(res.alone_ns) == {"by_year", "income_by_person", "name_words", qsddoc.NOOP_LABEL}
        assert all(len(v) == 2 for v in res.alone_ns.values())


def test_app_ddoc_runs_in_interleaved_rounds_judged_by_decide(app_bench):
    # each server once per round, both rounds, paired: the pairs are decide's, on CPU per 1,000 docs
    for res in app_bench.results:
        assert [r.round for r in res.measured] == [1, 2]
        assert all(r.shards[0].driver == app_bench.driver == "c" for r in res.runs)
        assert all(r.map_cpu_s is not None and r.map_cpu_s > 0 for r in res.measured)
    assert app_bench.rounds == 2 and app_bench.stopped == "repeat" and app_bench.metric == "cpu"
    if len(app_bench.results) == 2:
        (pair,) = app_bench.verdicts
        assert pair.metric == "cpu" and pair.interval.paired and pair.interval.n == 2
        assert pair.state in ("separated", "tied", "unresolved") and pair.faster in app_bench.order
        costs = {r.spec.name: [qsbench.cpu_per_1000(m) for m in r.measured] for r in app_bench.results}
        logs = [math.log(s / f) for s, f in zip(costs[pair.slower], costs[pair.faster])]
        assert pair.ratio == pytest.approx(math.exp(sum(logs) / 2))


def test_messages_are_what_couchdb_sends(servers, docs, tmp_path):
    (node,) = _need(servers, "node")
    log = tmp_path / "received.jsonl"
    tee = ServerSpec("tee", "node", (sys.executable, TESTSERVER, "tee", str(log), "--", *node.argv), "es2015")
    d = dsg.load(str(APP))
    b = qsddoc.run_benchmark([tee], d, docs, repeat=1, warmup=0)
    assert b.results[0].status == "ok", b.results[0].error
    lines = log.read_bytes().splitlines(keepends=True)
    sessions, cur = [], []
    for line in lines:
        if line.startswith(b'["reset"') and cur:
            sessions.append(cur)
            cur = []
        cur.append(line)
    sessions.append(cur)
    first = sessions[0]
    groups = qsddoc.map_groups(d)
    head = [json.loads(x) for x in first[:5]]
    assert head[0] == ["reset", {"reduce_limit": True, "timeout": 5000}]
    assert head[1] == ["add_lib", {"util": (APP / "views" / "lib" / "util.js").read_text()}]
    assert head[2:] == [["add_fun", g.map_source] for g in groups]
    assert first[5:5 + COUNT] == docs.lines  # byte for byte
    tail = [json.loads(x) for x in first[5 + COUNT:]]
    reduces = [m for m in tail if m[0] == "reduce"]
    assert tail[:len(reduces)] == reduces and all(m[1] == [INCOME_REDUCE] for m in reduces)
    rows = btree_rows((i, json.loads(a)[0]) for i, a in zip(docs.ids, b.results[0].answers))
    assert sum((m[2] for m in reduces), []) == expand(rows)
    assert [len(m[2]) for m in reduces] == [len(expand(c)) for c in chunkify(rows, [term_size(r) for r in rows])]
    rereduces = tail[len(reduces):]
    assert rereduces and all(m[0] == "rereduce" and m[1] == [INCOME_REDUCE] for m in rereduces)
    # then each map function alone, and the no-op one, each in a fresh process without reduce
    assert len(sessions) == 1 + len(groups) + 1
    for s in sessions[1:]:
        msgs = [json.loads(x)[0] for x in s]
        assert msgs == ["reset", "add_lib", "add_fun"] + ["map_doc"] * COUNT


ENTRIES = "function (doc) { emit(doc._id, typeof Object.fromEntries); }"
ENTRIES_REDUCE = ("function (keys, values, rereduce) { var n = 0; for (var i = 0; i < values.length; i++) "
                  "n += rereduce ? values[i] : 1; if (rereduce) return n; "
                  "return typeof Object.fromEntries === 'function' ? n : -n; }")


def test_engine_difference_is_listed_by_view_and_doc(servers, docs, tmp_path):
    node, chakra = _need(servers, "node", "chakra")
    d = _ddoc(tmp_path, {"plain": {"map": "function (doc) { emit(doc._id, 1); }"},
                         "entries": {"map": ENTRIES, "reduce": ENTRIES_REDUCE}})
    b = qsddoc.run_benchmark([node, chakra], d, docs, repeat=1, warmup=0)
    res = {r.spec.name: r for r in b.results}
    assert b.reference == "node" and res["node"].status == "ok"
    # ChakraCore has no Object.fromEntries (ES2019): every document of one view, and its reduce
    assert res["chakra"].status == "wrong"
    assert res["chakra"].mismatch_counts == {"entries": {"docs": COUNT, "reduce": 1}}
    m = res["chakra"].mismatches[0]
    assert (m.view, m.doc_id, m.got, m.expected) == ("entries", docs.ids[0], [[docs.ids[0], "undefined"]],
                                                     [[docs.ids[0], "function"]])
    red = [x for x in res["chakra"].mismatches if x.doc_id is None]
    assert [(x.view, x.got, x.expected) for x in red] == [("entries", -COUNT, COUNT)]
    assert [r.name for r in b.rows] == ["node"]  # a different engine is not ranked

    out = tmp_path / "results"
    r = CliRunner().invoke(main, ["qsbench", "--ddoc", str(tmp_path / "ddoc.json"), "--docs", str(docs.origin["source"]),
                                  "--languages", "node,chakra", "--repeat", "1", "--warmup", "0",
                                  "--results", str(out)])
    assert r.exit_code != 0
    assert "DIFFERENT chakra vs node: entries: 60 doc(s), reduce" in r.output
    assert f"view entries, document {docs.ids[0]}: chakra gave" in r.output
    (path,) = out.glob("qsbench-*.json")
    saved = json.loads(path.read_text())
    ch = next(s for s in saved["servers"] if s["name"] == "chakra")
    assert saved["schema"] == qsddoc.SCHEMA and saved["settings"]["reference"] == "node"
    assert ch["status"] == "wrong" and ch["mismatch_counts"] == {"entries": {"docs": COUNT, "reduce": 1}}


def test_syntax_an_engine_lacks_fails_that_engine_only(servers, docs, tmp_path):
    node, chakra = _need(servers, "node", "chakra")
    d = _ddoc(tmp_path, {"year": {"map": "function (doc) { emit(doc.step_0?.declarationYear1 ?? null, 1); }"}})
    b = qsddoc.run_benchmark([node, chakra], d, docs, repeat=1, warmup=0)
    res = {r.spec.name: r for r in b.results}
    assert res["node"].status == "ok"
    assert res["chakra"].status == "failed" and "add_fun of view year" in res["chakra"].error
    assert "SyntaxError" in res["chakra"].error


PY_MAP = "def fun(doc):\n    for item in (doc.get('step_11') or {}).values():\n        yield doc['_id'], 1\n"
PY_REDUCE = "def fun(keys, values, rereduce):\n    return sum(values)\n"


def test_python_ddoc_on_python_servers(servers, docs, raw_docs, tmp_path):
    py, couchpy = _need(servers, "python3", "couchpy")
    d = _ddoc(tmp_path, {"items": {"map": PY_MAP, "reduce": PY_REDUCE}, "n": {"map": PY_MAP, "reduce": "_count"}},
              language="python")
    chosen, skipped = qsddoc.select_servers(list(servers.values()), [], None, d)
    assert {"python3", "couchpy"} <= {s.name for s in chosen} and "node" in {s.name for s in skipped}
    assert [g.views for g in qsddoc.map_groups(d)] == [("items", "n")]  # one map function for both
    b = qsddoc.run_benchmark([py, couchpy], d, docs, repeat=1, warmup=0)
    expected = sum(len(doc.get("step_11") or {}) for doc in raw_docs)
    for res in b.results:
        assert res.status == "ok", res.error
        assert set(res.reduces) == {"items"} and res.reduces["items"].result == expected
        assert res.reduces["items"].rereduce_calls >= 1


def test_couchjs_agrees_with_node(servers, docs):
    cmd = os.environ.get("DRAGNET_COUCHJS")
    if not cmd:
        pytest.skip("DRAGNET_COUCHJS is not set (e.g. '/opt/couchdb/bin/couchjs /opt/couchdb/share/server/main.js')")
    (node,) = _need(servers, "node")
    couchjs = ServerSpec("couchjs", "javascript", tuple(shlex.split(cmd)), "es5")
    b = qsddoc.run_benchmark([couchjs, node], dsg.load(str(APP)), docs, repeat=1, warmup=0)
    assert b.reference == "couchjs"
    assert [r.status for r in b.results] == ["ok", "ok"], [(r.error, r.mismatches[:3]) for r in b.results]


def test_cli_json_and_view_selection(servers, sample, tmp_path):
    _need(servers, "python3")
    path = tmp_path / "ddoc.json"
    path.write_text(json.dumps({"_id": "_design/p", "language": "python", "views": {
        "items": {"map": PY_MAP, "reduce": PY_REDUCE}, "ids": {"map": "def fun(doc):\n    yield doc['_id'], None\n"}}}))
    r = CliRunner().invoke(main, ["qsbench", "--ddoc", str(path), "--view", "items", "--docs", str(sample),
                                  "--servers", "python3", "--repeat", "1", "--warmup", "0",
                                  "--results", str(tmp_path / "out"), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["design"]["views"] == ["items"] and doc["design"]["reduces"] == {"items": "function"}
    (s,) = doc["servers"]
    assert s["status"] == "ok" and s["most_expensive_view"] == "items"
    assert [(f["kind"], f["views"]) for f in s["functions"]] in ([("map", "items"), ("reduce", "items")],
                                                                  [("reduce", "items"), ("map", "items")])
    assert "latencies_ns" not in s["runs"][0]["shards"][0] and Path(doc["results_file"]).is_file()

    bad = CliRunner().invoke(main, ["qsbench", "--ddoc", str(path), "--view", "nope", "--count", "5",
                                    "--cache", str(tmp_path)])
    assert bad.exit_code != 0 and "no view 'nope' (it has items, ids)" in bad.output
    bad = CliRunner().invoke(main, ["qsbench", "--ddoc", str(path), "--shards", "2", "--count", "5"])
    assert bad.exit_code != 0 and "--ddoc runs one shard" in bad.output
    bad = CliRunner().invoke(main, ["qsbench", "--languages", "node", "--count", "5"])
    assert bad.exit_code != 0 and "--languages goes with --ddoc" in bad.output
