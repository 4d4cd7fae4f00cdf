"""SIGTERM to a running `addview --benchmark` and `bench --backend local` leaves nothing behind.

Both start a real CouchDB release (DRAGNET_COUCHDB_HOME, skipped without); the port comes from
DRAGNET_TEST_INTERRUPT_PORT (default: a free one).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from conftest import couch_env, free_port

from data_prep.generate import generate_file
from dragnet.couchdb import control as ctl
from dragnet.bench.run import MANIFEST

PORT = int(os.environ.get("DRAGNET_TEST_INTERRUPT_PORT") or free_port())
PASSWORD = "pw-interrupt-test"
REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.slow]


def _home() -> str:
    home = os.environ.get("DRAGNET_COUCHDB_HOME")
    if not home or not (Path(home) / "bin" / "couchdb").exists():
        pytest.skip("no CouchDB release (set DRAGNET_COUCHDB_HOME to a dir with bin/couchdb)")
    if ctl.port_in_use(PORT):
        pytest.skip(f"port {PORT} is busy")
    return home


def _dragnet(args, env, **kw):
    return subprocess.Popen([sys.executable, "-m", "dragnet", *args], env=env, cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def _children(pid: int) -> set[int]:
    """Every descendant of pid (threads' children included)."""
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                kids = {int(c) for c in (task / "children").read_text().split()}
            except OSError:
                continue
            todo += list(kids - out)
            out |= kids
    return out


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for p in pids:
        try:
            state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(p)
    return alive


def _wait(cond, timeout: float, what: str):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = cond()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def _terminate(proc):
    kids = _children(proc.pid)
    proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    return kids, out, err


def _design_docs(url: str, db: str, auth) -> list[str]:
    r = requests.get(f"{url}/{db}/_all_docs", params={"startkey": '"_design/"', "endkey": '"_design0"'},
                     auth=auth, timeout=10)
    r.raise_for_status()
    return [row["id"] for row in r.json()["rows"]]


def test_sigterm_during_addview_benchmark_removes_its_design_doc(tmp_path):
    home = _home()
    env = couch_env(tmp_path, PASSWORD)
    env["DRAGNET_COUCHDB_HOME"] = home
    url, auth = f"http://127.0.0.1:{PORT}", ("admin", PASSWORD)
    up = subprocess.run([sys.executable, "-m", "dragnet", "couch", "up", "--backend", "local", "--port", str(PORT),
                         "--data-dir", str(tmp_path / "data"), "--timeout", "90"], env=env, cwd=REPO,
                        capture_output=True, text=True, timeout=120)
    try:
        assert up.returncode == 0, up.stderr
        data = tmp_path / "d.jsonl"
        generate_file(str(data), 4000, 3)
        imp = subprocess.run([sys.executable, "-m", "dragnet", "import", str(data), "--url", url, "--db", "sig",
                              "--json", "--rejects", str(tmp_path / "rej.jsonl")], env=env, cwd=REPO,
                             capture_output=True, text=True, timeout=300)
        assert imp.returncode == 0, imp.stderr
        proc = _dragnet(["addview", "--benchmark", "--url", url, "--db", "sig", "--interval", "0.2",
                         "--results", str(tmp_path / "res"), str(REPO / "views/income/map.js")], env)
        # the design doc is there and pidstat runs: the build is being measured
        _wait(lambda: (_design_docs(url, "sig", auth) and _children(proc.pid)) or proc.poll() is not None, 60,
              "the fresh design doc and pidstat")
        assert proc.poll() is None, proc.communicate()
        kids, _, err = _terminate(proc)
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert "terminated by SIGTERM" in err and "Traceback" not in err
        assert _design_docs(url, "sig", auth) == []          # the fresh design doc was deleted
        assert kids and _alive(kids) == set()                 # pidstat and the request thread's children gone
    finally:
        # no --purge: the data dir was given (it lives in tmp_path), and purge refuses those without stopping
        down = subprocess.run([sys.executable, "-m", "dragnet", "couch", "down", "--port", str(PORT)],
                              env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
        assert down.returncode == 0, down.stderr


def test_sigterm_during_bench_stops_the_couchdb_it_started(tmp_path):
    home = _home()
    env = couch_env(tmp_path, PASSWORD)
    env["DRAGNET_COUCHDB_HOME"] = home
    data = tmp_path / "d.jsonl"
    generate_file(str(data), 4000, 4)
    proc = _dragnet(["bench", "--backend", "local", "--url", f"http://127.0.0.1:{PORT}", "--db", "sigb",
                     "--data", str(data), "--languages", "javascript", "--repeat", "3", "--no-baseline", "--no-ceiling",
                     "--results", str(tmp_path / "bench")], env)
    try:
        state = _wait(lambda: ctl.load_state(PORT, env) or proc.poll() is not None, 120, "bench's CouchDB")
        assert proc.poll() is None, proc.communicate()
        couch_pid = state.pid
        # let it get into the work (import or a build) before the signal
        _wait(lambda: any(Path(tmp_path / "bench").rglob(MANIFEST)) or proc.poll() is not None, 120,
              "the bench manifest")
        kids, _, err = _terminate(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            subprocess.run([sys.executable, "-m", "dragnet", "couch", "down", "--port", str(PORT), "--purge"],
                           env=env, cwd=REPO, capture_output=True, timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err
    assert ctl.load_state(PORT, env) is None                 # no CouchDB recorded as running
    assert not ctl.port_in_use(PORT)
    assert _alive({couch_pid} | kids) == set()
    manifest = json.loads(next(Path(tmp_path / "bench").rglob(MANIFEST)).read_text())
    assert manifest["interrupted"] is True and manifest["finished_at"]
