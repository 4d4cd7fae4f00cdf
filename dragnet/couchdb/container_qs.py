"""A query server run inside a CouchDB's container, as its CouchDB would run it: the container's own command for
the language (its COUCHDB_QUERY_SERVER_<LANG>, or the start script's couchjs for javascript), started by a
Docker exec as the couchdb user in CouchDB's working directory, its stdio on the API's socket.

It answers prompt/prompt_raw as a local QueryServerProcess does, and `pid` is its host pid (the exec's), so the
kernel's accounting on this host reads its CPU. Closing its input ends it (CouchDB's way to stop a server); a
process still there after that is killed by its host pid, checked by its start time.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import time
from typing import Sequence

from dragnet.servers.protocol import LineProtocol, QueryServerDied, QueryServerTimeout

HOME = "/opt/couchdb"              # the release in the images, and CouchDB's working directory
JAVASCRIPT = "./bin/couchjs ./share/server/main.js"    # bin/couchdb's default for COUCHDB_QUERY_SERVER_JAVASCRIPT
ENV_PREFIX = "COUCHDB_QUERY_SERVER_"
STDERR_KEEP = 4096


def command_for(attrs: dict, language: str) -> list[str] | None:
    """The argv the container's CouchDB runs for `language` (its Config.Env as CouchDB reads it), or None."""
    env = {}
    for item in (attrs.get("Config") or {}).get("Env") or []:
        key, _, value = item.partition("=")
        env[key] = value
    value = env.get(ENV_PREFIX + language.upper())
    if value is None and language == "javascript":
        value = JAVASCRIPT
    if not value or not value.strip():
        return None
    return shlex.split(value)


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


class ContainerQueryServer(LineProtocol):
    """One query-server process in a container (see the module's doc); its answers read as a local one's."""

    def __init__(self, api, container: str, argv: Sequence[str], *, name: str, timeout: float = 60.0,
                 user: str = "couchdb", workdir: str = HOME):
        super().__init__(name)
        self.api, self.argv, self.timeout = api, list(argv), timeout
        self._out = b""
        self._err = bytearray()
        self.pid: int | None = None
        self._started: str | None = None
        self.started_ns = time.perf_counter_ns()
        try:
            self.exec_id = api.exec_create(container, self.argv, stdin=True, stdout=True, stderr=True, user=user,
                                           workdir=workdir)["Id"]
            self.sock = api.exec_start(self.exec_id, socket=True)
        except Exception as exc:      # noqa: BLE001 - the engine's APIError, in one line
            raise QueryServerDied(f"cannot start query server {self.name} in the container: "
                                  f"{str(exc).splitlines()[0][:200]}", self.name, None, "") from None
        self.raw = getattr(self.sock, "_sock", self.sock)
        self.raw.settimeout(timeout)
        self.pid = self._host_pid()
        self._started = _start_time(self.pid)

    def _host_pid(self) -> int:
        deadline = time.monotonic() + self.timeout
        while True:
            info = self.api.exec_inspect(self.exec_id)
            if info.get("Pid"):
                return int(info["Pid"])
            if not info.get("Running") and info.get("ExitCode") is not None:
                self.close()
                raise QueryServerDied(f"query server {self.name} ({' '.join(self.argv)}) in the container exited "
                                      f"with code {info['ExitCode']} as it started", self.name, info["ExitCode"], "")
            if time.monotonic() > deadline:
                self.close()
                raise QueryServerTimeout(f"query server {self.name} in the container did not start within "
                                         f"{self.timeout:g} s", self.name)
            time.sleep(0.01)

    # -- the socket: Docker's frames (8-byte header: stream, 0, 0, 0, size), stdout kept, stderr's tail kept
    def _recv(self, n: int) -> bytes:
        parts, got = [], 0
        while got < n:
            try:
                chunk = self.raw.recv(n - got)
            except socket.timeout:
                self.kill()
                raise QueryServerTimeout(f"query server {self.name} in the container gave no answer within "
                                         f"{self.timeout:g} s; killed it", self.name) from None
            if not chunk:
                return b""
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    def _readline(self) -> bytes:
        while b"\n" not in self._out:
            head = self._recv(8)
            body = self._recv(int.from_bytes(head[4:8], "big")) if len(head) == 8 else b""
            if not body:
                tail = self.stderr_tail()
                raise QueryServerDied(f"query server {self.name} in the container closed its stdout"
                                      + (f"; stderr: {tail[-500:]}" if tail else "; no stderr output"),
                                      self.name, None, tail)
            if head[0] == 2:
                self._err += body
                del self._err[:-STDERR_KEEP]
            else:
                self._out += body
        line, _, self._out = self._out.partition(b"\n")
        return line

    def stderr_tail(self) -> str:
        return bytes(self._err).decode("utf-8", "replace").strip()

    # -- the protocol
    def prompt_raw(self, line: bytes) -> bytes:
        try:
            self.raw.sendall(line)
        except OSError:
            tail = self.stderr_tail()
            raise QueryServerDied(f"query server {self.name} in the container is gone (writing)"
                                  + (f"; stderr: {tail[-500:]}" if tail else ""), self.name, None, tail) from None
        return self._answered(self._readline())

    # -- the end
    def _running(self) -> bool:
        try:
            return bool(self.api.exec_inspect(self.exec_id).get("Running"))
        except Exception:      # noqa: BLE001 - the engine gone: nothing left to ask
            return False

    def kill(self) -> None:
        """SIGKILL the process by its host pid, if it is still the one started (its start time)."""
        pid = getattr(self, "pid", None)
        if pid and self._started is not None and _start_time(pid) == self._started:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self._close_socket()

    def _close_socket(self) -> None:
        try:
            self.raw.close()
        except OSError:
            pass

    def close(self, timeout: float = 5.0) -> None:
        """Close its input (it exits, as a CouchDB's does), wait for that, kill it if it does not."""
        try:
            self.raw.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        deadline = time.monotonic() + timeout
        while self._running() and time.monotonic() < deadline:
            time.sleep(0.02)
        if self._running():
            self.kill()
        self._close_socket()

    def __enter__(self) -> "ContainerQueryServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
