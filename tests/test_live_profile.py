"""`--profile` against the live CouchDB (started by `dragnet couch up`, so beam writes its JIT perf map): a
small build profiled, named Erlang frames found, perf gone afterwards, nothing left in /tmp. Skips with one
line where perf is missing or the kernel forbids it."""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import generated_db

from dragnet.cli import main
from dragnet.measure import profile, stages

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture()
def perf_allowed():
    why = profile.unavailable()
    if why:
        pytest.skip(why)


def _perf_of_ours(parent: int | None = None) -> list[int]:
    """perf processes dragnet started (as children of `parent`: other runs may profile beside this one)."""
    parent = os.getpid() if parent is None else parent
    out = []
    for d in glob.glob("/proc/[0-9]*"):
        try:
            argv = Path(d, "cmdline").read_bytes().split(b"\0")
            ppid = int(Path(d, "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == parent and argv and argv[0].endswith(b"perf") and b"dragnet-perf-" in b" ".join(argv):
            out.append(int(Path(d).name))
    return out


@pytest.mark.live
def test_live_profile_names_erlang_frames_and_leaves_nothing_running(live_url, perf_allowed, tmp_path):
    # 1,500 documents: ~1,100 beam samples. At 300 (~200) a busy machine once left no couch_ frame among them.
    with generated_db(live_url, "dragnet_profile", 1500, seed=5) as (_couch, db, _docs):
        r = CliRunner().invoke(main, ["addview", str(REPO / "views" / "income" / "map.js"), "--url", live_url,
                                      "--db", db, "--benchmark", "--profile", "--json", "--results", str(tmp_path)])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output[r.output.index("{"):])
    prof = out["profile"]
    assert "absent" not in prof, prof
    results = json.loads(Path(out["results_file"]).read_text())
    if any("JIT perf map" in n for n in prof["notes"]):
        pytest.skip("this CouchDB was not started by `dragnet couch up` with +JPperf: no Erlang names")
    folded = Path(prof["folded"])
    assert folded.parent == tmp_path and folded.name.endswith(".folded.gz")
    stacks = profile.read_folded(folded)
    assert sum(stacks.values()) == prof["samples"] == results["profile"]["samples"] > 0
    # beam's samples carry Erlang functions named by the JIT's map, and the query server is its own process
    erlang = {f for s in stacks for f in s.split(";")[2:] if stages.is_erlang_frame(f)}
    assert any(f.startswith(("$couch_", "couch_")) for f in erlang), sorted(erlang)[:20]
    assert any(s.startswith("couchjs;") for s in stacks)
    assert prof["stages"]["query_server"]["samples"] > 0
    assert prof["perf_cpu_s"] is not None and prof["perf_cpu_s"] >= 0
    # beam writes the map it is named by, and no jitdump (~20 MB in /tmp per start, which nothing reads)
    from urllib.parse import urlsplit

    from dragnet.couchdb import control

    inst = control.load_state(urlsplit(live_url).port)
    assert inst is not None and inst.pid and Path(f"/tmp/perf-{inst.pid}.map").exists()
    assert not Path(f"/tmp/jit-{inst.pid}.dump").exists()
    # perf ended (reaped: no child of ours left) and its recording went with it
    assert _perf_of_ours() == []
    # no credential in what was written
    password = live_url.split("@")[0].rsplit(":", 1)[-1]
    assert password not in Path(out["results_file"]).read_text()


@pytest.mark.live
def test_live_sigterm_mid_build_stops_perf_and_removes_its_recording(live_url, perf_allowed, tmp_path):
    import signal
    import subprocess
    import sys
    import time

    with generated_db(live_url, "dragnet_profile_term", 2000, seed=6) as (couch, db, _docs):
        env = {**os.environ, "DRAGNET_COUCHDB_URL": live_url}      # the password never in argv
        p = subprocess.Popen([sys.executable, "-m", "dragnet", "addview", str(REPO / "views" / "income" / "map.js"),
                              "--db", db, "--benchmark", "--profile", "--results", str(tmp_path)],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            deadline = time.time() + 120
            while time.time() < deadline and not _perf_of_ours(p.pid):    # perf is recording the build
                time.sleep(0.1)
            assert _perf_of_ours(p.pid), "perf never started"
            recording = {arg.decode() for pid in _perf_of_ours(p.pid)
                         for arg in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                         if b"dragnet-perf-" in arg}
            p.send_signal(signal.SIGTERM)
            out, _ = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
        assert p.returncode == 128 + signal.SIGTERM, out
        assert recording and not any(os.path.exists(d) for d in recording)
        assert not list(tmp_path.glob("*.folded.gz"))      # an interrupted build keeps no half profile
        # the fresh design document went too
        assert [r["id"] for r in couch.get(f"/{db}/_all_docs?startkey=%22_design/%22&endkey=%22_design0%22")["rows"]] == []


@pytest.mark.live
def test_live_bench_names_each_folded_file_for_its_engine(live_url, perf_allowed, tmp_path):
    """The Erlang baseline and an Erlang view are both language erlang: each folded file says which it was, and
    its results file points to it."""
    with generated_db(live_url, "dragnet_profile_bench", 200, seed=7) as (_couch, db, _docs):
        r = CliRunner().invoke(main, ["bench", "--url", live_url, "--db", db, "--languages", "erlang", "--repeat", "1",
                                      "--no-ceiling", "--profile", "--results", str(tmp_path)])
    assert r.exit_code == 0, r.output
    kinds = sorted(p.name.split("-")[2] for p in tmp_path.rglob("profile-*.folded.gz"))
    assert kinds == ["erlang", "erlang_baseline"], kinds
    for path in tmp_path.rglob("*-r0-*.json"):       # each results file (…-r0-<engine>.json) names its own
        folded = json.loads(path.read_text())["profile"]["folded"]
        assert (path.parent / folded).exists() and path.name.endswith(f"-{folded.split('-')[2]}.json")
