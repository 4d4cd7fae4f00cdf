#!/usr/bin/env node
// dragnet-node: the CouchDB query-server protocol on Node.js (V8) or Bun (JavaScriptCore).
// The protocol itself is query_servers/chakra/dragnet.js, shared with dragnet-chakra; this file is
// only its host: the five natives dragnet.js expects (print, readline, quit, stderr, compile) and
// the stdin loop. dragnet.js and every user function run in a fresh vm context, which holds the
// ECMAScript globals only: no process, require, Buffer, Bun or fs.
'use strict';

const fs = require('fs');
const path = require('path');
const vm = require('vm');

if (process.argv.length > 2) {
  process.stderr.write('usage: dragnet-node (speaks the CouchDB query-server protocol on stdin/stdout)\n');
  process.exit(2);
}

const PROTOCOL = process.env.DRAGNET_QS_PROTOCOL_JS ||
  path.join(__dirname, '..', 'chakra', 'dragnet.js');

const sandbox = vm.createContext(Object.create(null));
// A value from this (host) realm must never reach user code: its .constructor.constructor would
// be the host's Function, with process in scope. Errors are re-made in the sandbox realm.
const SandboxSyntaxError = vm.runInContext('SyntaxError', sandbox);
const SandboxError = vm.runInContext('Error', sandbox);

// ---------------------------------------------------------------- output: one write per answer

let pending = '';

function flush() {
  if (pending === '') return;
  const out = pending;
  pending = '';
  writeAll(out);
}

function writeAll(text) {
  let buf = Buffer.from(text, 'utf8');
  for (let tries = 0; buf.length > 0; ) {
    let n;
    try {
      n = fs.writeSync(1, buf);
    } catch (e) {
      if (e.code === 'EAGAIN' && tries++ < 10000) { sleep(1); continue; }
      process.exit(e.code === 'EPIPE' ? 0 : 1);
    }
    buf = buf.subarray(n);
  }
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));
function sleep(ms) { Atomics.wait(sleeper, 0, 0, ms); }

// ---------------------------------------------------------------- input: lines from fd 0

const CHUNK = 1 << 16;
const chunk = Buffer.allocUnsafe(CHUNK);
let carry = null;   // bytes of an unfinished line
let lines = [];     // complete lines read ahead
let next = 0;
let eof = false;

function fill() {
  flush(); // the answer goes out before we wait for the next line
  let n = 0;
  for (let tries = 0; ; ) {
    try {
      n = fs.readSync(0, chunk, 0, CHUNK, null);
      break;
    } catch (e) {
      // only when a parent hands us a non-blocking stdin (CouchDB does not): wait, backing off to 50 ms,
      // for as long as a query server may sit idle (a day)
      if (e.code === 'EAGAIN' && tries < 2000000) { sleep(Math.min(50, ++tries)); continue; }
      if (e.code === 'EOF') { n = 0; break; }
      throw e;
    }
  }
  if (n === 0) {
    eof = true;
    if (carry !== null && carry.length) { lines = [carry.toString('utf8')]; next = 0; carry = null; }
    return;
  }
  let data = chunk.subarray(0, n);
  let start = 0;
  lines = [];
  next = 0;
  for (let nl = data.indexOf(10); nl !== -1; nl = data.indexOf(10, start)) {
    if (carry !== null) {
      lines.push(Buffer.concat([carry, data.subarray(start, nl)]).toString('utf8'));
      carry = null;
    } else {
      lines.push(data.toString('utf8', start, nl));
    }
    start = nl + 1;
  }
  if (start < n) {
    const rest = Buffer.from(data.subarray(start)); // copy: chunk is reused
    carry = carry === null ? rest : Buffer.concat([carry, rest]);
  }
}

// next line without "\n", or null at end of input
function readline() {
  while (next >= lines.length) {
    if (eof) return null;
    fill();
  }
  const line = lines[next++];
  return line.charCodeAt(line.length - 1) === 13 ? line.slice(0, -1) : line;
}

function quit(code) {
  flush();
  process.exit(typeof code === 'number' ? code : 0);
}

function stderr(text) {
  try { fs.writeSync(2, String(text) + '\n'); } catch (e) { /* nowhere to report it */ }
}

// run source as a script named name in the sandbox; a syntax error carries .line, like the chakra host
function compile(source, name) {
  let script;
  try {
    script = new vm.Script(String(source), { filename: String(name) });
  } catch (e) {
    const Ctor = e instanceof SyntaxError ? SandboxSyntaxError : SandboxError;
    const err = new Ctor(String(e && e.message));
    const where = /:(\d+)\n/.exec(String(e && e.stack));
    err.line = where ? Number(where[1]) : 0;
    throw err;
  }
  return script.runInContext(sandbox);
}

sandbox.print = (text) => { pending += text + '\n'; };
sandbox.readline = readline;
sandbox.quit = quit;
sandbox.stderr = stderr;
sandbox.compile = compile;

const handle = new vm.Script(fs.readFileSync(PROTOCOL, 'utf8'), { filename: PROTOCOL }).runInContext(sandbox);

for (;;) {
  const line = readline();
  if (line === null) break;
  if (line.length) handle(line);
}
flush();
