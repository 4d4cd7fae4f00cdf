"""The load through dragnet-loadgen (Go's net/http, query_servers/loadgen, built by `make servers`): the same
open-loop schedule, records and checks as dragnet.load.generator, with the per-request work compiled
(talks to a process that talks HTTP).

The process gets the load on stdin (rates, templates, ids, the Authorization header: never in argv), sends,
and prints one line per request; a thread here reads them into the generator's own records (Request, not
sent, acknowledged revs, the ids it tried to write), so window figures, the write check and the purge are
the generator's. The load's CPU is the process's (its rusage once it has exited) plus the reading thread's.
Where dragnet-loadgen is not built the aiohttp generator runs instead; `driver` in the record says which.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from urllib.parse import quote

from dragnet import paths
from dragnet.couchdb.client import db_path
from dragnet.errors import DragnetError
from dragnet.load import spec as S
from dragnet.load.generator import GRACE_S, STOP_S, TIMEOUT_S, Load, Request

LOADGEN = paths.build_root() / "loadgen" / "build" / "dragnet-loadgen"
DRIVERS = ("auto", "go", "aiohttp")
# dragnet-loadgen wakes at most once per tick and sends every request due by then: fewer wake-ups for a mix
# of kinds; each request keeps its due time, so the lateness (at most a tick) is recorded, not hidden
TICK_S = 0.002


def resolve(driver: str = "auto") -> str:
    """The generator that will run: "go" (dragnet-loadgen, when built) or "aiohttp"; "go" asked for and not
    built is bad input."""
    return paths.compiled_or_fallback(driver, DRIVERS, LOADGEN, "the load's driver", "the compiled load generator")


def new_load(couch, db: str, spec: S.LoadSpec, *, driver: str = "auto", **kw) -> Load:
    """A Load on the generator `driver` resolves to."""
    return GoLoad(couch, db, spec, **kw) if resolve(driver) == "go" else Load(couch, db, spec, **kw)


def parse_line(line: str) -> tuple:
    """One line of dragnet-loadgen: ("R", Request, id, rev, wrote), ("N", kind, due), or (tag, text)."""
    parts = line.rstrip("\n").split("\t")
    if parts[0] == "R":
        _, kind, due, sent, end, status, stage, error, doc_id, rev = parts
        req = Request(kind, float(due), sent=float(sent), end=float(end), status=int(status) or None)
        if req.status is None and error:
            req.reason = error                         # the connection's reason, or cancelled at stop
        elif req.status is not None and req.status >= 400:
            req.reason = S.reason_of(req.status, error or None)
        if stage == "read" and req.reason is not None:
            req.reason = f"read: {req.reason}"
        return "R", req, doc_id, rev
    if parts[0] == "N":
        return "N", parts[1], float(parts[2])
    tag, _, text = line.rstrip("\n").partition(" ")
    return tag, text


class GoLoad(Load):
    driver = "go"
    binary = LOADGEN    # benchmarks/load_overhead runs an older build beside it (`--loadgen-before`)
    tick_s = TICK_S

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.event_loop = "go"     # Go's scheduler, no Python event loop

    def start(self) -> None:
        auth = self.couch.session.auth
        header = auth.header() if auth else None
        templates = self.templates
        config = {"url": self.couch.url, "auth": header, "db_path": db_path(self.db),
                  "rates": [[k, r] for k, r in self.spec.rates], "max_seconds": self.max_seconds,
                  "max_in_flight": S.MAX_IN_FLIGHT, "timeout_s": TIMEOUT_S, "grace_s": GRACE_S, "tag": self.tag,
                  "n0": self._n, "seed": self.rng.randrange(1 << 31), "templates": templates,
                  "read_paths": [f"{db_path(self.db)}/{quote(i, safe='')}" for i in self.read_ids],
                  "own": list(self.st.own), "tick_s": self.tick_s}
        self.event_loop = f"go, sends on a {self.tick_s * 1000:g} ms tick"    # recorded with the load
        self._proc = subprocess.Popen([str(self.binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, bufsize=1,
                                      start_new_session=True)   # Ctrl-C reaches dragnet, which stops it
        self._proc.stdin.write(json.dumps(config) + "\n")
        self._proc.stdin.flush()
        self._reader_cpu = 0.0
        self._thread = threading.Thread(target=self._read, name="dragnet-load-reader", daemon=True)
        self._thread.start()
        self._ready.wait(30)
        if self.t_start is None:
            self._halt()
            raise DragnetError(f"the load could not start: {self._error or 'dragnet-loadgen did not answer'}")

    def _read(self) -> None:
        c0 = time.thread_time()
        st = self.st
        try:
            for line in self._proc.stdout:
                got = parse_line(line)
                if got[0] == "R":
                    _, req, doc_id, rev = got
                    st.requests.append(req)
                    if req.kind in S.WRITE_KINDS and doc_id:
                        st.attempted.add(doc_id)
                        if rev and req.reason is None:
                            st.acked[doc_id] = rev
                            if req.kind == S.WRITES:
                                st.own.append(doc_id)
                elif got[0] == "N":
                    st.not_sent.append((got[1], got[2]))
                elif got[0] == "ready":
                    self.t_start = float(got[1])
                    self._ready.set()
                elif got[0] == "note":
                    self.note(got[1])
        except Exception as exc:     # recorded; stop() reports it
            self._error = exc
        finally:
            self._reader_cpu = time.thread_time() - c0
            self._ready.set()

    def begin_build(self, view_query: str | None = None) -> None:
        self.t_build = time.monotonic()
        self.view_query = view_query
        if self.spec.reads_view and view_query:
            self._send(f"build {view_query}")

    def _send(self, line: str) -> None:
        try:
            self._proc.stdin.write(line + "\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):   # it already ended (max_seconds)
            pass

    def _halt(self) -> None:
        proc = getattr(self, "_proc", None)
        if proc is None:
            return
        self._send("stop")
        try:
            proc.stdin.close()
        except OSError:
            pass
        # its rusage: the process's CPU, user and system, its runtime's threads with it
        status, usage, deadline = 0, None, time.monotonic() + STOP_S
        while proc.returncode is None:
            try:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            except ChildProcessError:
                break
            if pid:
                proc.returncode = os.waitstatus_to_exitcode(status)
            elif time.monotonic() > deadline:
                proc.kill()
                raise DragnetError(f"the load did not stop within {STOP_S:g} s: its writes cannot be checked")
            else:
                time.sleep(0.02)
        self._thread.join(STOP_S)
        if self._thread.is_alive():
            raise DragnetError(f"the load did not stop within {STOP_S:g} s: its writes cannot be checked")
        err = proc.stderr.read().strip()
        if proc.returncode:
            self._error = self._error or DragnetError(f"dragnet-loadgen exited {proc.returncode}: {err[:300]}")
        self.cpu_s = (usage.ru_utime + usage.ru_stime if usage else 0.0) + self._reader_cpu
        self._proc = None
