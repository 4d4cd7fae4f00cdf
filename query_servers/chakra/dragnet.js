// dragnet-chakra: the CouchDB query-server protocol as CouchDB 3.5's couchjs speaks it,
// written for ChakraCore (ES2015+). The native host (host.c) provides five globals, which
// are taken here and removed from the global object before any user code runs:
//   print(text)            append text + "\n" to stdout (flushed by readline)
//   readline()             next stdin line without "\n", or null at EOF (lists' getRow)
//   quit(code)             flush and exit
//   stderr(text)           diagnostics
//   compile(source, name)  run source as a script named name; syntax errors carry .line
//
// The script's value is handle(line), which the host calls once per input line.
//
// Answers follow couchjs 3.5 (share/server/*.js) line for line, with two deliberate
// differences: an unknown command or a malformed line answers an error and the
// process keeps serving (couchjs exits), and compile/runtime error texts carry
// ChakraCore's messages where couchjs has SpiderMonkey's.
'use strict';

(function (global) {
  const native = {
    print: global.print,
    readline: global.readline,
    quit: global.quit,
    stderr: global.stderr,
    compile: global.compile,
  };
  for (const name of Object.keys(native)) delete global[name];

  // ---------------------------------------------------------------- output

  const LONE_SURROGATE_CHECK = /[\ud800-\udfff]/;

  // ES2019 well-formed JSON.stringify (as SpiderMonkey does): lone surrogates become \uXXXX
  // escapes instead of U+FFFD on the way to UTF-8. Only scanned when a surrogate is present.
  function escapeLoneSurrogates(text) {
    let out = '';
    let from = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c < 0xd800 || c > 0xdfff) continue;
      if (c <= 0xdbff && i + 1 < text.length) {
        const d = text.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) { i++; continue; }
      }
      out += text.slice(from, i) + '\\u' + c.toString(16);
      from = i + 1;
    }
    return out + text.slice(from);
  }

  function printLine(text) {
    text = String(text);
    native.print(LONE_SURROGATE_CHECK.test(text) ? escapeLoneSurrogates(text) : text);
  }

  // prints obj as JSON; like couchjs, a value that cannot be serialised is logged instead
  function respond(obj) {
    try {
      printLine(JSON.stringify(obj));
    } catch (e) {
      log('Error converting object to JSON: ' + e.toString());
      log('error on obj: ' + String(obj));
    }
  }

  function log(message) {
    if (typeof message !== 'string') message = JSON.stringify(errorToJson(message));
    respond(['log', String(message)]);
  }

  // ---------------------------------------------------------------- error texts

  // An emitted or logged Error keeps its name and message (JSON.stringify would give {}).
  function errorToJson(e) {
    if (typeof e === 'object' && e !== null && 'stack' in e && 'name' in e && 'message' in e) {
      return { error: e.name, message: e.message };
    }
    return e;
  }

  const SM_ESCAPES = { 8: '\\b', 9: '\\t', 10: '\\n', 11: '\\v', 12: '\\f', 13: '\\r', 0: '\\0', 34: '\\"', 92: '\\\\' };

  function hex(n, width) {
    const s = n.toString(16).toUpperCase();
    return '0'.repeat(Math.max(0, width - s.length)) + s;
  }

  // SpiderMonkey's string literal quoting (uneval): printable ASCII as is, the rest escaped.
  function quote(s) {
    let out = '"';
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (SM_ESCAPES[c] !== undefined) out += SM_ESCAPES[c];
      else if (c >= 0x20 && c < 0x7f) out += s[i];
      else if (c < 0x100) out += '\\x' + hex(c, 2);
      else out += '\\u' + hex(c, 4);
    }
    return out + '"';
  }

  const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
  const STACK_FRAME = /\(([^\n]*):(\d+):(\d+)\)\s*$/;

  // Where a ChakraCore error was raised: the first stack frame outside this file. The file is
  // reported as "<unknown>" as couchjs does for every user function. The line is the line in the
  // source as sent; couchjs counts lines after esprima/escodegen reformatted it (one statement
  // per line), so the two agree for functions written one statement per line.
  function errorOrigin(e) {
    if (typeof e.line === 'number') return { file: '<unknown>', line: e.line };
    const stack = typeof e.stack === 'string' ? e.stack.split('\n') : [];
    for (let i = 1; i < stack.length; i++) {
      const m = STACK_FRAME.exec(stack[i]);
      if (m && m[1] !== 'dragnet.js') return { file: '<unknown>', line: Number(m[2]) };
    }
    return null;
  }

  // couchjs formats exceptions with SpiderMonkey's toSource(); this reproduces its shapes:
  // (new Error("msg", "file", 3)), "text", ["a", 1], ({a:1}), (void 0).
  function toSource(v, nested, seen) {
    // e.toSource() on a thrown primitive boxes it first
    if (!nested && (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean')) {
      return '(new ' + (typeof v === 'string' ? 'String' : typeof v === 'number' ? 'Number' : 'Boolean') +
        '(' + toSource(v, true) + '))';
    }
    switch (typeof v) {
      case 'string': return quote(v);
      case 'number': return Object.is(v, -0) ? '-0' : String(v);
      case 'boolean': return String(v);
      case 'undefined': return '(void 0)';
      case 'function': return Function.prototype.toString.call(v);
      case 'symbol': return v.toString();
    }
    if (v === null) return 'null';
    seen = seen || new Set();
    if (seen.has(v)) return nested ? '{}' : '({})';
    seen.add(v);
    try {
      if (v instanceof Error) {
        const at = errorOrigin(v);
        const where = at ? ', ' + quote(at.file) + ', ' + at.line : '';
        return '(new ' + v.name + '(' + quote(String(v.message)) + where + '))';
      }
      if (Array.isArray(v)) {
        const parts = [];
        for (let i = 0; i < v.length; i++) parts.push(i in v ? toSource(v[i], true, seen) : '');
        return '[' + parts.join(', ') + (v.length && !(v.length - 1 in v) ? ',' : '') + ']';
      }
      if (v instanceof Date) return '(new Date(' + v.getTime() + '))';
      if (v instanceof String || v instanceof Number || v instanceof Boolean) {
        return '(new ' + v.constructor.name + '(' + toSource(v.valueOf(), true, seen) + '))';
      }
      const parts = Object.keys(v).map(
        (k) => (IDENTIFIER.test(k) ? k : quote(k)) + ':' + toSource(v[k], true, seen));
      const body = '{' + parts.join(', ') + '}';
      return nested ? body : '(' + body + ')';
    } finally {
      seen.delete(v);
    }
  }

  function errstr(e) {
    try {
      return toSource(e, false);
    } catch (_) {
      return String(e);
    }
  }

  // ---------------------------------------------------------------- state

  const State = {
    funs: [],
    lib: null,
    queryConfig: {},
    lineLength: 0,
    reduceCache: new Map(),
  };

  // ---------------------------------------------------------------- sandbox and compilation

  // Names a user function sees besides the ES globals. They are parameters of a wrapper
  // closure, so each function gets its own emit (map or filter flavour) and require.
  const SANDBOX_NAMES = ['emit', 'sum', 'log', 'toJSON', 'provides', 'registerType',
    'start', 'send', 'getRow', 'isArray', 'require'];
  const WRAP_HEAD = '(function (' + SANDBOX_NAMES.join(', ') + ') { return (';
  const WRAP_TAIL = '\n); })';

  function makeSandbox(emitFn, requireFn) {
    return [emitFn, sum, log, toJSON, Mime.provides, Mime.registerType,
      Render.start, Render.send, Render.getRow, isArray, requireFn];
  }

  function toJSON(value) { return JSON.stringify(value); }

  function isArray(obj) { return Object.prototype.toString.call(obj) === '[object Array]'; }

  function sum(values) {
    let rv = 0;
    for (const i in values) rv += values[i];
    return rv;
  }

  function isSyntaxError(e) { return e instanceof SyntaxError; }

  // Evaluate source in the sandbox and return its value. The source is usually a bare
  // function expression; like couchjs (which rewrites it with esprima) we also accept a
  // trailing ";" and a program whose completion value is the function.
  function evalInSandbox(source, name, sandbox) {
    const text = String(source);
    let first;
    // A leading named function is a declaration, whose completion value is undefined: couchjs
    // rejects `function name(doc) {...}` alone, so only the program form may run it.
    if (NAMED_FUNCTION.test(text)) return evalProgram(text, name, sandbox, null);
    try {
      return native.compile(WRAP_HEAD + text + WRAP_TAIL, name).apply(null, sandbox);
    } catch (e) {
      if (!isSyntaxError(e)) throw e;
      first = e;
    }
    const trimmed = text.replace(/[\s;]+$/, '');
    if (trimmed !== text) {
      try {
        return native.compile(WRAP_HEAD + trimmed + WRAP_TAIL, name).apply(null, sandbox);
      } catch (e) {
        if (!isSyntaxError(e)) throw e;
      }
    }
    return evalProgram(text, name, sandbox, first);
  }

  const NAMED_FUNCTION = /^(?:\s|\/\/[^\n]*\n|\/\*[\s\S]*?\*\/)*(?:async\s+)?function\s*\*?\s*[A-Za-z_$]/;

  // The source as a program; its completion value is the result. Syntax errors report `first`
  // (the expression form's error) when there is one, as it names the likelier fault.
  function evalProgram(text, name, sandbox, first) {
    const program = native.compile('(function (' + SANDBOX_NAMES.join(', ') + ') { return eval(' +
      JSON.stringify(text) + '); })', name);
    try {
      return program.apply(null, sandbox);
    } catch (e) {
      throw isSyntaxError(e) && first ? first : e;
    }
  }

  function compileFunction(source, ddoc, name, emitFn) {
    if (!source) throw ['error', 'not_found', 'missing function'];
    const holder = {};
    const sandbox = makeSandbox(emitFn || Views.emit, ddoc ? makeRequire(ddoc, holder) : undefined);
    holder.sandbox = sandbox;
    let fn;
    try {
      fn = evalInSandbox(source, name || '<unknown>', sandbox);
    } catch (err) {
      throw ['error', 'compilation_error', errstr(err) + ' (' + source + ')'];
    }
    if (typeof fn === 'function') return fn;
    throw ['error', 'compilation_error', 'Expression does not eval to a function. (' + String(source) + ')'];
  }

  // ---------------------------------------------------------------- require (CommonJS from the ddoc)

  function requireError(reason) { return ['error', 'invalid_require_path', reason]; }

  // Walks names from a module record {current, parent, id}; "." stays in the requiring
  // module's folder, ".." goes one up, anything else starts from the ddoc (the root).
  function resolveModule(names, record, root) {
    if (names.length === 0) {
      if (typeof record.current !== 'string') {
        throw requireError('Must require a JavaScript string, not: ' + (typeof record.current));
      }
      return { current: record.current, parent: record.parent, id: record.id, exports: {} };
    }
    const n = names.shift();
    if (n === '..') {
      if (!(record.parent && record.parent.parent)) {
        throw requireError('Object has no parent ' + JSON.stringify(record.current));
      }
      return resolveModule(names, {
        id: record.id.slice(0, record.id.lastIndexOf('/')),
        parent: record.parent.parent,
        current: record.parent.current,
      });
    }
    if (n === '.') {
      if (!record.parent) throw requireError('Object has no parent ' + JSON.stringify(record.current));
      return resolveModule(names, { parent: record.parent, current: record.current, id: record.id });
    }
    if (root) record = { current: root };
    if (record.current[n] === undefined) {
      throw requireError('Object has no property "' + n + '". ' + JSON.stringify(record.current));
    }
    return resolveModule(names, {
      current: record.current[n],
      parent: record,
      id: record.id ? record.id + '/' + n : n,
    });
  }

  function makeRequire(ddoc, holder) {
    const cache = new Map();
    function require(name, module) {
      module = module || {};
      const mod = resolveModule(String(name).split('/'), module.parent, ddoc);
      if (!cache.has(mod.id)) {
        cache.set(mod.id, {}); // a circular require sees the empty exports, not a stack overflow
        try {
          const factory = evalInSandbox('function (module, exports, require) { ' + mod.current + '\n }',
            mod.id, holder.sandbox);
          factory.call(null, mod, mod.exports, (inner) => require(inner, mod));
        } catch (e) {
          throw ['error', 'compilation_error', "Module require('" + name + "') raised error " + errstr(e)];
        }
        cache.set(mod.id, mod.exports);
      }
      return cache.get(mod.id);
    }
    return (name) => require(name);
  }

  // ---------------------------------------------------------------- views

  // Same as couchjs: the doc is frozen so one map function cannot change what the next sees.
  // couchjs walks Reflect.ownKeys of every object. A doc fresh from JSON.parse holds only plain
  // objects and arrays with string keys and no shared parts, so walking array indices and a
  // for-in over each object freezes exactly the same objects; in ChakraCore for-in reuses
  // cached enumerators where Object.keys/Reflect.ownKeys build a key array per object, which
  // made freezing a third of map_doc's time. for-in also sees enumerable properties inherited
  // from Object.prototype; if user code added one, the walk falls back to Object.keys.
  const PLAIN = {};
  function freezeTree(value, ownKeys) {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const item = value[i];
        if (typeof item === 'object' && item !== null) freezeTree(item, ownKeys);
      }
    } else if (ownKeys) {
      const names = Object.keys(value);
      for (let i = 0; i < names.length; i++) {
        const item = value[names[i]];
        if (typeof item === 'object' && item !== null) freezeTree(item, ownKeys);
      }
    } else {
      for (const name in value) {
        const item = value[name];
        if (typeof item === 'object' && item !== null) freezeTree(item, ownKeys);
      }
    }
    return Object.freeze(value); // after the walk: freezing first slows the enumeration down
  }

  function deepFreeze(doc) {
    let inherited = false;
    for (const name in PLAIN) { inherited = true; break; } // eslint-disable-line no-unused-vars
    return freezeTree(doc, inherited);
  }

  const Views = (function () {
    let mapResults = [];

    function handleViewError(err, doc) {
      if (err == 'fatal_error') { // eslint-disable-line eqeqeq -- couchjs compares loosely
        throw ['error', 'map_runtime_error', "function raised 'fatal_error'"];
      } else if (err[0] == 'fatal') { // eslint-disable-line eqeqeq
        throw err;
      } else if (err.name == 'InternalError') { // eslint-disable-line eqeqeq
        throw ['fatal', err.name, err.message];
      }
      let message = 'function raised exception ' + errstr(err);
      if (doc) message += ' with doc._id ' + doc._id;
      log(message);
    }

    function compiledReduce(source) {
      let fn = State.reduceCache.get(source);
      if (fn === undefined) {
        fn = compileFunction(source);
        if (State.reduceCache.size > 256) State.reduceCache.clear();
        State.reduceCache.set(source, fn);
      }
      return fn;
    }

    function runReduce(reduceFuns, keys, values, rereduce) {
      let codeSize = 0;
      const funs = [];
      for (const i in reduceFuns) {
        codeSize += reduceFuns[i].length;
        funs.push(compiledReduce(reduceFuns[i]));
      }
      const reductions = new Array(funs.length);
      for (let i = 0; i < funs.length; i++) {
        try {
          reductions[i] = funs[i](keys, values, rereduce);
        } catch (err) {
          handleViewError(err);
          reductions[i] = null;
        }
      }
      const line = JSON.stringify(reductions);
      const inputLength = State.lineLength - codeSize;
      const config = State.queryConfig;
      if (config && config.reduce_limit && line.length > 4096 && line.length * 2 > inputLength) {
        const message = ['Reduce output must shrink more rapidly:', 'input size:', inputLength,
          'output size:', line.length].join(' ');
        if (config.reduce_limit === 'log') {
          log('reduce_overflow_error: ' + message);
        } else {
          throw ['error', 'reduce_overflow_error', message];
        }
      }
      printLine('[true,' + line + ']');
    }

    return {
      emit(key, value) {
        mapResults.push([key, errorToJson(value)]);
      },
      reduce(reduceFuns, kvs) {
        const keys = new Array(kvs.length);
        const values = new Array(kvs.length);
        for (let i = 0; i < kvs.length; i++) {
          keys[i] = kvs[i][0];
          values[i] = kvs[i][1];
        }
        runReduce(reduceFuns, keys, values, false);
      },
      // CouchDB 3.5 may append arguments; they are ignored as couchjs does
      rereduce(reduceFuns, values) {
        runReduce(reduceFuns, null, values, true);
      },
      mapDoc(doc) {
        deepFreeze(doc);
        const funs = State.funs;
        const buf = new Array(funs.length);
        for (let i = 0; i < funs.length; i++) {
          mapResults = [];
          try {
            funs[i](doc);
            buf[i] = mapResults;
          } catch (err) {
            handleViewError(err, doc);
            buf[i] = [];
          }
        }
        mapResults = [];
        printLine(JSON.stringify(buf));
      },
    };
  })();

  State.reset = function (config) {
    State.funs = [];
    State.lib = null;
    State.queryConfig = config || {};
    State.reduceCache.clear();
    printLine('true');
  };

  State.addFun = function (source /* , option: dreyfus/nouveau sandbox, unused here */) {
    State.funs.push(compileFunction(source, { views: { lib: State.lib } }, undefined, Views.emit));
    printLine('true');
  };

  State.addLib = function (lib) {
    State.lib = lib;
    printLine('true');
  };

  // ---------------------------------------------------------------- filters and validation

  const Filter = (function () {
    let viewEmitted = false;
    return {
      emit() { viewEmitted = true; },
      filter(fun, ddoc, args) {
        const docs = args[0];
        const req = args[1];
        const results = [];
        for (let i = 0; i < docs.length; i++) results.push((fun.apply(ddoc, [docs[i], req]) && true) || false);
        respond([true, results]);
      },
      filterView(fun, ddoc, args) {
        const docs = args[0];
        const results = [];
        for (let i = 0; i < docs.length; i++) {
          viewEmitted = false;
          fun(docs[i]);
          results.push((viewEmitted && true) || false);
        }
        respond([true, results]);
      },
    };
  })();

  const Validate = {
    validate(fun, ddoc, args) {
      try {
        fun.apply(ddoc, args);
        respond(1);
      } catch (error) {
        if (error.name && error.stack) throw error;
        respond(error);
      }
    },
  };

  // ---------------------------------------------------------------- mime negotiation

  // Best match of supported mime types against an Accept header (the mimeparse algorithm).
  const Mimeparse = (function () {
    function parseMimeType(mimeType) {
      const parts = mimeType.split(';');
      const params = {};
      for (const part of parts) {
        const kv = part.split('=');
        if (kv.length === 2) params[kv[0].trim()] = kv[1].trim();
      }
      let full = parts[0].trim();
      if (full === '*') full = '*/*';
      const typeParts = full.split('/');
      return [typeParts[0], typeParts[1], params];
    }

    function parseMediaRange(range) {
      const parsed = parseMimeType(range);
      const params = parsed[2];
      if (!params.q) {
        params.q = '1';
      } else {
        const q = parseFloat(params.q);
        if (isNaN(q) || q > 1 || q < 0) params.q = '1';
      }
      return parsed;
    }

    function fitnessAndQuality(mimeType, ranges) {
      let bestFitness = -1;
      let bestQ = 0;
      const [targetType, targetSubtype, targetParams] = parseMediaRange(mimeType);
      for (const [type, subtype, params] of ranges) {
        const typeOk = type == targetType || type == '*' || targetType == '*'; // eslint-disable-line eqeqeq
        const subOk = subtype == targetSubtype || subtype == '*' || targetSubtype == '*'; // eslint-disable-line eqeqeq
        if (!(typeOk && subOk)) continue;
        let matches = 0;
        for (const p in targetParams) {
          if (p !== 'q' && params[p] && params[p] == targetParams[p]) matches++; // eslint-disable-line eqeqeq
        }
        const fitness = (type == targetType ? 100 : 0) + (subtype == targetSubtype ? 10 : 0) + matches; // eslint-disable-line eqeqeq
        if (fitness > bestFitness) {
          bestFitness = fitness;
          bestQ = params.q;
        }
      }
      return [bestFitness, parseFloat(bestQ)];
    }

    function bestMatch(supported, header) {
      const ranges = header.split(',').map(parseMediaRange);
      const weighted = supported.map((mime, i) => [fitnessAndQuality(mime, ranges), i, mime]);
      weighted.sort(); // default (string) order, as couchjs sorts
      const best = weighted[weighted.length - 1];
      return best[0][1] ? best[2] : '';
    }

    return { bestMatch };
  })();

  const Mime = (function () {
    const mimesByKey = {};
    const keysByMime = {};
    let providesUsed = false;
    let mimeFuns = [];
    let responseContentType = null;

    function registerType(key, ...mimes) {
      mimesByKey[key] = mimes;
      for (const m of mimes) keysByMime[m] = key;
    }

    registerType('all', '*/*');
    registerType('text', 'text/plain; charset=utf-8', 'txt');
    registerType('html', 'text/html; charset=utf-8');
    registerType('xhtml', 'application/xhtml+xml', 'xhtml');
    registerType('xml', 'application/xml', 'text/xml', 'application/x-xml');
    registerType('js', 'text/javascript', 'application/javascript', 'application/x-javascript');
    registerType('css', 'text/css');
    registerType('ics', 'text/calendar');
    registerType('csv', 'text/csv');
    registerType('rss', 'application/rss+xml');
    registerType('atom', 'application/atom+xml');
    registerType('yaml', 'application/x-yaml', 'text/yaml');
    registerType('multipart_form', 'multipart/form-data');
    registerType('url_encoded_form', 'application/x-www-form-urlencoded');
    registerType('json', 'application/json', 'text/x-json');

    function provides(type, fun) {
      providesUsed = true;
      mimeFuns.push([type, fun]);
    }

    function resetProvides() {
      providesUsed = false;
      mimeFuns = [];
      responseContentType = null;
    }

    function runProvides(req, ddoc) {
      let supported = [];
      let bestFun;
      let bestKey = null;
      const accept = req.headers['Accept'];
      if (req.query && req.query.format) {
        bestKey = req.query.format;
        responseContentType = mimesByKey[bestKey][0];
      } else if (accept) {
        mimeFuns.reverse().forEach((mimeFun) => {
          if (mimesByKey[mimeFun[0]]) supported = supported.concat(mimesByKey[mimeFun[0]]);
        });
        responseContentType = Mimeparse.bestMatch(supported, accept);
        bestKey = keysByMime[responseContentType];
      } else {
        bestKey = mimeFuns[0][0];
        responseContentType = mimesByKey[bestKey][0];
      }
      if (bestKey) {
        for (const [key, fun] of mimeFuns) {
          if (key == bestKey) { bestFun = fun; break; } // eslint-disable-line eqeqeq
        }
      }
      if (bestFun) return bestFun.call(ddoc);
      const types = mimeFuns.map((mf) => mimesByKey[mf[0]].join(', ') || mf[0]);
      throw ['error', 'not_acceptable',
        'Content-Type ' + (accept || bestKey) + ' not supported, try one of: ' + types.join(', ')];
    }

    return {
      registerType,
      provides,
      resetProvides,
      runProvides,
      providesUsed: () => providesUsed,
      responseContentType: () => responseContentType,
    };
  })();

  // ---------------------------------------------------------------- shows, lists, updates, rewrites

  const Render = (function () {
    let newHeader = false;
    let chunks = [];
    let startResp = {};
    let gotRow = false;
    let lastRow = false;

    function start(resp) {
      startResp = resp || {};
      newHeader = true;
    }

    function applyContentType(resp, contentType) {
      resp.headers = resp.headers || {};
      if (contentType) resp.headers['Content-Type'] = resp.headers['Content-Type'] || contentType;
      return resp;
    }

    function sendStart() {
      startResp = applyContentType(startResp || {}, Mime.responseContentType());
      respond(['start', chunks, startResp]);
      chunks = [];
      startResp = {};
      newHeader = false;
    }

    function send(chunk) {
      chunks.push(chunk.toString());
    }

    function blowChunks(label) {
      if (newHeader) {
        respond([label || 'chunks', chunks, startResp]);
        newHeader = false;
      } else {
        respond([label || 'chunks', chunks]);
      }
      chunks = [];
    }

    // A list function pulls rows: each getRow answers what was sent so far, then reads the next line.
    function getRow() {
      if (lastRow) return null;
      if (!gotRow) {
        gotRow = true;
        sendStart();
      } else {
        blowChunks();
      }
      const line = native.readline();
      if (line === null) native.quit(0);
      const json = JSON.parse(line);
      if (json[0] == 'list_end') { // eslint-disable-line eqeqeq
        lastRow = true;
        return null;
      }
      if (json[0] != 'list_row') { // eslint-disable-line eqeqeq
        throw ['fatal', 'list_error', "not a row '" + json[0] + "'"];
      }
      return json[1];
    }

    function maybeWrapResponse(resp) {
      return typeof resp === 'string' ? { body: resp } : resp;
    }

    function typeOf(value) {
      let s = typeof value;
      if (s === 'object') {
        if (value) {
          if (value instanceof Array) s = 'array';
        } else {
          s = 'null';
        }
      }
      return s;
    }

    function resetList() {
      gotRow = false;
      lastRow = false;
      chunks = [];
      startResp = {};
      newHeader = false;
    }

    function renderError(e, errType) {
      if ((e.error && e.reason) || e[0] == 'error' || e[0] == 'fatal') throw e; // eslint-disable-line eqeqeq
      const message = 'function raised error: ' + errstr(e) + ' \nstacktrace: ' + e.stack;
      log(message);
      throw ['error', errType || 'render_error', message];
    }

    function show(fun, ddoc, args) {
      try {
        resetList();
        Mime.resetProvides();
        let resp = fun.apply(ddoc, args) || {};
        resp = maybeWrapResponse(resp);
        if (chunks.length && chunks.length > 0) { // list-style send() inside a show
          resp.headers = resp.headers || {};
          for (const header in startResp) resp.headers[header] = startResp[header];
          resp.body = chunks.join('') + (resp.body || '');
          resetList();
        }
        if (Mime.providesUsed()) {
          let provided = Mime.runProvides(args[1], ddoc) || {};
          provided = maybeWrapResponse(provided);
          resp.body = (resp.body || '') + chunks.join('');
          resp.body += provided.body || '';
          resp = applyContentType(resp, Mime.responseContentType());
          resetList();
        }
        const type = typeOf(resp);
        if (type === 'object' || type === 'string') {
          respond(['resp', maybeWrapResponse(resp)]);
        } else {
          throw ['error', 'render_error', 'undefined response from show function'];
        }
      } catch (e) {
        if (args[0] === null && args[1].path.length > 5) {
          throw ['error', 'not_found', 'document not found'];
        }
        renderError(e);
      }
    }

    function update(fun, ddoc, args) {
      try {
        if (args[1].method == 'GET') { // eslint-disable-line eqeqeq
          throw ['error', 'method_not_allowed', 'Update functions do not allow GET'];
        }
        const result = fun.apply(ddoc, args);
        const doc = result[0];
        const resp = result[1];
        const type = typeOf(resp);
        if (type === 'object' || type === 'string') {
          respond(['up', doc, maybeWrapResponse(resp)]);
        } else {
          throw ['error', 'render_error', 'undefined response from update function'];
        }
      } catch (e) {
        renderError(e);
      }
    }

    function list(fun, ddoc, args) {
      try {
        Mime.resetProvides();
        resetList();
        const req = args[1];
        let tail = fun.apply(ddoc, args);
        if (Mime.providesUsed()) tail = Mime.runProvides(req, ddoc);
        if (!gotRow) getRow();
        if (typeof tail !== 'undefined') chunks.push(tail);
        blowChunks('end');
      } catch (e) {
        renderError(e);
      }
    }

    function rewrite(fun, ddoc, args) {
      let result;
      try {
        result = fun.apply(ddoc, args);
      } catch (error) {
        renderError(error, 'rewrite_error');
      }
      if (!result) {
        respond(['no_dispatch_rule']);
        return;
      }
      if (typeof result === 'string') result = { path: result, method: args[0].method };
      respond(['ok', result]);
    }

    return { start, send, getRow, show, update, list, rewrite };
  })();

  // ---------------------------------------------------------------- design documents

  const DDoc = (function () {
    const dispatch = {
      lists: Render.list,
      shows: Render.show,
      filters: Filter.filter,
      views: Filter.filterView,
      updates: Render.update,
      validate_doc_update: Validate.validate,
      rewrites: Render.rewrite,
    };
    const ddocs = new Map();

    return function ddoc(...args) {
      let ddocId = args.shift();
      if (ddocId == 'new') { // eslint-disable-line eqeqeq
        ddocId = args.shift();
        ddocs.set(ddocId, args.shift()); // functions compile lazily, on first use
        printLine('true');
        return;
      }
      const doc = ddocs.get(ddocId);
      if (!doc) throw ['fatal', 'query_protocol_error', 'uncached design doc: ' + ddocId];
      const funPath = args.shift();
      const cmd = funPath[0];
      const funArgs = args.shift();
      if (!Object.prototype.hasOwnProperty.call(dispatch, cmd)) {
        throw ['error', 'unknown_command', "unknown ddoc command '" + cmd + "'"];
      }
      let point = doc;
      let fun;
      for (let i = 0; i < funPath.length; i++) {
        if (i + 1 === funPath.length) {
          fun = point[funPath[i]];
          if (!fun) {
            throw ['error', 'not_found',
              'missing ' + funPath[0] + ' function ' + funPath[i] + ' on design doc ' + ddocId];
          }
          if (typeof fun !== 'function') {
            // a view function run as a filter only records whether it emitted
            fun = compileFunction(fun, doc, funPath.join('.'), cmd === 'views' ? Filter.emit : Views.emit);
            point[funPath[i]] = fun; // cached on the ddoc, as couchjs does
          }
        } else {
          point = point[funPath[i]];
        }
      }
      dispatch[cmd](fun, doc, funArgs);
    };
  })();

  // ---------------------------------------------------------------- main loop

  const commands = {
    ddoc: DDoc,
    reset: State.reset,
    add_fun: State.addFun,
    add_lib: State.addLib,
    map_doc: Views.mapDoc,
    reduce: Views.reduce,
    rereduce: Views.rereduce,
  };

  function handleError(e) {
    if (e === null || e === undefined) {
      respond(['error', 'unnamed_error', errstr(e)]);
      return;
    }
    const type = e[0];
    if (type == 'fatal') { // eslint-disable-line eqeqeq
      e[0] = 'error'; // couchjs tells CouchDB an error was fatal by dying after the answer
      respond(e);
      native.quit(255);
    } else if (type == 'error') { // eslint-disable-line eqeqeq
      respond(e);
    } else if (e.name == 'InternalError') { // eslint-disable-line eqeqeq
      respond(['error', e.name, e.message]);
      native.quit(255);
    } else if (e.error && e.reason) {
      respond(['error', e.error, e.reason]);
    } else if (e.name) {
      respond(['error', e.name, e]);
    } else {
      respond(['error', 'unnamed_error', errstr(e)]);
    }
  }

  // The host calls this for every non-empty input line; it must never throw.
  function handle(line) {
    let cmd;
    try {
      cmd = JSON.parse(line);
    } catch (e) {
      respond(['error', 'query_protocol_error', 'invalid JSON: ' + e.message]);
      return;
    }
    if (!Array.isArray(cmd)) {
      respond(['error', 'query_protocol_error', 'a command must be a JSON array, not: ' + line.slice(0, 100)]);
      return;
    }
    State.lineLength = line.length;
    try {
      const key = cmd.shift();
      if (typeof key === 'string' && Object.prototype.hasOwnProperty.call(commands, key)) {
        commands[key].apply(null, cmd);
      } else if (key === 'list_row' || key === 'list_end') {
        // a row after the list function ended: CouchDB and this process disagree on the state; answer and
        // exit as couchjs does (its loop.js: an unknown command is fatal)
        throw ['fatal', 'unknown_command', "unknown command '" + key + "'"];
      } else {
        throw ['error', 'unknown_command', "unknown command '" + key + "'"];
      }
    } catch (e) {
      try {
        handleError(e);
      } catch (e2) {
        respond(['error', 'unnamed_error', String(e2)]);
      }
    }
  }

  return handle;
})(this);
