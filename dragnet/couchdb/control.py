"""What `dragnet couch up|down|status` share across backends: the instance record kept in a state
file (so `down` and `status` find what `up` started), admin credentials, port checks, waiting for /_up.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Callable

from dragnet.couchdb.client import CouchError, CouchUnreachable, connect
from dragnet.errors import DragnetError, UsageError

DEFAULT_PORT = 5984
DEFAULT_HOST = "127.0.0.1"


@dataclass
class Instance:
    """One CouchDB started by dragnet. Never holds the admin password."""

    backend: str                 # "docker" or "local"
    port: int
    host: str = DEFAULT_HOST
    user: str | None = None
    storage: str = "disk"        # "disk" or "tmpfs"
    data_dir: str | None = None  # host path; for docker a named volume is in `volume`
    pid: int | None = None       # local: the beam process (session leader of its group)
    pid_start: int | None = None  # local: its start time in clock ticks, to detect a reused pid
    home: str | None = None      # local: the CouchDB release
    run_dir: str | None = None   # local: generated config and the log
    log: str | None = None
    mounted_tmpfs: bool = False  # local: dragnet mounted the tmpfs and unmounts it on down
    container: str | None = None  # docker: container id
    container_name: str | None = None
    image: str | None = None
    volume: str | None = None
    cpus: float | None = None
    cpuset_group: str | None = None  # local: the cpuset cgroup its processes run in (else taskset pinned them)
    ini: dict | None = None       # settings written into its ini before it started ("section/key": value)
    memory: int | None = None
    limits: dict | None = None   # docker: a bench scenario's container settings (mem_limit, device_read_iops…)
    started_at: float = field(default_factory=time.time)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def display_url(self) -> str:
        """The URL as shown to users: with the admin name and a masked password."""
        return f"http://{self.user}:***@{self.host}:{self.port}" if self.user else self.url

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Instance":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


# --- state files -----------------------------------------------------------------------------------

def state_dir(env: dict | None = None) -> Path:
    """$XDG_STATE_HOME/dragnet, else ~/.local/state/dragnet (DRAGNET_STATE_DIR overrides both)."""
    env = os.environ if env is None else env
    if env.get("DRAGNET_STATE_DIR"):
        return Path(env["DRAGNET_STATE_DIR"])
    base = env.get("XDG_STATE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "state")
    return Path(base) / "dragnet"


def state_path(port: int, env: dict | None = None) -> Path:
    return state_dir(env) / f"couch-{port}.json"


def save_state(inst: Instance, env: dict | None = None) -> Path:
    path = state_path(inst.port, env)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(inst.to_dict(), indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)  # atomic: a concurrent status never reads half a file
    return path


def load_state(port: int, env: dict | None = None) -> Instance | None:
    path = state_path(port, env)
    try:
        return Instance.from_dict(json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (ValueError, TypeError) as exc:
        raise DragnetError(f"unreadable state file {path} ({exc}): remove it if nothing runs on port {port}") \
            from None


def remove_state(port: int, env: dict | None = None) -> None:
    state_path(port, env).unlink(missing_ok=True)


def list_states(env: dict | None = None) -> list[Instance]:
    out = []
    for path in sorted(state_dir(env).glob("couch-*.json")):
        try:
            out.append(Instance.from_dict(json.loads(path.read_text())))
        except (OSError, ValueError, TypeError):
            continue
    return sorted(out, key=lambda i: i.port)


def select_state(port: int | None, env: dict | None = None) -> Instance:
    """The instance `down`/`status` act on: the one on port, or the only one recorded."""
    if port is not None:
        inst = load_state(port, env)
        if inst is None:
            raise DragnetError(f"dragnet started no CouchDB on port {port} (no state in {state_dir(env)})")
        return inst
    states = list_states(env)
    if not states:
        raise DragnetError(f"dragnet started no CouchDB (no state in {state_dir(env)}): run `dragnet couch up`")
    if len(states) > 1:
        ports = ", ".join(str(s.port) for s in states)
        raise UsageError(f"several CouchDBs started by dragnet (ports {ports}): choose one with --port")
    return states[0]


# --- credentials -------------------------------------------------------------------------------------

def admin_credentials(env: dict | None = None) -> tuple[str, str]:
    """The admin to create, from COUCHDB_USER / COUCHDB_PASSWORD (as the official image reads them)."""
    env = os.environ if env is None else env
    user, password = env.get("COUCHDB_USER") or "", env.get("COUCHDB_PASSWORD") or ""
    if not user or not password:
        missing = " and ".join(n for n, v in (("COUCHDB_USER", user), ("COUCHDB_PASSWORD", password)) if not v)
        raise UsageError(f"set {missing}: the admin dragnet creates (CouchDB 3 refuses to run without one)")
    if any(c in user for c in "=:[]\n\r") or user != user.strip():
        raise UsageError("COUCHDB_USER must not contain '=', ':', '[', ']', newlines or surrounding spaces")
    if "\n" in password or "\r" in password or password != password.strip():
        raise UsageError("COUCHDB_PASSWORD must not contain newlines or surrounding spaces")
    if " ;" in password or "\t;" in password:
        # CouchDB's ini parser starts an inline comment at whitespace + ';': the admin would get a cut password
        raise UsageError("COUCHDB_PASSWORD must not contain a space or tab followed by ';' "
                         "(CouchDB's ini parser would cut the password there)")
    return user, password


# --- ports -------------------------------------------------------------------------------------------

def port_in_use(port: int, host: str = DEFAULT_HOST) -> bool:
    """True when binding host:port fails, i.e. something (CouchDB or not) already listens there."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # SO_REUSEADDR as CouchDB sets it: TIME_WAIT leftovers don't count, a listener does.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def ensure_port_free(port: int, host: str = DEFAULT_HOST) -> None:
    if not 1 <= port <= 65535:
        raise UsageError(f"--port {port}: not a TCP port (1-65535)")
    if port_in_use(port, host):
        raise DragnetError(f"port {port} on {host} is already in use: stop what listens there "
                           f"(`ss -ltnp 'sport = :{port}'` shows it) or choose another --port")


# --- waiting -----------------------------------------------------------------------------------------

def wait_up(url: str, timeout: float, *, alive: Callable[[], str | None] | None = None,
            log_tail: Callable[[], str] | None = None, log_name: str = "the log",
            interval: float = 0.25) -> None:
    """Poll GET {url}/_up until it answers 200 with status ok.

    alive() returns None while the server process lives, else why it ended (stop early).
    On failure the message carries the tail of the server's log.
    """
    couch = connect(url, env={})
    deadline = time.monotonic() + timeout
    last = "no answer"
    while True:
        if alive is not None:
            gone = alive()
            if gone:
                raise DragnetError(f"CouchDB ended before answering on {url}/_up ({gone}); read {log_name}"
                                   + _tail(log_tail))
        try:
            body = couch.get("/_up", timeout=2)
            if body.get("status") == "ok":
                return
            last = f"status {body.get('status')!r}"
        except CouchError as exc:
            last = f"HTTP {exc.status}"
        except CouchUnreachable as exc:
            last = str(exc).rsplit("(", 1)[-1].rstrip(")")
        if time.monotonic() >= deadline:
            raise DragnetError(f"CouchDB did not answer {url}/_up within {timeout:g} s (last: {last}); "
                               f"raise --timeout or read {log_name}" + _tail(log_tail))
        time.sleep(interval)


def _tail(log_tail: Callable[[], str] | None) -> str:
    if log_tail is None:
        return ""
    text = log_tail().strip()
    return f"\n--- last lines of the log ---\n{text}" if text else ""


def tail_lines(text: str, n: int = 20) -> str:
    return "\n".join(text.splitlines()[-n:])


def describe(inst: Instance) -> dict:
    """An instance as JSON output: its recorded fields that are set, and its URL without credentials."""
    d = {k: v for k, v in inst.to_dict().items() if v is not None}
    d["url"] = inst.display_url
    return d


def server_info(inst: Instance, timeout: float = 5) -> dict:
    """GET / (needs no credentials): version, vendor; {'error': ...} when it does not answer."""
    try:
        info = connect(inst.url, env={}, timeout=timeout).get("/")
        return {"version": info.get("version"), "vendor": (info.get("vendor") or {}).get("name"), "up": True}
    except (CouchError, CouchUnreachable) as exc:
        return {"up": False, "error": str(exc)}


def ensure_system_dbs(url: str, user: str, password: str, *, auth_grace: float = 60.0) -> list[str]:
    """Create _users and _replicator when missing (single node); returns the ones created."""
    couch = connect(url, user=user, password=password, env={})
    # /_up can answer before the admin from the image's ini is active (a 401 for a moment; seconds on a
    # loaded machine): wait for it rather than fail the start.
    deadline = time.monotonic() + auth_grace
    while True:
        try:
            couch.request("HEAD", "/_users", ok=(200, 404))
            break
        except CouchError as exc:
            if exc.status != 401 or time.monotonic() >= deadline:
                raise
            time.sleep(0.5)
    created = []
    for db in ("_users", "_replicator"):
        try:
            resp = couch.request("PUT", "/" + db, ok=(201, 202, 412))
        except CouchError:
            # CouchDB's replicator creates _replicator itself at start; racing it answers 500 conflict
            if couch.request("HEAD", "/" + db, ok=(200, 404)).status_code == 200:
                continue
            raise
        if resp.status_code in (201, 202):
            created.append(db)
    return created
