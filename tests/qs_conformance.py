"""A conformance suite for CouchDB query servers, driving a real process over stdin/stdout.

Every check is a plain function `check(server, dialect)`: `server` is a fresh `QueryServer` (any argv that
speaks the protocol), `dialect` says which source strings to send (JavaScript, Python, ...). Test modules
parametrise over `CHECKS`:

    @pytest.mark.parametrize("check", CHECKS, ids=check_id)
    def test_conformance(check):
        run_check(check, ["query_servers/chakra/build/dragnet-chakra"], JS)

Message shapes are CouchDB 3.5's (couch_query_servers / couch_os_process); expected answers are those of
couchjs (share/server/*.js). A dialect leaves a source as None, or names a check in `skip`, when its
language has no such feature; the check then skips with the reason.
"""

from __future__ import annotations

import json
import os
import select
import shlex
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import pytest

DEFAULT_TIMEOUT = 20.0


class QueryServerGone(AssertionError):
    """The process exited or stayed silent while an answer was due."""


@dataclass
class Reply:
    """What one command produced: the `["log", msg]` lines before it, then the answer."""

    logs: list[str]
    answer: Any
    raw: bytes  # the answer line as sent, without its newline


class QueryServer:
    """A query-server process with line-level access to its protocol.

    Lines are read with a timeout (select on the pipe), so a hung server fails the check instead of
    hanging the test run.
    """

    def __init__(self, argv: Sequence[str], env: dict | None = None, timeout: float = DEFAULT_TIMEOUT):
        self.argv = list(argv)
        self.timeout = timeout
        self.proc = subprocess.Popen(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env, bufsize=0)
        self._buf = b""

    # -- raw lines
    def send_raw(self, line: bytes | str) -> None:
        if isinstance(line, str):
            line = line.encode("utf-8")
        try:
            self.proc.stdin.write(line + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError as e:
            raise QueryServerGone(f"{self.argv[0]} closed its stdin: {self.stderr_tail()}") from e

    def read_raw(self) -> bytes:
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + self.timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise QueryServerGone(f"no answer from {self.argv[0]} within {self.timeout} s")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise QueryServerGone(
                    f"{self.argv[0]} exited (code {self.proc.wait(5)}) with no answer: {self.stderr_tail()}")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def read_json(self) -> Any:
        raw = self.read_raw()
        try:
            return json.loads(raw)
        except ValueError as e:
            raise AssertionError(f"not a JSON line from {self.argv[0]}: {raw[:200]!r}") from e

    # -- commands
    def send(self, *cmd: Any) -> None:
        self.send_raw(json.dumps(list(cmd), ensure_ascii=False))

    def reply(self) -> Reply:
        """Reads log lines until the answer."""
        logs = []
        while True:
            raw = self.read_raw()
            try:
                value = json.loads(raw)
            except ValueError as e:
                raise AssertionError(f"not a JSON line from {self.argv[0]}: {raw[:200]!r}") from e
            if isinstance(value, list) and len(value) == 2 and value[0] == "log":
                logs.append(value[1])
                continue
            return Reply(logs, value, raw)

    def call(self, *cmd: Any) -> Reply:
        self.send(*cmd)
        return self.reply()

    def ask(self, *cmd: Any) -> Any:
        """Sends a command that must produce no log line; returns its answer."""
        r = self.call(*cmd)
        assert r.logs == [], f"unexpected log lines for {cmd[0]}: {r.logs}"
        return r.answer

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr_tail(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        return self.proc.stderr.read()[-2000:].decode("utf-8", "replace")

    def close(self) -> int:
        if self.proc.stdin and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        try:
            return self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
        finally:
            self.proc.stdout.close()
            self.proc.stderr.close()

    def __enter__(self) -> "QueryServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass(frozen=True)
class Dialect:
    """Source strings for one query-server language; None where the language has no equivalent.

    Every map source reads `doc["_id"]`/`doc._id` and behaves as its comment says; they are the minimum a
    server must run to be checked. `exception_log` is the prefix of the log line a map function that throws
    must produce (couchjs: "function raised exception "), `skip` names checks that do not apply.
    """

    name: str
    map_emit_v: str                 # emit(doc._id, doc.v)
    map_emit_const: str             # emit("const", 1)
    map_log: str                    # log("saw " + doc._id); emit(doc._id, null)
    map_throw_if_bad: str           # throw an exception when doc.bad is truthy, else emit(doc._id, 1)
    map_emit_text: str              # emit(doc.text, [doc.text])
    map_emit_blob_len: str          # emit(doc._id, length of doc.blob) (doc.blob is ASCII)
    map_syntax_error: str           # does not compile
    map_not_a_function: str         # compiles to something that is not a function
    reduce_sum: str                 # sum(values)
    reduce_count: str               # rereduce ? sum(values) : values.length
    reduce_keys_len: str            # rereduce ? -1 : number of keys
    reduce_throw: str               # always throws
    reduce_huge: str                # returns a string of 10,000 "x"
    filter_ok: str                  # (doc, req) -> doc.ok is truthy
    validate_need_ok: str           # throws {"forbidden": "need ok"} unless newDoc.ok
    show_hello: str                 # (doc, req) -> {"body": "hello " + doc._id}
    update_stamp: str               # (doc, req) -> [{"_id": req.id, "stamped": true}, "stamped " + req.id]
    map_filter_ok: str              # map function emitting only when doc.ok (for ddoc "views" filters)
    map_mutate_doc: str | None = None   # sets doc.v = 99 then emit(doc._id, doc.v)
    map_require_lib: str | None = None  # emit(doc._id, require("views/lib/answer").value)
    lib_answer: str | None = None       # module source: exports.value = 42
    list_rows: str | None = None        # start({headers: {"X-L": "1"}}); send "<" + row.key + ">" per row; return "end"
    exception_log: str = "function raised exception "
    skip: frozenset = field(default_factory=frozenset)


JS = Dialect(
    name="javascript",
    map_emit_v="function(doc) { emit(doc._id, doc.v); }",
    map_emit_const='function(doc) { emit("const", 1); }',
    map_log='function(doc) { log("saw " + doc._id); emit(doc._id, null); }',
    map_throw_if_bad=("function (doc) {\n  if (doc.bad) {\n    throw new Error(\"bad doc \" + doc._id);\n  }\n"
                      "  emit(doc._id, 1);\n}"),
    map_emit_text="function(doc) { emit(doc.text, [doc.text]); }",
    map_emit_blob_len="function(doc) { emit(doc._id, doc.blob.length); }",
    map_syntax_error='function (doc) {\n  if (doc.type === "x" {\n    emit(doc._id, null);\n  }\n}',
    map_not_a_function="42",
    reduce_sum="function(keys, values, rereduce) { return sum(values); }",
    reduce_count="function(keys, values, rereduce) { return rereduce ? sum(values) : values.length; }",
    reduce_keys_len="function(keys, values, rereduce) { return rereduce ? -1 : keys.length; }",
    reduce_throw='function(keys, values) {\n  throw new Error("reduce failed");\n}',
    reduce_huge='function(keys, values) { return new Array(10001).join("x"); }',
    filter_ok="function(doc, req) { return doc.ok; }",
    validate_need_ok=('function(newDoc, oldDoc, userCtx, secObj) {\n'
                      '  if (!newDoc.ok) throw({forbidden: "need ok"});\n}'),
    show_hello='function(doc, req) { return {body: "hello " + doc._id}; }',
    update_stamp=('function(doc, req) {\n  return [{_id: req.id, stamped: true}, "stamped " + req.id];\n}'),
    map_filter_ok="function(doc) { if (doc.ok) emit(doc._id, null); }",
    map_mutate_doc="function(doc) { doc.v = 99; emit(doc._id, doc.v); }",
    map_require_lib='function(doc) { emit(doc._id, require("views/lib/answer").value); }',
    lib_answer="exports.value = 42;",
    list_rows=('function(head, req) {\n  start({headers: {"X-L": "1"}});\n  var row;\n'
               '  while ((row = getRow())) { send("<" + row.key + ">"); }\n  return "end";\n}'),
)

RESET_CONFIG = {"reduce_limit": True, "timeout": 5000}


def need(dialect: Dialect, *attrs: str) -> list[str]:
    values = [getattr(dialect, a) for a in attrs]
    missing = [a for a, v in zip(attrs, values) if v is None]
    if missing:
        pytest.skip(f"{dialect.name} has no {', '.join(missing)}")
    return values


def setup_map(server: QueryServer, *sources: str) -> None:
    assert server.ask("reset", RESET_CONFIG) is True
    for src in sources:
        assert server.ask("add_fun", src) is True


def assert_error(answer: Any, error: str | None = None) -> None:
    assert isinstance(answer, list) and len(answer) == 3 and answer[0] == "error", f"not an error: {answer!r}"
    assert isinstance(answer[1], str) and isinstance(answer[2], str), answer
    if error is not None:
        assert answer[1] == error, answer


def assert_still_serving(server: QueryServer) -> None:
    assert server.ask("reset", {}) is True
    assert server.alive()


# ---------------------------------------------------------------- checks: views


def check_reset_answers_true(server: QueryServer, d: Dialect) -> None:
    assert server.ask("reset", RESET_CONFIG) is True
    assert server.ask("reset") is True
    assert server.ask("reset", {}) is True


def check_map_single_function(server: QueryServer, d: Dialect) -> None:
    setup_map(server, d.map_emit_v)
    assert server.ask("map_doc", {"_id": "a", "v": 5}) == [[["a", 5]]]
    assert server.ask("map_doc", {"_id": "b", "v": {"nested": [1, None, "x"]}}) == [[["b", {"nested": [1, None, "x"]}]]]
    assert server.ask("map_doc", {"_id": "c"}) == [[["c", None]]]  # undefined value -> null


def check_map_several_functions_in_order(server: QueryServer, d: Dialect) -> None:
    setup_map(server, d.map_emit_v, d.map_emit_const, d.map_emit_v)
    assert server.ask("map_doc", {"_id": "a", "v": 1}) == [[["a", 1]], [["const", 1]], [["a", 1]]]


def check_reset_forgets_functions(server: QueryServer, d: Dialect) -> None:
    setup_map(server, d.map_emit_v, d.map_emit_const)
    setup_map(server, d.map_emit_const)
    assert server.ask("map_doc", {"_id": "a"}) == [[["const", 1]]]
    assert server.ask("reset", {}) is True
    assert server.ask("map_doc", {"_id": "a"}) == []


def check_log_lines_come_before_the_answer(server: QueryServer, d: Dialect) -> None:
    setup_map(server, d.map_log, d.map_emit_v)
    r = server.call("map_doc", {"_id": "doc-1", "v": 2})
    assert r.logs == ["saw doc-1"]
    assert r.answer == [[["doc-1", None]], [["doc-1", 2]]]
    r = server.call("map_doc", {"_id": "doc-2", "v": 3})
    assert r.logs == ["saw doc-2"]


def check_throwing_function_is_isolated(server: QueryServer, d: Dialect) -> None:
    setup_map(server, d.map_emit_v, d.map_throw_if_bad, d.map_emit_const)
    r = server.call("map_doc", {"_id": "bad-1", "v": 1, "bad": True})
    assert r.answer == [[["bad-1", 1]], [], [["const", 1]]]
    assert len(r.logs) == 1, r.logs
    assert r.logs[0].startswith(d.exception_log), r.logs[0]
    assert r.logs[0].endswith(" with doc._id bad-1"), r.logs[0]
    # the next doc maps normally, without a log line
    assert server.ask("map_doc", {"_id": "good-1", "v": 2}) == [[["good-1", 2]], [["good-1", 1]], [["const", 1]]]


def check_map_cannot_change_the_doc(server: QueryServer, d: Dialect) -> None:
    (src,) = need(d, "map_mutate_doc")
    setup_map(server, src, d.map_emit_v)
    r = server.call("map_doc", {"_id": "m", "v": 1})
    # couchjs freezes the doc: the assignment is ignored (sloppy mode), the next function sees v = 1
    assert r.answer == [[["m", 1]], [["m", 1]]], r


def check_syntax_error_is_a_compilation_error(server: QueryServer, d: Dialect) -> None:
    assert server.ask("reset", RESET_CONFIG) is True
    answer = server.ask("add_fun", d.map_syntax_error)
    assert_error(answer, "compilation_error")
    assert d.map_syntax_error in answer[2]  # couchjs quotes the source
    assert_still_serving(server)


def check_not_a_function_is_a_compilation_error(server: QueryServer, d: Dialect) -> None:
    assert server.ask("reset", RESET_CONFIG) is True
    answer = server.ask("add_fun", d.map_not_a_function)
    assert_error(answer, "compilation_error")
    assert_still_serving(server)


def check_malformed_line_answers_an_error(server: QueryServer, d: Dialect) -> None:
    setup_map(server, d.map_emit_v)
    server.send_raw(b'["map_doc", {"_id": "x"')
    assert_error(server.reply().answer)
    server.send_raw(b"this is not json")
    assert_error(server.reply().answer)
    assert server.ask("map_doc", {"_id": "after", "v": 1}) == [[["after", 1]]]


def check_unknown_command_answers_an_error(server: QueryServer, d: Dialect) -> None:
    assert server.ask("reset", {}) is True
    answer = server.ask("frobnicate", 1, 2)
    assert_error(answer, "unknown_command")
    assert "frobnicate" in answer[2]
    assert_still_serving(server)


def check_large_document(server: QueryServer, d: Dialect) -> None:
    setup_map(server, d.map_emit_blob_len, d.map_emit_v)
    blob = "".join(chr(ord("a") + i % 26) for i in range(5 * 1024 * 1024))
    doc = {"_id": "big", "blob": blob, "v": list(range(20000)), "more": {str(i): {"n": i} for i in range(5000)}}
    r = server.call("map_doc", doc)
    assert r.logs == []
    assert r.answer[0] == [["big", len(blob)]]
    assert r.answer[1] == [["big", list(range(20000))]]


def check_non_ascii_text_round_trips(server: QueryServer, d: Dialect) -> None:
    setup_map(server, d.map_emit_text)
    texts = [
        "Декларація про майно — Київ, вул. Хрещатик, 1; ґанок, їжак, єнот",
        "emoji 😀🇺🇦 and a CJK 漢字 and combining é",
        "quotes \" backslash \\ tab \t newline \n nul-free control \u0001",
    ]
    for text in texts:
        r = server.call("map_doc", {"_id": "u", "text": text})
        assert r.answer == [[[text, [text]]]], r.answer
        r.raw.decode("utf-8")  # valid UTF-8 on the wire
    # surrogate pairs sent as \u escapes (as an ASCII-only encoder would) arrive as one character
    server.send_raw('["map_doc", {"_id": "s", "text": "\\ud83d\\ude00 \\u0423\\u043a\\u0440"}]')
    assert server.reply().answer == [[["😀 Укр", ["😀 Укр"]]]]


# ---------------------------------------------------------------- checks: reduce


def check_reduce(server: QueryServer, d: Dialect) -> None:
    assert server.ask("reset", RESET_CONFIG) is True
    kvs = [[["a", "doc1"], 1], [["b", "doc2"], 2], [["c", "doc3"], 3]]
    assert server.ask("reduce", [d.reduce_sum], kvs) == [True, [6]]
    assert server.ask("reduce", [d.reduce_sum, d.reduce_count, d.reduce_keys_len], kvs) == [True, [6, 3, 3]]


def check_rereduce_with_and_without_trailing_argument(server: QueryServer, d: Dialect) -> None:
    assert server.ask("reset", RESET_CONFIG) is True
    assert server.ask("rereduce", [d.reduce_sum, d.reduce_count], [3, 4, 5]) == [True, [12, 12]]
    # CouchDB 3.5 may append an argument to rereduce; it must be accepted and ignored
    assert server.ask("rereduce", [d.reduce_sum, d.reduce_keys_len], [3, 4, 5], None) == [True, [12, -1]]
    assert server.ask("rereduce", [d.reduce_sum], [1, 2], {"extra": True}) == [True, [3]]


def check_reduce_error_is_logged_and_nulled(server: QueryServer, d: Dialect) -> None:
    assert server.ask("reset", RESET_CONFIG) is True
    r = server.call("reduce", [d.reduce_sum, d.reduce_throw], [[["k", "id"], 2]])
    assert r.answer == [True, [2, None]]
    assert len(r.logs) == 1 and r.logs[0].startswith(d.exception_log), r.logs


def check_reduce_limit(server: QueryServer, d: Dialect) -> None:
    kvs = [[["k", "id"], 1]]
    assert server.ask("reset", {"reduce_limit": True}) is True
    assert_error(server.ask("reduce", [d.reduce_huge], kvs), "reduce_overflow_error")
    assert server.ask("reset", {"reduce_limit": "log"}) is True
    r = server.call("reduce", [d.reduce_huge], kvs)
    assert r.answer == [True, ["x" * 10000]]
    assert len(r.logs) == 1 and r.logs[0].startswith("reduce_overflow_error"), r.logs
    assert server.ask("reset", {"reduce_limit": False}) is True
    assert server.ask("reduce", [d.reduce_huge], kvs) == [True, ["x" * 10000]]


# ---------------------------------------------------------------- checks: design documents

DDOC_ID = "_design/conformance"


def _ddoc(d: Dialect) -> dict:
    doc = {
        "_id": DDOC_ID,
        "language": d.name,
        "filters": {"ok": d.filter_ok},
        "validate_doc_update": d.validate_need_ok,
        "shows": {"hello": d.show_hello},
        "updates": {"stamp": d.update_stamp},
        "views": {"okview": {"map": d.map_filter_ok}},
    }
    if d.list_rows is not None:
        doc["lists"] = {"rows": d.list_rows}
    return doc


def _new_ddoc(server: QueryServer, d: Dialect) -> None:
    assert server.ask("reset", RESET_CONFIG) is True
    assert server.ask("ddoc", "new", DDOC_ID, _ddoc(d)) is True


def check_ddoc_filters(server: QueryServer, d: Dialect) -> None:
    _new_ddoc(server, d)
    docs = [{"_id": "a", "ok": True}, {"_id": "b", "ok": False}, {"_id": "c"}]
    req = {"query": {}, "method": "GET", "headers": {}}
    assert server.ask("ddoc", DDOC_ID, ["filters", "ok"], [docs, req]) == [True, [True, False, False]]


def check_ddoc_view_as_filter(server: QueryServer, d: Dialect) -> None:
    _new_ddoc(server, d)
    docs = [{"_id": "a", "ok": True}, {"_id": "b"}]
    assert server.ask("ddoc", DDOC_ID, ["views", "okview", "map"], [docs]) == [True, [True, False]]


def check_ddoc_validate_doc_update(server: QueryServer, d: Dialect) -> None:
    _new_ddoc(server, d)
    user = {"name": "bob", "roles": []}
    assert server.ask("ddoc", DDOC_ID, ["validate_doc_update"], [{"_id": "x", "ok": True}, None, user, {}]) == 1
    assert server.ask("ddoc", DDOC_ID, ["validate_doc_update"], [{"_id": "x"}, None, user, {}]) == {
        "forbidden": "need ok"}


def check_ddoc_show(server: QueryServer, d: Dialect) -> None:
    _new_ddoc(server, d)
    req = {"method": "GET", "path": ["db", "_design", "conformance", "_show", "hello", "doc1"],
           "query": {}, "headers": {"Accept": "*/*"}}
    assert server.ask("ddoc", DDOC_ID, ["shows", "hello"], [{"_id": "doc1"}, req]) == ["resp", {"body": "hello doc1"}]


def check_ddoc_update(server: QueryServer, d: Dialect) -> None:
    _new_ddoc(server, d)
    req = {"method": "POST", "id": "new-doc", "query": {}, "headers": {}}
    assert server.ask("ddoc", DDOC_ID, ["updates", "stamp"], [None, req]) == [
        "up", {"_id": "new-doc", "stamped": True}, {"body": "stamped new-doc"}]


def check_ddoc_missing_function(server: QueryServer, d: Dialect) -> None:
    _new_ddoc(server, d)
    answer = server.ask("ddoc", DDOC_ID, ["shows", "nope"], [{"_id": "x"}, {}])
    assert_error(answer, "not_found")
    assert_still_serving(server)


def check_ddoc_list(server: QueryServer, d: Dialect) -> None:
    (_,) = need(d, "list_rows")
    _new_ddoc(server, d)
    head = {"total_rows": 2, "offset": 0}
    req = {"method": "GET", "query": {}, "headers": {}}
    start = server.ask("ddoc", DDOC_ID, ["lists", "rows"], [head, req])
    assert start[0] == "start" and start[1] == [] and start[2]["headers"]["X-L"] == "1", start
    assert server.ask("list_row", {"key": "k1", "value": 1}) == ["chunks", ["<k1>"]]
    assert server.ask("list_row", {"key": "k2", "value": 2}) == ["chunks", ["<k2>"]]
    assert server.ask("list_end") == ["end", ["end"]]
    assert_still_serving(server)


def check_add_lib_and_require(server: QueryServer, d: Dialect) -> None:
    src, lib = need(d, "map_require_lib", "lib_answer")
    assert server.ask("reset", RESET_CONFIG) is True
    assert server.ask("add_lib", {"answer": lib}) is True
    assert server.ask("add_fun", src) is True
    assert server.ask("map_doc", {"_id": "r"}) == [[["r", 42]]]


CHECKS: list[Callable[[QueryServer, Dialect], None]] = [
    check_reset_answers_true,
    check_map_single_function,
    check_map_several_functions_in_order,
    check_reset_forgets_functions,
    check_log_lines_come_before_the_answer,
    check_throwing_function_is_isolated,
    check_map_cannot_change_the_doc,
    check_syntax_error_is_a_compilation_error,
    check_not_a_function_is_a_compilation_error,
    check_malformed_line_answers_an_error,
    check_unknown_command_answers_an_error,
    check_large_document,
    check_non_ascii_text_round_trips,
    check_reduce,
    check_rereduce_with_and_without_trailing_argument,
    check_reduce_error_is_logged_and_nulled,
    check_reduce_limit,
    check_ddoc_filters,
    check_ddoc_view_as_filter,
    check_ddoc_validate_doc_update,
    check_ddoc_show,
    check_ddoc_update,
    check_ddoc_missing_function,
    check_ddoc_list,
    check_add_lib_and_require,
]

# Checks where dragnet's servers deliberately differ from couchjs, which exits instead of answering.
DIVERGES_FROM_COUCHJS = frozenset({"malformed_line_answers_an_error", "unknown_command_answers_an_error"})


def check_id(check: Callable) -> str:
    return check.__name__.removeprefix("check_")


def run_check(check: Callable[[QueryServer, Dialect], None], argv: Sequence[str], dialect: Dialect,
              env: dict | None = None) -> None:
    """Runs one check against a fresh process; also fails if the process dies or writes garbage."""
    if check_id(check) in dialect.skip:
        pytest.skip(f"{check_id(check)} does not apply to {dialect.name}")
    with QueryServer(argv, env=env) as server:
        check(server, dialect)
        assert server.alive(), f"{argv[0]} exited: {server.stderr_tail()}"


def transcript(argv: Sequence[str], lines: Sequence[str], env: dict | None = None,
               timeout: float = DEFAULT_TIMEOUT) -> list[list[Any]]:
    """Sends each line and returns, per line, every JSON line written up to and including the answer."""
    out = []
    with QueryServer(argv, env=env, timeout=timeout) as server:
        for line in lines:
            server.send_raw(line)
            got = []
            while True:
                value = server.read_json()
                got.append(value)
                if not (isinstance(value, list) and len(value) == 2 and value[0] == "log"):
                    break
            out.append(got)
    return out


# ---------------------------------------------------------------- against the real couchjs


def couchjs_argv() -> list[str]:
    cmd = os.environ.get("DRAGNET_COUCHJS")
    if not cmd:
        pytest.skip("DRAGNET_COUCHJS is not set (e.g. '/opt/couchdb/bin/couchjs /opt/couchdb/share/server/main.js')")
    return shlex.split(cmd)


def couchjs_session() -> list[str]:
    """A CouchDB 3.5-shaped session touching every command couchjs and dragnet's JS servers share."""
    lines = [
        ["reset", {"reduce_limit": True, "timeout": 5000}],
        ["add_lib", {"answer": JS.lib_answer}],
        ["add_fun", JS.map_emit_v], ["add_fun", JS.map_log], ["add_fun", JS.map_throw_if_bad],
        ["add_fun", JS.map_mutate_doc], ["add_fun", JS.map_require_lib],
        ["add_fun", 'function(doc) { throw "str " + doc._id; }'],
        ["add_fun", "function(doc) { throw 42; }"], ["add_fun", "function(doc) { throw false; }"],
        ["add_fun", 'function(doc) { throw {reason: doc._id, list: [1, "a", null]}; }'],
        ["add_fun", "function(doc) { if (doc.text) emit([doc.text, doc.text.length], {t: doc.text}); }"],
        ["map_doc", {"_id": "a", "v": 1}],
        ["map_doc", {"_id": "b", "v": [1.5, -2, 1e21, 0.1], "bad": True}],
        ["map_doc", {"_id": "c", "text": "Привіт, світе 😀 ґ \u00e9 \"q\" \\ \t"}],
        ["reduce", [JS.reduce_sum, JS.reduce_count, JS.reduce_keys_len, JS.reduce_throw],
         [[["k1", "a"], 1], [["k2", "b"], 2.5]]],
        ["rereduce", [JS.reduce_sum, JS.reduce_count], [1, 2, 3]],
        ["rereduce", [JS.reduce_sum], [1, 2, 3], None],
        ["reset", {"reduce_limit": "log"}],
        ["reduce", [JS.reduce_huge], [[["k", "a"], 1]]],
        ["reset", {"reduce_limit": True}],
        ["reduce", [JS.reduce_huge], [[["k", "a"], 1]]],
        ["add_fun", JS.map_not_a_function],
        ["add_fun", "function named(doc) { emit(1, 2); }"],
        ["add_fun", "function(doc) { emit(1, 2); };"],
        ["add_fun", "// a comment first\nvar k = 3;\n(doc) => { emit(k, 2); } // and after"],
        ["map_doc", {"_id": "d"}],
        ["ddoc", "new", "_design/x", {
            "_id": "_design/x", "filters": {"ok": JS.filter_ok}, "validate_doc_update": JS.validate_need_ok,
            "shows": {"hello": JS.show_hello}, "updates": {"stamp": JS.update_stamp},
            "views": {"v": {"map": JS.map_filter_ok}}, "lists": {"rows": JS.list_rows}}],
        ["ddoc", "_design/x", ["filters", "ok"], [[{"ok": 1}, {"ok": 0}, {}], {"query": {}}]],
        ["ddoc", "_design/x", ["views", "v", "map"], [[{"ok": 1}, {}]]],
        ["ddoc", "_design/x", ["validate_doc_update"], [{"ok": True}, None, {"name": None}, {}]],
        ["ddoc", "_design/x", ["validate_doc_update"], [{}, None, {"name": None}, {}]],
        ["ddoc", "_design/x", ["shows", "hello"], [{"_id": "d"}, {"path": ["db", "_design", "x"], "headers": {}}]],
        ["ddoc", "_design/x", ["updates", "stamp"], [None, {"method": "PUT", "id": "n"}]],
        ["ddoc", "_design/x", ["updates", "stamp"], [None, {"method": "GET", "id": "n"}]],
        ["ddoc", "_design/x", ["shows", "missing"], [None, {"path": [], "headers": {}}]],
        ["ddoc", "_design/x", ["lists", "rows"], [{"total_rows": 1}, {"query": {}, "headers": {}}]],
        ["list_row", {"key": "k"}],
        ["list_end"],
    ]
    return [json.dumps(line, ensure_ascii=False) for line in lines]
