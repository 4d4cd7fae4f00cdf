"""A client for CouchDB's query-server protocol, driving a real query-server process.

CouchDB (couch_os_process) writes one JSON line to the process's stdin and reads lines from its stdout
until one is an answer: `["log", msg]` lines are logged and skipped, `["error", id, reason]` fails the
request (the process lives on), `["fatal", id, reason]` fails it and ends the process. This module does
the same, with the hot path kept to raw bytes: the caller hands over an already encoded line, the answer
comes back as the raw bytes of its line, and parsing is left to whoever needs it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any, Sequence

from dragnet.errors import DragnetError

# A line is a protocol command (not an answer) when it is an array starting with one of these strings.
_COMMAND = re.compile(rb'\s*\[\s*"(log|error|fatal)"')
_READ_SIZE = 1 << 16
STDERR_TAIL_BYTES = 2000
# couch_proc_manager:get_proc_config/0 in CouchDB 3.5.0, with the defaults
# ([query_server_config] reduce_limit = true, [couchdb] os_process_timeout = 5000).
RESET_CONFIG = {"reduce_limit": True, "timeout": 5000}


class ProtocolError(DragnetError):
    """A query server failed a request; `server` names it."""

    def __init__(self, message: str, server: str = ""):
        super().__init__(message)
        self.server = server


class QueryServerError(ProtocolError):
    """The server answered `["error", id, reason]` (or `["fatal", ...]`, then `fatal` is true)."""

    def __init__(self, message: str, server: str, error_id: str, reason: Any, fatal: bool = False):
        super().__init__(message, server)
        self.error_id = error_id
        self.reason = reason
        self.fatal = fatal


class QueryServerDied(ProtocolError):
    """The process exited (or closed stdout) while a request was outstanding."""

    def __init__(self, message: str, server: str, returncode: int | None, stderr_tail: str):
        super().__init__(message, server)
        self.returncode = returncode
        self.stderr_tail = stderr_tail


class QueryServerTimeout(ProtocolError):
    """No answer within the timeout; the process was killed, as CouchDB does."""


class BadAnswer(ProtocolError):
    """An answer line that is not JSON."""


@dataclass
class ProcessStats:
    """What the finished process cost, read from /proc just before closing and from wait4's rusage."""

    pid: int
    returncode: int | None
    cpu_user_s: float
    cpu_system_s: float
    peak_rss_kb: int | None
    # /proc/<pid>/stat utime+stime just before stdin was closed (excludes shutdown); None off Linux
    cpu_before_close_s: float | None = None

    @property
    def cpu_s(self) -> float:
        return self.cpu_user_s + self.cpu_system_s


def encode(message: Any) -> bytes:
    """One protocol line: compact JSON and a newline (what CouchDB writes)."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def _short(data: bytes, limit: int = 200) -> str:
    text = data.decode("utf-8", "replace")
    return text if len(text) <= limit else text[:limit] + "…"


def _proc_status_kb(pid: int, key: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(key.encode() + b":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _proc_cpu_s(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
        # fields after the parenthesised command name; utime and stime are fields 14 and 15
        rest = stat[stat.rindex(b")") + 2:].split()
        return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _descendants(pid: int) -> list[int]:
    """Children, grandchildren, ... of a live process (Linux /proc/PID/task/*/children), deepest last."""
    out, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{parent}/task/{tid}/children") as f:
                    kids = [int(k) for k in f.read().split()]
            except (OSError, ValueError):
                continue
            out += kids
            todo += kids
    return out


class LineProtocol:
    """What a query server's answers mean, whatever carries its lines: log lines collected, error and fatal
    answers raised. A subclass gives _readline(), kill() and prompt_raw(), which hands its answer line to
    _answered()."""

    def __init__(self, name: str, keep_logs: int = 1000):
        self.name = name
        self.logs: list[str] = []
        self.log_count = 0
        self._keep_logs = keep_logs
        self._seq = 0          # bumped by every request and every log line (progress)
        self._busy = False     # a request is outstanding

    def _answered(self, answer: bytes) -> bytes:
        """The answer to a request, after any log lines before it (an error or fatal answer raises)."""
        return self._command(answer) if _COMMAND.match(answer) else answer

    def _command(self, answer: bytes) -> bytes:
        """A log/error/fatal line: log and read on, or raise."""
        while True:
            try:
                msg = json.loads(answer)
            except ValueError:
                return answer  # starts like a command but is not JSON: hand it back as an answer
            if msg[0] == "log" and len(msg) >= 2:
                self.log_count += 1
                self._seq += 1
                if len(self.logs) < self._keep_logs:
                    self.logs.append(msg[1] if isinstance(msg[1], str) else json.dumps(msg[1]))
            elif msg[0] in ("error", "fatal"):
                error_id = msg[1] if len(msg) > 1 else "unknown_error"
                reason = msg[2] if len(msg) > 2 else None
                fatal = msg[0] == "fatal"
                self._busy = False
                if fatal:
                    self.kill()
                raise QueryServerError(f"query server {self.name} answered {msg[0]} {error_id}: {reason}",
                                       self.name, str(error_id), reason, fatal)
            else:
                return answer
            answer = self._readline()
            if not _COMMAND.match(answer):
                return answer

    # -- convenience --------------------------------------------------------------------------

    def prompt(self, message: Any) -> Any:
        """Send a message (any JSON value) and return the parsed answer."""
        answer = self.prompt_raw(encode(message))
        try:
            return json.loads(answer)
        except ValueError:
            raise BadAnswer(f"query server {self.name} answered with invalid JSON: {_short(answer)!r}",
                            self.name) from None


class QueryServerProcess(LineProtocol):
    """One running query server.

    >>> with QueryServerProcess(["couchpy"]) as qs:
    ...     qs.prompt(["reset", {"reduce_limit": True, "timeout": 5000}])
    True
    """

    def __init__(self, argv: Sequence[str], *, env: dict[str, str] | None = None, timeout: float = 5.0,
                 name: str | None = None, cwd: str | None = None, keep_logs: int = 1000):
        if not argv:
            raise ValueError("empty command")
        self.argv = list(argv)
        super().__init__(name or os.path.basename(self.argv[0]), keep_logs)
        self.timeout = timeout
        self._rest = b""
        self._stats: ProcessStats | None = None
        self._stderr = tempfile.TemporaryFile(prefix="dragnet-qs-stderr-")
        full_env = None
        if env:
            full_env = dict(os.environ)
            full_env.update(env)
        self.started_ns = time.perf_counter_ns()
        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self._stderr, bufsize=0, env=full_env, cwd=cwd,
                                         close_fds=True)
        except OSError as exc:
            self._stderr.close()
            raise ProtocolError(f"cannot start query server {self.name} ({self.argv[0]}): {exc.strerror}",
                                self.name) from exc
        self.pid = self.proc.pid
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        # Timeouts: a watchdog thread kills a server that leaves a request unanswered too long, which
        # unblocks our read or write; the hot path then needs no poll() per message (_seq, _busy).
        self._expired = False  # the watchdog killed the process
        self._closed = threading.Event()
        self._lock = threading.Lock()  # orders signalling against reaping
        threading.Thread(target=self._watchdog, name=f"qs-watchdog-{self.pid}", daemon=True).start()

    # -- the hot path ---------------------------------------------------------------------------

    def prompt_raw(self, line: bytes) -> bytes:
        """Send one encoded line (with its newline) and return the raw answer line (without it).

        Log lines before the answer are collected in `logs`; error and fatal answers raise.
        """
        self._seq += 1
        self._busy = True
        try:
            n = os.write(self._in, line)
            if n != len(line):
                view = memoryview(line)
                while n < len(line):
                    n += os.write(self._in, view[n:])
        except BrokenPipeError:
            self._died("writing")
        answer = self._readline()
        self._busy = False
        if answer[:2] == b"[[" or answer == b"true":
            return answer
        if _COMMAND.match(answer):
            return self._command(answer)
        return answer

    def _readline(self) -> bytes:
        data = self._rest
        if data:
            i = data.find(b"\n")
            if i >= 0:
                self._rest = data[i + 1:]
                return data[:i]
            parts = [data]
        else:
            parts = []
        while True:
            chunk = os.read(self._out, _READ_SIZE)
            if not chunk:
                self._rest = b"".join(parts)
                self._died("reading")
            i = chunk.find(b"\n")
            if i >= 0:
                self._rest = chunk[i + 1:]
                if parts:
                    parts.append(chunk[:i])
                    return b"".join(parts)
                return chunk[:i]
            parts.append(chunk)

    def _watchdog(self) -> None:
        tick = min(0.1, self.timeout / 10)
        seen, since = -1, 0.0
        while not self._closed.wait(tick):
            if not self._busy:
                seen = -1
                continue
            now = time.monotonic()
            if self._seq != seen:
                seen, since = self._seq, now
            elif now - since >= self.timeout and self._busy and self._seq == seen:
                self._expired = True
                self._kill_unreaped()
                return

    def _kill_unreaped(self) -> None:
        # under the lock, so that a pid already reaped (and maybe reused) is never signalled
        with self._lock:
            if self._stats is None:
                # a command run through a shell or wrapper: its children hold our pipes open too
                for pid in [*_descendants(self.pid), self.pid]:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass

    # -- failure paths ------------------------------------------------------------------------

    def stderr_tail(self, limit: int = STDERR_TAIL_BYTES) -> str:
        try:
            self._stderr.flush()
            size = self._stderr.seek(0, os.SEEK_END)
            self._stderr.seek(max(0, size - limit))
            return self._stderr.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""

    def _died(self, doing: str):
        self._busy = False
        if self._expired:
            self._reap(timeout=5.0, kill=True)
            raise QueryServerTimeout(f"query server {self.name} gave no answer within {self.timeout:g} s "
                                     f"while {doing}; killed it", self.name)
        # give the process a moment to finish exiting, so the exit code and stderr are complete
        rc = self._reap(timeout=2.0, kill=True)
        tail = self.stderr_tail()
        how = f"was killed by signal {-rc}" if rc is not None and rc < 0 else f"exited with code {rc}"
        if rc is None:
            how = "closed its stdout"
        msg = f"query server {self.name} {how} while {doing}"
        if self._rest:
            msg += f"; partial output: {_short(self._rest)!r}"
        msg += f"; stderr: {tail[-500:]}" if tail else "; no stderr output"
        raise QueryServerDied(msg, self.name, rc, tail)

    def fail_as(self, what: str, line: bytes = b"") -> None:
        """Raise what prompt_raw raises when a request driven elsewhere on these pipes (qsbench's C loop)
        ended so: "command" (`line` an error/fatal line), "timeout" (kills the process), "died-reading"
        (`line` what was read of the pending answer) or "died-writing". Returns only for a command line
        that is not JSON, which prompt_raw would hand back as the answer."""
        if what == "command":
            self._command(line)
            return
        if what == "timeout":
            self._expired = True
            self._kill_unreaped()
        elif what == "died-reading":
            self._rest = line
        self._died("writing" if what == "died-writing" else "reading")

    def kill(self) -> None:
        """SIGKILL the process and reap it (Popen.kill would reap it behind our back, losing its rusage)."""
        self._kill_unreaped()
        self._reap(timeout=5.0, kill=False)

    # -- shutdown and accounting ----------------------------------------------------------------

    def _reap(self, timeout: float, kill: bool) -> int | None:
        """Wait for the process with wait4 (keeping its rusage); SIGKILL it after `timeout` if asked."""
        if self._stats is not None:
            return self._stats.returncode
        deadline = time.monotonic() + timeout
        delay = 0.0005
        while True:
            with self._lock:
                try:
                    pid, status, usage = os.wait4(self.pid, os.WNOHANG)
                except ChildProcessError:
                    return self.proc.returncode
                if pid:
                    rc = os.waitstatus_to_exitcode(status)
                    self.proc.returncode = rc  # tell Popen it is reaped
                    self._stats = ProcessStats(self.pid, rc, usage.ru_utime, usage.ru_stime,
                                               usage.ru_maxrss or None)
                    return rc
            if time.monotonic() >= deadline:
                if not kill:
                    return None
                self._kill_unreaped()
                kill = False
                deadline = time.monotonic() + 5.0
            time.sleep(delay)
            delay = min(delay * 2, 0.02)

    def close(self, timeout: float = 5.0) -> ProcessStats:
        """Read peak RSS and CPU from /proc, close stdin (CouchDB's way to stop a server), wait, reap."""
        self._closed.set()
        if self._stats is None:
            hwm = _proc_status_kb(self.pid, "VmHWM")
            cpu_before = _proc_cpu_s(self.pid)
            for f in (self.proc.stdin, self.proc.stdout):
                try:
                    f.close()
                except OSError:
                    pass
            self._reap(timeout, kill=True)
            if self._stats is None:  # reaped elsewhere (should not happen): fall back to what we read
                self._stats = ProcessStats(self.pid, self.proc.returncode, cpu_before or 0.0, 0.0, hwm)
            if hwm is not None:
                self._stats.peak_rss_kb = hwm
            self._stats.cpu_before_close_s = cpu_before
        else:
            for f in (self.proc.stdin, self.proc.stdout):
                try:
                    f.close()
                except OSError:
                    pass
        try:
            self._stderr.close()
        except OSError:
            pass
        return self._stats

    @property
    def stats(self) -> ProcessStats | None:
        return self._stats

    def __enter__(self) -> "QueryServerProcess":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self._closed.set()
            if self._stats is None:
                self.kill()
        except Exception:
            pass
