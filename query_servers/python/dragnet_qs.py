#!/usr/bin/env python3
"""dragnet's Python query server for CouchDB: couchpy-style functions, couchjs-compatible protocol.

Runs unchanged on CPython >= 3.9 and PyPy 3.9+, standard library only. Register it with CouchDB 3.5 as
    COUCHDB_QUERY_SERVER_PYTHON="python3 /path/to/dragnet_qs.py"
and write functions the couchpy way:

    def fun(doc):
        if doc.get("type") == "post":
            yield doc["_id"], 1

A function may also return a list of (key, value) pairs, be a lambda, or call emit(key, value).
Reduce functions take (keys, values) or (keys, values, rereduce). Names available to every function:
log, emit, require, json, Forbidden, Unauthorized, start, send, get_row (lists and shows).

The command set and the answers follow CouchDB's JavaScript server (share/server/*.js): reset, add_lib,
add_fun, map_doc, reduce, rereduce and ddoc (filters, views, validate_doc_update, shows, updates, lists,
rewrites). Differences from couchjs: an unknown command or a malformed line gets an ["error", ...] answer
and the server carries on (couchjs exits); the doc handed to map functions is not frozen, so a function
that changes it changes it for the functions after it (as in couchpy).
"""

import json
import sys
import types

__version__ = "1.0"

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode
_dumps_ascii = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode
_loads = json.loads
_FunctionType = types.FunctionType


class Fatal(Exception):
    """An error after which the process exits, like couchjs's ["fatal", ...] throws."""


class QSError(Exception):
    """An error answered as ["error", name, reason]; the process keeps running."""

    def __init__(self, name, reason):
        Exception.__init__(self, name, reason)
        self.name = name
        self.reason = reason


class Forbidden(Exception):
    """Raise in validate_doc_update to refuse a write with HTTP 403."""


class Unauthorized(Exception):
    """Raise in validate_doc_update to ask for authentication (HTTP 401)."""


def _sanitize(obj):
    # JSON.stringify turns NaN/Infinity into null; json.dumps would write invalid JSON.
    if isinstance(obj, float):
        return obj if obj == obj and obj not in (float("inf"), float("-inf")) else None
    if isinstance(obj, dict):
        return {k: _sanitize(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_sanitize(v) for v in obj]
    return obj


def encode(obj):
    """One JSON line as UTF-8 bytes (without the newline)."""
    try:
        text = _dumps(obj)
    except ValueError:
        text = _dumps(_sanitize(obj))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # lone surrogates (from "\ud800" in the input) cannot be UTF-8: escape them instead
        return _dumps_ascii(_sanitize(obj)).encode("ascii")


def errstr(exc):
    return repr(exc)


class Server(object):
    def __init__(self, stdin, stdout):
        self.stdin = stdin
        self.out = stdout
        self.funs = []
        self.lib = None
        self.config = {}
        self.ddocs = {}
        self.ddoc_funs = {}  # (ddoc id, path tuple) -> compiled function
        self.reduce_cache = {}  # source -> compiled reduce function
        self.line_length = 0
        self.emitted = None
        # list/show rendering state (render.js)
        self.chunks = []
        self.start_resp = {}
        self.new_header = False
        self.got_row = False
        self.last_row = False
        self.dispatch = {
            "reset": self.reset,
            "add_lib": self.add_lib,
            "add_fun": self.add_fun,
            "map_doc": self.map_doc,
            "reduce": self.reduce,
            "rereduce": self.rereduce,
            "ddoc": self.ddoc,
        }

    # -- output -----------------------------------------------------------------------------------

    def respond(self, obj):
        self.out.write(encode(obj) + b"\n")
        self.out.flush()

    def log(self, message):
        if not isinstance(message, str):
            try:
                message = _dumps(message)
            except (TypeError, ValueError):
                message = repr(message)
        # buffered: CouchDB reads log lines before the answer, which flushes them
        self.out.write(encode(["log", message]) + b"\n")

    def emit(self, key, value=None):
        self.emitted.append([key, value])

    # -- compiling --------------------------------------------------------------------------------

    def namespace(self, root):
        server = self
        modules = {}

        def require(path):
            return server.require(path, root, modules)

        return {
            "__name__": "couchdb_function",
            "__builtins__": __builtins__,
            "log": self.log,
            "emit": self.emit,
            "require": require,
            "json": json,
            "Forbidden": Forbidden,
            "Unauthorized": Unauthorized,
            "start": self.start,
            "send": self.send,
            "get_row": self.get_row,
            "getRow": self.get_row,
        }

    def compile(self, source, root=None):
        """A function from its source: `def ...` (the last one defined wins) or a lambda expression."""
        if not isinstance(source, str) or not source.strip():
            raise QSError("not_found", "missing function")
        ns = self.namespace(root)
        try:
            text = source.strip()
            if text.startswith("lambda"):
                fun = eval(compile(text, "<function>", "eval"), ns)
            else:
                before = set(ns)
                exec(compile(source, "<function>", "exec"), ns)
                fun = None
                for name, value in ns.items():
                    if name not in before and type(value) is _FunctionType:
                        fun = value
        except Exception as exc:
            raise QSError("compilation_error", "%s (%s)" % (_describe(exc), source))
        if type(fun) is not _FunctionType:
            raise QSError("compilation_error", "Expression does not eval to a function. (%s)" % source)
        return fun

    def require(self, path, root, modules):
        """CommonJS-like require: path into the ddoc (or {"views": {"lib": lib}}); the string there is
        Python source run as a module, whose globals are returned."""
        if root is None:
            raise QSError("invalid_require_path", "require() is not available here")
        if path in modules:
            return modules[path]
        current = root
        for part in path.split("/"):
            if part in ("", "."):
                continue
            if not isinstance(current, dict) or part not in current:
                raise QSError("invalid_require_path", "Object has no property %r. %s" % (part, path))
            current = current[part]
        if not isinstance(current, str):
            raise QSError("invalid_require_path", "Must require a Python source string, not: %s" % type(current).__name__)
        module = types.ModuleType(path)
        module.__dict__.update(self.namespace(root))
        module.__dict__["__name__"] = path
        modules[path] = module
        try:
            exec(compile(current, path, "exec"), module.__dict__)
        except QSError:
            raise
        except Exception as exc:
            del modules[path]
            raise QSError("compilation_error", "Module require(%r) raised error %s" % (path, _describe(exc)))
        return module

    # -- views ------------------------------------------------------------------------------------

    def reset(self, config=None, *_):
        self.funs = []
        self.lib = None
        self.config = config if isinstance(config, dict) else {}
        # reduce_cache survives: CouchDB resets before every reduce call, and it is keyed by source
        return True

    def add_lib(self, lib, *_):
        self.lib = lib
        return True

    def add_fun(self, source, *_):
        self.funs.append(self.compile(source, {"views": {"lib": self.lib}}))
        return True

    def view_error(self, exc, doc):
        message = "function raised exception (%s)" % errstr(exc)
        if doc is not None:
            doc_id = doc.get("_id", "undefined") if isinstance(doc, dict) else "undefined"
            message += " with doc._id %s" % (doc_id,)
        self.log(message)

    def map_doc(self, doc, *_):
        results = []
        for fun in self.funs:
            emitted = self.emitted = []
            try:
                out = fun(doc)
                if out is not None:
                    rows = [[key, value] for key, value in out]
                    emitted = emitted + rows if emitted else rows
            except Exception as exc:
                self.view_error(exc, doc)
                emitted = []
            results.append(emitted)
        self.emitted = None
        try:
            return _RawJSON(encode(results))
        except TypeError:
            # a value JSON cannot hold: drop that function's rows only, as for a raising function
            for i, rows in enumerate(results):
                try:
                    encode(rows)
                except TypeError as exc:
                    self.view_error(exc, doc)
                    results[i] = []
            return results

    def reduce_fun(self, source):
        fun = self.reduce_cache.get(source)
        if fun is None:
            if len(self.reduce_cache) >= 256:
                self.reduce_cache.clear()
            fun = self.reduce_cache[source] = self.compile(source)
        return fun

    def run_reduce(self, sources, keys, values, rereduce):
        reductions = []
        code_size = 0
        for source in sources:
            code_size += len(source)
            fun = self.reduce_fun(source)
            try:
                if fun.__code__.co_argcount >= 3:
                    reductions.append(fun(keys, values, rereduce))
                else:
                    reductions.append(fun(keys, values))
            except Exception as exc:
                self.view_error(exc, None)
                reductions.append(None)
        return self.check_reduce_limit(reductions, code_size)

    def check_reduce_limit(self, reductions, code_size):
        line = encode(reductions)
        config = self.config
        limit = config.get("reduce_limit")
        # CouchDB 3.5's main.js hard-codes 4096 and 2; later releases send them in the reset config
        threshold = config.get("reduce_limit_threshold", 4096)
        ratio = config.get("reduce_limit_ratio", 2)
        if limit and isinstance(threshold, (int, float)) and isinstance(ratio, (int, float)):
            input_length = self.line_length - code_size
            if len(line) > threshold and len(line) * ratio > input_length:
                message = "Reduce output must shrink more rapidly: input size: %d output size: %d" % (
                    input_length,
                    len(line),
                )
                if limit == "log":
                    self.log("reduce_overflow_error: " + message)
                else:
                    raise QSError("reduce_overflow_error", message)
        return _RawJSON(b"[true," + line + b"]")

    def reduce(self, sources, kvs, *ctx):
        keys = [kv[0] for kv in kvs]
        values = [kv[1] for kv in kvs]
        return self.run_reduce(sources, keys, values, False)

    def rereduce(self, sources, values, *ctx):
        return self.run_reduce(sources, None, values, True)

    # -- design documents -------------------------------------------------------------------------

    def ddoc(self, *args):
        args = list(args)
        ddoc_id = args.pop(0)
        if ddoc_id == "new":
            ddoc_id = args.pop(0)
            self.ddocs[ddoc_id] = args.pop(0)
            for key in [k for k in self.ddoc_funs if k[0] == ddoc_id]:
                del self.ddoc_funs[key]
            return True
        ddoc = self.ddocs.get(ddoc_id)
        if ddoc is None:
            raise Fatal("query_protocol_error", "uncached design doc: %s" % ddoc_id)
        fun_path = args.pop(0)
        fun_args = args.pop(0) if args else []
        cmd = fun_path[0]
        handler = self.ddoc_dispatch.get(cmd)
        if handler is None:
            raise QSError("unknown_command", "unknown ddoc command '%s'" % cmd)
        key = (ddoc_id, tuple(fun_path))
        fun = self.ddoc_funs.get(key)
        if fun is None:
            point = ddoc
            for name in fun_path:
                point = point.get(name) if isinstance(point, dict) else None
            if not point:
                raise QSError(
                    "not_found",
                    "missing %s function %s on design doc %s" % (cmd, fun_path[-1], ddoc_id),
                )
            fun = self.ddoc_funs[key] = self.compile(point, ddoc)
        return handler(self, fun, ddoc, fun_args)

    def run_filter(self, fun, ddoc, args):
        docs, req = args[0], args[1] if len(args) > 1 else {}
        if _arity(fun) < 2:
            return [True, [bool(fun(doc)) for doc in docs]]
        return [True, [bool(fun(doc, req)) for doc in docs]]

    def run_filter_view(self, fun, ddoc, args):
        results = []
        for doc in args[0]:
            self.emitted = []
            out = fun(doc)
            passed = bool(self.emitted)
            if not passed and out is not None:
                for _ in out:
                    passed = True
                    break
            results.append(passed)
        self.emitted = None
        return [True, results]

    def run_validate(self, fun, ddoc, args):
        try:
            _call(fun, args)
        except Forbidden as exc:
            return {"forbidden": _message(exc)}
        except Unauthorized as exc:
            return {"unauthorized": _message(exc)}
        except Exception as exc:
            first = exc.args[0] if exc.args else None
            if isinstance(first, dict) and len(first) == 1:
                return first  # raise Exception({"forbidden": "..."}), the couchjs `throw({forbidden: ...})`
            raise
        return 1

    def run_show(self, fun, ddoc, args):
        self.reset_list()
        try:
            resp = _call(fun, args) or {}
            if isinstance(resp, str):
                resp = {"body": resp}
            if self.chunks:
                resp = dict(resp)
                headers = dict(resp.get("headers") or {})
                headers.update(self.start_resp)
                resp["headers"] = headers
                resp["body"] = "".join(self.chunks) + (resp.get("body") or "")
                self.reset_list()
            if not isinstance(resp, dict):
                raise QSError("render_error", "undefined response from show function")
            return ["resp", resp]
        except (QSError, Fatal):
            raise
        except Exception as exc:
            req = args[1] if len(args) > 1 and isinstance(args[1], dict) else {}
            if args and args[0] is None and len(req.get("path") or ()) > 5:
                raise QSError("not_found", "document not found")
            raise self.render_error(exc)

    def run_update(self, fun, ddoc, args):
        try:
            req = args[1] if len(args) > 1 and isinstance(args[1], dict) else {}
            if req.get("method") == "GET":
                raise QSError("method_not_allowed", "Update functions do not allow GET")
            doc, resp = _call(fun, args)
            if isinstance(resp, str):
                resp = {"body": resp}
            if not isinstance(resp, dict):
                raise QSError("render_error", "undefined response from update function")
            return ["up", doc, resp]
        except (QSError, Fatal):
            raise
        except Exception as exc:
            raise self.render_error(exc)

    def run_list(self, fun, ddoc, args):
        self.reset_list()
        try:
            tail = _call(fun, args)
            if not self.got_row:
                self.get_row()
            if tail is not None:
                self.chunks.append(tail if isinstance(tail, str) else str(tail))
            self.blow_chunks("end")
        except (QSError, Fatal):
            raise
        except Exception as exc:
            raise self.render_error(exc)
        return _NoAnswer

    def run_rewrite(self, fun, ddoc, args):
        try:
            result = _call(fun, args)
        except (QSError, Fatal):
            raise
        except Exception as exc:
            raise self.render_error(exc, "rewrite_error")
        if not result:
            return ["no_dispatch_rule"]
        if isinstance(result, str):
            result = {"path": result, "method": args[0].get("method")}
        return ["ok", result]

    def render_error(self, exc, kind="render_error"):
        message = "function raised error: %s" % errstr(exc)
        self.log(message)
        return QSError(kind, message)

    ddoc_dispatch = {
        "filters": run_filter,
        "views": run_filter_view,
        "validate_doc_update": run_validate,
        "shows": run_show,
        "updates": run_update,
        "lists": run_list,
        "rewrites": run_rewrite,
    }

    # list API: start(), send(), get_row()
    def reset_list(self):
        self.chunks = []
        self.start_resp = {}
        self.new_header = False
        self.got_row = False
        self.last_row = False

    def start(self, resp=None):
        self.start_resp = resp or {}
        self.new_header = True

    def send(self, chunk):
        self.chunks.append(chunk if isinstance(chunk, str) else str(chunk))

    def blow_chunks(self, label="chunks"):
        if self.new_header:
            self.respond([label, self.chunks, self.start_resp])
            self.new_header = False
        else:
            self.respond([label, self.chunks])
        self.chunks = []

    def get_row(self):
        if self.last_row:
            return None
        if not self.got_row:
            self.got_row = True
            resp = dict(self.start_resp or {})
            resp["headers"] = resp.get("headers") or {}
            self.respond(["start", self.chunks, resp])
            self.chunks = []
            self.start_resp = {}
            self.new_header = False
        else:
            self.blow_chunks()
        line = self.stdin.readline()
        if not line:
            raise Fatal("list_error", "end of input inside a list function")
        msg = _loads(line)
        if msg[0] == "list_end":
            self.last_row = True
            return None
        if msg[0] != "list_row":
            raise Fatal("list_error", "not a row '%s'" % msg[0])
        return msg[1]

    # -- main loop --------------------------------------------------------------------------------

    def run(self):
        readline = self.stdin.readline
        dispatch = self.dispatch
        out = self.out
        while True:
            line = readline()
            if not line:
                return 0
            if len(line) < 3 and not line.strip():  # (no strip() copy of big lines)
                continue
            self.line_length = len(line)
            try:
                cmd = _loads(line)
            except ValueError as exc:
                self.respond(["error", "query_protocol_error", "invalid JSON: %s" % exc])
                continue
            try:
                if not isinstance(cmd, list) or not cmd:
                    raise QSError("query_protocol_error", "a command must be a non-empty array")
                handler = dispatch.get(cmd[0]) if isinstance(cmd[0], str) else None
                if cmd[0] in ("list_row", "list_end"):
                    # a row after the list function ended: CouchDB and this process disagree; answer and exit
                    # as couchjs does (an unknown command is fatal to it)
                    raise Fatal("unknown_command", "unknown command '%s'" % cmd[0])
                if handler is None:
                    # couchjs also exits here; dragnet's servers answer and keep serving
                    raise QSError("unknown_command", "unknown command '%s'" % (cmd[0],))
                answer = handler(*cmd[1:])
                if answer is _NoAnswer:
                    continue
                data = answer.data if type(answer) is _RawJSON else encode(answer)
            except QSError as exc:
                data = encode(["error", exc.name, exc.reason])
            except Fatal as exc:
                self.respond(["error", exc.args[0], exc.args[1]])
                return 1
            except (KeyboardInterrupt, SystemExit):
                raise
            except (TypeError, IndexError, KeyError, AttributeError) as exc:
                if _is_protocol_misuse(exc):
                    data = encode(["error", "query_protocol_error", "bad arguments for %r: %s" % (cmd[0], exc)])
                else:
                    data = encode(["error", type(exc).__name__, str(exc)])
            except Exception as exc:
                data = encode(["error", type(exc).__name__, str(exc)])
            out.write(data + b"\n")
            out.flush()


class _RawJSON(object):
    """An answer already encoded (saves a second pass over big map results)."""

    __slots__ = ("data",)

    def __init__(self, data):
        self.data = data


_NoAnswer = object()


def _arity(fun):
    code = fun.__code__
    if code.co_flags & 0x04:  # *args
        return 1 << 30
    return code.co_argcount


def _call(fun, args):
    # couchpy-style functions may declare fewer parameters than CouchDB sends (e.g. no secObj)
    n = _arity(fun)
    return fun(*args) if n >= len(args) else fun(*args[:n])


def _message(exc):
    return exc.args[0] if len(exc.args) == 1 else (str(exc) if exc.args else type(exc).__name__)


def _describe(exc):
    if isinstance(exc, SyntaxError):
        return "%s: %s (line %s)" % (type(exc).__name__, exc.msg, exc.lineno)
    return "%s: %s" % (type(exc).__name__, exc)


def _is_protocol_misuse(exc):
    # an exception raised by the dispatcher itself (wrong argument count), not by user code
    tb = exc.__traceback__
    depth = 0
    while tb is not None:
        depth += 1
        tb = tb.tb_next
    return depth <= 1


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if "--version" in argv:
        sys.stdout.write("dragnet_qs %s on %s %s\n" % (__version__, sys.implementation.name, sys.version.split()[0]))
        return 0
    server = Server(sys.stdin.buffer, sys.stdout.buffer)
    try:
        return server.run()
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
