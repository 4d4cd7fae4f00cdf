"""The README's three steps on your own data, parsed from README.md and run as a new user would, through bash, with
the installed `dragnet` on PATH, against the live CouchDB (DRAGNET_TEST_COUCHDB_URL).

What the test changes in the README's commands, and nothing else: the variables the README asks you to set
(U, PROD, COUCHDB_USER/COUCHDB_PASSWORD) point at the live CouchDB, whose credentials go through the environment
only; step 1 gets a free port and its own state directory; the databases get names of their own; and the sample,
the rounds and the sweep are small (SMALL), so that the three steps take about two minutes on a quiet machine.
"your database" is one made here: generated declarations with tests/ddocs/app.json as its design doc."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

import pytest

from conftest import free_port

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Your own data in three steps"
SMALL = {2: {"--sample-count 5000": "--sample-count 200", "": "--repeat 1"},
         3: {"--sample-count 20000": "--sample-count 400", "": "--sizes 100,200,400 --no-shard-sweep"}}


def readme_steps(text: str) -> dict[int, str]:
    """{step number: its command}: the first sh block under each '### N.' heading of the section, its
    continuation lines joined."""
    start = text.index(SECTION + "\n")
    end = text.find("\n## ", start + len(SECTION))
    section = text[start:end if end >= 0 else None]
    steps = {}
    for m in re.finditer(r"^### (\d+)\. .*?\n```sh\n(.*?)```", section, re.S | re.M):
        lines = [line.split(" # ")[0].rstrip() for line in m.group(2).replace("\\\n", " ").splitlines()]
        steps[int(m.group(1))] = " ".join(x for x in lines if x.strip())
    return steps


def test_the_readme_has_three_steps_of_one_command_each():
    steps = readme_steps((ROOT / "README.md").read_text())
    assert sorted(steps) == [1, 2, 3]
    assert all(cmd.startswith("dragnet ") and "\n" not in cmd and ";" not in cmd and "&&" not in cmd
               for cmd in steps.values()), steps
    assert steps[1].startswith("dragnet couch up ")
    assert steps[2].startswith("dragnet bench ") and "--ddoc" in steps[2] and "--data $PROD" in steps[2]
    assert steps[3].startswith("dragnet forecast ") and "--target $PROD" in steps[3]
    for n, changes in SMALL.items():         # what the live test changes is there to change
        assert all(old in steps[n] for old in changes if old), (n, steps[n])


def _without_credentials(url: str) -> tuple[str, str, str]:
    parts = urlsplit(url)
    netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
    return (urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", "")), unquote(parts.username or ""),
            unquote(parts.password or ""))


def _run(cmd: str, env: dict, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", cmd], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.mark.live
def test_the_readme_steps_run_against_a_live_couchdb(live_url, tmp_path):
    from dragnet.couchdb.client import connect, db_path

    steps = readme_steps((ROOT / "README.md").read_text())
    base, user, password = _without_credentials(live_url)
    tag = uuid.uuid4().hex[:8]
    prod, app, fc = f"readme_prod_{tag}", f"readme_app_{tag}", f"readme_fc_{tag}"
    env = dict(os.environ, COUCHDB_USER=user or "admin", COUCHDB_PASSWORD=password, U=base, PROD=f"{base}/{prod}",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               DRAGNET_STATE_DIR=str(tmp_path / "state"))
    env.pop("DRAGNET_TEST_COUCHDB_URL", None)       # the steps see the README's variables, not the test's
    couch = connect(live_url)
    made = [prod, app, *(f"{fc}-{n}" for n in (100, 200, 400))]
    port = free_port()
    try:
        # "your database": 1,000 declarations and a design doc of three views
        gen = _run("dragnet generate --count 1000 --seed 7 --normalise --output prod.jsonl.gz && "
                   f"dragnet import prod.jsonl.gz --url $U --db {prod}", env, tmp_path)
        assert gen.returncode == 0, gen.stderr
        ddoc = json.loads((ROOT / "tests" / "ddocs" / "app.json").read_text())
        ddoc.pop("_rev", None)
        couch.put(f"{db_path(prod)}/_design/app", ddoc)

        # 1. a CouchDB to measure: started, then stopped (steps 2 and 3 use the live one)
        if not env.get("DRAGNET_COUCHDB_HOME") and not Path("/opt/couchdb/bin/couchdb").exists():
            pytest.fail("step 1 needs a CouchDB release: set DRAGNET_COUCHDB_HOME (.ci/live-couchdb prints it)")
        one = _run(steps[1].replace("--port 15984", f"--port {port}"), env, tmp_path, timeout=300)
        down = _run(f"dragnet couch down --port {port}", env, tmp_path, timeout=120)
        assert one.returncode == 0, one.stdout + one.stderr
        assert f"127.0.0.1:{port}" in one.stdout + one.stderr and password not in one.stdout + one.stderr
        assert down.returncode == 0, down.stdout + down.stderr

        # 2. the design doc and a sample of the database through every engine, with the engine share
        two = steps[2].replace("--db app", f"--db {app}")
        for old, new in SMALL[2].items():
            two = two.replace(old, new) if old else f"{two} {new}"
        out = _run(two, env, tmp_path)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        assert "engine share [_design/app" in out.stdout, out.stdout[-4000:]
        # every switch from couchjs is bounded by its share, or says that its runs were too few or too noisy
        # to tell (which of the two depends on the machine's noise at one round)
        switches = [line for line in out.stdout.splitlines() if line.startswith("  javascript → ")]
        assert len(switches) == 4, out.stdout[-4000:]
        assert all("no external engine can gain more than" in line or "which bounds any gain" in line
                   for line in switches), switches
        assert password not in out.stdout + out.stderr
        assert list((tmp_path / "cache").rglob("*.jsonl.gz")), "the sample was not drawn into cache/"

        # 3. the rebuild of the whole database, forecast with its interval
        three = steps[3].replace("--db fc", f"--db {fc}")
        for old, new in SMALL[3].items():
            three = three.replace(old, new) if old else f"{three} {new}"
        out = _run(three, env, tmp_path)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        assert f"forecast for 1,000 documents ({base}/{prod})" in out.stdout, out.stdout[-3000:]
        assert re.search(r"^  build_time +\d[\d,.]* \w+ +\[", out.stdout, re.M), out.stdout[-3000:]
        assert password not in out.stdout + out.stderr
        forecast = json.loads(next((tmp_path / "results").rglob("forecast.json")).read_text())
        assert forecast["target"]["doc_count"] == 1000 and forecast["forecasts"]
    finally:
        _run(f"dragnet couch down --port {port}", env, tmp_path, timeout=120)
        for db in made:
            couch.request("DELETE", db_path(db), ok=(200, 202, 404))
