"""The beam probe around one build: a hidden Erlang node that watches CouchDB's node (I/O; runs processes).

The probe is `erl` from the CouchDB release's own ERTS, started `-hidden` (it joins no cluster mesh) with a
unique name and `-dist_listen false` (it listens on nothing and registers with no epmd). It compiles
beam_probe.erl, sent on its stdin, connects to CouchDB's node(s) and records what dragnet.measure.beam
parses. The Erlang cookie is never handed over: the probe runs as CouchDB's user, so Erlang reads the same
`~/.erlang.cookie` CouchDB uses (local backend), or the container's (docker backend, through a Docker SDK
exec as the couchdb user). Node names come from dragnet's own state: a local node is `dragnet<port>@127.0.0.1`,
a single-node container `couchdb@127.0.0.1` (`NODENAME`), a docker cluster's node `couchdb@n<port>.dragnet`.
"""

from __future__ import annotations

import base64
import os
import secrets
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from dragnet.measure import beam as _beam

# a sample every 400 ms: each reads every Erlang process of the node, so its cost (beam's and the probe's own)
# grows with them; at 200 ms the probe's total came to ×1.027 [1.016–1.037] on a node of up to 2,000 processes
# (benchmarks/beam_activity_overhead). A process born and gone between two samples (a very short build's
# loader) is missed, and counted as unsampled
PERIOD_MS = 400
# microstate accounting on for this long at the start of every period (beam_probe.erl says why): a twentieth
# of the build, spread over it, for a twentieth of msacc's cost (benchmarks/beam_activity_overhead)
MSACC_ON_MS = 20
READY_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0
SOURCE = Path(__file__).with_name("beam_probe.erl")
CONTAINER_HOME = "/opt/couchdb"
# reads the module's source (one base64 line), compiles and loads it in the probe's node, runs it
BOOT = ('S=base64:decode(string:trim(io:get_line(""))),{ok,T,_}=erl_scan:string(binary_to_list(S)),'
        'F=fun G([],[],A)->lists:reverse(A);G([{dot,_}=D|R],C,A)->{ok,Fm}=erl_parse:parse_form(lists:reverse([D|C])),'
        'G(R,[],[Fm|A]);G([X|R],C,A)->G(R,[X|C],A) end,{ok,M,B}=compile:forms(F(T,[],[]),[]),'
        '{module,M}=code:load_binary(M,"dragnet_beam_probe.erl",B),M:main().')
LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class Target:
    """Where one probe runs and which nodes it watches."""
    backend: str                 # "local" or "docker"
    nodes: tuple[str, ...]
    home: str | None = None      # local: the CouchDB release
    container: str | None = None  # docker: the container's id


def probe_argv(erl: str, boot: str) -> list[str]:
    """The probe's command line (pure): no cookie, no credential."""
    return [erl, "-boot", boot, "-name", f"dragnet_probe_{secrets.token_hex(4)}@127.0.0.1", "-hidden",
            "-noshell", "-dist_listen", "false", "-eval", BOOT]


def release_erl(home: str | os.PathLike) -> tuple[str, str]:
    """(erl, start_clean boot) of a CouchDB release, from releases/start_erl.data."""
    root = Path(home)
    erts = (root / "releases" / "start_erl.data").read_text().split()[0]
    return str(root / f"erts-{erts}" / "bin" / "erl"), str(root / "releases" / "start_clean")


def find_targets(url: str, env: dict | None = None) -> tuple[list[Target], str | None]:
    """The probes a build of the CouchDB at url can have, or ([], why not) in one line."""
    from dragnet.couchdb import cluster as _cluster
    from dragnet.couchdb import control as ctl
    from dragnet.couchdb.client import split_credentials

    parts = urlsplit(split_credentials(url)[0])
    if parts.hostname not in LOOPBACK:
        return [], "CouchDB is not on this machine"
    port = parts.port or 5984
    try:
        inst = ctl.load_state(port, env)
    except Exception:      # noqa: BLE001 - an unreadable state file only means: not dragnet's
        inst = None
    if inst is None:
        return [], "dragnet did not start this CouchDB (its Erlang node name is unknown)"
    recorded = _cluster.recorded(port, env)
    if inst.backend == "local":
        from dragnet.couchdb.local import node_name

        names = tuple(n["name"] for n in recorded["nodes"]) if recorded else (node_name(port),)
        if not inst.home:
            return [], "the CouchDB's release is not recorded"
        return [Target("local", names, home=inst.home)], None
    return _docker_targets(recorded, inst, env)


def _docker_targets(recorded: dict | None, inst, env: dict | None) -> tuple[list[Target], str | None]:
    from dragnet.couchdb import control as ctl
    from dragnet.couchdb import docker as dk

    try:
        c = dk.client(env)
    except Exception as exc:      # noqa: BLE001 - no engine: the build runs without the probe
        return [], f"cannot reach the Docker engine: {str(exc).splitlines()[0][:120]}"
    out = []
    members = recorded["nodes"] if recorded else [{"port": inst.port, "name": None}]
    for member in members:
        node_inst = inst if member["port"] == inst.port else ctl.load_state(member["port"], env)
        if node_inst is None:
            continue
        try:
            container = c.containers.get(node_inst.container or node_inst.container_name)
        except Exception:      # noqa: BLE001
            return [], f"container {node_inst.container_name} is gone"
        name = dk.erlang_node(container.attrs)
        if name is None:
            return [], ("the container's CouchDB has no Erlang node name (nonode@nohost): its data volume was "
                        "made by an older dragnet, and renaming the node would hide its shards; `dragnet couch "
                        "down --purge` and `couch up` give it one")
        out.append(Target("docker", (name,), container=container.id))
    return out, None if out else "no container of this CouchDB runs"


class Probe:
    """One probe process: start() returns once it watches its nodes; stop() returns its output's text."""

    def __init__(self, target: Target, period_ms: int = PERIOD_MS, env: dict | None = None,
                 msacc_on_ms: int | None = None):
        self.target, self.period_ms, self.env = target, period_ms, env
        self.msacc_on_ms = MSACC_ON_MS if msacc_on_ms is None else msacc_on_ms
        self.argv: list[str] = []
        self.proc: subprocess.Popen | None = None
        self.sock = None
        self.exec_id: str | None = None
        self.out: list[bytes] = []
        self.err: list[bytes] = []
        self.ready = threading.Event()
        self.begun = threading.Event()
        self.done = threading.Event()
        # local: the probe's whole CPU (start, compile, samples, figures, exit), and at two points: when the
        # build began, and when it was asked for its figures (the build over)
        self.cpu_s: float | None = None
        self.cpu_at_begun: float | None = None
        self.cpu_at_stop: float | None = None
        self.reader: threading.Thread | None = None

    # ---- local: a child process
    def _start_local(self) -> None:
        erl, boot = release_erl(self.target.home)
        self.argv = probe_argv(erl, boot)
        base = os.environ if self.env is None else self.env
        env = {k: v for k, v in base.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "USER")}
        # loopback epmd as CouchDB's own (local.build_env), and no crash dump file left behind
        env.update(ERL_EPMD_ADDRESS="127.0.0.1", ERL_CRASH_DUMP_SECONDS="0")
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, cwd="/", start_new_session=True)
        self.reader = threading.Thread(target=self._read_pipe, daemon=True, name="beam-probe")
        self.reader.start()
        threading.Thread(target=lambda: self.err.append(self.proc.stderr.read()), daemon=True).start()

    def _read_pipe(self) -> None:
        for line in self.proc.stdout:
            self._line(line)
        self.done.set()

    # ---- docker: an exec in the container, its stdio on the API's socket
    def _start_docker(self) -> None:
        from dragnet.couchdb import docker as dk

        api = dk.client(self.env).api
        erl, boot = "/opt/couchdb/erts-*/bin/erl", f"{CONTAINER_HOME}/releases/start_clean"
        self.argv = probe_argv(erl, boot)
        cmd = ["sh", "-c", 'exec $(ls /opt/couchdb/erts-*/bin/erl | head -n 1) "$@"', "sh", *self.argv[1:]]
        self.exec_id = api.exec_create(self.target.container, cmd, stdin=True, stdout=True, stderr=True,
                                       user="couchdb", workdir="/tmp",
                                       environment={"HOME": CONTAINER_HOME, "ERL_CRASH_DUMP_SECONDS": "0"})["Id"]
        self.sock = api.exec_start(self.exec_id, socket=True)
        self.reader = threading.Thread(target=self._read_socket, daemon=True, name="beam-probe")
        self.reader.start()

    def _raw(self):
        return getattr(self.sock, "_sock", self.sock)

    def _read_socket(self) -> None:
        from docker.utils.socket import frames_iter

        pending = b""
        try:
            for stream, data in frames_iter(self.sock, tty=False):
                if stream == 2:
                    self.err.append(data)
                    continue
                pending += data
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    self._line(line + b"\n")
        except OSError:
            pass
        self.done.set()

    def _line(self, line: bytes) -> None:
        if line.strip() == b"begun":
            self.cpu_at_begun = process_cpu_s(self.proc.pid) if self.proc is not None else None
            self.begun.set()
            return
        if line.strip() == b"ready":
            self.ready.set()
        self.out.append(line)

    def _send(self, text: str) -> None:
        data = text.encode()
        if self.proc is not None:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        else:
            self._raw().sendall(data)

    def _close_input(self) -> None:
        try:
            if self.proc is not None:
                self.proc.stdin.close()
            elif self.sock is not None:
                self._raw().shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def start(self) -> "Probe":
        if self.target.backend == "docker":
            self._start_docker()
        else:
            self._start_local()
        self._send(base64.b64encode(SOURCE.read_bytes()).decode() + "\n")
        self._send(f"{self.period_ms} {self.msacc_on_ms} {' '.join(self.target.nodes)}\n")
        if not self.ready.wait(READY_TIMEOUT):
            self.kill()
            raise ProbeFailed(f"the probe did not start within {READY_TIMEOUT:.0f} s{self._stderr_tail()}")
        return self

    def begin(self, timeout: float = READY_TIMEOUT) -> bool:
        """The build starts now: the probe's figures count from here. Whether it said so in time."""
        self._send("begin\n")
        return self.begun.wait(timeout)

    def stop(self, timeout: float = STOP_TIMEOUT) -> str:
        """Ask the probe for its figures and wait for them; its text (raises ProbeFailed if it ends without)."""
        if self.proc is None and self.sock is None:
            # an interrupt during its start (inside Popen or the exec): nothing to ask, nothing to wait for
            raise ProbeFailed("the probe did not start")
        if self.proc is not None and self.cpu_at_stop is None:
            self.cpu_at_stop = process_cpu_s(self.proc.pid)
        try:
            self._send("stop\n")
        except (OSError, ValueError):     # ValueError: its input already closed (a failed start's kill)
            pass
        self._close_input()
        self.done.wait(timeout)
        self._reap(timeout)
        if self.sock is not None:
            try:
                self._raw().close()
            except OSError:
                pass
        text = b"".join(self.out).decode(errors="replace")
        if not text.rstrip().endswith("end"):
            raise ProbeFailed(f"the probe ended without its figures{self._stderr_tail()}")
        return text

    def kill(self) -> None:
        """End the probe at once (after a failed start, or when stop() is no longer waited for)."""
        self._close_input()
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 9)
            except OSError:
                pass
            self._reap(5)
        if self.sock is not None:
            try:
                self._raw().close()
            except OSError:
                pass

    def _reap(self, timeout: float) -> None:
        """Wait for the local probe's exit, with its CPU from the kernel's accounting (wait4)."""
        if self.proc is None or self.proc.returncode is not None:
            return
        deadline = time.monotonic() + timeout
        while True:
            try:
                pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            except ChildProcessError:
                return
            if pid:
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                self.cpu_s = round(usage.ru_utime + usage.ru_stime, 6)
                return
            if time.monotonic() > deadline:
                try:
                    os.killpg(self.proc.pid, 9)
                except OSError:
                    pass
                deadline = time.monotonic() + 5
            time.sleep(0.02)

    def _stderr_tail(self) -> str:
        lines = b"".join(self.err).decode(errors="replace").strip().splitlines()
        return f": {lines[-1][:200]}" if lines else ""


def process_cpu_s(pid: int) -> float | None:
    """utime + stime of a live process, in seconds; None when it is gone."""
    from dragnet.measure.cpu import parse_pid_stat

    try:
        _ppid, utime, stime, _cu, _cs = parse_pid_stat(Path(f"/proc/{pid}/stat").read_text())
    except OSError:
        return None
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


def own_cpu(probes) -> dict:
    """The probes' own processes' CPU by the kernel's accounting (local backend; None where unknown): in all;
    during the build (from its start to the request for the figures), which is what the build shares its cores
    with; and after it (collecting the figures, exiting)."""
    def total(values):
        got = list(values)
        return round(sum(got), 6) if got and None not in got else None

    def spent(later, earlier):
        return None if later is None or earlier is None else later - earlier

    return {"cpu_s": total(p.cpu_s for p in probes),
            "cpu_during_build_s": total(spent(p.cpu_at_stop, p.cpu_at_begun) for p in probes),
            "cpu_after_build_s": total(spent(p.cpu_s, p.cpu_at_stop) for p in probes)}


class ProbeFailed(Exception):
    pass


class BuildBeam:
    """beam's activity around one build: start() before it, stop() after it gives the results' entry;
    abort() on an interrupt. A probe that cannot run leaves the build alone and says why."""

    def __init__(self, url: str, env: dict | None = None, *, paused: str | None = None,
                 period_ms: int | None = None, msacc_on_ms: int | None = None):
        self.period_ms = period_ms or PERIOD_MS
        self.msacc_on_ms = min(self.period_ms, MSACC_ON_MS if msacc_on_ms is None else msacc_on_ms)
        if paused:
            self.targets, self.why = [], paused
        else:
            self.targets, self.why = find_targets(url, env)
        self.env = env
        self.probes: list[Probe] = []

    def start(self) -> "BuildBeam":
        try:
            for target in self.targets:
                # bound before it starts, so an interrupt during the start still finds it to end
                probe = Probe(target, self.period_ms, self.env, self.msacc_on_ms)
                self.probes.append(probe)
                probe.start()
        except (ProbeFailed, OSError) as exc:
            self.abort()
            self.why = f"the probe could not start: {exc}"
        except Exception as exc:     # noqa: BLE001 - a Docker API error: the build runs without the probe
            self.abort()
            self.why = f"the probe could not start: {str(exc).splitlines()[0][:200]}"
        return self

    def begin(self) -> None:
        """Right before the build's trigger: started early (its start takes a second), it counts from here."""
        try:
            for probe in self.probes:
                if not probe.begin():
                    raise ProbeFailed("the probe did not answer when the build began")
        except (ProbeFailed, OSError) as exc:
            self.abort()
            self.why = f"the probe failed: {exc}"

    def stop(self) -> dict:
        if self.why or not self.probes:
            return _beam.absent(self.why or "no CouchDB node to watch")
        nodes: dict = {}
        try:
            for probe in self.probes:
                nodes.update(_beam.parse(probe.stop()))
        except (ProbeFailed, _beam.ProbeOutputError) as exc:
            self.abort()
            return _beam.absent(f"the probe failed: {exc}")
        return {"schema": _beam.SCHEMA, "period_ms": self.period_ms, "msacc_on_ms": self.msacc_on_ms,
                "absent": None, "nodes": nodes,
                "probe": {"backend": self.probes[0].target.backend, "argv": self.probes[0].argv[:-1] + ["BOOT"],
                          **own_cpu(self.probes)}}

    def abort(self) -> None:
        """Stop every probe (it turns msacc off on its way out), not waiting long for its figures."""
        for probe in self.probes:
            try:
                probe.stop(timeout=5)
            except (ProbeFailed, OSError):
                pass
            probe.kill()
