"""`dragnet servers --check NAME`: does a query server answer CouchDB's query-server protocol as CouchDB 3.5
expects?

The cases are data (pure): each is a list of steps, a command as CouchDB 3.5 sends it and what must come
back, written from the protocol's documentation (docs.couchdb.org, "Query Server Protocol") and from what
CouchDB 3.5 sends (../shared/fixtures, a live node's couch_os_process). The functions a case sends are
roles ("a map function emitting doc._id and doc.v") with one source per dialect family: dragnet has
JavaScript and Python; for any other dialect they are files `<role>.<ext>` of a folder the user gives
(`--functions DIR`). A case whose functions are missing, or which needs design-doc functions a server does
not claim, is skipped with the reason.

The runner (I/O) starts a fresh process per case over dragnet.servers.protocol, sends the steps in order
and stops a case at the first step whose answer differs, keeping what was expected and what came back.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from dragnet.errors import DragnetError
from dragnet.servers import dialects
from dragnet.servers.discovery import ServerSpec
from dragnet.servers.protocol import ProtocolError, QueryServerError, QueryServerProcess, QueryServerTimeout, encode

# CouchDB 3.5's reset (couch_proc_manager:get_proc_config/0 with the defaults)
RESET = ["reset", {"reduce_limit": True, "timeout": 5000}]
DEFAULT_TIMEOUT_S = 5.0   # [couchdb] os_process_timeout's default
DDOC_ID = "_design/conformance"
BIG_DOC_BYTES = 16 * 1024 * 1024


# -- what comes back, and what was expected (pure) --------------------------------------------------

@dataclass(frozen=True)
class Reply:
    """One command's outcome: the answer, or an ["error", id, reason] answer, or the process exited or
    stayed silent; with the log lines before it and whether the process still runs afterwards."""

    answer: Any = None
    error: tuple[str, Any] | None = None      # (id, reason)
    gone: str = ""                            # "exited: ..." / "timeout: ..." / "bad answer: ..."
    logs: tuple[str, ...] = ()
    alive: bool = True
    seconds: float = 0.0

    def describe(self) -> str:
        if self.gone:
            return self.gone
        logs = f"log {list(self.logs)!r}, then " if self.logs else ""
        if self.error is not None:
            return f"{logs}error {self.error[0]}: {_short(self.error[1])}"
        return logs + _short(self.answer)


def _short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text):,} chars)"


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality with every number compared as the IEEE double CouchDB's JavaScript would hold."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b) or (math.isnan(float(a)) and math.isnan(float(b)))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@dataclass(frozen=True)
class Expect:
    """What must come back: `text` says it, `ok(reply)` judges it."""

    text: str
    ok: Callable[[Reply], bool]


def answer(value: Any) -> Expect:
    return Expect(_short(value), lambda r: not r.gone and r.error is None and not r.logs and json_equal(r.answer, value))


def answer_with_log(value: Any, contains: str = "") -> Expect:
    """The answer after exactly one log line (containing `contains`)."""
    return Expect(f"one log line{f' with {contains!r}' if contains else ''}, then {_short(value)}",
                  lambda r: not r.gone and r.error is None and len(r.logs) == 1 and contains in r.logs[0]
                  and json_equal(r.answer, value))


def error(error_id: str | None = None) -> Expect:
    """An ["error", id, reason] answer, the process serving on."""
    return Expect(f"error {error_id or '<any>'} and the process serving on",
                  lambda r: r.error is not None and (error_id is None or r.error[0] == error_id) and r.alive)


def error_or_exit() -> Expect:
    return Expect("an error answer (exiting afterwards is allowed, as couchjs does)",
                  lambda r: r.error is not None or r.gone.startswith("exited"))


def error_then_exit(error_id: str | None = None) -> Expect:
    """An error answer (of `error_id`: couchjs's) and then the process exits; exiting without an answer
    passes too (CouchDB's QuickJS does)."""
    return Expect(f"error {error_id or '<any>'} then exit, or exit without an answer",
                  lambda r: not r.alive and (r.gone.startswith("exited") if r.error is None
                                             else error_id is None or r.error[0] == error_id))


def shaped(text: str, pred: Callable[[Any], bool]) -> Expect:
    return Expect(text, lambda r: not r.gone and r.error is None and pred(r.answer))


@dataclass(frozen=True)
class Step:
    send: Any             # a JSON value, or bytes sent as they are (a malformed line)
    expect: Expect


@dataclass(frozen=True)
class Case:
    """name, what it checks, the function roles it sends, whether it needs design-doc support, and
    `steps(functions) -> [Step]`."""

    name: str
    title: str
    roles: tuple[str, ...]
    steps: Callable[[dict], list[Step]]
    ddoc: bool = False


# -- the functions a case sends, per dialect family ---------------------------------------------------

JS_FUNCTIONS = {
    "map_emit_v": "function(doc) { emit(doc._id, doc.v); }",
    "map_emit_const": 'function(doc) { emit("const", 1); }',
    "map_emit_three": "function(doc) { emit(doc._id, 1); emit(doc._id, 2); emit([doc._id, 3], null); }",
    "map_nothing": "function(doc) {}",
    "map_log": 'function(doc) { log("saw " + doc._id); emit(doc._id, null); }',
    "map_throw_if_bad": ('function(doc) {\n  if (doc.bad) throw new Error("bad doc " + doc._id);\n'
                         "  emit(doc._id, 1);\n}"),
    "map_emit_text": "function(doc) { emit(doc.text, [doc.text]); }",
    "map_emit_blob_len": "function(doc) { emit(doc._id, doc.blob.length); }",
    "map_syntax_error": 'function (doc) {\n  if (doc.type === "x" {\n    emit(doc._id, null);\n  }\n}',
    "reduce_sum": "function(keys, values, rereduce) { return sum(values); }",
    "reduce_count": "function(keys, values, rereduce) { return rereduce ? sum(values) : values.length; }",
    "reduce_throw": 'function(keys, values) { throw new Error("reduce failed"); }',
    "filter_ok": "function(doc, req) { return !!doc.ok; }",
    "validate_need_ok": ("function(newDoc, oldDoc, userCtx, secObj) {\n"
                         '  if (!newDoc.ok) throw({forbidden: "need ok"});\n}'),
    "show_hello": 'function(doc, req) { return {body: "hello " + doc._id}; }',
    "update_stamp": 'function(doc, req) { return [{_id: req.id, stamped: true}, "stamped " + req.id]; }',
    "list_rows": ('function(head, req) {\n  start({headers: {"X-L": "1"}});\n  var row;\n'
                  '  while ((row = getRow())) { send("<" + row.key + ">"); }\n  return "end";\n}'),
    "list_two_rows": ('function(head, req) {\n  var row, i = 0;\n'
                      '  while ((row = getRow())) { send("<" + row.key + ">"); if (++i == 2) return "early"; }\n}'),
}
PYTHON_FUNCTIONS = {   # the couchpy style (dragnet_qs.py runs it too)
    "map_emit_v": "def fun(doc):\n    yield doc['_id'], doc.get('v')\n",
    "map_emit_const": "def fun(doc):\n    yield 'const', 1\n",
    "map_emit_three": "def fun(doc):\n    yield doc['_id'], 1\n    yield doc['_id'], 2\n    yield [doc['_id'], 3], None\n",
    "map_nothing": "def fun(doc):\n    return []\n",
    "map_log": "def fun(doc):\n    log('saw ' + doc['_id'])\n    yield doc['_id'], None\n",
    "map_throw_if_bad": ("def fun(doc):\n    if doc.get('bad'):\n        raise ValueError('bad doc ' + doc['_id'])\n"
                         "    yield doc['_id'], 1\n"),
    "map_emit_text": "def fun(doc):\n    yield doc['text'], [doc['text']]\n",
    "map_emit_blob_len": "def fun(doc):\n    yield doc['_id'], len(doc['blob'])\n",
    "map_syntax_error": "def fun(doc):\n    if doc.get('type') == 'x'\n        yield doc['_id'], None\n",
    "reduce_sum": "def r(keys, values, rereduce):\n    return sum(values)\n",
    "reduce_count": "def r(keys, values, rereduce):\n    return sum(values) if rereduce else len(values)\n",
    "reduce_throw": "def r(keys, values, rereduce):\n    raise RuntimeError('reduce failed')\n",
    "filter_ok": "def f(doc, req):\n    return bool(doc.get('ok'))\n",
    "validate_need_ok": ("def v(new_doc, old_doc, user_ctx, sec_obj):\n    if not new_doc.get('ok'):\n"
                         "        raise Forbidden('need ok')\n"),
    "show_hello": "def s(doc, req):\n    return {'body': 'hello ' + doc['_id']}\n",
    "update_stamp": "def u(doc, req):\n    return [{'_id': req['id'], 'stamped': True}, 'stamped ' + req['id']]\n",
    "list_rows": ("def l(head, req):\n    start({'headers': {'X-L': '1'}})\n    while True:\n        row = get_row()\n"
                  "        if row is None:\n            break\n        send('<' + row['key'] + '>')\n    return 'end'\n"),
    "list_two_rows": ("def l(head, req):\n    for i in range(2):\n        row = get_row()\n        if row is None:\n"
                      "            return\n        send('<' + row['key'] + '>')\n    return 'early'\n"),
}
BUILTIN_FUNCTIONS = {"js": JS_FUNCTIONS, "python": PYTHON_FUNCTIONS}
ROLES = tuple(JS_FUNCTIONS)


def functions_from(folder: str | Path, dialect: str) -> dict[str, str]:
    """`<role><extension>` files of a folder (e.g. map_emit_v.go): the sources of a dialect dragnet cannot
    write itself. A missing file leaves its role out (its cases are skipped)."""
    d = dialects.get(dialect)
    folder = Path(folder)
    if not folder.is_dir():
        raise DragnetError(f"--functions {folder}: not a folder")
    out = {}
    for role in ROLES:
        f = folder / (role + d.extension)
        if f.is_file():
            out[role] = f.read_text(encoding="utf-8")
    if not out:
        raise DragnetError(f"--functions {folder}: no {', '.join(r + d.extension for r in ROLES[:2])}, … files")
    return out


# -- the cases (pure) ---------------------------------------------------------------------------------

DDOC_ROLES = ("filter_ok", "validate_need_ok", "show_hello", "update_stamp", "list_rows", "map_emit_v")


def _ddoc(f: dict) -> dict:
    return {"_id": DDOC_ID, "filters": {"ok": f["filter_ok"]}, "validate_doc_update": f["validate_need_ok"],
            "shows": {"hello": f["show_hello"]}, "updates": {"stamp": f["update_stamp"]},
            "lists": {"rows": f["list_rows"]}, "views": {"okview": {"map": f["map_emit_v"]}}}


def _setup(f: dict, *roles: str) -> list[Step]:
    return [Step(RESET, answer(True))] + [Step(["add_fun", f[r]], answer(True)) for r in roles]


def _new_ddoc(f: dict) -> list[Step]:
    return [Step(RESET, answer(True)), Step(["ddoc", "new", DDOC_ID, _ddoc(f)], answer(True))]


_BIG_NUMBERS = [2 ** 53, 2 ** 53 + 2, -(2 ** 63), 12345678901234567890, 1e21, 1.7976931348623157e308,
                5e-324, 0.1, -0.0]
_TEXTS = ["Декларація про майно — Київ, вул. Хрещатик, 1; ґанок, їжак, єнот",
          "emoji 😀🇺🇦, CJK 漢字, combining é", 'quotes " backslash \\ tab \t newline \n control \u0001']


def _big_doc() -> tuple[dict, int]:
    blob_len = BIG_DOC_BYTES - 200
    return {"_id": "big", "blob": "abcdefghijklmnopqrstuvwxyz" * (blob_len // 26), "v": 1}, blob_len // 26 * 26


CASES: tuple[Case, ...] = (
    Case("reset", "reset answers true, with CouchDB 3.5's config, none and {}", (), lambda f: [
        Step(RESET, answer(True)), Step(["reset"], answer(True)), Step(["reset", {}], answer(True))]),
    Case("map_one_emit", "add_fun, then map_doc: one row per emit, undefined values as null", ("map_emit_v",),
         lambda f: _setup(f, "map_emit_v") + [
             Step(["map_doc", {"_id": "a", "v": 5}], answer([[["a", 5]]])),
             Step(["map_doc", {"_id": "b", "v": {"x": [1, None, "y"]}}], answer([[["b", {"x": [1, None, "y"]}]]])),
             Step(["map_doc", {"_id": "c"}], answer([[["c", None]]]))]),
    Case("map_several_emits", "one function emitting three rows, in order", ("map_emit_three",),
         lambda f: _setup(f, "map_emit_three") + [
             Step(["map_doc", {"_id": "a"}], answer([[["a", 1], ["a", 2], [["a", 3], None]]]))]),
    Case("map_no_emit", "a function that emits nothing: an empty list for it", ("map_nothing", "map_emit_v"),
         lambda f: _setup(f, "map_nothing", "map_emit_v") + [
             Step(["map_doc", {"_id": "a", "v": 1}], answer([[], [["a", 1]]]))]),
    Case("map_several_functions", "several functions: one list each, in add_fun order, reset forgets them",
         ("map_emit_v", "map_emit_const"), lambda f: _setup(f, "map_emit_v", "map_emit_const", "map_emit_v") + [
             Step(["map_doc", {"_id": "a", "v": 1}], answer([[["a", 1]], [["const", 1]], [["a", 1]]])),
             *_setup(f, "map_emit_const"),
             Step(["map_doc", {"_id": "b"}], answer([[["const", 1]]]))]),
    Case("map_log", "log lines come before the answer", ("map_log",), lambda f: _setup(f, "map_log") + [
        Step(["map_doc", {"_id": "d1"}], answer_with_log([[["d1", None]]], "saw d1"))]),
    Case("map_error_thrown", "a function that throws: logged with the doc's _id, no rows from it, the others "
         "and the next doc unharmed", ("map_emit_v", "map_throw_if_bad"),
         lambda f: _setup(f, "map_emit_v", "map_throw_if_bad") + [
             Step(["map_doc", {"_id": "bad-1", "v": 1, "bad": True}], answer_with_log([[["bad-1", 1]], []], "bad-1")),
             Step(["map_doc", {"_id": "good-1", "v": 2}], answer([[["good-1", 2]], [["good-1", 1]]]))]),
    Case("bad_function", "a function that does not compile: a compilation_error answer, the process serving on",
         ("map_syntax_error",), lambda f: [
             Step(RESET, answer(True)), Step(["add_fun", f["map_syntax_error"]], error("compilation_error")),
             Step(RESET, answer(True))]),
    Case("reduce", "reduce: the language's built-in helpers (sum) and functions, one result each",
         ("reduce_sum", "reduce_count"), lambda f: [
             Step(RESET, answer(True)),
             Step(["reduce", [f["reduce_sum"]], [[["a", "d1"], 1], [["b", "d2"], 2], [["c", "d3"], 3]]],
                  answer([True, [6]])),
             Step(["reduce", [f["reduce_sum"], f["reduce_count"]], [[["a", "d1"], 1.5], [["b", "d2"], 2]]],
                  answer([True, [3.5, 2]]))]),
    Case("rereduce", "rereduce, also with the trailing argument CouchDB 3.5 may add", ("reduce_sum", "reduce_count"),
         lambda f: [
             Step(RESET, answer(True)),
             Step(["rereduce", [f["reduce_sum"], f["reduce_count"]], [3, 4, 5]], answer([True, [12, 12]])),
             Step(["rereduce", [f["reduce_sum"]], [1, 2], None], answer([True, [3]]))]),
    Case("reduce_error_thrown", "a reduce function that throws: an error answer or a logged null, never a hang",
         ("reduce_sum", "reduce_throw"), lambda f: [
             Step(RESET, answer(True)),
             Step(["reduce", [f["reduce_sum"], f["reduce_throw"]], [[["k", "id"], 2]]],
                  Expect("an error answer, or one log line then [true, [2, null]]",
                         lambda r: r.error is not None or (not r.gone and json_equal(r.answer, [True, [2, None]])))),
             Step(RESET, answer(True))]),
    Case("big_document", "a 16 MB document", ("map_emit_blob_len",), lambda f: (lambda doc, n: _setup(
        f, "map_emit_blob_len") + [Step(["map_doc", doc], answer([[["big", n]]]))])(*_big_doc())),
    Case("unicode", "non-ASCII text, surrogate pairs and control characters round-trip", ("map_emit_text",),
         lambda f: _setup(f, "map_emit_text") + [
             Step(["map_doc", {"_id": "u", "text": t}], answer([[[t, [t]]]])) for t in _TEXTS] + [
             Step(b'["map_doc", {"_id": "s", "text": "\\ud83d\\ude00 \\u0423\\u043a\\u0440"}]',
                  answer([[["😀 Укр", ["😀 Укр"]]]]))]),
    Case("big_numbers", "big and small numbers keep their double value", ("map_emit_v",),
         lambda f: _setup(f, "map_emit_v") + [
             Step(["map_doc", {"_id": "n", "v": _BIG_NUMBERS}], answer([[["n", _BIG_NUMBERS]]]))]),
    Case("timeout", f"every answer within the timeout reset gives ({RESET[1]['timeout']} ms): 200 documents",
         ("map_emit_v",), lambda f: _setup(f, "map_emit_v") + [
             Step(["map_doc", {"_id": f"t{i}", "v": i}], answer([[[f"t{i}", i]]])) for i in range(200)]),
    Case("unknown_command", "an unknown command: an error answer", (), lambda f: [
        Step(RESET, answer(True)), Step(["frobnicate", 1], error_or_exit())]),
    Case("ddoc_filters", "filters: true or false per document", DDOC_ROLES,
         lambda f: _new_ddoc(f) + [
             Step(["ddoc", DDOC_ID, ["filters", "ok"], [[{"_id": "a", "ok": True}, {"_id": "b"}], {"query": {}}]],
                  answer([True, [True, False]]))], ddoc=True),
    Case("ddoc_validate_doc_update", "validate_doc_update: 1 when it passes, {forbidden: ...} when it throws",
         DDOC_ROLES,
         lambda f: _new_ddoc(f) + [
             Step(["ddoc", DDOC_ID, ["validate_doc_update"], [{"_id": "x", "ok": True}, None, {"name": "u"}, {}]],
                  answer(1)),
             Step(["ddoc", DDOC_ID, ["validate_doc_update"], [{"_id": "x"}, None, {"name": "u"}, {}]],
                  answer({"forbidden": "need ok"}))], ddoc=True),
    Case("ddoc_show", "shows: [\"resp\", {body}]",
         DDOC_ROLES,
         lambda f: _new_ddoc(f) + [
             Step(["ddoc", DDOC_ID, ["shows", "hello"], [{"_id": "d1"}, {"method": "GET", "query": {}, "headers": {}}]],
                  answer(["resp", {"body": "hello d1"}]))], ddoc=True),
    Case("ddoc_update", "updates: [\"up\", doc, {body}]",
         DDOC_ROLES,
         lambda f: _new_ddoc(f) + [
             Step(["ddoc", DDOC_ID, ["updates", "stamp"], [None, {"method": "POST", "id": "n1", "query": {}}]],
                  answer(["up", {"_id": "n1", "stamped": True}, {"body": "stamped n1"}]))], ddoc=True),
    Case("ddoc_list", "lists: start, chunks per row, end",
         DDOC_ROLES,
         lambda f: _new_ddoc(f) + [
             Step(["ddoc", DDOC_ID, ["lists", "rows"], [{"total_rows": 2, "offset": 0}, {"query": {}, "headers": {}}]],
                  shaped('["start", [], {"headers": {"X-L": "1"}, ...}]',
                         lambda a: isinstance(a, list) and len(a) == 3 and a[:2] == ["start", []]
                         and isinstance(a[2], dict) and (a[2].get("headers") or {}).get("X-L") == "1")),
             Step(["list_row", {"key": "k1", "value": 1}], answer(["chunks", ["<k1>"]])),
             Step(["list_row", {"key": "k2", "value": 2}], answer(["chunks", ["<k2>"]])),
             Step(["list_end"], answer(["end", ["end"]]))], ddoc=True),
    Case("list_too_many_rows", "a row sent after the list function has ended: error unknown_command, then the "
         "process exits, as couchjs does (its state is lost; CouchDB starts a new one; QuickJS exits silently)",
         DDOC_ROLES,
         lambda f: _new_ddoc(f) + [
             Step(["ddoc", DDOC_ID, ["lists", "rows"], [{"total_rows": 1, "offset": 0}, {"query": {}, "headers": {}}]],
                  shaped("[\"start\", [], {...}]", lambda a: isinstance(a, list) and a[:1] == ["start"])),
             Step(["list_row", {"key": "k1", "value": 1}], answer(["chunks", ["<k1>"]])),
             Step(["list_end"], answer(["end", ["end"]])),
             Step(["list_row", {"key": "k2", "value": 2}], error_then_exit("unknown_command"))], ddoc=True),
    # CouchDB's query_server_spec.rb, "should exit if erlang sends too many rows": the list function returns
    # while CouchDB still has rows; its return ends the list on the row that ended it, and couchjs answers the
    # next row ["error", "unknown_command", "unknown command 'list_row'"] and exits
    Case("list_ended_early", "a list function that returns before the rows run out: end with its chunks, then "
         "a further row gets error unknown_command and the process exits, as couchjs does",
         DDOC_ROLES + ("list_two_rows",),
         lambda f: [Step(RESET, answer(True)),
                    Step(["ddoc", "new", DDOC_ID, {**_ddoc(f), "lists": {"rows": f["list_rows"],
                                                                          "two": f["list_two_rows"]}}], answer(True)),
                    Step(["ddoc", DDOC_ID, ["lists", "two"], [{"total_rows": 3, "offset": 0},
                                                              {"query": {}, "headers": {}}]],
                         shaped('["start", [], {...}]', lambda a: isinstance(a, list) and a[:2] == ["start", []])),
                    Step(["list_row", {"key": "k1", "value": 1}], answer(["chunks", ["<k1>"]])),
                    Step(["list_row", {"key": "k2", "value": 2}], answer(["end", ["<k2>", "early"]])),
                    Step(["list_row", {"key": "k3", "value": 3}], error_then_exit("unknown_command"))], ddoc=True),
)
CASE = {c.name: c for c in CASES}


# -- running them (I/O) -------------------------------------------------------------------------------

@dataclass
class Outcome:
    """One case on one server: "pass", "fail" or "skip", and for a failure the step, what was expected and
    what came back."""

    case: str
    title: str
    status: str
    step: int = 0
    sent: str = ""
    expected: str = ""
    got: str = ""
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Report:
    server: str
    command: list[str]
    dialect: str
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "fail"]

    def as_dict(self) -> dict:
        return {"server": self.server, "command": self.command, "dialect": self.dialect,
                "passed": sum(o.status == "pass" for o in self.outcomes), "failed": len(self.failed),
                "skipped": sum(o.status == "skip" for o in self.outcomes),
                "cases": [o.as_dict() for o in self.outcomes]}


def _exchange(qs: QueryServerProcess, send: Any) -> Reply:
    qs.logs.clear()
    line = send + b"\n" if isinstance(send, bytes) else encode(send)
    t0 = time.monotonic()
    try:
        raw = qs.prompt_raw(line)
    except QueryServerError as exc:
        if exc.fatal:
            return Reply(error=(exc.error_id, exc.reason), logs=tuple(qs.logs), alive=False,
                         seconds=time.monotonic() - t0)
        return Reply(error=(exc.error_id, exc.reason), logs=tuple(qs.logs), alive=_still_runs(qs),
                     seconds=time.monotonic() - t0)
    except QueryServerTimeout as exc:
        return Reply(gone=f"timeout: {exc}", logs=tuple(qs.logs), alive=False, seconds=time.monotonic() - t0)
    except ProtocolError as exc:
        return Reply(gone=f"exited: {exc}", logs=tuple(qs.logs), alive=False, seconds=time.monotonic() - t0)
    seconds = time.monotonic() - t0
    try:
        value = json.loads(raw)
    except ValueError:
        return Reply(gone=f"bad answer: not JSON: {raw[:200]!r}", logs=tuple(qs.logs), seconds=seconds)
    return Reply(answer=value, logs=tuple(qs.logs), seconds=seconds)


def _still_runs(qs: QueryServerProcess, grace: float = 0.3) -> bool:
    """Whether the process still runs after an error answer (a server may exit right after writing it)."""
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if qs.proc.poll() is not None:
            return False
        time.sleep(0.02)
    return True


def skip_reason(case: Case, functions: dict, claims_ddoc: bool, dialect: str) -> str | None:
    if case.ddoc and not claims_ddoc:
        return "the server does not claim design-doc functions"
    missing = [r for r in case.roles if r not in functions]
    if missing:
        ext = dialects.get(dialect).extension
        return f"no {', '.join(m + ext for m in missing)} (--functions DIR)"
    return None


def run_case(spec: ServerSpec, case: Case, functions: dict, *, timeout: float = DEFAULT_TIMEOUT_S) -> Outcome:
    """One case on a fresh process of `spec`; the process is always ended before returning."""
    steps = case.steps(functions)
    t0 = time.monotonic()
    try:
        qs = QueryServerProcess(spec.argv, env=dict(spec.env) or None, timeout=timeout, name=spec.name)
    except ProtocolError as exc:
        return Outcome(case.name, case.title, "fail", 1, "(start)", "a running process", str(exc))
    try:
        for i, step in enumerate(steps, 1):
            reply = _exchange(qs, step.send)
            if not step.expect.ok(reply):
                sent = step.send.decode("utf-8", "replace") if isinstance(step.send, bytes) else step.send
                return Outcome(case.name, case.title, "fail", i, _short(sent, 200), step.expect.text,
                               reply.describe(), time.monotonic() - t0)
        return Outcome(case.name, case.title, "pass", len(steps), seconds=time.monotonic() - t0)
    finally:
        qs.close(timeout=2.0)


def check_server(spec: ServerSpec, *, functions: dict | None = None, claims_ddoc: bool = True,
                 cases: Sequence[str] | None = None, timeout: float = DEFAULT_TIMEOUT_S,
                 progress: Callable[[Outcome], None] | None = None) -> Report:
    """Every case (or the named ones) on `spec`. Functions default to dragnet's own for the server's dialect
    family (JavaScript, Python). A server that does not answer `reset` at all fails with one line."""
    fam = dialects.family(spec.dialect)
    functions = functions if functions is not None else BUILTIN_FUNCTIONS.get(fam, {})
    unknown = [c for c in cases or () if c not in CASE]
    if unknown:
        raise DragnetError(f"unknown case {', '.join(unknown)} (one of {', '.join(CASE)})")
    first = run_case(spec, CASE["reset"], functions, timeout=timeout)
    if first.status != "pass":
        raise DragnetError(f"query server {spec.name} ({' '.join(spec.argv)}) does not speak the protocol: "
                           f"{first.got}")
    report = Report(spec.name, list(spec.argv), spec.dialect)
    for case in CASES:
        if cases and case.name not in cases:
            continue
        why = skip_reason(case, functions, claims_ddoc, spec.dialect)
        out = (Outcome(case.name, case.title, "skip", got=why) if why
               else first if case.name == "reset" else run_case(spec, case, functions, timeout=timeout))
        report.outcomes.append(out)
        if progress:
            progress(out)
    return report


def check_available(name: str, *, functions_dir: str | Path | None = None, cases: Sequence[str] | None = None,
                    timeout: float = DEFAULT_TIMEOUT_S, progress: Callable[[Outcome], None] | None = None) -> Report:
    """`dragnet servers --check NAME`: the server of that name found here (built-in, COUCHDB_QUERY_SERVER_*,
    or given with --server/--config), checked case by case."""
    from dragnet.servers.available import discover
    from dragnet.servers.registry import SERVER

    specs, skipped = discover()
    spec = next((s for s in specs if s.name == name), None)
    if spec is None:
        why = next((s.reason for s in skipped if s.name == name), None)
        raise DragnetError(f"--check {name}: " + (f"not available here: {why}" if why else
                           f"no such server (available: {', '.join(s.name for s in specs) or 'none'})"))
    record = SERVER.get(spec.name)
    # without --functions, a dialect dragnet cannot write runs only the cases that send no function
    functions = functions_from(functions_dir, spec.dialect) if functions_dir else None
    return check_server(spec, functions=functions, claims_ddoc=record.ddoc if record else True, cases=cases,
                        timeout=timeout, progress=progress)
