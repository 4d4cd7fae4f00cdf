"""dragnet's Python query server (query_servers/python/dragnet_qs.py), driven as a real process over
stdin/stdout with CouchDB 3.5's message shapes, on CPython and on PyPy; and couchpy 1.2 for the subset it
supports (map/reduce), since the benchmark uses it as the reference Python server."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys

import pytest

from dragnet.servers.available import discover
from dragnet.servers.discovery import PYTHON_QS, REPO, find_couchpy

INTERPRETERS = [pytest.param(sys.executable, id="cpython")]
if shutil.which("pypy3"):
    INTERPRETERS.append(pytest.param(shutil.which("pypy3"), id="pypy3"))
else:  # the Makefile installs pypy3; say so instead of silently testing one interpreter
    INTERPRETERS.append(pytest.param("pypy3", id="pypy3", marks=pytest.mark.skip(reason="pypy3 not installed")))


class QS:
    """One query-server process: send a command, collect `["log", ...]` lines up to the answer."""

    def __init__(self, argv, env=None):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)

    def send_raw(self, line: bytes):
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def read(self):
        """(log messages, answer) for the next answer; answer is None if the process closed stdout."""
        logs = []
        while True:
            line = self.proc.stdout.readline()
            if not line:
                return logs, None
            assert line.endswith(b"\n")
            msg = json.loads(line)
            if isinstance(msg, list) and len(msg) == 2 and msg[0] == "log":
                logs.append(msg[1])
                continue
            return logs, msg

    def ask(self, *cmd):
        self.send_raw(json.dumps(list(cmd)).encode())
        return self.read()

    def call(self, *cmd):
        logs, answer = self.ask(*cmd)
        return answer

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=20)
        for f in (self.proc.stdout, self.proc.stderr):
            f.close()
        return self.proc.returncode


@pytest.fixture(params=INTERPRETERS)
def qs(request):
    server = QS([request.param, str(PYTHON_QS)])
    yield server
    server.close()


MAP_YIELD = "def fun(doc):\n    if 'n' in doc:\n        yield doc['_id'], doc['n'] * 2\n"
REQ = {"method": "POST", "path": ["db", "_design", "t", "_update", "u"], "query": {}, "headers": {},
       "body": "", "userCtx": {"name": None, "roles": []}}


def test_reset_add_fun_map_doc_forms(qs):
    assert qs.call("reset", {"reduce_limit": True, "timeout": 5000}) is True
    assert qs.call("add_fun", MAP_YIELD) is True
    assert qs.call("add_fun", "lambda doc: [(doc['_id'], None), ([1, 'two'], {'a': doc.get('n')})]") is True
    assert qs.call("add_fun", "def by_emit(doc):\n    emit(doc.get('n'), 1)\n") is True
    assert qs.call("add_fun", "def helper(x):\n    return x + 1\n\ndef main(doc):\n    return [('h', helper(1))]\n")
    assert qs.call("map_doc", {"_id": "a", "n": 3}) == [
        [["a", 6]], [["a", None], [[1, "two"], {"a": 3}]], [[3, 1]], [["h", 2]]]
    assert qs.call("map_doc", {"_id": "b"}) == [[], [["b", None], [[1, "two"], {"a": None}]], [[None, 1]], [["h", 2]]]
    # reset forgets the functions
    assert qs.call("reset") is True
    assert qs.call("map_doc", {"_id": "a", "n": 3}) == []


def test_log_lines_come_before_the_answer(qs):
    qs.call("reset")
    qs.call("add_fun", "def f(doc):\n    log('seen ' + doc['_id'])\n    log({'k': [1, 2]})\n    yield 1, 2\n")
    logs, answer = qs.ask("map_doc", {"_id": "x1"})
    assert logs == ["seen x1", '{"k":[1,2]}']
    assert answer == [[[1, 2]]]


def test_raising_function_is_isolated_like_couchjs(qs):
    qs.call("reset")
    qs.call("add_fun", "def bad(doc):\n    if doc['_id'].endswith('3'):\n        raise ValueError('synthetic failure for ' + doc['_id'])\n    yield doc['_id'], 1\n")
    qs.call("add_fun", "def good(doc):\n    yield 'ok', doc['_id']\n")
    logs, answer = qs.ask("map_doc", {"_id": "d3"})
    assert answer == [[], [["ok", "d3"]]]
    assert logs == ["function raised exception (ValueError('synthetic failure for d3')) with doc._id d3"]
    logs, answer = qs.ask("map_doc", {"_id": "d4"})
    assert (logs, answer) == ([], [[["d4", 1]], [["ok", "d4"]]])
    # a function yielding something that is not a pair is a failure of that function only
    qs.call("add_fun", "def triple(doc):\n    yield 1, 2, 3\n")
    logs, answer = qs.ask("map_doc", {"_id": "d4"})
    assert answer == [[["d4", 1]], [["ok", "d4"]], []]
    assert len(logs) == 1 and logs[0].startswith("function raised exception (ValueError(") and logs[0].endswith("d4")


def test_values_json_cannot_hold(qs):
    qs.call("reset")
    qs.call("add_fun", "def f(doc):\n    yield 'nan', float('nan')\n    yield 'inf', [float('inf')]\n")
    qs.call("add_fun", "def g(doc):\n    yield 'set', {1, 2}\n")
    qs.call("add_fun", "def h(doc):\n    yield 'fine', 1\n")
    logs, answer = qs.ask("map_doc", {"_id": "z"})
    # NaN/Infinity become null as in JSON.stringify; an unserialisable value drops that function's rows
    assert answer == [[["nan", None], ["inf", [None]]], [], [["fine", 1]]]
    assert len(logs) == 1 and "TypeError" in logs[0] and logs[0].endswith("with doc._id z")


@pytest.mark.parametrize("source", [
    "def f(doc:\n    yield 1, 1\n",       # syntax error
    "x = 1\n",                          # no function
    "",                                 # empty
    "import no_such_module_here\ndef f(doc):\n    pass\n",
])
def test_compilation_errors(qs, source):
    qs.call("reset")
    answer = qs.call("add_fun", source)
    assert answer[:2] == ["error", "compilation_error"] if source else answer[:2] == ["error", "not_found"]
    assert isinstance(answer[2], str) and answer[2]
    # the process lives on and the failed function was not added
    qs.call("add_fun", MAP_YIELD)
    assert qs.call("map_doc", {"_id": "a", "n": 1}) == [[["a", 2]]]


def test_malformed_lines_get_an_error_and_the_server_continues(qs):
    qs.call("reset")
    for bad in (b"{not json", b'["map_doc", {"_id": ', b"\xff\xfe garbage"):
        qs.send_raw(bad)
        logs, answer = qs.read()
        assert answer[0] == "error" and answer[1] == "query_protocol_error", answer
    assert qs.call("add_fun", MAP_YIELD) is True
    assert qs.call("map_doc", {"_id": "a", "n": 2}) == [[["a", 4]]]


def test_big_document_and_non_ascii(qs):
    qs.call("reset")
    qs.call("add_fun", "def f(doc):\n    yield doc['name'], len(doc['blob'])\n    yield 'items', sum(len(i['t']) for i in doc['items'])\n")
    alphabet = "абвгґдеєжзиіїй漢字🙂xyz"
    items = [{"t": (alphabet[i % 20:] + alphabet[:i % 20]) * 10} for i in range(5000)]
    doc = {"_id": "big", "name": "Шевченко Тарас 🙂", "blob": "ж" * 1_000_000, "items": items}
    line = json.dumps(["map_doc", doc], ensure_ascii=False).encode()
    assert len(line) > 4_000_000
    qs.send_raw(line)
    logs, answer = qs.read()
    assert answer == [[["Шевченко Тарас 🙂", 1_000_000], ["items", 5000 * 200]]]
    # answers are UTF-8, not \u-escaped
    qs.send_raw(json.dumps(["map_doc", {"_id": "u", "name": "ї", "blob": "", "items": []}]).encode())
    raw = qs.proc.stdout.readline()
    assert "ї".encode() in raw


def test_lone_surrogate_still_valid_json(qs):
    qs.call("reset")
    qs.call("add_fun", "def f(doc):\n    yield doc['s'], 1\n")
    qs.send_raw(b'["map_doc", {"_id": "s", "s": "a\\ud800b"}]')
    raw = qs.proc.stdout.readline()
    raw.decode("utf-8")  # strict: must be valid UTF-8
    assert json.loads(raw) == [[["a\ud800b", 1]]]


def test_reduce_and_rereduce_with_and_without_context(qs):
    qs.call("reset")
    kvs = [[[1, "a"], 10], [[2, "b"], 20], [[None, "c"], 3]]
    two = "def r(keys, values):\n    return sum(values)\n"
    three = "def r(keys, values, rereduce):\n    return [len(values), rereduce, keys is None]\n"
    keys = "lambda keys, values: keys"
    assert qs.call("reduce", [two], kvs) == [True, [33]]
    assert qs.call("reduce", [two, three, keys], kvs, {}) == [True, [33, [3, False, False],
                                                                [[1, "a"], [2, "b"], [None, "c"]]]]
    assert qs.call("rereduce", [two], [33, 55, 66]) == [True, [154]]
    assert qs.call("rereduce", [two, three], [33, 55, 66], {"ctx": "x"}) == [True, [154, [3, True, True]]]
    # a raising reduce function gives null for itself, like couchjs
    logs, answer = qs.ask("reduce", ["def r(k, v):\n    return 1 / 0\n", two], kvs)
    assert answer == [True, [None, 33]]
    assert len(logs) == 1 and "ZeroDivisionError" in logs[0]
    assert qs.call("reduce", ["def r(k, v:\n"], kvs)[:2] == ["error", "compilation_error"]


def test_reduce_limit(qs):
    grow = "def r(keys, values):\n    return ['x' * 100 for v in values]\n"
    kvs = [[[i, str(i)], i] for i in range(100)]
    qs.call("reset", {"reduce_limit": True, "reduce_limit_threshold": 500, "reduce_limit_ratio": 2.0})
    answer = qs.call("reduce", [grow], kvs)
    assert answer[:2] == ["error", "reduce_overflow_error"]
    qs.call("reset", {"reduce_limit": "log", "reduce_limit_threshold": 500, "reduce_limit_ratio": 2.0})
    logs, answer = qs.ask("reduce", [grow], kvs)
    assert answer[0] is True and len(answer[1][0]) == 100
    assert logs and logs[0].startswith("reduce_overflow_error: Reduce output must shrink more rapidly")
    qs.call("reset", {"reduce_limit": False})
    assert qs.call("reduce", [grow], kvs)[0] is True
    # CouchDB 3.5 sends only reduce_limit; main.js then uses 4096 bytes and a ratio of 2
    qs.call("reset", {"reduce_limit": True, "timeout": 5000})
    assert qs.call("reduce", [grow], kvs)[:2] == ["error", "reduce_overflow_error"]
    assert qs.call("reduce", [grow], kvs[:30])[0] is True  # 30 * 102 bytes < 4096


DDOC = {
    "_id": "_design/t",
    "language": "python",
    "filters": {
        "ok": "def f(doc, req):\n    return doc.get('ok') and req['query'].get('want') == 'yes'\n",
        "one_arg": "lambda doc: doc.get('ok')",
    },
    "views": {"v": {"map": "def m(doc):\n    if doc.get('ok'):\n        yield doc['_id'], None\n"},
              "lib": {"util": "MAGIC = 42\ndef double(x):\n    return 2 * x\n"}},
    "validate_doc_update": (
        "def v(new, old, user_ctx, sec_obj):\n"
        "    if new.get('bad') == 'forbidden':\n        raise Forbidden('bad doc')\n"
        "    if new.get('bad') == 'unauthorized':\n        raise Unauthorized('log in')\n"
        "    if new.get('bad') == 'dict':\n        raise Exception({'forbidden': 'as a dict'})\n"
        "    if new.get('bad') == 'bug':\n        return new['missing']\n"
    ),
    "shows": {
        "hello": "def s(doc, req):\n    return 'Hello, %s!' % (doc or {}).get('_id')\n",
        "json": "def s(doc, req):\n    return {'json': {'id': doc['_id']}, 'headers': {'X-A': '1'}}\n",
        "chunks": "def s(doc, req):\n    start({'X-B': '2'})\n    send('a')\n    send('b')\n    return {'body': 'c'}\n",
        "boom": "def s(doc, req):\n    return doc['_id']\n",
        "lib": "def s(doc, req):\n    u = require('views/lib/util')\n    return str(u.double(u.MAGIC))\n",
    },
    "updates": {
        "u": "def u(doc, req):\n    if doc is None:\n        return [None, 'no doc']\n    doc['n'] = doc.get('n', 0) + 1\n    return [doc, {'body': 'done', 'code': 201}]\n",
    },
    "lists": {
        "rows": ("def l(head, req):\n    start({'headers': {'Content-Type': 'text/plain'}})\n    send('total=%s;' % head['total_rows'])\n"
                 "    while True:\n        row = get_row()\n        if row is None:\n            break\n        send(row['key'] + ';')\n"
                 "    return 'end'\n"),
    },
    "rewrites": "def r(req):\n    if req['path'][-1] == 'x':\n        return 'some/path'\n    return None\n",
}


def test_ddoc_commands(qs):
    assert qs.call("reset") is True
    assert qs.call("ddoc", "new", "_design/t", DDOC) is True
    docs = [{"_id": "1", "ok": True}, {"_id": "2", "ok": False}, {"_id": "3"}]
    assert qs.call("ddoc", "_design/t", ["filters", "ok"], [docs, {"query": {"want": "yes"}}]) == [True, [True, False, False]]
    assert qs.call("ddoc", "_design/t", ["filters", "ok"], [docs, {"query": {}}]) == [True, [False, False, False]]
    assert qs.call("ddoc", "_design/t", ["filters", "one_arg"], [docs, {}]) == [True, [True, False, False]]
    # _changes?filter=_view: CouchDB sends the view's map path
    assert qs.call("ddoc", "_design/t", ["views", "v", "map"], [docs]) == [True, [True, False, False]]

    vdu = ["validate_doc_update"]
    user, sec = {"name": "bob", "roles": []}, {"admins": {}, "members": {}}
    assert qs.call("ddoc", "_design/t", vdu, [{"_id": "x"}, None, user, sec]) == 1
    assert qs.call("ddoc", "_design/t", vdu, [{"bad": "forbidden"}, None, user, sec]) == {"forbidden": "bad doc"}
    assert qs.call("ddoc", "_design/t", vdu, [{"bad": "unauthorized"}, None, user, sec]) == {"unauthorized": "log in"}
    assert qs.call("ddoc", "_design/t", vdu, [{"bad": "dict"}, None, user, sec]) == {"forbidden": "as a dict"}
    assert qs.call("ddoc", "_design/t", vdu, [{"bad": "bug"}, None, user, sec])[:2] == ["error", "KeyError"]

    show_req = {"method": "GET", "path": ["db", "_design", "t", "_show", "hello"], "query": {}, "headers": {}}
    assert qs.call("ddoc", "_design/t", ["shows", "hello"], [{"_id": "d"}, show_req]) == ["resp", {"body": "Hello, d!"}]
    assert qs.call("ddoc", "_design/t", ["shows", "json"], [{"_id": "d"}, show_req]) == [
        "resp", {"json": {"id": "d"}, "headers": {"X-A": "1"}}]
    assert qs.call("ddoc", "_design/t", ["shows", "chunks"], [{"_id": "d"}, show_req]) == [
        "resp", {"body": "abc", "headers": {"X-B": "2"}}]
    assert qs.call("ddoc", "_design/t", ["shows", "lib"], [None, show_req]) == ["resp", {"body": "84"}]
    # a failing show for a missing doc on a doc path is not_found, as in render.js
    missing_req = dict(show_req, path=["db", "_design", "t", "_show", "boom", "nodoc"])
    assert qs.call("ddoc", "_design/t", ["shows", "boom"], [None, missing_req]) == ["error", "not_found", "document not found"]
    logs, answer = qs.ask("ddoc", "_design/t", ["shows", "boom"], [None, show_req])
    assert answer[:2] == ["error", "render_error"] and logs and "TypeError" in logs[0]

    assert qs.call("ddoc", "_design/t", ["updates", "u"], [{"_id": "d", "n": 1}, REQ]) == [
        "up", {"_id": "d", "n": 2}, {"body": "done", "code": 201}]
    assert qs.call("ddoc", "_design/t", ["updates", "u"], [None, REQ]) == ["up", None, {"body": "no doc"}]
    assert qs.call("ddoc", "_design/t", ["updates", "u"], [None, dict(REQ, method="GET")]) == [
        "error", "method_not_allowed", "Update functions do not allow GET"]

    assert qs.call("ddoc", "_design/t", ["rewrites"], [{"method": "GET", "path": ["a", "x"]}]) == [
        "ok", {"path": "some/path", "method": "GET"}]
    assert qs.call("ddoc", "_design/t", ["rewrites"], [{"method": "GET", "path": ["a", "y"]}]) == ["no_dispatch_rule"]

    assert qs.call("ddoc", "_design/t", ["shows", "nope"], [None, show_req]) == [
        "error", "not_found", "missing shows function nope on design doc _design/t"]
    # reset keeps cached design docs (CouchDB resets a ddoc process before each use)
    assert qs.call("reset") is True
    assert qs.call("ddoc", "_design/t", ["filters", "one_arg"], [docs, {}]) == [True, [True, False, False]]


def test_ddoc_new_replaces_the_cached_functions(qs):
    ddoc = {"_id": "_design/r", "filters": {"f": "lambda doc, req: True"}}
    qs.call("ddoc", "new", "_design/r", ddoc)
    assert qs.call("ddoc", "_design/r", ["filters", "f"], [[{}], {}]) == [True, [True]]
    qs.call("ddoc", "new", "_design/r", {"_id": "_design/r", "filters": {"f": "lambda doc, req: False"}})
    assert qs.call("ddoc", "_design/r", ["filters", "f"], [[{}], {}]) == [True, [False]]


def test_list_function_protocol(qs):
    qs.call("ddoc", "new", "_design/t", DDOC)
    head, req = {"total_rows": 2, "offset": 0}, {"method": "GET", "headers": {}, "query": {}}
    assert qs.call("ddoc", "_design/t", ["lists", "rows"], [head, req]) == [
        "start", ["total=2;"], {"headers": {"Content-Type": "text/plain"}}]
    assert qs.call("list_row", {"id": "a", "key": "a", "value": 1}) == ["chunks", ["a;"]]
    assert qs.call("list_row", {"id": "b", "key": "b", "value": 2}) == ["chunks", ["b;"]]
    assert qs.call("list_end") == ["end", ["end"]]
    # and the server is back in its normal loop
    assert qs.call("reset") is True


def test_add_lib_and_require_in_map(qs):
    qs.call("reset")
    assert qs.call("add_lib", {"util": "FACTOR = 10\n"}) is True
    assert qs.call("add_fun", "def f(doc):\n    yield doc['_id'], require('views/lib/util').FACTOR * doc['n']\n") is True
    assert qs.call("map_doc", {"_id": "a", "n": 2}) == [[["a", 20]]]
    # a missing module fails the function for that doc only
    qs.call("add_fun", "def g(doc):\n    require('views/lib/nope')\n    yield 1, 1\n")
    logs, answer = qs.ask("map_doc", {"_id": "a", "n": 2})
    assert answer == [[["a", 20]], []] and "invalid_require_path" in logs[0]


def test_unknown_commands_answer_an_error_and_the_server_carries_on(qs):
    # couchjs answers the same and then exits; dragnet's servers keep serving
    assert qs.call("reset") is True
    assert qs.call("index_doc", {}) == ["error", "unknown_command", "unknown command 'index_doc'"]
    assert qs.call("ddoc", "new", "_design/t", DDOC) is True
    assert qs.call("ddoc", "_design/t", ["frobnicate", "x"], []) == [
        "error", "unknown_command", "unknown ddoc command 'frobnicate'"]
    assert qs.call("reset") is True


def test_uncached_ddoc_ends_the_process_like_couchjs(qs):
    # CouchDB teaches a process a ddoc before using it; not knowing it means the two sides disagree
    assert qs.call("ddoc", "_design/nope", ["filters", "f"], [[], {}]) == [
        "error", "query_protocol_error", "uncached design doc: _design/nope"]
    assert qs.close() == 1


def test_wrong_arguments_are_a_protocol_error(qs):
    assert qs.call("map_doc")[:2] == ["error", "query_protocol_error"]
    assert qs.call("reset") is True


# -- agreement with couchpy on the benchmark's view -----------------------------------------------

def _nacp_docs(n, seed=3):
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        s0 = {"declarationType": rng.choice(["1", "1", "1", "2"]), "declarationYear1": "2016"}
        if rng.random() < 0.1:
            s0["changesYear"] = "2016"
        incomes = {str(k): {"sizeIncome": rng.choice([rng.randint(0, 10**6), rng.random() * 1000, "12", None, True]),
                            "objectType": rng.choice(["salarymain", "other"]), "person": rng.choice(["1", "2", "3"])}
                   for k in range(rng.randint(0, 12))}
        docs.append({"_id": f"nacp_{i:05d}", "step_0": s0, "step_11": incomes if rng.random() > 0.05 else "",
                     "step_1": {"lastname": "Іваненко", "firstname": "Петро", "middlename": None, "workPost": "суддя"}})
    return docs


@pytest.mark.parametrize("interpreter", INTERPRETERS)
def test_income_view_agrees_with_couchpy(interpreter):
    couchpy = find_couchpy({})
    if couchpy is None:
        pytest.skip("couchpy (CouchDB==1.2) not installed")
    source = (REPO / "views" / "income" / "map.py").read_text()
    docs = _nacp_docs(300)
    answers = []
    for argv in ([interpreter, str(PYTHON_QS)], [couchpy]):
        server = QS(argv)
        try:
            assert server.call("reset", {"reduce_limit": True}) is True
            assert server.call("add_fun", source) is True
            answers.append([server.call("map_doc", d) for d in docs])
        finally:
            server.close()
    ours, theirs = answers
    assert ours == theirs
    emitted = sum(1 for a in ours if a[0])
    assert 0 < emitted < len(docs)  # the sample exercises both branches


# -- couchpy 1.2, the reference Python server -----------------------------------------------------

def _couchpy_specs():
    specs, skipped = discover()
    return [pytest.param(s, id=s.name) for s in specs if s.name in ("couchpy", "couchpy-pypy")] or [
        pytest.param(None, marks=pytest.mark.skip(reason="couchpy not found"))]


@pytest.mark.parametrize("spec", _couchpy_specs())
def test_couchpy_map_reduce_subset(spec):
    import os
    server = QS(list(spec.argv), env=dict(os.environ, **dict(spec.env)))
    try:
        assert server.call("reset", {"reduce_limit": True, "timeout": 5000}) is True
        assert server.call("add_fun", MAP_YIELD) is True
        assert server.call("map_doc", {"_id": "a", "n": 4}) == [[["a", 8]]]
        assert server.call("map_doc", {"_id": "é"}) == [[]]
        # couchpy logs the traceback of a raising function and emits nothing for it
        server.call("add_fun", "def f(doc):\n    raise ValueError('nope')\n")
        logs, answer = server.ask("map_doc", {"_id": "b", "n": 1})
        assert answer == [[["b", 2]], []] and "ValueError: nope" in logs[0]
        assert server.call("reduce", ["def r(k, v):\n    return sum(v)"], [[[1, "a"], 10], [[2, "b"], 20]]) == [True, [30]]
        assert server.call("rereduce", ["def r(k, v):\n    return sum(v)"], [30, 12]) == [True, [42]]
        # CouchDB 3.5's trailing reduce context is ignored
        assert server.call("rereduce", ["def r(k, v):\n    return sum(v)"], [30, 12], {}) == [True, [42]]
    finally:
        server.close()


@pytest.mark.parametrize("cmd", [["ddoc", "new", "_design/t", {"_id": "_design/t"}], ["add_lib", {"a": "x"}]])
def test_couchpy_exits_on_commands_it_does_not_know(cmd):
    """couchpy 1.2 on Python 3 has no ddoc/add_lib: it answers nothing and exits 1 (CouchDB then reports
    os_process_error), so filters, validate_doc_update, shows, ... cannot use it. dragnet_qs.py has both."""
    couchpy = find_couchpy({})
    if couchpy is None:
        pytest.skip("couchpy (CouchDB==1.2) not installed")
    server = QS([couchpy])
    try:
        assert server.call("reset") is True
        logs, answer = server.ask(*cmd)
        assert answer is None
        assert server.proc.wait(timeout=20) == 1
    finally:
        server.close()


# -- the shared conformance suite (tests/qs_conformance.py) ----------------------------------------

from qs_conformance import CHECKS, Dialect, check_id, run_check  # noqa: E402

PY = Dialect(
    name="python",
    map_emit_v="def fun(doc):\n    yield doc['_id'], doc.get('v')\n",
    map_emit_const="lambda doc: [('const', 1)]",
    map_log="def fun(doc):\n    log('saw ' + doc['_id'])\n    yield doc['_id'], None\n",
    map_throw_if_bad=("def fun(doc):\n    if doc.get('bad'):\n        raise ValueError('bad doc ' + doc['_id'])\n"
                      "    yield doc['_id'], 1\n"),
    map_emit_text="def fun(doc):\n    yield doc['text'], [doc['text']]\n",
    map_emit_blob_len="def fun(doc):\n    yield doc['_id'], len(doc['blob'])\n",
    map_syntax_error="def fun(doc):\n    if doc.get('type') == 'x'\n        yield doc['_id'], None\n",
    map_not_a_function="42",
    reduce_sum="def r(keys, values, rereduce):\n    return sum(values)\n",
    reduce_count="def r(keys, values, rereduce):\n    return sum(values) if rereduce else len(values)\n",
    reduce_keys_len="def r(keys, values, rereduce):\n    return -1 if rereduce else len(keys)\n",
    reduce_throw="def r(keys, values):\n    raise RuntimeError('reduce failed')\n",
    reduce_huge="def r(keys, values):\n    return 'x' * 10000\n",
    filter_ok="def f(doc, req):\n    return doc.get('ok')\n",
    validate_need_ok=("def v(new_doc, old_doc, user_ctx, sec_obj):\n    if not new_doc.get('ok'):\n"
                      "        raise Forbidden('need ok')\n"),
    show_hello="def s(doc, req):\n    return {'body': 'hello ' + doc['_id']}\n",
    update_stamp="def u(doc, req):\n    return [{'_id': req['id'], 'stamped': True}, 'stamped ' + req['id']]\n",
    map_filter_ok="def m(doc):\n    if doc.get('ok'):\n        yield doc['_id'], None\n",
    # Python dicts cannot be frozen cheaply: a function that changes the doc changes it for the next one
    map_mutate_doc=None,
    map_require_lib="def fun(doc):\n    yield doc['_id'], require('views/lib/answer').value\n",
    lib_answer="value = 42\n",
    list_rows=("def l(head, req):\n    start({'headers': {'X-L': '1'}})\n    while True:\n        row = get_row()\n"
               "        if row is None:\n            break\n        send('<' + row['key'] + '>')\n    return 'end'\n"),
)

# couchpy 1.2 runs the map/reduce subset only (no ddoc, add_lib, reduce_limit; one reduce function per call),
# logs a traceback instead of couchjs's message, and exits on a malformed line or an unknown command.
COUCHPY = Dialect(**{**PY.__dict__, "name": "couchpy", "map_emit_const": "def fun(doc):\n    yield 'const', 1\n",
                     "exception_log": "Traceback", "skip": frozenset({
                         "reduce", "rereduce_with_and_without_trailing_argument", "reduce_limit",
                         "syntax_error_is_a_compilation_error", "not_a_function_is_a_compilation_error",
                         "malformed_line_answers_an_error", "unknown_command_answers_an_error",
                         "throwing_function_is_isolated", "reduce_error_is_logged_and_nulled",
                         "ddoc_filters", "ddoc_view_as_filter", "ddoc_validate_doc_update", "ddoc_show",
                         "ddoc_update", "ddoc_missing_function", "ddoc_list", "add_lib_and_require"})})


@pytest.mark.parametrize("interpreter", INTERPRETERS)
@pytest.mark.parametrize("check", CHECKS, ids=check_id)
def test_conformance(check, interpreter):
    run_check(check, [interpreter, str(PYTHON_QS)], PY)


@pytest.mark.parametrize("check", CHECKS, ids=check_id)
def test_couchpy_conformance_subset(check):
    # CPython's couchpy only: couchpy-pypy runs the same code (test_couchpy_map_reduce_subset covers it)
    couchpy = find_couchpy({})
    if couchpy is None:
        pytest.skip("couchpy (CouchDB==1.2) not installed")
    run_check(check, [couchpy], COUCHPY)


# -- a live CouchDB 3.5 that has dragnet_qs.py registered (COUCHDB_QUERY_SERVER_PYTHON3/PYPY3) -------

@pytest.mark.live
@pytest.mark.parametrize("language", ["python3", "pypy3"])
def test_live_couchdb_runs_dragnet_qs(live_db, language):
    from dragnet.couchdb.client import CouchError, db_path

    couch, name = live_db
    db = db_path(name)
    couch.put(db, params={"q": "2"})
    docs = [{"_id": f"d{i}", "n": i, "name": "Шевченко" if i % 2 else "x", "bad": i == 3} for i in range(10)]
    couch.post(f"{db}/_bulk_docs", {"docs": docs})
    ddoc = {
        "language": language,
        "views": {"v": {"map": "def fun(doc):\n    if doc.get('bad'):\n        raise ValueError('bad ' + doc['_id'])\n"
                               "    yield doc['name'], doc['n']\n",
                        "reduce": "def r(keys, values, rereduce):\n    return sum(values)\n"}},
        "validate_doc_update": "def v(new, old, ctx, sec):\n    if new.get('forbid'):\n        raise Forbidden('no forbid')\n",
        "filters": {"odd": "lambda doc, req: doc.get('n', 0) % 2 == 1"},
        "shows": {"hi": "def s(doc, req):\n    return 'hi ' + doc['_id']\n"},
    }
    couch.put(f"{db}/_design/t", ddoc)  # accepted even when the language is unknown
    try:
        rows = couch.get(f"{db}/_design/t/_view/v", params={"reduce": "false"})["rows"]
    except CouchError as exc:
        if "unknown_query_language" in str(exc):
            pytest.skip(f"{language} is not registered with this CouchDB: {exc}")
        raise
    assert sorted(r["id"] for r in rows) == [f"d{i}" for i in range(10) if i != 3]  # d3 raised: no rows
    grouped = couch.get(f"{db}/_design/t/_view/v", params={"group": "true"})["rows"]
    assert {r["key"]: r["value"] for r in grouped} == {"x": 0 + 2 + 4 + 6 + 8, "Шевченко": 1 + 5 + 7 + 9}
    resp = couch.request("PUT", f"{db}/forbidden", json={"forbid": True}, ok=(403,))
    assert resp.json() == {"error": "forbidden", "reason": "no forbid"}
    changes = couch.get(f"{db}/_changes", params={"filter": "t/odd"})["results"]
    assert sorted(c["id"] for c in changes) == ["d1", "d3", "d5", "d7", "d9"]
    assert couch.request("GET", f"{db}/_design/t/_show/hi/d1").text == "hi d1"
    # CouchDB 3.5 compiles map functions when the design doc is saved
    resp = couch.request("PUT", f"{db}/_design/broken", ok=(400,),
                         json={"language": language, "views": {"v": {"map": "def fun(doc:\n    yield 1, 1\n"}}})
    assert resp.json()["error"] == "compilation_error"
